"""The agents of an archetype run, round by round, in bounded memory (issue 49).

Every agent is a few numbers — its population cell (int32) and replicate (int16); its attributes,
weight and description follow from the cell — and the network a CSR pattern (``louder.networks.sparse``).
A round is a handful of vectors over the agents: the bucket each agent's neighbour share falls in,
the share, the status of its archetype's call and its choice. ``Shard.step`` computes them for a set of
agents (all of them, or one Ray worker's population cells: ``louder.simulation.ray_executor``), given
the previous round's choices of every agent; ``Simulation`` runs the rounds over its shards and
``DecisionRows`` / ``ControlRows`` turn each round into Parquet row groups as it is made
(``louder.io.ParquetStream``). Nothing holds a row per agent per round, so the peak does not grow with
the rounds, and the rows are those the earlier whole-table code wrote, value for value and in the same
order (tests/test_archetype_run.py, tests/golden.py).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from louder.networks.archetype import ROUND0, bucket_of, uniform_draws
from louder.networks.sparse import ControlState, control_step
from louder.types import DECISION_COLUMNS, STATUSES

CHUNK = 1 << 18  # agents per row group (and per step of the vectorised draws)
VALID = STATUSES.index("valid")


@dataclass
class Lookup:
    """One model × scenario's calls as dense tables over (population cell, bucket axis, replicate):
    ``cum`` the cumulative probabilities of the choices in ``order`` (target first), ``status`` (index
    into STATUSES; a call with no row counts as error), ``raw`` (index into ``texts``) and ``mass``."""

    order: list[str]
    cum: np.ndarray
    status: np.ndarray
    raw: np.ndarray
    texts: list[str]
    mass: np.ndarray

    @classmethod
    def of(cls, calls: pd.DataFrame, scenario, cells: int, call_buckets: list[int], replicates: int) -> Lookup:
        order = [scenario.target] + [c for c in scenario.labels if c != scenario.target]
        bpos = {b: i for i, b in enumerate(call_buckets)}
        shape = (cells, len(bpos), replicates)
        cum = np.full(shape + (len(order),), np.nan)
        status = np.full(shape, STATUSES.index("error"), dtype=np.int8)
        raw = np.zeros(shape, dtype=np.int32)
        mass = np.full(shape, np.nan)
        if len(calls):
            ci, bi = calls["cell_id"].to_numpy(), calls["bucket"].map(bpos).to_numpy()
            ki = calls["replicate"].to_numpy()
            cum[ci, bi, ki] = np.cumsum(calls[[f"p_{c}" for c in order]].to_numpy(dtype=float), axis=1)
            status[ci, bi, ki] = calls["status"].map(STATUSES.index).to_numpy()
            texts, codes = ["[no answer]"], {}
            idx = []
            for t in calls["raw_response"].to_numpy(dtype=object):
                if t not in codes:
                    codes[t] = len(texts)
                    texts.append(t)
                idx.append(codes[t])
            raw[ci, bi, ki] = idx
            mass[ci, bi, ki] = calls["choice_mass"].to_numpy(dtype=float)
        else:
            texts = ["[no answer]"]
        return cls(order, cum, status, raw, texts, mass)


@dataclass
class RoundState:
    """One round of some agents: bucket index (ROUND0: asked without a message), neighbour share (None
    in round 0; NaN: no valid neighbour), the status of the call they drew from and their choice (index
    into ``Lookup.order``; len(order) for no decision)."""

    bucket: np.ndarray  # int8
    share: np.ndarray | None
    status: np.ndarray  # int8
    choice: np.ndarray  # int8

    @property
    def valid(self) -> np.ndarray:
        return self.status == VALID

    @classmethod
    def empty(cls, n: int, round0: bool) -> RoundState:
        return cls(np.empty(n, np.int8), None if round0 else np.empty(n), np.empty(n, np.int8), np.empty(n, np.int8))

    def put(self, nodes: np.ndarray, part: RoundState) -> None:
        for f in ("bucket", "share", "status", "choice"):
            if getattr(self, f) is not None:
                getattr(self, f)[nodes] = getattr(part, f)


class Shard:
    """A set of agents (``nodes``: all of them when None) with their cells, replicates and adjacency
    rows, deciding each round from the previous round's choices of every agent."""

    def __init__(self, n: int, cells: np.ndarray, reps: np.ndarray, adjacency, buckets: np.ndarray,
                 call_buckets: list[int], nodes: np.ndarray | None = None):
        self.n, self.cells, self.reps, self.adjacency, self.nodes = n, cells, reps, adjacency, nodes
        self.buckets = buckets
        bpos = {b: i for i, b in enumerate(call_buckets)}
        self.lut = np.array([bpos.get(x, -1) for x in range(ROUND0, len(buckets))], dtype=np.int8)  # bucket + 1
        self.lookup: Lookup | None = None

    def set_case(self, lookup: Lookup) -> None:
        self.lookup = lookup

    def step(self, r: int, seed: int, prev_valid: np.ndarray | None, prev_target: np.ndarray | None) -> RoundState:
        """Round r of these agents: u_{i,r} < cumulative p of their call (module docstring of
        ``archetype_run``); ``prev_*``: every agent's round r − 1 (valid; valid and chose the target)."""
        m = self.cells.size
        if r == 0 or self.adjacency is None:
            share, b = None, np.full(m, ROUND0, dtype=np.int8)
        else:
            valid_n = self.adjacency @ prev_valid.astype(float)  # sums of ones: exact
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(valid_n > 0, (self.adjacency @ prev_target.astype(float)) / valid_n, np.nan)
            del valid_n
            b = bucket_of(share, self.buckets)
        u = uniform_draws(seed, r, self.n)
        if self.nodes is not None:
            u = u[self.nodes]
        lk = self.lookup
        L = len(lk.order)
        status = np.empty(m, dtype=np.int8)
        choice = np.empty(m, dtype=np.int8)
        for i in range(0, m, CHUNK):
            s = slice(i, i + CHUNK)
            cell, rep, pos = self.cells[s], self.reps[s], self.lut[b[s] + 1]
            st = lk.status[cell, pos, rep]
            c = lk.cum[cell, pos, rep]
            status[s] = st
            choice[s] = np.where(st == VALID, np.minimum((u[s, None] >= c).sum(axis=1), L - 1), L)
        return RoundState(b, share, status, choice)

    def control(self, state: ControlState, rule: str, choices, target: str, threshold: float,
                self_weight: float) -> ControlState:
        return control_step(self.adjacency, state, rule, choices, target, threshold, self_weight, self.nodes)


class Simulation:
    """The rounds of every agent over ``shards`` (local: one ``Shard``; Ray: one actor per shard, each a
    set of population cells): each round every shard decides its agents from the previous round's
    vectors of all agents, and the round is gathered here — 12 bytes per agent."""

    def __init__(self, n: int, shards: list, rounds: int):
        self.n, self.shards, self.rounds = n, shards, rounds

    def _gather(self, parts: list[tuple[np.ndarray | None, RoundState]], round0: bool) -> RoundState:
        if len(parts) == 1 and parts[0][0] is None:
            return parts[0][1]
        out = RoundState.empty(self.n, round0)
        for nodes, part in parts:
            out.put(nodes, part)
        return out

    def _each(self, method: str, *args) -> list:
        """``method`` of every shard with ``args``: side by side where shards run elsewhere (``submit``)."""
        if hasattr(self.shards[0], "submit"):
            return self.shards[0].collect([s.submit(method, *args) for s in self.shards])
        return [getattr(s, method)(*args) for s in self.shards]

    def set_case(self, lookup: Lookup) -> None:
        self._each("set_case", lookup)

    def run(self, seed: int):
        """Yields the RoundState of every agent for rounds 0..R."""
        prev = None
        for r in range(self.rounds + 1):
            pv = pt = None
            if prev is not None:
                pv = prev.valid
                pt = pv & (prev.choice == 0)
            parts = self._each("step", r, seed, pv, pt)
            state = self._gather([(s.nodes, p) for s, p in zip(self.shards, parts)], r == 0)
            yield state
            prev = state

    def control(self, initial: ControlState, rule: str, choices, target: str, threshold: float,
                self_weight: float):
        """Yields the control rule's ControlState of every agent for rounds 0..R (round 0: ``initial``)."""
        state = initial
        yield state
        for _ in range(self.rounds):
            parts = list(zip([s.nodes for s in self.shards],
                             self._each("control", state, rule, choices, target, threshold, self_weight)))
            if len(parts) == 1 and parts[0][0] is None:
                state = parts[0][1]
            else:
                new = ControlState(np.empty(self.n, np.int8), np.empty(self.n, np.int8), np.empty(self.n))
                for nodes, part in parts:
                    new.choice[nodes], new.status[nodes], new.p[nodes] = part.choice, part.status, part.p
                state = new
            yield state


# --- the rows -------------------------------------------------------------------------------------

def _strings(values) -> pa.Array:
    return pa.array(list(values), type=pa.large_string())


@functools.lru_cache(maxsize=64)
def _const(value, n: int, type_=pa.large_string()) -> pa.Array:
    """n copies of ``value`` (None: nulls), made once per value and chunk length (arrow arrays are immutable)."""
    return pa.nulls(n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)


def _masked(values: np.ndarray, mask: np.ndarray) -> pa.Array:
    return pa.array(values, mask=mask)


def schema_of(sample: pd.DataFrame, metadata: dict[bytes, bytes]) -> pa.Schema:
    """The arrow schema pandas gives ``sample`` (its dtypes in the pandas metadata, so the file reads back
    with the dtypes the whole-table code wrote), with ``metadata`` added."""
    schema = pa.Schema.from_pandas(sample, preserve_index=False)
    return schema.with_metadata({**(schema.metadata or {}), **metadata})


class DecisionRows:
    """decisions.parquet's row groups for one case × analysed group, round by round."""

    EXTRA = ("variant", "cell_id", "weight")
    SIM = ("round", "node", "neighbours", "neighbour_share", "changed", "bucket")

    def __init__(self, plan, lookup: Lookup, run_id: str, model: str, scenario, group: str, condition: str,
                 schema: pa.Schema, degree: np.ndarray | None):
        """``degree``: the graph's CSR offsets (None without a graph)."""
        self.plan, self.lk, self.schema = plan, lookup, schema
        self.consts = dict(run_id=run_id, model=model, condition=condition, scenario=scenario.id, group=group,
                           reasoning="default", intervention="none", choice_order="|".join(scenario.labels),
                           wording="as_written", signal="stated", variant="base")
        self.group = group
        self.indptr = degree  # the graph's offsets: a chunk's degrees are their differences
        self.decision = _strings(lookup.order + [None])
        self.status = _strings(STATUSES)
        self.raw = _strings(lookup.texts)

    def batches(self, r: int, state: RoundState, prev: RoundState | None):
        plan, lk = self.plan, self.lk
        n = plan.n
        for a in range(0, n, CHUNK):
            b = min(n, a + CHUNK)
            m = b - a
            cell, rep = plan.agent_cells[a:b], plan.reps[a:b]
            bk = state.bucket[a:b]
            pos = plan.lut[bk + 1]
            st, ch = state.status[a:b], state.choice[a:b]
            valid = st == VALID
            p = lk.cum[cell, pos, rep, 0]
            mass = lk.mass[cell, pos, rep]
            cols = {k: _const(v, m) for k, v in self.consts.items()}
            attrs = {g: plan.attribute(g, cell) for g in plan.group_ids}
            ids = np.arange(a, b, dtype=np.int64)
            cols.update(
                attribute=attrs[self.group], agent_id=pa.array(ids), replicate=pa.array(rep.astype(np.int64)),
                name=_const(None, m), persona=plan.persona(cell, rep),
                decision=pc.take(self.decision, ch), target=_masked(ch == 0, ~valid),
                p_target=_masked(p, ~valid | np.isnan(p)), rationale=_const(None, m), status=pc.take(self.status, st),
                raw_response=pc.take(self.raw, lk.raw[cell, pos, rep]),
                attempts=pa.array(np.zeros(m, dtype=np.int64)), latency_s=pa.array(np.zeros(m)),
                input_tokens=_const(None, m, pa.int64()), output_tokens=_const(None, m, pa.int64()),
                choice_mass=_masked(mass, ~valid | np.isnan(mass)), thinking=_const(None, m),
                reasoning_tokens=_const(None, m, pa.int64()),
                cell_id=pa.array(cell.astype(np.int64)), weight=pa.array(plan.weights[cell]),
                round=pa.array(np.full(m, r, dtype=np.int64)), node=pa.array(ids),
                neighbours=pa.array(np.zeros(m, np.int64) if self.indptr is None else
                                    np.diff(self.indptr[a:b + 1]).astype(np.int64)))
            cols.update({f"attr_{g}": v for g, v in attrs.items()})
            if state.share is None:
                cols["neighbour_share"] = _const(None, m, pa.float64())
            else:
                share = state.share[a:b]
                cols["neighbour_share"] = _masked(share, np.isnan(share))
            if prev is None:
                cols["changed"] = _const(None, m, pa.bool_())
            else:
                pch = prev.choice[a:b]
                cols["changed"] = _masked(ch != pch, ~(valid & (prev.status[a:b] == VALID)))
            cols["bucket"] = _masked(np.where(bk == ROUND0, np.nan, plan.buckets[np.maximum(bk, 0)]), bk == ROUND0)
            yield pa.RecordBatch.from_arrays([cols[f.name] for f in self.schema], schema=self.schema)


def decision_sample(plan, scenario, group: str) -> pd.DataFrame:
    """One row of decisions.parquet with the dtypes of every column (for its schema)."""
    s = lambda v: pd.array([v], dtype="string")  # noqa: E731
    df = pd.DataFrame({
        "run_id": "r", "model": "m", "condition": "c", "scenario": scenario.id, "group": group, "attribute": s("a"),
        "agent_id": np.zeros(1, np.int64), "replicate": np.zeros(1, np.int64), "name": s(None), "persona": s("p"),
        "decision": s("d"), "target": pd.array([True], dtype="boolean"), "p_target": pd.array([0.5], dtype="Float64"),
        "rationale": s(None), "status": s("valid"), "raw_response": s("x"), "attempts": np.zeros(1, np.int64),
        "latency_s": np.zeros(1), "input_tokens": pd.array([None], dtype="Int64"),
        "output_tokens": pd.array([None], dtype="Int64"), "choice_mass": pd.array([1.0], dtype="Float64"),
        "thinking": s(None), "reasoning_tokens": pd.array([None], dtype="Int64"), "reasoning": "default",
        "intervention": "none", "choice_order": "a|b", "wording": "as_written", "signal": "stated",
    })[DECISION_COLUMNS]
    return df.assign(variant="base", cell_id=np.zeros(1, np.int64), weight=np.ones(1),
                     **{f"attr_{g}": s("a") for g in plan.group_ids},
                     round=np.zeros(1, np.int64), node=np.zeros(1, np.int64), neighbours=np.zeros(1, np.int64),
                     neighbour_share=pd.array([None], dtype="Float64"), changed=pd.array([None], dtype="boolean"),
                     bucket=pd.array([None], dtype="Float64"))


CONTROL_COLUMNS = ["model", "condition", "scenario", "group", "node", "round", "attribute", "decision", "target",
                   "status"]


def control_sample() -> pd.DataFrame:
    return pd.DataFrame({"model": "m", "condition": "c", "scenario": "s", "group": "g", "node": np.zeros(1, np.int64),
                         "round": np.zeros(1, np.int64), "attribute": "a", "decision": "d",
                         "target": pd.array([True], dtype="boolean"), "status": "valid"})[CONTROL_COLUMNS]


class ControlRows:
    """control.parquet's row groups for one case × analysed group: the rule's decisions, round by round."""

    def __init__(self, plan, model: str, scenario, group: str, condition: str, schema: pa.Schema):
        self.plan, self.schema, self.group = plan, schema, group
        self.consts = dict(model=model, condition=condition, scenario=scenario.id, group=group)
        self.labels = list(scenario.labels)
        self.t = self.labels.index(scenario.target)
        self.decision = _strings(self.labels + [None])
        self.status = _strings(STATUSES)

    def batches(self, r: int, state: ControlState):
        plan, L = self.plan, len(self.labels)
        n = plan.n
        for a in range(0, n, CHUNK):
            b = min(n, a + CHUNK)
            m = b - a
            st, ch = state.status[a:b], state.choice[a:b]
            valid = st == VALID
            cols = {k: _const(v, m) for k, v in self.consts.items()}
            cols.update(node=pa.array(np.arange(a, b, dtype=np.int64)), round=pa.array(np.full(m, r, dtype=np.int64)),
                        attribute=plan.attribute(self.group, plan.agent_cells[a:b]),
                        decision=pc.take(self.decision, np.where(valid, ch, L)), target=_masked(ch == self.t, ~valid),
                        status=pc.take(self.status, st))
            yield pa.RecordBatch.from_arrays([cols[f.name] for f in self.schema], schema=self.schema)


def initial_control(lookup: Lookup, state: RoundState, plan, labels: list[str]) -> ControlState:
    """The control's round 0: the agents' own round-0 decisions (choice as an index into the scenario's
    labels, −1 without one), statuses and probabilities of the target."""
    to_label = np.array([labels.index(c) for c in lookup.order] + [-1], dtype=np.int8)
    valid = state.valid
    p = np.full(plan.n, np.nan)
    for a in range(0, plan.n, CHUNK):
        s = slice(a, a + CHUNK)
        pos = plan.lut[state.bucket[s] + 1]
        p[s] = np.where(valid[s], lookup.cum[plan.agent_cells[s], pos, plan.reps[s], 0], np.nan)
    return ControlState(to_label[state.choice], state.status.copy(), p)


def edge_batches(graph, consts: dict, schema: pa.Schema):
    """network.parquet's rows of one case × group: every edge once (source < target)."""
    for src, dst in graph.edges(CHUNK):
        m = src.size
        cols = {k: _const(v, m) for k, v in consts.items()}
        cols.update(source=pa.array(src), target=pa.array(dst))
        yield pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


def status_rows(counts: dict, plan) -> tuple[dict, list[dict], int]:
    """The manifest's status fields from the counts kept while writing: ``counts[(model, condition,
    scenario, group, round)]`` = (attribute code × status) counts. Returns (status_counts, status_by
    records sorted as ``louder.status.status_by`` sorts them, rows)."""
    total = np.zeros(len(STATUSES), dtype=np.int64)
    records = []
    for (model, condition, scenario, group, r), c in counts.items():
        total += c.sum(axis=0)
        labels = plan.labels(group)
        for code, row in enumerate(c):
            if row.sum():
                records.append(dict(model=model, condition=condition, scenario=scenario, group=group,
                                    attribute=labels[code], round=r, **{s: int(x) for s, x in zip(STATUSES, row)}))
    keys = ["model", "condition", "scenario", "group", "attribute", "round"]
    records = pd.DataFrame(records, columns=keys + list(STATUSES)).sort_values(keys, kind="stable").to_dict("records")
    records = [{k: (int(v) if k == "round" or k in STATUSES else v) for k, v in rec.items()} for rec in records]
    return {s: int(x) for s, x in zip(STATUSES, total)}, records, int(total.sum())
