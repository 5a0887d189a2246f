"""The social network as arrays, for runs of millions of agents (archetype mode, issue 49): a CSR
adjacency (``Graph``) built without a Python object per edge, and the no-LLM control rules of
``louder.networks.rounds`` vectorised over it.

``watts_strogatz`` draws exactly the graph ``networkx.watts_strogatz_graph(n, k, p, seed)`` draws —
the same ``random.Random(seed)`` calls in the same order, so the same rewired edges — while holding
the ring lattice as k/2 byte arrays and only the rewired edges in a set (networkx holds a dict per
node and per edge: ~1 KB per agent, minutes at 10^6). Other generators go through networkx
(``louder.networks.graphs.build_graph``) and are converted once.

The control rules here equal ``run_rounds`` with ``control_rule`` agent for agent (tests/test_networks.py
checks them against each other): the same counts, the same ties, the same statuses kept.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

STATUSES = ("valid", "invalid", "refused", "error")


@dataclass(frozen=True)
class Graph:
    """An undirected graph on nodes 0..n−1 as a symmetric CSR pattern (``indptr``, ``indices``: the
    neighbours of node i are ``indices[indptr[i]:indptr[i + 1]]``, sorted). ``rows`` gives a part of it:
    the rows of some nodes only (a shard's), their columns still all n nodes."""

    n: int
    indptr: np.ndarray  # n + 1 offsets: int32 below 2^31 entries, else int64
    indices: np.ndarray  # int32 (int64 past 2^31 nodes)

    def number_of_nodes(self) -> int:
        return self.n

    def number_of_edges(self) -> int:
        return int(self.indices.size // 2)

    @property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes)

    def adjacency(self) -> sparse.csr_matrix:
        """The 0/1 adjacency matrix (int8 data: the products with it count neighbours exactly), sharing
        this graph's index arrays."""
        m = sparse.csr_matrix((np.ones(self.indices.size, dtype=np.int8), self.indices, self.indptr),
                              shape=(self.indptr.size - 1, self.n), copy=False)
        m.has_sorted_indices = True
        return m

    def edges(self, chunk: int = 1 << 22) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every edge once as (source, target) with source < target, in node order, about ``chunk``
        adjacency entries at a time (sources, targets: int64 arrays)."""
        rows = max(1, chunk * self.n // max(1, self.indices.size))
        for start in range(0, self.n, rows):
            stop = min(self.n, start + rows)
            lo, hi = self.indptr[start], self.indptr[stop]
            src = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(self.indptr[start:stop + 1]))
            dst = self.indices[lo:hi].astype(np.int64)
            keep = src < dst
            yield src[keep], dst[keep]

    def rows(self, nodes: np.ndarray) -> Graph:
        """The adjacency rows of ``nodes`` only (a shard's agents; columns keep the global node ids):
        a ``Graph`` whose node i is ``nodes[i]``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        deg = self.degree[nodes]
        indptr = np.zeros(nodes.size + 1, dtype=self.indptr.dtype)
        np.cumsum(deg, out=indptr[1:])
        take = np.repeat(self.indptr[nodes].astype(np.int64) - indptr[:-1], deg) + np.arange(indptr[-1],
                                                                                              dtype=np.int64)
        return Graph(self.n, indptr, self.indices[take])


def from_edges(n: int, u: np.ndarray, v: np.ndarray) -> Graph:
    """The graph of the undirected edges (u_e, v_e) (each listed once; no self-loops)."""
    return _from_keys(n, [np.asarray(u, dtype=np.int64) * n + v, np.asarray(v, dtype=np.int64) * n + u])


def _from_keys(n: int, parts: list[np.ndarray]) -> Graph:
    """The CSR of the directed entries i·n + j given in ``parts`` (each edge both ways): one int64 key per
    entry, sorted in place — 8 bytes per entry at the peak beside the result, no per-edge object."""
    keys = np.concatenate(parts) if len(parts) != 1 else parts[0]
    parts.clear()
    keys.sort()
    idx = np.int32 if n < 2 ** 31 else np.int64
    indices = np.empty(keys.size, dtype=idx)
    counts = np.zeros(n, dtype=np.int64)
    step = 1 << 22
    for i in range(0, keys.size, step):  # in slices: key // n and key % n of all keys at once would be 16 B/entry
        k = keys[i:i + step]
        indices[i:i + step] = k % n
        counts += np.bincount(k // n, minlength=n)
    del keys
    # int32 offsets where they fit: scipy keeps one index type, and would copy int32 indices to int64
    indptr = np.zeros(n + 1, dtype=idx if indices.size < 2 ** 31 else np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Graph(n, indptr, indices)


def from_networkx(graph) -> Graph:
    """A networkx graph on nodes 0..n−1 (``build_graph``'s) as a ``Graph``."""
    n = graph.number_of_nodes()
    e = np.fromiter((x for edge in graph.edges() for x in edge), dtype=np.int64,
                    count=2 * graph.number_of_edges()).reshape(-1, 2)
    return from_edges(n, e[:, 0], e[:, 1])


def watts_strogatz(n: int, k: int, p: float, seed: int) -> Graph:
    """``networkx.watts_strogatz_graph(n, k, p, seed)`` as a ``Graph`` (0 ≤ k < n).

    networkx: a ring lattice joins each node u to u + j (mod n) for j = 1..⌊k/2⌋; then for j = 1..⌊k/2⌋
    and u = 0..n−1 in order, with probability p (one ``random()`` draw per edge) the edge (u, u + j) is
    replaced by (u, w), w drawn with ``choice`` until it is neither u nor a neighbour of u (giving up when
    u already neighbours everyone). The same draws are made here in the same order. Lattice edges are
    k/2 byte arrays (edge (u, u + j) present), rewired edges a set of u·n + w keys (u < w): a lattice
    pair differs from its reverse since k < n, so each edge has one place."""
    if not 0 <= k < n:
        raise ValueError(f"watts_strogatz needs 0 ≤ k < n, got k={k}, n={n}")
    rng = random.Random(seed)
    draw, choice, nodes = rng.random, rng.choice, range(n)
    half = k // 2
    lattice = [bytearray(b"\x01") * n for _ in range(half)]
    extra: set[int] = set()
    degree = np.full(n, 2 * half, dtype=np.int64) if half else np.zeros(n, dtype=np.int64)

    def linked(u: int, w: int) -> bool:
        d = (w - u) % n
        if 0 < d <= half and lattice[d - 1][u]:
            return True
        d = (u - w) % n
        if 0 < d <= half and lattice[d - 1][w]:
            return True
        return (u * n + w if u < w else w * n + u) in extra

    for j in range(1, half + 1):
        row = lattice[j - 1]
        for u in nodes:
            if draw() < p:
                w = choice(nodes)
                while w == u or linked(u, w):
                    w = choice(nodes)
                    if degree[u] >= n - 1:
                        break  # networkx: skip this rewiring
                else:
                    v = (u + j) % n
                    row[u] = 0  # remove (u, v) ...
                    degree[v] -= 1
                    extra.add(u * n + w if u < w else w * n + u)  # ... add (u, w)
                    degree[w] += 1
    del degree
    # every edge both ways as a key i·n + j, written into one array slice by slice
    total = 2 * (sum(n - row.count(0) for row in lattice) + len(extra))
    keys = np.empty(total, dtype=np.int64)
    at = 0
    for j in range(1, half + 1):
        u = np.flatnonzero(np.frombuffer(lattice[j - 1], dtype=np.uint8))
        v = (u + j) % n
        keys[at:at + u.size] = u * n + v
        keys[at + u.size:at + 2 * u.size] = v * n + u
        at += 2 * u.size
        lattice[j - 1] = bytearray()
        del u, v
    e = np.fromiter(extra, dtype=np.int64, count=len(extra))
    extra.clear()
    keys[at:at + e.size] = e
    keys[at + e.size:] = (e % n) * n + e // n
    del e
    return _from_keys(n, [keys])


# --- the no-LLM control, vectorised ----------------------------------------------------------------

@dataclass
class ControlState:
    """Every agent's outcome in one round: ``choice`` (index into the scenario's choices; −1 without a
    valid decision), ``status`` (index into STATUSES) and ``p`` (the probability of the target, NaN
    where an outcome has none: ``Outcome.p_target`` None)."""

    choice: np.ndarray  # int8
    status: np.ndarray  # int8
    p: np.ndarray  # float64


def control_step(adjacency, state: ControlState, rule: str, choices: Sequence[str], target: str,
                 threshold: float = 0.5, self_weight: float = 0.5, nodes: np.ndarray | None = None) -> ControlState:
    """Round r of the control rule from round r − 1's ``state`` (``louder.networks.rounds``: majority,
    threshold, degroot), for every agent at once. ``state`` covers every agent; ``adjacency`` holds the
    rows of the agents decided here — all of them, or a shard's ``nodes`` — with a column per agent.
    An agent whose own previous answer is not valid keeps it, p included."""
    t = list(choices).index(target)
    valid = state.status == 0
    onehot = np.zeros((state.choice.size, len(choices)))
    onehot[np.flatnonzero(valid), state.choice[valid]] = 1
    counts = adjacency @ onehot  # valid neighbours per choice: sums of ones, exact
    del onehot
    valid_n = counts.sum(axis=1)
    mine = state if nodes is None else ControlState(state.choice[nodes], state.status[nodes], state.p[nodes])
    prev_valid = mine.status == 0
    heard = prev_valid & (valid_n > 0)
    choice, p = mine.choice.copy(), mine.p.copy()
    if rule == "majority":
        top = counts == counts.max(axis=1)[:, None]
        take = heard & (top.sum(axis=1) == 1)
        choice[take] = top[take].argmax(axis=1)  # the one choice most valid neighbours made
        p[heard] = np.nan  # a new Outcome (a tie keeps the decision, not the probability)
    elif rule == "threshold":
        if not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        with np.errstate(invalid="ignore", divide="ignore"):
            share = counts[:, t] / valid_n
        choice[heard & (share >= threshold)] = t
        p[prev_valid] = np.nan
    elif rule == "degroot":
        if not 0 <= self_weight <= 1:
            raise ValueError(f"self_weight must be in [0, 1], got {self_weight}")
        pv = np.where(valid, np.where(np.isnan(state.p), state.choice == t, state.p), 0.0)  # rounds._p
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_p = (adjacency @ pv) / valid_n
        own = np.where(np.isnan(mine.p), mine.choice == t, mine.p)
        new = np.where(valid_n > 0, self_weight * own + (1 - self_weight) * mean_p, own)
        other = next(i for i, c in enumerate(choices) if c != target)
        keep = np.where(mine.choice != t, mine.choice, other)
        choice = np.where(prev_valid, np.where(new >= 0.5, t, keep), choice)
        p = np.where(prev_valid, new, p)
    else:
        raise ValueError(f"control rule must be one of majority, threshold, degroot, got {rule!r}")
    return ControlState(choice.astype(np.int8), mine.status.copy(), p)
