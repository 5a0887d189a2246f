"""The call path every model call of an experiment takes: cache lookup, backend, cache write.

``Client.map`` fans work out over a thread pool bounded by ``concurrency`` and returns results in
input order; every finished call is committed to the cache as it arrives, so concurrency never
costs resumability. It streams: items are taken from the iterable as the pool has room for them,
so the first call is made after the first item, not after the whole plan was built.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterable, TypeVar

from louder.errors import LouderError
from louder.llm.base import LanguageModel, Reply, Request, canonical_json
from louder.llm.batch import Pending, Recorder
from louder.llm.cache import ResponseCache, cache_key
from louder.llm.errors import fix_for, is_transient_cause, redact
from louder.llm.thinking import DEFAULT_TAGS, separate

T = TypeVar("T")
R = TypeVar("R")


class CacheMiss(Exception):
    """Raised inside ``Client.map``'s cache-only first pass when a call would reach the model."""


class Deferred(Exception):
    """Raised by ``Client.map`` in recording mode when some items need answers not yet cached:
    their requests are in the recorder (the next batch stage) and the work cannot go on."""


class FailFastError(LouderError):
    """A run stopped because going on would only fail: the key was refused (401/403, quota), the first
    calls all failed the same way, or many calls in a row failed with one cause retrying cannot fix."""


class Stopped(Exception):
    """Raised in the threads of a run that is being stopped (Ctrl-C, or another item failed)."""


# Causes that no further call can escape (a key refused or revoked, the quota spent): a short streak
# of them stops a run, whatever ``stop_after_errors`` says; one alone may be a proxy's hiccup.
FATAL = {"http_401_unauthorized", "http_403_forbidden", "http_429_quota"}
FATAL_STREAK = 5
STREAK = 20  # calls in a row failing with one non-transient cause that stop a run (``stop_after_errors``)


def fail_fast_window(planned_calls: int | None) -> int:
    """How many first calls must all fail alike before a run stops: 5 % of the run, at least 3
    (one odd failure never stops a run) and at most 20 (a big run stops early)."""
    if not planned_calls:
        return 20
    return max(3, min(20, math.ceil(0.05 * planned_calls)))


class Circuit:
    """Watches the calls to one model and opens — every call from then on raises ``FailFastError`` at
    once — when going on would only burn calls:

    - a cause no call escapes (``FATAL``: the key refused, 401/403, or the quota spent) ``FATAL_STREAK``
      times in a row (or ``streak``, if fewer);
    - the first ``window`` calls all failing with the same non-transient cause (HTTP 400, 404, a
      validation error, …): the model cannot answer this run at all;
    - ``streak`` calls in a row failing with the same non-transient cause, at any point of the run
      (a success resets the count; transient failures neither count nor reset it).

    Every failed reply of the cause that opened it (those before the streak too: calls answer out of
    order, so a success may land between them) and any failure after are taken back out of the cache
    — they say nothing about the model — so the re-run after the fix asks again; every answer that
    did arrive stays cached.
    """

    def __init__(self, window: int, label: str, streak: int = STREAK):
        self.window, self.label, self.streak = window, label, max(1, streak)
        self._lock = threading.Lock()
        self._settled = False  # the first-window rule is done with (a success, a transient or second cause)
        self._cause: str | None = None
        self._keys: list[str] = []
        self._first_error = ""
        self._run_cause: str | None = None  # the current streak of one non-transient cause
        self._run_keys: list[str] = []
        self._run_error = ""
        self._failed: dict[str, list[str]] = {}  # cause → keys of the calls that failed with it
        self.error: FailFastError | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def _open(self, cache: ResponseCache | None, what: str, cause: str, error: str) -> None:
        if cache is not None:
            cache.delete(self._failed.get(cause, []))
        said = error.split(": ", 3)[-1][:300].replace("\n", " ")
        self.error = FailFastError(f"stopped: {what} {cause} ({said}). Fix: {fix_for(cause)}. Answers that arrived "
                                   "are cached; run the same command again to resume.")
        raise self.error

    def record(self, key: str, reply: Reply, cache: ResponseCache | None) -> None:
        with self._lock:
            if self.error is not None:
                if reply.error is not None and cache is not None:
                    cache.delete([key])
                raise self.error
            cause = (reply.error_cause or "other") if reply.error is not None else None
            hard = cause is not None and not is_transient_cause(cause)
            if hard:
                self._failed.setdefault(cause, []).append(key)
                if cause != self._run_cause:
                    self._run_cause, self._run_keys, self._run_error = cause, [], reply.error
                self._run_keys.append(key)
            elif cause is None:
                self._run_cause, self._run_keys = None, []
            if not self._settled:
                if not hard or (self._cause is not None and cause != self._cause):
                    self._settled = True
                else:
                    self._cause = self._cause or cause
                    self._first_error = self._first_error or reply.error
                    self._keys.append(key)
                    if len(self._keys) >= self.window:
                        self._open(cache, f"the first {len(self._keys)} calls to {self.label} all failed with",
                                   cause, self._first_error)
            if len(self._run_keys) >= (min(self.streak, FATAL_STREAK) if self._run_cause in FATAL else self.streak):
                self._open(cache, f"{len(self._run_keys)} calls in a row to {self.label} failed with",
                           self._run_cause, self._run_error)


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
        stop: threading.Event | None = None,
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
        self._identity_json = canonical_json(self._identity)  # the model part of every cache key, rendered once
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
        # Shared by every client of a run: set when the run is being stopped (Ctrl-C), so no thread
        # starts another call.
        self.stop = stop or threading.Event()

    def identity(self) -> dict:
        return self._identity

    def _key_identity(self, request: Request) -> dict | str:
        """The identity in a request's cache key: with a reasoning level, also the control that sends it
        (the same level sent another way is another question); without one, the identity as before (its
        rendering, made once)."""
        if request.reasoning is None:
            return self._identity_json
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
        key = cache_key(self._key_identity(request), request, {"prefix": prefix, "choices": list(choices)})
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
        if self.stop.is_set():
            raise Stopped(key)
        with self.slots:
            reply = compute()
        if reply.error:  # whatever the backend, no key reaches the cache, the data or a log
            reply = dataclasses.replace(reply, error=redact(reply.error))
        with self._count_lock:
            self.model_calls += 1
            self.model_seconds += reply.latency_s
        if self.cache is not None:
            # The first answer stored is the answer: had another writer stored one meanwhile, it is
            # the one this run goes on with (and the one a re-run reads).
            reply = self.cache.put(key, reply, replace_error=self.retry_errors)
        if self.circuit is not None:
            self.circuit.record(key, reply, self.cache)
        return reply

    def map(self, fn: Callable[[T], R], items: Iterable[T], on_done: Callable[[], None] | None = None) -> list[R]:
        """``[fn(x) for x in items]`` run ``concurrency`` at a time, in input order.

        Items are taken from ``items`` (any iterable; a generator is read as the work goes) in the
        calling thread, which serves every item whose calls are all cached (a re-run or the finished
        part of a resumed run) without thread overhead; an item that needs the model stops at its
        first uncached call (its finished calls stay cached) and goes to the pool. The calling thread
        takes the next item only while the pool has room, so a plan of a million items costs the
        memory of the items in hand, and the first call starts after the first item.
        ``fn`` must therefore be safe to run again after a ``CacheMiss``. With a concurrency of one
        there is no pool: every item runs in the calling thread, once.
        """
        results: list = []
        pool: ThreadPoolExecutor | None = None
        futures: list[tuple[int, Future]] = []
        failed: list[BaseException] = []
        deferred = 0
        room = threading.Semaphore(2 * self.concurrency)  # items in the pool's hands, running or queued

        def run(x):
            try:
                if self.stop.is_set() or failed:
                    raise Stopped()
                r = fn(x)
                if on_done:
                    on_done()
                return r
            except BaseException as e:
                failed.append(e)
                raise
            finally:
                room.release()

        try:
            for i, x in enumerate(items):
                if self.stop.is_set():
                    raise Stopped()
                if failed:
                    break
                results.append(None)
                # One call at a time: the item runs here, asking the model for what is not cached (a
                # cache-only pass first would only do its cached part twice).
                self._local.cache_only = self.concurrency > 1
                try:
                    results[i] = fn(x)
                except CacheMiss:
                    if self.recorder is not None:
                        deferred += 1
                        continue
                    self._local.cache_only = False
                    room.acquire()  # wait while the pool has its hands full
                    pool = pool or ThreadPoolExecutor(self.concurrency)
                    futures.append((i, pool.submit(run, x)))
                    continue
                finally:
                    self._local.cache_only = False
                if on_done:
                    on_done()
            for i, f in futures:
                if failed:
                    break
                try:
                    results[i] = f.result()
                except Exception:  # noqa: BLE001 - ``run`` put it in ``failed``: the first real one is raised
                    break
            if failed:
                raise next((e for e in failed if not isinstance(e, Stopped)), failed[0])
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                self.stop.set()  # no thread of the run starts another call
            if pool is not None:  # queued items are dropped; calls in flight finish and are cached
                pool.shutdown(wait=True, cancel_futures=True)
                pool = None
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        if deferred:
            raise Deferred(f"{deferred} items wait for answers that are not cached yet")
        return results


def run_all(tasks: list[Callable[[], R]], concurrency: int, n_items: int,
            stop: threading.Event | None = None) -> list[R]:
    """Run independent tasks (the cases of an experiment, each with its share of ``n_items`` model
    calls) side by side, in order: enough at once that their items can fill ``concurrency`` call
    slots. The calls inside them still pass the clients' global in-flight limit. When one fails or
    the run is interrupted, ``stop`` (the clients' shared event) is set, so the others stop too."""
    tasks = [_deferrable(t) for t in tasks]
    per_task = max(1, n_items // max(1, len(tasks)))
    # one more than the slots need, so a finishing task's slots are taken at once; with one slot (an
    # in-process model) one at a time: a second thread would only take turns at the GIL and the cache's lock
    workers = min(len(tasks), 1 + -(-concurrency // per_task)) if concurrency > 1 else 1
    if workers <= 1 or len(tasks) <= 1:
        return [t() for t in tasks]
    pool = ThreadPoolExecutor(workers)
    try:
        futures = [pool.submit(t) for t in tasks]
        wait(futures, return_when=FIRST_EXCEPTION)  # a failed task stops the others at once
        failed = next((f for f in futures if f.done() and f.exception() is not None), None)
        if failed is not None:
            raise failed.exception()
        return [f.result() for f in futures]
    except BaseException:
        if stop is not None:
            stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _deferrable(task: Callable[[], R]) -> Callable[[], R | None]:
    """In recording mode a task that waits for answers ends with None, so every other task still
    runs and records its own requests."""

    def run():
        try:
            return task()
        except Deferred:
            return None

    return run
