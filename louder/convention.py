"""The ``convention:`` section of the config (issue 48): a coordination game played by populations of
agents — the naming game of Ashery, Aiello & Baronchelli (Science Advances 11(20) eadu9368, 2025) —
and its committed minorities, group-size sweep and pairing (louder/simulation/convention_run.py;
docs/conventions.md). It lives beside neither the run (louder.simulation imports the config) nor the
other sections (louder/sections, which louder.networks builds on, while this section pairs agents along a
network's graph), so that the config imports nothing that imports it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from louder.errors import LouderError, did_you_mean
from louder.networks.graphs import NetworkConfig
from louder.sections import GenerationParams, Section

# The letters a game of W options plays with: the first W of these (Q and M are the paper's pair at W = 2;
# at W = 10 the paper drew ten letters too). A fixed order, so that a run is reproducible.
LETTERS = "QMJKZXVWGPFBHDLNRSTCYEUOIA"


class CommittedConfig(BaseModel):
    """``convention.committed`` — a committed minority: a fraction ``p`` of each population's agents
    always plays ``option`` and asks no model (Xie et al. 2011; Centola et al. 2018; the paper's third
    experiment). ``fraction`` may be a list: a sweep over p, each value with its own populations, from
    which the analysis reads the critical mass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fraction: list[float] = Field(description="p, the share of each population's N agents that is committed "
                                  "(round(p·N) agents), 0 ≤ p < 1; a list sweeps p (the critical mass)")
    option: str | None = Field(None, description="what the committed agents play; default: the second option")
    start: Literal["convention", "start"] = Field(
        "convention", description="convention (the paper's design): every other agent's memory starts full of "
        "rounds in which both players picked `established` and won — a convention has formed — and the committed "
        "agents push `option` from step 1; start: empty memories, the committed agents push from step 1")
    established: str | None = Field(None, description="start: convention — the convention in place; default: the "
                                    "first option")

    @field_validator("fraction", mode="before")
    @classmethod
    def _one_is_a_list(cls, v):
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @field_validator("fraction")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        if not v:
            raise ValueError("give at least one fraction p (0 ≤ p < 1), e.g. fraction: [0, 0.1, 0.2, 0.3]")
        for p in v:
            if not 0 <= p < 1:
                raise ValueError(f"{p} is outside [0, 1): p is the committed share of the population, at least 0 "
                                 "and below 1 (e.g. 0.25 for a quarter)")
        if len(set(v)) != len(v):
            raise ValueError("a fraction is listed more than once; list each p once")
        return sorted(v)


class ConventionConfig(Section):
    """``convention:`` — populations of agents playing a coordination game (``louder run`` runs a config
    with this section as a convention run). Each of ``populations`` independent populations of
    ``agents`` agents plays ``steps`` steps; a step pairs the agents at random (or along the edges of
    ``network``), each pair picks one of the options at once, and each agent's prompt carries its
    memory of its last ``memory`` rounds (docs/conventions.md). It lives beside neither the run (louder.simulation imports the config) nor the
other sections (louder/sections, which louder.networks builds on, while this section pairs agents along a
network's graph), so that the config imports nothing that imports it."""

    agents: int = Field(24, ge=2, le=100_000, description="N, agents per population (the paper: 24)")
    sizes: list[int] | None = Field(None, description="a group-size sweep: N for each entry (e.g. [8, 24, 48, 200]), "
                                    "each with its own populations; replaces `agents`")
    populations: int = Field(10, ge=1, le=100_000, description="R, independent populations per model (and per "
                             "committed fraction and size)")
    steps: int = Field(30, ge=1, le=100_000, description="T, steps per population; a step is one round for every "
                       "agent (N/2 pairs at once: the paper's time t = interactions / N grows by 1/2 per step)")
    memory: int = Field(5, description="H, the rounds an agent remembers (the paper: 5)")
    options: int | list[str] = Field(2, description="W: a number (the first W of the letters Q, M, J, K, Z, …; the "
                                     "paper: 2 and 10) or the options' labels")
    scenario: str | None = Field(None, description="a scenario id or file: its choices are the options, and its "
                                 "situation frames the game, so that the convention is a norm of action")
    reward: float = Field(100, gt=0, description="points each player of a pair wins when both pick the same option "
                          "(the paper: 100)")
    penalty: float = Field(50, ge=0, description="points each loses when they differ (the paper: 50)")
    shuffle: bool = Field(True, description="the options are listed in a fresh random order for every agent and "
                          "step (the paper's design); false: always in the given order")
    group: str | None = Field(None, description="agents with personas: a group id (or file) whose attributes the "
                              "agents carry, each agent's persona written by its model first; none: plain agents")
    shares: dict[str, float] | None = Field(None, description="with `group`: the share of each attribute among a "
                                            "population's agents (default: equal shares)")
    pairing: Literal["random", "network"] = Field(
        "random", description="random: each step a random perfect matching of the population (odd N: one agent "
        "sits out); network: a random maximal matching of the edges of `network`")
    network: NetworkConfig | None = Field(None, description="pairing: network — the population's graph (the "
                                          "generators of `network:`; node i is agent i)")
    committed: CommittedConfig | None = Field(None, description="a committed minority (and a sweep over its size)")
    pick: GenerationParams = Field(GenerationParams(temperature=0.5, max_tokens=200),
                                   description="generation of a pick (the paper: temperature 0.5)")

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v}: an agent must remember at least its last round; use memory: 1 or more (the paper: "
                             "5)")
        if v > 1000:
            raise ValueError(f"{v}: a memory of more than 1000 rounds does not fit a prompt; use memory ≤ 1000")
        return v

    @field_validator("options")
    @classmethod
    def _options(cls, v):
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 2:
                raise ValueError(f"{v}: a coordination game needs at least 2 options (W ≥ 2); use options: 2 or "
                                 "more (the paper: 2 and 10)")
            if v > len(LETTERS):
                raise ValueError(f"{v}: at most {len(LETTERS)} letters; give the options' labels as a list for more")
            return v
        labels = [str(x).strip() for x in v]
        if len(labels) < 2:
            raise ValueError("a coordination game needs at least 2 options (W ≥ 2); list two or more labels")
        if any(not x or '"' in x or "\n" in x for x in labels):
            raise ValueError("an option's label must be a non-empty line without double quotes")
        if len(set(x.casefold() for x in labels)) < len(labels):
            raise ValueError("an option is listed more than once (labels are compared ignoring case)")
        return labels

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v):
        if v is None:
            return v
        if not v or any(n < 2 for n in v):
            raise ValueError("every size is a population of at least 2 agents, e.g. sizes: [8, 24, 48, 200]")
        if len(set(v)) != len(v):
            raise ValueError("a size is listed more than once")
        return sorted(v)

    @field_validator("scenario")
    @classmethod
    def _scenario(cls, v):
        if v is None:
            return v
        from louder.scenarios import load_scenario

        try:
            load_scenario(v)
        except LouderError as e:
            raise ValueError(str(e)) from None
        return v

    @model_validator(mode="after")
    def _together(self) -> ConventionConfig:
        labels = self.labels
        if self.scenario is not None and self.options != 2:
            raise ValueError("options: the scenario's choices are the options; drop `options` or `scenario`")
        if self.pairing == "network" and self.network is None:
            raise ValueError("pairing: network pairs agents along a graph; add convention.network (e.g. {generator: "
                             "watts_strogatz, params: {k: 4, p: 0.1}})")
        if self.network is not None and self.pairing != "network":
            raise ValueError("network: a graph is used with pairing: network; set it or drop the graph")
        if self.shares is not None and self.group is None:
            raise ValueError("shares: attribute shares need a group of personas; add convention.group")
        if self.group is not None:
            from louder.scenarios import load_group

            try:
                g = load_group(self.group)
            except LouderError as e:
                raise ValueError(f"group: {e}") from None
            if self.shares is not None:
                unknown = [a for a in self.shares if a not in g.attributes]
                if unknown:
                    raise ValueError(f"shares: {unknown[0]!r} is not an attribute of group {g.id}"
                                     f"{did_you_mean(unknown[0], g.attributes)} (its attributes: "
                                     f"{', '.join(g.attributes)})")
                if any(s < 0 for s in self.shares.values()) or abs(sum(self.shares.values()) - 1) > 1e-6:
                    raise ValueError(f"shares: they add up to {sum(self.shares.values()):g}; give every attribute a "
                                     "share ≥ 0, adding up to 1")
        c = self.committed
        if c is not None:
            for name in ("option", "established"):
                value = getattr(c, name)
                if value is not None and value not in labels:
                    raise ValueError(f"committed.{name}: {value!r} is not an option{did_you_mean(value, labels)}; the "
                                     f"options: {', '.join(labels)}")
            if self.committed_option == self.established_option and c.start == "convention":
                raise ValueError("committed.option: the committed agents must push another option than the "
                                 f"established convention ({self.established_option}); name another")
        return self

    # --- what the run reads ----------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        """The options' labels, in their given order."""
        if self.scenario is not None:
            from louder.scenarios import load_scenario

            return list(load_scenario(self.scenario).labels)
        if isinstance(self.options, int):
            return list(LETTERS[: self.options])
        return list(self.options)

    @property
    def size_list(self) -> list[int]:
        """The population sizes the run plays: ``sizes``, else ``agents``."""
        return list(self.sizes) if self.sizes else [self.agents]

    @property
    def fractions(self) -> list[float]:
        """The committed fractions p the run plays (0 alone without a committed minority)."""
        return list(self.committed.fraction) if self.committed else [0.0]

    @property
    def committed_option(self) -> str | None:
        if self.committed is None:
            return None
        return self.committed.option or self.labels[1]

    @property
    def established_option(self) -> str | None:
        """The convention prepared memories start from (``committed.start: convention``), else None."""
        if self.committed is None or self.committed.start != "convention":
            return None
        return self.committed.established or self.labels[0]
