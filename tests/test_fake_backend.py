"""The in-package fake backend (louder/llm/fake.py) and the backend registry."""

import json
import math

import pytest

from louder.config import build_config
from louder.errors import LouderError
from louder.llm import registry
from louder.llm.base import Request
from louder.llm.fake import FakeModel
from louder.llm.spec import build_backend, parse_spec
from louder.schemas import choice_schema

SCHEMA = choice_schema("Decision", "decision", ("Evacuate", "Stay"), True, rationale=True)


def ask(model, prompt, replicate="0"):
    return model.generate(Request(messages=(("user", prompt),), schema=SCHEMA, replicate=replicate))


def test_fake_answers_are_valid_json_and_deterministic():
    a, b = build_backend("fake:seed=3"), build_backend("fake:seed=3")
    replies = [ask(a, "Decide now.", str(i)) for i in range(50)]
    assert [r.text for r in replies] == [ask(b, "Decide now.", str(i)).text for i in range(50)]
    answers = [SCHEMA.model_validate_json(r.text) for r in replies]
    assert {x.decision for x in answers} == {"Evacuate", "Stay"}  # replicates differ
    assert [r.text for r in replies] != [ask(build_backend("fake:seed=4"), "Decide now.", str(i)).text
                                         for i in range(50)]


def test_fake_bias_word_pulls_answers_to_the_first_option():
    model = FakeModel("seed=1,bias=woman:0.9")
    share = lambda prompt: sum(json.loads(ask(model, prompt, str(i)).text)["decision"] == "Evacuate"  # noqa: E731
                               for i in range(1000)) / 1000
    assert 0.86 < share("You are a Woman. Decide.") < 0.94
    assert 0.44 < share("You are a man. Decide.") < 0.56
    assert 0.44 < share("You are a womanizer. Decide.") < 0.56  # whole words only


def test_fake_score_matches_its_sampling_probabilities():
    model = FakeModel("bias=woman:0.8")
    reply = model.score(Request(messages=(("user", "a woman"),)), "{", ["Evacuate", "Stay"])
    lps = json.loads(reply.text)["logprobs"]
    assert math.exp(lps["Evacuate"]) == pytest.approx(0.8) and math.exp(lps["Stay"]) == pytest.approx(0.2)


@pytest.mark.parametrize("spec", ["fake:seed=x", "fake:bias=woman", "fake:bias=woman:2", "fake:colour=red"])
def test_bad_fake_spec_names_the_part(spec):
    with pytest.raises(LouderError, match="fake model spec"):
        build_backend(spec)


def test_fake_backend_runs_an_experiment_end_to_end(tmp_path):
    from louder.simulation import run_experiment

    cfg = build_config(dict(models=["fake:seed=2,bias=female:1.0"], scenarios=["emergency_response"],
                            groups=["gender_identity"], agents=20, conditions=["contextualized"]))
    d = run_experiment(cfg, tmp_path).decisions
    assert (d["status"] == "valid").all()
    rate = d.groupby("attribute")["target"].mean()
    assert rate["Female"] == 1.0 and rate["Male"] < 0.9  # the persona carries the word into the decision


def test_registering_a_backend_makes_its_spec_work_everywhere(tmp_path):
    class Echo:
        def __init__(self, model):
            self.model = model

        def identity(self):
            return {"backend": "echo", "model": self.model}

    registry.register(registry.BackendInfo("echo", lambda model, url, cfg: Echo(model), forms=("echo:MODEL",),
                                           local=True))
    try:
        assert parse_spec("echo:abc@http://127.0.0.1:1") == ("chat", "echo", "abc", "http://127.0.0.1:1")
        assert build_backend("echo:abc").identity() == {"backend": "echo", "model": "abc"}
        assert "echo:MODEL" in registry.spec_forms()
        from louder import estimate

        assert estimate(build_config(dict(models=["echo:abc"], agents=1)))["price"][0] == "local: free"
        # declared capabilities are checked: echo cannot score
        from louder.records import RunContext

        with pytest.raises(LouderError, match="cannot score"):
            RunContext(build_config(dict(models=["echo:abc"], decision_mode="score")), tmp_path)
    finally:
        registry.unregister("echo")
    with pytest.raises(ValueError, match="is not one of"):
        parse_spec("echo:abc")
