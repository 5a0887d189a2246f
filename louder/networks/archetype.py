"""Archetype mode: one model call per archetype (population cell) × share bucket × replicate,
and a seeded draw per agent from its archetype's probability.

Agents of one cell share an archetype. Agent i of cell c is assigned replicate k (round-robin over
the cell's agents in agent_id order) and in round r draws target ⇔ u_{i,r} < p[c, k, b], where b is
the bucket of its neighbour share (round 0: no neighbour message) and u_{i,r} is element i of the
round's uniform stream seeded by (seed, r) — its own draw, whatever the order agents are made in.
A call that failed or could not be scored gives its agents that call's status (invalid / refused /
error) and no decision; it is never read as p = 0.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
import pandas as pd

from louder.networks.rounds import Decide, NeighbourCounts, Outcome

ROUND0 = -1  # bucket index of the round-0 call (no neighbour message)


def share_buckets(spec: int | Sequence[float]) -> np.ndarray:
    """Bucket values: an int m gives 0, 1/m, …, 1; a list is taken as given (sorted, each in [0, 1])."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec < 1:
            raise ValueError(f"buckets must be ≥ 1, got {spec}")
        return np.arange(spec + 1) / spec
    b = np.sort(np.asarray(spec, dtype=float))
    if b.size == 0 or b.min() < 0 or b.max() > 1 or np.unique(b).size != b.size:
        raise ValueError(f"buckets must be distinct values in [0, 1], got {list(spec)}")
    return b


def bucket_of(share, buckets: np.ndarray) -> np.ndarray:
    """Index of the nearest bucket (ties go to the lower one); NaN share (no valid neighbour) → ROUND0,
    i.e. the agent is asked without a neighbour message, as in round 0."""
    s = np.atleast_1d(np.asarray(share, dtype=float))
    idx = np.empty(s.size, dtype=np.int8 if buckets.size < 128 else np.int64)
    step = 1 << 16  # agents at a time: the distances are agents × buckets
    for i in range(0, s.size, step):
        idx[i:i + step] = np.abs(s[i:i + step, None] - buckets[None, :]).argmin(axis=1)
    return np.where(np.isnan(s), ROUND0, idx).astype(idx.dtype)


def assign_replicates(agents: pd.DataFrame, replicates: int, cell_col: str = "cell_id") -> np.ndarray:
    """Replicate of each agent (in the table's row order): round-robin within its cell over agent_id."""
    order = agents.sort_values([cell_col, "agent_id"])
    k = order.groupby(cell_col).cumcount().to_numpy() % replicates
    return pd.Series(k, index=order.index).reindex(agents.index).to_numpy()


def call_plan(cells: Sequence, buckets: np.ndarray, replicates: int, round0: bool = False) -> pd.DataFrame:
    """Every call of the influence rounds: cells × buckets × replicates rows (cell_id, bucket,
    share, replicate). The prompt of a (cell, bucket, replicate) call is the same in every round,
    so each is made once and cached. ``round0=True`` gives the cells × replicates round-0 plan."""
    bs = [ROUND0] if round0 else range(len(buckets))
    return pd.DataFrame([{"cell_id": c, "bucket": b, "share": np.nan if b == ROUND0 else float(buckets[b]),
                          "replicate": k} for c in cells for b in bs for k in range(replicates)])


def uniform_draws(seed: int, round_: int, n: int) -> np.ndarray:
    """u_{i,r} for agents i = 0..n−1 in round r."""
    return np.random.default_rng([seed, round_]).random(n)


class ArchetypeTable:
    """Results of the calls: p_target and status per (cell, bucket, replicate)."""

    def __init__(self, results: pd.DataFrame):
        # results: cell_id, bucket, replicate, p_target, status
        self.table = {(r.cell_id, int(r.bucket), int(r.replicate)): (r.p_target, r.status)
                      for r in results.itertuples()}

    def outcome(self, cell, bucket: int, replicate: int, u: float, choices: Sequence[str], target: str) -> Outcome:
        """The agent's decision from its archetype's call; an unscored or failed call keeps its status."""
        p, status = self.table.get((cell, bucket, replicate), (np.nan, "error"))
        if status != "valid" or p is None or np.isnan(p):
            return Outcome(None, status if status != "valid" else "invalid")
        other = next(c for c in choices if c != target)
        return Outcome(target if u < p else other, p_target=float(p))


def initial_outcomes(model, table: ArchetypeTable, choices: Sequence[str], target: str, seed: int,
                     cell_col: str = "cell_id") -> list[Outcome]:
    """Round 0: every agent draws from its archetype's round-0 call."""
    u = uniform_draws(seed, 0, len(model.by_node))
    return [table.outcome(a.attributes[cell_col], ROUND0, int(a.attributes["replicate"]), u[a.node], choices, target)
            for a in model.by_node]


def archetype_decide(table: ArchetypeTable, buckets: np.ndarray, choices: Sequence[str], target: str, seed: int,
                     n: int, cell_col: str = "cell_id") -> Decide:
    """The ``decide`` callback of archetype mode: bucket the share, look up the call, draw."""
    draws: dict[int, np.ndarray] = {}
    values = buckets.tolist()

    def nearest(share: float) -> int:
        # scalar form of bucket_of (this runs once per agent per round)
        if share != share:  # NaN: no valid neighbour
            return ROUND0
        i = bisect.bisect_left(values, share)
        if i == len(values) or (i > 0 and share - values[i - 1] <= values[i] - share):
            return i - 1
        return i

    def decide(agent, nb: NeighbourCounts, share: float) -> Outcome:
        r = agent.model.round
        if r not in draws:
            draws[r] = uniform_draws(seed, r, n)
        b = nearest(share)
        return table.outcome(agent.attributes[cell_col], b, int(agent.attributes["replicate"]), draws[r][agent.node],
                             choices, target)

    return decide
