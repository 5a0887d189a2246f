"""Synchronous rounds of influence, independent of any LLM.

Round 0 is given (each agent's independent decision). In round r ≥ 1 every agent reads the
*snapshot* of round r−1: how many of its neighbours chose each option. Every agent reads the same
snapshot and the new decisions replace it only when all agents have decided, so the order of agents
never matters.

Status-aware counting: a neighbour whose round r−1 answer was ``invalid``, ``refused`` or ``error``
is reported as such (``NeighbourCounts.invalid`` / ``refused`` / ``error``) and is *excluded* from
the per-option counts and from the share: neighbour_share = (valid neighbours choosing the target) /
(valid neighbours), NaN when no neighbour has a valid decision. An unreadable answer is not evidence
of a choice, so it must not count as "did not choose the target".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import numpy as np
import pandas as pd
import yaml

from louder.networks.space import InfluenceModel, NetworkAgent
from louder.prompts import render

STATUSES = ("valid", "invalid", "refused", "error")


@dataclass(frozen=True)
class Outcome:
    """One agent's decision in one round. ``decision`` is None unless ``status`` is valid;
    ``p_target`` is the model's probability of the target (score mode) or None."""

    decision: str | None
    status: str = "valid"
    p_target: float | None = None


@dataclass(frozen=True)
class NeighbourCounts:
    """What an agent learns of its neighbours' previous-round decisions."""

    total: int                 # neighbours (degree)
    counts: Mapping[str, int]  # valid neighbours per option, every option present
    invalid: int
    refused: int
    error: int
    mean_p_target: float       # mean over valid neighbours of p_target (1/0 when no score); NaN if none

    @property
    def valid(self) -> int:
        return sum(self.counts.values())


Decide = Callable[[NetworkAgent, NeighbourCounts, float], Outcome]


def _p(o: Outcome, target: str) -> float:
    return o.p_target if o.p_target is not None else float(o.decision == target)


def run_rounds(model: InfluenceModel, initial: Sequence[Outcome], rounds: int, decide: Decide,
               choices: Sequence[str], target: str,
               mapper: Callable[[Callable, list], Iterable] | None = None) -> pd.DataFrame:
    """Rounds 0..``rounds`` on ``model``'s network; ``initial[node]`` is round 0.

    ``decide(agent, counts, share)`` returns the agent's round-r outcome; ``agent.outcome`` still
    holds its round r−1 outcome and ``agent.model.round`` is r. ``mapper(fn, items)`` may run the
    calls concurrently (e.g. a model client's map); results must come back in item order.
    Returns one row per agent per round: node, the agent's attributes, round, decision, target,
    status, p_target, neighbours (degree), neighbours_valid, neighbour_share, changed (the valid
    decision differs from the agent's own valid decision of round r−1; NA when either is not valid).
    """
    n = len(model.by_node)
    if len(initial) != n:
        raise ValueError(f"{len(initial)} round-0 outcomes for {n} agents")
    adj = model.adjacency()
    degree = np.asarray(adj.sum(axis=1)).ravel()
    index = {c: i for i, c in enumerate(choices)}
    mapper = mapper or (lambda fn, items: map(fn, items))
    current = list(initial)
    frames: list[pd.DataFrame] = []
    attrs = pd.DataFrame([a.attributes for a in model.by_node])

    def record(r: int, outcomes: list[Outcome], prev: list[Outcome] | None, share, valid_n):
        # columns, not one dict per row: 100,000 agents × rounds stay a few hundred MB
        status = [o.status for o in outcomes]
        decision = [o.decision for o in outcomes]
        valid = np.array([s_ == "valid" for s_ in status])
        changed = pd.array([pd.NA] * n, dtype="boolean")
        if prev is not None:
            both = valid & np.array([o.status == "valid" for o in prev])
            changed[both] = np.array([d != o.decision for d, o in zip(decision, prev)])[both]
        target_col = pd.array([pd.NA] * n, dtype="boolean")
        target_col[valid] = np.array([d == target for d in decision])[valid]
        # one frame from its columns (assigning eleven columns one by one was most of a round's recording)
        frames.append(pd.DataFrame({
            "node": np.arange(n), **{c: attrs[c] for c in attrs.columns},
            "round": np.full(n, r), "decision": decision, "target": target_col, "status": status,
            "p_target": np.array([np.nan if o.p_target is None else o.p_target for o in outcomes]),
            "neighbours": degree.astype(int),
            "neighbours_valid": pd.array([pd.NA] * n if prev is None else valid_n.astype(int), dtype="Int64"),
            "neighbour_share": np.full(n, np.nan) if prev is None else share, "changed": changed}))

    record(0, current, None, None, None)
    for r in range(1, rounds + 1):
        # snapshot of round r−1 as arrays; one sparse product counts every agent's neighbours
        onehot = np.zeros((n, len(choices) + 3))
        p = np.zeros(n)
        for node, o in enumerate(current):
            if o.status == "valid":
                onehot[node, index[o.decision]] = 1
                p[node] = _p(o, target)
            else:
                onehot[node, len(choices) + STATUSES.index(o.status) - 1] = 1
        counts = adj @ onehot
        valid_n = counts[:, : len(choices)].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(valid_n > 0, counts[:, index[target]] / valid_n, np.nan)
            mean_p = np.where(valid_n > 0, (adj @ p) / valid_n, np.nan)
        for node, o in enumerate(current):
            model.by_node[node].outcome = o
        model.round = r

        def one(node: int) -> Outcome:
            c = counts[node]
            nb = NeighbourCounts(total=int(degree[node]), counts={ch: int(c[i]) for i, ch in enumerate(choices)},
                                 invalid=int(c[-3]), refused=int(c[-2]), error=int(c[-1]),
                                 mean_p_target=float(mean_p[node]))
            return decide(model.by_node[node], nb, float(share[node]))

        new = list(mapper(one, list(range(n))))
        record(r, new, current, share, valid_n)
        current = new
    for node, o in enumerate(current):
        model.by_node[node].outcome = o
    return pd.concat(frames, ignore_index=True)


# --- the no-LLM control rules -----------------------------------------------------------------
# Each returns a ``decide`` callback. An agent whose own previous answer was not valid keeps it:
# a rule has no model to ask, so it neither invents a decision nor drops the agent.

def majority() -> Decide:
    """Adopt the option most valid neighbours chose; on a tie, or with no valid neighbour, keep one's own."""

    def decide(agent: NetworkAgent, nb: NeighbourCounts, share: float) -> Outcome:
        prev = agent.outcome
        if prev.status != "valid" or nb.valid == 0:
            return prev
        best = max(nb.counts.values())
        top = [c for c, k in nb.counts.items() if k == best]
        return Outcome(top[0]) if len(top) == 1 else Outcome(prev.decision)

    return decide


def threshold(theta: float, target: str) -> Decide:
    """Granovetter threshold: adopt the target once a share ≥ θ of valid neighbours chose it;
    otherwise keep one's decision (adopters stay)."""
    if not 0 <= theta <= 1:
        raise ValueError(f"threshold must be in [0, 1], got {theta}")

    def decide(agent: NetworkAgent, nb: NeighbourCounts, share: float) -> Outcome:
        prev = agent.outcome
        if prev.status != "valid":
            return prev
        return Outcome(target) if nb.valid > 0 and share >= theta else Outcome(prev.decision)

    return decide


def degroot(self_weight: float, choices: Sequence[str], target: str) -> Decide:
    """DeGroot averaging of the probability of the target:
    p_i(r) = w·p_i(r−1) + (1−w)·mean_{j valid neighbour} p_j(r−1) (p_j = 1/0 from the decision
    when no score); the decision is the target iff p_i(r) ≥ 0.5, else the other choice (binary
    scenarios) or one's own non-target decision."""
    if not 0 <= self_weight <= 1:
        raise ValueError(f"self_weight must be in [0, 1], got {self_weight}")
    other = next(c for c in choices if c != target)

    def decide(agent: NetworkAgent, nb: NeighbourCounts, share: float) -> Outcome:
        prev = agent.outcome
        if prev.status != "valid":
            return prev
        p = _p(prev, target)
        if nb.valid > 0:
            p = self_weight * p + (1 - self_weight) * nb.mean_p_target
        keep = prev.decision if prev.decision != target else other
        return Outcome(target if p >= 0.5 else keep, p_target=p)

    return decide


CONTROL_RULES = ("majority", "threshold", "degroot")


def control_rule(name: str, choices: Sequence[str], target: str, **params) -> Decide:
    """The control rule ``name`` (majority | threshold | degroot) with its parameters."""
    if name == "majority":
        return majority()
    if name == "threshold":
        return threshold(params.get("threshold", 0.5), target)
    if name == "degroot":
        return degroot(params.get("self_weight", 0.5), choices, target)
    raise ValueError(f"control rule must be one of {', '.join(CONTROL_RULES)}, got {name!r}")


# --- the neighbour message --------------------------------------------------------------------

@cache
def influence_templates() -> dict:
    """The ``influence`` section of louder/data/prompts.yaml."""
    doc = yaml.safe_load((resources.files("louder") / "data" / "prompts.yaml").read_text("utf-8"))
    return doc["influence"]


def _and_list(parts: list[str], conj: str) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" {conj} " + parts[-1]


def choice_phrase(label: str, templates: Mapping) -> str:
    """'decided to evacuate' for Evacuate: from the template's ``phrases``, else the default."""
    return templates["phrases"].get(label) or render(templates["default_phrase"], label=label)


def neighbour_message(nb: NeighbourCounts, choices: Sequence[str], target: str,
                      templates: Mapping | None = None) -> str:
    """The sentence an agent reads in round r ≥ 1, e.g. "Of the 8 people you know best, 6 decided
    to evacuate and 2 decided to stay." The target comes first; neighbours without a valid answer
    are said to have given no clear answer. Pure: the same counts always give the same text — so
    with louder's own templates each distinct count is rendered once (a round of many agents
    repeats few counts; rendering was a tenth of a round)."""
    counts = tuple(nb.counts[c] for c in choices)
    unclear = nb.invalid + nb.refused + nb.error
    if not templates:
        return _default_message(nb.total, counts, unclear, tuple(choices), target)
    return _message(nb.total, nb.counts, unclear, choices, target, templates)


@lru_cache(maxsize=65_536)
def _default_message(total: int, counts: tuple[int, ...], unclear: int, choices: tuple[str, ...], target: str) -> str:
    return _message(total, dict(zip(choices, counts)), unclear, choices, target, influence_templates())


def _message(total: int, counts: Mapping[str, int], unclear: int, choices: Sequence[str], target: str,
             t: Mapping) -> str:
    if total == 0:
        return t["nobody"]
    order = [target] + [c for c in choices if c != target]
    parts = [render(t["count"], k=str(counts[c]), phrase=choice_phrase(c, t)) for c in order]
    if unclear:
        parts.append(render(t["unclear"], k=str(unclear)))
    return render(t["message"], n=str(total), counts=_and_list(parts, t["and"]))


def share_message(share: float, target: str, templates: Mapping | None = None) -> str:
    """Archetype mode's sentence from a bucketed share, e.g. "Of the people you know best, 75 %
    decided to evacuate." """
    t = templates or influence_templates()
    return render(t["share"], percent=f"{round(100 * share)}", phrase=choice_phrase(target, t))
