"""Remote chat models through LangChain: OpenAI (or any OpenAI-compatible base URL) and Ollama.

API keys are read from the environment by the client libraries (``OPENAI_API_KEY``); louder never
stores them. The identity used for cache keys and manifests holds the model name and base URL only.

A reasoning model's thinking comes back beside the answer (``Reply.thinking``): ChatOpenAI keeps
only OpenAI's own fields, so ``lc_reasoning.chat_openai`` reads the ``reasoning_content``/``reasoning`` field of
OpenAI-compatible servers too; Ollama's thinking arrives when a reasoning level is asked for (and
inline ``<think>`` tags otherwise, which the client separates: ``louder.llm.thinking``).
"""

from __future__ import annotations

import json
import os
import threading
import time

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.lc_reasoning import chat_openai, cut_body, lc_reasoning_tokens, lc_text, lc_thinking
from louder.llm.openai_wire import first_token_logprobs, response_format
from louder.llm.registry import BackendInfo, register
from louder.llm.retry import call_or_error, redact
from louder.llm.thinking import control_value, openai_params, truncated_in_field


def _lc_messages(messages):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[r](content=c) for r, c in messages]


_redact = redact  # the old name, for one release


class RemoteChatModel:
    """``openai:MODEL[@BASE_URL]`` or ``ollama:MODEL[@BASE_URL]``."""

    def __init__(
        self,
        backend: str,
        model: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        max_attempts: int = 6,
        json_mode: str = "json_schema",
        reasoning_control: str | None = None,
    ):
        if backend not in ("openai", "ollama"):
            raise LouderError(f"unknown backend {backend!r}; use openai or ollama")
        self.backend, self.model, self.base_url = backend, model, base_url
        self.timeout_s, self.max_attempts, self.json_mode = timeout_s, max_attempts, json_mode
        self.reasoning_control = reasoning_control or ("think" if backend == "ollama" else "reasoning_effort")
        if backend == "openai" and not base_url and not os.environ.get("OPENAI_API_KEY"):
            raise LouderError(
                f"model openai:{model} needs the OPENAI_API_KEY environment variable "
                "(or a base URL, e.g. openai:MODEL@http://127.0.0.1:8000/v1, for a local server)"
            )
        # Build the clients now, in the calling thread: importing httpx/openai lazily from several
        # worker threads at once fails with "partially initialized module" errors.
        self._lock = threading.Lock()
        self._chat = self._completion = None
        self._chat_client()

    def identity(self) -> dict:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url}

    def _chat_client(self):
        if self._chat is None:
            if self.backend == "openai":
                kw = {"base_url": self.base_url} if self.base_url else {}
                if self.base_url and not os.environ.get("OPENAI_API_KEY"):
                    kw["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore it
                self._chat = chat_openai(model=self.model, timeout=self.timeout_s, max_retries=0, **kw)
            else:
                from langchain_ollama import ChatOllama

                kw = {"base_url": self.base_url} if self.base_url else {}
                self._chat = ChatOllama(model=self.model, client_kwargs={"timeout": self.timeout_s}, **kw)
        return self._chat

    def _completion_client(self):
        with self._lock:
            return self._make_completion_client()

    def _make_completion_client(self):
        if self._completion is None:
            if self.backend == "openai":
                from langchain_openai import OpenAI

                kw = {"base_url": self.base_url} if self.base_url else {}
                if self.base_url and not os.environ.get("OPENAI_API_KEY"):
                    kw["api_key"] = "not-needed"
                self._completion = OpenAI(model=self.model, timeout=self.timeout_s, max_retries=0, **kw)
            else:
                from langchain_ollama import OllamaLLM

                kw = {"base_url": self.base_url} if self.base_url else {}
                self._completion = OllamaLLM(model=self.model, client_kwargs={"timeout": self.timeout_s}, **kw)
        return self._completion

    def _reasoning_kw(self, request: Request) -> dict:
        """The invoke arguments of the request's reasoning level (``{}`` for the default)."""
        if self.backend == "ollama":
            value = control_value(self.reasoning_control, request.reasoning)
            return {} if value is None else {"reasoning": value}
        params = openai_params(self.reasoning_control, request.reasoning)
        if "chat_template_kwargs" in params:  # not an OpenAI parameter: it goes in the body as sent
            return {"extra_body": params}
        return params

    def _invoke(self, request: Request):
        if request.messages is not None:
            if self.backend == "openai":
                kw = dict(temperature=request.temperature, max_tokens=request.max_tokens, seed=request.seed,
                          **self._reasoning_kw(request))
                if request.schema is not None:
                    kw.update(self._response_format(request))
                return self._chat_client().invoke(_lc_messages(request.messages), **kw)
            opts = {"temperature": request.temperature, "num_predict": request.max_tokens, "seed": request.seed}
            fmt = None
            if request.schema is not None and self.json_mode != "off":
                fmt = "json" if self.json_mode == "json_object" else request.schema_json()
            return self._chat_client().invoke(_lc_messages(request.messages), options=opts, format=fmt,
                                              **self._reasoning_kw(request))
        if self.backend == "openai":
            return self._completion_client().invoke(
                request.prompt, temperature=request.temperature, max_tokens=request.max_tokens, seed=request.seed
            )
        opts = {"temperature": request.temperature, "num_predict": request.max_tokens, "seed": request.seed}
        return self._completion_client().invoke(request.prompt, options=opts)

    def _response_format(self, request: Request) -> dict:
        return response_format(request, self.json_mode)

    def generate(self, request: Request) -> Reply:
        start = time.perf_counter()
        out, attempts, failed = call_or_error(lambda: cut_body(lambda: self._invoke(request)), self.max_attempts)
        if failed:
            return failed
        latency = time.perf_counter() - start
        if isinstance(out, str):  # completion models return plain text
            return Reply(text=out, latency_s=latency, attempts=attempts)
        if isinstance(out, dict):  # a body cut at max_tokens (cut_body)
            from louder.llm.openai_wire import generation_reply

            return generation_reply(out, True, latency, attempts)
        usage = getattr(out, "usage_metadata", None) or {}
        meta = getattr(out, "response_metadata", {}) or {}
        content = lc_text(out)
        thinking = lc_thinking(out)
        finish = meta.get("finish_reason") or meta.get("done_reason")
        return Reply(
            text=content,
            refusal=(out.additional_kwargs or {}).get("refusal"),
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
            latency_s=latency,
            attempts=attempts,
            finish_reason=finish,
            thinking=thinking,
            thinking_truncated=truncated_in_field(content, thinking, finish),
            reasoning_tokens=lc_reasoning_tokens(out),
        )

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        """First-token scoring through an OpenAI-compatible chat API: one JSON-mode call at
        temperature 0 with ``logprobs``/``top_logprobs``; at the token where the answer's value
        starts (right after ``prefix``), each choice gets the summed probability of the top tokens
        that begin it (and no other choice). Choices outside the top 20 get null."""
        if self.backend != "openai":
            return Reply(error="unsupported: log-prob scoring needs an OpenAI-compatible backend",
                         error_cause="unsupported")
        start = time.perf_counter()
        kw = dict(temperature=0.0, max_tokens=request.max_tokens, seed=request.seed, logprobs=True, top_logprobs=20,
                  **self._reasoning_kw(request))
        if request.schema is not None:
            kw.update(self._response_format(request))
        out, attempts, failed = call_or_error(
            lambda: self._chat_client().invoke(_lc_messages(request.messages), **kw), self.max_attempts)
        if failed:
            return failed
        content = (getattr(out, "response_metadata", {}) or {}).get("logprobs") or {}
        tokens = content.get("content") or []
        logprobs = first_token_logprobs(tokens, prefix, choices)
        usage = getattr(out, "usage_metadata", None) or {}
        if logprobs is None:
            return Reply(text=json.dumps({"logprobs": {}, "method": "first_token",
                                          "note": "answer did not start with the expected prefix",
                                          "answer": str(out.content)[:500]}),
                         latency_s=time.perf_counter() - start, attempts=attempts)
        return Reply(text=json.dumps({"logprobs": logprobs, "method": "first_token"}),
                     input_tokens=usage.get("input_tokens"), output_tokens=usage.get("output_tokens"),
                     latency_s=time.perf_counter() - start, attempts=attempts, finish_reason="score")


def _build_ollama(model: str, url: str | None, cfg):
    if url and "," in url:
        raise LouderError(f"model spec ollama:{model}@{url}: several endpoints work for openai: specs only")
    if cfg.client == "http":
        raise LouderError(f"client: http speaks the OpenAI API; for Ollama use openai:{model}@URL/v1 "
                          "(Ollama's OpenAI-compatible endpoint) or client: langchain")
    return RemoteChatModel("ollama", model, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts,
                           json_mode=cfg.json_mode, reasoning_control=getattr(cfg, "reasoning_control", None))


register(BackendInfo("ollama", _build_ollama, forms=("ollama:MODEL", "ollama:MODEL@BASE_URL"),
                     reasoning_controls=("think",), preflight=True))
