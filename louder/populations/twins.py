"""Counterfactual persona twins: one written persona re-expressed for another attribute of a group,
only the attribute changed.

The slotted approach, with louder finding the slots: the words that carry the attribute (by role:
term, pronouns, kin words …, from ``louder/data/twins.yaml``) and the agent's name are located in
the persona the model wrote, and filled with the other attribute's words of the same role and a
new name (written by the model for the twin's description, when the group renames). Everything
else is left as written. ``twin_check`` then verifies with difflib that the twin differs from the
original only in those slots and that no word of the old attribute or old name is left.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from louder.scenarios import Group

TWIN_STATUSES = ("ok", "unchanged", "failed_check", "no_persona", "invalid", "refused", "error")
PASSED = ("ok", "unchanged")  # twins that passed the check and enter the paired analysis


@dataclass(frozen=True)
class GroupLexicon:
    """The attribute words of one group: attribute → role → words (the first is what a twin gets)."""

    group: str
    rename: bool
    case_sensitive: bool
    words: dict[str, dict[str, list[str]]]

    def mapping(self, old: str, new: str) -> dict[str, str]:
        """Word of ``old`` → the word of ``new`` with the same role (``new``'s first term when it
        lacks the role). Keys folded to lower case unless the group is case-sensitive; a word with
        two roles keeps the first role listed."""
        out: dict[str, str] = {}
        target = self.words[new]
        for role, words in self.words[old].items():
            to = (target.get(role) or target["term"])[0]
            for w in words:
                out.setdefault(w if self.case_sensitive else w.casefold(), to)
        return out

    def own_words(self, attribute: str) -> set[str]:
        return {w if self.case_sensitive else w.casefold() for ws in self.words[attribute].values() for w in ws}


@cache
def _doc() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "twins.yaml").read_text("utf-8"))["groups"]


def group_lexicon(group: Group, phrases: dict[str, str] | None = None) -> GroupLexicon:
    """The lexicon of ``group`` from twins.yaml; a group not listed there uses its attribute labels and
    persona phrases as terms (case-insensitive) and is renamed."""
    entry = _doc().get(group.id)
    if entry and set(entry["attributes"]) >= set(group.attributes):
        words = {a: {r: [str(w) for w in ws] for r, ws in entry["attributes"][a].items()} for a in group.attributes}
        return GroupLexicon(group.id, bool(entry.get("rename", True)), bool(entry.get("case_sensitive", False)),
                            words)
    phrases = phrases or {}
    words = {a: {"term": list(dict.fromkeys([a] + ([phrases[a]] if a in phrases else [])))} for a in group.attributes}
    return GroupLexicon(group.id, True, False, words)


def _name_map(old: str | None, new: str | None) -> dict[str, str]:
    """Full name → full name, then each part of the old name → the new name's part at the same place
    (the last part when the new name is shorter)."""
    if not old or not new or old == new:
        return {}
    out = {old: new}
    o, n = old.split(), new.split()
    for i, part in enumerate(o):
        if len(part) > 1 and part not in out:
            out[part] = n[i] if i < len(n) else n[-1]
    return out


def _pattern(keys) -> re.Pattern:
    alts = sorted(set(keys), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in alts) + r")(?![\w-])", re.IGNORECASE)


def _cap(found: str, word: str) -> str:
    return word[:1].upper() + word[1:] if found[:1].isupper() and word[:1].islower() else word


def re_express(text: str, lex: GroupLexicon, old: str, new: str, old_name: str | None = None,
               new_name: str | None = None) -> str:
    """``text`` with the old attribute's words and the old name replaced (one pass, so a replacement
    is never replaced again)."""
    names = _name_map(old_name, new_name)
    words = lex.mapping(old, new)
    if not names and not words:
        return text

    def fill(m: re.Match) -> str:
        found = m.group(1)
        if found in names:
            return names[found]
        key = found if lex.case_sensitive else found.casefold()
        return _cap(found, words[key]) if key in words else found

    return _pattern(list(names) + list(words)).sub(fill, text)


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def twin_check(original: str, twin: str, lex: GroupLexicon, old: str, new: str, old_name: str | None = None,
               new_name: str | None = None) -> str:
    """``unchanged`` when the twin is the original and keeps its name (the persona never names the
    attribute, and the group does not rename: the twin differs only in its demographic label, which the
    decision prompt does not show); ``ok`` when every difference (difflib opcodes over word tokens) removes
    only tokens of the old attribute's words or old name and inserts only tokens of the new ones, and
    no old attribute word (that is not also a new one) or old name part is left; else ``failed_check``."""
    if twin == original:
        return "unchanged" if not new_name or new_name == old_name else "ok"
    fold = str.casefold
    old_allowed = {fold(t) for w in lex.own_words(old) | set((old_name or "").split()) for t in _tokens(w)}
    new_allowed = {fold(t) for w in lex.own_words(new) | set((new_name or "").split()) for t in _tokens(w)}
    a, b = _tokens(original), _tokens(twin)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if not ({fold(t) for t in a[i1:i2]} <= old_allowed and {fold(t) for t in b[j1:j2]} <= new_allowed):
            return "failed_check"
    left = lex.own_words(old) - lex.own_words(new)
    if left:
        flags = 0 if lex.case_sensitive else re.IGNORECASE
        if re.search(r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(left, key=len, reverse=True))
                     + r")(?![\w-])", twin, flags):
            return "failed_check"
    for part in _name_map(old_name, new_name):
        if new_name and part not in new_name.split() and re.search(rf"(?<![\w-]){re.escape(part)}(?![\w-])", twin):
            return "failed_check"
    return "ok"
