"""The persona-condition ablation (section 5.4): each condition's DPD against the contextualized one
(``ablation.csv``; the statistic: ``louder.analysis.stats.contrast.ablation``)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.registry import Column, Input, Measure, Plot, Table, register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.contrast import ablation


def build(a) -> dict[str, pd.DataFrame]:
    if a.decisions is not None and a.decisions["condition"].nunique() < 2:
        a.missing.append("ablation: the run has one persona condition only — add `--condition non_contextualized "
                         "--condition no_persona` to compare conditions (section 5.4)")
    attr = a.tables["attributes"]
    return {"ablation": ablation(a.tables["cases"], attr[attr["kind"] == "implicit"], B=a.bootstrap, seed=a.seed)}


def ablation_section(a) -> str:
    return section("Persona-condition ablation (cf. Fig. 5)",
                   note("DPD per case under each persona condition; diff_vs_contextualized = DPD(contextualized) − "
                        "DPD(condition) with a 95 % bootstrap interval."),
                   a.figure("conditions"), table(a.tables["ablation"], scroll=True))


def _figure(a):
    from louder.analysis.report import draw as figures

    return figures.ablation_figure(a.tables["ablation"])


FIGURES = (Plot("conditions", _figure, lambda a: (
    f"Forest plot of the DPD of each case under each of the {a.tables['ablation']['condition'].nunique()} persona "
    "conditions, each with its 95 % interval; significant ones (Holm p < 0.05) marked ✱.")),)


register(Measure(
    "ablation", "each persona condition's DPD against the contextualized one (section 5.4)",
    tables=(Table("ablation", "DPD per case under each persona condition (section 5.4).", (
        Column(("model", "scenario", "group", "condition"), "the case and condition"),
        Column(("dpd", "threshold", "significant", "ci_low", "ci_high"), "as in `cases.csv`"),
        Column("diff_vs_contextualized", "DPD(contextualized) − DPD(this condition); > 0: the contextualized persona "
                                         "revealed more"),
        Column(("diff_ci_low", "diff_ci_high"), "its bootstrap interval"))),),
    build=build, inputs=(Input("decisions"),), after=("cases", "attributes"), section=ablation_section, position=80,
    figures=FIGURES))
