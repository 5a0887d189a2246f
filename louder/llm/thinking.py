"""Thinking is not the answer: a reasoning model's thinking, kept apart from its final answer.

Reasoning models reach louder in three shapes, all turned into one ``Reply`` here (``text`` = the
final answer, ``thinking`` = the reasoning, ``thinking_truncated`` = it never closed):

- **a separate field**: ``reasoning_content`` / ``reasoning`` of OpenAI-compatible servers with a
  reasoning parser (vLLM, llama.cpp, DeepSeek), Ollama's ``message.thinking``, LangChain's
  reasoning content blocks — read by each backend into ``Reply.thinking``;
- **inline tags** in the text: ``<think>…</think>`` (DeepSeek-R1, Qwen3, QwQ without a reasoning
  parser) or ``<thinking>…</thinking>``; the tags are configurable per model (``thinking_tags``).
  A template that opens the block in the prompt leaves only ``…</think>`` in the answer;
- **gpt-oss harmony channels** passed raw: ``<|channel|>analysis<|message|>…<|end|>…
  <|channel|>final<|message|>…<|return|>`` (or the same with the special tokens stripped:
  ``analysis…assistantfinal…``). The ``analysis`` and ``commentary`` channels are thinking, the
  ``final`` channel the answer. (The ``openai-harmony`` package parses token ids and fetches its
  vocabulary file on first use, so louder reads the documented text form itself.)

Everything downstream (decisions, personas, every probe, batch imports) reads ``Reply.text`` only.
A reply whose thinking never closed has no answer: it is classified ``invalid`` with the reason
``thinking_truncated`` (``louder.llm.answers``), never parsed from the thinking.

Reasoning levels (``simulation.reasoning``) and the control each backend sends for them are here
too: ``LEVELS``, ``CONTROLS``.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache

from louder.errors import LouderError
from louder.llm.base import Reply

DEFAULT_TAGS = ("think", "thinking")
TRUNCATED = "thinking_truncated"  # the reason of an answer whose thinking never closed
TRUNCATED_MARK = "[thinking_truncated: the thinking never closed before max_tokens, so there is no answer]"


# --- separating the thinking from the answer ------------------------------------------------------

@cache
def _tag_pattern(tags: tuple[str, ...]) -> re.Pattern:
    names = "|".join(re.escape(t) for t in tags)
    return re.compile(rf"<\s*(/?)\s*({names})\s*>", re.IGNORECASE)


def split_inline(text: str, tags: tuple[str, ...] = DEFAULT_TAGS) -> tuple[str, str | None, bool]:
    """(answer, thinking, truncated) of ``text`` with inline thinking blocks.

    Every ``<tag>…</tag>`` block (any of ``tags``, any case) is thinking and leaves the answer. A
    closing tag without an opening one (the template opened the block in the prompt) makes all the
    text before it thinking. An opening tag that never closes makes the rest of the text thinking
    and the reply truncated: there is no answer after it. Text without tags comes back as it is."""
    if not text or not tags:
        return text, None, False
    matches = list(_tag_pattern(tuple(tags)).finditer(text))
    if not matches:
        return text, None, False
    answer, thinking, pos, open_at = [], [], 0, None
    for m in matches:
        closing = m.group(1) == "/"
        if open_at is None:
            if closing:  # "…</think>": the block began before the text did (or at the last one's end)
                thinking.append(text[pos:m.start()])
            else:
                answer.append(text[pos:m.start()])
                open_at = m.end()
            pos = m.end()
        elif closing:
            thinking.append(text[open_at:m.start()])
            open_at, pos = None, m.end()
    truncated = open_at is not None
    if truncated:
        thinking.append(text[open_at:])
    else:
        answer.append(text[pos:])
    think = "\n".join(t.strip() for t in thinking if t.strip())
    return "".join(answer).strip(), think or None, truncated


_HARMONY = re.compile(r"<\|channel\|>\s*(\w+)[^<]*?(?:<\|constrain\|>[^<]*)?<\|message\|>(.*?)"
                      r"(<\|end\|>|<\|return\|>|<\|call\|>|(?=<\|start\|>)|$)", re.S)
_HARMONY_STRIPPED = re.compile(r"^\s*analysis(.*?)assistantfinal(.*)$", re.S)


def split_harmony(text: str) -> tuple[str, str | None, bool] | None:
    """(answer, thinking, truncated) of gpt-oss harmony output passed raw, or None when ``text`` is not
    in that form. Channels ``analysis``/``commentary`` are thinking, ``final`` the answer; no final
    channel after a message that ran to the end of the text is a truncated thinking."""
    if "<|channel|>" in text:
        segments = _HARMONY.findall(text)
        if not segments:
            return None
        final = [body for ch, body, _ in segments if ch.lower() == "final"]
        thinking = "\n".join(body.strip() for ch, body, _ in segments if ch.lower() != "final" and body.strip())
        truncated = not final and segments[-1][2] == ""
        return "".join(final).strip(), thinking or None, truncated
    m = _HARMONY_STRIPPED.match(text)
    if m:  # the same with the special tokens stripped by the server
        return m.group(2).strip(), m.group(1).strip() or None, False
    return None


def separate(reply: Reply, tags: tuple[str, ...] = DEFAULT_TAGS) -> Reply:
    """``reply`` with any thinking left in its text moved to ``thinking`` (after the thinking a
    backend already read from a field). Idempotent: the text it returns holds no thinking."""
    if reply.error is not None or not reply.text:
        return reply
    split = split_harmony(reply.text) or split_inline(reply.text, tuple(tags))
    answer, thinking, truncated = split
    if thinking is None and not truncated and answer == reply.text:
        return reply
    both = "\n".join(t for t in (reply.thinking, thinking) if t) or None
    return dataclasses.replace(reply, text=answer, thinking=both,
                               thinking_truncated=reply.thinking_truncated or truncated)


def truncated_in_field(content: str | None, thinking: str | None, finish_reason: str | None) -> bool:
    """A reasoning field without an answer, cut at the token limit: the thinking never closed."""
    return bool(thinking) and not (content or "").strip() and finish_reason == "length"


# --- reasoning levels and the controls that ask for them -----------------------------------------

# ``default``: no control is sent (the model's own behaviour, and every request's key as before).
# ``off``/``on``: thinking disabled / enabled; ``low``/``medium``/``high``: an effort or budget.
LEVELS = ("default", "off", "on", "low", "medium", "high")

# Each control's levels, as the backend sends them (``default`` is honoured by every backend).
CONTROLS: dict[str, dict[str, object]] = {
    # OpenAI's reasoning models, gpt-oss on vLLM / Ollama /v1 / llama.cpp ("none": gpt-5.1 and later)
    "reasoning_effort": {"off": "none", "low": "low", "medium": "medium", "high": "high"},
    # Qwen3-style chat templates (vLLM, SGLang, llama.cpp): chat_template_kwargs.enable_thinking
    "enable_thinking": {"off": False, "on": True},
    # Ollama's native API: think false/true, or low/medium/high (gpt-oss)
    "think": {"off": False, "on": True, "low": "low", "medium": "medium", "high": "high"},
    # a thinking budget in tokens (Anthropic's budget_tokens, Gemini's thinking_budget); 0 = off
    "budget": {"off": 0, "low": 1024, "medium": 4096, "high": 16384},
    # the fake model (louder/llm/fake.py) honours every level
    "fake": {level: level for level in LEVELS[1:]},
}


def honoured(control: str | None) -> tuple[str, ...]:
    """The levels a backend with ``control`` (None: no reasoning control) can honour."""
    return ("default", *CONTROLS.get(control or "", {}))


def control_value(control: str | None, level: str | None):
    """What ``control`` sends for ``level`` (None for ``default``/None: send nothing). Raises
    LouderError when the control cannot honour the level."""
    if level in (None, "default"):
        return None
    values = CONTROLS.get(control or "", {})
    if level not in values:
        raise LouderError(unhonoured(control, level))
    return values[level]


def unhonoured(control: str | None, level: str, who: str = "this backend") -> str:
    can = ", ".join(honoured(control))
    how = f"its reasoning control {control!r}" if control else "it has no reasoning control"
    return f"{who} cannot honour reasoning level {level!r}: {how} honours {can}"


def openai_params(control: str | None, level: str | None) -> dict:
    """The request-body fields of ``level`` for an OpenAI-compatible server (``{}`` for default)."""
    value = control_value(control, level)
    if value is None:
        return {}
    if control == "reasoning_effort":
        return {"reasoning_effort": value}
    if control == "enable_thinking":
        return {"chat_template_kwargs": {"enable_thinking": value}}
    raise LouderError(f"reasoning control {control!r} is not one an OpenAI-compatible server takes; use "
                      "reasoning_effort or enable_thinking")
