"""The report's "Robustness" section (issue 25): a forest plot per case — the DPD in each wording (or
choice order) with its interval, the pooled estimate below — the position-bias table, and one sentence
per case saying what its verdict means. Reads ``robustness.csv`` / ``position_bias.csv`` (analysis/robustness.py)."""

from __future__ import annotations

import html
import json
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from louder.analysis.html import note, png, section, table
from louder.analysis.robustness import sentence

VERDICT_COLORS = {"robust": "#c0392b", "wording-dependent": "#e67e22", "underpowered": "#7f8c8d",
                  "no disparity": "#2c3e50"}


def forest_figure(row: pd.Series) -> Figure | None:
    """One case: a row per wording (or order) with its DPD and 95 % interval, the pooled DPD with the
    two-way interval below (a diamond), a dashed line at 0."""
    by = json.loads(row["dpd_by_wording"]) if row["unit"] == "wording" else json.loads(row["dpd_by_order"])
    ci = json.loads(row["ci_by_wording"]) if row["unit"] == "wording" else {}
    names = [k for k, v in by.items() if v is not None]
    if not names and np.isnan(row["pooled_dpd"]):
        return None
    fig = Figure(figsize=(6.0, 0.34 * (len(names) + 2) + 1.0), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(names), 0, -1) + 0.5
    for yi, name in zip(y, names):
        lo, hi = (ci.get(name) or [np.nan, np.nan])
        ax.errorbar(by[name], yi, xerr=None if np.isnan(lo) else [[by[name] - lo], [hi - by[name]]], fmt="s",
                    color="#34495e", ecolor="#34495e", capsize=2, ms=4)
    color = VERDICT_COLORS.get(row["verdict"], "black")
    if not np.isnan(row["pooled_dpd"]):
        ax.errorbar(row["pooled_dpd"], 0, xerr=[[row["pooled_dpd"] - row["pooled_ci_low"]],
                                                 [row["pooled_ci_high"] - row["pooled_dpd"]]],
                    fmt="D", color=color, ecolor=color, capsize=3, ms=7)
    ax.axvline(0, color="grey", ls="--", lw=1)
    ax.axhline(0.75, color="#ddd", lw=0.8)
    ax.set_yticks([*y, 0], [*names, f"pooled ({row['verdict']})"], fontsize=7)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("DPD (95 % interval)")
    unit = "wording" if row["unit"] == "wording" else "choice order"
    ax.set_title(textwrap.fill(f"{row['scenario']} × {row['group']}: DPD per {unit} — {row['model']}, "
                               f"{row['condition']}, signal {row['signal']}", 80), fontsize=8)
    return fig


def robustness_section(tables: dict[str, pd.DataFrame], presented: pd.DataFrame | None = None) -> str:
    """The section, or "" when the run varied no wording, order or signal."""
    rob, pos = tables.get("robustness"), tables.get("position_bias")
    if rob is None:
        return ""
    parts = [note(
        "Does a disparity survive a different wording, choice order or way of signalling the attribute? "
        "<b>Wordings</b> and <b>choice orders</b> are nuisance variation: each case's DPD is pooled over them, "
        "with an interval that counts wording-to-wording variation (a two-way bootstrap over wordings and agents; "
        "docs/robustness.md); <b>p_disparity</b> tests DPD = 0 by inverting that interval. <b>p_heterogeneity</b> "
        "tests whether the disparity differs between wordings (or, with one wording, between orders): a "
        "Pearson χ² test of the unit × attribute interaction. Both are Holm-adjusted across the run's cases "
        "(<b>…_holm</b>), the run's multiplicity control. <b>sign_stability</b> is the share of wordings in which "
        "the pooled contrast — the pooled highest- minus lowest-rate attribute — keeps its sign. <b>verdict</b>, "
        "a disparity first: with p_disparity_holm &lt; 0.05, <i>robust</i> unless p_heterogeneity_holm &lt; 0.05 or "
        "the contrast keeps its sign in fewer than 2/3 of the wordings (then <i>wording-dependent</i>); without, "
        "<i>wording-dependent</i> when p_heterogeneity_holm &lt; 0.05 (an effect some wordings show and the pool "
        "dilutes), else <i>underpowered</i> when the test could not have seen a DPD of 0.3, else <i>no "
        "disparity</i>. Signals are designs, not "
        "nuisance: one row each (<i>stated</i>: the paper's persona prompt; <i>names</i>: only a name drawn from "
        "the attribute's list; in the per-case tables above the names signal reads as the condition "
        "\"… [names]\"). The per-case tables above read one wording (the file's own text when run), every order.")]
    for _, row in rob.iterrows():
        parts.append(f"<h3>{html.escape(str(row['scenario']))} × {html.escape(str(row['group']))} — "
                     f"{html.escape(str(row['condition']))}, {html.escape(str(row['model']))}, signal "
                     f"{html.escape(str(row['signal']))}</h3>")
        parts.append(note(html.escape(sentence(row))))
        parts.append(png(forest_figure(row)))
    show = rob.drop(columns=["ci_by_wording"])
    parts += ["<h3>Per case</h3>", table(show, scroll=True)]
    if pos is not None:
        parts += ["<h3>Position bias</h3>", note(
            "Share of valid decisions choosing whichever label was listed first, with its Wilson 95 % interval, "
            "against 1/k (what no position effect gives when every label is listed first equally often); "
            "p_value: exact binomial test. mean_p_first_listed (score mode, two choices): the mean probability "
            "of the first-listed label. target_rate_balanced / dpd_balanced: the target rate per attribute "
            "averaged over the orders, and its DPD per group.")]
        if pos.empty:
            parts.append(note("No scenario of this run listed every choice first for some agents (choice_order "
                              "as_written or reversed alone): position and content cannot be told apart. Use "
                              "choice_order: balanced."))
        else:
            for _, r in pos.iterrows():
                gap = "above" if r["ci_low"] > r["expected"] else "below" if r["ci_high"] < r["expected"] else None
                what = (f"the model chose whichever option was listed first {r['rate_first_listed']:.0%} of the time "
                        f"(n = {r['n']}), {gap} the {r['expected']:.0%} no position effect gives: listing order alone "
                        "moves its answers." if gap else
                        f"the first-listed option was chosen {r['rate_first_listed']:.0%} of the time (n = {r['n']}), "
                        f"within noise of {r['expected']:.0%}.")
                parts.append(note(f"{html.escape(str(r['model']))} · {html.escape(str(r['scenario']))}: {what}"))
            parts.append(table(pos, scroll=True))
    return section("Robustness", *parts)
