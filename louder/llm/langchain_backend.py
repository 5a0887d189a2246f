"""``langchain:PROVIDER:MODEL[@BASE_URL]``: every chat model LangChain reaches, through
``langchain.chat_models.init_chat_model`` — Anthropic, Google Gemini, AWS Bedrock, Mistral, and any
other provider with a LangChain package (``pip install "louder[anthropic]"``, ``[google]``, ``[aws]``,
``[mistral]``).

- **Structured output** through the provider's own mechanism (``with_structured_output``: OpenAI's
  JSON schema, Anthropic's and Mistral's tool calling, Gemini's response schema); ``json_mode: off``
  sends the prompt alone, ``json_object`` asks OpenAI-style JSON mode where the provider has one.
- **Keys** come from the provider's usual environment variable (``ANTHROPIC_API_KEY``,
  ``GOOGLE_API_KEY``, ``MISTRAL_API_KEY``, ``OPENAI_API_KEY``; Bedrock: the AWS credential chain),
  read by the provider's client; louder never stores one, and the identity (cache keys, manifest)
  holds provider, model and base URL only.
- **Thinking** comes back in ``Reply.thinking`` from the message's reasoning content blocks
  (Anthropic thinking blocks, Gemini thoughts) or its ``reasoning_content``; reasoning levels are sent
  as each provider's control (``PROVIDER_CONTROLS``): OpenAI ``reasoning_effort``, Anthropic a
  ``thinking`` budget, Gemini ``thinking_budget``, Ollama ``think``; providers without one honour
  only the level ``default``.
- **No score mode**: LangChain gives no log-probs of a closed set of choices across providers.

Temperature and max_tokens are set when the provider's model object is made (one per setting,
kept). No seed is sent: LangChain's structured output passes no per-call arguments to the model (use
the ``openai:`` backend where a seed matters); each agent's request still has its own cache key.
"""

from __future__ import annotations

import json
import os
import threading
import time

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.registry import BackendInfo, register
from louder.llm.retry import call_or_error
from louder.llm.thinking import control_value

# provider → the environment variable holding its key (None: a credential chain of its own)
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google_genai": "GOOGLE_API_KEY",
        "mistralai": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
        "xai": "XAI_API_KEY", "cohere": "COHERE_API_KEY", "together": "TOGETHER_API_KEY",
        "fireworks": "FIREWORKS_API_KEY"}
# provider → the louder extra that installs its LangChain package
EXTRAS = {"anthropic": "anthropic", "google_genai": "google", "bedrock": "aws", "bedrock_converse": "aws",
          "mistralai": "mistral"}
# provider → how a reasoning level reaches it (louder.llm.thinking.CONTROLS); others: none
PROVIDER_CONTROLS = {"openai": "reasoning_effort", "anthropic": "budget", "google_genai": "budget",
                     "ollama": "think", "deepseek": None}


def split_model(model: str) -> tuple[str, str]:
    """``PROVIDER:MODEL`` → (provider, model); a LouderError names the form."""
    provider, _, name = model.partition(":")
    if not provider or not name:
        raise LouderError(f"model spec langchain:{model}: give langchain:PROVIDER:MODEL[@BASE_URL], e.g. "
                          "langchain:anthropic:claude-sonnet-4-5 or langchain:openai:MODEL@http://127.0.0.1:8000/v1")
    return provider, name


def reasoning_kwargs(provider: str, control: str | None, level: str | None, max_tokens: int,
                     temperature: float) -> dict:
    """The model arguments for ``level`` (and the temperature and max_tokens it needs)."""
    value = control_value(control, level)
    kw: dict = {"temperature": temperature, "max_tokens": max_tokens}
    if value is None:
        return kw
    if control == "reasoning_effort":
        return {**kw, "reasoning_effort": value}
    if control == "enable_thinking":
        return {**kw, "extra_body": {"chat_template_kwargs": {"enable_thinking": value}}}
    if control == "think":
        return {**kw, "reasoning": value}
    # budget: Anthropic counts thinking within max_tokens and wants temperature 1 while it thinks, so
    # the answer keeps its own max_tokens on top of the budget; Gemini takes a budget (0 = off)
    if provider == "anthropic":
        if value == 0:
            return {**kw, "thinking": {"type": "disabled"}}
        return {"max_tokens": max_tokens + value, "thinking": {"type": "enabled", "budget_tokens": value}}
    if provider == "google_genai":
        return {**kw, "thinking_budget": value, "include_thoughts": bool(value)}
    raise LouderError(f"langchain:{provider}: reasoning_control: budget is sent to anthropic and google_genai only")


class LangChainModel:
    """A chat model of any LangChain provider. ``chat_factory(**kwargs)`` makes the provider's model
    (``init_chat_model`` by default; tests give LangChain's fake chat models)."""

    def __init__(self, provider: str, model: str, base_url: str | None = None, timeout_s: float = 120.0,
                 max_attempts: int = 6, json_mode: str = "json_schema", reasoning_control: str | None = None,
                 chat_factory=None):
        self.backend, self.provider, self.model, self.base_url = "langchain", provider, model, base_url
        self.timeout_s, self.max_attempts, self.json_mode = timeout_s, max_attempts, json_mode
        self.reasoning_control = reasoning_control or PROVIDER_CONTROLS.get(provider)
        key = KEYS.get(provider)
        if chat_factory is None and key and not base_url and not os.environ.get(key):
            raise LouderError(f"model langchain:{provider}:{model} needs the {key} environment variable (or a base "
                              "URL for a server of your own)")
        self._factory = chat_factory or self._init
        self._models: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self._client(0.0, 16, None)  # made now, in the calling thread: a missing package fails here, in one line

    def identity(self) -> dict:
        return {"backend": "langchain", "provider": self.provider, "model": self.model, "base_url": self.base_url}

    def _init(self, **kw):
        extra = {"base_url": self.base_url} if self.base_url else {}
        if self.provider == "openai":
            from louder.llm.lc_reasoning import chat_openai  # ChatOpenAI that keeps a server's reasoning field

            if self.base_url and not os.environ.get("OPENAI_API_KEY"):
                extra["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
            return chat_openai(model=self.model, timeout=self.timeout_s, max_retries=0, **extra, **kw)
        try:
            from langchain.chat_models import init_chat_model
        except ImportError:
            raise LouderError("langchain: specs need the langchain package: pip install langchain") from None
        try:
            return init_chat_model(self.model, model_provider=self.provider, timeout=self.timeout_s, max_retries=0,
                                   **extra, **kw)
        except ImportError as e:
            hint = (f'pip install "louder[{EXTRAS[self.provider]}]"' if self.provider in EXTRAS
                    else "install its LangChain package")
            raise LouderError(f"model langchain:{self.provider}:{self.model}: the provider's package is not "
                              f"installed ({e}); {hint}") from None
        except ValueError as e:
            raise LouderError(f"model langchain:{self.provider}:{self.model}: {str(e).splitlines()[0]}") from None

    def _client(self, temperature: float, max_tokens: int, level: str | None):
        """The provider's model for one setting (made once; several threads may ask at once)."""
        key = (temperature, max_tokens, level)
        with self._lock:
            if key not in self._models:
                self._models[key] = self._factory(**reasoning_kwargs(self.provider, self.reasoning_control, level,
                                                                     max_tokens, temperature))
            return self._models[key]

    def _invoke(self, request: Request):
        from louder.llm.remote import _lc_messages

        chat = self._client(request.temperature, request.max_tokens, request.reasoning)
        messages = _lc_messages(request.messages)
        if request.schema is None or self.json_mode == "off":
            return chat.invoke(messages), None
        method = {"json_object": {"method": "json_mode"}}.get(self.json_mode, {})
        try:
            structured = chat.with_structured_output(request.schema, include_raw=True, **method)
        except NotImplementedError:  # a model without structured output (LangChain's fakes): the prompt alone
            return chat.invoke(messages), None
        out = structured.invoke(messages)
        return out["raw"], out.get("parsed")

    def generate(self, request: Request) -> Reply:
        from louder.llm.lc_reasoning import lc_reasoning_tokens, lc_text, lc_thinking
        from louder.llm.thinking import truncated_in_field

        if request.messages is None:
            return Reply(error="unsupported: langchain: specs are chat models; drop completion:",
                         error_cause="unsupported")
        start = time.perf_counter()
        from louder.llm.lc_reasoning import cut_body

        out, attempts, failed = call_or_error(lambda: cut_body(lambda: self._invoke(request)), self.max_attempts)
        if failed:
            return failed
        if isinstance(out, dict):  # an OpenAI body cut at max_tokens
            from louder.llm.openai_wire import generation_reply

            return generation_reply(out, True, time.perf_counter() - start, attempts)
        raw, parsed = out
        text = lc_text(raw)
        if parsed is not None:  # the provider's structured answer (a tool call's arguments, say) as JSON
            text = parsed.model_dump_json() if hasattr(parsed, "model_dump_json") else json.dumps(parsed)
        usage = getattr(raw, "usage_metadata", None) or {}
        meta = getattr(raw, "response_metadata", {}) or {}
        thinking = lc_thinking(raw)
        finish = meta.get("finish_reason") or meta.get("stop_reason") or meta.get("done_reason")
        finish = "length" if finish in ("max_tokens", "MAX_TOKENS") else finish
        return Reply(text=text, refusal=(raw.additional_kwargs or {}).get("refusal"),
                     input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
                     latency_s=time.perf_counter() - start, attempts=attempts, finish_reason=finish,
                     thinking=thinking, thinking_truncated=truncated_in_field(text, thinking, finish),
                     reasoning_tokens=lc_reasoning_tokens(raw))

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        return Reply(error="unsupported: langchain: specs return no log-probs; use decision_mode: sample",
                     error_cause="unsupported")


def _build(model: str, url: str | None, cfg):
    provider, name = split_model(model)
    if url and "," in url:
        raise LouderError(f"model spec langchain:{model}@{url}: several endpoints work for openai: specs only")
    return LangChainModel(provider, name, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts,
                          json_mode=cfg.json_mode, reasoning_control=getattr(cfg, "reasoning_control", None))


register(BackendInfo("langchain", _build, forms=("langchain:PROVIDER:MODEL", "langchain:PROVIDER:MODEL@BASE_URL"),
                     priced=True, reasoning_controls=("reasoning_effort", "enable_thinking", "think", "budget"),
                     default_control=lambda model: PROVIDER_CONTROLS.get(model.partition(":")[0])))
