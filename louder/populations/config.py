"""The ``population:`` section of the config (issue 31.4): agents drawn from a population file, their
counterfactual twins, and archetype mode (docs/populations.md, docs/scale-out.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from louder.errors import LouderError, did_you_mean
from louder.sections import Section


class PopulationConfig(Section):
    """``population:`` — a population run: agents drawn from ``file`` carry one attribute of every group
    (``simulation.agents`` is then the number drawn). A plain value (``population: us_adults``) is
    ``file``."""

    SHORT = "file"

    file: str = Field(description="population file (YAML path) or built-in id (louder/data/populations/)")
    twins: bool = Field(False, description="counterfactual twins: each persona re-expressed for every other "
                        "attribute of its group, only the attribute changed")
    twin_groups: list[str] | None = Field(None, description="twins: the population's groups whose attributes get "
                                          "twins (default: every group); each twin is a name call (groups that "
                                          "rename) and a decision per variant")
    twin_rewriter: str | None = Field(None, description="twins of groups without a word list in twins.yaml: the "
                                      "chat model spec that rewrites the persona (default: the model under test)")
    mode: Literal["agents", "archetype"] = Field(
        "agents", description="agents: one persona and decision per agent; archetype: one scored call per "
        "population cell × neighbour-share bucket × replicate, agents draw from its probability")
    replicates: int = Field(5, ge=1, le=1000, description="archetype mode: replicates per archetype (K)")
    buckets: int | list[float] = Field(8, description="archetype mode: neighbour-share buckets — a count "
                                       "(0, 1/n, …, 1) or the list of bucket centres")
    shards: int | None = Field(None, ge=1, le=4096, description="archetype mode with executor: ray — the Ray "
                               "workers the agents are split over, by population cell (default: the cluster's "
                               "CPUs); docs/scale-out.md")

    @field_validator("file")
    @classmethod
    def _known_population(cls, v: str) -> str:
        from louder.populations import load_population

        try:
            load_population(v)
        except LouderError as e:  # as a ValueError, pydantic names the field
            raise ValueError(str(e)) from None
        return v

    @field_validator("twin_rewriter")
    @classmethod
    def _rewriter_spec(cls, v):
        if v is None:
            return v
        from louder.llm.spec import parse_spec

        if parse_spec(v)[0] != "chat":  # ValueError: pydantic names the field
            raise ValueError(f"{v!r} is a completion model; a rewrite needs a chat model spec (drop completion:)")
        return v

    @model_validator(mode="after")
    def _twin_groups_of_the_population(self) -> PopulationConfig:
        if self.twin_groups is not None:
            from louder.populations import load_population

            ids = load_population(self.file).group_ids
            unknown = [g for g in self.twin_groups if g not in ids]
            if unknown or not self.twin_groups:
                raise ValueError(f"twin_groups: {', '.join(unknown) or '(empty)'} not a group of population "
                                 f"{self.file}{did_you_mean(unknown[0], ids) if unknown else ''}; its groups are "
                                 f"{', '.join(ids)}")
        return self
