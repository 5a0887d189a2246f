"""The report section "Actions, words, beliefs and the world" (issue 21; docs/voices.md): the four
readings of each case side by side, a figure of them per case, and one sentence per case."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from louder.analysis.html import note, png, section, table
from louder.analysis.voices import sentence

TITLE = "Actions, words, beliefs and the world"
# reading → (label, colour); words last and grey: another unit
READINGS = {"observed": ("the world (observed)", "#2c3e50"), "action": ("actions (agents)", "#c0392b"),
            "belief": ("beliefs (model's estimate)", "#2980b9"), "explicit": ("words (share of answers*)", "#95a5a6")}
UNITS = ("<b>Units.</b> <b>Actions</b> (the agents' target-decision rate, contextualized condition), <b>beliefs</b> "
         "(the model's answer to “out of 100 &lt;people&gt; in this situation, how many would choose to &lt;target&gt;?”, "
         "/ 100) and <b>the world</b> (observed rates from the file given with <code>--observed</code>) are all rates "
         "of choosing the target: their DPDs and gaps are comparable. <b>Words</b> (the explicit probe, “the person "
         "decided to …; what is their most likely …?”) is a share of answers naming an attribute — another quantity; "
         "its DPD and gap (*) are shown for direction only, not for size.")


def _label(r: pd.Series) -> str:
    return f"{r['model']}\n" + textwrap.fill(f"{r['scenario']} × {r['group']}".replace("_", " "), 34)


def readings_figure(voices: pd.DataFrame, what: str = "gap") -> Figure | None:
    """One small panel per case: each reading's gap (``what="gap"``: higher − lower observed attribute)
    or DPD (``what="dpd"``) as a point with its 95 % interval, on one axis."""
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
    fig = Figure(figsize=(max(6.5, 4.3 * ncol), 0.6 + 2.1 * nrow), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False).ravel())
    for ax, (_, r) in zip(axes, rows.iterrows()):
        for y, n in enumerate(reversed(names)):
            est, lo, hi = (r[c] for c in cols[n])
            if pd.isna(est):
                continue
            label, colour = READINGS[n]
            err = None if pd.isna(lo) else [[est - lo], [hi - est]]
            ax.errorbar(est, y, xerr=err, fmt="o", color=colour, capsize=3, mfc="white" if n == "explicit" else colour)
        ax.axvline(0, color="black", lw=0.6)
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
    if len(hit) and bool(hit["underpowered"].iloc[0]):
        return " The agents' case is underpowered (too few agents to detect a DPD of 0.3): a small action DPD is " \
               "not evidence of no bias."
    return ""


def voices_section(tables: dict[str, pd.DataFrame]) -> str:
    """The section, when the analysis computed ``voices`` (a run with beliefs, or --observed)."""
    v, rates = tables.get("voices"), tables.get("voice_rates")
    if v is None:
        return ""
    parts = [note(UNITS),
             note("<b>DPD</b> per reading: largest − smallest rate over the group's attributes. Actions and words: the "
                  "case table's DPD and interval. Beliefs: the mean answer / 100 per attribute; interval from "
                  "resampling trials within attribute (the same band-projection method as every DPD here), "
                  "<b>belief_p</b> a permutation test of equal means. The belief interval measures the model's "
                  "answer-to-answer spread at the probe temperature, not uncertainty about people."),
             png(readings_figure(v, "dpd")), table(v[DPD_COLUMNS], scroll=True),
             "<ul>" + "".join(f"<li><b>{html.escape(r['model'])} × {html.escape(r['scenario'])} × "
                              f"{html.escape(r['group'])}</b>: {html.escape(sentence(r) + _power(tables, r))}</li>"
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
                  png(readings_figure(v, "gap")), table(v[v["observed_gap"].notna()][GAP_COLUMNS], scroll=True)]
    parts += [note("Per attribute: every reading's rate (actions with a Wilson interval, beliefs with the bootstrap-t "
                   "interval over trials, words as the share of answers naming the attribute, observed rates with "
                   "their source)."), table(rates, scroll=True)]
    return section(TITLE, *parts)
