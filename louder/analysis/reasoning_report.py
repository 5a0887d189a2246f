"""The report's "Reasoning levels" section (issue 30): per case, the DPD at each reasoning level with
its interval and the change from the reference level with its interval, one sentence per level
saying what its verdict means, and the table. Reads ``reasoning.csv`` (analysis/reasoning.py)."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from louder.analysis.html import note, png, section, table
from louder.analysis.reasoning import SMALLEST, sentence

VERDICT_COLORS = {"raises": "#c0392b", "lowers": "#2980b9", "no change": "#2c3e50", "underpowered": "#7f8c8d",
                  "reference": "#34495e"}


def levels_figure(case: pd.DataFrame) -> Figure | None:
    """One case: left, the DPD at each level with its 95 % interval; right, the change from the
    reference level with its interval (dashed lines at 0 and ±0.3)."""
    case = case.reset_index(drop=True)
    if case["dpd"].isna().all():
        return None
    fig = Figure(figsize=(7.0, 0.42 * len(case) + 1.3), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(case), 0, -1)
    for yi, (_, r) in zip(y, case.iterrows()):
        color = VERDICT_COLORS.get(r["verdict"], "black")
        if not np.isnan(r["dpd"]):
            left.errorbar(r["dpd"], yi, xerr=[[r["dpd"] - r["ci_low"]], [r["ci_high"] - r["dpd"]]], fmt="s",
                          color=color, ecolor=color, capsize=2, ms=5)
        if r["verdict"] != "reference" and not np.isnan(r["change"]):
            right.errorbar(r["change"], yi, xerr=[[r["change"] - r["change_ci_low"]],
                                                  [r["change_ci_high"] - r["change"]]],
                           fmt="D", color=color, ecolor=color, capsize=3, ms=6)
    left.set_yticks(y, [f"{r['level']}" + (" (reference)" if r["verdict"] == "reference" else "")
                        for _, r in case.iterrows()], fontsize=8)
    left.set_xlim(-0.02, 1.02)
    left.set_xlabel("DPD (95 % interval)", fontsize=8)
    for x, style in ((0, "--"), (-SMALLEST, ":"), (SMALLEST, ":")):
        right.axvline(x, color="grey", ls=style, lw=1)
    right.set_xlim(-1.02, 1.02)
    right.set_xlabel("change from the reference level (95 % interval)", fontsize=8)
    r0 = case.iloc[0]
    fig.suptitle(textwrap.fill(f"{r0['scenario']} × {r0['group']} — {r0['model']}, {r0['condition']}, signal "
                               f"{r0['signal']}", 90), fontsize=8)
    return fig


def reasoning_section(tables: dict[str, pd.DataFrame]) -> str:
    """The section, or "" when the run decided at one reasoning level only."""
    rs = tables.get("reasoning")
    if rs is None:
        return ""
    parts = [note(
        "Does thinking change the bias? Every agent decided once at each reasoning level of the run (its persona, "
        "written at the model's default, shared). <b>dpd</b> per level with its 95 % interval; <b>change</b> = "
        "DPD at the level − DPD at the <b>reference</b> level (the least thinking of the run), with an interval "
        "from a paired bootstrap of agents that contains the change and stays valid when either DPD is 0 "
        "(conservative). <b>verdict</b>: <i>raises</i> / <i>lowers</i> when that interval excludes 0; <i>no "
        f"change</i> when it lies within ±{SMALLEST:.1f}; <i>underpowered</i> otherwise. <b>p_interaction</b>: "
        "likelihood-ratio test that the attribute effect is the same at both levels. <b>thinking_share</b>: valid "
        "decisions that came with thinking; <b>n_thinking_truncated</b>: answers invalid because the thinking "
        "never closed before max_tokens. The other tables of this report read the reference level only.")]
    for _, case in rs.groupby(["model", "condition", "scenario", "group", "signal"], sort=True):
        r0 = case.iloc[0]
        parts.append(f"<h3>{html.escape(str(r0['scenario']))} × {html.escape(str(r0['group']))} — "
                     f"{html.escape(str(r0['condition']))}, {html.escape(str(r0['model']))}</h3>")
        parts += [note(html.escape(sentence(r))) for _, r in case.iterrows() if r["verdict"] != "reference"]
        parts.append(png(levels_figure(case)))
    parts += ["<h3>Per case and level</h3>", table(rs, scroll=True)]
    return section("Reasoning levels", *parts)
