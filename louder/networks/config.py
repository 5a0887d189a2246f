"""The ``influence:`` section of the config (issue 31.4): rounds of influence on the ``network:``
graph (``louder.networks.graphs.NetworkConfig``), the no-LLM control rule beside them, and the
no-influence arm (docs/networks.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from louder.sections import Section


class ControlConfig(BaseModel):
    """``influence.control`` — the no-LLM update rule of a network run (louder.networks.rounds.control_rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rule: Literal["majority", "threshold", "degroot"] = Field(
        "majority", description="majority: follow most neighbours; threshold: flip when at least `threshold` of "
        "the neighbours chose otherwise; degroot: average the neighbours' probabilities")
    threshold: float = Field(0.5, ge=0, le=1, description="threshold rule: share of neighbours that flips an agent")
    self_weight: float = Field(0.5, ge=0, le=1, description="degroot rule: weight of the agent's own probability")


class InfluenceConfig(Section):
    """``influence:`` — what happens on the ``network:`` after the independent round 0."""


    rounds: int = Field(0, ge=0, le=100, description="rounds of influence after the independent round 0 (needs "
                        "`network:`)")
    control: ControlConfig = Field(ControlConfig(), description="the no-LLM control of a network run: a reference "
                                   "(what a textbook contagion does on the graph), not the amplification's baseline")
    no_influence: bool = Field(True, description="every round, each agent is also asked its round-0 prompt again "
                               "with a new seed (the no-influence arm); the amplification verdict compares the rounds "
                               "of influence with it. Score mode with score_pick: argmax repeats round 0 exactly, so "
                               "there the arm is round 0 itself and costs no call")
