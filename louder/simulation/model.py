"""The Mesa model of one case: a population of persona agents facing one scenario."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import mesa

from louder import dimensions
from louder.agents import PersonaAgent
from louder.humans import description
from louder.scenarios import Group, Scenario
from louder.session import ModelSession

# What the DataCollector records of every agent: the row schema of decisions.parquet.
AGENT_REPORTERS = {
    "attribute": "attribute",
    "replicate": "replicate",
    "name": "name",
    "persona": "persona_text",
    "decision": "decision",
    "target": "target",
    "rationale": "rationale",
    "status": "status",
    "raw_response": "raw_response",
    "attempts": "attempts",
    "latency_s": "latency_s",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "p_target": "p_target",
    "choice_mass": "choice_mass",
    "thinking": "thinking",
    "reasoning_tokens": "reasoning_tokens",
    "reasoning": "reasoning",
    # how the scenario was presented (docs/robustness.md)
    "choice_order": "choice_order",
    "wording": "wording",
    "signal": "signal",
}


def reporters() -> dict:
    """``AGENT_REPORTERS`` and the level of every other registered dimension (louder.dimensions)."""
    extra = {d.id: (lambda a, i=d.id: a.level(i)) for d in dimensions.registered() if d.id not in AGENT_REPORTERS}
    return {**AGENT_REPORTERS, **extra}


@dataclass(frozen=True)
class Case:
    """model × condition × scenario × group."""

    model: str
    condition: str
    scenario: Scenario
    group: Group
    root_seed: int
    # the arm of the case: a level of each crossed and own-agents dimension (louder.dimensions; absent: its
    # default); ``scenario`` is said as its levels say it (a wording's text)
    levels: dict[str, str] = field(default_factory=dict)


class BiasModel(mesa.Model):
    """``agents`` agents per attribute of the case's group; one ``step`` = every agent decides.
    ``replicates``: only these replicates of each attribute (a wave of a sequential run); an agent's
    identity — seeds and cache keys — is (case, attribute, replicate) whatever the range.

    ``paired``: the case's respondents of a human study (``louder.humans.Paired``), each
    with an agent of its attribute after the usual ones (``agent_id`` continues; ``replicate`` is the
    respondent's place among the case's respondents of its attribute and kind; None: a run without one,
    and no ``respondent`` column); grounded ones (``simulation.ground``) have their persona written from
    the profile and a ``grounding`` column.

    Agents are made as the step reaches them (a million-agent case makes its first call after its
    first agent, not after building a million agents); ``populate`` makes them all up front. Either
    way an agent's ``agent_id`` is its place in attribute-major order, from 1.
    ``on_done``: called as each agent finishes (the progress tick); set it before ``step``, which
    takes no arguments (Mesa ≥ 3.4 wraps it so)."""

    def __init__(self, case: Case, session: ModelSession, agents: int, seed: int, replicates: range | None = None,
                 paired: list | None = None):
        super().__init__(rng=int(seed))  # an int rng seeds model.random and model.rng as seed= did
        self.case = case
        self.session = session
        self.on_done: Callable[[], None] | None = None
        self.replicates = range(agents) if replicates is None else replicates
        # the respondents' paired agents of a human study (louder.humans), after the usual ones
        self.paired = list(paired or [])
        # a paired agent's replicate: its place among the case's respondents of its attribute (so that a
        # balanced choice order balances them within each attribute, as it does the usual agents)
        counts: dict[tuple, int] = {}
        self._paired_replicates = []
        for p in self.paired:  # (per kind of agent: the grounded ones are balanced among themselves)
            k = (p.grounding, p.attribute)
            self._paired_replicates.append(counts.get(k, 0))
            counts[k] = counts.get(k, 0) + 1
        self.usual = len(case.group.attributes) * len(self.replicates)
        self.size = self.usual + len(self.paired)
        self._made: dict[int, PersonaAgent] = {}
        respondent = {} if paired is None else {"respondent": "respondent"}
        if any(p.grounding is not None for p in self.paired):  # a grounded study: which kind each agent is
            respondent["grounding"] = "grounding"
        self.datacollector = mesa.DataCollector(agent_reporters={**reporters(), "agent_id": "agent_id", **respondent})

    def agent(self, k: int) -> PersonaAgent:
        """The ``k``-th agent in attribute-major order (agent_id k + 1), made on first use. Call it
        from one thread at a time: Mesa's agent registry is not thread-safe."""
        a = self._made.get(k)
        if a is None and k >= self.usual:  # a paired agent: the j-th respondent of the case
            j = k - self.usual
            p = self.paired[j]
            described = description(p.profile, self.session.prompts) if p.profile else None
            a = self._made[k] = PersonaAgent(self, p.attribute, self._paired_replicates[j], agent_id=k + 1,
                                             respondent=p.respondent, grounding=p.grounding, description=described)
        if a is None:
            n = len(self.replicates)
            a = self._made[k] = PersonaAgent(self, self.case.group.attributes[k // n], self.replicates[k % n],
                                             agent_id=k + 1)
        return a

    def populate(self) -> list[PersonaAgent]:
        """Every agent, in agent_id order."""
        return [self.agent(k) for k in range(self.size)]

    def step(self) -> None:
        """Every agent writes its persona (step 1 of the technique) and then decides (step 2), in an
        order drawn from the model's rng; agents run concurrently through the session's client,
        each going on to its decision as soon as its own persona is written. The client takes the
        agents as it has room for them, and they are made in this (the calling) thread."""
        order = self.rng.permutation(self.size)
        self.session.client.map(lambda a: a.step(), (self.agent(int(k)) for k in order), self.on_done)
        self.datacollector.collect(self)
