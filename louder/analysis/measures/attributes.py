"""The target-decision rate of every attribute of every case (implicit: the agents; explicit: the
probes), and the rate of every choice: ``attributes.csv`` and ``choices.csv``.

Only ``valid`` answers enter rates; every other status is counted beside them (the grouped-rate
engine, ``louder.analysis.stats.rates``). A case is model × condition × scenario × group (explicit probes
have condition ``explicit``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.choices import choice_rates
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS
from louder.analysis.stats.rates import ATTRIBUTE_COLUMNS, attribute_table, explicit_attribute_table, with_choice_rates

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure


def build(a) -> dict[str, pd.DataFrame]:
    frames = []
    if a.decisions is not None:
        choices = choice_rates(a.decisions)
        frames.append(with_choice_rates(attribute_table(a.decisions, a.groups), choices))
    else:
        choices = choice_rates(None)
    if a.probes is not None:
        frames.append(explicit_attribute_table(a.probes, a.groups))
    attributes = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(
        len(f) for f in frames) else pd.DataFrame(columns=ATTRIBUTE_COLUMNS)
    return {"attributes": attributes, "choices": choices}


def _wilson(x: pd.Series, n: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Wilson 95 % interval of each rate x/n (``stats.wilson``; NaN where n is 0 or missing)."""
    x, n = x.fillna(0).to_numpy(dtype=float), n.fillna(0).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return tuple(stats.wilson(x / n, n))


def _rates_table(attributes: pd.DataFrame) -> pd.DataFrame:
    out = attributes[["kind", *CASE_KEYS, "attribute", "rate", "n_target", *COUNT_COLUMNS]].copy()
    lo, hi = _wilson(out["n_target"], out["n_valid"])
    out.insert(out.columns.get_loc("rate") + 1, "rate [Wilson 95 % CI]",
               ["–" if pd.isna(r) else f"{r:.3f} [{a:.3f}, {b:.3f}]" for r, a, b in zip(out["rate"], lo, hi)])
    return out.drop(columns="rate")


def report_section(a) -> str:
    t = a.tables
    out = section("Target-decision rate per attribute (cf. Fig. 4)",
                  note("The agents' target-decision rate per attribute with its Wilson 95 % interval (the explicit "
                       "probe's share of answers naming the attribute in the table too); n = valid answers."),
                  a.figure("rates"), table(_rates_table(t["attributes"]), scroll=True,
                                           key=["kind", *CASE_KEYS, "attribute", "rate [Wilson 95 % CI]", "n_valid"]))
    choices = t.get("choices")
    if choices is None or choices.empty:
        return out
    # the rate of every choice per attribute (issue 14): DPD only compares the target's rate
    wide = choices.pivot_table(index=[*ATTRIBUTE_KEYS, "n_valid"], columns="choice", values="rate",
                               fill_value=0.0).reset_index()
    wide.columns.name = None
    return out + "\n" + section(
        "Rate of every choice per attribute",
        note("Share of each choice among an attribute's valid decisions. The cases table gives p_independence: a "
             "test that choice is independent of attribute over all choices (Pearson χ² when every expected count "
             "is at least 5, else a Monte-Carlo permutation test), beside the target-only DPD."),
        a.figure("choices"), table(wide, scroll=True))


def rates_figure(attributes: pd.DataFrame, condition: str = "contextualized") -> MplFigure | None:
    """A panel per scenario × group: the target-decision rate of each attribute with its Wilson 95 %
    interval and its n, one colour per model (the agents, persona condition ``condition`` — else the
    first the run has)."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import interval, plain

    data = attributes[attributes["kind"] == "implicit"]
    if data.empty:
        return None
    if condition not in set(data["condition"]):
        condition = sorted(data["condition"].unique())[0]
    data = data[data["condition"] == condition]
    panels = sorted(set(map(tuple, data[["scenario", "group"]].to_numpy())))
    models = sorted(data["model"].unique())
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    tallest = max(data[(data["scenario"] == s) & (data["group"] == g)]["attribute"].nunique() for s, g in panels)
    fig = MplFigure(figsize=(3.4 * ncol + 0.4, nrow * (0.22 * tallest * len(models) + 1.0) + 0.5), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    step = 0.8 / len(models)
    for ax, (s, g) in zip(axes.flat, panels):
        sub = data[(data["scenario"] == s) & (data["group"] == g)]
        attrs = sorted(sub["attribute"].unique())
        for m_i, m in enumerate(models):
            ms = sub[sub["model"] == m].set_index("attribute").reindex(attrs)
            lo, hi = _wilson(ms["n_target"], ms["n_valid"])
            for a_i, a in enumerate(attrs):
                if not ms.loc[a, "n_valid"] > 0:
                    continue
                y = -a_i - (m_i - (len(models) - 1) / 2) * step
                interval(ax, ms.loc[a, "rate"], y, lo[a_i], hi[a_i], color=P.series(m_i), ms=4,
                         label=m if a_i == 0 else None)
                ax.text(1.02, y, f"n={int(ms.loc[a, 'n_valid'])}", fontsize=6, va="center", color=P.GREY,
                        transform=ax.get_yaxis_transform())
        ax.set_yticks(-np.arange(len(attrs)), attrs, fontsize=7)
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-len(attrs) + 0.5, 0.5)
        ax.set_title(f"{plain(s)} × {plain(g)}", fontsize=8, loc="left")
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
    for ax in axes[-1]:
        if ax.axison:
            ax.set_xlabel("target rate (Wilson 95 % interval)", fontsize=7)
    if len(models) > 1:
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncol=len(models),
                   fontsize=7, frameon=False)
    fig.suptitle(f"Target-decision rate per attribute ({plain(condition)} personas)", fontsize=9)
    return fig


def choices_figure(choices: pd.DataFrame, most: int = 12) -> MplFigure | None:
    """A panel per case (the first ``most``): each attribute's valid decisions split by choice, as stacked
    bars of shares (a three-choice scenario is not reduced to target vs the rest)."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import plain

    if choices is None or choices.empty:
        return None
    cases = sorted(set(map(tuple, choices[["model", "condition", "scenario", "group"]].to_numpy())))[:most]
    labels = list(dict.fromkeys(choices.sort_values(["scenario", "choice"])["choice"]))
    colors = {c: P.series(i) for i, c in enumerate(labels)}
    ncol = min(3, len(cases))
    nrow = -(-len(cases) // ncol)
    tallest = max(choices[(choices["scenario"] == k[2]) & (choices["group"] == k[3])]["attribute"].nunique()
                  for k in cases)
    fig = MplFigure(figsize=(3.4 * ncol + 0.4, nrow * (0.22 * tallest + 1.1) + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(cases):]:
        ax.set_axis_off()
    used: dict[str, None] = {}
    for ax, k in zip(axes.flat, cases):
        sub = choices[(choices["model"] == k[0]) & (choices["condition"] == k[1]) & (choices["scenario"] == k[2])
                      & (choices["group"] == k[3])]
        wide = sub.pivot_table(index="attribute", columns="choice", values="rate", fill_value=0.0)
        attrs = list(wide.index)
        left = np.zeros(len(attrs))
        for c in [c for c in labels if c in wide.columns]:
            ax.barh(-np.arange(len(attrs)), wide[c].to_numpy(), left=left, color=colors[c], height=0.7,
                    label=c if c not in used else None)
            used[c] = None
            left += wide[c].to_numpy()
        ax.set_yticks(-np.arange(len(attrs)), attrs, fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_title(f"{plain(k[2])} × {plain(k[3])} · {plain(k[1])}", fontsize=8, loc="left")
    fig.legend(loc="outside lower center", ncol=min(6, len(used)), fontsize=7, frameon=False)
    fig.suptitle("Share of each choice among the valid decisions" +
                 (f" (the first {most} cases)" if len(set(map(tuple, choices[["model", "condition", "scenario",
                                                                              "group"]].to_numpy()))) > most else ""),
                 fontsize=9)
    return fig


def _rates_figure(a):
    return rates_figure(a.tables["attributes"])


def _choices_figure(a):
    return choices_figure(a.tables["choices"])


FIGURES = (
    Figure("rates", _rates_figure, lambda a: (
        "The target-decision rate of each attribute with its Wilson 95 % interval and its number of valid answers, "
        "one panel per scenario and group, one colour per model.")),
    Figure("choices", _choices_figure, "Stacked bars: the share of each choice among each attribute's valid decisions, "
                                     "one panel per case."))


CASE_COLUMNS_DOC = (Column(("model", "condition", "scenario", "group"), "the case: model × persona condition × "
                                                                        "scenario × group (explicit: condition "
                                                                        "`explicit`)"),)

register(Measure(
    "attributes", "the target-decision rate of every attribute (agents and explicit probes), and every choice's rate",
    tables=(
        Table("attributes", "One row per case × attribute.", (
            Column("kind", "`implicit` (the agents) or `explicit` (the probes)"),
            *CASE_COLUMNS_DOC,
            Column("attribute", "the attribute"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "answers by status"),
            Column("n_target", "valid answers choosing the target (explicit: naming the attribute)"),
            Column("rate", "`n_target` / `n_valid`"),
            Column("choice_rates", "implicit: JSON object choice → rate"),
            Column("n_unknown", 'explicit: valid answers of "Unknown"'))),
        Table("choices", "One row per case × attribute × choice: a three-choice scenario is not reduced to target "
                         "vs the rest.", (
            *CASE_COLUMNS_DOC,
            Column("attribute", "the attribute"),
            Column("choice", "the choice label"),
            Column("n", "valid decisions for the choice"),
            Column("n_valid", "valid decisions of the attribute"),
            Column("rate", "`n` / `n_valid`")))),
    build=build, inputs=(Input("decisions", doc="the agents' decisions, the per-case selection"),
                         Input("probes", doc="the explicit probe's answers (under no intervention)")),
    section=report_section, position=70, figures=FIGURES))
