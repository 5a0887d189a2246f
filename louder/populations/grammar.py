"""The small grammar a counterfactual twin needs (word lists: ``grammar`` in ``louder/data/twins.yaml``).

Pure functions over word tokens, no tagger: the role of "her"/"his" from the word after it, verb
agreement after a subject pronoun that changes number (she lives ↔ they live), and a/an. Each rule
decides from closed word classes (determiners, prepositions, pronouns …) and a few open lists, and
leaves a word alone when it cannot tell — the twin check then sees any error left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

# A word: letters/digits, joined by hyphens or apostrophes inside ("well-being", "she's"); "_" and every
# other character stand alone. ``TOKEN`` also yields punctuation, one character a token.
WORD = r"[^\W_]+(?:[-'’][^\W_]+)*"
TOKEN = re.compile(WORD + r"|[^\w\s]|_")
SENTENCE_END = {".", "!", "?", ";", ":"}
SUBJECTS = {"i", "you", "he", "she", "it", "we", "they"}
VOWELS = "aeiou"


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int

    @property
    def low(self) -> str:
        return self.text.casefold().replace("’", "'")

    @property
    def is_word(self) -> bool:
        return self.text[0].isalnum()


def tokens(text: str) -> list[Token]:
    return [Token(m.group(), m.start(), m.end()) for m in TOKEN.finditer(text)]


@cache
def lists() -> dict:
    doc = yaml.safe_load((resources.files("louder") / "data" / "twins.yaml").read_text("utf-8"))["grammar"]
    out = {k: (set(map(str, v)) if isinstance(v, list) else {str(a): str(b) for a, b in v.items()})
           for k, v in doc.items()}
    out["function"] = (out["determiners"] | out["prepositions"] | out["conjunctions"] | out["pronouns"]
                       | out["auxiliaries"])
    out["verb_pairs_plural"] = {b: a for a, b in out["verb_pairs"].items()}
    out["verb_exceptions_plural"] = {b: a for a, b in out["verb_exceptions"].items()}
    return out


def is_adverb(word: str) -> bool:
    g = lists()
    return word in g["adverbs"] or (word.endswith("ly") and len(word) >= 5 and word not in g["ly_nouns"])


def noun_phrase_follows(toks: list[Token], i: int, previous: str | None = None) -> bool:
    """Does a noun phrase start at ``toks[i]`` (so the "her"/"his" before it is a possessive
    determiner)? No at the end, before punctuation and before function words; an adverb is an object's
    ("loves her dearly.") unless content follows it ("her early years"); after let/make/help…, a bare
    infinitive makes "her" the object ("lets her go"), and after keep/make/leave… an adjective that
    ends the phrase ("keeps her busy."); any other word starts a noun phrase."""
    g = lists()
    while i < len(toks) and toks[i].low in g["intensifiers"]:
        if i + 1 >= len(toks) or not toks[i + 1].is_word:
            return False  # "loves her more."
        i += 1  # "her very best friend": the word after the intensifier decides
    if i >= len(toks) or not toks[i].is_word:
        return False
    w = toks[i].low
    if w in g["function"]:
        return False
    if previous in g["causatives"] and w in g["bare_infinitives"]:
        return False
    if previous in g["complement_verbs"] and (w in g["adjectives"] or w.endswith(tuple(g["adjective_endings"]))):
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if nxt is None or not nxt.is_word or nxt.low in g["function"]:
            return False  # "keeps her busy.", "makes her happy and …"
    if is_adverb(w) and (w in g["adverbs"] or not toks[i].text[0].isupper()):
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        return nxt is not None and nxt.is_word and nxt.low not in g["function"]
    return True


def _keep_case(model: str, word: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


def plural_verb(word: str) -> str | None:
    """The form after "they" of the third-person singular ``word`` (lives → live, is → are), or None
    when ``word`` is not such a form (a modal, a past tense, a noun)."""
    g, w = lists(), word.casefold().replace("’", "'")
    if w in g["verb_pairs"]:
        out = g["verb_pairs"][w]
    elif w in g["verb_exceptions"]:
        out = g["verb_exceptions"][w]
    elif not w.isalpha() or w in g["function"] or w in g["adverbs"] or not w.endswith("s"):
        return None
    elif w.endswith("ies") and len(w) > 4:
        out = w[:-3] + "y"
    elif w.endswith(("sses", "shes", "ches", "xes", "zzes", "oes")):
        out = w[:-2]
    elif w.endswith(("ss", "us", "is")):
        return None
    else:
        out = w[:-1]
    return _keep_case(word, out.replace("'", "’") if "’" in word else out)


def singular_verb(word: str) -> str | None:
    """The form after "she"/"he" of the plural present ``word`` (live → lives, are → is), or None when
    ``word`` is not such a form (a modal, a past tense, a function word)."""
    g, w = lists(), word.casefold().replace("’", "'")
    if w in g["verb_pairs_plural"]:
        out = g["verb_pairs_plural"][w]
    elif w in g["verb_exceptions_plural"]:
        out = g["verb_exceptions_plural"][w]
    elif (not w.isalpha() or w in g["function"] or w in g["modals"] or w in g["irregular_past"]
          or w in g["adverbs"] or (w.endswith("ed") and not w.endswith("eed"))):
        return None
    elif w.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = w + "es"
    elif w.endswith("y") and len(w) > 1 and w[-2] not in VOWELS:
        out = w[:-1] + "ies"
    else:
        out = w + "s"
    return _keep_case(word, out.replace("'", "’") if "’" in word else out)


def agree(word: str, to_plural: bool) -> str | None:
    return plural_verb(word) if to_plural else singular_verb(word)


def next_word(toks: list[Token], i: int) -> int | None:
    """The index of the first word at or after ``i`` that is not an adverb, within the clause."""
    while i < len(toks) and toks[i].is_word and is_adverb(toks[i].low):
        i += 1
    return i if i < len(toks) and toks[i].is_word else None


def agreement_edits(toks: list[Token], subject: int, to_plural: bool) -> list[tuple[Token, str]]:
    """The verbs to change after the subject pronoun ``toks[subject]``: the first verb of its clause
    (adverbs skipped), and verbs joined to it by and/or/but that are in the ``verbs`` list and do not
    end the clause ("… and works as a nurse", not "… and walks.")."""
    g, out = lists(), []
    v = next_word(toks, subject + 1)
    if v is None or toks[v].low in ("and", "or"):  # "she and her husband run": a plural subject already
        return out
    new = agree(toks[v].text, to_plural)
    if new is not None:  # else a modal or past tense ("she began … but remains"): its partners still agree
        out.append((toks[v], new))
    # a new clause ends the subject's verbs: a subordinating word or a new subject
    stops = (g["conjunctions"] - {"and", "or", "but"}) | SUBJECTS
    k = v + 1
    while k < len(toks) and toks[k].low not in SENTENCE_END and toks[k].low not in stops:
        if toks[k].low in ("and", "or", "but"):
            x = next_word(toks, k + 1)
            if x is None:
                break
            new = agree(toks[x].text, to_plural)
            base = toks[x].low if to_plural is False else (new or "").casefold()
            after = toks[x + 1] if x + 1 < len(toks) else None
            verb_like = new is not None and (base in g["verbs"] or toks[x].low in g["verb_pairs"]
                                             or toks[x].low in g["verb_pairs_plural"])
            if verb_like and after is not None and after.is_word and after.low not in ("and", "or"):
                out.append((toks[x], new))
            k = x
        k += 1
    return out


def has_reading(toks: list[Token], i: int) -> bool:
    """Is "she's"/"he's" at ``toks[i]`` "she has" (she's been) rather than "she is" (she's retired)?"""
    v = next_word(toks, i + 1)
    return v is not None and toks[v].low in lists()["has_participles"]


def article_for(word: str) -> str:
    """"a" or "an" before ``word``, by its spelling (see ``article_*`` in twins.yaml)."""
    g, w = lists(), word.casefold()
    digits = re.match(r"\d+", w)
    if digits:
        d = digits.group()
        return "an" if d.startswith("8") or d in ("11", "18") else "a"
    if any(w.startswith(p) for p in g["article_an_before"]):
        return "an"
    if any(w.startswith(p) for p in g["article_a_before"]):
        return "a"
    return "an" if w[:1] in VOWELS else "a"


def canonical(word: str) -> str:
    """One spelling for both numbers of a verb form and for a/an ("lives"/"live" → "live"), so a diff
    aligns a twin's agreement changes with the words they replace."""
    w = word.casefold().replace("’", "'")
    if w == "an":
        return "a"
    base = plural_verb(w)
    return base.casefold() if base else w


def agreement_errors(text: str, singular: set[str], plural: set[str]) -> list[str]:
    """"they is", "she are", "they lives", "he like": a subject pronoun followed (adverbs skipped) by a
    form of be/have/do, or of a verb of the ``verbs`` list, of the other number; questions are left
    out ("does she have" is fine). Used by the twin check."""
    g, toks, out = lists(), tokens(text), []
    for i, t in enumerate(toks):
        if t.low not in singular | plural or (i > 0 and toks[i - 1].low in g["auxiliaries"] | g["modals"]):
            continue
        v = next_word(toks, i + 1)
        if v is None:
            continue
        w = toks[v].low
        if t.low in plural:
            wrong = w in g["verb_pairs"] or (plural_verb(w) or "").casefold() in g["verbs"]
        else:
            wrong = w in g["verb_pairs_plural"] or (w in g["verbs"] and w not in g["irregular_past"])
        if wrong:
            out.append(f"{t.text} {toks[v].text}")
    return out
