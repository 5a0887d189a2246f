"""louder from Python: run, open, analyse and report an experiment, as the command line does.

    >>> import louder
    >>> r = louder.run({"simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"],
    ...                               "agents": 3}, "models": ["fake:seed=1"]}, out="runs/x")
    >>> r.decisions.head()            # every table the run wrote, by file stem
    >>> r.analyze()["cases"]          # the tables `louder analyze` writes, by CSV stem (computed once)
    >>> r.table("cases")              # any table by name: the run's Parquet files and the analysis' CSVs
    >>> print(r.summary())            # what it holds and found (HTML in a notebook)
    >>> r.report()                    # runs/x/report/index.html

The command line is a thin layer over these functions; a config is a YAML path, a dict in the
YAML's shape, or an ``ExperimentConfig``, and keyword overrides are the config's own field names
(``agents=``, ``models=[...]``, ``scenarios=[...]``, …), as the CLI's flags set them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # imported on use: `import louder` stays light
    import pandas as pd

    from louder.analysis.engine.inputs import Analysis
    from louder.analysis.stats.power import Plan
    from louder.config import ExperimentConfig
    from louder.task import TaskResult

def _config(source, overrides: dict) -> ExperimentConfig:
    """The validated experiment config of ``source`` with ``overrides`` on top (None values are left
    out); a ``LouderError`` (one line naming the field and the fix) for anything it cannot accept."""
    from louder.config import load_config

    return load_config(source, overrides)


class Run:
    """A run folder: every table it holds by name (``run.table("decisions")``, ``run.table("cases")``,
    or ``run.decisions``, ``run.cases``, …), its manifests, its analysis (``run.analyze()``), a summary
    (``run.summary()``, shown in notebooks) and its report (``run.report()``)."""

    def __init__(self, path: str | Path, result: TaskResult | None = None):
        self.path = Path(path).resolve()
        if not self.path.is_dir():
            from louder.errors import LouderError

            raise LouderError(f"run folder {self.path} does not exist; give the --out folder of a run")
        self.result = result  # the run that made it in this process (tables in memory), if any
        self._tables: dict[str, pd.DataFrame] = {}
        self._analysis: Analysis | None = None

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}: {', '.join(self.tables) or 'no tables yet'})"

    def _repr_html_(self) -> str:
        return self.summary(compute=False).as_html()

    @property
    def tables(self) -> list[str]:
        """The file stems of the Parquet tables in the run folder (``decisions``, ``personas``, …); the
        analysis adds its own (``louder.analysis.engine.registry.tables()``), read with ``table`` too."""
        return sorted(p.stem for p in self.path.glob("*.parquet"))

    def table(self, name: str) -> pd.DataFrame:
        """Any table of the run folder by name: a Parquet table the run wrote (``decisions``,
        ``personas``, …, read once), a table a measure writes (``cases``, ``attributes``, ``robustness``,
        …: from the analysis of the folder's data as it is now, with the settings ``louder analyze``
        last used there, else the defaults — computed once and read back from its CSVs after), or a
        CSV the run wrote (``sequential``). ``KeyError`` says which tables there are."""
        from louder.analysis.engine import registry

        if name in self._tables:
            return self._tables[name]
        import pandas as pd

        path = self.path / f"{name}.parquet"
        if path.exists():
            self._tables[name] = pd.read_parquet(path)
            return self._tables[name]
        declared = registry.tables()
        if name in declared:
            a = self._analysed()
            if name in a.tables:
                return a.tables[name]
            m = registry.owner(name)
            raise KeyError(f"{self.path} has no {name} table: its measure, {m.name} ({m.summary}), found nothing to "
                           f"build it from in this run; its analysis tables: {', '.join(a.tables) or 'none'}")
        if (self.path / f"{name}.csv").exists():  # a table the run wrote as CSV (a sequential run's)
            return pd.read_csv(self.path / f"{name}.csv")
        raise KeyError(f"{self.path} has no {name}.parquet and no table {name!r} of the analysis; its tables: "
                       f"{', '.join(self.tables) or 'none'}, and what the analysis writes: {', '.join(declared)}")

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.table(name)
        except KeyError as e:
            raise AttributeError(str(e)) from None

    @property
    def decisions(self) -> pd.DataFrame:
        """decisions.parquet: one row per agent decision (and round, in network runs)."""
        return self.table("decisions")

    @property
    def personas(self) -> pd.DataFrame:
        """personas.parquet: every persona with its own status, prompt and raw answer."""
        return self.table("personas")

    @property
    def manifests(self) -> dict[str, dict]:
        """Every manifest of the folder by file stem (``manifest``, ``probes_manifest``, …)."""
        return {p.stem: json.loads(p.read_text("utf-8")) for p in sorted(self.path.glob("*manifest.json"))}

    @property
    def manifest(self) -> dict:
        """The run's manifest (manifest.json; a probe-only folder: its probe's manifest)."""
        m = self.manifests
        if not m:
            return {}
        return m.get("manifest") or next(iter(m.values()))

    def _analysed(self, settings=None) -> Analysis:
        """The analysis of the folder's data as it is now, with ``settings`` (None: those ``louder
        analyze`` last used here, else the defaults). Computed once per data state and settings: in
        memory here, and on disk by ``louder.analysis.analyze``."""
        from louder.analysis import analyze
        from louder.analysis.engine import run as analysis_run

        wanted = settings or analysis_run.recorded_settings(self.path) or analysis_run.settings_of()
        a = self._analysis
        if a is None or a.settings != wanted or a.state != analysis_run.state_of(self.path, wanted):
            a = self._analysis = analyze(self.path, wanted.bootstrap, wanted.seed, options=wanted.options)
            _warn(a.missing)
        return a

    def analyze(self, bootstrap: int = 10_000, seed: int = 0, write: bool = True, options: dict | None = None,
                measures: list[str] | None = None, **shorthands) -> dict[str, pd.DataFrame]:
        """Every table ``louder analyze`` computes, keyed by its CSV stem (``cases``, ``attributes``,
        ``choices``, …); with ``write`` the CSVs are written into the run folder as the CLI does.
        ``options``: the measures' options, ``{"conditional": {"control": ["political_ideology"]}}``
        (``louder measures`` lists them); ``shorthands``, the keyword forms of the flags the options
        declare, set them too (``--random-slopes`` is ``random_slopes=True``) — louder's ``observed`` (a
        file of observed rates: voices, sensitivity), ``predictions``, ``patterns``, ``adjust`` (parity |
        observed: sensitivity.csv), ``random_slopes`` and ``reference`` (discrimination.csv), ``control``
        (conditional.csv), and those of installed measures. Computed once per data state and settings:
        calling it again reads the same tables back without recomputing the bootstrap or rewriting a
        CSV. What the run lacks for a measure is raised as a ``louder.LouderWarning`` (``warnings.warn``).
        ``measures`` (with ``write=False``): only the tables of these measures and of those they read,
        ``run.analyze(write=False, measures=["amplification"])`` — a study of many runs that reads one table."""
        from louder.analysis import analyze
        from louder.analysis.engine.run import settings_of

        settings = settings_of(bootstrap, seed, options, **shorthands)
        if not write or measures is not None:  # (measures= with write: the engine's one-line refusal)
            a = analyze(self.path, settings.bootstrap, settings.seed, write=write, options=settings.options,
                        measures=measures)
            _warn(a.missing)
            return dict(a.tables)
        return dict(self._analysed(settings).tables)

    def summary(self, compute: bool = True) -> Summary:
        """What the run holds and what its analysis found: its design (the report's card), the answers of
        every table by status, the findings in sentences (the report's top and the end of `louder analyze`
        say the same: ``louder.analysis.report.findings``), the next steps the measures suggest and what is missing — as text (``print(run.summary())``) and HTML (shown in notebooks). ``compute``:
        analyse the folder if it has no analysis of its data as it is now (else say so)."""
        from louder.analysis.engine.run import written

        analysis = self._analysed() if compute else None
        if analysis is None:
            tables = written(self.path)
            if tables is not None:
                from louder.analysis.engine.inputs import load

                analysis = load(self.path)
                analysis.tables = tables
        return Summary.of(self, analysis)

    def report(self, bootstrap: int | None = None, seed: int | None = None, options: dict | None = None,
               **shorthands) -> Path:
        """Write the run's self-contained HTML report; returns RUN_DIR/report/index.html. It renders the
        analysis ``analyze`` wrote (its recorded settings; the arguments apply only to a run folder
        not yet analysed: default 10,000 draws, seed 0), and never overwrites its tables."""
        from louder.analysis import for_report
        from louder.analysis.report.page import write_report

        a = for_report(self.path, bootstrap=bootstrap, seed=seed, options=options, **shorthands)
        _warn(a.missing)
        return write_report(a)


def _warn(notes: list[str]) -> None:
    """What a run folder lacks, as warnings (the CLI prints them as `missing:` lines), pointing at the
    caller's line outside louder."""
    import sys
    import warnings

    from louder.errors import LouderWarning

    here, level, frame = str(Path(__file__).parent), 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    for note in notes:
        warnings.warn(note, LouderWarning, stacklevel=level)


class Summary:
    """``Run.summary()``: text (``str()``, ``print``) and HTML (``as_html()``, shown in notebooks)."""

    def __init__(self, title: str, blocks: list[tuple[str, pd.DataFrame | list[str]]]):
        self.title, self.blocks = title, blocks

    @classmethod
    def of(cls, run: Run, a: Analysis | None) -> Summary:
        import pandas as pd

        from louder.status import status_counts

        rows = []
        for p in sorted(run.path.glob("*.parquet")):
            df = run.table(p.stem)
            counts = status_counts(df) if "status" in df.columns else {}
            rows.append(dict(table=p.stem, rows=len(df), **counts))
        blocks: list[tuple[str, pd.DataFrame | list[str]]] = [("Run tables (answers by status)", pd.DataFrame(rows))]
        kinds = sorted({m.get("louder_kind") for m in run.manifests.values() if m.get("louder_kind")})
        if a is None:
            blocks.append(("Analysis", ["not analysed for its data as it is now: run.analyze() (or `louder analyze "
                                        f"{run.path}`)"]))
        else:
            from louder.analysis.engine.run import leads
            from louder.analysis.report.findings import findings

            found = findings(a)
            blocks.insert(0, ("Design", found.card_lines()))
            blocks.append(("Analysis tables", pd.DataFrame([dict(table=n, rows=len(t)) for n, t in a.tables.items()])))
            blocks.append(("Findings", found.lines(missing=False) or ["no measure found anything to say"]))
            if steps := leads(a):
                blocks.append(("Next steps", steps))
            if a.missing:
                blocks.append(("Missing", list(a.missing)))
        return cls(f"louder run {run.path.name} ({', '.join(kinds) or 'no manifest'}): {run.path}", blocks)

    def as_text(self) -> str:
        out = [self.title]
        for title, body in self.blocks:
            out += ["", title + ":"]
            out += ([body.to_string(index=False)] if hasattr(body, "to_string") else [f"- {line}" for line in body])
        return "\n".join(out)

    def as_html(self) -> str:
        import html

        out = [f"<h4>{html.escape(self.title)}</h4>"]
        for title, body in self.blocks:
            out.append(f"<b>{html.escape(title)}</b>")
            out.append(body.to_html(index=False, border=0) if hasattr(body, "to_html") else
                       "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in body) + "</ul>")
        return "<div>" + "".join(out) + "</div>"

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()

    __repr__ = __str__


class Comparison:
    """``louder.compare(...)``: models against each other across run folders (or within one) — every table
    by name (``table("model_pairs")``, ``tables``), what it found (``summary()``), the release gate
    (``gate()``), its files (``write(out)``) and its HTML report (``report(out)``)."""

    def __init__(self, assembled, result, settings: dict):
        self.assembled, self.result, self.settings = assembled, result, settings

    def __repr__(self) -> str:
        return f"Comparison({' vs '.join(self.labels)}: {', '.join(self.tables)})"

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    @property
    def labels(self) -> list[str]:
        """The entries compared, in order (their labels: the model names unless labelled)."""
        return list(self.assembled.labels)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """``models``, ``model_pairs``, ``model_pair_summary`` (and ``model_trend`` with an order)."""
        return dict(self.result.tables)

    def table(self, name: str) -> pd.DataFrame:
        """One table by name (``sources``: where each entry comes from)."""
        if name == "sources":
            return self.assembled.sources
        if name not in self.result.tables:
            raise KeyError(f"the comparison has no table {name!r}; its tables: sources, {', '.join(self.tables)}")
        return self.result.tables[name]

    def gate(self, margin: float | None = None, base: str | None = None) -> pd.DataFrame:
        """The cases in which an entry is worse than ``base`` (default: the first): significantly more
        biased after Holm, or with ``margin`` shown to exceed it (``louder.analysis.stats.comparison.gate``)."""
        from louder.analysis.stats.comparison import gate

        return gate(self.result, base or self.labels[0], margin)

    def verdict(self, rule: str | None) -> dict | None:
        """The release gate's verdict as comparison.json records it (``rule``: "worse" or "worse:MARGIN";
        None: no gate): the base, the margin, passed, and each failing case with its line."""
        from louder.compare_runs import gate_line, gate_rule, records

        parsed = gate_rule(rule)
        if parsed is None:
            return None
        failing = self.gate(parsed[1])
        return {"rule": parsed[0], "base": self.labels[0], "margin": parsed[1], "passed": failing.empty,
                "failing": [dict(rec, line=gate_line(r))
                            for rec, r in zip(records(failing), failing.to_dict("records"))]}

    def summary(self) -> Summary:
        """The entries, each model's summary, each pair's and the trend (text; HTML in a notebook)."""
        blocks = [("Entries", self.assembled.sources), *((n, t) for n, t in self.tables.items())]
        if self.assembled.notes:
            blocks.append(("Notes", list(self.assembled.notes)))
        return Summary(f"louder comparison: {' vs '.join(self.labels)}", blocks)

    def write(self, out: str | Path = "comparison", fail_if: str | None = None, report: bool = True,
              gate: dict | None = None) -> list[Path]:
        """The tables as CSV, comparison.json (with the gate's verdict: ``gate``, else that of ``fail_if``,
        "worse" or "worse:MARGIN") and report/index.html into ``out``."""
        from louder.compare_runs import write

        return write(out, self.assembled, self.result, self.settings, gate or self.verdict(fail_if), report)

    def report(self, out: str | Path = "comparison", fail_if: str | None = None) -> Path:
        """Write the comparison's self-contained HTML report (and its tables) into ``out``; returns
        OUT/report/index.html."""
        return self.write(out, fail_if)[-1]


def compare(*runs: Any, order: list[str] | str | None = None, margin: float | None = None, bootstrap: int = 10_000,
            seed: int = 0) -> Comparison:
    """Compare models (``louder compare``): ``runs`` are run folders — paths, ``"LABEL=PATH"`` texts,
    ``Run``s, or one dict label → path; a label names a folder's model (default: the model's name),
    and one folder holding several models compares them. ``order``: the entries in order (labels, a
    list or "A,B,C" — a model name with commas is read whole): the pairs follow it and the trend is
    tested. ``margin``: what a verdict of no
    difference must rule out (default 0.3). Folders combine only when their designs match; else one
    ``LouderError`` line names the first difference."""
    from louder.analysis.stats.comparison import MARGIN
    from louder.compare_runs import compare as assemble_and_compare

    items = runs[0] if len(runs) == 1 and isinstance(runs[0], dict) else [
        r.path if isinstance(r, Run) else r for r in runs]
    margin = MARGIN if margin is None else margin
    x, c = assemble_and_compare(items, order, bootstrap, seed, margin)
    return Comparison(x, c, {"bootstrap": bootstrap, "seed": seed, "margin": margin,
                             "order": list(x.labels) if order else None})


def open(run_dir: str | Path) -> Run:  # noqa: A001 — louder.open(run_dir), as the issue names it
    """The run folder ``run_dir`` (the ``--out`` of any run) as a ``Run``."""
    return Run(run_dir)


def default_out(cfg: ExperimentConfig) -> Path:
    """The run folder ``louder.run`` writes to when given none: ``runs/<run_id>``, or without a
    ``run_id`` ``runs/run-<the first 8 hex digits of the config's sha256>`` — the same config always
    finds the same folder, so running it again resumes there."""
    import hashlib

    if cfg.run_id:
        return Path("runs") / cfg.run_id
    return Path("runs") / f"run-{hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()[:8]}"


def run(config: str | Path | dict | ExperimentConfig | None = None, out: str | Path | None = None, *,
        kind: str | None = None, retry_errors: bool = False, progress: bool | Callable[[int, str], None] = True,
        **overrides: Any) -> Run:
    """Run (or resume) an experiment and return its run folder.

    ``out``: the run folder (default ``default_out(config)``: ``runs/<run_id>``, else
    ``runs/run-<hash of the config>``). ``config``: a YAML path, a dict in the YAML's shape, or an
    ``ExperimentConfig``; ``overrides``:
    config fields on top (``agents=3``, ``models=["fake:seed=1"]``, …). ``kind``: ``None`` runs what
    ``louder run`` runs with this config (simulation, population, network or archetype — see
    ``louder.kinds``); ``"explicit"``, ``"association"`` or ``"decision"`` run a probe into the same
    folder. ``progress``: a progress bar (True), none (False), or your own ``on_progress(total, phase)``.
    Running the same call again resumes from the run's cache: finished answers are never asked twice."""
    from louder import kinds
    from louder.progress import progress_bar
    from louder.task import execute

    cfg = _config(config, overrides)
    if out is None:
        out = default_out(cfg)
    k = kinds.for_config(cfg) if kind is None else kinds.resolve(kind, cfg)
    task = k.build(cfg)
    close = None
    on_progress = progress if callable(progress) else None
    if progress is True:
        on_progress, close = progress_bar(k.label)
    try:
        result = execute(task, cfg, out, retry_errors, on_progress)
    finally:
        if close:
            close()
    return Run(out, result)


def estimate(config: str | Path | dict | ExperimentConfig | None = None, *, kind: str | None = None,
             **overrides: Any) -> pd.DataFrame:
    """The dry run's numbers, one row per model: calls, estimated input / output tokens (typical and
    max) and cost in USD where priced — no model is called. ``kind`` as in ``run``."""
    from louder import kinds
    from louder.cost import price

    cfg = _config(config, overrides)
    k = kinds.for_config(cfg) if kind is None else kinds.resolve(kind, cfg)
    return price(k.build(cfg).calls, cfg)


def plan(effect: float, attributes: int, base_rate: float, power: float = 0.8, alpha: float = 0.05,
         spread: str = "even", seed: int = 0) -> Plan:
    """Agents per attribute needed to detect a DPD of ``effect`` among ``attributes`` attributes around
    ``base_rate`` with the test ``louder analyze`` runs (seeded simulation; ``louder plan``).

    Returns a ``Plan``: ``agents_per_attribute`` (None when not reached below 20,000), the simulated
    ``power`` there, and the true ``rates`` simulated (``spread``: even, or one attribute apart)."""
    from louder.analysis.stats.power import plan as make_plan
    from louder.errors import LouderError

    checks = (("effect", effect, 0 < effect <= 1), ("base_rate", base_rate, 0 <= base_rate <= 1),
              ("power", power, 0 < power < 1), ("alpha", alpha, 0 < alpha < 1),
              ("attributes", attributes, attributes >= 2), ("spread", spread, spread in ("even", "one")))
    for name, value, ok in checks:
        if not ok:
            raise LouderError(f"{name} {value}: out of range; use effect in (0, 1], base rate in [0, 1], power and "
                              "alpha in (0, 1), at least 2 attributes, spread even or one")
    return make_plan(effect, attributes, base_rate, target=power, alpha=alpha, spread=spread, seed=seed)


__all__ = ["Comparison", "Run", "Summary", "compare", "default_out", "estimate", "open", "plan", "run"]
