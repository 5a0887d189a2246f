"""The one narrow model interface every backend implements (after Concordia's two-method model).

``generate`` returns text for a chat conversation or a completion prompt, optionally constrained
to a pydantic schema; ``score`` returns the probability of each of a closed set of choices.
Backends never raise for a failed call: a transport failure after retries comes back as a
``Reply`` with ``error`` set, so the caller can account for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Protocol, runtime_checkable

from pydantic import BaseModel


@dataclass(frozen=True)
class Request:
    """One model call. Exactly one of ``messages`` (chat) or ``prompt`` (completion) is set.

    ``replicate`` tells identical prompts of different agents apart, so that two agents with the
    same prompt never share one cached answer. ``reasoning`` is the reasoning level asked for
    (``louder.llm.thinking.LEVELS``; None: the model's own default, no control sent).
    """

    messages: tuple[tuple[str, str], ...] | None = None
    prompt: str | None = None
    schema: type[BaseModel] | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    replicate: str = ""
    reasoning: str | None = None

    def __post_init__(self):
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a Request needs exactly one of messages or prompt")

    def schema_json(self) -> dict | None:
        return _schema_json(self.schema) if self.schema else None

    @cached_property
    def key_json(self) -> str:
        """``canonical_json(key_material())``, made once per request: its cache key and the fake model's
        draws both hash it, and rendering it was a tenth of a fake-model run. Spliced from its parts in
        sorted key order (``canonical_json`` nests), the schema's rendering made once per schema class:
        re-sorting and re-encoding the same schema dict was a third of every request's rendering."""
        # key_material's fields written out again, for speed (a generic splice over key_material() was 20 %
        # slower): tests/test_cache.py holds this to json.dumps(key_material()), so a field added there and
        # not here fails that test
        msgs = _encode([list(m) for m in self.messages]) if self.messages else "null"
        schema = _schema_canonical(self.schema) if self.schema else "null"
        reasoning = "" if self.reasoning is None else f', "reasoning": {_encode(self.reasoning)}'
        return (f'{{"max_tokens": {_encode(self.max_tokens)}, "messages": {msgs}, "prompt": {_encode(self.prompt)}'
                f'{reasoning}, "replicate": {_encode(self.replicate)}, "schema": {schema}, '
                f'"seed": {_encode(self.seed)}, "temperature": {_encode(self.temperature)}}}')

    def key_material(self) -> dict:
        """Everything that determines the answer, for the cache key."""
        out = {
            "messages": [list(m) for m in self.messages] if self.messages else None,
            "prompt": self.prompt,
            "schema": self.schema_json(),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "replicate": self.replicate,
        }
        if self.reasoning is not None:  # only when set: every request without a level keeps its old key
            out["reasoning"] = self.reasoning
        return out


@dataclass
class Reply:
    """What came back. ``error`` is set (and ``text`` empty) when the call failed after retries.

    ``text`` is the final answer only; a reasoning model's thinking is kept apart in ``thinking``
    (``louder.llm.thinking``), ``thinking_truncated`` when it never closed (cut at max_tokens, so
    there is no answer), and ``reasoning_tokens`` counts it where the server reports it (part of
    ``output_tokens``)."""

    text: str = ""
    refusal: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float = 0.0
    attempts: int = 1
    error: str | None = None
    error_cause: str | None = None  # e.g. http_400_invalid_request, timeout (louder.llm.errors)
    finish_reason: str | None = None
    thinking: str | None = None
    thinking_truncated: bool = False
    reasoning_tokens: int | None = None
    cached: bool = field(default=False, compare=False)

    def to_json(self) -> str:
        # The thinking fields only when set, so a reply without thinking is stored as before.
        d = {k: v for k, v in self.__dict__.items() if k != "cached" and not (k in _THINKING and not v)}
        return json.dumps(d)

    @classmethod
    def from_json(cls, s: str) -> Reply:
        # Unknown keys are dropped so a cache written by a newer louder still reads.
        d = json.loads(s)
        return cls(**{k: v for k, v in d.items() if k in _REPLY_FIELDS}, cached=True)


_REPLY_FIELDS = {f for f in Reply.__dataclass_fields__ if f != "cached"}
_THINKING = {"thinking", "thinking_truncated", "reasoning_tokens"}


@runtime_checkable
class LanguageModel(Protocol):
    """A backend: one model behind one API."""

    def identity(self) -> dict:
        """Stable description of the model (backend, name, base URL, file hash); never a secret."""
        ...

    def generate(self, request: Request) -> Reply: ...

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        """Log-probability of each choice as the continuation of the assistant turn that starts with
        ``prefix``, as ``Reply.text`` = JSON ``{"logprobs": {choice: float | null}, "method": ...}``."""
        ...


@cache
def _schema_json(schema: type[BaseModel]) -> dict:
    # Computed once per schema class (pydantic takes ~0.3 ms); callers must not mutate the result.
    return schema.model_json_schema()


# json.dumps(obj, sort_keys=True, ensure_ascii=False) builds this encoder at every call; one serves them all
_encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


def canonical_json(obj) -> str:
    """The JSON that ``stable_hash`` hashes: ``json.dumps(obj, sort_keys=True, ensure_ascii=False)`` (keys
    sorted, default separators). It nests: the rendering of a list or a dict is its items' renderings
    joined (``"[" + ", ".join(...) + "]"``, and for a dict ``'"key": ' + ...`` in key order), so a part
    rendered once can be spliced into a larger one."""
    return _encode(obj)


@cache
def _schema_canonical(schema: type[BaseModel]) -> str:
    return canonical_json(_schema_json(schema))


def hash_json(text: str) -> str:
    """sha256 (hex) of a canonical JSON text."""
    return hashlib.sha256(text.encode()).hexdigest()


def stable_hash(obj) -> str:
    """sha256 of a canonical JSON rendering."""
    return hash_json(canonical_json(obj))


def stable_seed(*parts) -> int:
    """A 31-bit seed derived from ``parts``; stable across processes and Python versions."""
    return int(stable_hash([str(p) for p in parts])[:8], 16) & 0x7FFFFFFF
