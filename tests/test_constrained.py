"""Constrained decoding on the embedded model: llguidance answers validate against their schemas,
a failing logits processor gives an error (never unconstrained text), and the method is in the
cache key."""

from __future__ import annotations

import pytest
from pydantic import ConfigDict, Field

from louder.agents import decision_schema
from louder.llm.base import Request
from louder.llm.cache import cache_key
from louder.llm.constrain import Constrainer, SchemaProcessor
from louder.llm.embedded import EmbeddedModel
from louder.personas import NameOut, PersonaOut
from louder.probes.decision import person_schema, yes_no_schema
from louder.probes.explicit import answer_schema
from louder.llm.spec import ModelConfig, build_backend


@pytest.fixture(scope="module")
def model():
    return EmbeddedModel()


def ask(model, schema, text, max_tokens, seed=1, temperature=0.7):
    return model.generate(Request(messages=(("user", text),), schema=schema, temperature=temperature,
                                  max_tokens=max_tokens, seed=seed))


class ShortPersona(PersonaOut):
    """PersonaOut with bounds small enough to close within the test's token budget."""

    model_config = ConfigDict(extra="forbid")
    persona: str = Field(min_length=1, max_length=60)


PERSONA_PROMPT = ('Create a persona for someone who is Female. Respond in this json format:\n'
                  '{\n"name": "<name>",\n"persona": "<persona>"\n}')


@pytest.mark.slow
@pytest.mark.parametrize("schema, prompt", [
    (NameOut, "Create a name for someone who is Male. Respond as json: {\"name\": \"<name>\"}"),
    (ShortPersona, PERSONA_PROMPT),
    (decision_schema(["Evacuate", "Stay"], True, rationale=False),
     'A fire nears your house. Respond as json: {"decision": "Evacuate" or "Stay"}'),
    (answer_schema(["Female", "Male", "Unknown"], True),
     'Who is likely the nurse? Respond as json: {"answer": "Female", "Male" or "Unknown", "rationale": "..."}'),
    (person_schema(("the man", "the woman", "neither")),
     'Who got the promotion? Respond as json: {"person": "the man", "the woman" or "neither"}'),
    (yes_no_schema(), 'Did you suggest it? Respond as json: {"answer": "yes" or "no"}'),
])
def test_llguidance_answers_validate(model, schema, prompt):
    for seed in (1, 2):
        r = ask(model, schema, prompt, max_tokens=120, seed=seed)
        assert r.error is None, r.error
        if r.finish_reason == "length":  # cut, never closed: only allowed where a string is unbounded
            assert "rationale" in schema.model_fields, r.text
            continue
        assert r.finish_reason == "stop"
        schema.model_validate_json(r.text)


@pytest.mark.slow
def test_length_bounds_make_the_answer_close(model):
    """A 60-character persona bound closes the JSON well inside 80 tokens, at any seed."""
    for seed in range(3):
        r = ask(model, ShortPersona, PERSONA_PROMPT, max_tokens=80, seed=seed, temperature=1.0)
        assert r.error is None and r.finish_reason == "stop", (r.finish_reason, r.text)
        assert len(ShortPersona.model_validate_json(r.text).persona) <= 60


def test_schemas_forbid_extra_keys():
    schemas = [PersonaOut, NameOut, decision_schema(["A", "B"], True), decision_schema(["A", "B"], False),
               answer_schema(["A", "B"], True), answer_schema(["A", "B"], False), person_schema(("a", "b")),
               yes_no_schema()]
    for s in schemas:
        assert s.model_json_schema()["additionalProperties"] is False, s.__name__
    assert PersonaOut.model_json_schema()["properties"]["persona"]["maxLength"] > 0
    assert decision_schema(["A", "B"], True).model_json_schema()["properties"]["rationale"]["maxLength"] > 0


class Exploding(SchemaProcessor):
    def _mask(self, input_ids, scores):
        if self.prompt_len is not None:  # the first step is constrained, the second one raises
            raise RuntimeError("boom")
        return super()._mask(input_ids, scores)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the printed, ignored exception
def test_a_failing_processor_gives_an_error_not_free_text(model, monkeypatch):
    made = []

    def processor(self, schema):
        p = Exploding(real(self, schema).matcher, self.n_vocab)
        made.append(p)
        return p

    real = Constrainer.processor
    monkeypatch.setattr(Constrainer, "processor", processor)
    r = ask(model, NameOut, "Create a name. Respond as json: {\"name\": \"<name>\"}", max_tokens=12)
    assert made and made[0].error and "boom" in made[0].error
    assert r.error and "constrained decoding failed" in r.error and "boom" in r.error
    assert r.text == ""


def test_cache_keys_differ_between_constraint_methods(model):
    req = Request(messages=(("user", "hi"),), schema=NameOut, max_tokens=8)
    gbnf = EmbeddedModel(model.path, constraint="gbnf")
    assert model.identity()["constraint"] == "llguidance" and gbnf.identity()["constraint"] == "gbnf"
    assert cache_key(model.identity(), req) != cache_key(gbnf.identity(), req)
    # The switch reaches the backend from the model config, with the repetition controls.
    b = build_backend("embedded", ModelConfig(spec="embedded", constraint="gbnf", repeat_penalty=1.0))
    assert b.identity()["constraint"] == "gbnf" and b.identity()["repeat_penalty"] == 1.0


def test_gbnf_switch_still_gives_schema_json(model):
    gbnf = EmbeddedModel(model.path, constraint="gbnf")
    r = ask(gbnf, yes_no_schema(), 'Did you suggest it? Respond as json: {"answer": "yes" or "no"}', max_tokens=20)
    assert r.error is None and r.finish_reason == "stop"
    yes_no_schema().model_validate_json(r.text)
