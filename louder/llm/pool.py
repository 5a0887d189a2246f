"""One model served by several OpenAI-compatible replicas (``openai:MODEL@URL1,URL2,…``).

Each call goes to the replica with the fewest calls in flight among those not resting. A replica
whose call fails with a transient error (timeout, dropped connection, 429, 5xx) rests with
exponential backoff — 0.5 s, 1 s, 2 s … up to ``max_rest_s`` — and the call is tried again on
another replica, up to ``max_attempts`` tries in all; a success ends its rest. A non-transient
failure (a request the server rejects) is returned at once: another replica would reject it too.

The cache identity is the *first* URL's: ``openai:M@URL1`` and ``openai:M@URL1,URL2`` share their
cache, so replicas can be added to a running experiment; which replica answered is never part of
a cache key.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from louder.llm.retry import failed_reply_fields
from louder.llm.base import Reply, Request
from louder.llm.errors import TRANSIENT


def is_transient_reply(reply: Reply) -> bool:
    """A failed reply worth trying on another replica."""
    return bool(reply.error) and reply.error_cause in TRANSIENT


@dataclass
class _Replica:
    backend: object
    in_flight: int = 0
    failures: int = 0  # consecutive transient failures
    rest_until: float = 0.0
    calls: int = 0


class EndpointPool:
    """A backend over several replicas of one model; itself a ``LanguageModel``."""

    def __init__(self, backends: list, max_attempts: int = 6, max_rest_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        if not backends:
            raise ValueError("an endpoint pool needs at least one backend")
        self.replicas = [_Replica(b) for b in backends]
        first = backends[0]
        self.backend, self.model = "openai", first.model
        self.json_mode = first.json_mode
        self.reasoning_control = getattr(first, "reasoning_control", None)
        self.max_attempts, self.max_rest_s = max_attempts, max_rest_s
        self.clock, self.sleep = clock, sleep
        self._lock = threading.Lock()

    def identity(self) -> dict:
        return self.replicas[0].backend.identity()

    def _acquire(self) -> _Replica:
        while True:
            with self._lock:
                now = self.clock()
                awake = [r for r in self.replicas if r.rest_until <= now]
                if awake:
                    r = min(awake, key=lambda x: (x.in_flight, x.calls))
                    r.in_flight += 1
                    r.calls += 1
                    return r
                wait = min(r.rest_until for r in self.replicas) - now
            self.sleep(max(0.0, wait))

    def _release(self, r: _Replica, reply: Reply) -> None:
        with self._lock:
            r.in_flight -= 1
            if is_transient_reply(reply):
                r.failures += 1
                r.rest_until = self.clock() + min(self.max_rest_s, 0.5 * 2 ** (r.failures - 1))
            elif not reply.error:
                r.failures, r.rest_until = 0, 0.0

    def _spread(self, call: Callable[[object], Reply]) -> Reply:
        attempts, latency = 0, 0.0
        for _ in range(self.max_attempts):
            r = self._acquire()
            try:
                reply = call(r.backend)
            except Exception as e:  # noqa: BLE001 - a backend bug must still become an accounted row
                reply = Reply(**failed_reply_fields(e))
            self._release(r, reply)
            attempts += reply.attempts
            latency += reply.latency_s
            if not is_transient_reply(reply):
                break
        reply.attempts, reply.latency_s = attempts, latency
        return reply

    def generate(self, request: Request) -> Reply:
        return self._spread(lambda b: b.generate(request))

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        return self._spread(lambda b: b.score(request, prefix, choices))
