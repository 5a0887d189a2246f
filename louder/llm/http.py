"""A lean OpenAI-compatible client over httpx, for high-throughput runs against vLLM,
``llama_cpp.server`` or Ollama's /v1 (``client: http`` in a model's config).

LangChain's ChatOpenAI costs ~5 ms of Python per call; this client ~1 ms, which is what lets a
2-core machine keep 64 calls in flight. Same requests, same answers, same cache identity.
"""

from __future__ import annotations

import os
import time

import httpx

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.openai_wire import generation_reply, request_body, score_reply
from louder.llm.remote import RemoteChatModel
from louder.llm.retry import call_or_error
from louder.llm.tls import context as tls_context


class HTTPChatModel(RemoteChatModel):
    """``openai:MODEL@BASE_URL`` spoken directly over HTTP (chat and completions endpoints)."""

    def __init__(self, model: str, base_url: str | None, timeout_s: float = 120.0, max_attempts: int = 6,
                 json_mode: str = "json_schema", max_connections: int = 256, reasoning_control: str | None = None):
        if not base_url and not os.environ.get("OPENAI_API_KEY"):
            raise LouderError(f"model openai:{model} needs the OPENAI_API_KEY environment variable "
                              "(or a base URL, e.g. openai:MODEL@http://127.0.0.1:8000/v1, for a local server)")
        self.backend, self.model, self.base_url = "openai", model, base_url
        self.timeout_s, self.max_attempts, self.json_mode = timeout_s, max_attempts, json_mode
        self.reasoning_control = reasoning_control or "reasoning_effort"
        headers = {}
        if os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        root = (base_url or "https://api.openai.com/v1").rstrip("/") + "/"
        self._http = httpx.Client(base_url=root, headers=headers, timeout=timeout_s, verify=tls_context(),
                                  limits=httpx.Limits(max_connections=max_connections,
                                                      max_keepalive_connections=max_connections))

    def _post(self, path: str, body: dict) -> dict:
        r = self._http.post(path, json=body)
        r.raise_for_status()
        return r.json()

    def _call(self, request: Request, score: bool = False) -> tuple[dict | None, int, Reply | None]:
        path, body = request_body(self.model, request, self.json_mode, score=score,
                                  reasoning_control=self.reasoning_control)
        return call_or_error(lambda: self._post(path, body), self.max_attempts)

    def generate(self, request: Request) -> Reply:
        start = time.perf_counter()
        out, attempts, failed = self._call(request)
        if failed:
            return failed
        return generation_reply(out, request.messages is not None, time.perf_counter() - start, attempts)

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        start = time.perf_counter()
        out, attempts, failed = self._call(request, score=True)
        if failed:
            return failed
        return score_reply(out, prefix, choices, time.perf_counter() - start, attempts)
