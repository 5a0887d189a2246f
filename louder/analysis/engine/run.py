"""``louder analyze RUN_DIR``: read the run folder once, run every registered measure that applies
(``louder.analysis.engine.registry``), write their tables as CSV — once per data state and settings.

The analysis is cached in the run folder: ``analysis.json`` records the settings, the state of every
input it read (each Parquet file's generation id, each manifest's and other input file's sha256)
and the sha256 of every CSV it wrote. ``analyze`` with the same settings on the same data reads
those CSVs back instead of recomputing the bootstrap, and writes nothing; anything changed — a new
write of the run, another setting, an edited or deleted CSV — computes and writes the analysis again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from louder.analysis.engine import options as O
from louder.analysis.engine import registry
from louder.analysis.engine.inputs import DEFAULT_BOOTSTRAP, MANIFESTS, Analysis, Settings, group_refs, load, read_json
from louder.errors import LouderError
from louder.io import write_csv, write_json
from louder.runfolder import check_generations, check_unchanged, fingerprint

__all__ = ["analyze", "for_report", "leads", "recorded_settings", "settings_of", "state_of", "written"]

def settings_of(bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, options=None, **shorthands) -> Settings:
    """The settings of an analysis: ``options`` (measure → option → value) and ``shorthands``, the
    keyword forms of the flags options declare (``random_slopes=True`` is ``--random-slopes``: each sets
    the options that declare its flag); an unknown one is one line."""
    return Settings.of(bootstrap, seed, O.merge(O.from_keywords(shorthands), options))


# --- the cache: one analysis per data state and settings ------------------------------------------

def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def data_state(run: Path, generations: dict[str, str | None], settings: Settings) -> dict[str, str]:
    """What the analysis of ``run`` depends on beside its settings: every Parquet file's generation
    id (``runfolder.fingerprint``; its size and modification time when it has none), the sha256 of
    every manifest and sequential CSV, of the settings' files and of the group files the run names,
    and louder's version."""
    from louder.version import __version__

    state = {"louder": __version__}
    for f in sorted(run.glob("*.parquet")):
        fp = generations.get(f.name) or fingerprint(f)
        if fp is None:
            st = f.stat()
            fp = f"stat:{st.st_size}:{st.st_mtime_ns}"
        state[f.name] = fp
    for name in sorted({f for _, f in MANIFESTS} | {"sequential.csv", "sequential_waves.csv"}):
        if (run / name).is_file():
            state[name] = _sha(run / name)
    files = O.files(settings.options)
    for _, m in MANIFESTS:
        for ref in group_refs(read_json(run / m)) if (run / m).is_file() else []:
            files.append(("group", ref))
    for what, ref in files:
        if ref is not None and Path(ref).is_file():
            state[f"{what}:{Path(ref).resolve()}"] = _sha(Path(ref))
    return state


def state_of(run_dir: str | Path, settings: Settings) -> dict[str, str]:
    """The data state of ``run_dir`` now (``data_state``), for ``settings``."""
    run = Path(run_dir)
    return data_state(run, check_generations(run), settings)


def _cached(run: Path, done: dict | None, settings: Settings, state: dict[str, str],
            names: list[str] | None = None) -> dict[str, pd.DataFrame] | None:
    """The tables analysis.json lists (those of ``names``), read from their CSVs, when they are of this
    data state and these settings and no CSV has changed since; else None."""
    if not done or done.get("inputs") != state or any(done.get(k) != v for k, v in settings.recorded().items()):
        return None
    written = done.get("written") or {}
    files = [run / f for f in (done.get("tables") or {}).values()]
    if not files or any(not f.is_file() or written.get(f.name) != _sha(f) for f in files):
        return None
    return {name: pd.read_csv(run / f) for name, f in done["tables"].items() if names is None or name in names}


def written(run_dir: str | Path, names: list[str] | None = None) -> dict[str, pd.DataFrame] | None:
    """The tables (of ``names``) that ``louder analyze`` last wrote in ``run_dir``, when they are of
    the folder's data as it is now — what ``louder view`` draws; None when there are none (no
    analysis, or one of other data: run ``louder analyze`` again)."""
    run = Path(run_dir)
    settings = recorded_settings(run)
    if settings is None:
        return None
    try:
        generations = check_generations(run)
    except LouderError:
        return None
    return _cached(run, read_json(run / "analysis.json"), settings, data_state(run, generations, settings), names)


def analyze(run_dir: str | Path, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, write: bool = True,
            options: dict | None = None, measures: Sequence[str] | None = None, **shorthands) -> Analysis:
    """Every table of the run folder's measures (``louder.analysis.engine.registry``) and, with ``write``, the
    CSVs and analysis.json in the folder. ``options``: measure → option → value (``louder measures``
    lists them); ``shorthands``: the keyword forms of the flags options declare (``control=["political_ideology"]``
    is ``--control political_ideology``, ``options={"conditional": {"control": [...]}}``). With
    ``write``, an analysis of the same data with the same settings is read back from its CSVs
    (``Analysis.cached``), not computed or written again; ``write=False`` computes in memory and
    touches no file. ``measures``: only the tables of these measures and of those they read (``after``), in
    memory (``write=False``: a run folder holds the analysis of every measure) — a simulation study that
    reads one table of many runs computes only that."""
    start = time.perf_counter()
    settings = settings_of(bootstrap, seed, options, **shorthands)
    chosen = selection(measures)
    if chosen is not None and write:
        raise LouderError("analyze: measures= computes the tables of the measures named in memory; pass write=False "
                          "(a run folder's analysis is that of every measure)")
    run = Path(run_dir)
    if not run.is_dir():
        raise LouderError(f"run folder {run} does not exist; give the --out folder of `louder run`")
    # one write's files only: decisions of one run beside the personas of another are refused (issue 36)
    generations = check_generations(run)
    state = data_state(run, generations, settings)
    done = read_json(run / "analysis.json")
    cached = _cached(run, done, settings, state) if write else None
    a = load(run, settings)
    a.state = state
    if cached is not None:
        a.tables, a.missing, a.cached = cached, list(done.get("missing") or []), True
    else:
        for m in registry.measures():
            if (chosen is None or m.name in chosen) and a.applies(m):
                a.tables.update(m.build(a.context(m, building=True)))
    check_unchanged(run, generations)  # no run rewrote a file while it was read
    a.seconds = time.perf_counter() - start
    if write and not a.cached:
        _write(a, state)
    return a


def selection(measures: Sequence[str] | None) -> set[str] | None:
    """The measures ``measures`` names (a measure, or a table it writes: ``amplification`` is the network
    measure's) and those they read (``registry.runs_after``); None: every measure. An unknown name is one
    line, with the measures there are."""
    if measures is None:
        return None
    chosen = set()
    for name in [measures] if isinstance(measures, str) else measures:
        m = registry.owner(name) or registry.get(name, "measures=")
        chosen |= {m.name, *registry.runs_after(m)}
    return chosen


def leads(a: Analysis) -> list[str]:
    """What the analysis leads to: every measure's next steps (``Measure.leads_to``)."""
    return [line for m in registry.measures() if m.leads_to and a.applies(m) for line in m.leads_to(a.context(m))]


def _write(a: Analysis, state: dict[str, str]) -> None:
    """The CSV of every registered table the analysis built, then analysis.json (last: it vouches for them).
    A table the previous analysis wrote and this one did not build (another option, another measure) is
    removed: the folder holds one analysis, never a table of another beside it."""
    declared = registry.tables()
    before = (read_json(a.run_dir / "analysis.json") or {}).get("tables") or {}
    for name, file in before.items():
        if name not in a.tables and name in declared and file == f"{name}.csv":
            (a.run_dir / file).unlink(missing_ok=True)
    written = {}
    for name, df in a.tables.items():
        if name in declared:
            path = a.run_dir / f"{name}.csv"
            write_csv(df, path)
            written[path.name] = _sha(path)
    # the settings, so that `louder report` renders this analysis and never one with other settings
    write_json({**a.settings.recorded(), "missing": a.missing, "seconds": round(a.seconds, 3),
                "tables": {n: f"{n}.csv" for n in a.tables if n in declared}, "inputs": state,
                "written": written}, a.run_dir / "analysis.json")


def recorded_settings(run_dir: str | Path) -> Settings | None:
    """The settings of the analysis ``louder analyze`` last wrote in ``run_dir`` (None: none yet). An
    analysis.json of an earlier louder, whose settings were fields of their own, reads as their
    shorthands; a measure or option that is no longer installed is left out."""
    done = read_json(Path(run_dir) / "analysis.json")
    if done is None or done.get("bootstrap") is None or done.get("seed") is None:
        return None
    if "options" in done:
        known = {m.name: {o.name for o in m.options} for m in registry.measures()}
        options = {m: {k: v for k, v in values.items() if k in known[m]}
                   for m, values in (done.get("options") or {}).items() if m in known}
        return Settings.of(done["bootstrap"], done["seed"], options)
    # (those fields were the keyword forms of the flags: ``"control": [...]`` as ``--control``)
    fields = {O.keyword(f) for f in O.flags()}
    return settings_of(done["bootstrap"], done["seed"], **{k: v for k, v in done.items() if k in fields and v is not None})


def for_report(run_dir: str | Path, bootstrap: int | None = None, seed: int | None = None,
               options: dict | None = None, **shorthands) -> Analysis:
    """The analysis ``louder report`` renders: the one ``louder analyze`` wrote, read from its CSVs
    (never computed with other settings). A setting given here that differs from the recorded one is
    not used, and the report says so (run ``louder analyze`` with it to change the analysis). When the
    run's data changed since, the analysis is computed again with the recorded settings and written,
    as ``louder analyze`` would. A run folder without an analysis is analysed here with the given
    settings (default 10,000 draws, seed 0) and its tables written."""
    run = Path(run_dir)
    was = recorded_settings(run)
    asked = settings_of(DEFAULT_BOOTSTRAP if bootstrap is None else bootstrap, 0 if seed is None else seed,
                        options, **shorthands)
    if was is None:
        return analyze(run, asked.bootstrap, asked.seed, options=asked.options)
    ignored = [f"--{k} {v}" for k, v in (("bootstrap", bootstrap), ("seed", seed)) if v is not None
               and v != getattr(was, k)]
    ignored += [f"--set {m}.{o}={v}" for m, values in asked.options.items() for o, v in values.items()
                if was.options.get(m, {}).get(o) != v]
    a = analyze(run, was.bootstrap, was.seed, options=was.options)
    if ignored:
        shown = f"--bootstrap {was.bootstrap} --seed {was.seed}" + "".join(
            f" --set {m}.{o}={v}" for m, values in was.options.items() for o, v in values.items())
        a.missing.append(f"report: shows the analysis `louder analyze` wrote ({shown}), not {' '.join(ignored)}; run "
                         f"`louder analyze {run} {' '.join(ignored)}` to change it, then `louder report` again")
    if not a.cached:
        a.missing.append("analysis: the run's data changed after `louder analyze` wrote its tables; they were computed "
                         "again with its settings and written, so this report shows the data as it is now")
    return a
