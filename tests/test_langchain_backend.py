"""Issue 30.4: ``langchain:PROVIDER:MODEL[@URL]`` — against an OpenAI-compatible server on 127.0.0.1
from the CLI, and LangChain's fake chat models for other providers' message shapes (Anthropic thinking
blocks, Gemini thoughts). No provider is ever reached."""

from __future__ import annotations

import json
from typing import Literal

import pandas as pd
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from pydantic import BaseModel
from typer.testing import CliRunner

import louder
from fake_openai import FakeOpenAIServer
from louder.cli import app
from louder.errors import LouderError
from louder.llm.base import Request
from louder.llm.client import Client
from louder.llm.langchain_backend import LangChainModel, reasoning_kwargs
from louder.llm.spec import build_backend

ANSWER, WRONG = '{"decision": "Evacuate", "rationale": "safe"}', '{"decision": "Stay", "rationale": "no"}'


class Decision(BaseModel):
    decision: Literal["Evacuate", "Stay"]
    rationale: str


@pytest.mark.parametrize("reasoning", [None, "reasoning_content"])
def test_langchain_openai_against_a_local_server_from_the_cli(tmp_path, reasoning):
    server = FakeOpenAIServer(reasoning=reasoning)
    server.start()
    try:
        out = tmp_path / "run"
        r = CliRunner().invoke(app, ["run", "--out", str(out), "-m", f"langchain:openai:fake@{server.url}", "-n", "4",
                                     "-s", "emergency_response", "-g", "gender_identity"])
        assert r.exit_code == 0, r.output
        d = pd.read_parquet(out / "decisions.parquet")
        assert len(d) == 12 and (d["status"] == "valid").all()
        if reasoning:  # the server's reasoning field reaches the thinking column; the decision is the answer's
            assert d["thinking"].notna().all()
            assert not any(f'"decision": "{x}"' in t for x, t in zip(d["decision"], d["thinking"]))
        body = server.requests[-1]["body"]
        assert body["model"] == "fake" and "response_format" in body  # OpenAI's own structured output
        m = json.loads((out / "manifest.json").read_text())
        assert m["models"][f"langchain:openai:fake@{server.url}"]["identity"] == {
            "backend": "langchain", "provider": "openai", "model": "fake", "base_url": server.url}
    finally:
        server.stop()


def _fake(*messages):
    """A factory of LangChain's fake chat model answering ``messages`` in turn; records its kwargs."""
    made = []

    def factory(**kw):
        made.append(kw)
        return GenericFakeChatModel(messages=iter(messages))

    factory.made = made
    return factory


def _ask(model, reasoning=None):
    return Client(model, None).call(Request(messages=(("user", "decide"),), schema=Decision, reasoning=reasoning))


def test_anthropic_thinking_blocks_become_thinking():
    msg = AIMessage(content=[{"type": "thinking", "thinking": f"Maybe {WRONG}?", "signature": "sig"},
                             {"type": "text", "text": ANSWER}],
                    response_metadata={"model_provider": "anthropic", "stop_reason": "end_turn"},
                    usage_metadata={"input_tokens": 10, "output_tokens": 50, "total_tokens": 60,
                                    "output_token_details": {"reasoning": 38}})
    model = LangChainModel("anthropic", "claude-test", chat_factory=_fake(msg))
    reply = _ask(model)
    assert (reply.text, reply.thinking, reply.reasoning_tokens) == (ANSWER, f"Maybe {WRONG}?", 38)
    assert not reply.thinking_truncated
    # the same blocks without the provider named: the raw thinking block is still read as thinking
    raw = AIMessage(content=[{"type": "thinking", "thinking": WRONG, "signature": "s"},
                             {"type": "text", "text": ANSWER}])
    assert _ask(LangChainModel("anthropic", "c", chat_factory=_fake(raw))).text == ANSWER


def test_a_thinking_cut_at_max_tokens_by_anthropic_is_thinking_truncated():
    msg = AIMessage(content=[{"type": "thinking", "thinking": f"Perhaps {WRONG} or", "signature": "s"}],
                    response_metadata={"model_provider": "anthropic", "stop_reason": "max_tokens"})
    reply = _ask(LangChainModel("anthropic", "c", chat_factory=_fake(msg)))
    assert reply.thinking_truncated and reply.text == "" and reply.finish_reason == "length"


def test_gemini_thoughts_and_inline_tags_through_langchain():
    gem = AIMessage(content=[{"type": "thinking", "thinking": WRONG}, {"type": "text", "text": ANSWER}],
                    response_metadata={"model_provider": "google_genai"})
    assert _ask(LangChainModel("google_genai", "g", chat_factory=_fake(gem))).thinking == WRONG
    inline = AIMessage(content=f"<think>{WRONG}</think>{ANSWER}")
    reply = _ask(LangChainModel("mistralai", "m", chat_factory=_fake(inline)))
    assert (reply.text, reply.thinking) == (ANSWER, WRONG)


def test_reasoning_levels_become_each_providers_control():
    assert reasoning_kwargs("anthropic", "budget", "high", 200, 0.2) == {
        "max_tokens": 16584, "thinking": {"type": "enabled", "budget_tokens": 16384}}  # no temperature: it must be 1
    assert reasoning_kwargs("anthropic", "budget", "off", 200, 0.2)["thinking"] == {"type": "disabled"}
    assert reasoning_kwargs("google_genai", "budget", "low", 200, 0.2)["thinking_budget"] == 1024
    assert reasoning_kwargs("openai", "reasoning_effort", "low", 200, 0.2)["reasoning_effort"] == "low"
    assert reasoning_kwargs("openai", "reasoning_effort", None, 200, 0.2) == {"temperature": 0.2, "max_tokens": 200}
    factory = _fake(AIMessage(content=ANSWER), AIMessage(content=ANSWER))
    model = LangChainModel("anthropic", "c", chat_factory=factory)
    assert model.reasoning_control == "budget" and _ask(model, "medium").text == ANSWER
    assert factory.made[-1]["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert LangChainModel("mistralai", "m", chat_factory=_fake()).reasoning_control is None


def test_one_line_errors_keys_packages_forms_and_score_mode(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LouderError, match="needs the ANTHROPIC_API_KEY environment variable"):
        build_backend("langchain:anthropic:claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    try:
        import langchain_anthropic  # noqa: F401  (installed: the missing-package message cannot be shown)
    except ImportError:
        with pytest.raises(LouderError, match=r'pip install "louder\[anthropic\]"'):
            build_backend("langchain:anthropic:claude-sonnet-4-5")
    with pytest.raises(LouderError, match="langchain:PROVIDER:MODEL"):
        build_backend("langchain:gpt-4o")
    with pytest.raises(LouderError, match="cannot score"):
        louder.run({"models": ["langchain:openai:m@http://127.0.0.1:9/v1"], "simulation": {
            "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 1,
            "decision_mode": "score"}}, out=tmp_path / "s", progress=False)


def test_langchain_models_are_priced():
    est = louder.estimate({"models": ["langchain:anthropic:claude-sonnet-4-5", "langchain:openai:gpt-4o",
                                      "langchain:mistralai:unknown-model"],
                           "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"],
                                          "agents": 2}}).set_index("model")
    assert "3.0/15.0 USD" in by_price(est, "langchain:anthropic:claude-sonnet-4-5")
    assert "2.5/10.0 USD" in by_price(est, "langchain:openai:gpt-4o")
    assert by_price(est, "langchain:mistralai:unknown-model") == "not in louder/data/prices.yaml"


def by_price(est, model):
    return est.loc[model, "price"]
