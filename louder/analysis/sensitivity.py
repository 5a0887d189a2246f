"""Would the policy conclusion survive the model's bias? (issue 33.3; ``louder analyze RUN --adjust
parity | observed``; docs/tutorials/population-what-if.md)

``sensitivity.csv``: each policy variant's effect — its target rate minus the base variant's, overall
and per attribute of every group — under the raw agents (``agents = raw``), agents calibrated to
parity (``parity``) and, with ``--observed FILE``, to observed rates (``observed``), each with a
bootstrap interval, and a ``verdict``: ``holds`` when the conclusion (raises / lowers / no clear effect)
is the same under every set of agents, else ``depends on the model's bias``. The statistics are
``louder.analysis.adjustment.sensitivity_table``'s (docs/statistics.md): computed from the stored
probabilities (sample mode: decisions) with no new model call — the offsets are fitted on the base
variant and applied to every variant, refitted in every bootstrap resample.

A network run's agents hear each other, so calibrating one changes what its neighbours decide: its
sensitivity needs a run of its own (``louder adjust`` then ``louder run --adjustment``), not a
re-weighting of the stored answers."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd

from louder.analysis.adjustment import SENSITIVITY_COLUMNS, sensitivity_table
from louder.analysis.html import note, png, section, table
from louder.errors import LouderError

ADJUST = ("parity", "observed")
MAX_B = 2000  # each resample refits the offsets (raking): the bootstrap is capped here
COLORS = {"raw": "#7f8c8d", "parity": "#2980b9", "observed": "#27ae60"}


def sensitivity(decisions: pd.DataFrame, adjust: str, observed: pd.DataFrame | None = None, B: int = MAX_B,
                seed: int = 0) -> pd.DataFrame:
    """``sensitivity.csv`` of a single-round run's decisions (every variant, under ``none``, one wording and
    reasoning level; ``scenario`` without a " [variant]" suffix)."""
    if adjust not in ADJUST:
        raise LouderError(f"--adjust {adjust}: use parity (agents calibrated to the pooled rate) or observed (to the "
                          "rates of --observed FILE)")
    if adjust == "observed" and observed is None:
        raise LouderError("--adjust observed needs --observed FILE: observed rates per scenario, group and attribute "
                          "(docs/voices.md)")
    return sensitivity_table(decisions, observed=observed if adjust == "observed" else None, B=min(B, MAX_B),
                             seed=seed)


# --- the report and the console --------------------------------------------------------------------

def figure(case: pd.DataFrame):
    """One case and variant: each effect (overall, then per attribute) under each set of agents, with its
    interval; dashed line at 0."""
    from matplotlib.figure import Figure

    effects = list(dict.fromkeys(zip(case["group"], case["attribute"])))
    sets = list(dict.fromkeys(case["agents"]))
    fig = Figure(figsize=(7.0, 0.38 * len(effects) * len(sets) + 1.4), layout="constrained")
    ax = fig.subplots()
    y0 = np.arange(len(effects), 0, -1) * (len(sets) + 1)
    for j, s in enumerate(sets):
        rows = case[case["agents"] == s].set_index(["group", "attribute"]).reindex(effects)
        y = y0 - j
        ok = rows["effect"].notna().to_numpy()
        ax.errorbar(rows["effect"][ok], y[ok], xerr=[(rows["effect"] - rows["ci_low"])[ok],
                                                     (rows["ci_high"] - rows["effect"])[ok]],
                    fmt="o", color=COLORS.get(s, "black"), capsize=2, ms=4, label=s)
    ax.axvline(0, color="grey", ls="--", lw=1)
    ax.set_yticks(y0 - (len(sets) - 1) / 2, ["overall" if g == "(all)" else f"{g}: {a}" for g, a in effects],
                  fontsize=8)
    ax.set_xlabel("effect of the variant on the target rate (95 % interval)", fontsize=8)
    ax.legend(fontsize=7, loc="best", title="agents", title_fontsize=7)
    r0 = case.iloc[0]
    fig.suptitle(textwrap.fill(f"{r0['scenario']}: {r0['variant']} vs {r0['base']} — {r0['model']}, "
                               f"{r0['condition']}", 90), fontsize=8)
    return fig


def sentence(overall: pd.DataFrame) -> str:
    """The overall effect of one variant, under each set of agents, in words."""
    r0 = overall.iloc[0]
    parts = [f"{r['agents']} agents {r['effect']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
             for _, r in overall.iterrows()]
    verdict = ("the conclusion holds" if r0["verdict"] == "holds" else
               "the conclusion depends on the model's bias")
    return f"{r0['variant']} vs {r0['base']}, overall: {'; '.join(parts)} — {verdict}."


def report_section(tables: dict[str, pd.DataFrame]) -> str:
    """The report's section, or "" without sensitivity.csv."""
    t = tables.get("sensitivity")
    if t is None:
        return ""
    parts = [note(
        "Would the policy conclusion survive the model's bias? Each variant's <b>effect</b> (its target rate − the "
        "base variant's, overall and per attribute) under the <b>raw</b> agents, agents calibrated to "
        "<b>parity</b> (each attribute's logit shifted so that, under the base variant, every attribute has the "
        "pooled rate) and, with observed rates, agents calibrated to them (<b>observed</b>). The offsets are fitted "
        "on the base variant and applied to every variant — one calibrated agent deciding each policy — and refitted "
        "in every bootstrap resample, so their uncertainty is in the 95 % interval. A conclusion is <i>raises</i>, "
        "<i>lowers</i> or <i>no clear effect</i> (the interval covers 0); <b>verdict</b>: <i>holds</i> when it is the "
        "same under every set of agents, else <i>depends on the model's bias</i>. Computed from the stored answers "
        "(no new model call).")]
    if t.empty:
        return section("Policy sensitivity", *parts, note("(no variant to compare with the base)"))
    for _, case in t.groupby(["model", "condition", "scenario", "variant"], sort=True):
        r0 = case.iloc[0]
        parts.append(f"<h3>{html.escape(str(r0['scenario']))}: {html.escape(str(r0['variant']))} — "
                     f"{html.escape(str(r0['condition']))}, {html.escape(str(r0['model']))}</h3>")
        parts.append(note(html.escape(sentence(case[case["group"] == "(all)"]))))
        parts.append(png(figure(case)))
    parts += ["<h3>Per variant, effect and agents</h3>", table(t, scroll=True)]
    return section("Policy sensitivity", *parts)


def console_table(t: pd.DataFrame):
    """``louder analyze --adjust``'s table: the overall effects and every effect whose verdict is not
    ``holds``."""
    from rich.table import Table

    shown = t[(t["group"] == "(all)") | (t["verdict"] != "holds")]
    out = Table(title="Policy sensitivity: each variant's effect on the target rate under raw and calibrated agents "
                      "[95 % CI] (overall, and every effect whose conclusion depends on the agents; all rows in "
                      "sensitivity.csv)")
    for col in ("model", "condition", "scenario", "variant", "group", "attribute", "agents", "effect [95 % CI]",
                "verdict"):
        out.add_column(col)
    for _, r in shown.iterrows():
        out.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["variant"]), str(r["group"]),
                    str(r["attribute"]), str(r["agents"]),
                    f"{r['effect']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]", str(r["verdict"]))
    return out


__all__ = ["ADJUST", "SENSITIVITY_COLUMNS", "console_table", "figure", "report_section", "sensitivity"]
