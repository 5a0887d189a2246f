"""The persona-condition ablation (section 5.4): each condition's DPD against the contextualized one
(``ablation.csv``; the statistic: ``louder.analysis.stats.contrast.ablation``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.contrast import ablation

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

# a colour per persona condition (others: the palette's next series colours)
CONDITION_COLORS = {"contextualized": P.VERMILLION, "non_contextualized": P.ORANGE, "no_persona": P.SKY}


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


def ablation_figure(ablation: pd.DataFrame) -> MplFigure | None:
    """A forest plot per model: each case's DPD under each persona condition with its 95 % interval
    (✱ = significant: Holm p < 0.05)."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.lines import Line2D

    from louder.analysis.report.draw import MARK, interval, plain

    if ablation.empty or ablation["dpd"].isna().all():
        return None
    models = sorted(ablation["model"].unique())
    conditions = [c for c in CONDITION_COLORS if c in set(ablation["condition"])] + sorted(
        set(ablation["condition"]) - set(CONDITION_COLORS))
    colors = {c: CONDITION_COLORS.get(c, P.series(i + 3)) for i, c in enumerate(conditions)}
    keys = sorted(set(map(tuple, ablation[["scenario", "group"]].to_numpy())))
    rows = len(keys) * (len(conditions) + 0.6)
    fig = MplFigure(figsize=(7.5, (0.22 * rows + 1.0) * len(models) + 0.4), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    for ax, model in zip(axes, models):
        y, ticks, labels = 0.0, [], []
        for k in keys:
            sub = ablation[(ablation["model"] == model) & (ablation["scenario"] == k[0]) & (ablation["group"] == k[1])]
            for c in conditions:
                r = sub[sub["condition"] == c]
                y -= 1
                if r.empty or pd.isna(r["dpd"].iloc[0]):
                    continue
                r = r.iloc[0]
                interval(ax, r["dpd"], y, r["ci_low"], r["ci_high"], color=colors[c], ms=4,
                         label=plain(c) if c not in labels else None)
                if bool(r["significant"]):
                    ax.text(1.035, y, MARK, ha="center", va="center", fontsize=8, color=P.SIGNIFICANT)
            ticks.append(y + (len(conditions) - 1) / 2)
            labels.append(f"{plain(k[0])} × {plain(k[1])}")
            y -= 0.6
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_xlim(-0.02, 1.07)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(f"{model}: DPD per persona condition, 95 % interval (✱ Holm p < 0.05)", fontsize=9, loc="left")
    handles = [Line2D([], [], color=colors[c], marker="o", label=plain(c)) for c in conditions]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    axes[-1].set_xlabel("DPD")
    return fig


def _figure(a):
    return ablation_figure(a.tables["ablation"])


FIGURES = (Figure("conditions", _figure, lambda a: (
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
