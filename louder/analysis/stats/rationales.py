"""Rationale analysis (sections 5.2 and 5.5): the paper's phrase patterns, and the words most
distinctive of each attribute by log-odds ratio with an informative Dirichlet prior; and, for
reasoning models, how often the thinking names the persona's attribute or its stereotype words
(issue 30: the paper's "rationale analysis" future work)."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, field_validator

from louder.analysis import stats
from louder.analysis.stats.keys import CASE_KEYS as KEYS
from louder.analysis.stats.keys import is_valid
from louder.datafiles import load_cached

RATIONALE_COLUMNS = ["analysis", *KEYS, "attribute", "pattern", "paper", "n_rationales", "n_match", "share",
                     "word", "count", "delta", "z",
                     "reasoning"]  # analysis `thinking`: the reasoning level of the decisions (issue 30)
TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")


class Pattern(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    regex: str
    paper: str = ""
    scenario: str | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"not a valid regular expression ({e})") from None
        return v


class Patterns(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = ""
    patterns: list[Pattern]


def _data_text(name: str) -> str:
    return (resources.files("louder") / "data" / "analysis" / name).read_text("utf-8")


def load_patterns(path: str | Path | None = None) -> list[Pattern]:
    """The paper's phrase patterns shipped with louder, or a user's file of the same format."""
    source = Path(path) if path else resources.files("louder") / "data" / "analysis" / "rationale_patterns.yaml"
    return load_cached(Patterns, source, "patterns").patterns


def stopwords() -> frozenset[str]:
    return frozenset(w.strip() for w in _data_text("stopwords.txt").splitlines() if w.strip() and not w.startswith("#"))


def _with_rationale(decisions: pd.DataFrame) -> pd.DataFrame:
    # only the columns used: grouping a narrow frame is several times faster on 100,000 rows
    return decisions.loc[is_valid(decisions) & decisions["rationale"].notna(), [*KEYS, "attribute", "rationale"]]


def _cells(d: pd.DataFrame) -> tuple[pd.Index, np.ndarray]:
    """The case × attribute keys of ``d`` in sorted order, and each row's position among them (its
    ``ngroup``; -1 when a key is missing: that row is in no cell, as groupby leaves it out)."""
    by = d.groupby(KEYS + ["attribute"], sort=True)
    return by.size().index, by.ngroup().fillna(-1).to_numpy(dtype=np.int64)


def pattern_counts(decisions: pd.DataFrame, patterns: list[Pattern]) -> pd.DataFrame:
    """Per case × attribute × pattern: rationales of valid decisions that match (each counts once),
    out of all rationales of valid decisions; share = n_match / n_rationales."""
    d = _with_rationale(decisions)
    cells, cell = _cells(d)
    texts = d["rationale"].tolist()  # once: iterating an Arrow column element by element is slow
    scenario = d["scenario"].to_numpy()
    rows = []
    for p in patterns:
        rx = re.compile(p.regex, re.IGNORECASE)
        idx = np.flatnonzero((cell >= 0) & (True if p.scenario is None else scenario == p.scenario))
        sub = texts if len(idx) == len(texts) else [texts[i] for i in idx]
        hit = np.fromiter(map(bool, map(rx.search, sub)), dtype=bool, count=len(idx))  # a match object is true
        n = np.bincount(cell[idx], minlength=len(cells))
        m = np.bincount(cell[idx], weights=hit, minlength=len(cells)).astype(int)
        for c in np.flatnonzero(n):
            rows.append(dict(analysis="pattern", **dict(zip(KEYS + ["attribute"], cells[c])), pattern=p.id,
                             paper=p.paper, n_rationales=int(n[c]), n_match=int(m[c]), share=m[c] / n[c]))
    return pd.DataFrame(rows, columns=RATIONALE_COLUMNS)


# every byte but a-z and the apostrophe becomes a space (UTF-8 bytes of other characters are ≥ 0x80)
_RUNS = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz'" else 32 for c in range(256))


def _word_counts(texts, stop: frozenset[str]) -> Counter:
    """Word counts of the texts (strings), stop words left out: ``TOKEN`` over the lowercased texts.
    A token lies within a run of the characters [a-z'], and a run without an apostrophe is one token, so
    the runs are cut out by a byte translation (no per-token regex match: ~2× faster) and only runs with
    an apostrophe go through ``TOKEN``."""
    runs = Counter(" ".join(texts).lower().encode("utf-8", "replace").translate(_RUNS).split())
    counts: Counter = Counter()
    for run, n in runs.items():
        for w in TOKEN.findall(run.decode()) if b"'" in run else (run.decode(),):
            counts[w] += n
    for w in stop & counts.keys():
        del counts[w]
    return counts


def distinctive_words(decisions: pd.DataFrame, top: int = 10, min_count: int = 2) -> pd.DataFrame:
    """Per case: for each attribute, the ``top`` words with the highest log-odds z-score of its
    rationales against the rest of the group's, with the case's pooled word counts as the
    informative Dirichlet prior (Monroe, Colaresi & Quinn 2008). Stop words are left out."""
    stop = stopwords()
    d = _with_rationale(decisions)
    cells, cell = _cells(d)
    texts = d["rationale"].tolist()  # as in pattern_counts: one conversion, no per-group frames
    order = np.argsort(cell, kind="stable")
    starts = np.searchsorted(cell[order], np.arange(len(cells) + 1))
    per_cell = [_word_counts([texts[i] for i in order[starts[c]:starts[c + 1]]], stop) for c in range(len(cells))]
    cases: dict[tuple, dict[str, Counter]] = {}  # case key → attribute → counts, both in sorted order
    for c, key in enumerate(cells):
        cases.setdefault(tuple(key[:-1]), {})[key[-1]] = per_cell[c]
    rows = []
    for key, per_attr in cases.items():
        if len(per_attr) < 2:
            continue
        vocab = sorted(set().union(*per_attr.values()))
        if len(vocab) < 2:  # log-odds need at least two words to compare
            continue
        matrix = np.array([[per_attr[a][w] for w in vocab] for a in per_attr], dtype=float)
        prior = matrix.sum(axis=0)
        for i, a in enumerate(per_attr):
            yi = matrix[i]
            delta, z = stats.log_odds_dirichlet(yi, prior - yi, prior)
            order_z = [j for j in np.argsort(-z) if yi[j] >= min_count][:top]
            for j in order_z:
                rows.append(dict(analysis="distinctive_word", **dict(zip(KEYS, key)), attribute=a, word=vocab[j],
                                 count=int(yi[j]), delta=float(delta[j]), z=float(z[j])))
    return pd.DataFrame(rows, columns=RATIONALE_COLUMNS)


# --- the thinking of reasoning models (issue 30) ---------------------------------------------------

WORD_ROLES = ("term", "plural", "adjective", "plural_noun")  # the roles of twins.yaml that name an attribute


@cache
def attribute_words() -> dict[str, dict[str, tuple[str, ...]]]:
    """group → attribute → the words that name it: the attribute itself and its ``WORD_ROLES`` words of
    louder/data/twins.yaml (target-only ``{to: WORD}`` entries left out)."""
    doc = yaml.safe_load((resources.files("louder") / "data" / "twins.yaml").read_text("utf-8"))
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for gid, g in (doc.get("groups") or {}).items():
        for attr, roles in (g.get("attributes") or {}).items():
            words = [attr]
            for role in WORD_ROLES:
                value = (roles or {}).get(role)
                words += [w for w in (value if isinstance(value, list) else []) if isinstance(w, str)]
            out.setdefault(gid, {})[attr] = tuple(dict.fromkeys(words))
    return out


@cache
def stereotype_words() -> dict[str, dict[str, tuple[str, ...]]]:
    """group → attribute → its stereotype words (louder/data/analysis/stereotype_words.yaml: sides of
    Bai et al.'s stereotypes)."""
    from louder.stimuli import get_stereotype

    doc = yaml.safe_load(_data_text("stereotype_words.yaml"))
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for gid, attrs in doc["groups"].items():
        for attr, entries in attrs.items():
            words: list[str] = []
            for e in entries:
                name, _, side = e.rpartition(":")
                st = get_stereotype(name)
                words += list(st.stigma_words if side == "stigma" else st.default_words)
            out.setdefault(gid, {})[attr] = tuple(dict.fromkeys(words))
    return out


def _any_word(words) -> re.Pattern | None:
    words = sorted({w for w in words if w}, key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w-])", re.IGNORECASE)


def thinking_mentions(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per case × attribute, among valid decisions that came with thinking (n_rationales): how many
    thinkings name the persona's own attribute (pattern ``attribute_words``: ``attribute_words()``) and
    how many use its stereotype words (pattern ``stereotype_words``: ``stereotype_words()``; no row for an
    attribute without any); share = n_match / n_rationales. Whole words, any case. One set of rows per
    reasoning level of the run (column ``reasoning``). Empty when no decision has thinking."""
    if "thinking" not in decisions:
        return pd.DataFrame(columns=RATIONALE_COLUMNS)
    d = decisions.loc[is_valid(decisions) & decisions["thinking"].notna()
                      & (decisions["thinking"].astype(str).str.strip() != "")]
    if d.empty:
        return pd.DataFrame(columns=RATIONALE_COLUMNS)
    d = d.assign(reasoning=d["reasoning"].fillna("default") if "reasoning" in d else "default")
    names, stereo = attribute_words(), stereotype_words()
    rows = []
    for key, g in d.groupby(KEYS + ["reasoning", "attribute"], sort=True):
        gid, level, attr = key[3], key[4], key[5]
        for pattern, words in (("attribute_words", names.get(gid, {}).get(attr, (attr,))),
                               ("stereotype_words", stereo.get(gid, {}).get(attr, ()))):
            rx = _any_word(words)
            if rx is None:
                continue
            m = int(sum(rx.search(t) is not None for t in g["thinking"].astype(str)))
            rows.append(dict(analysis="thinking", **dict(zip(KEYS, key)), attribute=attr, pattern=pattern,
                             paper="" if pattern == "attribute_words" else "Bai et al. 2024 stimuli",
                             n_rationales=len(g), n_match=m, share=m / len(g), reasoning=level))
    return pd.DataFrame(rows, columns=RATIONALE_COLUMNS)
