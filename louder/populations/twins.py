"""Counterfactual persona twins: one written persona re-expressed for another attribute of a group,
only the attribute changed.

Two methods, one standard. A group with a word list in ``louder/data/twins.yaml`` is re-expressed by
louder itself (``re_express``): the words that carry the attribute (by role: term, pronouns, kin
words …) and the agent's name are located in the persona the model wrote and filled with the other
attribute's words of the same role and a new name (written by the model for the twin's description,
when the group renames), with the grammar that follows (verb agreement, a/an, "her" as possessive or
object). A group without a word list is rewritten by a model (``rewrite_prompt``; the model under
test or ``twin_rewriter``). Either twin is ``ok`` only when the old attribute's words are gone, the
new attribute's words are present (where the original had the old ones), a new name is a plausible
name other than the old one, and the rest is unchanged: exactly (difflib over word tokens) for the
word-list method, to ``rewrite.min_similarity`` for a model rewrite. ``twin_check`` and
``rewrite_check`` return the status with the reason of a failure.
"""

from __future__ import annotations

import bisect
import difflib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from louder.populations import grammar
from louder.populations.grammar import Token, tokens
from louder.scenarios import Group



@cache
def _doc() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "twins.yaml").read_text("utf-8"))


def _fold(word: str) -> str:
    return word.casefold().replace("’", "'")


@dataclass(frozen=True)
class GroupLexicon:
    """The attribute words of one group: attribute → role → the words matched (``words``) and the word
    a twin of that attribute gets (``targets``)."""

    group: str
    rename: bool
    case_sensitive: bool
    exact_roles: frozenset[str]
    words: dict[str, dict[str, list[str]]]
    targets: dict[str, dict[str, str]]

    def key(self, word: str) -> str:
        return word.replace("’", "'") if self.case_sensitive else _fold(word)

    def roles(self, attribute: str, found: str) -> list[str]:
        """The roles of ``attribute`` that the text ``found`` is a word of (an exact role only as written)."""
        k = self.key(found)
        return [r for r, ws in self.words[attribute].items() for w in ws
                if self.key(w) == k and (r not in self.exact_roles or found.replace("’", "'") == w)]

    def own_words(self, attribute: str) -> set[str]:
        """The words matched for ``attribute`` (folded unless case-sensitive)."""
        return {self.key(w) for ws in self.words[attribute].values() for w in ws}

    def all_words(self, attribute: str) -> set[str]:
        """Every word a text of ``attribute`` may carry: the matched words and the targets."""
        return self.own_words(attribute) | {self.key(w) for w in self.targets[attribute].values()}


def has_word_list(group: Group) -> bool:
    entry = _doc()["groups"].get(group.id)
    return bool(entry) and set(entry["attributes"]) >= set(group.attributes)


def group_lexicon(group: Group) -> GroupLexicon | None:
    """The word list of ``group`` from twins.yaml, or None when it has none covering every attribute
    of the group (its twins are then model rewrites)."""
    if not has_word_list(group):
        return None
    entry = _doc()["groups"][group.id]
    words: dict[str, dict[str, list[str]]] = {}
    targets: dict[str, dict[str, str]] = {}
    for a in group.attributes:
        words[a], targets[a] = {}, {}
        for role, v in entry["attributes"][a].items():
            if isinstance(v, dict):  # {to: WORD}: a target only
                words[a][role], targets[a][role] = [], str(v["to"])
            else:
                words[a][role], targets[a][role] = [str(w) for w in v], str(v[0])
    return GroupLexicon(group.id, bool(entry.get("rename", True)), bool(entry.get("case_sensitive", False)),
                        frozenset(entry.get("exact_roles", [])), words, targets)


def rename_group(group: Group) -> bool:
    """Does a twin of ``group`` get a new name? Groups with a word list say so; a model rewrite keeps
    the name (the prompt asks to change only the attribute)."""
    lex = group_lexicon(group)
    return bool(lex and lex.rename)


def _pattern(words, case_sensitive: bool) -> re.Pattern | None:
    """Whole words (no letter or digit either side; "_" and "-" separate), longest first; an apostrophe
    matches ' or ’ and a space any run of white space."""
    alts = sorted({w for w in words if w}, key=len, reverse=True)
    if not alts:
        return None
    body = "|".join(re.escape(w).replace("'", "['’]").replace(r"\ ", r"\s+") for w in alts)
    return re.compile(rf"(?<![^\W_])(?:{body})(?![^\W_])", 0 if case_sensitive else re.IGNORECASE)


def _matches(text: str, lex: GroupLexicon, attribute: str) -> list[tuple[re.Match, list[str]]]:
    """The words of ``attribute`` in ``text`` with their roles."""
    p = _pattern([w for ws in lex.words[attribute].values() for w in ws], lex.case_sensitive)
    out = []
    for m in p.finditer(text) if p else ():
        roles = lex.roles(attribute, m.group())
        if roles:
            out.append((m, roles))
    return out


def _name_map(old: str | None, new: str | None) -> dict[str, str]:
    """Full name → full name, then each part of the old name → the new name's part at the same place
    (the last part when the new name is shorter); initials are left alone."""
    if not old or not new or old == new:
        return {}
    out = {old: new}
    o, n = old.split(), new.split()
    for i, part in enumerate(o):
        part = part.rstrip(".,")
        if len(part) > 1 and part not in out:
            out[part] = (n[i] if i < len(n) else n[-1]).rstrip(".,")
    return out


def _name_parts(name: str | None) -> list[str]:
    """The parts of a name a twin must not keep: words of two letters or more, split at spaces, "_"
    and "-" (so "Maria_Lopez" and "Mary-Ann" are found in either spelling)."""
    return [p for p in re.split(r"[\s_\-]+", name or "") if len(p.strip(".,")) > 1]


def _cap(found: str, word: str) -> str:
    if found.isupper() and len(found) > 1 and word.islower():
        return word.upper()
    word = word.replace("'", "’") if "’" in found else word
    return word[:1].upper() + word[1:] if found[:1].isupper() and word[:1].islower() else word


def _choose(roles: list[str], lex: GroupLexicon, new: str, toks: list[Token], before: int, after: int) -> str:
    """The role of a word listed under several roles of the old attribute, when their targets differ:
    "her" is a possessive before a noun phrase, else an object; "his" a possessive determiner or a
    pronoun ("hers"); "she's" is "she has" before a participle."""
    target = lex.targets[new]
    if len({target[r] for r in roles}) == 1:
        return roles[0]
    exact = [r for r in roles if r in lex.exact_roles]
    if exact:  # matched as written: "Lady Emma Taylor" is a title, "a lady" a term
        return exact[0]
    prev = toks[before].low if before >= 0 else None
    if "possessive" in roles and ("object" in roles or "possessive_pronoun" in roles):
        other = "object" if "object" in roles else "possessive_pronoun"
        return "possessive" if grammar.noun_phrase_follows(toks, after, prev) else other
    if "subject_is" in roles and "subject_has" in roles:
        return "subject_has" if grammar.has_reading(toks, after - 1) else "subject_is"
    return roles[0]


def re_express(text: str, lex: GroupLexicon, old: str, new: str, old_name: str | None = None,
               new_name: str | None = None) -> str:
    """``text`` with the old attribute's words and the old name replaced, and the grammar they govern
    made to agree; every edit is planned on the original text, so a replacement is never replaced."""
    toks = tokens(text)
    starts = [t.start for t in toks]
    g = grammar.lists()
    singular, plural = g["singular_subjects"], g["plural_subjects"]
    edits: list[tuple[int, int, str]] = []
    names = _name_map(old_name, new_name)
    name_p = _pattern(names, case_sensitive=True)
    for m in name_p.finditer(text) if name_p else ():
        edits.append((m.start(), m.end(), names[m.group()]))
    for m, roles in _matches(text, lex, old):
        at = bisect.bisect_left(starts, m.start())  # the token the match starts at
        after = bisect.bisect_left(starts, m.end())  # the first token after it
        role = _choose(roles, lex, new, toks, at - 1, after)
        word = lex.targets[new][role]
        repl = _cap(m.group(), word)
        edits.append((m.start(), m.end(), repl))
        if role == "subject":
            o, n = _fold(m.group()), _fold(word)
            if (o in singular and n in plural) or (o in plural and n in singular):
                for t, v in grammar.agreement_edits(toks, at, to_plural=n in plural):
                    edits.append((t.start, t.end, v))
        if at > 0 and toks[at - 1].low in ("a", "an") and not text[toks[at - 1].end:m.start()].strip():
            art = grammar.article_for(repl)
            if art != toks[at - 1].low:
                a = toks[at - 1]
                edits.append((a.start, a.end, _cap(a.text, art)))
    out, pos = [], 0
    for start, end, repl in sorted(edits):
        if start < pos:  # overlaps an earlier edit (a name part inside a replaced phrase): keep the first
            continue
        out += [text[pos:start], repl]
        pos = end
    return "".join(out + [text[pos:]])


@dataclass(frozen=True)
class TwinCheck:
    """The verdict on one twin: ``status`` (ok, unchanged or failed_check), why it failed (``reason``,
    None when it passed) and ``similarity``: difflib's ratio of the two texts' word tokens with the
    attribute's and name's own words left out (1.0: nothing else differs)."""

    status: str
    reason: str | None = None
    similarity: float | None = None


DIFF_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]|_")


def _diff_tokens(text: str) -> list[str]:
    """Word tokens for the diff: apostrophes join ("she's", "Maria's"), hyphens and "_" separate."""
    return [_fold(t) for t in DIFF_TOKEN.findall(text)]


def _case_errors(original: str, twin: str, lex: GroupLexicon, old: str, new: str,
                 opcodes: list[tuple[str, int, int, int, int]]) -> list[str]:
    """Words of the old attribute with two roles ("her": possessive or object) whose replacement in the
    twin is not the new word of the role the original's context gives ("calls her every day" → "him")."""
    found = list(DIFF_TOKEN.finditer(original))
    b = DIFF_TOKEN.findall(twin)
    toks = tokens(original)
    tstarts = [t.start for t in toks]
    out = []
    for op, i1, i2, j1, j2 in opcodes:
        if op != "replace" or i2 - i1 != j2 - j1:
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            roles = lex.roles(old, found[i].group())
            if len({lex.targets[new][r] for r in roles}) < 2:
                continue
            at = bisect.bisect_left(tstarts, found[i].start())
            role = _choose(roles, lex, new, toks, at - 1, at + 1)
            if _fold(b[j]) != _fold(lex.targets[new][role]):
                out.append(f"{b[j]} ({role})")
    return out


def _allowed(token: str, allowed: set[str]) -> bool:
    return token in allowed or re.sub(r"'s?$", "", token) in allowed


def _token_set(words) -> set[str]:
    return {t for w in words for t in _diff_tokens(w)}


def _grammar_pair(a: str, b: str) -> bool:
    """Is a → b a change the grammar of a twin makes (verb agreement, a/an)?"""
    if {a, b} == {"a", "an"}:
        return True
    return any(grammar.agree(a, p) is not None and _fold(grammar.agree(a, p)) == b for p in (True, False))


def _similarity(a: list[str], b: list[str], drop_a: set[str], drop_b: set[str]) -> float:
    x = [t for t in a if not _allowed(t, drop_a)]
    y = [t for t in b if not _allowed(t, drop_b)]
    return round(difflib.SequenceMatcher(None, x, y, autojunk=False).ratio(), 4) if x or y else 1.0


@cache
def _prompts():
    from louder.prompts import Prompts

    return Prompts()


def _echoes_placeholder(text: str) -> bool:
    from louder.text_checks import echoes_placeholder

    return echoes_placeholder(text, _prompts())


def name_problem(name: str | None, old_name: str | None = None, forbidden: set[str] = frozenset()) -> str | None:
    """Why ``name`` is not a plausible new personal name, or None. A name is 1–6 parts of letters joined
    by hyphens or apostrophes, or initials ("J.", "A.M."), or a short abbreviation with a period
    ("Jr."); two letters or more, not initials only; not the old name; no word of ``forbidden`` (the
    group's attribute words: a name is not "Mrs Smith" for a Male twin)."""
    if not name or not name.strip():
        return "no name"
    if _echoes_placeholder(name):
        return f"the name echoes the prompt's placeholder: {name!r}"
    parts = name.split()
    letters = r"[^\W\d_]"
    ok = re.compile(rf"{letters}+(?:['’\-]{letters}+)*|(?:{letters}\.)+|{letters}{{1,3}}\.")
    bad = [p for p in parts if not ok.fullmatch(p)]
    if bad or len(parts) > 6:
        return f"not a plausible name: {name!r}"
    if len(re.findall(letters, name)) < 2 or all(p.endswith(".") for p in parts):
        return f"not a plausible name: {name!r}"
    if old_name is not None and name.strip().casefold() == old_name.strip().casefold():
        return "the new name is the old name"
    hit = [p for p in parts if _fold(p.strip(".")) in forbidden]
    if hit:
        return f"the name carries an attribute word: {hit[0]!r}"
    return None


def fitting_name(name: str | None, new: str, group_attributes: Sequence[str], lists: Mapping[str, Sequence[str]],
                 prefer: Sequence[Sequence[str]] = (), avoid: str | None = None,
                 seed: int = 0) -> tuple[str | None, str | None]:
    """A twin's name that fits its new attribute ``new`` (of a group whose attributes are
    ``group_attributes``), judged by curated first-name ``lists`` (attribute → first names: the names
    file of the names signal, Bertrand & Mullainathan 2004 by default). Returns (name, None) when
    ``name`` fits or cannot be judged, else (a replacement, why).

    A name **fits** unless its first part is on the list of another attribute of the group and not
    on ``new``'s — "Emily" for a Male twin; the lists are judged only where they speak: a new
    attribute without a list (Non-binary, Hispanic/Latino …) or a first name on no list ("Alex")
    is left as written. A misfit's first part is replaced by one drawn (``seed``) from ``new``'s list,
    the rest of the name kept; among those, the names on every list of ``prefer`` (the twin's other
    attributes, then the written name's own standing, e.g. White) where some are, and never ``avoid``
    (the source's first name, which the twin must not keep)."""
    parts = (name or "").split()
    own = lists.get(new)
    if not parts or own is None:
        return name, None
    first = _fold(parts[0])
    if first in {_fold(n) for n in own}:
        return name, None
    others = [a for a in group_attributes if a != new and first in {_fold(n) for n in lists.get(a, ())}]
    if not others:
        return name, None
    candidates = [n for n in own if avoid is None or _fold(n) != _fold(avoid)] or list(own)
    for keep in prefer:
        folded = {_fold(n) for n in keep}
        narrowed = [n for n in candidates if _fold(n) in folded]
        candidates = narrowed or candidates
    replacement = " ".join([random.Random(seed).choice(candidates), *parts[1:]])
    return replacement, f"{parts[0]!r} is on the {others[0]} name list, not {new}'s"


def twin_check(original: str, twin: str, lex: GroupLexicon, old: str, new: str, old_name: str | None = None,
               new_name: str | None = None) -> TwinCheck:
    """A slotted twin's verdict. ``failed_check`` (with the reason) when the new name (groups that
    rename) is not a plausible name other than the old one; when a difference (difflib opcodes over
    word tokens) is not the old attribute's words or old name giving way to the new ones, or a verb
    or article changing with them (lives → live, a → an); when an old attribute word (not also a new
    one) or old name part is left; when the original had old words and the twin has no new one; or
    when the twin has an agreement error ("they is") the original did not, or a word of two roles
    got the wrong one ("calls her every day" → "calls his every day": the object is "him"). Else ``unchanged`` (the
    same text and name: the persona never names the attribute and the group does not rename) or ``ok``."""
    renamed = bool(new_name) and new_name != old_name
    if lex.rename:
        problem = name_problem(new_name, old_name, lex.all_words(old) | lex.all_words(new))
        if problem:
            return TwinCheck("failed_check", problem)
    if twin == original:
        return TwinCheck("ok" if renamed else "unchanged", None, 1.0)
    old_tok = _token_set(lex.all_words(old)) | {_fold(p) for p in _name_parts(old_name)}
    new_tok = _token_set(lex.all_words(new)) | {_fold(p) for p in _name_parts(new_name)}
    a, b = _diff_tokens(original), _diff_tokens(twin)
    # aligned on canonical forms, so "she likes likes" → "they like likes" pairs likes/like, not likes/likes
    opcodes = difflib.SequenceMatcher(None, [grammar.canonical(t) for t in a], [grammar.canonical(t) for t in b],
                                      autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in opcodes:
        if op == "equal":
            pairs = [(x, y) for x, y in zip(a[i1:i2], b[j1:j2]) if x != y]
            if all(_grammar_pair(x, y) for x, y in pairs):
                continue
            x, y = next((x, y) for x, y in pairs if not _grammar_pair(x, y))
            return TwinCheck("failed_check", f"changed beyond the attribute: {x} → {y}")
        removed = [t for t in a[i1:i2] if not _allowed(t, old_tok)]
        inserted = [t for t in b[j1:j2] if not _allowed(t, new_tok)]
        if len(removed) != len(inserted) or not all(_grammar_pair(x, y) for x, y in zip(removed, inserted)):
            return TwinCheck("failed_check", f"changed beyond the attribute: {' '.join(a[i1:i2]) or '∅'} → "
                                             f"{' '.join(b[j1:j2]) or '∅'}")
    new_words = lex.own_words(new)
    left = [m.group() for m, _ in _matches(twin, lex, old) if lex.key(m.group()) not in new_words]
    if left:
        return TwinCheck("failed_check", f"old attribute word left: {left[0]!r}")
    new_parts = set(_name_parts(new_name))
    for part in _name_parts(old_name) if renamed else ():
        if part not in new_parts and re.search(rf"(?<![^\W_]){re.escape(part)}(?![^\W_])", twin):
            return TwinCheck("failed_check", f"old name left: {part!r}")
    if _matches(original, lex, old):
        p = _pattern(lex.all_words(new), lex.case_sensitive)
        if p is None or not p.search(twin):
            return TwinCheck("failed_check", "new attribute missing")
    g = grammar.lists()
    errors = grammar.agreement_errors(twin, g["singular_subjects"], g["plural_subjects"])
    if len(errors) > len(grammar.agreement_errors(original, g["singular_subjects"], g["plural_subjects"])):
        return TwinCheck("failed_check", f"verb agreement: {errors[0]!r}")
    errors = _case_errors(original, twin, lex, old, new, opcodes)
    if errors:
        return TwinCheck("failed_check", f"pronoun case: {errors[0]!r}")
    return TwinCheck("ok", None, _similarity(a, b, old_tok, new_tok))


# --- groups without a word list: a model rewrite --------------------------------------------------


@dataclass(frozen=True)
class Cues:
    """How a persona names one attribute of a group without a word list: its label and persona
    phrase (``phrases``) and their content words not shared with the other attribute (``words``)."""

    phrases: tuple[str, ...]
    words: frozenset[str]


def rewrite_cues(label: str, phrase: str | None, other_label: str, other_phrase: str | None) -> Cues:
    """The cues of ``label`` against ``other_label``: content words have ``rewrite.min_cue_letters``
    letters or more and are not grammar words."""
    g, n = grammar.lists(), int(_doc()["rewrite"]["min_cue_letters"])

    def content(*texts):
        return {w for t in texts if t for w in (_fold(x) for x in re.findall(grammar.WORD, t))
                if len(re.sub(r"\W", "", w)) >= n and w not in g["function"] and w not in g["adverbs"]}

    phrases = tuple(dict.fromkeys(p for p in (label, phrase) if p))
    return Cues(phrases, frozenset(content(label, phrase) - content(other_label, other_phrase)))


def _cue_hits(text: str, cues: Cues) -> list[str]:
    hits = [p for p in cues.phrases if re.search(rf"(?<![^\W_]){re.escape(p)}(?![^\W_])", text, re.IGNORECASE)]
    words = {_fold(w) for w in re.findall(grammar.WORD, text)}
    return hits + sorted(cues.words & words)


def _mark(text: str, phrases) -> str:
    for p in sorted(phrases, key=len, reverse=True):
        text = re.sub(rf"(?<![^\W_]){re.escape(p)}(?![^\W_])", " § ", text, flags=re.IGNORECASE)
    return text


def mentions(text: str, cues: Cues) -> bool:
    """Does ``text`` name the attribute (its label, phrase or one of its content words)?"""
    return bool(_cue_hits(text, cues))


def min_similarity() -> float:
    return float(_doc()["rewrite"]["min_similarity"])


def rewrite_check(original: str, twin: str, old: Cues, new: Cues, name: str | None,
                  threshold: float | None = None) -> TwinCheck:
    """A model rewrite's verdict: ``failed_check`` when a cue of the old attribute is left, none of
    the new attribute's phrases is present, the name the original used is gone, or the rest differs:
    difflib's ratio over word tokens, each attribute phrase one token and the cue words of both
    attributes left out, below ``threshold``
    (``rewrite.min_similarity``). Else ``ok``."""
    threshold = min_similarity() if threshold is None else threshold
    # the attribute's phrases become one marker each, then its cue words are left out
    a, b = _diff_tokens(_mark(original, old.phrases)), _diff_tokens(_mark(twin, new.phrases))
    sim = _similarity(a, b, set(old.words | new.words), set(old.words | new.words))
    left = [h for h in _cue_hits(twin, old) if h.casefold() not in {p.casefold() for p in new.phrases}
            and _fold(h) not in new.words]
    if left:
        return TwinCheck("failed_check", f"old attribute words left: {left[0]!r}", sim)
    if not any(re.search(rf"(?<![^\W_]){re.escape(p)}(?![^\W_])", twin, re.IGNORECASE) for p in new.phrases):
        return TwinCheck("failed_check", "new attribute missing", sim)
    if name and name in original and name not in twin:
        return TwinCheck("failed_check", f"the name {name!r} was changed", sim)
    if sim < threshold:
        return TwinCheck("failed_check", f"changed beyond the attribute: similarity {sim:.2f} < {threshold:.2f}",
                         sim)
    return TwinCheck("ok", None, sim)


def twin_calls_per_agent(groups: list[Group], condition: str = "contextualized") -> dict[str, int]:
    """Model calls one agent's twins make in a cold run besides their decisions, and how many twins:
    ``twins`` = Σ over the twin groups of (attributes − 1); ``names`` = those of groups that rename
    (one name call each); ``rewrites`` = those of groups without a word list (one rewrite call each,
    none under no_persona, whose twin is its description). An upper bound: a rewrite is not asked for
    a persona that never names the attribute (its twin is ``unchanged``), nor any call for a persona
    that failed."""
    twins = names = rewrites = 0
    for g in groups:
        k = len(g.attributes) - 1
        twins += k
        names += k if rename_group(g) else 0
        rewrites += k if not has_word_list(g) and condition != "no_persona" else 0
    return {"twins": twins, "names": names, "rewrites": rewrites}
