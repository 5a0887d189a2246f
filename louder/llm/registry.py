"""The backend registry: every backend declares what it can do and registers under its spec prefix.

Spec parsing, capability checks, the cost estimator and the CLI help read this table instead of
testing backend names. A backend module calls ``register(BackendInfo(...))`` at import; the
built-in modules are imported lazily (``BUILTIN``), so a run on one backend never imports the
others' libraries. A new backend is its module (with its ``register`` call) plus its test; a
backend outside louder registers by importing its module before the config is read.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

# spec prefix → module whose import registers it
BUILTIN = {"embedded": "louder.llm.embedded", "openai": "louder.llm.openai_backend", "ollama": "louder.llm.remote",
           "fake": "louder.llm.fake"}

_REGISTRY: dict[str, BackendInfo] = {}


@dataclass(frozen=True)
class BackendInfo:
    prefix: str
    # (model, base_url, ModelConfig) → a LanguageModel
    build: Callable[[str, str | None, Any], Any]
    forms: tuple[str, ...]  # the spec forms, for error messages and help
    can_score: bool = False  # log-probs of a closed set of choices (decision_mode: score)
    local: bool = False  # runs on this machine: free in the cost estimate
    concurrency: int | None = None  # calls in flight it can serve (None: the config's concurrency)
    needs_key: str | None = None  # environment variable holding its API key (not needed with a base URL)
    takes_url: bool = True  # MODEL@BASE_URL form
    model_optional: bool = False  # the spec may name no model (``embedded``, ``fake``)
    priced: bool = False  # model names are looked up in louder/data/prices.yaml (without a base URL)


def register(info: BackendInfo) -> None:
    """Make ``info.prefix:...`` specs build ``info.build``'s backend (replacing an earlier one)."""
    _REGISTRY[info.prefix] = info


def unregister(prefix: str) -> None:
    _REGISTRY.pop(prefix, None)


def prefixes() -> list[str]:
    return sorted(set(BUILTIN) | set(_REGISTRY))


def backend_info(prefix: str) -> BackendInfo | None:
    """The registered backend for ``prefix`` (importing its built-in module if needed), or None."""
    if prefix not in _REGISTRY and prefix in BUILTIN:
        importlib.import_module(BUILTIN[prefix])
    return _REGISTRY.get(prefix)


def spec_forms() -> str:
    """Every spec form of every backend, for messages and help."""
    return ", ".join(f for p in prefixes() if (info := backend_info(p)) for f in info.forms)
