"""Why a model call failed, in one word, and whether trying again can help.

A cause names the failure in rows and messages (``http_400_invalid_request``, ``timeout``, …) instead of
one "transport failure" for everything; ``transient`` decides retrying: a server that rejects the
request body rejects it again, so retrying only burns time (and, on a hosted API, quota).
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass

import httpx


# Environment variables that hold a provider's key (openai:, langchain: specs); their values never reach a log.
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "GROQ_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "COHERE_API_KEY",
            "TOGETHER_API_KEY", "FIREWORKS_API_KEY")


def redact(text: str) -> str:
    """Drop anything that looks like an API key from an error message before it is stored or printed."""
    for var in KEY_VARS:
        key = os.environ.get(var)
        if key and len(key) >= 8:
            text = text.replace(key, "[redacted]")
    return re.sub(r"sk-[A-Za-z0-9_\-]{8,}", "sk-[redacted]", text)


@dataclass(frozen=True)
class Failure:
    cause: str
    transient: bool


NAMED = {400: "http_400_invalid_request", 401: "http_401_unauthorized", 403: "http_403_forbidden",
         404: "http_404_not_found", 408: "http_408_timeout", 409: "http_409_conflict", 413: "http_413_too_large",
         422: "http_422_validation", 429: "http_429_rate_limited"}
# What a client raises reading a response that is not of the API's shape: an empty `choices` list,
# a body that is not JSON or not an object. Both clients label it `bad_response` (LangChain raises
# these from the openai SDK; the lean client's parser returns the label itself).
BAD_RESPONSE = (IndexError, KeyError, TypeError, json.JSONDecodeError)


def _openai(*names: str) -> tuple[type[BaseException], ...]:
    """The openai SDK's exception classes ``names``, or none: an exception of the SDK can only come from an
    SDK that is imported already, and importing it here would cost every `louder` command most of a second."""
    sdk = sys.modules.get("openai")
    return tuple(getattr(sdk, n) for n in names) if sdk is not None else ()
TRANSIENT = {"timeout", "connection", "http_408_timeout", "http_409_conflict", "http_429_rate_limited", "http_5xx"}


def is_transient_cause(cause: str | None) -> bool:
    """Whether a failure of this cause may pass when tried again: the ``TRANSIENT`` causes, and any
    other server error by its status (``http_503``, as some backends name it)."""
    return cause in TRANSIENT or bool(cause and re.fullmatch(r"http_5\d\d", cause))


# A request-validation error in a 5xx body (llama_cpp.server answers an unsupported response_format
# with HTTP 500 "1 validation error ... Input should be 'text' or 'json_object'").
_VALIDATION = re.compile(r"validation error|Input should be", re.I)


def classify_failure(status: int | None, body: str = "", exc: BaseException | None = None) -> Failure:
    """The cause of a failed call from its HTTP status, response body and exception.

    Transient (retried): timeouts, dropped connections, 408, 409, 429 (unless the quota is spent) and
    5xx; everything else, including a 5xx whose body is a request-validation error, is not.
    """
    if status is None:
        if isinstance(exc, (TimeoutError, httpx.TimeoutException, *_openai("APITimeoutError"))):
            return Failure("timeout", True)
        if isinstance(exc, (ConnectionError, httpx.TransportError, *_openai("APIConnectionError"))):
            return Failure("connection", True)
        if isinstance(exc, (*BAD_RESPONSE, *_openai("APIResponseValidationError"))) or (
                isinstance(exc, ValueError) and "response" in str(exc).lower()):
            return Failure("bad_response", False)  # an answer came, but not of the API's shape (empty choices, …)
        return Failure("other", False)
    if status == 429 and "insufficient_quota" in body:
        return Failure("http_429_quota", False)
    if status >= 500:
        return Failure("http_500_validation", False) if _VALIDATION.search(body) else Failure("http_5xx", True)
    cause = NAMED.get(status, f"http_{status}")
    return Failure(cause, cause in TRANSIENT)


def exception_parts(exc: BaseException) -> tuple[int | None, str]:
    """(HTTP status, response body) of an exception from httpx, openai, langchain or ollama."""
    code = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if code is None and response is not None:
        code = getattr(response, "status_code", None)
    body = ""
    if response is not None:
        try:
            body = response.text
        except Exception:  # noqa: BLE001 - a streamed or closed response has no text
            body = ""
    return (code if isinstance(code, int) else None), body or str(exc)


def classify_exception(exc: BaseException) -> Failure:
    return classify_failure(*exception_parts(exc), exc)


def server_message(exc: BaseException, limit: int = 300) -> str:
    """The server's own words about a failure, on one line (for one-line error messages)."""
    _, body = exception_parts(exc)
    m = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', body)
    text = m.group(1).encode().decode("unicode_escape", "ignore") if m else body
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit]


# What to do about each non-transient cause, for the one-line messages that stop a run.
FIXES = {
    "http_400_invalid_request": "the server rejects louder's request; run `louder check --model SPEC` and use "
                                "the json_mode it suggests (or json_mode: auto)",
    "http_422_validation": "the server rejects louder's request body; run `louder check --model SPEC` and use "
                           "the json_mode it suggests (or json_mode: auto)",
    "http_500_validation": "the server rejects louder's request body; run `louder check --model SPEC` and use "
                           "the json_mode it suggests (or json_mode: auto)",
    "http_401_unauthorized": "set OPENAI_API_KEY to a key this server accepts",
    "http_403_forbidden": "the API key has no access to this model; use another key or model",
    "http_404_not_found": "check the model name and the base URL (it usually ends in /v1); "
                          "`louder check --model SPEC` lists the served models",
    "http_413_too_large": "the request is too large for the server; lower max_tokens or raise its context size",
    "http_429_quota": "the account's quota is used up; check its billing",
}


def fix_for(cause: str) -> str:
    return FIXES.get(cause, "see the error text in the rows; `louder check --model SPEC` tests the endpoint")
