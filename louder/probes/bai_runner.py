"""The Bai et al. tests: run the LLM Word Association Test or Relative Decision Test for every
model of a config and write ``association.parquet`` / ``decision_test.parquet`` (+ a manifest)
into the run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from louder import estimate
from louder.config import ExperimentConfig, part
from louder.probes.association import association_rows
from louder.probes.decision_test import decision_rows
from louder.probes.stimuli import get_stereotype, stereotypes
from louder.status import status_by, status_counts
from louder.task import Task, execute
from louder.types import FILES


def selected(config: ExperimentConfig):
    return [get_stereotype(n) for n in (config.stereotypes or list(stereotypes()))]


def count_test_calls(config: ExperimentConfig, test: str) -> int:
    return estimate.count_calls(config, test)


def test_task(config: ExperimentConfig, test: str, generated: dict[str, list[dict]] | None = None) -> Task:
    """A Bai test (``association`` or ``decision``) as a ``Task``: one item per model × stereotype
    (× variation for the association test; × generated scenario for the decision test).
    ``generated`` (stereotype → generated scenarios) adds their trials beside the seed's."""
    own = part(config, "association" if test == "association" else "decision_test")
    if test == "association":
        plan = [(m.label, st, v) for m in own.models for st in selected(config) for v in own.variations]
        size = lambda p: own.trials  # noqa: E731
        run = lambda ctx, p, tick: association_rows(ctx.sessions[p[0]], p[1], p[2], own.trials, tick)  # noqa: E731
    else:
        plan = [(m.label, st, g) for m in own.models for st in selected(config)
                for g in [None, *(generated or {}).get(st.name, [])]]
        size = lambda p: own.trials  # noqa: E731
        run = lambda ctx, p, tick: decision_rows(ctx.sessions[p[0]], p[1], own.trials, tick, p[2])  # noqa: E731

    def tables(ctx, results):
        df = pd.DataFrame([dict(r, model=p[0]) for p, rows in zip(plan, results) for r in rows])
        df.insert(0, "run_id", ctx.run_id)
        df["egalitarian"] = config.egalitarian
        keys = ["model", "stereotype"] + (["variation"] if test == "association" else ["variant"])
        return {FILES[test]: df}, dict(rows=len(df), status_counts=status_counts(df), status_by_case=status_by(df, keys),
                                       source="Bai, Wang, Sucholutsky & Griffiths, arXiv 2402.04105; stimuli MIT "
                                              "(louder/data/bai/LICENSE)")

    return Task(f"{test}_test", plan, size, run, tables, f"{test}_manifest.json",
                planned_calls=count_test_calls(config, test))


def run_test(config: ExperimentConfig, test: str, out_dir: str | Path, retry_errors: bool = False,
             on_progress: Callable[[int, str], None] | None = None, generated: dict[str, list[dict]] | None = None,
             recorder=None) -> tuple[pd.DataFrame, dict] | None:
    r = execute(test_task(config, test, generated), config, out_dir, retry_errors, on_progress, recorder)
    return None if r is None else (r.tables[FILES[test]], r.manifest)
