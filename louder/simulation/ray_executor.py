"""``executor: ray``: the cases of a simulation run as Ray tasks (``pip install louder[ray]``).

Ray distributes the agents' work, not inference: model calls still go to the model servers the
config names (or to an embedded model loaded in each worker). Resume stays exact: each task reads
the run's cache (read-only) and commits every new answer, as it arrives, to a shard of its own in
``RUN_DIR/cache-shards/``; the driver merges a shard into the run's cache when its task returns,
and merges any shard left by an interrupted run before it starts. The run folder must therefore be
on a filesystem the workers share (one machine, or the cluster's shared storage).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Callable

from louder.llm.base import Reply
from louder.llm.cache import ResponseCache


class ShardCache(ResponseCache):
    """Writes go to a shard; reads look in the shard, then in the run's cache (read-only)."""

    def __init__(self, shard: Path, main: Path):
        super().__init__(shard)
        self._main = sqlite3.connect(f"file:{main}?mode=ro", uri=True, check_same_thread=False) if main.exists() \
            else None

    def get(self, key: str, retry_errors: bool = False) -> Reply | None:
        hit = super().get(key, retry_errors)
        if hit is not None or self._main is None:
            return hit
        with self._lock:
            row = self._main.execute("SELECT reply, is_error FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None or (retry_errors and row[1]):
            return None
        return Reply.from_json(row[0])

    def close(self) -> None:
        if self._main is not None:
            self._main.close()
        super().close()


def merge_shard(cache: ResponseCache, shard: Path) -> int:
    """Copy every answer of ``shard`` into ``cache`` and delete the shard; returns how many. A worker
    asks only for what the run's cache lacks or holds as an ``error`` (``--retry-errors``), so a shard's
    answer replaces a cached error; any other cached answer is kept (the first answer wins)."""
    db = sqlite3.connect(shard)
    try:
        rows = db.execute("SELECT key, reply FROM replies").fetchall()
    finally:
        db.close()
    for key, reply in rows:
        cache.put(key, Reply.from_json(reply), replace_error=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{shard}{suffix}").unlink(missing_ok=True)
    return len(rows)


def _case_task(config_json: dict, main_cache: str, shard: str, run_id: str, case_key: tuple, retry_errors: bool,
               preflight: str):
    """One case in a Ray worker: (its CaseFrames, call counters)."""
    from louder.config import ExperimentConfig
    from louder.prompts import Prompts
    from louder.manifest import call_counts
    from louder.records import open_session
    from louder.simulation.case import simulate_case

    config = ExperimentConfig.model_validate(config_json)
    cache = ShardCache(Path(shard), Path(main_cache))
    try:
        mcfg = next(m for m in config.models if m.label == case_key[0])
        # The driver's preflight (cached in the run folder) serves every worker: no endpoint is probed twice.
        session = open_session(config, mcfg, cache, Prompts(), retry_errors, preflight_path=Path(preflight))
        frames = simulate_case(config, session, run_id, case_key)
        return frames, call_counts({mcfg.label: session})
    finally:
        cache.close()


def run_cases_on_ray(config, ctx, cases: list[tuple], retry_errors: bool,
                     tick: Callable[[], None] | None = None) -> list:
    """Every case as a Ray task; results in case order. ``tick`` runs once per agent of a finished case."""
    try:
        import ray
    except ImportError:
        from louder.errors import LouderError

        raise LouderError("executor: ray needs Ray: pip install 'louder[ray]' (or set executor: local)") from None
    from louder.llm.base import stable_hash
    from louder.scenarios import load_group
    from louder.simulation.case import arms

    shards = ctx.out / "cache-shards"
    shards.mkdir(exist_ok=True)
    for leftover in shards.glob("*.sqlite"):  # answers of tasks from an interrupted run
        merge_shard(ctx.cache, leftover)
    started = not ray.is_initialized()
    if started:
        ray.init(address=config.ray_address, num_cpus=None if config.ray_address else os.cpu_count(),
                 include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        task = ray.remote(_case_task)
        main_cache = str(ctx.cache.path.resolve())
        config_json = config.model_dump(mode="json")
        refs = {}
        for i, case in enumerate(cases):
            shard = shards / f"{stable_hash(list(case))[:16]}.sqlite"
            refs[task.remote(config_json, main_cache, str(shard), ctx.run_id, case, retry_errors,
                             str(ctx.out.resolve() / "preflight.json"))] = (i, shard)
        results: list = [None] * len(cases)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            i, shard = refs[done[0]]
            frames, counts = ray.get(done[0])
            merge_shard(ctx.cache, shard)
            ctx.add_counts(counts)
            results[i] = frames
            n = config.simulation.agents * len(load_group(cases[i][3], config.simulation.groups).attributes)
            for _ in range(n * arms(config, cases[i][2]) if tick else 0):
                tick()
        return results
    finally:
        if started:
            ray.shutdown()
