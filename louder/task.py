"""One skeleton for every kind of run: plan → context → run all items → tables → write → manifest.

A ``Task`` says what differs between the simulation, the explicit probes and the two Bai tests:
the planned items, how many model answers (progress units) each yields, how to run one item in a
``RunContext``, and how to turn the items' results into the output tables and manifest fields.
``execute`` does the rest the same way for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from louder.config import ExperimentConfig
from louder.io import write_json, write_parquet
from louder.llm.batch import Recorder
from louder.llm.client import run_all
from louder.records import RunContext

Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class Task:
    kind: str  # the manifest's louder_kind
    items: list  # what to run, in run order
    size: Callable[[Any], int]  # progress units (answers) of one item
    run_item: Callable[[RunContext, Any, Callable[[], None] | None], Any]
    # results of all items (in order) → ({file name: table}, extra manifest fields)
    tables: Callable[[RunContext, list], tuple[dict[str, pd.DataFrame], dict]]
    manifest_file: str
    planned_calls: int | None = None  # model calls of a cold run (the fail-fast window is a share of it)
    # runs every item elsewhere (executor: ray) and returns their results in order; default: threads here
    run_items: Callable[[RunContext, list, Callable[[], None] | None], list] | None = None


@dataclass(frozen=True)
class TaskResult:
    out: Path
    tables: dict[str, pd.DataFrame]
    manifest: dict


def execute(task: Task, config: ExperimentConfig, out_dir: str | Path, retry_errors: bool = False,
            on_progress: Progress | None = None, recorder: Recorder | None = None) -> TaskResult | None:
    """Run (or resume, through the cache) ``task`` and write its tables and manifest into ``out_dir``.
    ``on_progress(total, "start")`` is called once, then ``(0, "")`` after each answer.

    With a ``recorder`` (batch export) no model is called: the requests that miss the cache are
    recorded, and while any is missing nothing is written and None is returned."""
    total = sum(task.size(item) for item in task.items)
    if on_progress:
        on_progress(total, "start")
    tick = (lambda: on_progress(0, "")) if on_progress else None
    with RunContext(config, out_dir, retry_errors, planned_calls=task.planned_calls, recorder=recorder) as ctx:
        if task.run_items is not None:
            results = task.run_items(ctx, task.items, tick)
        else:
            # Items run side by side so small ones never leave call slots idle; the global in-flight
            # cap still holds, since every call passes the shared semaphore of the clients.
            results = run_all([lambda i=i: task.run_item(ctx, i, tick) for i in task.items], config.concurrency,
                              total)
    if ctx.deferred:
        return None
    tables, fields = task.tables(ctx, results)
    for name, df in tables.items():
        write_parquet(df, ctx.out / name)
    manifest = ctx.manifest(task.kind, **fields)
    write_json(manifest, ctx.out / task.manifest_file)
    return TaskResult(ctx.out, tables, manifest)
