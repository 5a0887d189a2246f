"""Does a DPD survive how the scenario was presented? (issue 25; docs/robustness.md): the DPD pooled
over wordings with its verdict (``robustness.csv``) and the position bias (``position_bias.csv``),
when a run varies its wordings, choice orders or signals. The report's section: a forest plot per
case — the DPD in each wording (or choice order) with its interval, the pooled estimate below — the
position-bias table, and one sentence per case saying what its verdict means. The statistics are
``louder.analysis.stats.robustness``'."""

from __future__ import annotations

import html
import json
import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number
from louder.analysis.report.html import case_heading, note, section, table
from louder.analysis.stats import robustness as R
from louder.analysis.stats.keys import by_population_group
from louder.analysis.stats.robustness import sentence

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure


# every wording, order and signal (signals are designs, never pooled: robustness.csv has a row per signal)
INPUTS = (Input("decisions", whole=("wording", "signal"), doc="the agents' decisions in every wording, choice order "
                                                              "and signal"),)


def build(a) -> dict[str, pd.DataFrame]:
    if not R.varies(a.decisions):
        return {}
    # population runs: per group of the population, its attributes in turn (``keys.by_population_group``)
    return {"robustness": R.robustness_table(by_population_group(a.decisions), a.groups, B=a.bootstrap, seed=a.seed),
            "position_bias": R.position_bias_table(a.decisions)}

VERDICT_COLORS = {"robust": P.VERMILLION, "wording-dependent": P.ORANGE, "underpowered": P.GREY,
                  "no disparity": P.BLACK}


def forest_figure(row: pd.Series) -> MplFigure | None:
    """One case: a row per wording (or order) with its DPD and 95 % interval, the pooled DPD with the
    two-way interval below (a diamond), a dashed line at 0."""
    from matplotlib.figure import Figure as MplFigure

    by = json.loads(row["dpd_by_wording"]) if row["unit"] == "wording" else json.loads(row["dpd_by_order"])
    ci = json.loads(row["ci_by_wording"]) if row["unit"] == "wording" else {}
    names = [k for k, v in by.items() if v is not None]
    if not names and np.isnan(row["pooled_dpd"]):
        return None
    fig = MplFigure(figsize=(6.0, 0.34 * (len(names) + 2) + 1.0), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(names), 0, -1) + 0.5
    for yi, name in zip(y, names):
        lo, hi = (ci.get(name) or [np.nan, np.nan])
        ax.errorbar(by[name], yi, xerr=None if np.isnan(lo) else [[by[name] - lo], [hi - by[name]]], fmt="s",
                    color=P.BLACK, ecolor=P.BLACK, capsize=2, ms=4)
    color = VERDICT_COLORS.get(row["verdict"], P.BLACK)
    if not np.isnan(row["pooled_dpd"]):
        ax.errorbar(row["pooled_dpd"], 0, xerr=[[row["pooled_dpd"] - row["pooled_ci_low"]],
                                                 [row["pooled_ci_high"] - row["pooled_dpd"]]],
                    fmt="D", color=color, ecolor=color, capsize=3, ms=7)
    ax.axvline(0, color=P.GREY, ls="--", lw=1)
    ax.axhline(0.75, color=P.GRID, lw=0.8)
    ax.set_yticks([*y, 0], [*names, f"pooled ({row['verdict']})"], fontsize=7)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("DPD (95 % interval)")
    unit = "wording" if row["unit"] == "wording" else "choice order"
    ax.set_title(textwrap.fill(f"{row['scenario']} × {row['group']}: DPD per {unit} — {row['model']}, "
                               f"{row['condition']}, signal {row['signal']}", 80), fontsize=8)
    return fig


def report_section(a) -> str:
    """The section, or "" when the run varied no wording, order or signal."""
    rob, pos = a.tables.get("robustness"), a.tables.get("position_bias")
    if rob is None:
        return ""
    rob = rob.assign(unit=rob["unit"].fillna(""))  # read back from its CSV, "" is empty
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
        parts.append(case_heading(row, signal=True))
        parts.append(note(html.escape(sentence(row))))
        parts.append(a.figure("forest", row))
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


def findings(a) -> list[Finding]:
    """Per model: how many cases' disparity survives the presentation (the verdicts), the largest robust one."""
    rob = a.tables.get("robustness")
    if rob is None or rob.empty:
        return []
    out = []
    for model, g in rob.groupby("model", sort=True):
        counts = g["verdict"].value_counts()
        said = ", ".join(f"{n} {v}" for v, n in counts.items())
        unit = "wording" if (g["unit"] == "wording").any() else "choice order"
        text = f"Across presentations (each {unit}): {said} of {len(g)} case(s)"
        robust = g[g["verdict"] == "robust"]
        if len(robust):
            top = robust.loc[robust["pooled_dpd"].idxmax()]
            text += (f"; the largest robust disparity is {top['scenario']} × {top['group']} ({top['condition']}), "
                     f"pooled DPD {top['pooled_dpd']:.2f} [{number(top['pooled_ci_low'], 2)}, "
                     f"{number(top['pooled_ci_high'], 2)}]")
        dependent = g[g["verdict"] == "wording-dependent"]
        if len(dependent):
            text += (f"; {len(dependent)} depend on the {unit}: read its forest plot before reporting the DPD of one "
                     "wording")
        out.append(Finding(text + ".", "Robustness", str(model)))
    return out


# --- the console ---------------------------------------------------------------------------------------


def _by_wording(r) -> str:
    return ", ".join(f"{k} {number(v, 2)}" for k, v in json.loads(r["dpd_by_wording"]).items())



CONSOLES = (
    Console("robustness", "Robustness: DPD pooled over wordings (two-way interval); p and p_het Holm-adjusted across the "
                       "run's cases — docs/robustness.md", (
        key("model"), key("condition"), key("scenario"), key("group"), key("signal"),
        Cell("wordings × orders", lambda r: f"{r['n_wordings']} × {r['n_orders']}", number=True, name="n_wordings"),
        Cell("DPD per wording", _by_wording, priority=3, name="dpd_by_wording"),
        Cell("pooled DPD [95 % CI]", lambda r: f"{number(r['pooled_dpd'])} [{number(r['pooled_ci_low'])}, "
                                               f"{number(r['pooled_ci_high'])}]", number=True, priority=1,
             name="pooled_dpd"),
        Cell("p", lambda r: number(r["p_disparity_holm"], 4), number=True, priority=1, name="p_disparity_holm"),
        Cell("p_het", lambda r: number(r["p_heterogeneity_holm"], 4), number=True, name="p_heterogeneity_holm"),
        Cell("stability", lambda r: number(r["sign_stability"], 2), number=True, name="sign_stability"),
        Cell("verdict", "verdict", priority=1,
             style=lambda r: {"robust": "bold red", "wording-dependent": "yellow"}.get(r["verdict"]))),
        position=30),
    Console("position_bias", "Position bias: rate of choosing the first-listed option (Wilson 95 % CI) against 1/k", (
        key("model"), key("scenario"),
        Cell("first-listed rate [95 % CI]", lambda r: f"{number(r['rate_first_listed'])} [{number(r['ci_low'])}, "
                                                      f"{number(r['ci_high'])}]", number=True, priority=1,
             name="rate_first_listed"),
        Cell("expected", lambda r: number(r["expected"]), number=True, priority=1),
        Cell("n", lambda r: str(r["n"]), number=True, priority=1),
        Cell("p", lambda r: number(r["p_value"], 4), number=True, priority=1, name="p_value"),
        Cell("mean p(first)", lambda r: number(r["mean_p_first_listed"]), number=True, name="mean_p_first_listed")),
        position=31))


register(Measure(
    "robustness", "the DPD pooled over wordings and choice orders with its verdict, and the position bias",
    tables=(
        Table("robustness", "Runs with more than one wording, choice order or identity signal ([Is it the "
                            "wording?](../robustness.md)): one row per model × condition × scenario × group × "
                            "signal (population runs: per group of the population, its attributes in turn; network "
                            "runs: round 0).", (
            Column(("model", "condition", "scenario", "group", "signal"), "the case and its identity signal"),
            Column(("n_wordings", "n_orders"), "wordings and choice orders the case ran"),
            Column(("dpd_by_wording", "ci_by_wording"), "JSON: the DPD of each wording and its interval"),
            Column("dpd_by_order", "JSON: the DPD under each choice order"),
            Column(("pooled_dpd", "pooled_ci_low", "pooled_ci_high"), "the DPD pooled over wordings, with an interval "
                                                                      "that counts wording-to-wording variation "
                                                                      "(two-way bootstrap over wordings and agents)"),
            Column(("p_disparity", "p_disparity_holm"), "p-value of pooled DPD = 0, the interval inverted (below 0.05 "
                                                        "exactly when `pooled_ci_low` > 0), and its Holm adjustment "
                                                        "across the run's robustness rows"),
            Column("pooled_rates", "JSON: the pooled target rate per attribute"),
            Column("between_wording_sd", "SD across wordings of the pooled contrast (highest − lowest pooled "
                                         "attribute), net of sampling noise"),
            Column(("p_heterogeneity", "p_heterogeneity_holm"), "Pearson χ² test (of the additive logistic model) "
                                                                "that the attribute effect is the same in every "
                                                                "wording, and its Holm adjustment across the run's "
                                                                "robustness rows"),
            Column("sign_stability", "share of wordings in which the pooled contrast keeps its sign"),
            Column("verdict", "`robust`, `wording-dependent`, `underpowered` or `no disparity`"),
            Column("unit", "what the pooling and the test ran over: `wording` (two or more), else `choice_order` (two "
                           "or more)"),
            Column(("n_agents", "n_valid", "mdd"), "agents, valid decisions, and the minimum detectable DPD"))),
        Table("position_bias", "One row per model × scenario of a run with more than one choice order.", (
            Column(("model", "scenario"), "the model and scenario"),
            Column("k", "the number of choices"),
            Column(("rate_first_listed", "ci_low", "ci_high"), "the share of valid decisions that chose whichever "
                                                               "option was listed first, with its Wilson interval"),
            Column("expected", "1/k: the share without position bias"),
            Column("n", "valid decisions"),
            Column("p_value", "two-sided binomial test of `rate_first_listed` = 1/k"),
            Column("mean_p_first_listed", "score mode: the mean probability of the first-listed label"),
            Column("orders", "the orders shown"),
            Column("target_rate_balanced", "JSON: the target rate per attribute, averaged over orders"),
            Column("dpd_balanced", "the DPD of those balanced rates")))),
    build=build, inputs=INPUTS, needs=("decisions",), console=CONSOLES, section=report_section, position=130,
    figures=(Figure("forest", lambda a, row: forest_figure(row), lambda a, row: (
        f"{row['scenario']} × {row['group']}: the DPD in each wording (or choice order) with its 95 % interval, and "
        f"the pooled DPD with its two-way interval below, verdict {row['verdict']}.")),), findings=findings))
