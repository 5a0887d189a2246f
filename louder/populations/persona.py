"""Intersectional persona wording: every attribute of an agent in one phrase, from
``louder/data/prompts.yaml`` (``intersectional``) and the population file's ``phrases``."""

from __future__ import annotations

from collections.abc import Mapping

from louder.prompts import Prompts, render


def persona_phrases(population_phrases: Mapping[str, Mapping[str, str]] | None = None,
                    prompts: Prompts | None = None) -> dict[str, dict[str, str]]:
    """Group → attribute → phrase: the defaults of prompts.yaml overridden by the population file's."""
    doc = (prompts or Prompts()).doc["intersectional"]
    out = {g: dict(t) for g, t in doc["phrases"].items()}
    for g, t in (population_phrases or {}).items():
        out.setdefault(g, {}).update(t)
    return out


def describe_agent(attributes: Mapping[str, str], phrases: Mapping[str, Mapping[str, str]],
                   template: str, sep: str = ", ", last: str = " and ") -> str:
    """The agent's demographic in words, e.g. "a person who is 65 or older, a woman, Black and
    politically moderate". ``attributes`` maps group id → attribute in the order to name them; an
    attribute without a phrase is named by its label."""
    words = [phrases.get(g, {}).get(a, a) for g, a in attributes.items()]
    listed = words[0] if len(words) == 1 else sep.join(words[:-1]) + last + words[-1]
    return render(template, attributes=listed)


def agent_description(attributes: Mapping[str, str], population_phrases: Mapping | None = None,
                      prompts: Prompts | None = None) -> str:
    """``describe_agent`` with the template and phrases of prompts.yaml and the population file."""
    prompts = prompts or Prompts()
    doc = prompts.doc["intersectional"]
    return describe_agent(attributes, persona_phrases(population_phrases, prompts), doc["template"],
                          doc["list_separator"], doc["last_separator"])
