"""What an archetype run will need before it starts (issue 49): rows, Parquet on disk and peak memory,
from bytes per agent measured on this code (benchmarks/run.py P13, docs/benchmarks.md), and a refusal in
one line when the peak cannot fit the machine.

The peak of ``louder run`` is a fixed part (the imports, the calls' table, the client) plus a part per
agent: its cell and replicate, the network's CSR row (4 bytes per neighbour, 12 while the graph is
built), one round's vectors and the row groups being written. It does not grow with the rounds: a round
is written as it is made. With ``executor: ray`` the agents are split over the shards by population cell;
each worker holds its agents' rows of the network and their round, the driver every agent's cell and
round vectors and the row group it writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from louder.errors import LouderError

MB = 1 << 20
# Fitted to the peaks measured with benchmarks/city_scale.py (P13: 10^6 agents in one process, run 787 MB and
# analyze 2,380 MB; P14: 10^6 and 10^7 agents on 2 Ray workers, driver 905 / 2,608 MB, workers 334 / 1,491 MB;
# Watts–Strogatz k = 8, 2026-11-28; docs/benchmarks.md):
RUN_FIXED_MB = 420  # `louder run`: imports, the calls' table and client, the writer
RUN_AGENT_B = 290  # per agent beside the network
NEIGHBOUR_B = 12  # per neighbour of an agent while the graph is drawn (8: its key, 4: its CSR entry)
NX_EDGE_B = 700  # per edge of a graph networkx draws (every generator but Watts–Strogatz), at its peak
ANALYZE_FIXED_MB = 300  # `louder analyze`: imports
ANALYZE_AGENT_B = 2200  # per agent: round 0's rows as pandas (every column), the measures' copies, the regression
WORKER_FIXED_MB = 205  # a Ray worker: its imports
WORKER_AGENT_B = 80  # per agent of its shard beside its network rows: cells, replicates, its round
WORKER_ALL_B = 79  # per agent of the whole run: the previous round of every agent it reads (as numbers)
DRIVER_FIXED_MB = 715  # the Ray driver: `louder run`'s and Ray's client
DRIVER_AGENT_B = 102  # per agent on the Ray driver (cells, replicates, every agent's round, the shards' rows)
ROW_DISK_B = 18  # decisions.parquet on disk per row (dictionary-encoded, snappy)
CONTROL_DISK_B = 6
EDGE_DISK_B = 6


@dataclass(frozen=True)
class Size:
    agents: int
    rounds: int
    cases: int
    groups: int
    degree: float
    rows: int
    control_rows: int
    edge_rows: int
    disk_mb: float
    run_mb: float  # peak of `louder run` (the driver's, on Ray)
    analyze_mb: float
    shards: int = 0  # Ray workers (0: local)
    worker_mb: float = 0.0

    def lines(self) -> list[str]:
        out = [f"archetype run: {self.agents:,} agents × {self.rounds + 1} rounds × {self.cases} case(s) × "
               f"{self.groups} analysed group(s) = {self.rows:,} decision rows"
               + (f", {self.control_rows:,} control rows" if self.control_rows else "")
               + (f", {self.edge_rows:,} edge rows (mean degree {self.degree:g})" if self.edge_rows else "")
               + f"; about {_size(self.disk_mb)} of Parquet"]
        if self.shards:
            out.append(f"peak memory (measured bytes per agent): {_size(self.worker_mb)} per Ray worker × "
                       f"{self.shards} workers and {_size(self.run_mb)} on the driver for `louder run`; "
                       f"{_size(self.analyze_mb)} for `louder analyze`")
        else:
            out.append(f"peak memory (measured bytes per agent): {_size(self.run_mb)} for `louder run`, "
                       f"{_size(self.analyze_mb)} for `louder analyze`; it does not grow with the rounds")
        return out


def _size(mb: float) -> str:
    return f"{mb / 1024:.1f} GB" if mb >= 1024 else f"{mb:.0f} MB"


def mean_degree(config, n: int) -> float:
    """The network's mean degree from its parameters (0 without a network)."""
    net = config.network
    if net is None:
        return 0.0
    p = net.params
    if net.generator == "watts_strogatz":
        return float(2 * (int(p.get("k", 0)) // 2))
    if net.generator == "barabasi_albert":
        return float(2 * p.get("m", 0))
    if net.generator == "erdos_renyi":
        return float(p.get("p", 0)) * max(n - 1, 0)
    if net.generator == "homophily_sbm":
        return float(p.get("mean_degree", 0))
    try:  # an edge list: its lines
        with open(p.get("path", ""), "rb") as f:
            return 2 * sum(1 for line in f if line.strip() and not line.lstrip().startswith(b"#")) / max(n, 1)
    except OSError:
        return 0.0


def size(config, shards: int = 0) -> Size:
    """The rows, disk and peak memory of ``config``'s archetype run (``shards``: Ray workers, 0 = local)."""
    from louder.scenarios import group_ids, scenario_ids

    n = config.simulation.agents
    networked = config.network is not None
    rounds = config.influence.rounds if networked else 0
    cases = len(config.models) * len(scenario_ids(config.simulation.scenarios))
    groups = len(group_ids(config.simulation.groups))
    k = mean_degree(config, n)
    rows = n * (rounds + 1) * cases * groups
    control = rows if networked and rounds else 0
    edges = int(n * k / 2) * cases * groups if networked else 0
    graph_b = k * NEIGHBOUR_B + (k / 2 * NX_EDGE_B if networked and config.network.generator != "watts_strogatz" else 0)
    disk = (rows * ROW_DISK_B + control * CONTROL_DISK_B + edges * EDGE_DISK_B) / MB
    analyze = ANALYZE_FIXED_MB + n * ANALYZE_AGENT_B / MB
    if shards:
        worker = WORKER_FIXED_MB + ((n / shards) * (WORKER_AGENT_B + k * 4) + n * WORKER_ALL_B) / MB
        driver = DRIVER_FIXED_MB + n * (DRIVER_AGENT_B + graph_b) / MB
        return Size(n, rounds, cases, groups, k, rows, control, edges, disk, driver, analyze, shards, worker)
    run = RUN_FIXED_MB + n * (RUN_AGENT_B + graph_b) / MB
    return Size(n, rounds, cases, groups, k, rows, control, edges, disk, run, analyze)


def available_mb() -> float:
    """Memory this machine can give a run now: MemAvailable (Linux), else the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / MB
    except (ValueError, OSError, AttributeError):
        return float("inf")


def check(s: Size, config) -> None:
    """A run whose peak cannot fit the memory available here is refused, in one line with the fix."""
    have = available_mb()
    need = s.run_mb + (s.worker_mb * s.shards if s.shards and not config.ray_address else 0)
    if need <= have:
        return
    per_agent = (need - RUN_FIXED_MB) / max(s.agents, 1) * MB
    fits = max(0, int((have - RUN_FIXED_MB) * MB / per_agent)) if per_agent > 0 else 0
    how = ("add workers to the Ray cluster (ray_address) or raise population.shards" if s.shards else
           "shard it on Ray (executor: ray, docs/scale-out.md)")
    raise LouderError(f"simulation.agents: {s.agents:,} agents need about {_size(need)} at the peak "
                      f"({per_agent:.0f} bytes per agent) but this machine has {_size(have)} available; {how}, or "
                      f"draw at most {fits:,} agents (fewer rounds would not help: the peak does not grow with them)")
