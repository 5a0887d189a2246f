"""The literature's predicted directions against the run's rates (section 5.5, Table 3):
``directions.csv`` (the statistic and the predictions file: ``louder.analysis.stats.directions``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.directions import directions, load_predictions

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

PREDICTIONS = Option("predictions", Path, None, "a predictions file of your own (the format of "
                     "louder/data/analysis/directions.yaml; default: the paper's Table 3)", flag="--predictions")


def build(a) -> dict[str, pd.DataFrame]:
    attr = a.tables["attributes"]
    return {"directions": directions(attr[attr["kind"] == "implicit"], load_predictions(a.options.predictions),
                                     B=a.bootstrap, seed=a.seed)}


def directions_section(a) -> str:
    d = a.tables["directions"]
    return section("Literature directions (Table 3)",
                   note("aligned: the predicted direction with a 95 % interval excluding 0; opposite: the reverse "
                        "direction, interval excluding 0; inconclusive: the interval includes 0."),
                   a.figure("directions"), table(d.drop(columns=["evidence"]), scroll=True))


def directions_figure(directions: pd.DataFrame) -> MplFigure | None:
    """Forest plot: each prediction's rate difference (higher − lower set) with its 95 % interval."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import interval

    data = directions[directions["difference"].notna()]
    if data.empty:
        return None
    fig = MplFigure(figsize=(9, 0.4 * len(data) + 1.4), layout="constrained")
    ax = fig.subplots()
    colors = {"aligned": P.GREEN, "opposite": P.VERMILLION, "inconclusive": P.GREY}
    ys = np.arange(len(data))[::-1]
    for y, (_, r) in zip(ys, data.iterrows()):
        interval(ax, r["difference"], y, r["ci_low"], r["ci_high"], color=colors.get(r["verdict"], P.GREY))
    ax.axvline(0, color=P.BLACK, lw=0.8)
    ax.set_yticks(ys, [f"{r['id']} [{r['model']}, {r['condition']}]" for _, r in data.iterrows()], fontsize=7)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("mean target rate of the higher set − of the lower set (95 % interval)")
    ax.set_title("Literature directions: green aligned, vermillion opposite, grey inconclusive", fontsize=9)
    return fig


def _figure(a):
    return directions_figure(a.tables["directions"])


FIGURES = (Figure("directions", _figure, "Forest plot: for each literature prediction, the difference in target rate "
                                       "between the predicted-higher and predicted-lower attributes with its 95 % "
                                       "interval, coloured by verdict (aligned, opposite, inconclusive)."),)

register(Measure(
    "directions", "the literature's predicted directions against the run's rates (Table 3)",
    tables=(Table("directions", "Literature directions (Table 3): one row per prediction and case.", (
        Column(("id", "prediction"), "the prediction (`louder/data/analysis/directions.yaml`; `louder analyze "
                                     "--predictions FILE` for your own)"),
        Column(("model", "condition", "scenario", "group"), "the case"),
        Column(("higher", "lower"), "the attributes predicted higher and lower"),
        Column(("mean_higher", "mean_lower", "difference"), "mean target rates of each set and their difference"),
        Column(("ci_low", "ci_high"), "the difference's 95 % bootstrap interval"),
        Column("verdict", "`aligned`, `opposite`, `inconclusive`, `not_run`, `not_testable`"),
        Column("note", "why a prediction could not be tested"),
        Column("evidence", "the literature behind the prediction"))),),
    build=build, options=(PREDICTIONS,), after=("attributes",), section=directions_section, position=90,
    figures=FIGURES))
