"""Would the policy conclusion survive the model's bias? (issue 33.3; ``louder analyze RUN --adjust
parity | observed``; docs/tutorials/population-what-if.md): ``sensitivity.csv`` — each policy
variant's effect under the raw agents and agents calibrated to parity (and to observed rates), with
intervals, and whether the conclusion holds under all of them. Computed from the stored answers of a
single-round run (``louder.analysis.stats.sensitivity``); a network run gets a note instead."""

from __future__ import annotations

import html
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.calibration import observed_rates
from louder.analysis.stats.sensitivity import CALIBRATIONS, sensitivity

COLORS = {"raw": P.GREY, "parity": P.BLUE, "observed": P.GREEN}


# every policy variant as written (the effects compare them); every round, to tell a network run
INPUTS = (Input("decisions", whole=("variant", "round"), doc="the agents' decisions under every policy variant"),)
OPTIONS = (Option("calibration", str, None, "parity | observed: each variant's effect under agents calibrated to "
                  "the pooled rate (or to `observed`), beside the raw agents", choices=CALIBRATIONS, flag="--adjust"),
           Option("observed", Path, None, "observed rates per scenario, group and attribute (docs/voices.md), for "
                  "calibration=observed", flag="--observed"))


def _check(options: dict) -> str | None:
    if options["calibration"] == "observed" and options["observed"] is None:
        return ("calibration=observed (--adjust observed) needs observed rates: --observed FILE (per scenario, group "
                "and attribute; docs/voices.md)")
    return None


def build(a) -> dict[str, pd.DataFrame]:
    calibration = a.options.calibration
    if calibration is None:
        return {}
    d = a.decisions
    if "round" in d.columns:
        a.missing.append("sensitivity: a network run's agents hear each other, so calibrated agents change their "
                         "neighbours' decisions too — fit offsets with `louder calibrate RUN --to parity`, run again "
                         "with `louder run --calibration RUN/calibration.yaml` and compare the two runs' variant tables")
        return {}
    if "variant" not in d or d["variant"].nunique() < 2:
        a.missing.append("sensitivity: --adjust compares policy variants; the run has one (add `--variant base "
                         "--variant mandatory` with a scenario that has variants)")
        return {}
    rates = observed_rates(a.options.observed) if calibration == "observed" else None
    return {"sensitivity": sensitivity(d, calibration, rates, B=a.bootstrap, seed=a.seed)}



def figure(case: pd.DataFrame):
    """One case and variant: each effect (overall, then per attribute) under each set of agents, with its
    interval; dashed line at 0."""
    from matplotlib.figure import Figure as MplFigure

    effects = list(dict.fromkeys(zip(case["group"], case["attribute"])))
    sets = list(dict.fromkeys(case["agents"]))
    fig = MplFigure(figsize=(7.0, 0.38 * len(effects) * len(sets) + 1.4), layout="constrained")
    ax = fig.subplots()
    y0 = np.arange(len(effects), 0, -1) * (len(sets) + 1)
    for j, s in enumerate(sets):
        rows = case[case["agents"] == s].set_index(["group", "attribute"]).reindex(effects)
        y = y0 - j
        ok = rows["effect"].notna().to_numpy()
        ax.errorbar(rows["effect"][ok], y[ok], xerr=[(rows["effect"] - rows["ci_low"])[ok],
                                                     (rows["ci_high"] - rows["effect"])[ok]],
                    fmt="o", color=COLORS.get(s, P.BLACK), capsize=2, ms=4, label=s)
    ax.axvline(0, color=P.GREY, ls="--", lw=1)
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


def report_section(a) -> str:
    """The report's section, or "" without sensitivity.csv."""
    t = a.tables.get("sensitivity")
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
        parts.append(a.figure("effects", case))
    parts += ["<h3>Per variant, effect and agents</h3>", table(t, scroll=True)]
    return section("Policy sensitivity", *parts)


# --- the console ---------------------------------------------------------------------------------------

CONSOLE = Console(
    "sensitivity", "Policy sensitivity: each variant's effect on the target rate under raw and calibrated agents "
                   "[95 % CI] (overall, and every effect whose conclusion depends on the agents; all rows in "
                   "sensitivity.csv)", (
        *map(key, ("model", "condition", "scenario")),
        Cell("variant", "variant", priority=1),
        Cell("group", "group", priority=1),
        Cell("attribute", "attribute", priority=1),
        Cell("agents", "agents", priority=1),
        Cell("effect [95 % CI]", lambda r: f"{r['effect']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
             number=True, priority=1, name="effect"),
        Cell("verdict", "verdict", priority=1)),
    position=53,
    source=lambda a: None if a.tables.get("sensitivity") is None else a.tables["sensitivity"].pipe(
        lambda t: t[(t["group"] == "(all)") | (t["verdict"] != "holds")]))


register(Measure(
    "sensitivity", "each policy variant's effect under raw and calibrated agents: does the conclusion depend on the "
                   "model's bias?",
    tables=(Table("sensitivity", "`louder analyze RUN --adjust parity | observed` on a single-round run with policy "
                                 "variants ([Would the conclusion survive the model's bias?](../tutorials/"
                                 "population-what-if.md#would-the-conclusion-survive-the-models-bias)): one row per "
                                 "model × condition × scenario × variant other than the base × set of agents × effect "
                                 "(overall, and per attribute of every group), computed from the stored answers with "
                                 "no new model call.", (
        Column(("model", "condition", "scenario"), "the case"),
        Column(("variant", "base"), "the variant and the variant it is compared with (`base`, else the run's first)"),
        Column("agents", "`raw` (the model's agents), `parity` (calibrated so that every attribute has the pooled rate "
                         "under the base variant) or `observed` (calibrated to the `--observed` file's rates)"),
        Column(("group", "attribute"), "the effect: `(all)` overall, else one attribute of one group"),
        Column(("rate_base", "rate_variant"), "the target rate under the base variant and under the variant"),
        Column(("effect", "ci_low", "ci_high"), "`rate_variant` − `rate_base`, with a bootstrap interval (agents "
                                                "resampled, offsets refitted in each resample; at most 2,000 "
                                                "resamples)"),
        Column("verdict", "`holds` when the effect's conclusion (raises / lowers / no clear effect) is the same under "
                          "every set of agents, else `depends on the model's bias`"))),),
    build=build, inputs=INPUTS, options=OPTIONS, check=_check, needs=("decisions",), console=(CONSOLE,),
    section=report_section, position=143,
    figures=(Figure("effects", lambda a, case: figure(case), lambda a, case: (
        f"{case.iloc[0]['scenario']}: each policy variant's effect with its 95 % interval under the raw and the "
        "calibrated agents.")),)))
