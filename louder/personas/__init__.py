"""Persona generation (Appendix B.1): the LLM writes a name and persona from one attribute.

Conditions (section 4.3): ``contextualized`` (with the scenario's B.2 context statement),
``non_contextualized`` (the same prompt without it) and ``no_persona`` (the model writes only a
name; the attribute term stands in for the persona).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from louder.llm.answers import THINKING_TRUNCATED, is_refusal, parse_json_object
from louder.llm.base import Reply
from louder.prompts import Prompts
from louder.session import ModelSession, Outcome
from louder.scenarios import Scenario
from louder.text_checks import echoes_placeholder, text_problem  # noqa: F401 (echoes_placeholder: for callers)


# Length bounds (characters) make constrained decoding close the JSON: without them a small model
# can repeat itself until max_tokens (400 persona tokens ≈ 1,600 characters) cuts the answer.
# extra="forbid" keeps it from inventing keys (JSON Schema allows extra keys by default).
NAME_MAX = 60
PERSONA_MAX = 1000


class PersonaOut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=NAME_MAX)
    persona: str = Field(min_length=1, max_length=PERSONA_MAX)


class NameOut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=NAME_MAX)


class PersonaTextOut(BaseModel):
    """A persona written for a given name (the `names` signal): the name is not asked for."""

    model_config = ConfigDict(extra="forbid")
    persona: str = Field(min_length=1, max_length=PERSONA_MAX)


class RewriteOut(BaseModel):
    """A twin's persona rewritten by a model (groups without a word list)."""

    model_config = ConfigDict(extra="forbid")
    persona: str = Field(min_length=1, max_length=PERSONA_MAX)


@dataclass
class Persona:
    name: str | None
    persona: str | None
    status: str  # valid | invalid | refused | error
    outcome: Outcome
    prompt: str
    reason: str | None = None  # why an answer is invalid ("placeholder", "too short: …")


def generate_persona(session: ModelSession, scenario: Scenario, condition: str, attribute: str,
                     seed: int, replicate: str) -> Persona:
    cfg, prompts = session.config, session.prompts
    prompt = prompts.persona(attribute, condition, scenario, cfg.paper_faithful, "chat")
    schema = NameOut if condition == "no_persona" else PersonaOut
    completion_prompt = None
    if session.api == "completion" and condition != "no_persona":
        completion_prompt = prompts.persona(attribute, condition, scenario, cfg.paper_faithful, "completion")
    out = session.ask(prompt, schema, cfg.simulation.persona, seed, replicate, completion_prompt=completion_prompt,
                      completion_params=cfg.simulation.completion_persona, extraction_prompt=prompts.persona_extraction)
    fixed = prompts.no_persona_text(attribute) if condition == "no_persona" else None
    return _persona(out, completion_prompt or prompt, prompts, fixed)


def generate_named_persona(session: ModelSession, scenario: Scenario, condition: str, name: str, seed: int,
                           replicate: str) -> Persona:
    """The `names` signal (docs/robustness.md): a persona written for ``name`` by a prompt that never
    states the attribute; ``name`` is kept. Under no_persona no call is made: the persona is the
    template's text for the name."""
    prompts = session.prompts
    if condition == "no_persona":
        return Persona(name, prompts.no_persona_named_text(name), "valid",
                       Outcome("", Reply(text="", attempts=0), attempts=0), "")
    prompt = prompts.persona_named(name, condition, scenario, session.config.paper_faithful)
    out = session.ask_chat(session.client, prompt, PersonaTextOut, session.config.simulation.persona, seed, replicate)
    p = _persona(out, prompt, prompts, None, name_field=False)
    return Persona(name, p.persona, p.status, p.outcome, p.prompt, p.reason) if p.status == "valid" else p


def rewrite_persona(session: ModelSession, prompt: str, name: str | None, seed: int, replicate: str) -> Persona:
    """A twin's persona rewritten by ``session.twin_rewriter`` (one chat call, the extraction's
    temperature and length: an edit, not a creation), checked like a written persona; ``name`` is kept."""
    out = session.ask_chat(session.twin_rewriter, prompt, RewriteOut, session.config.simulation.extraction, seed,
                           replicate)
    p = _persona(out, prompt, session.prompts, None, name_field=False)
    return Persona(name, p.persona, p.status, p.outcome, p.prompt, p.reason) if p.status == "valid" else p


def _persona(out: Outcome, shown: str, prompts: Prompts, fixed_text: str | None, name_field: bool = True) -> Persona:
    """The status of a persona answer: error, refused, invalid (with the reason) or valid.
    ``fixed_text``: the persona stands given (no_persona), only the name is read."""
    if out.reply.error:
        return Persona(None, None, "error", out, shown)
    if out.reply.refusal:
        return Persona(None, None, "refused", out, shown)
    if out.reply.thinking_truncated:  # a reasoning model that never finished thinking: no answer to read
        return Persona(None, None, "invalid", out, shown, THINKING_TRUNCATED)
    obj = parse_json_object(out.text)
    if obj is None:
        problem = "no JSON object in the answer"
    else:
        name = obj.get("name") if name_field else None
        text = fixed_text if fixed_text is not None else obj.get("persona")
        problem = (text_problem(name, "name", prompts) if name_field else None) or (
            None if fixed_text is not None else text_problem(text, "persona", prompts))
        if problem is None:
            return Persona(name.strip() if name_field else None, text.strip(), "valid", out, shown)
    # a persona that failed is never decided on: its agent carries this status (agents.decide)
    if is_refusal(out.raw or out.text, prompts.refusal_markers):
        return Persona(None, None, "refused", out, shown, problem)
    return Persona(None, None, "invalid", out, shown, problem)
