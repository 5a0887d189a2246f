"""What the agents' rationales say (sections 5.2 and 5.5): the paper's phrase patterns, the words
most distinctive of each attribute, and for reasoning models how often the thinking names the
persona's attribute or its stereotype words — ``rationales.csv``. The text statistics are
``louder.analysis.stats.rationales``'."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS
from louder.analysis.stats.rationales import distinctive_words, load_patterns, pattern_counts, thinking_mentions

INPUTS = (Input("decisions", doc="the agents' decisions, the per-case selection"),
          Input("thinking", "decisions.parquet", whole=("reasoning",), doc="… at every reasoning level"))
PATTERNS = Option("patterns", Path, None, "phrase patterns of your own (the format of "
                  "louder/data/analysis/rationale_patterns.yaml; default: the paper's)", flag="--patterns")


def build(a) -> dict[str, pd.DataFrame]:
    if a.decisions is None:
        return {"rationales": pd.DataFrame(columns=["analysis"])}
    return {"rationales": pd.concat([pattern_counts(a.decisions, load_patterns(a.options.patterns)),
                                     distinctive_words(a.decisions), thinking_mentions(a.thinking)],
                                    ignore_index=True)}


def _matches(rows: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    """One row per ``index`` and a column per pattern: "matches/rationales" ("–" where none)."""
    rows = rows.assign(matches=rows["n_match"].astype(int).astype(str) + "/"
                       + rows["n_rationales"].astype(int).astype(str))
    wide = rows.pivot_table(index=index, columns="pattern", values="matches", aggfunc="first").reset_index()
    wide.columns.name = None
    return wide.fillna("–")


def report_section(a) -> str:
    r = a.tables["rationales"]
    if r.empty:
        return section("Rationales", note("No valid decisions with rationales in this run."))
    pats = r[r["analysis"] == "pattern"]
    words = r[r["analysis"] == "distinctive_word"]
    thinking = r[r["analysis"] == "thinking"]
    parts = [note("Phrase patterns the paper counted (sections 5.2, 5.5): rationales of valid decisions that match, "
                  "out of all rationales of valid decisions of that attribute."), a.figure("patterns")]
    if len(pats):
        parts.append(table(_matches(pats, ATTRIBUTE_KEYS), scroll=True))
    if len(words):
        parts.append(note("Most distinctive words per attribute: log-odds ratio with an informative Dirichlet prior "
                          "(Monroe, Colaresi &amp; Quinn 2008) against the rest of the group; z-score in brackets."))
        w = words.sort_values("z", ascending=False, kind="stable").groupby(ATTRIBUTE_KEYS)
        rows = [dict(zip(ATTRIBUTE_KEYS, k), words=", ".join(f"{x} ({z:.1f})" for x, z in zip(g["word"], g["z"])))
                for k, g in w]
        parts.append(table(pd.DataFrame(rows), scroll=True))
    if len(thinking):  # issue 30: the thinking of a reasoning model, per attribute
        parts.append(note("The thinking of a reasoning model, per attribute and reasoning level: how many thinkings "
                          "of valid decisions name the persona's own attribute (the attribute and its words in "
                          "louder/data/twins.yaml) and how many use its stereotype words (Bai et al.'s stimuli, "
                          "louder/data/analysis/stereotype_words.yaml), out of all that came with thinking."))
        parts.append(table(_matches(thinking, [*CASE_KEYS, "reasoning", "attribute"]), scroll=True))
    return section("Rationales", *parts)


MAX_PANELS = 9


def rationales_figure(a):
    """The share of rationales matching each phrase pattern per attribute as heat maps, one per case (the first
    nine); a run without patterns: each attribute's most distinctive words (z-scores)."""
    from matplotlib.figure import Figure as MplFigure

    r = a.tables["rationales"]
    pats = r[r["analysis"] == "pattern"]
    words = r[r["analysis"] == "distinctive_word"]
    data = pats if len(pats) else words
    if data.empty:
        return None
    cases = list(data.groupby(CASE_KEYS, sort=True))[:MAX_PANELS]
    ncol = min(3, len(cases))
    nrow = -(-len(cases) // ncol)
    fig = MplFigure(figsize=(3.6 * ncol + 0.8, 2.6 * nrow + 0.8), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(cases):]:
        ax.set_axis_off()
    image = None
    for ax, (key, g) in zip(axes.flat, cases):
        if len(pats):
            grid = g.pivot_table(index="attribute", columns="pattern", values="share", aggfunc="first")
            image = ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
            ax.set_xticks(range(grid.shape[1]), [c.replace("_", " ") for c in grid.columns], rotation=40, ha="right",
                          fontsize=6)
            ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=7)
        else:
            top = g.sort_values("z", ascending=False).groupby("attribute").head(3)
            labels = [f"{w} ({at})" for w, at in zip(top["word"], top["attribute"])]
            ax.barh(-np.arange(len(top)), top["z"], color=P.BLUE)
            ax.set_yticks(-np.arange(len(top)), labels, fontsize=6)
            ax.axvline(1.96, color=P.GREY, ls="--", lw=1)
            ax.set_xlabel("z (log-odds)", fontsize=7)
        ax.set_title(textwrap.shorten(f"{key[2]} × {key[3]} · {key[1]}", 50), fontsize=7, loc="left")
    if image is not None:
        fig.colorbar(image, ax=axes, label="share of rationales matching", shrink=0.8)
    fig.suptitle("Phrase patterns per attribute" if len(pats) else "Most distinctive words per attribute",
                 fontsize=9)
    return fig


register(Measure(
    "rationales", "the paper's phrase patterns in the rationales, each attribute's distinctive words, the thinking",
    tables=(Table("rationales", "Three analyses in one table, told apart by `analysis`.", (
        Column("analysis", "`pattern` (phrase counts), `distinctive_word` (distinctive words) or `thinking` (a "
                           "reasoning model's thinking)"),
        Column(("model", "condition", "scenario", "group", "attribute"), "the case and attribute"),
        Column(("pattern", "paper"), "the phrase pattern and the paper's wording of it; `thinking` rows: "
                                     "`attribute_words` (the thinking names the persona's own attribute: its name and "
                                     "its words in louder/data/twins.yaml) or `stereotype_words` (it uses the "
                                     "attribute's stereotype words: Bai et al.'s stimuli, "
                                     "louder/data/analysis/stereotype_words.yaml)"),
        Column(("n_rationales", "n_match", "share"), "rationales (`thinking` rows: thinkings) of valid decisions, how "
                                                     "many match, the share"),
        Column(("word", "count"), "a word and its count"),
        Column(("delta", "z"), "log-odds ratio with an informative Dirichlet prior, and its z-score (|z| > 1.96 "
                               "notable)"),
        Column("reasoning", "`thinking` rows: the reasoning level of the decisions"))),),
    build=build, inputs=INPUTS, options=(PATTERNS,), section=report_section, position=150,
    figures=(Figure("patterns", rationales_figure, "Heat maps, one per case: the share of each attribute's rationales "
                  "that match each of the paper's phrase patterns (or, without patterns, each attribute's most "
                  "distinctive words)."),)))
