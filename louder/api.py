"""louder from Python: run, open, analyse and report an experiment, as the command line does.

    >>> import louder
    >>> r = louder.run({"simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"],
    ...                               "agents": 3}, "models": ["fake:seed=1"]}, out="runs/x")
    >>> r.decisions.head()            # every table the run wrote, by file stem
    >>> r.analyze()["cases"]          # the tables `louder analyze` writes, by CSV stem
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

    from louder.analysis.power import Plan
    from louder.config import ExperimentConfig
    from louder.task import TaskResult

def _config(source, overrides: dict) -> ExperimentConfig:
    """The validated experiment config of ``source`` with ``overrides`` on top (None values are left
    out); a ``LouderError`` (one line naming the field and the fix) for anything it cannot accept."""
    from louder.config import load_config

    return load_config(source, overrides)


class Run:
    """A run folder: the tables a run wrote (``run.decisions``, ``run.personas``, ``run.probes``, …
    any ``NAME.parquet`` as ``run.NAME``), its manifests, its analysis and its report."""

    def __init__(self, path: str | Path, result: TaskResult | None = None):
        self.path = Path(path).resolve()
        if not self.path.is_dir():
            from louder.errors import LouderError

            raise LouderError(f"run folder {self.path} does not exist; give the --out folder of a run")
        self.result = result  # the run that made it in this process (tables in memory), if any
        self._tables: dict[str, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}: {', '.join(self.tables) or 'no tables yet'})"

    @property
    def tables(self) -> list[str]:
        """The file stems of the Parquet tables in the run folder (``decisions``, ``personas``, …)."""
        return sorted(p.stem for p in self.path.glob("*.parquet"))

    def table(self, name: str) -> pd.DataFrame:
        """The table ``NAME.parquet`` of the run folder (read once; ``KeyError`` if the run has none)."""
        if name not in self._tables:
            path = self.path / f"{name}.parquet"
            if not path.exists():
                raise KeyError(f"{self.path} has no {name}.parquet; its tables: {', '.join(self.tables) or 'none'}")
            import pandas as pd

            self._tables[name] = pd.read_parquet(path)
        return self._tables[name]

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

    def analyze(self, bootstrap: int = 10_000, seed: int = 0, predictions: str | Path | None = None,
                patterns: str | Path | None = None, write: bool = True,
                observed: str | Path | None = None) -> dict[str, pd.DataFrame]:
        """Every table ``louder analyze`` computes, keyed by its CSV stem (``cases``, ``attributes``,
        ``choices``, …); with ``write`` the CSVs are written into the run folder as the CLI does.
        ``observed``: a file of observed rates (``voices``: gaps and amplification, docs/voices.md)."""
        from louder.analysis import analyze

        self._analysis = analyze(self.path, bootstrap=bootstrap, seed=seed, predictions=predictions,
                                 patterns=patterns, write=write, observed=observed)
        return dict(self._analysis.tables)

    def report(self, bootstrap: int | None = None, seed: int | None = None,
               observed: str | Path | None = None) -> Path:
        """Write the run's self-contained HTML report; returns RUN_DIR/report/index.html. It renders the
        analysis ``analyze`` wrote (its recorded settings; the arguments apply only to a run folder
        not yet analysed: default 10,000 draws, seed 0), and never overwrites its tables."""
        from louder.analysis import for_report
        from louder.analysis.report import write_report

        return write_report(for_report(self.path, bootstrap=bootstrap, seed=seed, observed=observed))


def open(run_dir: str | Path) -> Run:  # noqa: A001 — louder.open(run_dir), as the issue names it
    """The run folder ``run_dir`` (the ``--out`` of any run) as a ``Run``."""
    return Run(run_dir)


def run(config: str | Path | dict | ExperimentConfig | None = None, out: str | Path | None = None, *,
        kind: str | None = None, retry_errors: bool = False, progress: bool | Callable[[int, str], None] = True,
        **overrides: Any) -> Run:
    """Run (or resume) an experiment and return its run folder.

    ``config``: a YAML path, a dict in the YAML's shape, or an ``ExperimentConfig``; ``overrides``:
    config fields on top (``agents=3``, ``models=["fake:seed=1"]``, …). ``kind``: ``None`` runs what
    ``louder run`` runs with this config (simulation, population, network or archetype — see
    ``louder.kinds``); ``"explicit"``, ``"association"`` or ``"decision"`` run a probe into the same
    folder. ``progress``: a progress bar (True), none (False), or your own ``on_progress(total, phase)``.
    Running the same call again resumes from the run's cache: finished answers are never asked twice."""
    from louder import kinds
    from louder.errors import LouderError
    from louder.progress import progress_bar
    from louder.task import execute

    if out is None:
        raise LouderError("out: give the run folder to write to, e.g. louder.run(config, out='runs/first')")
    cfg = _config(config, overrides)
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
    from louder.analysis.power import plan as make_plan
    from louder.errors import LouderError

    checks = (("effect", effect, 0 < effect <= 1), ("base_rate", base_rate, 0 <= base_rate <= 1),
              ("power", power, 0 < power < 1), ("alpha", alpha, 0 < alpha < 1),
              ("attributes", attributes, attributes >= 2), ("spread", spread, spread in ("even", "one")))
    for name, value, ok in checks:
        if not ok:
            raise LouderError(f"{name} {value}: out of range; use effect in (0, 1], base rate in [0, 1], power and "
                              "alpha in (0, 1), at least 2 attributes, spread even or one")
    return make_plan(effect, attributes, base_rate, target=power, alpha=alpha, spread=spread, seed=seed)


__all__ = ["Run", "estimate", "open", "plan", "run"]
