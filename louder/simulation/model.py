"""The Mesa model of one case: a population of persona agents facing one scenario."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import mesa

from louder.agents import PersonaAgent
from louder.session import ModelSession
from louder.scenarios import AS_WRITTEN, Group, Scenario

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
    # how the scenario was presented (docs/robustness.md)
    "choice_order": "choice_order",
    "wording": "wording",
    "signal": "signal",
}


@dataclass(frozen=True)
class Case:
    """model × condition × scenario × group."""

    model: str
    condition: str
    scenario: Scenario
    group: Group
    root_seed: int
    wording: str = AS_WRITTEN  # the wording ``scenario`` is said in
    signal: str = "stated"  # how the attribute reaches the persona: stated | names


class BiasModel(mesa.Model):
    """``agents`` agents per attribute of the case's group; one ``step`` = every agent decides.
    ``replicates``: only these replicates of each attribute (a wave of a sequential run); an agent's
    identity — seeds and cache keys — is (case, attribute, replicate) whatever the range.
    ``on_done``: called as each agent finishes (the progress tick); set it before ``step``, which
    takes no arguments (Mesa ≥ 3.4 wraps it so)."""

    def __init__(self, case: Case, session: ModelSession, agents: int, seed: int, replicates: range | None = None):
        super().__init__(rng=int(seed))  # an int rng seeds model.random and model.rng as seed= did
        self.case = case
        self.session = session
        self.on_done: Callable[[], None] | None = None
        for attribute in case.group.attributes:
            for replicate in (range(agents) if replicates is None else replicates):
                PersonaAgent(self, attribute, replicate)
        self.datacollector = mesa.DataCollector(agent_reporters=AGENT_REPORTERS)

    def step(self) -> None:
        """Every agent writes its persona (step 1 of the technique) and then decides (step 2), in an
        order drawn from the model's rng; agents run concurrently through the session's client,
        each going on to its decision as soon as its own persona is written."""
        self.agents.shuffle(inplace=True)
        self.session.client.map(lambda a: a.step(), list(self.agents), self.on_done)
        self.datacollector.collect(self)
