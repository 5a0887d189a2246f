"""Parity given a legitimate factor (issue 37, item 2): ``conditional.csv`` and its strata — for a
population run analysed with ``louder analyze RUN --control GROUP``, each other group's DPD within
every stratum of GROUP, pooled, with its interval and a verdict — its console table and report
section. The statistic is ``louder.analysis.stats.conditional`` (the formulas there)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import note, section, table
from louder.analysis.stats import conditional as C
from louder.analysis.stats.keys import truthy

CONTROL = Option("control", str, (), "a population run's group to read every other group's DPD within (in order)",
                 multiple=True, flag="--control")
INPUTS = (Input("decisions", whole=("variant",), doc="the drawn agents' decisions, every policy variant"),)


def _population_run(a) -> bool:
    return a.decisions is not None and any(c.startswith("attr_") for c in a.decisions.columns)


def build(a) -> dict[str, pd.DataFrame]:
    controls = list(a.options.control)
    if not controls:
        return {}
    if not _population_run(a):
        a.missing.append(f"conditional: --control {' --control '.join(controls)} reads a population run's groups "
                         "within each other; this run has one group per case (run `louder run --population …`)")
        return {}
    t, strata = C.conditional_tables(a.decisions, controls, B=a.bootstrap, seed=a.seed)
    return {"conditional": t, "conditional_strata": strata}


def report_section(a) -> str:
    t = a.tables.get("conditional")
    if t is None:
        return ""
    return section(
        "Parity given a legitimate factor",
        note("Does a group's gap remain among agents alike in a factor you name (<code>louder analyze RUN --control "
             "GROUP</code>)? <b>dpd_raw</b> is the group's population-weighted DPD (as in Population); "
             "<b>dpd_within</b> compares the group's attributes as if each had the control group's distribution "
             "(every stratum's rates, weighted by the stratum's agents: direct standardisation), with a stratified "
             "bootstrap interval and a parity p-value. Verdicts (Holm across the table's raw and within p-values): "
             "<b>persists</b> — the gap remains within strata; <b>explained by GROUP</b> — the raw gap is "
             "significant, the within-strata one is not and its interval lies below the raw DPD; "
             "<b>underpowered</b> — the raw gap is significant but the strata are too thin to tell; "
             "<b>no disparity</b> — neither is significant. Whether the control is a <i>legitimate</i> factor is your "
             "judgement, not the data's."),
        a.figure("within", t),
        table(t, scroll=True),
        note("Per stratum of the control: valid decisions, its share of the weight and the group's DPD within it; "
             "strata in which some attribute has no valid decision are left out of the pooled DPD (used = False)."),
        table(a.tables.get("conditional_strata"), scroll=True))


def _figure(a, t: pd.DataFrame):
    from louder.analysis.report import draw as figures
    from louder.analysis.report import palette as P

    color = {"persists": P.VERMILLION, "underpowered": P.GREY, "no disparity": P.BLACK}
    keys = ["model", "condition", "scenario", "variant"]
    panels = [(" · ".join(map(str, k)), g) for k, g in t.groupby(keys, sort=True, dropna=False)]
    return figures.forest(panels, [
        dict(est="dpd_raw", color=P.GREY, hollow=True, label="raw DPD (population-weighted)"),
        dict(est="dpd_within", lo="ci_low", hi="ci_high", marker="D", label="DPD within the control's strata",
             color=lambda r: color.get(r["verdict"], P.BLUE))],
        label=lambda r: f"{r['group']} | {r['control']}: {r['verdict']}", xlabel="DPD (95 % interval)", ref=None,
        xlim=(-0.02, 1.02), title="Each group's DPD within the strata of the control, beside its raw DPD")


def leads_to(a) -> list[str]:
    """A population run with a flagged group and no --control: the question this measure answers."""
    g = a.tables.get("population_groups")
    if a.options.control or g is None or g.empty or g["group"].nunique() < 2:
        return []
    flagged = sorted(set(g.loc[g["significant"].map(truthy), "group"]))
    if not flagged:
        return []
    return [f"population_groups.csv flags {', '.join(flagged)}: does the gap remain among agents alike in another "
            f"group? `louder analyze {a.run_dir} --control GROUP` writes conditional.csv"]


def _flag(r) -> str | None:
    return "bold red" if r["verdict"] == "persists" else "green" if str(r["verdict"]).startswith("explained") else None


CONSOLE = Console("conditional", "Parity given a legitimate factor: each group's DPD within the strata of the control "
                           "group (--control), beside its raw DPD", (
    key("model"), key("condition"), key("scenario"), key("variant"),
    Cell("group", "group", priority=1),
    Cell("control", "control", priority=1),
    Cell("raw dpd", lambda r: number(r["dpd_raw"]), number=True, priority=1, name="dpd_raw"),
    Cell("within dpd [95 % CI]", with_interval("dpd_within", "ci_low", "ci_high"), number=True, priority=1,
         name="dpd_within"),
    Cell("p", lambda r: number(r["p_value"], 4), number=True, name="p_value"),
    Cell("verdict", "verdict", priority=1, style=_flag)),
    position=12)

CASE_DOC = Column(("model", "condition", "scenario", "variant"), "the case of the population run")

register(Measure(
    "conditional", "parity given a legitimate factor: a population run's group DPDs within the strata of a control "
                   "group (--control), with a verdict",
    tables=(
        Table("conditional", "Population runs analysed with `--control GROUP` (repeatable): per case × control × "
                             "every other group. Formulas: `louder/analysis/stats/conditional.py`; how to read it: "
                             "[the population tutorial](../tutorials/population-what-if.md).", (
            CASE_DOC,
            Column(("group", "control"), "the group whose gap is read, and the control group it is read within"),
            Column("dpd_raw", "the group's population-weighted DPD (as in `population_groups.csv`)"),
            Column("dpd_within", "the pooled within-stratum DPD: each attribute's rate standardised to the control's "
                                 "distribution (strata weighted by their agents), largest − smallest"),
            Column(("ci_low", "ci_high"), "its 95 % interval (stratified bootstrap; contains `dpd_within`)"),
            Column("p_value", "parity within strata: the stratified parity bootstrap"),
            Column("verdict", "`persists`, `explained by CONTROL`, `underpowered` or `no disparity` (Holm across the "
                              "table's raw and within p-values)"))),
        Table("conditional_strata", "Per case × control × group × stratum of the control: what the pooled DPD of "
                                    "`conditional.csv` is made of.", (
            CASE_DOC,
            Column(("group", "control", "stratum"), "the group, the control and one of its attributes"),
            Column("n_valid", "valid decisions in the stratum"),
            Column("share", "the stratum's share of the weight of the strata used"),
            Column("dpd", "the group's DPD within the stratum (what Fairlearn's `MetricFrame(control_features=…)` "
                          "gives)"),
            Column("used", "every attribute of the group has a valid decision in the stratum, so it enters "
                           "`dpd_within`")))),
    build=build, inputs=INPUTS, options=(CONTROL,), needs=("decisions",), console=(CONSOLE,), section=report_section,
    position=31,
    leads_to=leads_to, figures=(Figure("within", _figure, "Forest plot per case: each group's DPD within the strata of "
                                                         "the control group, with its 95 % interval and verdict, "
                                                         "beside its raw population-weighted DPD."),)))
