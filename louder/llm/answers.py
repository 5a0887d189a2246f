"""Turning a raw model answer into an accounted-for status.

Statuses: ``valid`` (one of the offered choices), ``invalid`` (off-list or unparseable; raw text
kept), ``refused`` (the model declined), ``error`` (the call failed after retries).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from louder.llm.base import Reply

STATUSES = ("valid", "invalid", "refused", "error")


def parse_json_object(text: str) -> dict | None:
    """The first JSON object in ``text`` (models often wrap it in prose or code fences), or None."""
    text = text.strip()
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def _norm(s: str) -> str:
    return re.sub(r"[\s\"'`.,;:!*_()\[\]]+", " ", s).strip().casefold()


def match_choice(answer: str, labels: list[str]) -> str | None:
    """The label ``answer`` names, ignoring case, quotes and punctuation; None when off-list.

    "evacuate." and '"Evacuate"' match Evacuate; "Evacuate or Stay" names two labels and does not.
    """
    a = _norm(answer)
    by_norm = {_norm(x): x for x in labels}
    if a in by_norm:
        return by_norm[a]
    # "I choose to evacuate" style answers: accept when exactly one label occurs as a word.
    hits = [x for n, x in by_norm.items() if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", a)]
    return hits[0] if len(hits) == 1 else None


def is_refusal(text: str, markers: list[str]) -> bool:
    t = text.casefold().replace("’", "'")
    return any(m in t for m in markers)


@dataclass
class Classified:
    status: str
    choice: str | None
    rationale: str | None
    note: str = ""


THINKING_TRUNCATED = "thinking_truncated"


def classify(reply: Reply, labels: list[str], field: str, markers: list[str]) -> Classified:
    """Classify a reply whose JSON field ``field`` should name one of ``labels``. Only the final
    answer (``reply.text``) is read, never the thinking: a reply whose thinking never closed has no
    answer and is ``invalid`` with the reason ``thinking_truncated``."""
    if reply.error:
        return Classified("error", None, None, reply.error)
    if reply.refusal:
        return Classified("refused", None, None, reply.refusal)
    if reply.thinking_truncated:
        return Classified("invalid", None, None, THINKING_TRUNCATED)
    obj = parse_json_object(reply.text)
    rationale = None
    if obj is not None:
        r = obj.get("rationale")
        rationale = r if isinstance(r, str) else (json.dumps(r) if r is not None else None)
        value = obj.get(field)
        if isinstance(value, str):
            choice = match_choice(value, labels)
            if choice:
                return Classified("valid", choice, rationale)
    if is_refusal(reply.text, markers):
        return Classified("refused", None, rationale, "refusal wording")
    if obj is None:
        note = "truncated at max_tokens" if reply.finish_reason == "length" else "no JSON object"
        return Classified("invalid", None, None, note)
    return Classified("invalid", None, rationale, f"{field!r} is not one of {labels}")


@dataclass
class Scored:
    status: str
    probs: dict[str, float] | None  # normalised over the choices
    mass: float | None  # Σ_c p(c): how much probability the offered choices covered
    note: str = ""


def choice_probabilities(reply: Reply, labels: list[str], suffix: str = "") -> Scored:
    """Turn a ``score`` reply (log-probs of ``label + suffix``) into normalised probabilities.

    p(c) = exp(lp_c) / Σ_c' exp(lp_c'); mass = Σ_c exp(lp_c). A choice the backend could not see
    (null log-prob, e.g. outside the server's top log-probs) gets p = 0. No choice seen at all is
    ``invalid``: there is no probability to normalise.
    """
    if reply.error:
        return Scored("error", None, None, reply.error)
    try:
        lps = json.loads(reply.text)["logprobs"]
        raw = [lps.get(label + suffix) for label in labels]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        return Scored("invalid", None, None, "score reply is not {logprobs: ...}")
    p = [0.0 if v is None else math.exp(v) for v in raw]
    mass = sum(p)
    if mass <= 0:
        return Scored("invalid", None, 0.0, "none of the choices among the returned log-probs")
    return Scored("valid", {label: x / mass for label, x in zip(labels, p)}, mass)


@dataclass
class Counted:
    status: str
    value: int | None
    note: str = ""


def classify_count(reply: Reply, field: str, low: int, high: int, markers: list[str]) -> Counted:
    """Classify a reply whose JSON field ``field`` should be an integer in [low, high] (the beliefs
    probe). A whole number written as 42.0 or "42" counts as 42; a number outside the range, a
    fraction, or no number at all is ``invalid`` (the raw text is kept by the caller); refusal
    wording without a number is ``refused``."""
    if reply.error:
        return Counted("error", None, reply.error)
    if reply.refusal:
        return Counted("refused", None, reply.refusal)
    if reply.thinking_truncated:
        return Counted("invalid", None, THINKING_TRUNCATED)
    obj = parse_json_object(reply.text)
    if obj is not None and field in obj:
        v = obj[field]
        if isinstance(v, str) and re.fullmatch(r"\s*-?\d+(\.0*)?\s*", v):
            v = float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and float(v).is_integer():
            v = int(v)
            if low <= v <= high:
                return Counted("valid", v)
            return Counted("invalid", None, f"{field!r} = {v} is outside {low}–{high}")
    if is_refusal(reply.text, markers):
        return Counted("refused", None, "refusal wording")
    if obj is None:
        note = "truncated at max_tokens" if reply.finish_reason == "length" else "no JSON object"
        return Counted("invalid", None, note)
    return Counted("invalid", None, f"{field!r} is not a whole number from {low} to {high}")
