"""Issue 30.1: thinking is not the answer — the split at the backend boundary, every shape a reasoning
model answers in, the truncated thinking, and what stays as it was (cache keys, old cache rows)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from louder.errors import LouderError
from louder.llm.answers import classify, classify_count
from louder.llm.base import Reply, Request, canonical_json
from louder.llm.cache import cache_key
from louder.llm.client import Client
from louder.llm.fake import FakeModel
from louder.llm.openai_wire import generation_reply, request_body
from louder.llm.thinking import (control_value, honoured, openai_params, separate, split_harmony, split_inline)

LABELS = ["Evacuate", "Stay"]
ANSWER = '{"decision": "Evacuate", "rationale": "safety first"}'
WRONG = '{"decision": "Stay", "rationale": "wrong"}'


class Decision(BaseModel):
    decision: Literal["Evacuate", "Stay"]
    rationale: str


@pytest.mark.parametrize("text", [
    f"<think>I could answer {WRONG}.</think>\n{ANSWER}",
    f"<thinking>\nI could answer {WRONG}\n</thinking>{ANSWER}",
    f"<THINK>{WRONG}</THINK> {ANSWER}",
    f"I could answer {WRONG}.</think>\n\n{ANSWER}",  # the template opened the block in the prompt
    f"<think>a</think><think>{WRONG}</think>{ANSWER}",
])
def test_inline_thinking_leaves_the_answer(text):
    answer, thinking, truncated = split_inline(text)
    assert answer == ANSWER and WRONG in thinking and not truncated
    assert classify(separate(Reply(text=text)), LABELS, "decision", []).choice == "Evacuate"


def test_an_unclosed_thinking_is_invalid_thinking_truncated_never_parsed():
    text = f"<think>I will answer {WRONG} and then"
    reply = separate(Reply(text=text, finish_reason="length"))
    assert reply.text == "" and WRONG in reply.thinking and reply.thinking_truncated
    verdict = classify(reply, LABELS, "decision", [])
    assert (verdict.status, verdict.choice, verdict.note) == ("invalid", None, "thinking_truncated")
    counted = classify_count(separate(Reply(text='<think>maybe {"count": 40}')), "count", 0, 100, [])
    assert (counted.status, counted.value, counted.note) == ("invalid", None, "thinking_truncated")
    # without the split, the parser would have read the thinking: the first JSON object in the text
    assert classify(Reply(text=text), LABELS, "decision", []).choice == "Stay"


def test_configurable_tags_and_text_without_tags():
    assert split_inline(f"<reason>{WRONG}</reason>{ANSWER}", ("reason",))[0] == ANSWER
    assert split_inline(f"<think>{WRONG}</think>{ANSWER}", ("reason",))[0].startswith("<think>")
    assert split_inline(ANSWER) == (ANSWER, None, False)
    plain = Reply(text=ANSWER)
    assert separate(plain) is plain  # nothing to move: the very reply


@pytest.mark.parametrize("text", [
    f"<|channel|>analysis<|message|>I could say {WRONG}<|end|><|start|>assistant<|channel|>final<|message|>{ANSWER}"
    "<|return|>",
    f"<|start|>assistant<|channel|>analysis<|message|>{WRONG}<|end|><|start|>assistant<|channel|>final "
    f"<|constrain|>json<|message|>{ANSWER}",
    f"analysisWe could answer {WRONG}.assistantfinal{ANSWER}",  # the special tokens stripped
])
def test_harmony_channels(text):
    answer, thinking, truncated = split_harmony(text)
    assert answer == ANSWER and WRONG in thinking and not truncated


def test_harmony_without_a_final_channel_is_truncated():
    assert split_harmony(f"<|channel|>analysis<|message|>{WRONG} and") == ("", f"{WRONG} and", True)
    assert split_harmony(ANSWER) is None


def test_reasoning_fields_of_openai_compatible_servers():
    for field in ("reasoning_content", "reasoning"):
        body = {"choices": [{"finish_reason": "stop", "message": {"content": ANSWER, field: f"maybe {WRONG}"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 40,
                          "completion_tokens_details": {"reasoning_tokens": 31}}}
        r = generation_reply(body, chat=True)
        assert (r.text, r.thinking, r.reasoning_tokens, r.thinking_truncated) == (ANSWER, f"maybe {WRONG}", 31, False)
    cut = {"choices": [{"finish_reason": "length", "message": {"content": None, "reasoning_content": WRONG}}]}
    assert generation_reply(cut, chat=True).thinking_truncated


def test_a_request_without_a_level_keeps_its_key_and_a_level_changes_it():
    r = Request(messages=(("user", "hi"),), schema=Decision, seed=3, replicate="x")
    assert "reasoning" not in r.key_material()
    assert cache_key({"m": 1}, r) == cache_key({"m": 1}, Request(messages=(("user", "hi"),), schema=Decision, seed=3,
                                                                  replicate="x"))
    high = Request(messages=(("user", "hi"),), schema=Decision, seed=3, replicate="x", reasoning="high")
    off = Request(messages=(("user", "hi"),), schema=Decision, seed=3, replicate="x", reasoning="off")
    assert len({cache_key({"m": 1}, x) for x in (r, high, off)}) == 3


def test_reply_json_round_trip_and_old_cache_rows():
    old = json.dumps({"text": ANSWER, "refusal": None, "input_tokens": 3, "output_tokens": 4, "latency_s": 0.1,
                      "attempts": 1, "error": None, "error_cause": None, "finish_reason": "stop"})
    r = Reply.from_json(old)
    assert (r.thinking, r.thinking_truncated, r.reasoning_tokens) == (None, False, None)
    assert "thinking" not in Reply(text=ANSWER).to_json()  # stored as before when there is no thinking
    t = Reply(text=ANSWER, thinking="hmm", reasoning_tokens=7)
    assert Reply.from_json(t.to_json()) == t


def test_controls_per_level():
    assert honoured(None) == ("default",)
    assert set(honoured("enable_thinking")) == {"default", "off", "on"}
    assert openai_params("reasoning_effort", "high") == {"reasoning_effort": "high"}
    assert openai_params("enable_thinking", "off") == {"chat_template_kwargs": {"enable_thinking": False}}
    assert openai_params("reasoning_effort", None) == {} == openai_params(None, "default")
    with pytest.raises(LouderError, match="cannot honour reasoning level 'low'.*enable_thinking"):
        control_value("enable_thinking", "low")
    _, body = request_body("m", Request(messages=(("user", "x"),), reasoning="low"), "off",
                           reasoning_control="reasoning_effort")
    assert body["reasoning_effort"] == "low"
    _, body = request_body("m", Request(messages=(("user", "x"),)), "off", reasoning_control="reasoning_effort")
    assert "reasoning_effort" not in body


@pytest.mark.parametrize("think", ["inline", "field"])
def test_the_fake_model_thinks_about_the_other_option(tmp_path, think):
    model = FakeModel(f"seed=2,think={think}")
    client = Client(model, None)
    for i in range(20):
        req = Request(messages=(("user", "decide"),), schema=Decision, seed=i)
        raw, reply = model.generate(req), client.call(req)
        chosen = json.loads(reply.text)["decision"]
        assert reply.thinking and f'"decision": "{[x for x in LABELS if x != chosen][0]}"' in reply.thinking
        if think == "inline":
            assert raw.text.startswith("<think>") and raw.thinking is None  # the client separates it
        off = client.call(Request(messages=(("user", "decide"),), schema=Decision, seed=i, reasoning="off"))
        assert off.thinking is None


def test_the_fake_model_can_think_itself_out_of_tokens():
    reply = Client(FakeModel("think=unclosed"), None).call(Request(messages=(("user", "x"),), schema=Decision))
    assert reply.thinking_truncated and reply.text == ""
    assert classify(reply, LABELS, "decision", []).note == "thinking_truncated"


def test_the_fake_models_bias_can_change_with_the_level():
    model = FakeModel("seed=1,level=high:woman:1.0")
    def ask(level):
        return [json.loads(model.generate(Request(messages=(("user", "a woman decides"),), schema=Decision, seed=i,
                                                  reasoning=level)).text)["decision"] for i in range(40)]

    assert set(ask("high")) == {"Evacuate"}  # the first option, always
    assert set(ask("off")) == {"Evacuate", "Stay"}
    with pytest.raises(LouderError, match="level=LEVEL:WORD:P"):
        FakeModel("level=loud:woman:0.9")


def test_ollama_and_batch_lines_carry_the_level():
    from louder.llm.batch import Pending, batch_line
    from louder.llm.remote import RemoteChatModel

    ollama = RemoteChatModel("ollama", "qwen3", "http://127.0.0.1:1")  # built, never called
    assert ollama.reasoning_control == "think"
    assert ollama._reasoning_kw(Request(messages=(("user", "x"),), reasoning="off")) == {"reasoning": False}
    assert ollama._reasoning_kw(Request(messages=(("user", "x"),), reasoning="high")) == {"reasoning": "high"}
    assert ollama._reasoning_kw(Request(messages=(("user", "x"),))) == {}
    req = Request(messages=(("user", "x"),), reasoning="off")
    line = batch_line(Pending("k", "m", "qwen3", "off", req, None, "enable_thinking"))
    assert line["body"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in batch_line(Pending("k", "m", "q", "off", Request(messages=(("user", "x"),)),
                                                           None, "enable_thinking"))["body"]


def test_a_level_sent_another_way_is_another_cache_key():
    class Effort(FakeModel):
        def __init__(self):
            super().__init__()
            self.reasoning_control = "reasoning_effort"

    req = Request(messages=(("user", "x"),), reasoning="off")
    a, b = Client(FakeModel(), None), Client(Effort(), None)
    assert a._key_identity(req) != b._key_identity(req)
    plain = Request(messages=(("user", "x"),))
    # no level: the identity as before (rendered once per client), so the same cache key as before
    assert a._key_identity(plain) == b._key_identity(plain) == canonical_json(a.identity())
    assert cache_key(a._key_identity(plain), plain) == cache_key(a.identity(), plain)
