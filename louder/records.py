"""The run context every kind of run opens: output folder, run id, cache, prompts, one session per model.

Status counting lives in ``louder.status`` and the manifest fields in ``louder.manifest``."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.batch import Recorder
from louder.llm.cache import ResponseCache
from louder.llm.client import Circuit, Client, fail_fast_window
from louder.llm.limits import rate_limited
from louder.llm.preflight import negotiate
from louder.llm.registry import backend_info
from louder.llm.spec import ModelConfig, build_backend, parse_spec
from louder.manifest import call_counts, design_hashes, model_identities, package_versions
from louder.prompts import Prompts
from louder.runfolder import out_folder
from louder.session import ModelSession


def open_sessions(config: ExperimentConfig, cache: ResponseCache, prompts: Prompts, retry_errors: bool,
                  preflight_path: Path | None = None, planned_calls: int | None = None,
                  recorder: Recorder | None = None, stop: threading.Event | None = None) -> dict[str, ModelSession]:
    """One session per model of the config, all sharing one cap on calls in flight (and one ``stop``
    event: set, no client starts another call)."""
    slots = threading.BoundedSemaphore(config.concurrency)
    # one thread-local for every client: a map's cache-only first pass (louder.llm.client) holds for the calls of
    # all models, so that the agents of a mixed-model population (`mix:`) each asking its own model run side by side
    local = threading.local()
    sessions = {m.label: open_session(config, m, cache, prompts, retry_errors, slots, preflight_path, planned_calls,
                                      recorder, stop, local) for m in config.models}
    if config.population is not None and config.population.twin_rewriter:
        add_rewriter(config, sessions, cache, retry_errors, slots, preflight_path, planned_calls, recorder, stop)
    return sessions


def add_rewriter(config: ExperimentConfig, sessions: dict[str, ModelSession], cache: ResponseCache,
                 retry_errors: bool, slots: threading.Semaphore, preflight_path: Path | None,
                 planned_calls: int | None, recorder: Recorder | None, stop: threading.Event | None = None) -> None:
    """Give every session a client of ``population.twin_rewriter`` (preflighted like a model of the run): one
    backend, one client per session, so each shares its session's cache-only first pass and counts its
    own calls."""
    spec = config.population.twin_rewriter
    same = next((s.client for s in sessions.values() if s.label == spec and s.api == "chat"), None)
    if same is not None:  # a model of the run: its backend, not a second copy (an embedded model is large)
        backend = same.backend
    else:
        rcfg, _ = negotiate(ModelConfig(spec=spec), preflight_path)
        backend = build_backend(spec, rcfg)
    info = backend_info(parse_spec(spec)[1])
    concurrency = min(info.concurrency, config.concurrency) if info.concurrency else config.concurrency
    for s in sessions.values():
        if s.client is same:
            continue  # rewriter None: the model itself
        s.rewriter = Client(backend, cache, concurrency, retry_errors, slots=slots, local=s.client._local,
                            circuit=Circuit(fail_fast_window(planned_calls), spec, config.stop_after_errors),
                            recorder=recorder, label=spec, stop=stop)


def open_session(config: ExperimentConfig, mcfg: ModelConfig, cache: ResponseCache, prompts: Prompts,
                 retry_errors: bool, slots: threading.Semaphore | None = None, preflight_path: Path | None = None,
                 planned_calls: int | None = None, recorder: Recorder | None = None,
                 stop: threading.Event | None = None, local: threading.local | None = None) -> ModelSession:
    """The clients (model and, on the completion path, extractor) of one model of the config.

    Remote models get a preflight first (cached in ``preflight_path``): ``json_mode: auto`` becomes the
    best mode the endpoint accepts, and what cannot work (no server, key refused, no log-probs for
    score mode) fails here, before any agent runs. With a ``recorder`` (batch export) the clients
    record the requests they miss instead of calling the model."""
    api, backend_name, _, _ = parse_spec(mcfg.spec)
    info = backend_info(backend_name)
    score = config.simulation.decision_mode == "score"
    if score and (api == "completion" or not info.can_score):
        raise LouderError(f"decision_mode: score needs the embedded model or an OpenAI-compatible chat model "
                          f"(log-probs); {mcfg.spec} cannot score — use decision_mode: sample for it")
    used, pf = negotiate(mcfg, preflight_path, logprobs=score, chat=not (api == "completion" and mcfg.extractor))
    if score and pf is not None and not pf.logprobs:
        raise LouderError(f"decision_mode: score needs log-probs, and {mcfg.spec} returns none "
                          f"({pf.detail('logprobs')}); use decision_mode: sample for it")
    negotiated = {} if pf is None else {"model": pf.summary(used.json_mode, "config" if mcfg.json_mode != "auto"
                                                              else "auto")}
    backend = rate_limited(build_backend(mcfg.spec.removeprefix("completion:"), used),
                           mcfg.requests_per_minute, mcfg.tokens_per_minute)
    check_levels(mcfg.spec, getattr(backend, "reasoning_control", None), config.simulation.reasoning)
    # A backend may serve fewer calls at once than the config allows (llama.cpp: one).
    concurrency = min(info.concurrency, config.concurrency) if info.concurrency else config.concurrency
    window = fail_fast_window(planned_calls)
    client = Client(backend, cache, concurrency, retry_errors, slots=slots, local=local,
                    circuit=Circuit(window, mcfg.spec, config.stop_after_errors), recorder=recorder, label=mcfg.label,
                    stop=stop, thinking_tags=tuple(mcfg.thinking_tags))
    extractor = client
    if mcfg.extractor:
        ecfg, epf = negotiate(ModelConfig(spec=mcfg.extractor), preflight_path)
        if epf is not None:
            negotiated["extractor"] = epf.summary(ecfg.json_mode, "auto")
        extractor = Client(build_backend(mcfg.extractor, ecfg), cache, concurrency, retry_errors, slots=slots,
                           local=client._local, circuit=Circuit(window, mcfg.extractor, config.stop_after_errors),
                           recorder=recorder, label=mcfg.extractor, stop=stop)
    return ModelSession(mcfg.label, api, client, extractor, prompts, config, extra={"preflight": negotiated})


def check_levels(spec: str, control: str | None, levels) -> None:
    """One line naming the model and the level when a reasoning level of the run cannot be sent to it
    (``control``: the backend's ``reasoning_control``; None: it has none)."""
    from louder.llm.thinking import honoured, unhonoured

    for level in levels:
        if level not in honoured(control):
            raise LouderError(f"simulation.reasoning: {unhonoured(control, level, f'model {spec}')} — drop the "
                              "level, or give the model another `reasoning_control:` (docs/how-to/reasoning-models.md)")


class RunContext:
    """What every kind of run opens and records: output folder, run id, cache, prompts, one session
    per model, and the manifest fields they all share."""

    def __init__(self, config: ExperimentConfig, out_dir, retry_errors: bool = False,
                 planned_calls: int | None = None, recorder: Recorder | None = None):
        self.start = time.perf_counter()
        self.started_at = datetime.now(timezone.utc).isoformat()
        self.config = config
        self.out = out_folder(out_dir)
        self.run_id = config.run_id or self.out.resolve().name
        self.cache = ResponseCache(config.cache or self.out / "cache.sqlite")
        self.stop = threading.Event()  # set when the run is being stopped: no client starts another call
        self.prompts = Prompts()
        self.retry_errors = retry_errors
        self.planned_calls = planned_calls  # model calls of a cold run, from the task's plan
        # Batch export: calls are recorded, not made; a run that still waits for answers writes nothing.
        self.recorder = recorder
        self._remote_counts: dict[str, float] = {}  # calls made by workers of other processes (Ray)
        self.generation: str | None = None  # the write's generation id, set before the tables are made
        self.streams: list = []  # tables written as they are made (louder.task.Streamed): dropped on failure
        try:
            self.sessions = open_sessions(config, self.cache, self.prompts, retry_errors,
                                          self.out / "preflight.json", planned_calls, recorder, self.stop)
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
    def concurrency(self) -> int:
        """How many items of the run to take on at once: the config's concurrency, or fewer when every model
        of the run serves fewer calls at once. An in-process model (fake, embedded) serves one: items side by
        side would only take turns at the interpreter and the cache."""
        most = max((c.concurrency for s in self.sessions.values() for c in (s.client, s.extractor, s.rewriter)
                    if c is not None), default=self.config.concurrency)
        return min(self.config.concurrency, most)

    @property
    def deferred(self) -> bool:
        return self.recorder is not None and len(self.recorder) > 0

    def kept(self) -> int | None:
        """Answers the cache holds now (None when it cannot say)."""
        try:
            return len(self.cache)
        except LouderError:
            return None

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
            "planned_calls": self.planned_calls,
            **self.counts(),
            "seed": self.config.seed,
            "config": self.config.model_dump(mode="json"),
            "models": model_identities(self.sessions),
            # json_mode chosen per remote model (auto: by the preflight) and what the endpoint can do
            "preflight": {label: s.extra.get("preflight") or None for label, s in self.sessions.items()},
            "prompt_template_sha256": self.prompts.hashes(),
            "design_sha256": design_hashes(self.config),  # issue 42: what `louder compare` checks
            "package_versions": package_versions(),
            **fields,
        }
