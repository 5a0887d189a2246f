"""The run folder as the measures read it. ``load`` opens a folder; ``Analysis`` holds what the folder
has — its files, read once each when a measure first asks (``file``), its manifests and groups — and
the rows every input a measure declared selects (``rows``: ``louder.analysis.engine.select``), computed
once per selection. Each measure sees the analysis through its ``Context``: its declared inputs by name,
its options, the tables built so far. Nothing here knows a measure."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import pandas as pd

from louder.analysis.engine import columnar, registry, select
from louder.analysis.engine import options as O
from louder.analysis.engine.declarations import Input, Measure
from louder.errors import LouderError
from louder.scenarios import load_group
from louder.sections import recorded
from louder.status import no_valid_notes

DEFAULT_BOOTSTRAP = 10_000


@dataclass(frozen=True)
class Settings:
    """What an analysis depends on beside the data: bootstrap draws, seed, and the measures' options
    (measure → option → value: those that differ from their defaults, checked)."""

    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = 0
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, options=None) -> Settings:
        if int(bootstrap) < 100:
            raise LouderError(f"--bootstrap {bootstrap}: use at least 100 resamples (default 10000)")
        return cls(int(bootstrap), int(seed), O.resolve(options))

    def recorded(self) -> dict:
        """The settings as analysis.json records them."""
        return {"bootstrap": self.bootstrap, "seed": self.seed, "options": O.recorded(self.options)}

    def of_measure(self, m: Measure) -> dict[str, Any]:
        """Every option of ``m``, the chosen values over the defaults."""
        return O.effective(m, self.options.get(m.name))


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise LouderError(f"{path}: cannot be read as JSON ({e}); re-run the command that wrote it") from None


def read_table(path: Path, columns: list[str] | None = None, round0: bool = False) -> pd.DataFrame | None:
    """A Parquet or CSV file of the run folder (None when there is none); a damaged one is one line.
    Parquet: only ``columns`` (all when None) and, with ``round0``, only the rows of round 0, read as such
    (``columnar.read``: the other rounds of a network run are never read)."""
    if not path.exists():
        return None
    try:
        if path.suffix == ".csv":
            return pd.read_csv(path)
        return columnar.read(path, columns, round0) if columns is not None or round0 else pd.read_parquet(path)
    except Exception as e:  # pyarrow and pandas raise several types for damaged files
        kind = "CSV" if path.suffix == ".csv" else "Parquet"
        raise LouderError(f"{path}: not a readable {kind} file ({e}); re-run the command that wrote it") from None


def columns_of(path: Path) -> list[str] | None:
    """The columns of a file of the run folder (None when there is none), its rows unread."""
    if not path.exists():
        return None
    try:
        return columnar.columns_of(path)
    except Exception as e:  # noqa: BLE001 - as read_table
        kind = "CSV" if path.suffix == ".csv" else "Parquet"
        raise LouderError(f"{path}: not a readable {kind} file ({e}); re-run the command that wrote it") from None


def group_refs(manifest: dict | None) -> list[str]:
    """The group files a manifest's config names (``simulation.groups``; manifests of any version)."""
    return list(recorded((manifest or {}).get("config"), "simulation.groups", None) or [])


MANIFESTS = (("simulation", "manifest.json"), ("explicit_probes", "probes_manifest.json"),
             ("beliefs", "beliefs_manifest.json"), ("association_test", "association_manifest.json"),
             ("decision_test", "decision_manifest.json"))
SIBLINGS = ("association.parquet", "decision_test.parquet", "weat.parquet", "beliefs.parquet", "convention.parquet")


@dataclass
class Analysis:
    """A run folder's files as the measures read them, and the tables they built (by CSV stem)."""

    run_dir: Path
    settings: Settings = field(default_factory=Settings)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    manifests: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False  # the tables were read from the CSVs an earlier analysis of this data state wrote
    state: dict[str, str] = field(default_factory=dict)  # the data state it is of (``run.data_state``)
    _files: dict[str, pd.DataFrame | None] = field(default_factory=dict, repr=False)
    _rows: dict[tuple, pd.DataFrame | None] = field(default_factory=dict, repr=False)
    _groups: dict[str, list[str]] | None = field(default=None, repr=False)

    def file(self, name: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        """A file of the run folder as written (read once; None when the folder has none). ``columns``:
        only those of them the file has (the file as read, when it already is; else read so, once)."""
        if columns is not None and name not in self._files:
            have = self.columns(name)
            if have is None:
                return None
            key = f"{name} {sorted(set(columns) & set(have))}"
            if key not in self._files:
                self._files[key] = read_table(self.run_dir / name, [c for c in have if c in columns])
            return self._files[key]
        if name not in self._files:
            self._files[name] = read_table(self.run_dir / name)
        return self._files[name]

    def rows(self, selection: Input) -> pd.DataFrame | None:
        """The rows of ``selection.file`` that the input ``selection`` reads (``select.rows``), selected once.
        Rows of round 0 only (the default: the independent decisions) of a Parquet file with rounds are read
        as round 0 only (``round0``): the rounds of influence of a 10^6-agent run are never loaded for them."""
        k = selection.selection
        if k not in self._rows:
            self._rows[k] = select.rows(self._source(selection), selection)
        return self._rows[k]

    def view(self, selection: Input) -> pd.DataFrame | None:
        warnings.warn("Analysis.view(input) is now Analysis.rows(input) (the old name goes in a later release)",
                      FutureWarning, stacklevel=2)
        return self.rows(selection)

    def _source(self, selection: Input) -> pd.DataFrame | None:
        """The frame ``rows`` selects from: the file as read, or its round 0 only when that is all it keeps."""
        name = selection.file
        if name in self._files or selection.raw or not name.endswith(".parquet") or \
                selection.mode("round", select.ROUND.default) != select.REFERENCE:
            return self.file(name)
        if "round" not in (self.columns(name) or ()):
            return self.file(name)
        key = f"{name} (round 0)"
        if key not in self._files:
            self._files[key] = read_table(self.run_dir / name, round0=True)
        return self._files[key]

    def columns(self, name: str) -> list[str] | None:
        """The columns of a file of the run folder (None when it has none), without reading its rows."""
        if name in self._files:
            f = self._files[name]
            return None if f is None else list(f.columns)
        return columns_of(self.run_dir / name)  # a Parquet footer or a CSV header: no row

    @property
    def score(self) -> bool:
        """decision_mode: score (each decision read from the choices' probabilities)."""
        return recorded((self.manifests.get("simulation") or {}).get("config"), "simulation.decision_mode") == "score"

    @property
    def groups(self) -> dict[str, list[str]]:
        """group id → its attributes: from the group files the run used, else from the data itself."""
        if self._groups is None:
            self._groups = _group_attributes(self.manifests, [f for n in ("decisions.parquet", "probes.parquet",
                                                                          "beliefs.parquet")
                                                              if (f := self._pairs(n)) is not None])
        return self._groups

    def _pairs(self, name: str) -> pd.DataFrame | None:
        """A file's group and attribute columns (the file as read, when it is; else those two only)."""
        if name in self._files:
            return self._files[name]
        cols = self.columns(name)
        return None if cols is None else read_table(self.run_dir / name, [c for c in ("group", "attribute")
                                                                           if c in cols])

    def context(self, measure: Measure, building: bool = False) -> Context:
        return Context(self, measure, building)

    def applies(self, measure: Measure) -> bool:
        """Every input the measure needs is in the run folder (its rows are None only when the file is
        missing or lacks the selection's columns: told from the file's columns, no row read)."""
        for n in measure.needs:
            selection = next((i for i in measure.inputs if i.name == n), None)
            if selection is None:
                getattr(self.context(measure), n)  # the one-line error of an undeclared input
            k = selection.selection
            if k in self._rows:
                if self._rows[k] is None:
                    return False
                continue
            cols = self.columns(selection.file)
            if cols is None or not set(selection.columns) <= set(cols):
                return False
        return True


def _group_attributes(manifests: dict[str, dict], frames: list[pd.DataFrame]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for m in manifests.values():
        for ref in group_refs(m):
            try:
                g = load_group(ref)
            except LouderError:
                continue  # a user group file that has moved: fall back to the attributes seen
            out[g.id] = list(g.attributes)
    for f in frames:
        for gid, g in f[["group", "attribute"]].drop_duplicates().groupby("group"):  # not the whole frame per group
            if gid not in out:
                out[gid] = sorted(g["attribute"].dropna().unique())
    return out


class _Options(dict):
    """A measure's options: ``a.options.control`` or ``a.options["control"]``."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no option {name!r}; the measure's options: {', '.join(self) or 'none'}") from None


class _Shared:
    """A name every measure's context reads from the analysis (its one home there: never copied)."""

    def __init__(self, *path: str):
        self.path = path

    def __get__(self, ctx, owner=None):
        if ctx is None:
            return self
        value = ctx.analysis
        for name in self.path:
            value = getattr(value, name)
        return value


class _Declared:
    """One input a measure declared: the rows it selects, read when the measure first asks."""

    def __init__(self, selection: Input):
        self.selection = selection

    def __get__(self, ctx, owner=None):
        return self if ctx is None else ctx.analysis.rows(self.selection)


class Context:
    """What one measure sees of the analysis: its declared inputs by name (``a.decisions``: the rows
    its ``Input`` selects, or None when the folder lacks the file; a name it did not declare is an error
    naming those it did), its ``options``, the tables built so far (while it builds: those of the
    measures it runs ``after``, and of theirs); and the analysis' own, read from it:
    ``settings`` (``bootstrap``, ``seed``), ``missing`` (what the run lacks: add a line), ``groups``,
    ``score``, ``manifests``, ``run_dir``. While its report section is written it also places its
    figures (``a.figure``: ``louder.analysis.report.page.SectionContext``)."""

    settings = _Shared("settings")
    bootstrap = _Shared("settings", "bootstrap")
    seed = _Shared("settings", "seed")
    missing = _Shared("missing")
    groups = _Shared("groups")
    score = _Shared("score")
    manifests = _Shared("manifests")
    run_dir = _Shared("run_dir")

    def __new__(cls, analysis: Analysis, measure: Measure, building: bool = False):
        # each measure's context is of a class of its own, whose attributes are its declared inputs
        return super().__new__(cls if "_declared" in cls.__dict__ else _of(cls, measure))

    def __init__(self, analysis: Analysis, measure: Measure, building: bool = False):
        self.analysis, self.measure = analysis, measure
        self.options = _Options(analysis.settings.of_measure(measure))
        if building:  # the tables of the measures it runs after (and theirs), no other: a dependency is declared
            mine = {t.name for name in registry.runs_after(measure) for t in registry.get(name).tables}
            self.tables = MappingProxyType({k: v for k, v in analysis.tables.items() if k in mine})
        else:
            self.tables = analysis.tables

    def __getattr__(self, name: str):  # only for a name nothing declares: say which inputs are
        if name.startswith("_"):
            raise AttributeError(name)
        declared = ", ".join(i.name for i in self.measure.inputs) or "none"
        raise AttributeError(f"measure {self.measure.name} reads {name!r}, which it does not declare (its inputs: "
                             f"{declared}); add Input({name!r}) to its inputs "
                             "(louder.analysis.engine.declarations.Input)")


@cache
def _of(kind: type[Context], measure: Measure) -> type[Context]:
    """The context class of ``measure``: ``kind`` with one attribute per input it declares."""
    taken = [i.name for i in measure.inputs if hasattr(kind, i.name)]
    if taken:
        raise LouderError(f"measure {measure.name}: input {taken[0]!r} has the name of its context's own "
                          f"{taken[0]}; give the input another name")
    return type(f"{kind.__name__}[{measure.name}]", (kind,),
                {"_declared": True, **{i.name: _Declared(i) for i in measure.inputs}})


def load(run_dir: str | Path, settings: Settings | None = None) -> Analysis:
    """The run folder (no file read yet but its manifests) and what is missing from it; no table yet."""
    run = Path(run_dir)
    if not run.is_dir():
        raise LouderError(f"run folder {run} does not exist; give the --out folder of `louder run`")
    a = Analysis(run, settings=settings or Settings())
    a.manifests = {k: m for k, f in MANIFESTS if (m := read_json(run / f))}
    decisions, probes = (run / "decisions.parquet").exists(), (run / "probes.parquet").exists()
    # a kind of run whose agents make no decision (a convention run, issue 48) lacks neither file
    agentless = "decisions.parquet" not in ((a.manifests.get("simulation") or {}).get("files") or {"decisions.parquet"})
    if not decisions and not agentless:
        # a cache and no probe's manifest: only an agent run can have started it (a probe's cache is not one)
        started = (run / "cache.sqlite").exists() and not any(
            (run / f).exists() for k, f in MANIFESTS if k != "simulation")
        a.missing.append("simulation: no decisions.parquet" + (
            " — a run was started here but has not finished; run the same `louder run` command again to complete it"
            if started else " — run `louder run --out RUN_DIR` to add implicit-bias results"))
    if not probes and not agentless:
        a.missing.append("explicit probes: no probes.parquet — run `louder probe explicit --out RUN_DIR` "
                         "to add the explicit (question-answer) contrast")
    if not decisions and not probes and not any((run / f).exists() for f in SIBLINGS):
        raise LouderError(f"run folder {run} has neither decisions.parquet nor probes.parquet; "
                          "run `louder run --out DIR` and/or `louder probe explicit --out DIR` first")
    a.missing.extend(no_valid_notes(a.manifests))  # issue 32: a kind of run with no valid answer says why
    return a
