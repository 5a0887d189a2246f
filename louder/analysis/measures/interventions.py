"""Does a prompt intervention change the disparity? (issue 33; docs/how-to/test-a-mitigation.md):
``interventions.csv`` — per case and intervention, the DPD change from ``none`` with its paired
interval and test, the side effects (overall rate shift, agents whose decision changed, the explicit
DPD where the probe ran under the interventions) and a verdict. The report's section: the
interventions' texts and sources, one sentence per row and a figure per case. The statistics are
``louder.analysis.stats.interventions``'."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number
from louder.analysis.report.html import case_heading, note, section, table
from louder.analysis.stats import interventions as IV
from louder.analysis.stats.keys import CASE_KEYS, by_population_group

KEYS = CASE_KEYS
VERDICT_COLORS = {"reduces": P.BLUE, "increases": P.VERMILLION, "no change": P.BLACK, "underpowered": P.GREY}


# every intervention (the same agents decide under each), one wording and reasoning level
INPUTS = (Input("decisions", whole=("intervention",), doc="the agents' decisions under every intervention"),
          Input("probes", whole=("intervention",), doc="the explicit probe's answers under every intervention"))


def build(a) -> dict[str, pd.DataFrame]:
    if not IV.varies(a.decisions):
        return {}
    if IV.NONE not in IV.levels_of(a.decisions):
        a.missing.append("interventions: the run has no `none` arm to compare the interventions with; add none to "
                         "simulation.interventions")
    probes = a.probes if IV.varies(a.probes) else None  # the explicit side effect, where the probe varied them too
    # population runs: per group of the population (``keys.by_population_group``)
    return {"interventions": IV.interventions_table(by_population_group(a.decisions), B=a.bootstrap, seed=a.seed,
                                                     probes=probes, attributes=a.groups)}



def sentence(r) -> str:
    """What one row says, in words."""
    if pd.isna(r["dpd_change"]):
        return f"{r['intervention']}: too few paired agents to compare with none ({r['verdict']})."
    says = {"reduces": "reduces the disparity", "increases": "increases the disparity",
            "no change": "leaves the disparity where it was (no change detected)",
            "underpowered": "may have changed the disparity, but the run is too small to tell"}[r["verdict"]]
    return (f"{r['intervention']} {says}: DPD {r['dpd_none']:.2f} under none, {r['dpd']:.2f} under it, a change of "
            f"{r['dpd_change']:+.2f} [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}] (p = {r['p_value']:.3g}); the overall "
            f"target rate moved by {r['rate_shift']:+.2f} [{r['rate_shift_ci_low']:+.2f}, "
            f"{r['rate_shift_ci_high']:+.2f}] and {r['changed']:.0%} of the agents changed their decision.")


def figure(case: pd.DataFrame):
    """One case: left, the DPD under none and under each intervention; right, the change from none with
    its 95 % interval and the overall rate shift with its interval (dashed line at 0; dotted: −DPD under
    none, where the whole disparity would be gone)."""
    from matplotlib.figure import Figure as MplFigure

    case = case.dropna(subset=["dpd_change"]).reset_index(drop=True)
    if case.empty:
        return None
    fig = MplFigure(figsize=(7.5, 0.45 * len(case) + 1.6), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(case), 0, -1)
    for yi, (_, r) in zip(y, case.iterrows()):
        color = VERDICT_COLORS.get(r["verdict"], P.BLACK)
        left.plot([r["dpd_none"], r["dpd"]], [yi, yi], color=P.LIGHT, lw=2, zorder=1)
        left.scatter([r["dpd_none"]], [yi], marker="o", facecolors="none", edgecolors=P.GREY, zorder=2)
        left.scatter([r["dpd"]], [yi], marker="s", color=color, zorder=3)
        right.errorbar(r["dpd_change"], yi + 0.12,
                       xerr=[[r["dpd_change"] - r["ci_low"]], [r["ci_high"] - r["dpd_change"]]], fmt="D", color=color, ecolor=color, capsize=3, ms=6)
        right.errorbar(r["rate_shift"], yi - 0.18, xerr=[[r["rate_shift"] - r["rate_shift_ci_low"]],
                                                          [r["rate_shift_ci_high"] - r["rate_shift"]]],
                       fmt="^", color=P.PURPLE, ecolor=P.PURPLE, capsize=2, ms=4, alpha=0.8)
    left.set_yticks(y, [f"{r['intervention']} ({r['verdict']})" for _, r in case.iterrows()], fontsize=8)
    left.set_xlim(-0.02, 1.02)
    left.set_xlabel("DPD: ○ under none, ■ under the intervention", fontsize=8)
    right.axvline(0, color=P.GREY, ls="--", lw=1)
    right.axvline(-case["dpd_none"].iloc[0], color=P.GREY, ls=":", lw=1)
    right.set_xlim(-1.02, 1.02)
    right.set_xlabel("◆ DPD change from none, ▲ rate shift (95 % intervals)", fontsize=8)
    r0 = case.iloc[0]
    fig.suptitle(textwrap.fill(f"{r0['scenario']} × {r0['group']} — {r0['model']}, {r0['condition']}", 90), fontsize=8)
    return fig


def described(config: dict | None) -> pd.DataFrame:
    """The run's interventions as its manifest recorded them: id, where, text, source."""
    from louder.errors import LouderError
    from louder.interventions import load_intervention
    from louder.sections import recorded

    rows = []
    for ref in recorded(config, "simulation.interventions", []) or []:
        try:
            iv = load_intervention(ref)
        except LouderError:  # a file that has moved since the run
            rows.append(dict(intervention=ref, where="", text="(file not found)", source=""))
            continue
        if iv is not None:
            rows.append(dict(intervention=iv.id, where=iv.where, text=iv.text, source=iv.source or ref))
    return pd.DataFrame(rows, columns=["intervention", "where", "text", "source"])


def report_section(a) -> str:
    """The report's "Prompt interventions" section, or "" when the run has no interventions.csv."""
    t = a.tables.get("interventions")
    if t is None:
        return ""
    manifests = a.manifests
    parts = [note(
        "Does a prompt intervention change the disparity? The same agents, with the same personas, decided once "
        "under <b>none</b> (the paper's prompt) and once under each intervention. <b>dpd_change</b> = DPD under the "
        "intervention − DPD under none, over the agents valid under both, with an interval from a paired bootstrap "
        "of agents that contains the change and stays valid when either DPD is 0 (conservative); <b>p_value</b>: "
        "paired sign-flip permutation test (each agent's two answers are exchangeable when the intervention changes "
        "nothing). <b>verdict</b>: <i>reduces</i> / <i>increases</i> when p &lt; 0.05; <i>underpowered</i> when an "
        "attribute has fewer than 10 paired agents, or when the disparity under none is real and the change's "
        "interval still reaches −DPD (the whole disparity could be gone unseen); else <i>no change</i>. Side "
        "effects: <b>rate_shift</b>, the overall target rate under the intervention − under none (a mitigation that "
        "moves every agent's decision is not neutral), and <b>changed</b>, the share of agents whose decision "
        "changed. <b>explicit_dpd</b>: where the explicit probes ran under the same intervention (<code>louder probe "
        "explicit --intervention …</code>), the explicit DPD under it (<b>explicit_dpd_none</b>: under none) — does "
        "the model also <i>say</i> something else? The other tables of this report read the decisions and answers "
        "under none only.")]
    if manifests:
        d = described((manifests.get("simulation") or {}).get("config"))
        if len(d):
            parts.append(table(d))
    for _, case in t.groupby(KEYS, sort=True):
        parts.append(case_heading(case.iloc[0]))
        parts += [note(html.escape(sentence(r))) for _, r in case.iterrows()]
        parts.append(a.figure("case", case))
    parts += ["<h3>Per case and intervention</h3>", table(t, scroll=True)]
    return section("Prompt interventions", *parts)


# --- the console ---------------------------------------------------------------------------------------

def _signed(v) -> str:
    return "–" if pd.isna(v) else f"{v:+.2f}"


CONSOLE = Console(
    "interventions", "Prompt interventions: DPD under none → under the intervention, change [95 % CI], p; side effects: "
                     "overall rate shift [95 % CI], agents whose decision changed, explicit DPD — "
                     "docs/how-to/test-a-mitigation.md", (
        *map(key, CASE_KEYS),
        Cell("intervention", "intervention", priority=1),
        Cell("DPD none → it", lambda r: "–" if pd.isna(r["dpd_none"]) else f"{r['dpd_none']:.2f} → {r['dpd']:.2f}",
             number=True, priority=1, name="dpd"),
        Cell("change [95 % CI]", lambda r: f"{_signed(r['dpd_change'])} [{_signed(r['ci_low'])}, {_signed(r['ci_high'])}]",
             number=True, priority=1, name="dpd_change"),
        Cell("p", lambda r: number(r["p_value"], 4), number=True, name="p_value"),
        Cell("rate shift [95 % CI]", lambda r: f"{_signed(r['rate_shift'])} [{_signed(r['rate_shift_ci_low'])}, "
                                               f"{_signed(r['rate_shift_ci_high'])}]", number=True, name="rate_shift"),
        Cell("changed", lambda r: "–" if pd.isna(r["changed"]) else f"{r['changed']:.0%}", number=True),
        Cell("explicit DPD none → it", lambda r: "–" if pd.isna(r["explicit_dpd"]) else
             f"{r['explicit_dpd_none']:.2f} → {r['explicit_dpd']:.2f}", number=True, name="explicit_dpd"),
        Cell("verdict", "verdict", priority=1)),
    position=52)


register(Measure(
    "interventions", "the DPD change under each prompt intervention, paired on the agents, and its side effects",
    tables=(Table("interventions", "Runs under more than one prompt intervention (`simulation.interventions`; [Test a "
                                   "mitigation](../how-to/test-a-mitigation.md)): one row per model × condition × "
                                   "scenario × group × intervention other than `none` (population runs: per group of "
                                   "the population), read on the agents valid under both `none` and the intervention. "
                                   "Does the intervention change the disparity, and what else does it change?", (
        Column(("model", "condition", "scenario", "group"), "the case"),
        Column("intervention", "the intervention's id (compared with `none`)"),
        Column("n_agents", "agents with a valid decision under both"),
        Column(("dpd_none", "dpd"), "the DPD under `none` and under the intervention (score mode: of mean `p_target`)"),
        Column(("dpd_change", "ci_low", "ci_high"), "`dpd` − `dpd_none`, with a paired-bootstrap interval that contains "
                                                    "it and holds when either DPD is 0 (conservative)"),
        Column("p_value", "paired sign-flip permutation test of \"the intervention changes nothing\""),
        Column(("rate_shift", "rate_shift_ci_low", "rate_shift_ci_high"), "side effect: the overall target rate under "
                                                                          "the intervention − under `none`, with its "
                                                                          "percentile interval"),
        Column("changed", "side effect: the share of agents whose decision changed (sampling noise included)"),
        Column(("explicit_dpd_none", "explicit_dpd"), "side effect, where the explicit probe ran under the intervention "
                                                      "too (`louder probe explicit --intervention …`): the explicit DPD "
                                                      "under `none` and under the intervention; empty otherwise"),
        Column("verdict", "`reduces` / `increases` (p < 0.05, by the sign of the change), `no change`, or "
                          "`underpowered` (an attribute with fewer than 10 paired agents, or a real disparity under "
                          "`none` whose whole removal the interval cannot exclude)"))),),
    build=build, inputs=INPUTS, needs=("decisions",), console=(CONSOLE,), section=report_section, position=142,
    figures=(Figure("case", lambda a, case: figure(case), lambda a, case: (
        f"{case.iloc[0]['scenario']} × {case.iloc[0]['group']}: the DPD under none and under each intervention, and "
        "each intervention's change from none with its 95 % interval and its overall rate shift.")),)))
