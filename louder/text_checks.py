"""Checks of the texts a model writes for a person (a name, a persona, a twin's rewrite): one that
echoes the prompt's own placeholder, is empty, or is too short to carry anything cannot stand for a
person (``persona_checks`` in louder/data/prompts.yaml)."""

from __future__ import annotations

import difflib
import re
import threading
from functools import lru_cache

from louder.prompts import Prompts

# Template text: "<" and two or more words up to ">" or the end ("<a string with the name …>"; not an
# HTML tag like "<p>" nor markup like "<img src=…"), or one of louder's own %slots%.
TEMPLATE_TEXT = re.compile(r"<\s*[^\W\d_][^<>=]*?\s[^<>=]*?(?:>|$)|%[a-z_]+%")


def _plain(text: str) -> str:
    """``text`` without case, quotes, brackets and punctuation, for comparing with a placeholder."""
    text = text.casefold().replace("’", "'")
    return " ".join(re.sub(r"[^\w\s']|(?<!\w)'|'(?!\w)", " ", text).split())


def echoes_placeholder(text: str, prompts: Prompts) -> bool:
    """Is ``text`` the prompt's own placeholder (whole, in part, or paraphrased closely)? Any ``<…>``
    template text counts (``TEMPLATE_TEXT``); so does a text that contains a placeholder of the persona/twin templates
    (``prompts.placeholders``) or is ``placeholder_similarity`` like one (difflib ratio)."""
    return _echoes(text, tuple(prompts.placeholders), float(prompts.persona_checks["placeholder_similarity"]))


# A run reads each persona again for every wording, order and level it decides under: the verdict of a text
# is kept (a few MB at most), not computed again.
@lru_cache(maxsize=1 << 14)
def _echoes(text: str, placeholders: tuple[str, ...], limit: float) -> bool:
    if TEMPLATE_TEXT.search(text):
        return True
    plain = _plain(text)
    for p in map(_plain_placeholder, placeholders):
        if p in plain:
            return True
        if len(plain) <= 2 * len(p):
            # ratio() is bounded above by quick_ratio() and that by real_quick_ratio(): the cheap bounds
            # settle most texts (a persona is not its placeholder) without the full matching
            m = _matcher(p)
            m.set_seq1(plain)
            if m.real_quick_ratio() >= limit and m.quick_ratio() >= limit and m.ratio() >= limit:
                return True
    return False


_plain_placeholder = lru_cache(maxsize=256)(_plain)
_matchers = threading.local()


def _matcher(placeholder: str) -> difflib.SequenceMatcher:
    """A matcher whose second sequence is ``placeholder``, made once per thread: difflib indexes the second
    sequence when it is set, the costly part of a comparison with a short text; ``set_seq1`` keeps that index."""
    made = _matchers.__dict__.setdefault("made", {})
    if placeholder not in made:
        made[placeholder] = difflib.SequenceMatcher(None, "", placeholder)
    return made[placeholder]


def text_problem(text, kind: str, prompts: Prompts) -> str | None:
    """Why a written ``kind`` ("name" or "persona") cannot stand for a person, or None: missing, empty,
    the placeholder, or too short (``persona_checks`` in prompts.yaml)."""
    checks = prompts.persona_checks
    if not isinstance(text, str) or not text.strip():
        return f"empty {kind}"
    if echoes_placeholder(text, prompts):
        return f"{kind} echoes the prompt's placeholder"
    if kind == "name":
        letters = len(re.findall(r"[^\W\d_]", text))
        if letters < int(checks["min_name_letters"]):
            return f"name too short: {letters} letters < {checks['min_name_letters']}"
    else:
        words = len(re.findall(r"[^\W_]+", text))
        if words < int(checks["min_persona_words"]):
            return f"persona too short: {words} words < {checks['min_persona_words']}"
    return None
