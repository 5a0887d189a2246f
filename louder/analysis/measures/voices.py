"""Actions, words, beliefs and the world (issue 21; docs/voices.md): the four readings of each case
side by side — ``voices.csv`` and ``voice_rates.csv`` — when the run has beliefs or observed rates
are given (``--observed``, else the predictions file's ``observed:``). The statistics are
``louder.analysis.stats.voices``'."""

from __future__ import annotations

import html
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import note, section, table
from louder.analysis.stats import voices as V
from louder.analysis.stats.directions import predictions_observed
from louder.analysis.stats.keys import truthy

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

OPTIONS = (Option("observed", Path, None, "observed rates per scenario, group and attribute (docs/voices.md): the "
                  "world's gap beside the agents' (default: the one the predictions file names)", flag="--observed"),
           Option("predictions", Path, None, "a predictions file whose `observed:` names the observed rates when "
                  "`observed` is not given (default: louder's own)", flag="--predictions"))


def build(a) -> dict[str, pd.DataFrame]:
    """voices / voice_rates, with the notes of what is missing for them."""
    t = a.tables
    path = a.options.observed or predictions_observed(a.options.predictions)
    entries = None
    if path is not None:
        scenarios = set(t["attributes"]["scenario"]) | (set(a.beliefs["scenario"]) if a.beliefs is not None else set())
        entries, notes = V.check_observed(V.load_observed(path), a.groups, scenarios, f"observed file {path}")
        a.missing.extend(notes)
    if a.beliefs is None and entries is None:
        return {}
    if a.beliefs is None:
        a.missing.append("beliefs: no beliefs.parquet — run `louder probe beliefs --out RUN_DIR` to add what the model "
                         "believes people do beside what its agents do")
    voices, rates = V.voices(t["attributes"], t["cases"], a.beliefs, entries, a.groups, B=a.bootstrap, seed=a.seed)
    return {"voices": voices, "voice_rates": rates}


# --- the report section --------------------------------------------------------------------------------

TITLE = "Actions, words, beliefs and the world"
# reading → (label, colour); words last and grey: another unit
READINGS = {"observed": ("the world (observed)", P.OBSERVED), "action": ("actions (agents)", P.VERMILLION),
            "belief": ("beliefs (model's estimate)", P.BELIEF), "explicit": ("words (share of answers*)", P.EXPLICIT)}
UNITS = ("<b>Units.</b> <b>Actions</b> (the agents' target-decision rate, contextualized condition), <b>beliefs</b> "
         "(the model's answer to “out of 100 &lt;people&gt; in this situation, how many would choose to &lt;target&gt;?”, "
         "/ 100) and <b>the world</b> (observed rates from the file given with <code>--observed</code>) are all rates "
         "of choosing the target: their DPDs and gaps are comparable. <b>Words</b> (the explicit probe, “the person "
         "decided to …; what is their most likely …?”) is a share of answers naming an attribute — another quantity; "
         "its DPD and gap (*) are shown for direction only, not for size.")


def _label(r: pd.Series) -> str:
    return f"{r['model']}\n" + textwrap.fill(f"{r['scenario']} × {r['group']}".replace("_", " "), 34)


def readings_figure(voices: pd.DataFrame, what: str = "gap") -> MplFigure | None:
    """One small panel per case: each reading's gap (``what="gap"``: higher − lower observed attribute)
    or DPD (``what="dpd"``) as a point with its 95 % interval, on one axis."""
    from matplotlib.figure import Figure as MplFigure

    names = [n for n in READINGS if what == "gap" or n != "observed"]
    cols = {n: (f"{n}_gap", f"{n}_gap_ci_low", f"{n}_gap_ci_high") if n != "observed" else
            ("observed_gap", "observed_ci_low", "observed_ci_high") for n in names}
    if what == "dpd":
        cols = {n: (f"{n}_dpd", f"{n}_ci_low", f"{n}_ci_high") for n in names}
    rows = voices[voices[[cols[n][0] for n in names]].notna().any(axis=1)]
    if what == "gap":
        rows = rows[rows["observed_gap"].notna()]
    if rows.empty:
        return None
    k = len(rows)
    ncol = min(k, 3)
    nrow = int(np.ceil(k / ncol))
    fig = MplFigure(figsize=(max(6.5, 4.3 * ncol), 0.6 + 2.1 * nrow), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False).ravel())
    for ax, (_, r) in zip(axes, rows.iterrows()):
        for y, n in enumerate(reversed(names)):
            est, lo, hi = (r[c] for c in cols[n])
            if pd.isna(est):
                continue
            label, colour = READINGS[n]
            err = None if pd.isna(lo) else [[est - lo], [hi - est]]
            ax.errorbar(est, y, xerr=err, fmt="o", color=colour, capsize=3, mfc=P.WHITE if n == "explicit" else colour)
        ax.axvline(0, color=P.BLACK, lw=0.6)
        ax.set_yticks(range(len(names)), [READINGS[n][0] for n in reversed(names)], fontsize=7)
        ax.set_ylim(-0.6, len(names) - 0.4)
        if what == "gap":
            ax.set_xlabel(f"rate({r['observed_higher']}) − rate({r['observed_lower']})", fontsize=7)
        else:
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel("DPD (largest − smallest)", fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(_label(r), fontsize=7)
    for ax in axes[k:]:
        ax.set_axis_off()
    fig.suptitle(("Gaps between the observed higher and lower attribute" if what == "gap" else "DPD of each reading")
                 + " (95 % intervals; * other units)", fontsize=9)
    return fig


DPD_COLUMNS = ["model", "scenario", "group", "action_dpd", "action_ci_low", "action_ci_high", "belief_dpd",
               "belief_ci_low", "belief_ci_high", "belief_p", "explicit_dpd", "explicit_ci_low", "explicit_ci_high"]
GAP_COLUMNS = ["model", "scenario", "group", "observed_higher", "observed_lower", "observed_gap", "observed_ci_low",
               "observed_ci_high", "action_gap", "action_gap_ci_low", "action_gap_ci_high", "belief_gap",
               "belief_gap_ci_low", "belief_gap_ci_high", "explicit_gap", "amplification", "amp_ci_low", "amp_ci_high",
               "note"]


def _power(tables: dict[str, pd.DataFrame], r: pd.Series) -> str:
    """A warning when the agents' case is underpowered (the case table's ``underpowered``)."""
    c = tables.get("cases")
    if c is None or c.empty:
        return ""
    hit = c[(c["kind"] == "implicit") & (c["condition"] == "contextualized") & (c["model"] == r["model"])
            & (c["scenario"] == r["scenario"]) & (c["group"] == r["group"])]
    if len(hit) and truthy(hit["underpowered"].iloc[0]):
        return " The agents' case is underpowered (too few agents to detect a DPD of 0.3): a small action DPD is " \
               "not evidence of no bias."
    return ""


def report_section(a) -> str:
    """The section, when the analysis computed ``voices`` (a run with beliefs, or --observed)."""
    tables = a.tables
    v, rates = tables.get("voices"), tables.get("voice_rates")
    if v is None:
        return ""
    parts = [note(UNITS),
             note("<b>DPD</b> per reading: largest − smallest rate over the group's attributes. Actions and words: the "
                  "case table's DPD and interval. Beliefs: the mean answer / 100 per attribute; interval from "
                  "resampling trials within attribute (the same band-projection method as every DPD here), "
                  "<b>belief_p</b> a permutation test of equal means. The belief interval measures the model's "
                  "answer-to-answer spread at the probe temperature, not uncertainty about people."),
             a.figure("dpd", v), table(v[DPD_COLUMNS], scroll=True),
             "<ul>" + "".join(f"<li><b>{html.escape(r['model'])} × {html.escape(r['scenario'])} × "
                              f"{html.escape(r['group'])}</b>: {html.escape(V.sentence(r) + _power(tables, r))}</li>"
                              for _, r in v.iterrows()) + "</ul>"]
    if v["observed_gap"].notna().any():
        parts += [note("<b>Gaps</b> between the observed attributes with the highest and lowest observed rate "
                       "(higher − lower, one sign for every reading). observed_gap and action_gap: Newcombe's hybrid "
                       "score interval for two independent proportions; belief and explicit gaps: bootstrap-t over "
                       "trials / answers. <b>amplification</b> = action_gap / observed_gap: Fieller's interval with "
                       "a bootstrap-t critical value, resampling the agents within attribute and the observed people "
                       "(binomial from rate and n) jointly; left empty, with the reason in <i>note</i>, when the "
                       "observed gap's interval contains 0. 1 = the agents reproduce the observed gap; above 1 they "
                       "amplify it; between 0 and 1 they shrink it; below 0 they reverse it."),
                  a.figure("gap", v), table(v[v["observed_gap"].notna()][GAP_COLUMNS], scroll=True)]
    if "observed_year" in rates:  # a year read back from its CSV is a number: show it as written
        rates = rates.assign(observed_year=[v if isinstance(v, str) or pd.isna(v) else f"{v:g}"
                                            for v in rates["observed_year"]])
    parts += [note("Per attribute: every reading's rate (actions with a Wilson interval, beliefs with the bootstrap-t "
                   "interval over trials, words as the share of answers naming the attribute, observed rates with "
                   "their source)."), table(rates, scroll=True)]
    return section(TITLE, *parts)


# --- the console -----------------------------------------------------------------------------------------

def _observed(r) -> str:
    if pd.isna(r["observed_gap"]):
        return "–"
    gap = with_interval("observed_gap", "observed_ci_low", "observed_ci_high", 2)
    return f"{r['observed_higher']}−{r['observed_lower']} " + gap(r)


def _amplification(r) -> str:
    if pd.isna(r["amplification"]):
        return "–"
    if pd.isna(r["amp_ci_low"]):
        return f"{number(r['amplification'], 2)} (no interval: see note)"
    return with_interval("amplification", "amp_ci_low", "amp_ci_high", 2)(r)


CONSOLE = Console(
    "voices", "Actions, words, beliefs and the world: DPDs [95 % CI] (explicit* = share of answers, other units); gaps "
              "higher − lower observed attribute; amplification = action gap / observed gap", (
        key("model"), key("scenario"), key("group"),
        Cell("action", with_interval("action_dpd", "action_ci_low", "action_ci_high", 2), number=True, priority=1,
             name="action_dpd"),
        Cell("belief", with_interval("belief_dpd", "belief_ci_low", "belief_ci_high", 2), number=True, priority=1,
             name="belief_dpd"),
        Cell("explicit*", with_interval("explicit_dpd", "explicit_ci_low", "explicit_ci_high", 2), number=True,
             name="explicit_dpd"),
        Cell("observed gap", _observed, name="observed_gap"),
        Cell("action gap", with_interval("action_gap", "action_gap_ci_low", "action_gap_ci_high", 2), number=True,
             name="action_gap"),
        Cell("amplification", _amplification, number=True, name="amplification")),
    position=40)


register(Measure(
    "voices", "actions, words, beliefs and the world: each reading's DPD, and the agents' gap beside an observed one",
    tables=(
        Table("voices", "Actions, words, beliefs and the world side by side ([docs/voices.md](../voices.md)): one row "
                        "per model × scenario × group of a run with decisions and at least one other reading. "
                        "Actions, beliefs and observed rates are rates of choosing the target; the explicit reading "
                        "is a share of answers naming an attribute (direction only).", (
            Column(("model", "scenario", "group"), "the case (the agents' reading: the contextualized condition)"),
            Column(("action_dpd", "action_ci_low", "action_ci_high"), "the agents' DPD with its interval"),
            Column(("belief_dpd", "belief_ci_low", "belief_ci_high", "belief_p"),
                   "the DPD of the model's stated rates (mean answer / 100 per attribute), its interval and "
                   "permutation p-value"),
            Column(("explicit_dpd", "explicit_ci_low", "explicit_ci_high"), "the explicit probe's DPD (a share of "
                                                                            "answers)"),
            Column(("observed_higher", "observed_lower"), "with `--observed`: the observed attributes with the highest "
                                                          "and lowest observed rate"),
            Column(("observed_gap", "observed_ci_low", "observed_ci_high"), "their difference with Newcombe's hybrid "
                                                                            "score interval"),
            Column(("action_gap", "action_gap_ci_low", "action_gap_ci_high"), "the agents' rate difference between the "
                                                                              "same two attributes"),
            Column(("belief_gap", "belief_gap_ci_low", "belief_gap_ci_high"), "the stated rates' difference"),
            Column(("explicit_gap", "explicit_gap_ci_low", "explicit_gap_ci_high"), "the explicit shares' difference"),
            Column(("amplification", "amp_ci_low", "amp_ci_high"), "action gap ÷ observed gap, with Fieller's interval "
                                                                   "(bootstrap-t critical value)"),
            Column("note", "why a value is empty (e.g. the observed gap's interval contains 0)"))),
        Table("voice_rates", "One row per case × attribute: each reading's rate.", (
            Column(("model", "scenario", "group", "attribute"), "the case and attribute"),
            Column(("action_rate", "action_n", "action_ci_low", "action_ci_high"), "the agents' target rate over valid "
                                                                                   "decisions"),
            Column(("belief_rate", "belief_n", "belief_ci_low", "belief_ci_high"), "the mean stated rate over valid "
                                                                                   "answers"),
            Column(("explicit_share", "explicit_n"), "the share of explicit answers naming the attribute"),
            Column(("observed_rate", "observed_n", "observed_ci_low", "observed_ci_high"),
                   "with `--observed`: the observed rate, its n and Wilson interval"),
            Column(("observed_source", "observed_year", "observed_measure"), "where it comes from and what was "
                                                                             "measured")))),
    build=build, inputs=(Input("beliefs", raw=True, doc="the beliefs probe's answers"),), options=OPTIONS,
    after=("cases",), console=(CONSOLE,), section=report_section, position=60,
    figures=(Figure("dpd", lambda a, v: readings_figure(v, "dpd"), "Per case: the DPD of each reading — actions (the "
                  "agents), words (the explicit answers), beliefs and the observed world — with its 95 % interval."),
             Figure("gap", lambda a, v: readings_figure(v, "gap"), "Per case: each reading's gap from the observed "
                  "rates, with its 95 % interval."))))
