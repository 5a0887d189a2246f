"""Prompt interventions (issue 33; docs/how-to/test-a-mitigation.md): a text the decision call
carries — a statement that discrimination is illegal, a request to ignore demographics — run as an
experiment dimension (``louder.dimensions``): the same agents, with the same personas, decide once
without it (``none``) and once under each intervention, so a change in the disparity is read on
paired answers (``louder.analysis.stats.interventions.intervention_changes``).

``simulation.interventions`` lists ``none``, ids of the built-ins (``louder/data/interventions.yaml``,
each with its published source) and paths of YAML files of one intervention each::

    id: fairness
    text: Please decide with fairness to everyone.
    where: before_decision     # or system

``before_decision`` puts the text after the situation and before the choices; ``system`` sends it as
a system message before the prompt (before the completion prompt, as a paragraph, for completion
models)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from louder.datafiles import load_cached, load_yaml_model
from louder.errors import LouderError

NONE = "none"  # the level without an intervention: the paper's prompt
WHERE = ("system", "before_decision")


class Intervention(BaseModel):
    """One intervention: its ``id`` (the ``intervention`` column of decisions.parquet), its ``text`` and
    ``where`` it goes; ``source``: where a built-in's text was published."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=60,
                    description="a short name of letters, digits, _ . - (the intervention column's value)")
    text: str = Field(min_length=1, description="what the decision call carries")
    where: Literal["system", "before_decision"] = Field(
        description="system: a system message before the prompt; before_decision: after the situation, before the "
        "choices")
    source: str | None = Field(None, description="where the text was published (built-ins)")


class _Builtins(BaseModel):
    model_config = ConfigDict(extra="forbid")
    interventions: list[Intervention]


@cache
def builtins() -> dict[str, Intervention]:
    """The built-in interventions by id (``louder/data/interventions.yaml``)."""
    path = resources.files("louder") / "data" / "interventions.yaml"
    return {i.id: i for i in load_yaml_model(_Builtins, path, "interventions").interventions}


FORMAT = "an intervention file gives `id: NAME`, `text: …` and `where: system` or `where: before_decision`"


def _parse(path: str) -> Intervention:
    try:
        return load_cached(Intervention, Path(path), "intervention")  # an edited file is read again
    except LouderError as e:
        if "cannot be read" in str(e):
            raise
        raise LouderError(f"{e} — {FORMAT}") from None


def load_intervention(ref: str) -> Intervention | None:
    """``none`` (None: no intervention), a built-in by id, or the intervention file at the path ``ref``.
    Raises LouderError naming the problem and the fix."""
    if ref == NONE:
        return None
    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        iv = _parse(ref)
        if iv.id == NONE or iv.id in builtins():
            raise LouderError(f"intervention file {ref}: id {iv.id!r} is "
                              f"{'the run without an intervention' if iv.id == NONE else 'a built-in'}; give the file "
                              "an id of its own")
        return iv
    if ref in builtins():
        return builtins()[ref]
    import difflib

    hits = difflib.get_close_matches(ref, list(builtins()), n=1, cutoff=0.6)
    raise LouderError(f"unknown intervention {ref!r}{f'; did you mean {hits[0]}?' if hits else ''} — built-in "
                      f"interventions: {', '.join(builtins())} (or `none`, or the path of a .yaml file with id, text "
                      "and where)")


def by_id(config) -> dict[str, Intervention | None]:
    """The run's interventions by id, in the order of ``simulation.interventions``."""
    out: dict[str, Intervention | None] = {}
    for ref in config.simulation.interventions:
        iv = load_intervention(ref)
        out[NONE if iv is None else iv.id] = iv
    return out


def check(config) -> None:
    """Every intervention loads, and no two share an id (a ValueError naming the field)."""
    seen: dict[str, str] = {}
    for ref in config.simulation.interventions:
        try:
            iv = load_intervention(ref)
        except LouderError as e:
            raise ValueError(f"simulation.interventions: {e}") from None
        key = NONE if iv is None else iv.id
        if key in seen:
            raise ValueError(f"simulation.interventions: {seen[key]!r} and {ref!r} both have the id {key!r}; list "
                             "each intervention once (give a file an id of its own)")
        seen[key] = ref
