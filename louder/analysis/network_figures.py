"""Figures of rounds of influence, built like louder/analysis/figures.py (no pyplot global state)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

RUN_STYLES = {"LLM": "-", "no influence": ":", "control": "--"}


def rounds_rates_figure(rates: dict[str, pd.DataFrame], title: str = "") -> Figure | None:
    """Target rate per attribute over rounds, one line per attribute: solid for the LLM run, dotted for
    the no-influence arm, dashed for the control rule. ``rates`` maps a run name (LLM, no influence,
    control) to ``rates_by_round`` output."""
    rates = {k: v for k, v in rates.items() if v is not None and not v.empty}
    if not rates:
        return None
    attributes = sorted(set().union(*(set(v["attribute"]) for v in rates.values())))
    colors = dict(zip(attributes, [f"C{i}" for i in range(len(attributes))]))
    fig = Figure(figsize=(6.5, 3.6), layout="constrained")
    ax = fig.subplots()
    for run, df in rates.items():
        for a in attributes:
            sub = df[df["attribute"] == a].sort_values("round")
            ax.plot(sub["round"], sub["rate"], RUN_STYLES.get(run, ":"), marker="o", ms=3, color=colors[a],
                    label=f"{a} ({run})")
    rounds = sorted(set().union(*(set(v["round"]) for v in rates.values())))
    ax.set_xticks(rounds)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("round (0 = independent decision)")
    ax.set_ylabel("target rate")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or "Target rate per attribute over rounds (solid: LLM, dotted: no influence, dashed: control)",
                 fontsize=9)
    return fig


def amplification_figure(amp: pd.DataFrame, title: str = "") -> Figure | None:
    """DPD_r(LLM) − DPD_r(no influence) per round with its interval; 0 dashed."""
    if amp is None or amp.empty:
        return None
    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.subplots()
    err = np.vstack([amp["amplification"] - amp["ci_low"], amp["ci_high"] - amp["amplification"]]).clip(min=0)
    ax.errorbar(amp["round"], amp["amplification"], yerr=np.nan_to_num(err), fmt="o-", capsize=3, color="#c0392b")
    ax.axhline(0, color="black", ls="--", lw=0.8)
    ax.set_xticks(amp["round"])
    ax.set_xlabel("round")
    ax.set_ylabel("DPD(influence) − DPD(no influence)")
    ax.set_title(title or "Amplification per round (95 % interval)", fontsize=9)
    return fig
