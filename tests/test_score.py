"""Score mode: choice probabilities from log-probs, through the OpenAI path (local server)."""

import json
import math

import pytest

from louder.config import build_config
from louder.errors import LouderError
from louder.llm.answers import choice_probabilities
from louder.llm.base import Reply
from louder.llm.openai_wire import first_token_logprobs
from louder.simulation import run_experiment


def test_choice_probabilities_normalise_and_report_mass():
    r = Reply(text=json.dumps({"logprobs": {"A": math.log(0.3), "B": math.log(0.1)}}))
    s = choice_probabilities(r, ["A", "B"])
    assert s.status == "valid" and s.probs["A"] == pytest.approx(0.75) and s.mass == pytest.approx(0.4)
    assert choice_probabilities(Reply(text=json.dumps({"logprobs": {"A": None, "B": None}})), ["A", "B"]).status \
        == "invalid"
    assert choice_probabilities(Reply(text="garbage"), ["A", "B"]).status == "invalid"
    assert choice_probabilities(Reply(error="boom"), ["A", "B"]).status == "error"
    one = choice_probabilities(Reply(text=json.dumps({"logprobs": {"A": -1.0, "B": None}})), ["A", "B"])
    assert one.probs == {"A": 1.0, "B": 0.0}


def test_first_token_logprobs_handles_straddling_and_ambiguous_tokens():
    toks = [{"token": '{"decision": "Ev', "logprob": -0.2,
             "top_logprobs": [{"token": '{"decision": "Ev', "logprob": -0.2},
                              {"token": '{"decision": "S', "logprob": -1.0},  # prefix of two labels: skipped
                              {"token": '{"decision": "Pl', "logprob": -3.0},
                              {"token": '{"answer', "logprob": -4.0}]},
            {"token": 'acuate"}', "logprob": 0.0}]
    lp = first_token_logprobs(toks, '{\n"decision": "', ["Evacuate", "Stay", "Share", "Plumber"])
    assert lp["Evacuate"] == pytest.approx(-0.2) and lp["Plumber"] == pytest.approx(-3.0)
    assert lp["Stay"] is None and lp["Share"] is None
    assert first_token_logprobs([{"token": "no json", "logprob": 0}], '{"decision": "', ["A"]) is None


def test_score_mode_through_openai_path(fake_server, tmp_path):
    cfg = build_config(dict(models=[f"openai:fake@{fake_server.url}"], scenarios=["emergency_response"],
                            groups=["gender_identity"], agents=4, decision_mode="score"))
    res = run_experiment(cfg, tmp_path)
    d = res.decisions
    assert (d["status"] == "valid").all() and d["rationale"].isna().all()
    # The fake server gives the chosen label -0.1 and the other -2.0: p = e^-0.1 / (e^-0.1 + e^-2).
    p_top = math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.0))
    for _, r in d.iterrows():
        expected = p_top if r["decision"] == "Evacuate" else 1 - p_top
        assert r["p_target"] == pytest.approx(expected)
        assert r["choice_mass"] == pytest.approx(math.exp(-0.1) + math.exp(-2.0))
    scored = [b["body"] for b in fake_server.requests if b["body"].get("logprobs")]
    assert len(scored) == 12 and all(b["top_logprobs"] == 20 and b["temperature"] == 0 for b in scored)
    assert res.manifest["low_mass_rows"] == 0  # mass ≥ 0.99 here; the embedded test sees low mass
    again = run_experiment(cfg, tmp_path)
    assert again.manifest["model_calls"] == 0


def test_draw_pick_is_seeded(fake_server, tmp_path):
    base = dict(models=[f"openai:fake@{fake_server.url}"], scenarios=["emergency_response"],
                groups=["gender_identity"], agents=6, decision_mode="score", score_pick="draw")
    a = run_experiment(build_config(base), tmp_path / "a").decisions
    b = run_experiment(build_config(base), tmp_path / "b").decisions
    assert a["decision"].tolist() == b["decision"].tolist()


def test_score_mode_refuses_backends_without_logprobs(tmp_path):
    cfg = build_config(dict(models=["ollama:llama3.1@http://127.0.0.1:9"], decision_mode="score", agents=1,
                            scenarios=["emergency_response"], groups=["gender_identity"]))
    with pytest.raises(LouderError, match="decision_mode: score"):
        run_experiment(cfg, tmp_path)
