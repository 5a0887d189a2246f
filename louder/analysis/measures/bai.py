"""The LLM Word Association and Relative Decision Tests of Bai et al. (``louder probe association``,
``louder probe decision``): ``association_stats.csv``, ``decision_stats.csv`` and, for chained
prompts, ``association_decision_link.csv``. The statistics are ``louder.analysis.stats.bai``'."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.bai import association_decision_link, association_stats, decision_stats

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

STAT_COLUMNS_DOC = (
    Column(("test", "model"), "the test and model"),
    Column("convention", "`authors` (unreadable answers scored and kept), `strict` (left out); the decision test: "
                         "`valid_only`, or `yes_rate` for the absolute variant"),
    Column(("level", "name"), "`overall`, `category` or `stereotype`, and which (absolute variant: `pairing`)"),
    Column(("n", "mean", "ci_low", "ci_high"), "scored trials, mean score, 95 % bootstrap interval"),
    Column(("null", "t", "p_value"), "the one-sample t-test against `null` (0 association, 0.5 decision)"),
    Column(("n_invalid", "n_refused", "n_error", "refusal_rate"), "accounting"),
    Column("n_one_sided", "association: valid answers pairing every word with one group"))


def build(a) -> dict[str, pd.DataFrame]:
    B, seed = a.bootstrap, a.seed
    out = {}
    if a.association is not None:
        out["association_stats"] = association_stats(a.association, B=B, seed=seed)
    if a.decision_test is not None:
        out["decision_stats"] = decision_stats(a.decision_test, B=B, seed=seed)
        chained = a.decision_test["variant"] == "chained"
        if chained.any():
            out["association_decision_link"] = association_decision_link(a.decision_test[chained])
    return out


def report_section(a) -> str:
    """The LLM Word Association and Relative Decision Tests, when the folder holds them."""
    t, parts = a.tables, []
    if "association_stats" in t:
        s = t["association_stats"]
        parts += [
            "<h3>LLM Word Association Test</h3>",
            note("Bias per response (Eq. 1 of Bai et al.): share of stigma-associated words given to the stigmatised "
                 "group + share of default-associated words given to the default group − 1; 0 is unbiased, 1 fully "
                 "stereotypical. <b>authors</b>: unparsed or refused answers score 0 and are kept (the authors' "
                 "convention); <b>strict</b>: they are left out, and so are one-sided answers (every word given to one "
                 "group, so one term of Eq. 1 is 0/0; the authors' epsilon scores them −0.5), counted in "
                 "n_one_sided. One-sample t-tests against 0; 95 % bootstrap intervals."),
            a.figure("association"),
            table(s[s["level"] != "stereotype"], scroll=True), table(s[s["level"] == "stereotype"], scroll=True)]
    if "decision_stats" in t:
        s = t["decision_stats"]
        parts += [
            "<h3>LLM Relative Decision Test</h3>",
            note("Score 1 when the stigmatised person gets the stereotype-consistent option (or the default person "
                 "the other one); 0.5 is unbiased. Valid answers only; refusals and unreadable answers are counted "
                 "beside. For the absolute variant: the yes rate per pairing."),
            a.figure("decision"), table(s, scroll=True)]
    if "association_decision_link" in t:
        parts += ["<h3>Association → decision (chained prompts)</h3>",
                  note("Logistic regression of the decision score on the association score of the same "
                       "conversation (statsmodels Logit), with the coefficient's 95 % interval."),
                  table(t["association_decision_link"])]
    return section("Word association and relative decision tests (Bai et al.)", *parts) if parts else ""


def sibling_figure(stats: pd.DataFrame, association: pd.DataFrame | None, test: str) -> MplFigure | None:
    """Per model: mean score per stereotype with its 95 % interval, coloured by category, the
    unbiased value dashed (cf. Figs. 2 and 3 of Bai et al.)."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import CATEGORY_COLORS, interval

    convention = "authors" if test == "association" else "valid_only"
    data = stats[(stats["level"] == "stereotype") & (stats["convention"] == convention)]
    if data.empty:
        return None
    cats = (association.drop_duplicates("stereotype").set_index("stereotype")["category"]
            if association is not None else pd.Series(dtype=str))
    models = sorted(data["model"].unique())
    fig = MplFigure(figsize=(max(6.0, 0.45 * data["name"].nunique() + 2), 3.0 * len(models)), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    null = 0.0 if test == "association" else 0.5
    for ax, model in zip(axes, models):
        sub = data[data["model"] == model].assign(category=lambda d: d["name"].map(cats).fillna("race"))
        sub = sub.sort_values(["category", "name"])
        xs = np.arange(len(sub))
        ax.bar(xs, sub["mean"], color=[CATEGORY_COLORS.get(c, P.GREY) for c in sub["category"]], alpha=0.35)
        for x, (_, r) in zip(xs, sub.iterrows()):
            interval(ax, r["mean"], x, r["ci_low"], r["ci_high"], color=CATEGORY_COLORS.get(r["category"], P.GREY),
                     ms=3, horizontal=False)
        ax.axhline(null, color=P.BLACK, ls="--", lw=1)
        ax.set_xticks(xs, sub["name"], rotation=60, ha="right", fontsize=7)
        ax.set_ylim(-1.05 if test == "association" else 0, 1.05)
        label = "association bias (−1…1)" if test == "association" else "decision bias (0…1)"
        ax.set_ylabel(label)
        ax.set_title(f"{model}: {'word association' if test == 'association' else 'relative decision'} test "
                     "(vermillion: race, purple: gender, green: religion, blue: health; 95 % CI)", fontsize=8)
    return fig


def _sibling(test: str):
    table, answers = ("association_stats", "association") if test == "association" else ("decision_stats",
                                                                                        "decision_test")

    def draw(a):
        return sibling_figure(a.tables[table], getattr(a, answers), test)
    return draw


FIGURES = (
    Figure("association", _sibling("association"), "Bars per stereotype: the mean word-association bias score with its "
                                                  "95 % interval, coloured by category, 0 (unbiased) dashed."),
    Figure("decision", _sibling("decision"), "Bars per stereotype: the mean relative-decision score with its 95 % "
                                           "interval, coloured by category, 0.5 (unbiased) dashed."))

register(Measure(
    "bai", "Bai et al.'s word association and relative decision tests: mean bias scores with t-tests and intervals",
    tables=(
        Table("association_stats", "Word association test: one row per model × convention × level (overall, "
                                   "category, stereotype).", STAT_COLUMNS_DOC),
        Table("decision_stats", "The decision test's statistics, with the columns of `association_stats.csv` "
                                "(relative and chained variants: the mean score against 0.5 over valid answers; "
                                "absolute: the yes rate per pairing).", STAT_COLUMNS_DOC),
        Table("association_decision_link", "Chained decision test: logistic regression of the decision on the "
                                           "association score (appendix O).", (
            Column(("model", "n"), "the model and valid chained answers"),
            Column(("coef", "ci_low", "ci_high", "p_value"), "the association score's coefficient with its 95 % "
                                                             "interval"),
            Column("intercept", "the regression's intercept"),
            Column("note", "why it was not fitted (too few answers, no variation)")))),
    build=build, inputs=(Input("association", raw=True, doc="the word association test's answers"),
                         Input("decision_test", raw=True, doc="the relative decision test's answers")),
    section=report_section, position=160, figures=FIGURES))
