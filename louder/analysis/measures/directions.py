"""The literature's predicted directions against the run's rates (section 5.5, Table 3):
``directions.csv`` (the statistic and the predictions file: ``louder.analysis.stats.directions``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from louder.analysis.engine.registry import Column, Measure, Option, Plot, Table, register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.directions import directions, load_predictions

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


def _figure(a):
    from louder.analysis.report import draw as figures

    return figures.directions_figure(a.tables["directions"])


FIGURES = (Plot("directions", _figure, "Forest plot: for each literature prediction, the difference in target rate "
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
