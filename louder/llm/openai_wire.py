"""The OpenAI chat/completions wire format, in one place: the request body louder sends for a
``Request`` and the ``Reply`` it makes of a response body.

The lean HTTP client sends these bodies live; batch files (OpenAI Batch API, vLLM ``run_batch``)
carry the very same bodies, so a batched answer and a live one are interchangeable in the cache.
"""

from __future__ import annotations

import json
import math
import re

from louder.llm.base import Reply, Request
from louder.llm.thinking import openai_params, truncated_in_field

# Score mode asks for the top log-probs at each generated token (20 is the OpenAI maximum).
TOP_LOGPROBS = 20


def response_format(request: Request, json_mode: str) -> dict:
    """The ``response_format`` field for ``json_mode`` (``{}`` for ``off`` or no schema)."""
    if request.schema is None:
        return {}
    schema = request.schema_json()
    if json_mode == "json_schema":
        return {"response_format": {"type": "json_schema",
                                     "json_schema": {"name": request.schema.__name__, "schema": schema}}}
    if json_mode == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if json_mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def request_body(model: str, request: Request, json_mode: str, score: bool = False,
                 reasoning_control: str | None = None) -> tuple[str, dict]:
    """(path relative to the API root, JSON body) for one request.

    Chat requests go to ``chat/completions`` (with ``response_format`` for a schema), completion
    prompts to ``completions``. ``score`` sets temperature 0 and asks for ``logprobs``. A request's
    reasoning level adds the fields of ``reasoning_control`` (``louder.llm.thinking.openai_params``).
    """
    body: dict = {"model": model, "temperature": 0.0 if score else request.temperature,
                  "max_tokens": request.max_tokens, "seed": request.seed,
                  **openai_params(reasoning_control, request.reasoning)}
    if score:
        body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
    if request.messages is None:
        return "completions", {**body, "prompt": request.prompt}
    body["messages"] = [{"role": r, "content": c} for r, c in request.messages]
    body.update(response_format(request, json_mode))
    return "chat/completions", body


def _usage(out: dict) -> tuple[int | None, int | None]:
    usage = out.get("usage") or {}
    return usage.get("prompt_tokens"), usage.get("completion_tokens")


def reasoning_tokens(out: dict) -> int | None:
    """``usage.completion_tokens_details.reasoning_tokens``, where the server reports it."""
    details = (out.get("usage") or {}).get("completion_tokens_details") or {}
    n = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return n if isinstance(n, int) else None


def message_thinking(message: dict) -> str | None:
    """The reasoning an OpenAI-compatible server returns beside the answer: ``reasoning_content``
    (vLLM, DeepSeek, llama.cpp) or ``reasoning`` (OpenRouter, Ollama's /v1, newer vLLM)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def generation_reply(out: dict, chat: bool, latency_s: float = 0.0, attempts: int = 1) -> Reply:
    """The ``Reply`` of a chat.completion (``chat``) or text_completion response body."""
    try:
        choice = out["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content") if chat else choice.get("text")
    except (KeyError, IndexError, TypeError, AttributeError):
        return Reply(error=f"bad_response: request failed: unexpected response shape {str(out)[:300]}",
                     error_cause="bad_response", latency_s=latency_s, attempts=attempts)
    tin, tout = _usage(out)
    thinking = message_thinking(message) if chat else None
    finish = choice.get("finish_reason")
    return Reply(text=text or "", refusal=message.get("refusal"), input_tokens=tin, output_tokens=tout,
                 latency_s=latency_s, attempts=attempts, finish_reason=finish, thinking=thinking,
                 thinking_truncated=truncated_in_field(text, thinking, finish), reasoning_tokens=reasoning_tokens(out))


def score_reply(out: dict, prefix: str, choices: list[str], latency_s: float = 0.0, attempts: int = 1) -> Reply:
    """The score ``Reply`` (``{"logprobs": {choice: lp | null}, "method": "first_token"}``) of a
    chat.completion body requested with ``logprobs``; see ``first_token_logprobs``."""
    try:
        tokens = out["choices"][0]["logprobs"]["content"] or []
    except (KeyError, IndexError, TypeError):
        tokens = []
    logprobs = first_token_logprobs(tokens, prefix, choices)
    tin, tout = _usage(out)
    return Reply(text=json.dumps({"logprobs": logprobs or {}, "method": "first_token"}), input_tokens=tin,
                 output_tokens=tout, latency_s=latency_s, attempts=attempts, finish_reason="score")


def first_token_logprobs(tokens: list[dict], prefix: str, choices: list[str]) -> dict[str, float | None] | None:
    """From OpenAI ``logprobs.content`` entries, log p of each choice at the token where the text
    after ``prefix`` (whitespace-insensitive) begins. None when the answer has no such position."""
    text = "".join(t.get("token", "") for t in tokens)
    pattern = r"\s*".join(re.escape(part) for part in re.findall(r"\S+", prefix))
    m = re.search(pattern + r"\s*", text)
    if not m:
        return None
    value_start, offset = m.end(), 0
    for t in tokens:
        tok = t.get("token", "")
        if offset + len(tok) > value_start:
            lead = text[offset:value_start]  # part of this token that precedes the value
            mass: dict[str, float] = {c: 0.0 for c in choices}
            for alt in t.get("top_logprobs") or [{"token": tok, "logprob": t.get("logprob")}]:
                a = alt.get("token", "")
                if not a.startswith(lead) or alt.get("logprob") is None:
                    continue
                rest = a[len(lead):]
                if not rest:
                    continue
                hits = [c for c in choices if c.startswith(rest) or rest.startswith(c)]
                if len(hits) == 1:
                    mass[hits[0]] += math.exp(alt["logprob"])
            return {c: (math.log(p) if p > 0 else None) for c, p in mass.items()}
        offset += len(tok)
    return None
