"""Issue 30, done-when 1: against local OpenAI-compatible servers that answer as reasoning models do —
thinking inline, in a reasoning field, as raw harmony channels, or cut at max_tokens — no decision is
taken from the thinking, and the thinking is kept. The server's thinking always writes a *different*
answer as JSON, so reading it would show."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import louder
from fake_openai import FakeOpenAIServer
from louder.llm.batch import reply_of
from louder.llm.cache import ResponseCache
from louder.llm.client import Client

CASE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 4}


@pytest.fixture
def server(request):
    s = FakeOpenAIServer(reasoning=request.param)
    s.start()
    yield s
    s.stop()


def _proposed(thinking: str | None, field: str) -> str | None:
    """The answer the thinking weighed (the JSON object in it), or None."""
    if not thinking or "{" not in thinking:
        return None
    text = thinking[thinking.index("{"):]
    return json.JSONDecoder().raw_decode(text)[0].get(field)


def _figures(df: pd.DataFrame, field: str) -> tuple[int, float]:
    valid = df[df["status"] == "valid"]
    taken = sum(d == _proposed(t, field) for d, t in zip(valid[field], valid["thinking"]))
    kept = float((df["thinking"].fillna("") != "").mean())
    return taken, kept


@pytest.mark.parametrize("server", ["inline", "reasoning_content", "reasoning", "harmony"], indirect=True)
@pytest.mark.parametrize("client", ["langchain", "http"])
def test_no_decision_comes_from_the_thinking_and_the_thinking_is_kept(server, client, tmp_path):
    model = {"spec": f"openai:fake@{server.url}", "client": client}
    run = louder.run({"models": [model], "simulation": CASE}, out=tmp_path / "r", progress=False)
    d, p = run.decisions, run.personas
    taken, kept = _figures(d, "decision")
    assert (d["status"] == "valid").all() and taken == 0 and kept >= 0.9, (taken, kept)
    assert (p["status"] == "valid").all() and (p["thinking"].notna()).mean() >= 0.9
    assert not p["name"].str.startswith("Not ").any()  # the thinking's persona ("Not Agent …") was never read
    assert not d["raw_response"].str.contains("<think>|<\\|channel\\|>", regex=True).any()
    if server.reasoning == "reasoning_content":
        assert d["reasoning_tokens"].notna().all() and (d["reasoning_tokens"] > 0).all()
    probes = louder.run({"models": [model], "simulation": CASE, "explicit": {"trials": 6}}, out=tmp_path / "r",
                        kind="explicit", progress=False).probes
    assert (probes["status"] == "valid").all()
    assert _figures(probes.rename(columns={"answer": "decision"}), "decision") == (0, 1.0)


@pytest.mark.parametrize("server", ["truncated"], indirect=True)
def test_a_thinking_cut_at_max_tokens_is_invalid_never_parsed(server, tmp_path):
    run = louder.run({"models": [f"openai:fake@{server.url}"], "simulation": CASE}, out=tmp_path / "r",
                     progress=False)
    p = run.personas
    assert (p["status"] == "invalid").all() and set(p["reason"]) == {"thinking_truncated"}
    assert p["raw_response"].str.contains("[thinking_truncated", regex=False).all()
    assert (run.decisions["status"] == "invalid").all()  # their personas never closed: not asked
    m = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert m["thinking"]["personas"]["thinking_truncated"] == len(p)
    beliefs = louder.run({"models": [f"openai:fake@{server.url}"], "simulation": CASE, "beliefs": {"trials": 2}},
                         out=tmp_path / "r", kind="beliefs", progress=False).beliefs
    assert (beliefs["status"] == "invalid").all() and set(beliefs["note"]) == {"thinking_truncated"}


@pytest.mark.parametrize("server", ["inline"], indirect=True)
def test_reasoning_levels_reach_the_server_as_its_control(server, tmp_path):
    cfg = {"models": [{"spec": f"openai:fake@{server.url}", "client": "http"},
                      {"spec": f"openai:other@{server.url}", "reasoning_control": "enable_thinking"}],
           "simulation": {**CASE, "agents": 2, "reasoning": ["off", "on"]}}
    with pytest.raises(louder.LouderError, match=r"openai:fake@.*cannot honour reasoning level 'on'.*reasoning_effort"):
        louder.run(cfg, out=tmp_path / "bad", progress=False)
    cfg["simulation"]["reasoning"] = ["off", "default"]
    run = louder.run(cfg, out=tmp_path / "r", progress=False)
    assert set(run.decisions["reasoning"]) == {"off", "default"} and (run.decisions["status"] == "valid").all()
    bodies = [r["body"] for r in server.requests if '"decision"' in json.dumps(r["body"])]
    effort = [b.get("reasoning_effort") for b in bodies if b["model"] == "fake"]
    kwargs = [(b.get("chat_template_kwargs") or {}).get("enable_thinking") for b in bodies if b["model"] == "other"]
    assert sorted(effort, key=str) == sorted(["none"] * 6 + [None] * 6, key=str)
    assert sorted(kwargs, key=str) == sorted([False] * 6 + [None] * 6, key=str)
    # personas are written at the model's default, once: no control in their requests
    assert not any("reasoning_effort" in r["body"] or "chat_template_kwargs" in r["body"] for r in server.requests
                   if '"persona"' in json.dumps(r["body"]))


def test_batch_imports_read_the_final_answer_only(tmp_path):
    """A batch result line carries the server's body: its reasoning field is kept apart, and inline
    thinking in a cached answer is split when the run reads it."""
    wrong, right = '{"decision": "Stay"}', '{"decision": "Evacuate"}'
    message = {"content": right, "reasoning_content": f"maybe {wrong}"}
    line = {"custom_id": "k", "response": {"status_code": 200, "body": {"choices": [{"finish_reason": "stop",
                                                                                     "message": message}]}}}
    r = reply_of(line, {"kind": "chat"})
    assert (r.text, r.thinking) == (right, f"maybe {wrong}")
    cache = ResponseCache(tmp_path / "c.sqlite")
    from louder.llm.base import Request
    from louder.llm.cache import cache_key
    from louder.llm.fake import FakeModel

    client = Client(FakeModel(), cache)
    req = Request(messages=(("user", "x"),))
    cache.put(cache_key(client.identity(), req), type(r)(text=f"<think>{wrong}</think>{right}"))
    got = client.call(req)
    assert got.cached and got.text == right and wrong in got.thinking
