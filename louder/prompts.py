"""Prompt templates (``louder/data/prompts.yaml``) and their assembly with the paper's %name% slots."""

from __future__ import annotations

import copy
import re
from functools import cache, cached_property
from importlib import resources

import yaml

from louder.llm.base import stable_hash
from louder.scenarios import Group, Scenario


def render(template: str, **values: str) -> str:
    """Fill the template's ``%key%`` slots in one pass (values are never re-scanned for slots).

    A slot with no value is a bug in the caller, so it raises KeyError.
    """

    def fill(m: re.Match) -> str:
        if m.group(1) not in values:
            raise KeyError(f"template slot %{m.group(1)}% has no value")
        return values[m.group(1)]

    return re.sub(r"%([a-z0-9_]+)%", fill, template)


def or_list(labels: list[str]) -> str:
    """'"A" or "B"', '"A", "B" or "C"' — the paper's wording for the allowed answers."""
    q = [f'"{x}"' for x in labels]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " or " + q[-1]


@cache
def _package_templates() -> dict:
    """prompts.yaml parsed once per process: a population run makes a ``Prompts`` per drawn cell, and
    parsing it each time was most of an archetype run's time."""
    return yaml.safe_load((resources.files("louder") / "data" / "prompts.yaml").read_text("utf-8"))


class Prompts:
    """The templates, read once from package data (each instance has its own copy to change)."""

    def __init__(self, doc: dict | None = None):
        self.doc = doc or copy.deepcopy(_package_templates())

    @cached_property
    def refusal_markers(self) -> list[str]:
        return [m.casefold() for m in self.doc["refusal_markers"]]

    @property
    def score_prefix(self) -> str:
        return self.doc["score_prefix"]

    def hashes(self) -> dict:
        """sha256 of each template, for the manifest."""
        out = {}
        for section in ("persona", "action", "explicit", "twin", "persona_names", "beliefs", "grounded"):
            for name, text in self.doc.get(section, {}).items():
                if isinstance(text, str):  # templates, not the beliefs probe's phrase tables
                    out[f"{section}.{name}"] = stable_hash(text)[:16]
        return out

    # --- persona generation (Appendix B.1) ---
    def persona(self, attribute: str, condition: str, scenario: Scenario, paper_faithful: bool, api: str) -> str:
        p = self.doc["persona"]
        if condition == "no_persona":
            return render(p["name_only"], demographic_attribute=attribute)
        key = ("completion" if api == "completion" else "contextualized") if condition == "contextualized" else (
            "completion_non_contextualized" if api == "completion" else "non_contextualized"
        )
        return render(p[key], demographic_attribute=attribute, context=scenario.context(paper_faithful))

    def persona_named(self, name: str, condition: str, scenario: Scenario, paper_faithful: bool) -> str:
        """The `names` signal's persona prompt (chat): the agent's name, never its attribute."""
        p = self.doc["persona_names"]
        return render(p[condition], name=name, context=scenario.context(paper_faithful))

    def no_persona_named_text(self, name: str) -> str:
        return render(self.doc["persona_names"]["no_persona_text"], name=name)

    @property
    def persona_checks(self) -> dict:
        return self.doc["persona_checks"]

    @cached_property
    def placeholders(self) -> list[str]:
        """The ``<…>`` placeholder texts of the persona and twin templates (what a model may echo)."""
        texts = [t for section in ("persona", "twin", "persona_names") for t in self.doc.get(section, {}).values()]
        return list(dict.fromkeys(m for t in texts for m in re.findall(r"<([^<>]+)>", t)))

    def twin_rewrite(self, group: str, old: str, new: str, persona: str) -> str:
        return render(self.doc["twin"]["rewrite"], group=group, old=old, new=new, persona=persona)

    def persona_extraction(self, text: str) -> str:
        return render(self.doc["persona"]["extraction"], text=text)

    def no_persona_text(self, attribute: str) -> str:
        return render(self.doc["persona"]["no_persona_text"], demographic_attribute=attribute)

    # --- action generation (Appendix C) ---
    def action(self, name: str, persona: str, scenario: Scenario, api: str, neighbours: str | None = None) -> str:
        """``neighbours`` (rounds of influence): one sentence on what the agent's neighbours chose,
        put after the situation and before the choices; None gives the paper's prompt."""
        a = self.doc["action"]
        if api == "completion":
            question = scenario.completion.question if scenario.completion else render(
                self.doc["fallbacks"]["completion_question"], choices=or_list(scenario.labels))
            return render(a["completion"], name=name, persona=persona, scenario=scenario.prompt_text(neighbours),
                          completion_question=question)
        return render(a["chat"], name=name, persona=persona, scenario=scenario.prompt_text(neighbours),
                      choice_list=or_list(scenario.labels))

    def action_extraction(self, text: str, scenario: Scenario) -> str:
        task = scenario.completion.extraction_task if scenario.completion else render(
            self.doc["fallbacks"]["extraction_task"], choices=or_list(scenario.labels))
        return render(self.doc["action"]["extraction"], text=text.strip(), extraction_task=task,
                      choice_list=or_list(scenario.labels))

    # --- explicit question answering (Appendix D) ---
    def explicit(self, scenario: Scenario, group: Group, paper_faithful: bool, api: str,
                 order: list[str] | None = None, before_question: str | None = None) -> str:
        """``order``: the option labels in the order shown (``simulation.choice_order``); None: as written.
        Unknown stays last. ``before_question``: a text after the situation, before the question (a prompt
        intervention, louder.interventions); None: the paper's prompt."""
        if scenario.explicit is None or group.explicit is None:
            raise ValueError(f"scenario {scenario.id} or group {group.id} has no explicit-probe text")
        ex, q = scenario.explicit, group.explicit
        if order is not None:
            by_label = {o.label: o for o in q.options}
            q = q.model_copy(update={"options": [by_label[x] for x in order]})
        situation = ex.situation + "\n" + ex.decision_sentence
        if paper_faithful and ex.extra_as_printed:
            situation += "\n" + ex.extra_as_printed
        if before_question:
            situation += "\n" + before_question
        d = self.doc["explicit"]
        if api == "completion":
            return render(d["completion"], situation=situation, completion_question=q.completion_question or q.question,
                          completion_answer=q.completion_answer or self.doc["fallbacks"]["completion_answer"])
        options = "\n".join([o.label for o in q.options] + [q.unknown.description])
        answers = "/".join(f'"{x}"' for x in [o.label for o in q.options] + [q.unknown.label])
        return render(d["chat"], situation=situation, question=q.question, options=options, answer_list=answers)

    def explicit_extraction(self, text: str, group: Group) -> str:
        q = group.explicit
        answers = "/".join(f'"{x}"' for x in [o.label for o in q.options] + [q.unknown.label])
        return render(self.doc["explicit"]["extraction"], text=text.strip(),
                      extraction_task=q.extraction_task or self.doc["fallbacks"]["explicit_extraction_task"],
                      completion_answer=q.completion_answer or self.doc["fallbacks"]["completion_answer"],
                      answer_list=answers)

    # --- the beliefs probe (docs/voices.md; not from the paper) ---
    def belief_people(self, group: Group, attribute: str) -> str:
        """'women' for gender_identity × Female: ``beliefs.people``, else ``beliefs.fallback_people``."""
        b = self.doc["beliefs"]
        phrase = b["people"].get(group.id, {}).get(attribute)
        return phrase or render(b["fallback_people"], group=group.name.lower(), attribute=attribute)

    def belief(self, scenario: Scenario, group: Group, attribute: str, api: str) -> str:
        """The beliefs question for one attribute (``chat`` or ``completion``)."""
        situation, target = belief_text(scenario)
        return render(self.doc["beliefs"]["completion" if api == "completion" else "chat"], situation=situation,
                      people=self.belief_people(group, attribute), target=target)

    def belief_extraction(self, text: str, scenario: Scenario, group: Group, attribute: str) -> str:
        _, target = belief_text(scenario)
        return render(self.doc["beliefs"]["extraction"], text=text.strip(), target=target,
                      people=self.belief_people(group, attribute))


def belief_text(scenario: Scenario) -> tuple[str, str]:
    """(third-person situation, target phrase) of the beliefs probe; LouderError when the scenario
    file lacks them."""
    from louder.errors import LouderError

    if scenario.belief is None:
        raise LouderError(f"scenario {scenario.id}: no `belief.target` for the beliefs probe; add `belief: {{target: "
                          f"<what the person would choose to do, e.g. evacuate>}}` to the scenario file")
    situation = scenario.belief.situation or (scenario.explicit.situation if scenario.explicit else None)
    if situation is None:
        raise LouderError(f"scenario {scenario.id}: the beliefs probe needs a third-person situation; add "
                          "`belief.situation` (or `explicit.situation`) to the scenario file")
    return situation, scenario.belief.target
