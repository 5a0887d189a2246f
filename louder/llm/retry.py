"""Retrying transport failures with exponential backoff (tenacity), honouring Retry-After."""

from __future__ import annotations

import os
import re
import time
from typing import Callable, TypeVar

# Imported here, at import time: a first import of httpx from several worker threads at once
# leaves openai seeing a partially initialised module.
import httpx
import openai

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from louder.llm.base import Reply

T = TypeVar("T")


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None and getattr(exc, "response", None) is not None:
        code = getattr(exc.response, "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException) -> bool:
    """Worth another try: timeouts, dropped connections, 408/409/429 and 5xx answers."""
    if isinstance(exc, (openai.APIConnectionError, httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    code = _status(exc)
    return code is not None and (code in (408, 409, 429) or code >= 500)


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


def redact(text: str) -> str:
    """Drop anything that looks like an API key from an error message before it is stored."""
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        text = text.replace(key, "[redacted]")
    return re.sub(r"sk-[A-Za-z0-9_\-]{8,}", "sk-[redacted]", text)


def call_or_error(fn: Callable[[], T], attempts: int) -> tuple[T | None, int, Reply | None]:
    """``call_with_retries``, with a failure turned into an accounted-for error ``Reply`` (key
    redacted): (result, tries, None) or (None, tries, error reply). Every remote backend calls
    through here, so how failures are retried and classified lives in this module only."""
    start = time.perf_counter()
    try:
        out, tries = call_with_retries(fn, attempts)
    except Exception as e:  # noqa: BLE001 - every failure must become an accounted-for row
        kind = "transport failure after retries" if is_transient(e) else "request failed"
        return None, getattr(e, "louder_attempts", 1), Reply(
            error=redact(f"{kind}: {type(e).__name__}: {e}")[:2000], latency_s=time.perf_counter() - start,
            attempts=getattr(e, "louder_attempts", 1))
    return out, tries, None
