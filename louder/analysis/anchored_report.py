"""The report section "Anchored to a human study" (issue 34; docs/how-to/anchor-to-humans.md): the
humans', the agents' and the PPI rates per attribute with their intervals, one panel per case, and
the table ``anchored.csv``."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from louder.analysis.html import note, png, section, table

TITLE = "Anchored to a human study (prediction-powered inference)"
# estimate → (label, colour)
SERIES = {"humans": ("humans only", "#2c3e50"), "agents": ("agents only", "#c0392b"),
          "ppi": ("humans + agents (PPI)", "#27ae60")}


def anchored_figure(anchored: pd.DataFrame) -> Figure | None:
    """One panel per case: per attribute, the humans-only, agents-only and PPI target rates as points
    with their 95 % intervals."""
    rows = anchored[anchored["rate_humans"].notna()]
    if rows.empty:
        return None
    cases = list(rows.groupby(["model", "condition", "scenario", "group"], sort=True))
    ncol = min(len(cases), 3)
    nrow = int(np.ceil(len(cases) / ncol))
    fig = Figure(figsize=(max(6.5, 4.3 * ncol), 0.8 + 2.6 * nrow), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False).ravel())
    for ax, (key, g) in zip(axes, cases):
        attrs = list(g["attribute"])
        for i, s in enumerate(SERIES):
            label, colour = SERIES[s]
            y = np.arange(len(attrs)) + (i - 1) * 0.22
            est, lo, hi = (g[f"{c}_{s}"].to_numpy(float) for c in ("rate", "ci_low", "ci_high"))
            err = np.clip([est - lo, hi - est], 0, None)  # (none drawn where there is no interval)
            ax.errorbar(est, y, xerr=np.nan_to_num(err), fmt="o", color=colour, capsize=3, ms=4, label=label)
        ax.set_yticks(range(len(attrs)), attrs, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("target-decision rate", fontsize=7)
        model, condition, scenario, group = key
        ax.set_title(textwrap.fill(f"{model} · {condition} · {scenario} × {group}".replace("_", " "), 46), fontsize=8)
    for ax in axes[len(cases):]:
        ax.set_axis_off()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=7)
    return fig


def anchored_section(tables: dict[str, pd.DataFrame]) -> str:
    """The section, when the run has a human study (``anchored.csv``)."""
    t = tables.get("anchored")
    if t is None:
        return ""
    if t.empty:
        return section(TITLE, note("The run has a human study, but none of its respondents is paired with an agent "
                                   "of a case (its scenarios and groups are not the run's cases as run)."))
    summary = []
    for _, r in t.drop_duplicates(["model", "condition", "scenario", "group"]).iterrows():
        if pd.isna(r["dpd_ppi"]):
            continue
        ratio = "–" if pd.isna(r["ratio"]) else (f"{r['ratio']:.2f} [{r['ratio_ci_low']:.2f}, "
                                                 f"{r['ratio_ci_high']:.2f}]")
        summary.append(f"<li>{html.escape(f'{r.model} · {r.condition} · {r.scenario} × {r.group}')}: DPD humans "
                       f"{r['dpd_humans']:.2f}, agents {r['dpd_agents']:.2f}, anchored (PPI) {r['dpd_ppi']:.2f} "
                       f"[{r['dpd_ci_low_ppi']:.2f}, {r['dpd_ci_high_ppi']:.2f}]; magnitude ratio agents ÷ humans "
                       f"{html.escape(ratio)}</li>")
    shown = t.drop(columns=["dpd_humans", "dpd_agents", "dpd_ppi", "dpd_ci_low_ppi", "dpd_ci_high_ppi", "ratio",
                            "ratio_ci_low", "ratio_ci_high"])
    return section(
        TITLE,
        note("Each respondent of the human study got a paired agent of their attribute, asked like every other agent. "
             "<b>Humans only</b>: the respondents' (weighted) target rate with its Wilson interval. "
             "<b>Agents only</b>: "
             "the usual agents' rate — what the model says, not evidence about people. <b>PPI</b> "
             "(prediction-powered inference, Angelopoulos et al. 2023, with <code>ppi-python</code>): the agents' "
             "rate corrected by how far the paired agents missed their respondents; its interval is valid however "
             "wrong the agents are, and narrower than the humans' only as far as the agents predict the people "
             "(λ: the weight the agents get, 0 = none; <b>ess_gained</b>: the respondents the human-only interval "
             "would need in addition to be as narrow). <b>agreement</b>: the share of respondents whose agent "
             "decided as they did. paired_&lt;status&gt; accounts for every paired agent's answer; one without a "
             "valid answer counts at the agents' mean. DPD of the PPI rates: a joint bootstrap over respondents and "
             "agents; the magnitude ratio divides the agents' DPD by the humans' (docs/how-to/anchor-to-humans.md)."),
        f"<ul>{''.join(summary)}</ul>" if summary else "",
        png(anchored_figure(t)),
        table(shown, scroll=True))
