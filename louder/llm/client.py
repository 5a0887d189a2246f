"""The call path every model call of an experiment takes: cache lookup, backend, cache write.

``Client.map`` fans work out over a thread pool bounded by ``concurrency`` and returns results in
input order; every finished call is committed to the cache as it arrives, so concurrency never
costs resumability.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

from louder.errors import LouderError
from louder.llm.base import LanguageModel, Reply, Request, stable_hash
from louder.llm.batch import Pending, Recorder
from louder.llm.cache import ResponseCache, cache_key
from louder.llm.errors import TRANSIENT, fix_for, redact
from louder.llm.thinking import DEFAULT_TAGS, separate

T = TypeVar("T")
R = TypeVar("R")


class CacheMiss(Exception):
    """Raised inside ``Client.map``'s cache-only first pass when a call would reach the model."""


class Deferred(Exception):
    """Raised by ``Client.map`` in recording mode when some items need answers not yet cached:
    their requests are in the recorder (the next batch stage) and the work cannot go on."""


class FailFastError(LouderError):
    """The first calls of a run all failed the same way, one that retrying cannot fix."""


def fail_fast_window(planned_calls: int | None) -> int:
    """How many first calls must all fail alike before a run stops: 5 % of the run, at least 3
    (one odd failure never stops a run) and at most 20 (a big run stops early)."""
    if not planned_calls:
        return 20
    return max(3, min(20, math.ceil(0.05 * planned_calls)))


class Circuit:
    """Watches the first model calls of a run. If the first ``window`` of them all fail with the same
    non-transient cause (HTTP 400, 401, 404, a validation error, …), every further call would fail
    too: the circuit opens, and every call from then on raises ``FailFastError`` at once.

    The failed replies of that window are taken back out of the cache (they say nothing about the
    model), so the re-run after the fix asks again; every answer that did arrive stays cached.
    Any success, transient failure or second cause settles the circuit for the rest of the run.
    """

    def __init__(self, window: int, label: str):
        self.window, self.label = window, label
        self._lock = threading.Lock()
        self._settled = False
        self._cause: str | None = None
        self._keys: list[str] = []
        self._first_error = ""
        self.error: FailFastError | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def record(self, key: str, reply: Reply, cache: ResponseCache | None) -> None:
        with self._lock:
            if self.error is not None:
                if reply.error is not None and cache is not None:
                    cache.delete([key])
                raise self.error
            if self._settled:
                return
            cause = reply.error_cause if reply.error is not None else None
            if cause is None or cause in TRANSIENT or (self._cause is not None and cause != self._cause):
                self._settled = True
                return
            self._cause = self._cause or cause
            self._first_error = self._first_error or reply.error
            self._keys.append(key)
            if len(self._keys) < self.window:
                return
            if cache is not None:
                cache.delete(self._keys)
            said = self._first_error.split(": ", 3)[-1][:300].replace("\n", " ")
            self.error = FailFastError(
                f"stopped: the first {len(self._keys)} calls to {self.label} all failed with {cause} ({said}). "
                f"Fix: {fix_for(cause)}. Answers that arrived are cached; run the same command again to resume.")
            raise self.error


class Client:
    def __init__(
        self,
        backend: LanguageModel,
        cache: ResponseCache | None,
        concurrency: int = 1,
        retry_errors: bool = False,
        slots: threading.Semaphore | None = None,
        local: threading.local | None = None,
        recorder: Recorder | None = None,
        label: str = "",
        circuit: Circuit | None = None,
        thinking_tags: tuple[str, ...] = DEFAULT_TAGS,
    ):
        self.backend = backend
        self.cache = cache
        self.concurrency = max(1, concurrency)
        self.retry_errors = retry_errors
        self.model_calls = 0
        self.cache_hits = 0
        self.model_seconds = 0.0
        self._count_lock = threading.Lock()
        self._identity = backend.identity()
        # One semaphore shared by every client of a run caps the calls in flight globally.
        self.slots = slots or threading.BoundedSemaphore(self.concurrency)
        # Per thread: answer from the cache only (map's first pass). Shared with the session's
        # extractor client, so a two-call answer obeys the same pass.
        self._local = local or threading.local()
        # Recording mode (batch export): a cache miss is written down, never sent to the model.
        self.recorder = recorder
        self.label = label or str(self._identity.get("model", ""))
        self.circuit = circuit
        self.thinking_tags = tuple(thinking_tags)

    def identity(self) -> dict:
        return self._identity

    def _key_identity(self, request: Request) -> dict:
        """The identity in a request's cache key: with a reasoning level, also the control that sends it
        (the same level sent another way is another question); without one, the identity as before."""
        if request.reasoning is None:
            return self._identity
        return {**self._identity, "reasoning_control": getattr(self.backend, "reasoning_control", None)}

    @property
    def waited_s(self) -> float:
        """Seconds this client's calls waited for their rate budget (``RateLimited`` backends)."""
        return getattr(self.backend, "waited_s", 0.0)

    def call(self, request: Request) -> Reply:
        """The model's answer to ``request``, from the cache or the backend, with any thinking left in
        its text moved to ``Reply.thinking`` (``louder.llm.thinking.separate``): every caller reads the
        final answer only. The cache keeps the reply as the backend gave it."""
        reply = self._cached(cache_key(self._key_identity(request), request), request,
                             lambda: self.backend.generate(request))
        return separate(reply, self.thinking_tags)

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        """``backend.score`` through the same cache, limits and counters as ``call``."""
        key = stable_hash({"model": self._key_identity(request), "request": request.key_material(),
                           "score": {"prefix": prefix, "choices": list(choices)}})
        return self._cached(key, request, lambda: self.backend.score(request, prefix, choices),
                            (prefix, tuple(choices)))

    def _cached(self, key: str, request: Request, compute: Callable[[], Reply],
                score: tuple[str, tuple[str, ...]] | None = None) -> Reply:
        if self.cache is not None:
            retry = self.retry_errors or (self.recorder is not None and self.recorder.retry_errors)
            hit = self.cache.get(key, retry_errors=retry)
            if hit is not None:
                with self._count_lock:
                    self.cache_hits += 1
                return hit
        if self.recorder is not None:
            self.recorder.add(Pending(key, self.label, getattr(self.backend, "model", ""),
                                      getattr(self.backend, "json_mode", "json_schema"), request, score,
                                      getattr(self.backend, "reasoning_control", None)))
            raise CacheMiss(key)
        if getattr(self._local, "cache_only", False):
            raise CacheMiss(key)
        if self.circuit is not None:
            self.circuit.check()
        with self.slots:
            reply = compute()
        if reply.error:  # whatever the backend, no key reaches the cache, the data or a log
            reply = dataclasses.replace(reply, error=redact(reply.error))
        with self._count_lock:
            self.model_calls += 1
            self.model_seconds += reply.latency_s
        if self.cache is not None:
            self.cache.put(key, reply)
        if self.circuit is not None:
            self.circuit.record(key, reply, self.cache)
        return reply

    def map(self, fn: Callable[[T], R], items: Iterable[T], on_done: Callable[[], None] | None = None) -> list[R]:
        """``[fn(x) for x in items]`` run ``concurrency`` at a time, in input order.

        A first pass in the calling thread serves every item whose calls are all cached (a re-run or
        the finished part of a resumed run) without thread overhead; an item that needs the model
        stops at its first uncached call (its finished calls stay cached) and goes to the pool.
        ``fn`` must therefore be safe to run again after a ``CacheMiss``.
        """
        items = list(items)
        results: list = [None] * len(items)
        pending = []
        self._local.cache_only = True
        try:
            for i, x in enumerate(items):
                try:
                    results[i] = fn(x)
                except CacheMiss:
                    pending.append(i)
                    continue
                if on_done:
                    on_done()
        finally:
            self._local.cache_only = False
        if self.recorder is not None and pending:
            raise Deferred(f"{len(pending)} items wait for answers that are not cached yet")

        def run(i: int):
            r = fn(items[i])
            if on_done:
                on_done()
            return r

        if self.concurrency == 1 or len(pending) <= 1:
            for i in pending:
                results[i] = run(i)
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(pending))) as pool:
                for i, r in zip(pending, pool.map(run, pending)):
                    results[i] = r
        return results


def run_all(tasks: list[Callable[[], R]], concurrency: int, n_items: int) -> list[R]:
    """Run independent tasks (the cases of an experiment, each with its share of ``n_items`` model
    calls) side by side, in order: enough at once that their items can fill ``concurrency`` call
    slots. The calls inside them still pass the clients' global in-flight limit."""
    tasks = [_deferrable(t) for t in tasks]
    per_task = max(1, n_items // max(1, len(tasks)))
    workers = min(len(tasks), 1 + -(-concurrency // per_task))
    if workers <= 1 or len(tasks) <= 1:
        return [t() for t in tasks]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda t: t(), tasks))


def _deferrable(task: Callable[[], R]) -> Callable[[], R | None]:
    """In recording mode a task that waits for answers ends with None, so every other task still
    runs and records its own requests."""

    def run():
        try:
            return task()
        except Deferred:
            return None

    return run
