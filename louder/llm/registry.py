"""The backend registry: every backend declares what it can do and registers under its spec prefix.

Spec parsing, capability checks, the cost estimator and the CLI help read this table instead of
testing backend names. A backend module calls ``register(BackendInfo(...))`` at import; the
built-in modules are imported lazily (``BUILTIN``), so a run on one backend never imports the
others' libraries. A new backend is its module (with its ``register`` call) plus its test.

A backend from **another package** declares an entry point in the group ``louder.backends`` (the
packaging convention pytest and MkDocs plugins use): its name is the spec prefix, its value the
module whose import registers it, e.g. in that package's ``pyproject.toml``::

    [project.entry-points."louder.backends"]
    mine = "louder_mine.backend"

The CLI and the Python API then take ``mine:MODEL`` like a built-in spec; ``louder backends`` lists
it with its package.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from typing import Any, Callable

from louder.registry import Registry

# spec prefix → module whose import registers it
BUILTIN = {"embedded": "louder.llm.embedded", "openai": "louder.llm.openai_backend", "ollama": "louder.llm.remote",
           "fake": "louder.llm.fake", "langchain": "louder.llm.langchain_backend"}
GROUP = "louder.backends"  # the entry-point group of backends from other packages

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
    # the reasoning controls it can send (louder.llm.thinking.CONTROLS), its default first; none: only
    # the reasoning level `default` (nothing sent)
    reasoning_controls: tuple[str, ...] = ()
    # model name → its default reasoning control, where it depends on the model (langchain: the provider)
    default_control: Callable[[str], str | None] | None = None
    preflight: bool = False  # `louder check` and a run's preflight probe its endpoint (OpenAI, Ollama)
    # it answers a prompt without a schema with text written for it (the fake model writes a filler
    # sentence instead, so a test that reads free text — the word association — cannot read it)
    free_text: bool = True


def reasoning_control(info: BackendInfo, model: str, configured: str | None = None) -> str | None:
    """The control a model's reasoning levels are sent with: the configured one, else the backend's
    default for this model, else its first declared control (None: it has none)."""
    if configured:
        return configured
    if info.default_control is not None:
        return info.default_control(model)
    return info.reasoning_controls[0] if info.reasoning_controls else None


BACKENDS: Registry[BackendInfo] = Registry("backend", BackendInfo, key=lambda info: info.prefix, group=GROUP)


def register(info: BackendInfo) -> None:
    """Make ``info.prefix:...`` specs build ``info.build``'s backend (replacing an earlier one)."""
    BACKENDS.register(info)


def unregister(prefix: str) -> None:
    BACKENDS.unregister(prefix)


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """prefix → entry point of the ``louder.backends`` group (installed packages; read once)."""
    return {name: ep for name, ep in BACKENDS.entry_points().items() if name not in BUILTIN}


def outside() -> dict[str, str]:
    """prefix → the distribution (package) that provides it, for the backends of other packages."""
    return {name: (ep.dist.name if ep.dist is not None else ep.value.split(":")[0].split(".")[0])
            for name, ep in _entry_points().items()}


def prefixes() -> list[str]:
    return sorted(set(BUILTIN) | set(BACKENDS.names()) | set(_entry_points()))


def backend_info(prefix: str) -> BackendInfo | None:
    """The registered backend for ``prefix`` (importing its built-in module, or the module of its
    entry point, if needed), or None."""
    if prefix not in BACKENDS and prefix in BUILTIN:
        importlib.import_module(BUILTIN[prefix])
    elif prefix not in BACKENDS and prefix in _entry_points():
        _load(_entry_points()[prefix])
    return BACKENDS.find(prefix)


def _load(ep: importlib.metadata.EntryPoint) -> None:
    """Import an outside backend's module (its import registers it, or it names a BackendInfo); a broken
    one is one clear line."""
    from louder.errors import LouderError

    BACKENDS.load(ep)
    if ep.name not in BACKENDS:
        raise LouderError(f"backend {ep.name!r}: entry point {ep.value} loaded but registered no backend named "
                          f"{ep.name!r}; its module must call louder.llm.registry.register(BackendInfo({ep.name!r}, "
                          "...)) or the entry point must name a BackendInfo")


def spec_forms() -> str:
    """Every spec form of every backend, for messages and help (an outside backend that fails to load
    is left out here; naming it in a spec gives its own error)."""
    from louder.errors import LouderError

    forms = []
    for p in prefixes():
        try:
            info = backend_info(p)
        except LouderError:
            continue
        forms += list(info.forms) if info else []
    return ", ".join(forms)
