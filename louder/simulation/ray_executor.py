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


# --- archetype runs: the agents sharded by population cell (issue 49) -----------------------------------

class _ShardActor:
    """A Ray actor holding one shard (``archetype_sim.Shard``): its agents' cells, replicates and rows of
    the network. It reports its peak memory (``peak_mb``) for the manifest."""

    def __init__(self, n, cells, reps, indptr, indices, buckets, call_buckets, nodes):
        from louder.networks.sparse import Graph
        from louder.simulation.archetype_sim import Shard

        adjacency = None if indptr is None else Graph(n, indptr, indices).adjacency()
        self.shard = Shard(n, cells, reps, adjacency, buckets, call_buckets, nodes)

    def call(self, method: str, *args):
        return getattr(self.shard, method)(*args)

    def peak_mb(self) -> float:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _RemoteShard:
    """The driver's handle on one shard actor: ``nodes`` (its agents), ``submit`` / ``collect``."""

    def __init__(self, actor, nodes, agents: int):
        self.actor, self.nodes, self.agents = actor, nodes, agents

    def submit(self, method: str, *args):
        return self.actor.call.remote(method, *args)

    @staticmethod
    def collect(refs: list) -> list:
        import ray

        return ray.get(refs)


def partition_cells(counts, shards: int) -> list:
    """Population cells split into ``shards`` sets of about equal agents (largest cell first, each to the
    least loaded shard); a cell is never split."""
    import numpy as np

    load = np.zeros(shards, dtype=np.int64)
    out: list[list[int]] = [[] for _ in range(shards)]
    for c in np.argsort(-counts, kind="stable"):
        if counts[c] == 0:
            break
        s = int(load.argmin())
        out[s].append(int(c))
        load[s] += counts[c]
    return [np.array(sorted(c), dtype=np.int64) for c in out if c]


class ArchetypeShards:
    """``executor: ray`` for archetype runs: the agents split by population cell over ``shards`` Ray actors
    (local Ray, or the cluster at ``ray_address``). Each round every actor decides its agents from the
    previous round's choices of all agents (two bytes per agent, through Ray's object store) and returns
    theirs; the driver gathers the round and writes its rows in agent order, so the files are those of a
    run in one process, byte for byte in their values."""

    def __init__(self, config, shards: int):
        self.config, self.count = config, shards
        self._shards: list[_RemoteShard] = []
        self._started = False

    def shards(self, plan) -> list:
        import numpy as np

        try:
            import ray
        except ImportError:
            from louder.errors import LouderError

            raise LouderError("executor: ray needs Ray: pip install 'louder[ray]' (or set executor: local)") from None
        if not ray.is_initialized():
            ray.init(address=self.config.ray_address, num_cpus=None if self.config.ray_address else self.count,
                     include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
            self._started = True
        actor = ray.remote(num_cpus=1)(_ShardActor)
        cells = plan.agent_cells
        graph = plan.graph
        for part in partition_cells(np.bincount(cells), self.count):
            nodes = np.flatnonzero(np.isin(cells, part))
            rows = graph.rows(nodes) if graph is not None else None
            handle = actor.remote(plan.n, cells[nodes], plan.reps[nodes], None if rows is None else rows.indptr,
                                  None if rows is None else rows.indices, plan.buckets, plan.call_buckets, nodes)
            self._shards.append(_RemoteShard(handle, nodes, int(nodes.size)))
            del rows
        return self._shards

    def report(self) -> list[dict]:
        """Per shard: its agents, population cells and the actor's peak memory (MB); then Ray stops."""
        import ray

        try:
            peaks = ray.get([s.actor.peak_mb.remote() for s in self._shards])
            return [{"agents": s.agents, "peak_mb": round(p, 1)} for s, p in zip(self._shards, peaks)]
        finally:
            self._shards.clear()
            if self._started:
                ray.shutdown()
