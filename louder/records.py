"""The run context every kind of run opens: output folder, run id, cache, prompts, one session per model.

Status counting lives in ``louder.status`` and the manifest fields in ``louder.manifest``; their
names stay importable from here for one release."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.cache import ResponseCache
from louder.llm.client import Client
from louder.llm.limits import RateLimiter
from louder.llm.registry import backend_info
from louder.llm.spec import ModelConfig, build_backend, parse_spec
from louder.manifest import call_counts, model_identities, package_versions  # noqa: F401 (re-export)
from louder.prompts import Prompts
from louder.session import ModelSession
from louder.status import status_by, status_counts  # noqa: F401 (re-export)


def open_sessions(config: ExperimentConfig, cache: ResponseCache, prompts: Prompts,
                  retry_errors: bool) -> dict[str, ModelSession]:
    """One session per model of the config, all sharing one cap on calls in flight."""
    slots = threading.BoundedSemaphore(config.concurrency)
    return {m.label: open_session(config, m, cache, prompts, retry_errors, slots) for m in config.models}


def open_session(config: ExperimentConfig, mcfg: ModelConfig, cache: ResponseCache, prompts: Prompts,
                 retry_errors: bool, slots: threading.Semaphore | None = None) -> ModelSession:
    """The clients (model and, on the completion path, extractor) of one model of the config."""
    api, backend_name, _, _ = parse_spec(mcfg.spec)
    info = backend_info(backend_name)
    if config.decision_mode == "score" and (api == "completion" or not info.can_score):
        raise LouderError(f"decision_mode: score needs the embedded model or an OpenAI-compatible chat model "
                          f"(log-probs); {mcfg.spec} cannot score — use decision_mode: sample for it")
    backend = build_backend(mcfg.spec.removeprefix("completion:"), mcfg)
    # A backend may serve fewer calls at once than the config allows (llama.cpp: one).
    concurrency = min(info.concurrency, config.concurrency) if info.concurrency else config.concurrency
    limiter = None
    if mcfg.requests_per_minute or mcfg.tokens_per_minute:
        limiter = RateLimiter(mcfg.requests_per_minute, mcfg.tokens_per_minute)
    client = Client(backend, cache, concurrency, retry_errors, slots=slots, limiter=limiter)
    extractor = client
    if mcfg.extractor:
        extractor = Client(build_backend(mcfg.extractor), cache, concurrency, retry_errors, slots=slots,
                           local=client._local)
    return ModelSession(mcfg.label, api, client, extractor, prompts, config)


class RunContext:
    """What every kind of run opens and records: output folder, run id, cache, prompts, one session
    per model, and the manifest fields they all share."""

    def __init__(self, config: ExperimentConfig, out_dir, retry_errors: bool = False):
        self.start = time.perf_counter()
        self.started_at = datetime.now(timezone.utc).isoformat()
        self.config = config
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.run_id = config.run_id or self.out.resolve().name
        self.cache = ResponseCache(config.cache or self.out / "cache.sqlite")
        self.prompts = Prompts()
        try:
            self.sessions = open_sessions(config, self.cache, self.prompts, retry_errors)
        except BaseException:
            self.cache.close()
            raise

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
            **call_counts(self.sessions),
            "seed": self.config.seed,
            "config": self.config.model_dump(mode="json"),
            "models": model_identities(self.sessions),
            "prompt_template_sha256": self.prompts.hashes(),
            "package_versions": package_versions(),
            **fields,
        }
