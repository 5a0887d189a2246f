"""Persona generation (Appendix B.1): the LLM writes a name and persona from one attribute.

Conditions (section 4.3): ``contextualized`` (with the scenario's B.2 context statement),
``non_contextualized`` (the same prompt without it) and ``no_persona`` (the model writes only a
name; the attribute term stands in for the persona).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from louder.llm.answers import is_refusal, parse_json_object
from louder.session import ModelSession, Outcome
from louder.scenarios import Scenario


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


@dataclass
class Persona:
    name: str | None
    persona: str | None
    status: str  # valid | invalid | refused | error
    outcome: Outcome
    prompt: str


def generate_persona(session: ModelSession, scenario: Scenario, condition: str, attribute: str,
                     seed: int, replicate: str) -> Persona:
    cfg, prompts = session.config, session.prompts
    prompt = prompts.persona(attribute, condition, scenario, cfg.paper_faithful, "chat")
    schema = NameOut if condition == "no_persona" else PersonaOut
    completion_prompt = None
    if session.api == "completion" and condition != "no_persona":
        completion_prompt = prompts.persona(attribute, condition, scenario, cfg.paper_faithful, "completion")
    out = session.ask(prompt, schema, cfg.persona, seed, replicate, completion_prompt=completion_prompt,
                      completion_params=cfg.completion_persona, extraction_prompt=prompts.persona_extraction)
    shown = completion_prompt or prompt
    if out.reply.error:
        return Persona(None, None, "error", out, shown)
    if out.reply.refusal:
        return Persona(None, None, "refused", out, shown)
    obj = parse_json_object(out.text) or {}
    name = obj.get("name")
    text = prompts.no_persona_text(attribute) if condition == "no_persona" else obj.get("persona")
    if isinstance(name, str) and name.strip() and isinstance(text, str) and text.strip():
        return Persona(name.strip(), text.strip(), "valid", out, shown)
    status = "refused" if is_refusal(out.raw or out.text, prompts.refusal_markers) else "invalid"
    return Persona(None, None, status, out, shown)
