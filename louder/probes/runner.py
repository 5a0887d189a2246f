"""Run the LLM Word Association Test or Relative Decision Test for every model of a config and
write ``association.parquet`` / ``decision_test.parquet`` (+ a manifest) into the run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from louder.config import ExperimentConfig
from louder.io import write_json, write_parquet
from louder.llm.client import run_all
from louder.probes.association import association_rows
from louder.probes.decision import decision_rows
from louder.probes.stimuli import get_stereotype, stereotypes
from louder.records import RunContext
from louder.status import status_by, status_counts
from louder.types import FILES




def selected(config: ExperimentConfig):
    return [get_stereotype(n) for n in (config.stereotypes or list(stereotypes()))]


def count_test_calls(config: ExperimentConfig, test: str) -> int:
    n = len(config.models) * len(selected(config))
    if test == "association":
        return n * len(config.association_variations) * config.association_trials
    return n * config.decision_trials * 2


def run_test(config: ExperimentConfig, test: str, out_dir: str | Path, retry_errors: bool = False,
             on_progress: Callable[[int, str], None] | None = None) -> tuple[pd.DataFrame, dict]:
    ctx = RunContext(config, out_dir, retry_errors)
    sessions = ctx.sessions
    tick = (lambda: on_progress(0, "")) if on_progress else None
    if test == "association":
        plan = [(m.label, st, v) for m in config.models for st in selected(config) for v in config.association_variations]
        total = len(plan) * config.association_trials
        tasks = [lambda p=p: [dict(r, model=p[0]) for r in association_rows(sessions[p[0]], p[1], p[2],
                                                                              config.association_trials, tick)]
                 for p in plan]
    else:
        plan = [(m.label, st) for m in config.models for st in selected(config)]
        total = len(plan) * config.decision_trials
        tasks = [lambda p=p: [dict(r, model=p[0]) for r in decision_rows(sessions[p[0]], p[1], config.decision_trials,
                                                                           tick)] for p in plan]
    if on_progress:
        on_progress(total, "start")
    with ctx:
        results = run_all(tasks, config.concurrency, total)
    df = pd.DataFrame([r for rows in results for r in rows])
    df.insert(0, "run_id", ctx.run_id)
    df["egalitarian"] = config.egalitarian
    write_parquet(df, ctx.out / FILES[test])
    keys = ["model", "stereotype"] + (["variation"] if test == "association" else ["variant"])
    manifest = ctx.manifest(f"{test}_test", rows=len(df), status_counts=status_counts(df),
                            status_by_case=status_by(df, keys),
                            source="Bai, Wang, Sucholutsky & Griffiths, arXiv 2402.04105; stimuli MIT "
                                   "(louder/data/bai/LICENSE)")
    write_json(manifest, ctx.out / f"{test}_manifest.json")
    return df, manifest
