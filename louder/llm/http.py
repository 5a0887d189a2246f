"""A lean OpenAI-compatible client over httpx, for high-throughput runs against vLLM,
``llama_cpp.server`` or Ollama's /v1 (``client: http`` in a model's config).

LangChain's ChatOpenAI costs ~5 ms of Python per call; this client ~1 ms, which is what lets a
2-core machine keep 64 calls in flight. Same requests, same answers, same cache identity.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import httpx

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.remote import RemoteChatModel, first_token_logprobs
from louder.llm.retry import call_or_error


class HTTPChatModel(RemoteChatModel):
    """``openai:MODEL@BASE_URL`` spoken directly over HTTP (chat and completions endpoints)."""

    def __init__(self, model: str, base_url: str | None, timeout_s: float = 120.0, max_attempts: int = 6,
                 json_mode: str = "json_schema", max_connections: int = 256):
        if not base_url and not os.environ.get("OPENAI_API_KEY"):
            raise LouderError(f"model openai:{model} needs the OPENAI_API_KEY environment variable "
                              "(or a base URL, e.g. openai:MODEL@http://127.0.0.1:8000/v1, for a local server)")
        self.backend, self.model, self.base_url = "openai", model, base_url
        self.timeout_s, self.max_attempts, self.json_mode = timeout_s, max_attempts, json_mode
        headers = {}
        if os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        root = (base_url or "https://api.openai.com/v1").rstrip("/") + "/"
        self._http = httpx.Client(base_url=root, headers=headers, timeout=timeout_s,
                                  limits=httpx.Limits(max_connections=max_connections,
                                                      max_keepalive_connections=max_connections))

    def _post(self, path: str, body: dict) -> dict:
        r = self._http.post(path, json=body)
        r.raise_for_status()
        return r.json()

    def _call(self, request: Request, extra: dict | None = None) -> tuple[dict | None, int, Reply | None]:
        body: dict = {"model": self.model, "temperature": request.temperature, "max_tokens": request.max_tokens,
                      "seed": request.seed, **(extra or {})}
        if request.messages is not None:
            body["messages"] = [{"role": r, "content": c} for r, c in request.messages]
            if request.schema is not None:
                body.update(self._response_format(request))
            path = "chat/completions"
        else:
            body["prompt"] = request.prompt
            path = "completions"
        return call_or_error(lambda: self._post(path, body), self.max_attempts)

    def generate(self, request: Request) -> Reply:
        start = time.perf_counter()
        out, attempts, failed = self._call(request)
        if failed:
            return failed
        try:
            choice = out["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") if request.messages is not None else choice.get("text")
        except (KeyError, IndexError, TypeError):
            return Reply(error=f"request failed: unexpected response shape {str(out)[:300]}",
                         latency_s=time.perf_counter() - start, attempts=attempts)
        usage = out.get("usage") or {}
        return Reply(text=text or "", refusal=message.get("refusal"), input_tokens=usage.get("prompt_tokens"),
                     output_tokens=usage.get("completion_tokens"), latency_s=time.perf_counter() - start,
                     attempts=attempts, finish_reason=choice.get("finish_reason"))

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        start = time.perf_counter()
        out, attempts, failed = self._call(replace(request, temperature=0.0), {"logprobs": True, "top_logprobs": 20})
        if failed:
            return failed
        try:
            tokens = out["choices"][0]["logprobs"]["content"] or []
        except (KeyError, IndexError, TypeError):
            tokens = []
        logprobs = first_token_logprobs(tokens, prefix, choices)
        usage = out.get("usage") or {}
        return Reply(text=json.dumps({"logprobs": logprobs or {}, "method": "first_token"}),
                     input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens"),
                     latency_s=time.perf_counter() - start, attempts=attempts, finish_reason="score")
