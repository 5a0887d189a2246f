"""Model against model (issue 42): a folder that holds several models gets the paper's summary per
model (``models.csv``), ΔDPD per pair of models and case for actions and words with a verdict
(``model_pairs.csv``), a summary per pair (``model_pair_summary.csv``) and, with an order
(``--set models.order=A --set models.order=B …``), the trend along it (``model_trend.csv``). The
statistics: ``louder.analysis.stats.comparison``. A folder of one model — or of models that share no
case (the agents of one, the explicit probe of another) — writes none of these.

This measure also shows the tables of ``louder compare`` (run folders against each other), which finds
it through the registry as the measure that declares the comparison's tables (``stats.comparison.TABLES``):
its inputs are how each folder is read, and its findings, section and figures — a forest plot of
ΔDPD per case with the margin, the Δ, its interval and the verdict among the tables' key columns —
are the same on both pages."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import cell, note, section, table
from louder.analysis.stats import comparison as C
from louder.errors import LouderError, did_you_mean

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn: `louder compare` without a report stays light
    from matplotlib.figure import Figure as MplFigure

TITLE = "Model against model"


def _margin(v: float) -> str | None:
    return None if 0 < v < 1 else "the margin is a DPD difference in (0, 1), e.g. 0.1"


ORDER = Option("order", str, (), "the models in order (e.g. generations, oldest first): the pairs follow it and "
                                 "model_trend.csv tests a trend along it (default: the run's order, no trend)",
               multiple=True)
MARGIN = Option("margin", float, C.MARGIN, "a verdict reads `no difference` only when the ΔDPD interval lies within "
                                           "± this margin (else `underpowered`)", check=_margin)
INPUTS = (Input("decisions", doc="the agents' decisions, the per-case selection (as cases.csv)"),
          Input("probes", doc="the explicit probe's answers (as cases.csv)"))


def order_of(a) -> list[str]:
    """The models compared, in order: the option's, else the run's."""
    models = C.models_of(a.manifests, a.decisions, a.probes)
    chosen = list(a.options.order)
    for m in chosen:
        if m not in models:
            raise LouderError(f"models.order={m}: the run has no model {m!r}{did_you_mean(m, models)}; its models: "
                              f"{', '.join(models)}")
    return chosen or models


def build(a) -> dict[str, pd.DataFrame]:
    order = order_of(a)
    if len(order) < 2:
        return {}  # one model: nothing to compare
    if a.decisions is not None and {"cell_id", "bucket"} <= set(a.decisions.columns):
        a.missing.append("models: an archetype run's agents share model calls (clusters); its models are not compared")
        return {}
    c = C.compare(a.decisions, a.probes, a.groups, order, score=a.score, B=a.bootstrap, seed=a.seed,
                  margin=a.options.margin, ordered=bool(a.options.order))
    # models that share no case (the agents of one, the explicit probe of another): nothing to compare
    return c.tables if len(c.rows) else {}


# --- what the tables say, in sentences (the top of a run's report and of `louder compare`'s) ---------------

SIDES = {"actions": ("Actions (what the agents do)", "agents"),
         "words": ("Words (what the models say when asked)", "trials of the explicit probe")}


def _signed(v: float) -> str:
    return "–" if pd.isna(v) else f"{round(float(v), 2) + 0.0:+.2f}"  # + 0.0: never "-0.00"


def _case(r, side: str) -> str:
    """"scenario × group", and the persona condition for the actions."""
    cond = r.get("condition")
    return f"{r['scenario']} × {r['group']}" + (
        f" ({cond})" if side == "actions" and isinstance(cond, str) and cond else "")


def _delta(r, side: str) -> str:
    if pd.isna(r[f"{side}_delta"]):
        return "no ΔDPD (too few valid answers)"
    return f"ΔDPD {_signed(r[f'{side}_delta'])} [{_signed(r[f'{side}_ci_low'])}, {_signed(r[f'{side}_ci_high'])}]"


def _listed(rows: pd.DataFrame, side: str, most: int = 3) -> str:
    items = [f"{_case(r, side)}, {_delta(r, side)}" for _, r in rows.iterrows()]
    return "; ".join(items[:most]) + (f"; and {len(items) - most} more" if len(items) > most else "")


def side_rows(pairs: pd.DataFrame | None, side: str) -> pd.DataFrame:
    """The rows of ``model_pairs`` with a verdict on ``side``: every case for the actions, each scenario × group
    once for the words (the table repeats the explicit probe beside every persona condition)."""
    if pairs is None or pairs.empty:
        return pd.DataFrame(columns=[] if pairs is None else pairs.columns)
    rows = pairs[pairs[f"{side}_verdict"].map(lambda v: isinstance(v, str) and v != "")]
    return rows.drop_duplicates(["reference", "model", "scenario", "group"]) if side == "words" else rows


def pair_finding(reference: str, model: str, side: str, rows: pd.DataFrame, summary, margin: float) -> Finding:
    """One pair of entries on one side in a sentence: which is more or less biased, in which cases and by
    how much (ΔDPD with its interval), where no difference is shown, and — said plainly — where the
    interval is too wide to tell (``underpowered``), then the mean ΔDPD over several cases."""
    who, more_of = SIDES[side]
    n = len(rows)
    of = f"of {n} case" if n == 1 else f"of {n} cases"
    verdict = rows[f"{side}_verdict"]
    delta = rows[f"{side}_delta"]
    more, less = rows[verdict == "more biased"], rows[verdict == "less biased"]
    same, under = rows[verdict == "no difference"], rows[verdict == "underpowered"]
    parts = []
    if len(more):
        parts.append(f"{model} is more biased than {reference} in {len(more)} {of} — "
                     f"{_listed(more.loc[delta[more.index].sort_values(ascending=False).index], side)}")
    if len(less):
        parts.append(f"{model} is less biased than {reference} in {len(less)} {of} — "
                     f"{_listed(less.loc[delta[less.index].sort_values().index], side)}")
    if len(same):
        parts.append(f"no difference in {len(same)} {of} (the ΔDPD interval within ± {margin:g})")
    if len(under):
        wide = under.loc[delta[under.index].abs().sort_values(ascending=False, na_position="last").index]
        parts.append(f"underpowered in {len(under)} {of} — {_listed(wide, side)}: the interval reaches past "
                     f"± {margin:g}, too wide to tell a difference that large from none; more {more_of} would "
                     "settle it")
    named = len(more) or len(less)  # the first clause names the two entries
    # one sentence per verdict (a list of cases is joined by semicolons inside it)
    text = f"{who}{'' if named else f', {model} against {reference}'}: " + ". ".join(
        parts[:1] + [x if x.startswith(model) else x[0].upper() + x[1:] for x in parts[1:]]) + "."
    if n > 1 and summary is not None and pd.notna(summary["mean_delta"]):
        text += (f" Mean ΔDPD over the {n} cases {_signed(summary['mean_delta'])} [{_signed(summary['ci_low'])}, "
                 f"{_signed(summary['ci_high'])}].")
    return Finding(text, TITLE)


def findings(a) -> list[Finding]:
    """Per pair of entries and side (actions, then words): ``pair_finding``."""
    pairs, summary = a.tables.get(C.PAIRS), a.tables.get(C.PAIR_SUMMARY)
    if pairs is None or pairs.empty:
        return []
    out = []
    for (reference, model), g in pairs.groupby(["reference", "model"], sort=False):
        for side in SIDES:
            rows = side_rows(g, side)
            if rows.empty:
                continue
            s = None if summary is None else summary[(summary["reference"] == reference) &
                                                     (summary["model"] == model) & (summary["side"] == side)]
            out.append(pair_finding(str(reference), str(model), side, rows, None if s is None or s.empty
                                    else s.iloc[0], a.options.margin))
    return out


# --- figures ------------------------------------------------------------------------------------------------

VERDICT_STYLE = {"more biased": (P.UP, False), "less biased": (P.DOWN, False),  # colour, hollow
                 "no difference": (P.NEUTRAL, False), "underpowered": (P.NEUTRAL, True)}


def forest_figure(pairs: pd.DataFrame | None, margin: float) -> MplFigure | None:
    """ΔDPD = DPD(model) − DPD(reference) per pair and case, actions above words: each a point with its 95 %
    interval, coloured by its verdict (more biased: up, less biased: down, no difference: neutral;
    underpowered: hollow) and the verdict written beside it; 0 and the band ± ``margin`` (inside it an
    interval reads no difference) drawn."""
    panels = [(side, side_rows(pairs, side)) for side in SIDES]
    panels = [(side, rows.reset_index(drop=True)) for side, rows in panels if len(rows)]
    if not panels:
        return None
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from louder.analysis.report.draw import interval

    several = pairs[["reference", "model"]].drop_duplicates().shape[0] > 1
    values = np.concatenate([rows[[f"{s}_delta", f"{s}_ci_low", f"{s}_ci_high"]].to_numpy(dtype=float).ravel()
                             for s, rows in panels])
    values = values[np.isfinite(values)]
    low = max(-1.05, min(-margin, values.min(initial=0.0)) - 0.06)
    high = min(1.05, max(margin, values.max(initial=0.0)) + 0.06)
    heights = [len(rows) for _, rows in panels]
    fig = MplFigure(figsize=(7.5, 0.3 * sum(heights) + 0.5 * len(panels) + 1.0), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, sharex=True,
                        height_ratios=[max(h, 1.2) for h in heights])[:, 0]
    for ax, (side, rows) in zip(axes, panels):
        ax.axvspan(-margin, margin, color=P.GRID, lw=0, zorder=0)
        for x in (-margin, margin):
            ax.axvline(x, color=P.LIGHT, ls="--", lw=0.8, zorder=0)
        ax.axvline(0, color=P.BLACK, lw=0.8, zorder=1)
        labels = []
        for i, r in rows.iterrows():
            v = r[f"{side}_verdict"]
            color, hollow = VERDICT_STYLE.get(v, (P.NEUTRAL, True))
            if pd.notna(r[f"{side}_delta"]):
                interval(ax, float(r[f"{side}_delta"]), -i, float(r[f"{side}_ci_low"]), float(r[f"{side}_ci_high"]),
                         color=color, ms=5, hollow=hollow, zorder=3)
            ax.text(1.01, -i, v, transform=ax.get_yaxis_transform(), fontsize=7, va="center", color=P.BLACK)
            case = _case(r, side)
            labels.append(textwrap.fill(f"{r['model']} − {r['reference']}: {case}" if several else case, 44))
        ax.set_yticks(-np.arange(len(rows)), labels, fontsize=7)
        ax.set_ylim(-len(rows) + 0.4, 0.6)
        ax.set_xlim(low, high)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(SIDES[side][0], fontsize=8, loc="left")
    pair = pairs[["reference", "model"]].iloc[0]
    axes[-1].set_xlabel("ΔDPD = DPD(model) − DPD(reference)" if several else
                        textwrap.fill(f"ΔDPD = DPD({pair['model']}) − DPD({pair['reference']})", 100), fontsize=8)
    shown = [v for v in C.VERDICTS if any((rows[f"{s}_verdict"] == v).any() for s, rows in panels)]
    handles = [Line2D([], [], color=VERDICT_STYLE[v][0], marker="o", ls="none",
                      mfc=P.WHITE if VERDICT_STYLE[v][1] else VERDICT_STYLE[v][0], label=v) for v in shown]
    handles.append(Patch(facecolor=P.GRID, edgecolor=P.LIGHT, ls="--", label=f"± {margin:g}: no difference"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.suptitle("ΔDPD per case, 95 % intervals (each model's agents resampled on its own)", fontsize=9)
    return fig


def forest_alt(a) -> str:
    pairs = a.tables.get(C.PAIRS)
    n = sum(len(side_rows(pairs, s)) for s in SIDES)
    return (f"Forest plot of ΔDPD = DPD(model) − DPD(reference) for {n} pair × case comparison(s), actions (the "
            "agents) above words (the explicit probe): each a point with its 95 % interval, coloured by its verdict, "
            f"which is written beside it; a shaded band marks ± {a.options.margin:g}, the margin inside which an "
            "interval reads no difference.")


def models_figure(models: pd.DataFrame | None, ordered: bool = False) -> MplFigure | None:
    """The paper's Figure 3: per model (in order), its mean implicit DPD and mean explicit DPD with
    their intervals; joined by lines when the order means something (``ordered``)."""
    if models is None or models.empty:
        return None
    from matplotlib.figure import Figure as MplFigure

    names = list(models["model"])
    fig = MplFigure(figsize=(max(5.0, 1.4 * len(names) + 2.5), 3.4), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(names))
    for j, (kind, color) in enumerate((("implicit", P.IMPLICIT), ("explicit", P.EXPLICIT))):
        y = models[f"mean_{kind}"].to_numpy(dtype=float)
        if not np.isfinite(y).any():
            continue
        lo, hi = models[f"{kind}_ci_low"].to_numpy(dtype=float), models[f"{kind}_ci_high"].to_numpy(dtype=float)
        xs = x + (j - 0.5) * 0.12
        label = (f"implicit ({models['implicit_condition'].dropna().iloc[0]})" if kind == "implicit"
                 and models["implicit_condition"].notna().any() else kind)
        ax.errorbar(xs, y, yerr=[np.nan_to_num(y - lo), np.nan_to_num(hi - y)], fmt="o-" if ordered else "o",
                    color=color, capsize=4, label=label)
    ax.set_xticks(x, [textwrap.fill(n, 22) for n in names], fontsize=8)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean DPD over cases")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Mean DPD per model (cf. the paper's Fig. 3), 95 % intervals: agents resampled within cases",
                 fontsize=9)
    return fig


MEANS_ALT = ("Per model, in order: its mean implicit DPD (the agents) and mean explicit DPD (the model asked "
             "directly) over the cases, each a point with its 95 % interval.")


# --- the section --------------------------------------------------------------------------------------------

def _with_intervals(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pair table as the page shows it: a column "SIDE ΔDPD [95 % CI]" per side beside the CSV's."""
    out = pairs.copy()
    for side in SIDES:
        d, lo, hi = (f"{side}_{c}" for c in ("delta", "ci_low", "ci_high"))
        out[f"{side} ΔDPD [95 % CI]"] = ["–" if pd.isna(r[d]) else f"{cell(d, r[d])} [{cell(lo, r[lo])}, "
                                         f"{cell(hi, r[hi])}]" for _, r in pairs.iterrows()]
    return out


# the pair table's columns shown first: the case, then per side its Δ with its interval and its verdict
PAIR_KEY = ("reference", "model", "condition", "scenario", "group", "actions ΔDPD [95 % CI]", "actions_verdict",
            "words ΔDPD [95 % CI]", "words_verdict")


def report_section(a) -> str:
    """The forest plot of ΔDPD first, then the pairs per case, per pair, per model (the paper's Figure 3)
    and the trend."""
    ordered, margin = bool(a.options.order), a.options.margin
    models, pairs = a.tables.get(C.MODELS), a.tables.get(C.PAIRS)
    summary, trend = a.tables.get(C.PAIR_SUMMARY), a.tables.get(C.TREND)
    parts = [note(f"ΔDPD per case for <b>actions</b> (the agents) and <b>words</b> (the explicit probe), with 95 % "
                  f"intervals; shaded: ± the margin ({margin:g}), inside which an interval reads no difference."),
             a.figure("forest")]
    if pairs is not None and len(pairs):
        parts += ["<h3>Per pair and case: actions and words</h3>",
                  note("Each ΔDPD with its interval, p-value and Holm-adjusted p (across every pair × case of the "
                       "table). <b>more / less biased</b>: p_holm &lt; 0.05; <b>no difference</b>: not, and the "
                       f"interval within ± {margin:g}; <b>underpowered</b>: not, and the interval reaches past ± "
                       f"{margin:g} (a difference of that size could not have been excluded: more agents, or "
                       "trials, would settle it)."),
                  table(_with_intervals(pairs), scroll=True, key=PAIR_KEY)]
    if summary is not None and len(summary):
        parts += ["<h3>Per pair of models</h3>",
                  note("ΔDPD = DPD(model) − DPD(reference), averaged over the cases both have, with its interval "
                       "and p-value, and how many cases read each verdict."),
                  table(summary, scroll=True)]
    parts += ["<h3>Per model</h3>",
              note("Per model, the paper's summary: the cases significant of N (each case's parity test, Holm within "
                   "the model and kind), the mean DPD of its implicit cases (one persona condition) and of its "
                   "explicit cases with 95 % intervals, and the gap implicit − explicit with its interval and test. "
                   "Intervals resample the agents (and the probe's answers) within every case, each model on its "
                   "own; they contain their estimate and stay valid when a DPD is 0 — and are conservative (wide): "
                   "see the tutorial <i>Compare two models</i>."),
              a.figure("means", models, ordered),
              table(models, scroll=True)]
    if trend is not None and len(trend):
        parts += ["<h3>Trend along the order</h3>",
                  note("Weighted least squares of each model's mean DPD on its position in the order, weights 1 / the "
                       "mean's bootstrap variance; z-test of slope 0 (H0: every model's mean DPD the same)."),
                  table(trend)]
    return section(TITLE, *parts)


def _verdict_style(side: str):
    return lambda r: {"more biased": "bold red", "less biased": "green", "underpowered": "yellow"}.get(
        r[f"{side}_verdict"])


def _mean(kind: str):
    return with_interval(f"mean_{kind}", f"{kind}_ci_low", f"{kind}_ci_high")


def _sig(kind: str):
    return lambda r: "–" if not r[f"n_{kind}"] else f"{int(r[f'significant_{kind}'])} of {int(r[f'n_{kind}'])}"


MODELS_CONSOLE = Console("models", "Per model: cases significant of N (Holm within the model), mean DPD of the implicit and "
                             "explicit cases (95 % intervals: agents resampled within cases) and the gap", (
    Cell("model", "model", priority=1),
    Cell("implicit sig.", _sig("implicit"), number=True, priority=1, name="significant_implicit"),
    Cell("mean implicit [95 % CI]", _mean("implicit"), number=True, priority=1, name="mean_implicit"),
    Cell("explicit sig.", _sig("explicit"), number=True, name="significant_explicit"),
    Cell("mean explicit [95 % CI]", _mean("explicit"), number=True, priority=1, name="mean_explicit"),
    Cell("gap [95 % CI]", with_interval("gap", "gap_ci_low", "gap_ci_high"), number=True, name="gap"),
    Cell("gap p", lambda r: number(r["gap_p_value"], 4), number=True, name="gap_p_value")), position=24)

PAIRS_CONSOLE = Console("model_pairs", "Per pair and case: ΔDPD = model − reference for actions (the agents) and words "
                                 "(the explicit probe), Holm across pairs × cases", (
    Cell("reference", "reference", priority=1), Cell("model", "model", priority=1),
    key("condition"), key("scenario"), key("group"),
    Cell("actions Δ [95 % CI]", with_interval("actions_delta", "actions_ci_low", "actions_ci_high"), number=True,
         priority=1, name="actions_delta"),
    Cell("p_holm", lambda r: number(r["actions_p_holm"], 4), number=True, priority=3, name="actions_p_holm"),
    Cell("actions", lambda r: r["actions_verdict"] if isinstance(r["actions_verdict"], str) else "–", priority=1,
         style=_verdict_style("actions"), name="actions_verdict"),
    Cell("words Δ [95 % CI]", with_interval("words_delta", "words_ci_low", "words_ci_high"), number=True,
         name="words_delta"),
    Cell("p_holm ", lambda r: number(r["words_p_holm"], 4), number=True, priority=3, name="words_p_holm"),
    Cell("words", lambda r: r["words_verdict"] if isinstance(r["words_verdict"], str) else "–", priority=1,
         style=_verdict_style("words"), name="words_verdict")), position=25)

SUMMARY_CONSOLE = Console("model_pair_summary", "Per pair: mean ΔDPD over the cases and the verdicts' counts", (
    Cell("reference", "reference", priority=1), Cell("model", "model", priority=1), Cell("side", "side", priority=1),
    Cell("mean Δ [95 % CI]", with_interval("mean_delta", "ci_low", "ci_high"), number=True, priority=1,
         name="mean_delta"),
    Cell("more", lambda r: str(int(r["n_more_biased"])), number=True, priority=1, name="n_more_biased"),
    Cell("less", lambda r: str(int(r["n_less_biased"])), number=True, priority=1, name="n_less_biased"),
    Cell("no diff.", lambda r: str(int(r["n_no_difference"])), number=True, name="n_no_difference"),
    Cell("underpowered", lambda r: str(int(r["n_underpowered"])), number=True, name="n_underpowered")), position=26)

TREND_CONSOLE = Console("model_trend", "Trend of the mean DPD along the models' order (WLS on position; z-test of slope 0)", (
    Cell("side", "side", priority=1), Cell("order", "order", priority=2),
    Cell("slope [95 % CI]", with_interval("slope", "slope_ci_low", "slope_ci_high"), number=True, priority=1,
         name="slope"),
    Cell("p", lambda r: number(r["p_value"], 4), number=True, priority=1, name="p_value")), position=27)

SIDE_DOC = ("`actions`: the agents' decisions (the implicit cases; score mode: the probability DPD); `words`: the "
            "explicit probe")


def _side_columns(side: str, what: str) -> tuple[Column, ...]:
    return (
        Column((f"{side}_reference_dpd", f"{side}_model_dpd"),
               f"{what}: the two models' DPDs, as in their `cases.csv`"),
        Column(f"{side}_delta", f"{what}: ΔDPD = model − reference"),
        Column((f"{side}_ci_low", f"{side}_ci_high"), f"{what}: its 95 % interval (each model's agents resampled on "
                                                      "its own; contains ΔDPD, valid when either DPD is 0)"),
        Column(f"{side}_p_value", f"{what}: p-value of ΔDPD = 0 (the inversion of the interval: valid whatever the "
                                  "two models' rates)"),
        Column(f"{side}_p_holm", f"{what}: Holm-adjusted across every pair × case of the table (actions and words)"),
        Column(f"{side}_verdict", f"{what}: `more biased`, `less biased` (p_holm < 0.05), `no difference` (the "
                                  "interval within ± margin) or `underpowered` (it reaches past the margin)"))


register(Measure(
    "models", "model against model: the paper's summary per model, ΔDPD per pair of models and case (actions and "
              "words) with verdicts, per pair, and a trend along an order",
    tables=(
        Table("models", "A run folder with several models (or `louder compare`): one row per model, the paper's "
                        "summary. Formulas: `louder/analysis/stats/comparison.py`; how to read it: [the tutorial]"
                        "(../tutorials/compare-models.md).", (
            Column("model", "the model (in `louder compare`: its label)"),
            Column("position", "its place in the order (0 first)"),
            Column("statistic", "`dpd`, or in score mode `dpd_p` (the probability DPD) for the implicit cases"),
            Column("implicit_condition", "the persona condition of the implicit cases summarised (contextualized "
                                         "where the run has it)"),
            Column(("n_implicit", "significant_implicit"), "those implicit cases, and how many are significant (each "
                                                          "case's parity test, Holm within the model)"),
            Column(("mean_implicit", "implicit_ci_low", "implicit_ci_high"),
                   "their mean DPD and its 95 % interval (agents resampled within every case; conservative)"),
            Column(("n_explicit", "significant_explicit", "mean_explicit", "explicit_ci_low", "explicit_ci_high"),
                   "the same for the explicit cases"),
            Column(("gap", "gap_ci_low", "gap_ci_high"), "mean implicit − mean explicit DPD and its 95 % interval"),
            Column("gap_p_value", "p-value of gap = 0"),
            Column("gap_test", "the test of the gap: the inversion of its interval"))),
        Table("model_pairs", "One row per pair of models (reference before model in the order) × case: ΔDPD for "
                             "actions and for words side by side — each implicit case beside the explicit probe of "
                             "its scenario × group (an explicit case without an implicit one: a row of its own).", (
            Column(("reference", "model"), "the pair: ΔDPD = DPD(model) − DPD(reference)"),
            Column(("condition", "scenario", "group"), "the case (`condition` empty on a words-only row)"),
            Column("statistic", "the actions' DPD: `dpd`, or `dpd_p` in score mode"),
            *_side_columns("actions", "actions"), *_side_columns("words", "words"),
            Column("reading", "the two verdicts in words, e.g. \"more biased in what its agents do, less biased in "
                              "what it says\""))),
        Table("model_pair_summary", "One row per pair of models × side (" + SIDE_DOC + ").", (
            Column(("reference", "model"), "the pair"),
            Column("side", "`actions` or `words`"),
            Column("n_cases", "the cases both models have"),
            Column(("mean_delta", "ci_low", "ci_high"), "mean ΔDPD over them, with its 95 % interval"),
            Column("p_value", "p-value of mean ΔDPD = 0 (the inversion of the interval)"),
            Column(("n_more_biased", "n_less_biased", "n_no_difference", "n_underpowered"),
                   "how many of the cases read each verdict in `model_pairs.csv`"))),
        Table("model_trend", "With an order (`--set models.order=…`, `louder compare --order`): one row per side.", (
            Column("side", "`actions` or `words`"),
            Column("order", "the models, in order"),
            Column("n_models", "the models with a mean DPD on this side"),
            Column(("slope", "slope_ci_low", "slope_ci_high"), "change of the mean DPD per step of the order, with "
                                                               "its 95 % interval"),
            Column(("z", "p_value"), "z-test of slope 0"),
            Column("test", "the test: weighted least squares on position, weights 1 / the means' bootstrap "
                           "variances")))),
    inputs=INPUTS, options=(ORDER, MARGIN), build=build, console=(MODELS_CONSOLE, PAIRS_CONSOLE, SUMMARY_CONSOLE, TREND_CONSOLE),
    section=report_section, position=55, findings=findings,
    figures=(Figure("forest", lambda a: forest_figure(a.tables.get(C.PAIRS), a.options.margin), forest_alt,
                  "the models share no case with a ΔDPD"),
             Figure("means", lambda a, models, ordered: models_figure(models, ordered), MEANS_ALT))))
