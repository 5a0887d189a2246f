"""The probes' sections of the config (issue 31.4): ``explicit:`` (`louder probe explicit`),
``association:`` and ``decision_test:`` (the Bai et al. tests), ``beliefs:`` (`louder probe beliefs`).
The probes also read ``simulation.scenarios``/``groups`` and the shared top-level keys."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from louder.sections import GenerationParams, Section


class ExplicitConfig(Section):
    """``explicit:`` — the model is asked directly which attribute a person who made the decision has
    (appendix D)."""


    trials: int | None = Field(
        None, ge=1, le=10_000_000,
        description="explicit-probe trials per scenario × group; default 100 × the group's attributes (paper)")
    params: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=200),
                                     description="generation of an explicit-probe answer (appendix D)")
    completion_params: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=50),
                                                description="completion models: the explicit probe")


class AssociationConfig(Section):
    """``association:`` — the LLM Word Association Test (Bai et al.)."""


    trials: int = Field(50, ge=1, le=1_000_000, description="trials per stereotype × variation")
    variations: list[Literal["replication", "instruction1", "instruction2", "synonym"]] = Field(
        default_factory=lambda: ["replication", "instruction1", "instruction2", "synonym"], min_length=1,
        description="prompt variations of the word association test")
    params: GenerationParams = Field(GenerationParams(temperature=1.0, max_tokens=400),
                                     description="generation of a word-association answer")


class DecisionTestConfig(Section):
    """``decision_test:`` — the LLM Relative Decision Test (Bai et al.)."""


    trials: int = Field(50, ge=1, le=1_000_000, description="decision-test trials per stereotype")
    variant: Literal["relative", "absolute", "chained"] = Field(
        "relative", description="relative (appendix J), absolute yes/no (appendix P), or chained (association, "
        "profiles and decision in one conversation, appendices M/O)")
    extraction: Literal["followup", "judge"] = Field(
        "followup", description="who got which option: a structured follow-up turn, or the authors' judge call")
    profiles: GenerationParams = Field(GenerationParams(temperature=1.0, max_tokens=700),
                                       description="decision test: the two profiles and the decision")
    followup: GenerationParams = Field(GenerationParams(temperature=0.0, max_tokens=60),
                                       description="decision test: the follow-up (or judge) that reads the answer")


class BeliefsConfig(Section):
    """``beliefs:`` — "out of 100 <people>, how many would choose to <target>?" per attribute (docs/voices.md)."""


    trials: int = Field(100, ge=1, le=1_000_000, description="beliefs-probe answers per scenario × attribute")
    params: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=30),
                                     description="beliefs-probe generation (chat): one JSON integer 0–100")
    completion_params: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=20),
                                                description="beliefs probe on the completion path: the completion "
                                                "call (a chat model then extracts the integer)")
