"""LangChain messages of reasoning models: the thinking apart from the answer (issue 30).

``chat_openai`` is LangChain's ChatOpenAI keeping the reasoning field of OpenAI-compatible servers
(ChatOpenAI keeps only OpenAI's own fields); ``lc_thinking`` / ``lc_text`` read a message's reasoning
and answer; ``cut_body`` turns the OpenAI SDK's refusal to parse a cut answer into its body.
"""

from __future__ import annotations

import functools

from louder.llm.openai_wire import message_thinking


def chat_openai(**kw):
    """LangChain's ChatOpenAI that also keeps the reasoning field of OpenAI-compatible servers
    (``reasoning_content`` / ``reasoning``), in ``additional_kwargs["reasoning_content"]``."""
    return _reasoning_chat_openai()(**kw)


@functools.cache
def _reasoning_chat_openai() -> type:
    """The class, made once: a pydantic model class costs ~10 ms to build, and a run builds a client per
    model, per wave, per level."""
    from langchain_openai import ChatOpenAI

    class ReasoningChatOpenAI(ChatOpenAI):
        def _create_chat_result(self, response, generation_info=None):
            result = super()._create_chat_result(response, generation_info)
            raw = response if isinstance(response, dict) else response.model_dump(
                exclude={"choices": {"__all__": {"message": {"parsed"}}}}, warnings=False)
            for gen, choice in zip(result.generations, raw.get("choices") or []):
                thinking = message_thinking(choice.get("message") or {})
                if thinking:
                    gen.message.additional_kwargs["reasoning_content"] = thinking
            return result

    return ReasoningChatOpenAI


def lc_thinking(message) -> str | None:
    """The reasoning of a LangChain message: its ``reasoning`` content blocks (LangChain 1.x's standard
    form of Anthropic thinking blocks, Gemini thoughts, OpenAI reasoning summaries; a provider's raw
    ``thinking`` block too when the message does not say its provider) or
    ``additional_kwargs["reasoning_content"]`` (ChatOllama, ChatDeepSeek, ``chat_openai``)."""
    parts = []
    if isinstance(getattr(message, "content", None), list):
        try:
            blocks = message.content_blocks
        except Exception:  # noqa: BLE001 - an unknown provider format: read the raw blocks below
            blocks = message.content
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "non_standard" and isinstance(b.get("value"), dict):
                b = b["value"]
            if b.get("type") in ("reasoning", "thinking"):
                parts.append(b.get("reasoning") or b.get("thinking") or "")
    extra = (getattr(message, "additional_kwargs", None) or {}).get("reasoning_content")
    if isinstance(extra, str):
        parts.append(extra)
    text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return text or None


def lc_text(message) -> str:
    """The answer text of a LangChain message: its text content blocks, never its reasoning blocks."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else b.get("text", "") for b in content
                   if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"))


def cut_body(fn):
    """``fn()``, or — when the OpenAI SDK refuses to parse an answer cut at max_tokens
    (``LengthFinishReasonError``, raised for a schema-constrained request) — the response body it
    carries, so the cut answer is accounted for as ``invalid`` (or ``thinking_truncated``), not as a
    failed call."""
    import openai

    try:
        return fn()
    except openai.LengthFinishReasonError as e:
        return e.completion.model_dump(exclude={"choices": {"__all__": {"message": {"parsed"}}}}, warnings=False)


def lc_reasoning_tokens(message) -> int | None:
    details = (getattr(message, "usage_metadata", None) or {}).get("output_token_details") or {}
    n = details.get("reasoning")
    return n if isinstance(n, int) else None
