"""Does thinking change the bias? (issue 30; docs/how-to/reasoning-models.md): the DPD at each
reasoning level of a run and its change from the reference level (``reasoning.csv``), when a run
decided at more than one level. The report's section: per case, the DPD at each level with its
interval and the change with its interval, one sentence per level saying what its verdict means,
and the table. The statistics are ``louder.analysis.stats.reasoning``'."""

from __future__ import annotations

import html
import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number
from louder.analysis.report.html import case_heading, note, section, table
from louder.analysis.stats import reasoning as RS
from louder.analysis.stats.keys import CASE_KEYS, by_population_group
from louder.analysis.stats.reasoning import SMALLEST, sentence

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure


# every reasoning level (each agent answers once per level, its persona shared), one wording, every signal
INPUTS = (Input("decisions", whole=("reasoning", "signal"), doc="the agents' decisions at every reasoning level"),)


def build(a) -> dict[str, pd.DataFrame]:
    if not RS.varies(a.decisions):
        return {}
    # population runs: per group of the population (``keys.by_population_group``)
    return {"reasoning": RS.reasoning_table(by_population_group(a.decisions), a.groups, B=a.bootstrap, seed=a.seed)}

VERDICT_COLORS = {"raises": P.VERMILLION, "lowers": P.BLUE, "no change": P.BLACK, "underpowered": P.GREY,
                  "reference": P.BLACK}


def levels_figure(case: pd.DataFrame) -> MplFigure | None:
    """One case: left, the DPD at each level with its 95 % interval; right, the change from the
    reference level with its interval (dashed lines at 0 and ±0.3)."""
    from matplotlib.figure import Figure as MplFigure

    case = case.reset_index(drop=True)
    if case["dpd"].isna().all():
        return None
    fig = MplFigure(figsize=(7.0, 0.42 * len(case) + 1.3), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(case), 0, -1)
    for yi, (_, r) in zip(y, case.iterrows()):
        color = VERDICT_COLORS.get(r["verdict"], P.BLACK)
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
        right.axvline(x, color=P.GREY, ls=style, lw=1)
    right.set_xlim(-1.02, 1.02)
    right.set_xlabel("change from the reference level (95 % interval)", fontsize=8)
    r0 = case.iloc[0]
    fig.suptitle(textwrap.fill(f"{r0['scenario']} × {r0['group']} — {r0['model']}, {r0['condition']}, signal "
                               f"{r0['signal']}", 90), fontsize=8)
    return fig


def report_section(a) -> str:
    """The section, or "" when the run decided at one reasoning level only."""
    rs = a.tables.get("reasoning")
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
    for _, case in rs.groupby([*CASE_KEYS, "signal"], sort=True):
        parts.append(case_heading(case.iloc[0]))
        parts += [note(html.escape(sentence(r))) for _, r in case.iterrows() if r["verdict"] != "reference"]
        parts.append(a.figure("levels", case))
    parts += ["<h3>Per case and level</h3>", table(rs, scroll=True)]
    return section("Reasoning levels", *parts)


# --- the console ---------------------------------------------------------------------------------------


def _change(r) -> str:
    if r["verdict"] == "reference":
        return "–"
    return f"{r['change']:+.2f} [{r['change_ci_low']:+.2f}, {r['change_ci_high']:+.2f}]"


CONSOLE = Console(
    "reasoning", "Reasoning levels: does thinking change the bias? DPD [95 % CI] per level, change from the reference "
                 "level [95 % CI] — docs/how-to/reasoning-models.md", (
        *map(key, CASE_KEYS),
        Cell("level", "level", priority=1),
        Cell("DPD [95 % CI]", lambda r: f"{number(r['dpd'], 2)} [{number(r['ci_low'], 2)}, {number(r['ci_high'], 2)}]", number=True,
             priority=1, name="dpd"),
        Cell("change [95 % CI]", _change, number=True, priority=1, name="change"),
        Cell("verdict", "verdict", priority=1),
        Cell("thinking", lambda r: "–" if pd.isna(r["thinking_share"]) else f"{r['thinking_share']:.0%}",
             number=True, name="thinking_share"),
        Cell("reasoning tokens", lambda r: "–" if pd.isna(r["reasoning_tokens_mean"]) else
             f"{r['reasoning_tokens_mean']:.0f}", number=True, name="reasoning_tokens_mean")),
    position=50)


register(Measure(
    "reasoning", "the DPD at each reasoning level and its change from the least thinking",
    tables=(Table("reasoning", "Runs at more than one reasoning level (`simulation.reasoning`; [Audit a reasoning "
                               "model](../how-to/reasoning-models.md)): one row per model × condition × scenario × "
                               "group × signal × level (population runs: per group of the population). Does "
                               "thinking change the bias?", (
        Column(("model", "condition", "scenario", "group", "signal"), "the case and its identity signal"),
        Column(("level", "reference"), "the reasoning level, and the reference level the change is measured from (the "
                                       "least thinking of the run: default, off, on, low, medium, high in that order)"),
        Column(("n_agents", "n_valid"), "agents with a valid decision at this level, and valid decisions"),
        Column("rates", "JSON: the target rate per attribute at this level"),
        Column(("dpd", "ci_low", "ci_high"), "the DPD at this level and its 95 % interval (a paired bootstrap of "
                                             "agents)"),
        Column(("change", "change_ci_low", "change_ci_high"), "DPD here − DPD at the reference level, with an interval "
                                                              "that contains it and holds when either DPD is 0 "
                                                              "(conservative)"),
        Column("p_interaction", "likelihood-ratio test that the attribute effect is the same at this level and the "
                                "reference"),
        Column("verdict", "`reference`, `raises`, `lowers` (the change's interval excludes 0), `no change` (it lies "
                          "within ±0.3) or `underpowered`"),
        Column("thinking_share", "share of valid decisions that came with thinking"),
        Column("reasoning_tokens_mean", "mean thinking tokens per decision, where reported"),
        Column("n_thinking_truncated", "answers invalid because the thinking never closed before max_tokens"))),),
    build=build, inputs=INPUTS, needs=("decisions",), console=(CONSOLE,), section=report_section, position=140,
    figures=(Figure("levels", lambda a, case: levels_figure(case), lambda a, case: (
        f"{case.iloc[0]['scenario']} × {case.iloc[0]['group']}: the DPD at each reasoning level with its 95 % "
        "interval, and each level's change against the reference level.")),)))
