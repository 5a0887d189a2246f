"""The 21 stereotypes of the LLM Word Association and Relative Decision Tests (Bai et al.), read
from the authors' stimuli CSVs (MIT, louder/data/bai) and louder's template file ``tests.yaml``."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import yaml

from louder.errors import LouderError, did_you_mean

DATA = resources.files("louder") / "data" / "bai"
# The CSV files the association responses of the authors are named by; louder uses the CSV's names.
ALIASES = {"arab": "arab/muslim", "mentalill": "mental illness"}


@dataclass(frozen=True)
class Stereotype:
    name: str
    category: str  # race, gender, religion, health (age is counted under health, as in the paper)
    default_tokens: tuple[str, ...]  # S_a in the CSV (e.g. White)
    stigma_tokens: tuple[str, ...]  # S_b in the CSV (e.g. Black)
    default_words: tuple[str, ...]  # first half of C
    stigma_words: tuple[str, ...]  # second half of C
    default_synonyms: tuple[str, ...] = field(default=())
    stigma_synonyms: tuple[str, ...] = field(default=())
    # iat_stimuli_analysis.csv: the full names and job/warmth/competence words the authors used for
    # the name stereotypes' synonym runs; accepted when re-scoring their saved answers.
    analysis_default_tokens: tuple[str, ...] = field(default=())
    analysis_stigma_tokens: tuple[str, ...] = field(default=())
    analysis_default_words: tuple[str, ...] = field(default=())
    analysis_stigma_words: tuple[str, ...] = field(default=())

    @property
    def words(self) -> tuple[str, ...]:
        return self.default_words + self.stigma_words


def _read(name: str) -> list[dict]:
    with (DATA / name).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@cache
def stereotypes() -> dict[str, Stereotype]:
    """All 21 stereotypes by name, in the authors' order."""
    groups: dict[str, dict] = {}
    for row in _read("iat_stimuli.csv"):
        g = groups.setdefault(row["dataset"], {"category": row["category"], "A": [], "B": [], "C": []})
        for col in "ABC":
            if row[col].strip():
                g[col].append(row[col].strip())
    # word → synonym per stereotype (the synonym file also carries extra rows for the name datasets).
    synonyms: dict[str, dict[str, str]] = {}
    for row in _read("iat_stimuli_synonym.csv"):
        synonyms.setdefault(row["dataset"], {})[row["C"].strip()] = row["D"].strip()
    analysis: dict[str, dict] = {}
    for row in _read("iat_stimuli_analysis.csv"):
        g = analysis.setdefault(row["dataset"], {"A": [], "B": [], "C": []})
        for col in "ABC":
            if row[col].strip():
                g[col].append(row[col].strip())
    out = {}
    for name, g in groups.items():
        an = analysis.get(name, {"A": [], "B": [], "C": []})
        an_half = len(an["C"]) // 2
        half = len(g["C"]) // 2
        syn_map = synonyms.get(name, {})
        syn = [syn_map[w] for w in g["C"] if w in syn_map]
        out[name] = Stereotype(
            name=name, category="health" if g["category"] == "age" else g["category"],
            default_tokens=tuple(g["A"]), stigma_tokens=tuple(g["B"]),
            default_words=tuple(g["C"][:half]), stigma_words=tuple(g["C"][half:]),
            default_synonyms=tuple(syn[:half]) if len(syn) == len(g["C"]) else (),
            stigma_synonyms=tuple(syn[half:]) if len(syn) == len(g["C"]) else (),
            analysis_default_tokens=tuple(t for t in an["A"] if t not in g["A"]),
            analysis_stigma_tokens=tuple(t for t in an["B"] if t not in g["B"]),
            analysis_default_words=tuple(w for w in an["C"][:an_half] if w not in g["C"]),
            analysis_stigma_words=tuple(w for w in an["C"][an_half:] if w not in g["C"]))
    return out


def get_stereotype(name: str) -> Stereotype:
    all_ = stereotypes()
    key = ALIASES.get(name, name)
    if key not in all_:
        raise LouderError(f"unknown stereotype {name!r}{did_you_mean(name, [*all_, *ALIASES])}; known: "
                          f"{', '.join(all_)}")
    return all_[key]


@cache
def templates() -> dict:
    return yaml.safe_load((DATA / "tests.yaml").read_text("utf-8"))
