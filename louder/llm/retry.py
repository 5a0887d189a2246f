"""Retrying transport failures with exponential backoff (tenacity), honouring Retry-After."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

# Imported here, at import time: a first import of httpx from several worker threads at once
# leaves openai seeing a partially initialised module. (openai itself is imported where a backend
# that uses it is built, in the calling thread: louder.llm.remote; every `louder` command importing it
# here paid most of a second for it.)
import httpx  # noqa: F401
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from louder.llm.base import Reply
from louder.llm.errors import classify_exception, redact

T = TypeVar("T")


def is_transient(exc: BaseException) -> bool:
    """Worth another try: timeouts, dropped connections, 408/409/429 and 5xx answers — but not a 5xx
    whose body is a request-validation error (see ``louder.llm.errors.classify_failure``)."""
    return classify_exception(exc).transient


def failed_reply_fields(exc: BaseException) -> dict:
    """``Reply`` fields for a call that failed: the error text starts with its cause."""
    failure = classify_exception(exc)
    kind = "transport failure after retries" if failure.transient else "request failed"
    return {"error": redact(f"{failure.cause}: {kind}: {type(exc).__name__}: {exc}")[:2000],
            "error_cause": failure.cause, "attempts": getattr(exc, "louder_attempts", 1)}


def retry_after_seconds(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def call_with_retries(fn: Callable[[], T], attempts: int, max_wait_s: float = 60.0) -> tuple[T, int]:
    """Run ``fn``; retry transient failures up to ``attempts`` tries in all. Returns (result, tries).

    The last exception propagates when every try failed or the failure is not transient; its
    ``louder_attempts`` attribute says how many tries were made.
    """
    backoff = wait_exponential_jitter(multiplier=0.5, max=max_wait_s, jitter=0.5)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_seconds(exc)
        return min(hinted, max_wait_s) if hinted is not None else backoff(state)

    retrying = Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait,
        retry=retry_if_exception(is_transient),
        reraise=True,
    )
    try:
        result = retrying(fn)
    except Exception as e:
        e.louder_attempts = retrying.statistics.get("attempt_number", 1)
        raise
    return result, retrying.statistics.get("attempt_number", 1)


def call_or_error(fn: Callable[[], T], attempts: int) -> tuple[T | None, int, Reply | None]:
    """``call_with_retries``, with a failure turned into an accounted-for error ``Reply`` (key
    redacted): (result, tries, None) or (None, tries, error reply). Every remote backend calls
    through here, so how failures are retried and classified lives in this module only."""
    start = time.perf_counter()
    try:
        out, tries = call_with_retries(fn, attempts)
    except Exception as e:  # noqa: BLE001 - every failure must become an accounted-for row
        return None, getattr(e, "louder_attempts", 1), Reply(latency_s=time.perf_counter() - start,
                                                             **failed_reply_fields(e))
    return out, tries, None
