"""The coordination game without an LLM (issue 48): the minimal models a convention run is read against,
each a vectorised simulation of many independent populations at once (numpy), seeded.

Every model plays the game of a convention run (louder.simulation.convention_run): N agents, steps in
which the agents are paired — a random perfect matching per step and population (``schedule=None``;
odd N: one agent sits out), or a given schedule shared by every population (the pairs a run actually
played) — W options numbered 0..W−1, a committed minority (``round(p·N)`` agents drawn at random per
population, always playing ``committed_option``, never changing) and, with ``established``, prepared
memories (every other agent starts as if the convention ``established`` had formed). Each returns a
``Played``: per population the option every interaction agreed on (−1: the pair did not agree), the
step of each interaction, and the picks made with an empty memory (the individual prior).

**The memory rule** (``memory_rule``) is the rule louder's fake model plays (louder/llm/fake.py): an
agent remembers the partner's pick of its last H rounds; count(x) = the number of them that are x,
times ``favour[x]``; it picks

    P(x) = F · [x among the most counted options] / (number of them) + (1 − F) · prior(x),

and from ``prior`` alone with an empty memory. F = 1 and a uniform prior is **fictitious play**: the
option seen most in memory, ties at random (the 2026 study of networked naming games finds LLM agents'
choices described by it).

**The naming game** (``naming_game``) is the paper's minimal model (Ashery, Aiello & Baronchelli,
Science Advances 2025; the authors' code, NG_module.py, as the minimal naming game of Baronchelli et al.
2006): every agent holds an inventory of options, empty at first. In a pair one agent, drawn at random,
speaks: an option drawn uniformly from its inventory, or, when it is empty, from all W options — uniformly,
as the paper's model, or from a given prior (the analysis passes the LLM's measured one) — which the speaker
does not keep. If the listener's inventory holds it, the pair agrees and both keep only
that option; otherwise the listener adds it. Committed agents hold their option alone and never
change. The interaction's agreement is the spoken option when the listener held it.

**The binary agreement model** (``binary_agreement``) is the model of Xie et al., "Social consensus
through the influence of committed minorities", Phys. Rev. E 84, 011130 (2011), on a complete graph:
states A, B and AB; at each interaction a speaker is drawn from the N agents and a listener from the
other N − 1; the speaker voices its opinion (AB: A or B with probability ½ each); if the listener
holds it, both keep only it (the speaker–listener version: committed agents keep A), otherwise the
listener adds it (AB). A fraction p is committed to A; all others start in B. Its mean-field critical
fraction is p_c ≈ 0.0979 (speaker–listener; the listener-only version's is ≈ 0.072): above it the
population adopts A in time ~ ln N, below it only after a time exponential in N. The simulation is
exact on a complete graph by lumping agents into counts (committed A, A, B, AB), as Zhang et al.
(Chaos 21, 025115, 2011) do: the state is the counts, and an interaction changes them by its rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EMPTY = -1


@dataclass(frozen=True)
class Played:
    """Populations of one game: ``agreed[r, i]`` the option interaction i of population r agreed on
    (−1: none), ``step_of[i]`` its step (from 1), ``prior`` the count of each option among the picks
    made with an empty memory (by agents that are not committed)."""

    agreed: np.ndarray
    step_of: np.ndarray
    prior: np.ndarray


def _committed(rng: np.random.Generator, replicates: int, n: int, fraction: float) -> np.ndarray:
    """A (R, N) mask of the committed agents: round(p·N) of each population, drawn at random."""
    m = int(round(fraction * n))
    mask = np.zeros((replicates, n), dtype=bool)
    if m:
        idx = np.argsort(rng.random((replicates, n)), axis=1)[:, :m]
        np.put_along_axis(mask, idx, True, axis=1)
    return mask


def _pairs(rng: np.random.Generator, replicates: int, n: int, schedule, step: int) -> tuple[np.ndarray, np.ndarray]:
    """The step's pairs as two (R, K) arrays of agents: a random perfect matching per population, or the
    schedule's pairs of this step for every population."""
    if schedule is None:
        perm = np.argsort(rng.random((replicates, n)), axis=1)
        k = n // 2
        return perm[:, 0: 2 * k: 2], perm[:, 1: 2 * k: 2]
    p = np.asarray(schedule[step - 1], dtype=np.int64).reshape(-1, 2)
    return np.broadcast_to(p[:, 0], (replicates, len(p))), np.broadcast_to(p[:, 1], (replicates, len(p)))


def _step_index(schedule, steps: int, n: int) -> np.ndarray:
    sizes = [n // 2] * steps if schedule is None else [len(np.asarray(s).reshape(-1, 2)) for s in schedule[:steps]]
    return np.repeat(np.arange(1, steps + 1), sizes)


def memory_rule(n: int, steps: int, memory: int, options: int = 2, prior=None, follow: float = 1.0, favour=None,
                replicates: int = 1000, seed: int = 0, committed: float = 0.0, committed_option: int = 1,
                established: int | None = None, schedule=None) -> Played:
    """The memory rule (module docstring), F = ``follow``, for ``replicates`` populations of ``n`` agents
    remembering their last ``memory`` partners' picks. ``prior``: the empty-memory distribution over the
    ``options`` (default uniform); ``favour``: the weight of each option's count (default 1)."""
    W, R, H = options, replicates, memory
    rng = np.random.default_rng(seed)
    prior = np.full(W, 1 / W) if prior is None else np.asarray(prior, dtype=float) / np.sum(prior)
    cum = np.cumsum(prior)
    weight = np.ones(W) if favour is None else np.asarray(favour, dtype=float)
    com = _committed(rng, R, n, committed)
    mem = np.full((R, n, H), EMPTY, dtype=np.int16)
    if established is not None:
        mem[~com] = established
    rows = np.arange(R)[:, None]
    agreed, prior_counts = [], np.zeros(W, dtype=np.int64)
    for t in range(1, steps + 1):
        a, b = _pairs(rng, R, n, schedule, t)
        counts = (mem[..., None] == np.arange(W)).sum(axis=2) * weight  # (R, N, W)
        top = counts.max(axis=-1, keepdims=True)
        empty = top[..., 0] <= 0
        keys = np.where(counts == top, rng.random((R, n, W)), -1.0)
        followed = keys.argmax(axis=-1)
        drawn = (rng.random((R, n))[..., None] < cum).argmax(axis=-1)
        pick = np.where((rng.random((R, n)) < follow) & ~empty, followed, drawn)
        pick[com] = committed_option
        playing = np.zeros((R, n), dtype=bool)
        playing[rows, a] = True
        playing[rows, b] = True
        prior_counts += np.bincount(pick[playing & empty & ~com], minlength=W)
        pa, pb = np.take_along_axis(pick, a, 1), np.take_along_axis(pick, b, 1)
        agreed.append(np.where(pa == pb, pa, EMPTY))
        heard = np.full((R, n), EMPTY - 1, dtype=np.int16)
        heard[rows, a] = pb
        heard[rows, b] = pa
        moved = heard != EMPTY - 1
        mem[moved] = np.concatenate([mem[moved][:, 1:], heard[moved][:, None]], axis=1)
    return Played(np.concatenate(agreed, axis=1), _step_index(schedule, steps, n), prior_counts)


def naming_game(n: int, steps: int, options: int = 2, prior=None, replicates: int = 1000, seed: int = 0,
                committed: float = 0.0, committed_option: int = 1, established: int | None = None,
                schedule=None) -> Played:
    """The paper's minimal model (module docstring) for ``replicates`` populations of ``n`` agents.
    ``prior``: the distribution a speaker with an empty inventory draws from (default uniform, the paper's;
    the analysis passes the LLM's measured prior, so that the contrast isolates what memory adds)."""
    W, R = options, replicates
    rng = np.random.default_rng(seed)
    prior = np.full(W, 1 / W) if prior is None else np.asarray(prior, dtype=float) / np.sum(prior)
    cum = np.cumsum(prior)
    com = _committed(rng, R, n, committed)
    inv = np.zeros((R, n, W), dtype=bool)
    if established is not None:
        inv[~com, established] = True
    inv[com] = False
    inv[com, committed_option] = True
    rows = np.arange(R)[:, None]
    agreed, prior_counts = [], np.zeros(W, dtype=np.int64)
    onehot = np.eye(W, dtype=bool)
    for t in range(1, steps + 1):
        a, b = _pairs(rng, R, n, schedule, t)
        first = rng.random(a.shape) < 0.5
        s, listener = np.where(first, a, b), np.where(first, b, a)
        held = inv[rows, s]  # (R, K, W)
        empty = ~held.any(axis=-1)
        spoken = np.where(held, rng.random(held.shape), -1.0).argmax(axis=-1)
        word = np.where(empty, (rng.random(a.shape)[..., None] < cum).argmax(axis=-1), spoken)
        prior_counts += np.bincount(word[empty & ~com[rows, s]], minlength=W)
        success = inv[rows, listener, word]
        s_free, l_free = ~com[rows, s], ~com[rows, listener]
        new = onehot[word]  # (R, K, W)
        keep_s = success & s_free
        inv[rows.repeat(a.shape[1], 1)[keep_s], s[keep_s]] = new[keep_s]
        keep_l = success & l_free
        inv[rows.repeat(a.shape[1], 1)[keep_l], listener[keep_l]] = new[keep_l]
        add = ~success & l_free
        inv[rows.repeat(a.shape[1], 1)[add], listener[add], word[add]] = True
        agreed.append(np.where(success, word, EMPTY))
    return Played(np.concatenate(agreed, axis=1), _step_index(schedule, steps, n), prior_counts)


def binary_agreement(n: int, fractions, interactions: int, replicates: int = 1000, seed: int = 0) -> np.ndarray:
    """The binary agreement model (module docstring) on a complete graph of ``n`` agents, for each
    committed fraction of ``fractions`` and ``replicates`` populations: a (len(fractions), R) array of
    the interaction (from 1) at which every agent holds A alone, NaN when that did not happen within
    ``interactions`` interactions (time = interactions / N, Xie et al.'s unit)."""
    p = np.asarray(fractions, dtype=float)
    rng = np.random.default_rng(seed)
    shape = (len(p), replicates)
    m = np.broadcast_to(np.round(p * n)[:, None], shape).astype(np.int64)
    na = np.zeros(shape, dtype=np.int64)
    nb = (n - m).copy()
    nab = np.zeros(shape, dtype=np.int64)
    done = np.full(shape, np.nan)
    chunk = 512  # random numbers drawn for this many interactions at once (one call instead of 512)
    for i in range(1, interactions + 1):
        if (i - 1) % chunk == 0:
            draws = rng.random((min(chunk, interactions - i + 1), 3, *shape))
        u = draws[(i - 1) % chunk]
        x = u[0] * n
        stype = (x >= m).astype(np.int8) + (x >= m + na) + (x >= m + na + nb)  # 0 committed, 1 A, 2 B, 3 AB
        voiced_a = (stype <= 1) | ((stype == 3) & (u[1] < 0.5))
        cm, ca = m - (stype == 0), na - (stype == 1)
        cb = nb - (stype == 2)
        y = u[2] * (n - 1)
        ltype = (y >= cm).astype(np.int8) + (y >= cm + ca) + (y >= cm + ca + cb)
        voiced_b = ~voiced_a
        success = (voiced_a & (ltype != 2)) | (voiced_b & (ltype >= 2))
        l_to_a = voiced_a & (ltype == 3)
        l_to_b = voiced_b & (ltype == 3)
        l_b_ab = voiced_a & (ltype == 2)
        l_a_ab = voiced_b & (ltype == 1)
        s_to_a = (stype == 3) & voiced_a & success
        s_to_b = (stype == 3) & voiced_b & success
        to_a = l_to_a.astype(np.int64) + s_to_a
        to_b = l_to_b.astype(np.int64) + s_to_b
        to_ab = l_b_ab.astype(np.int64) + l_a_ab
        na += to_a - l_a_ab
        nb += to_b - l_b_ab
        nab += to_ab - to_a - to_b
        done[(nb + nab == 0) & np.isnan(done)] = i
        if i % n == 0 and not np.isnan(done).any():
            break
    return done
