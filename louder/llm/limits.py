"""Limits on model calls: a global cap on calls in flight, and per-backend request and token
budgets per minute (token buckets)."""

from __future__ import annotations

import threading
import time
from typing import Callable


class TokenBucket:
    """Refills at ``per_minute / 60`` units per second up to one second's worth (at least 1 unit).

    ``take(n)`` waits until the bucket is not in deficit, then takes n units; a request larger than
    the capacity is let through when the bucket is full and leaves it in deficit, so nothing waits
    forever and the long-run rate stays within the budget.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.clock, self.sleep = clock, sleep
        self.updated = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def take(self, n: float = 1.0) -> float:
        """Take ``n`` units, waiting as needed; returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                self._refill()
                if self.level >= min(n, self.capacity):
                    self.level -= n
                    return waited
                pause = (min(n, self.capacity) - self.level) / self.rate
            self.sleep(pause)
            waited += pause


class RateLimiter:
    """Requests-per-minute and tokens-per-minute budgets of one backend (either may be None)."""

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None, **clock):
        self.requests = TokenBucket(requests_per_minute, **clock) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute, **clock) if tokens_per_minute else None

    def acquire(self, tokens: int) -> float:
        waited = self.requests.take(1) if self.requests else 0.0
        if self.tokens:
            waited += self.tokens.take(tokens)
        return waited


def estimated_tokens(request) -> int:
    """What a provider counts against a token budget: prompt (≈ 4 characters a token) + max_tokens."""
    text = request.prompt or "".join(c for _, c in request.messages or ())
    return len(text) // 4 + request.max_tokens


class RateLimited:
    """Any backend behind a ``RateLimiter``: every ``generate``/``score`` first takes its request and
    token budget. It answers for the backend it wraps — same identity (so cache keys do not change),
    same attributes — and adds up the seconds it waited in ``waited_s`` for the manifest.

    The wait happens inside the run's in-flight slot: a throttled call is in flight from the run's
    point of view, which keeps a budget-bound model from flooding the other models' slots with
    calls that could not be sent anyway."""

    def __init__(self, backend, limiter: RateLimiter):
        self.backend, self.limiter = backend, limiter
        self.waited_s = 0.0
        self._lock = threading.Lock()

    def _take(self, request) -> None:
        waited = self.limiter.acquire(estimated_tokens(request))
        with self._lock:
            self.waited_s += waited

    def identity(self) -> dict:
        return self.backend.identity()

    def generate(self, request):
        self._take(request)
        return self.backend.generate(request)

    def score(self, request, prefix: str, choices: list[str]):
        self._take(request)
        return self.backend.score(request, prefix, choices)

    def __getattr__(self, name: str):  # model, json_mode, close(), … of the wrapped backend
        return getattr(self.backend, name)


def rate_limited(backend, requests_per_minute: float | None, tokens_per_minute: float | None):
    """``backend`` wrapped in its budgets, or unchanged when it has none."""
    if not (requests_per_minute or tokens_per_minute):
        return backend
    return RateLimited(backend, RateLimiter(requests_per_minute, tokens_per_minute))
