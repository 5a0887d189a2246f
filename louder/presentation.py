"""How a scenario is *presented* to an agent (issue 25, docs/robustness.md): the order its choices
are listed in, the wording of its text, and how the agent's attribute is signalled (stated in the
persona prompt, or only through a name). The experiment dimensions that vary them across a run are
declared in ``louder.dimensions``.

Everything here is a pure function of the config and the agent's identity, so resume and a larger N
reproduce every agent's presentation exactly. With the defaults (``as_written``, the scenario's own
text, ``stated``) nothing changes: same prompts, seeds and cache keys as without this module.
"""

from __future__ import annotations

import random
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from louder.datafiles import load_yaml_model
from louder.errors import LouderError, did_you_mean
from louder.llm.base import stable_seed
from louder.scenarios import Scenario

ORDERS = ("as_written", "reversed", "balanced", "shuffled")
ALL = "all"  # simulation.wordings: [all] — the scenario's own text and every wording of its file
NAMES_DIR = resources.files("louder") / "data" / "names"
DEFAULT_NAMES = "bertrand_mullainathan_2004"


# --- choice order -------------------------------------------------------------------------------

def shown_order(labels: Sequence[str], mode: str, replicate: int, seed: int) -> tuple[str, ...]:
    """The order an agent sees ``labels`` in.

    as_written: the file's order. reversed: the reverse. balanced: the k cyclic rotations, rotation
    ``replicate % k`` (labels[r:] + labels[:r]), so each label stands in each position for exactly
    1/k of an attribute's agents when N is a multiple of k (k = 2: as written, reversed, alternating);
    assigned by the replicate index, so resume and a larger N keep every agent's order. shuffled: a
    permutation drawn from the agent's own seed."""
    labels = tuple(labels)
    if mode == "as_written":
        return labels
    if mode == "reversed":
        return labels[::-1]
    if mode == "balanced":
        r = replicate % len(labels)
        return labels[r:] + labels[:r]
    if mode == "shuffled":
        out = list(labels)
        random.Random(stable_seed(seed, "choice_order")).shuffle(out)
        return tuple(out)
    raise ValueError(f"choice_order must be one of {', '.join(ORDERS)}, got {mode!r}")


def ordered(scenario: Scenario, order: Sequence[str]) -> Scenario:
    """``scenario`` with its choices listed in ``order`` (every label once): the "Please decide:" block,
    the choice list of the JSON format, the schema's enum and score mode's labels all follow it."""
    if tuple(order) == tuple(scenario.labels):
        return scenario
    by_label = {c.label: c for c in scenario.choices}
    return scenario.model_copy(update={"choices": [by_label[x] for x in order]})


def joined(order: Sequence[str]) -> str:
    """The ``choice_order`` column: the labels as shown, joined with ``|``."""
    return "|".join(order)


# --- wordings -----------------------------------------------------------------------------------

def wordings_for(simulation: Any, scenario: Scenario) -> list[str]:
    """The wordings a run says ``scenario`` in: ``simulation.wordings`` (of the config's ``simulation``
    section) with ``all`` expanded to the scenario's own text and every wording of its file."""
    out: list[str] = []
    for w in simulation.wordings:
        for x in (scenario.wording_ids if w == ALL else [w]):
            if x not in out:
                out.append(x)
    return out


# --- names (the audit-study signal) -------------------------------------------------------------

class NameSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    first: list[str] = Field(min_length=1)
    last: list[str] = []  # none: the name is the first name alone


class NameLists(BaseModel):
    """A names file: first (and last) names per attribute, with where they come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    source: str = Field(min_length=1)  # the publication (authors, year, title, venue)
    taken: str = Field(min_length=1)  # what was taken from it (table, which names), and anything left out
    verification: str = ""  # how the transcription was checked
    attributes: dict[str, NameSet] = Field(min_length=1)

    @field_validator("attributes")
    @classmethod
    def _distinct(cls, v: dict[str, NameSet]) -> dict[str, NameSet]:
        for a, s in v.items():
            for part in ("first", "last"):
                names = getattr(s, part)
                if len(set(names)) != len(names) or any(not n.strip() for n in names):
                    raise ValueError(f"{a}.{part}: names must be distinct and non-empty")
        return v

    def missing(self, attributes: Sequence[str]) -> list[str]:
        return [a for a in attributes if a not in self.attributes]


def builtin_names() -> list[str]:
    return sorted(p.name[:-5] for p in NAMES_DIR.iterdir() if p.name.endswith(".yaml"))


@cache
def _load_names(path: Any) -> NameLists:
    return load_yaml_model(NameLists, path, "names")


def load_names(ref: str | None) -> NameLists:
    """A names file by path, or a built-in one by id (None: the default, Bertrand & Mullainathan 2004)."""
    ref = ref or DEFAULT_NAMES
    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        return _load_names(Path(ref))
    if ref in builtin_names():
        return _load_names(NAMES_DIR / f"{ref}.yaml")
    raise LouderError(f"unknown names file {ref!r}{did_you_mean(ref, builtin_names())}; built-in: "
                      f"{', '.join(builtin_names())} (or give the path of a "
                      "names YAML file, format in docs/robustness.md)")


def check_names(names: NameLists, group_id: str, attributes: Sequence[str], ref: str | None) -> None:
    """One LouderError when a group has an attribute without a name list."""
    missing = names.missing(attributes)
    if missing:
        raise LouderError(f"simulation.signal: names: group {group_id} has no name list for {', '.join(missing)} "
                          f"in names file {ref or DEFAULT_NAMES}; give `simulation.names: FILE` (a YAML names file "
                          f"with first and last names for every attribute of {group_id}, format in "
                          "docs/robustness.md) or use signal: stated")


def covered_groups(names: NameLists, groups: Sequence[Any]) -> list[Any]:
    """The groups (objects with ``attributes``) whose every attribute has a name list in ``names``: the
    groups a name can signal in a population run."""
    return [g for g in groups if not names.missing(g.attributes)]


def name_set(names: NameLists, attributes: Sequence[str]) -> NameSet:
    """The names of an agent with ``attributes`` (each with a list in ``names``): the first (and last)
    names on every one of their lists, in the first list's order — one attribute: its own list; a
    population agent both White and Female: the White women's names."""
    sets = [names.attributes[a] for a in attributes]
    first = [n for n in sets[0].first if all(n in s.first for s in sets[1:])]
    last = [n for n in sets[0].last if all(n in s.last for s in sets[1:])]
    return NameSet.model_construct(first=first, last=last)


def draw_name(names: NameSet, seed: int) -> str:
    """A first name (and a last name when the list has them) drawn from the agent's own seed."""
    rng = random.Random(stable_seed(seed, "name"))
    first = rng.choice(names.first)
    return f"{first} {rng.choice(names.last)}" if names.last else first
