"""One skeleton for every kind of run: plan → context → run all items → tables → write → manifest.

A ``Task`` says what differs between the kinds of run (``louder.kinds``): the planned items — each
with its progress units and the model calls a cold run makes for it (``Calls``: what
``--dry-run`` counts and prices, and what the manifest records as ``planned_calls``) — how to run
one item in a ``RunContext``, and how to turn the items' results into the output tables and
manifest fields. ``execute`` does the rest the same way for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from louder import runfolder
from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.io import write_csv, write_json, write_parquet
from louder.llm.batch import Recorder
from louder.llm.cache import CacheDamaged
from louder.llm.client import Stopped, run_all
from louder.records import RunContext

Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class Calls:
    """``n`` model calls of one shape in a plan: ``model``'s calls that send about ``prompt`` and
    answer up to ``max_tokens`` tokens (typically the ``output`` entry of louder/data/estimates.yaml).
    The prompt stands for the shape (a stand-in persona where a written one will go); the estimate
    counts its tokens, the run counts ``n``."""

    model: str
    n: int
    prompt: str
    output: str
    max_tokens: int
    reasoning: str = "default"  # the reasoning level they are asked at (simulation.reasoning)


@dataclass(frozen=True)
class Item:
    """One unit of work of a task: its ``key`` (what ``run_item`` gets), its progress units (answers)
    and the model calls a cold run makes for it."""

    key: Any
    size: int
    calls: tuple[Calls, ...] = ()


@dataclass(frozen=True)
class Task:
    kind: str  # the manifest's louder_kind
    items: list[Item]  # what to run, in run order: the plan
    run_item: Callable[[RunContext, Any, Callable[[], None] | None], Any]  # (context, item key, tick)
    # results of all items (in order) → ({file name: table}, extra manifest fields)
    tables: Callable[[RunContext, list], tuple[dict[str, pd.DataFrame], dict]]
    manifest_file: str
    # runs every item elsewhere (executor: ray) and returns their results in order; default: threads here
    run_items: Callable[[RunContext, list, Callable[[], None] | None], list] | None = None
    notes: tuple[str, ...] = ()  # what building the plan found, for ``--dry-run`` to print (a population's fit)

    @property
    def calls(self) -> list[Calls]:
        return [c for item in self.items for c in item.calls]

    @property
    def planned_calls(self) -> int:
        """Model calls of a cold run (no answer cached yet, every persona valid, nothing re-asked)."""
        return sum(c.n for c in self.calls)


@dataclass(frozen=True)
class Streamed:
    """A table a task wrote itself while it ran, row group by row group (``louder.io.ParquetStream``,
    stamped with ``RunContext.generation``), instead of returning it whole: ``execute`` commits it with
    the other files. An archetype run of millions of agents never holds its decisions at once."""

    stream: Any  # louder.io.ParquetStream, not yet committed

    @property
    def rows(self) -> int:
        return self.stream.rows

    def __len__(self) -> int:
        return self.rows


class Tables(dict):
    """A run's tables by file name; a streamed one is read from its file when it is first asked for."""

    def __init__(self, out: Path, tables: dict):
        super().__init__(tables)
        self._out = out

    def __getitem__(self, name: str) -> pd.DataFrame:
        value = super().__getitem__(name)
        if isinstance(value, Streamed):
            value = pd.read_parquet(self._out / name)
            self[name] = value
        return value

    def get(self, name, default=None):
        return self[name] if name in self else default


@dataclass(frozen=True)
class TaskResult:
    out: Path
    tables: dict[str, pd.DataFrame]
    manifest: dict
    manifest_file: str = "manifest.json"


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: how many answers its cache keeps. Still a ``KeyboardInterrupt``."""

    def __init__(self, kept: int | None, out: Path):
        self.kept, self.out = kept, out
        held = f"{kept} answers are kept in the cache" if kept is not None else "every finished answer is cached"
        super().__init__(f"interrupted: {held} of {out}; run the same command again to resume")


def execute(task: Task, config: ExperimentConfig, out_dir: str | Path, retry_errors: bool = False,
            on_progress: Progress | None = None, recorder: Recorder | None = None) -> TaskResult | None:
    """Run (or resume, through the cache) ``task`` and write its tables and manifest into ``out_dir``.
    ``on_progress(total, "start")`` is called once, then ``(0, "")`` after each answer; a task that
    runs its items itself may also call ``(new total, "total")`` and ``(0, status line)``.

    The run holds the folder's lock throughout (``louder.runfolder``): a second writer fails at once.
    Every file it writes carries one generation id, which the manifest (written last) records.

    With a ``recorder`` (batch export) no model is called: the requests that miss the cache are
    recorded, and while any is missing nothing is written and None is returned."""
    with runfolder.hold(out_dir) as out:
        runfolder.clean_temp_files(out)
        planned = task.planned_calls
        if recorder is None:
            runfolder.check_cache(out, runfolder.cache_path(out, config.cache), task.manifest_file, planned)
        total = sum(item.size for item in task.items)
        if on_progress:
            on_progress(total, "start")
        tick = (lambda: on_progress(0, "")) if on_progress else None
        keys = [item.key for item in task.items]
        try:
            with RunContext(config, out, retry_errors, planned_calls=planned, recorder=recorder) as ctx:
                ctx.progress = on_progress  # run_items may report more than ticks: a new total, a status line
                try:
                    if task.run_items is not None:
                        results = task.run_items(ctx, keys, tick)
                    else:
                        # Items run side by side so small ones never leave call slots idle; the global
                        # in-flight cap still holds, since every call passes the clients' shared semaphore.
                        results = run_all([lambda k=k: task.run_item(ctx, k, tick) for k in keys], ctx.concurrency,
                                          total, ctx.stop)
                except (KeyboardInterrupt, Stopped):
                    ctx.stop.set()
                    raise Interrupted(ctx.kept(), out) from None
        except CacheDamaged as e:
            raise LouderError(_damage_line(e, out)) from None
        if ctx.deferred:
            return None
        generation = ctx.generation = runfolder.new_generation()  # a table streamed while it is made carries it
        try:
            tables, fields = task.tables(ctx, results)
        except BaseException:
            for stream in ctx.streams:
                stream.abort()
            raise
        for name, df in tables.items():
            if isinstance(df, Streamed):
                df.stream.commit()
            elif name.endswith(".csv"):
                write_csv(df, ctx.out / name)
            else:
                write_parquet(df, ctx.out / name, {runfolder.GENERATION_KEY: generation.encode()})
        manifest = ctx.manifest(task.kind, **fields, generation=generation, command=runfolder.command_line(),
                                files=runfolder.file_fingerprints(ctx.out, tables))
        write_json(manifest, ctx.out / task.manifest_file)
    return TaskResult(ctx.out, Tables(ctx.out, tables), manifest, task.manifest_file)


def _damage_line(e, out: Path) -> str:
    """A damaged cache in one line, with the way out."""
    return (f"{e}. Run `louder repair {out}`: it keeps every readable answer in a new cache, moves the damaged "
            "file aside and says how many calls remain; then run this command again")
