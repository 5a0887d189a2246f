"""A population run's answer (issue 11): the per-group DPD weighted to the population, the logistic
regression on every group, the intersections of two groups and the overall rate — its tables, report
sections and console tables. The statistics are ``louder.analysis.stats.population``'s (formulas there); a
case is model × condition × scenario × variant."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.console import key, number
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.keys import truthy
from louder.analysis.stats.population import (
    POP_CASE,
    attr_groups,
    group_tables,
    intersection_tables,
    overall_table,
    regression_tables,
)
from louder.analysis.stats.sequential_cases import of_run, with_sequential_groups

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

# the population and variant tables key on the variant itself, not on the case tables' "scenario [variant]"
INPUTS = (Input("decisions", whole=("variant",), doc="the drawn agents' decisions, every policy variant"),
          Input("final", "sequential.csv", raw=True, doc="a sequential run's cases"),
          Input("waves", "sequential_waves.csv", raw=True, doc="… and their waves"))


# what the population statistics read of a decision: its case, status, outcome, weight and groups — not its
# texts (persona, raw answer), which every copy they make (valid rows, per case) would carry: 2 GB at 10^6 agents
READS = ["model", "condition", "scenario", "variant", "group", "attribute", "status", "target", "weight"]


def build(a) -> dict[str, pd.DataFrame]:
    d = a.decisions
    if not (attr_groups(d) and "variant" in d):
        return {}
    d = d[[c for c in d.columns if c in READS or c in attr_groups(d)]]
    groups, rates = group_tables(d, a.bootstrap, a.seed)
    seq = of_run(a.manifests.get("simulation"), a.final, a.waves)
    return {"population_groups": with_sequential_groups(groups, seq), "population_rates": rates,
            "population_intersections": intersection_tables(d), "population_regression": regression_tables(d),
            "population_overall": overall_table(d)}


# --- the report sections ------------------------------------------------------------------------------

MAX_HEATMAPS = 12  # intersection heat maps drawn (the table has every cell of every case)


def _population(a) -> str:
    from louder.populations.fit import fit_errors

    t = a.tables
    if "population_groups" not in t:
        return ""
    m = (a.manifests.get("simulation") or {}).get("population") or {}
    parts = []
    if m:
        parts.append(note(f"Population <b>{html.escape(str(m.get('id')))}</b> ({html.escape(str(m.get('path')))}): "
                          f"{m.get('n')} agents drawn in {m.get('cells_drawn')} cells of "
                          f"{html.escape(' × '.join(m.get('groups', [])))}. Fit: {fit_errors(m)}, Pearson chi-square "
                          f"{m.get('chi2', float('nan')):.2f} on {m.get('df')} df against the fitted joint "
                          f"(p = {m.get('p_value', float('nan')):.3f})."))
    parts += [
        note("<b>Overall</b>: the population's target rate, weighted by each agent's post-stratification weight, "
             "with a Wilson interval at the Kish effective size; every answer status counted beside it."),
        table(t["population_overall"], scroll=True),
        note("<b>Per group</b>: DPD across the group's attributes, each rate population-weighted over the other "
             "groups (the gap as it exists in this population, composition included), against the parity "
             "bootstrap threshold; significant when its p-value, Holm-adjusted across the table's rows (p_holm), is "
             "below 0.05; interval by binomial bootstrap at the effective sizes (contains the DPD, valid at "
             "0: docs/statistics.md). Small cells make wide intervals: a "
             "non-significant DPD at this N is not evidence of no bias."),
        table(t["population_groups"], scroll=True), table(t["population_rates"], scroll=True)]
    reg = t["population_regression"]
    ok = reg[reg["status"] == "ok"]
    parts.append(note("<b>Logistic regression</b> of the target decision on every group's attributes (statsmodels, "
                      "treatment coding against each group's most frequent attribute): the odds ratio of an "
                      "attribute holding the other groups fixed, with its 95 % Wald interval. Agents with an "
                      "attribute the model cannot estimate (fewer than 10 valid decisions, or all the same decision) "
                      "are left out first and named in <b>dropped</b>; a case whose data still cannot support the "
                      "model says why (too few data: fewer than 10 valid decisions per parameter; no variation; "
                      "separation)."))
    for case, g in ok.groupby(["model", "condition", "scenario", "variant"], sort=True):
        parts.append(a.figure("odds", g, case))
    parts.append(table(reg, scroll=True))
    return section("Population", *parts)


def _intersections(a) -> str:
    t = a.tables.get("population_intersections")
    if t is None or t.empty:
        return ""
    parts = [note("Target rate and n per intersection of two groups. Cells with at least 30 valid decisions are "
                  "tested against the rest of the population (Fisher's exact test) with Benjamini–Hochberg across "
                  "the pair's tested cells (✱); smaller cells are shown hatched and not tested. The per-case p-values "
                  "of the DPD table are Holm-adjusted across cases instead.")]
    drawn = 0
    for case, g in t.groupby(["model", "condition", "scenario", "variant", "group_a", "group_b"], sort=True):
        if drawn >= MAX_HEATMAPS:
            parts.append(note("(further heat maps left out; every cell is in the table and "
                              "population_intersections.csv)"))
            break
        parts.append(a.figure("intersections", g, case))
        drawn += 1
    parts.append(table(t, scroll=True))
    return section("Intersections", *parts)


def odds_ratio_figure(table: pd.DataFrame, title: str = "") -> MplFigure | None:
    """Forest plot of ``population.logistic_regression`` odds ratios with their intervals, log scale,
    one row per group × attribute (against the group's reference), a dashed line at OR = 1."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import interval

    if table.empty:
        return None
    t = table.reset_index(drop=True)
    fig = MplFigure(figsize=(6.0, 0.32 * len(t) + 1.2), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(t))[::-1]
    for yi, (_, r) in zip(y, t.iterrows()):
        interval(ax, r["odds_ratio"], yi, r["lo"], r["hi"], color=P.VERMILLION, ms=4)
    ax.axvline(1.0, color=P.GREY, ls="--", lw=1)
    ax.set_xscale("log")
    # ticks at 1, 2, 5 × 10^k labelled as plain numbers; minor log ticks unlabelled (they would overlap)
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(y, [f"{g.replace('_', ' ')}: {a} (vs {r})" for g, a, r in
                      zip(t["group"], t["attribute"], t["reference"])], fontsize=7)
    ax.set_xlabel("odds ratio of the target decision (95 % interval)")
    ax.set_title(title or "Effect of each attribute holding the other groups fixed", fontsize=8)
    return fig


def intersection_heatmap(table: pd.DataFrame, group_a: str, group_b: str, title: str = "") -> MplFigure | None:
    """Target rate per intersection of two groups (``population.intersection_table``) as a heat map, each
    cell annotated with its rate and n; untested cells (n below the minimum) hatched, BH-significant ✱."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.patches import Rectangle

    from louder.analysis.report import palette as P

    if table.empty:
        return None
    rows = list(dict.fromkeys(table.sort_values(group_a)[group_a]))
    cols = list(dict.fromkeys(table.sort_values(group_b)[group_b]))
    t = table.set_index([group_a, group_b])
    grid = np.full((len(rows), len(cols)), np.nan)
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            if (a, b) in t.index:
                grid[i, j] = t.loc[(a, b), "rate"]
    fig = MplFigure(figsize=(1.1 * len(cols) + 2.5, 0.6 * len(rows) + 1.8), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            if (a, b) not in t.index:
                continue
            r = t.loc[(a, b)]
            mark = " ✱" if bool(r.get("significant", False)) else ""
            ax.text(j, i, f"{r['rate']:.2f}{mark}\nn={int(r['n_valid'])}", ha="center", va="center", fontsize=7,
                    color=P.WHITE if r["rate"] < 0.6 else P.BLACK)
            if not bool(r.get("tested", True)):
                ax.add_patch(Rectangle(
                    (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor=P.GREY, lw=0))
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    ax.set_xlabel(group_b.replace("_", " "))
    ax.set_ylabel(group_a.replace("_", " "))
    fig.colorbar(im, ax=ax, label="target rate")
    ax.set_title(title or "Target rate per intersection (hatched: below minimum n, not tested; ✱ BH-significant)",
                 fontsize=8)
    return fig


def _odds(a, g, key):
    return odds_ratio_figure(g, title=f"{' · '.join(key)}\nodds ratios (95 % interval)")


def _heatmap(a, g, key):
    return intersection_heatmap(g.rename(columns={"attribute_a": key[4], "attribute_b": key[5]}), key[4], key[5],
                                title=f"{' · '.join(key[:4])}\ntarget rate per {key[4]} × {key[5]}\n"
                                      "(hatched: n < 30, untested; ✱ BH-significant)")


def findings(a) -> list[Finding]:
    """Per model: which of the population's groups differ significantly (the per-group DPD)."""
    g = a.tables.get("population_groups")
    if g is None or g.empty:
        return []
    out = []
    for model, m in g.groupby("model", sort=True):
        sig = m[m["significant"].map(truthy)]
        if len(sig):
            top = sig.loc[sig["dpd"].idxmax()]
            text = (f"In the population: {len(sig)} of {len(m)} group × case rows differ significantly by attribute "
                    f"(population-weighted DPD, Holm p < 0.05); the largest is {top['group']} in {top['scenario']}"
                    f" ({top['variant']}), DPD {top['dpd']:.2f} [{number(top['ci_low'], 2)}, "
                    f"{number(top['ci_high'], 2)}].")
        else:
            text = (f"In the population: none of {len(m)} group × case rows differs significantly by attribute "
                    "(population-weighted DPD, Holm p < 0.05).")
        out.append(Finding(text, "Population", str(model)))
    return out


def population_sections(a) -> str:
    """"Population" and "Intersections": a population run leads the report with them (its answer)."""
    return "\n".join(p for p in (_population(a), _intersections(a)) if p)


# --- the console -----------------------------------------------------------------------------------------



def _sig(r) -> str | None:
    return "bold red" if truthy(r["significant"]) else None


def _ok(r) -> bool:
    return r["status"] == "ok"


CONSOLES = (
    Console("population_groups", "Population: DPD per group (each rate population-weighted over the other groups; "
                              "significant = p_holm < 0.05, Holm across the table's rows)", (
        *(key(k) for k in POP_CASE),
        Cell("group", "group", priority=1),
        Cell("valid", lambda r: str(int(r["n_valid"])), number=True, priority=1, name="n_valid"),
        Cell("dpd [95 % CI]", lambda r: f"{number(r['dpd'])} [{number(r['ci_low'])}, {number(r['ci_high'])}]", number=True,
             priority=1, name="dpd"),
        Cell("threshold", lambda r: number(r["threshold"]), number=True, priority=3),
        Cell("p", lambda r: number(r["p_value"], 4), number=True, name="p_value"),
        Cell("p_holm", lambda r: number(r.get("p_holm"), 4), number=True, priority=1),
        Cell("sig", lambda r: "yes" if _sig(r) else "no", priority=1, style=_sig, name="significant")),
        position=10),
    Console("population_regression", "Population: logistic regression of the target decision on every group (odds "
                                  "ratio against the group's most frequent attribute, other groups held fixed)", (
        *(key(k) for k in POP_CASE),
        Cell("status", "status"),
        Cell("group", lambda r: str(r["group"]) if _ok(r) else "", priority=1),
        Cell("attribute (vs reference)", lambda r: f"{r['attribute']} (vs {r['reference']})" if _ok(r) else "",
             priority=1, name="attribute"),
        Cell("odds ratio [95 % CI]", lambda r: f"{number(r['odds_ratio'], 2)} [{number(r['lo'], 2)}, {number(r['hi'], 2)}]"
             if _ok(r) else "", number=True, priority=1, name="odds_ratio"),
        Cell("p", lambda r: number(r["p_value"], 4) if _ok(r) else "", number=True, priority=1, name="p_value"),
        Cell("left out", lambda r: "" if pd.isna(r["dropped"]) else str(r["dropped"] or ""), name="dropped")),
        position=11))

POPULATION_CASE_DOC = Column(("model", "condition", "scenario", "variant"), "the case (population runs: `variant` is "
                                                                            "the policy variant)")

register(Measure(
    "population", "a population run's answer: the per-group DPD (population-weighted), regression, intersections",
    tables=(
        Table("population_groups", "Population runs, per case × group: the DPD population-weighted over the other "
                                   "groups.", (
            Column(("model", "condition", "scenario", "variant", "group"), "the case and group"),
            Column("n_valid", "valid decisions"),
            Column(("dpd", "threshold", "p_value", "ci_low", "ci_high"), "as in `cases.csv`"),
            Column(("p_holm", "significant"), "`p_value` Holm-adjusted across the table's rows (every case × group of "
                                              "the run; a sequential run: `p_sequential`), and `p_holm` < 0.05"),
            Column(("interval_method", "stop_reason", "waves"), "sequential runs, as in `cases.csv` (the weighted "
                                                                "DPD's bootstrap columns are left empty)"),
            Column(("dpd_unweighted", "cs_low", "cs_high", "p_sequential"),
                   "sequential runs: the tested (unweighted) DPD, its confidence sequence after the last wave and "
                   "sequential p-value"))),
        Table("population_rates", "Population runs, per case × group × attribute.", (
            Column(("model", "condition", "scenario", "variant", "group", "attribute"), "the case, group and "
                                                                                        "attribute"),
            Column(("n_valid", "n_target", "rate"), "the weighted rate"),
            Column("n_eff", "effective sample size"),
            Column(("n_invalid", "n_refused", "n_error"), "accounting"))),
        Table("population_intersections", "Population runs, per case × pair of groups × cell.", (
            POPULATION_CASE_DOC,
            Column(("group_a", "group_b", "attribute_a", "attribute_b"), "the cell"),
            Column(("n_valid", "n_target", "rate", "n_eff"), "its rate"),
            Column("tested", "cells with at least 30 valid decisions are tested"),
            Column(("p_value", "p_bh", "significant"), "Fisher's exact test against the rest, Benjamini–Hochberg "
                                                       "adjusted"))),
        Table("population_regression", "Logistic regression of the decision on every group, per case.", (
            POPULATION_CASE_DOC,
            Column("status", "`ok`, or why the data cannot support the fit (e.g. `no data`)"),
            Column("n", "decisions fitted"),
            Column("dropped", "attributes left out first (all-same decisions)"),
            Column(("group", "attribute", "reference"), "the coefficient's attribute and its reference attribute"),
            Column(("odds_ratio", "lo", "hi", "p_value"), "odds ratio with its 95 % interval"))),
        Table("population_overall", "Population runs, per case: the population's target rate.", (
            POPULATION_CASE_DOC,
            Column(("rate", "ci_low", "ci_high"), "the population-weighted target rate with its Wilson interval"),
            Column("n_eff", "Kish effective sample size"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "answers by status")))),
    build=build, inputs=INPUTS, needs=("decisions",), console=CONSOLES, section=population_sections, position=30,
    figures=(Figure("odds", _odds, lambda a, g, key: (
        f"{' · '.join(key)}: forest plot of the odds ratio of the target decision for each attribute against its "
        "group's reference, holding the other groups fixed, with 95 % intervals on a log scale; 1 dashed.")),
             Figure("intersections", _heatmap, lambda a, g, key: (
        f"{' · '.join(key[:4])}: heat map of the target rate per {key[4]} × {key[5]} cell with its n; cells under 30 "
        "hatched and untested, BH-significant cells marked ✱."))), findings=findings))
