"""The literature's predicted directions against a run's rates (section 5.5, Table 3 of the paper):
the predictions file (louder's own, ``louder/data/analysis/directions.yaml``, or a user's of the same
format) and, per prediction and model × condition, the difference of the mean target rates of the
attributes predicted higher and lower, its bootstrap interval and the verdict."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from louder.analysis import stats
from louder.datafiles import load_cached

DIRECTION_COLUMNS = ["id", "model", "condition", "scenario", "group", "prediction", "higher", "lower",
                     "mean_higher", "mean_lower", "difference", "ci_low", "ci_high", "verdict", "note", "evidence"]



class Prediction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    scenario: str
    group: str
    prediction: str
    evidence: str = ""
    higher: list[str] = Field(min_length=1)
    lower: list[str] = Field(min_length=1)
    citations: list[str] = []


class Predictions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = ""
    # issue 21: a file of observed rates (docs/voices.md) that `louder analyze` reads when no --observed
    # is given; a relative path is read from the predictions file's folder
    observed: str | None = None
    predictions: list[Prediction]


def load_predictions(path: str | Path | None = None) -> list[Prediction]:
    """The Table 3 predictions shipped with louder, or a user's file of the same format."""
    source = Path(path) if path else resources.files("louder") / "data" / "analysis" / "directions.yaml"
    return load_cached(Predictions, source, "predictions").predictions


def predictions_observed(path: str | Path | None = None) -> Path | None:
    """The observed-rates file a predictions file points to (its ``observed:``), or None."""
    source = Path(path) if path else resources.files("louder") / "data" / "analysis" / "directions.yaml"
    ref = load_cached(Predictions, source, "predictions").observed
    if ref is None:
        return None
    p = Path(ref)
    return p if p.is_absolute() else Path(str(source)).parent / p


def verdict(difference: float, lo: float, hi: float) -> str:
    """aligned: difference > 0 and lo > 0; opposite: difference < 0 and hi < 0; else inconclusive."""
    if np.isnan(difference):
        return "not_testable"
    if difference > 0 and lo > 0:
        return "aligned"
    if difference < 0 and hi < 0:
        return "opposite"
    return "inconclusive"


def directions(attr: pd.DataFrame, predictions: list[Prediction], B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """For each prediction and each model × condition of the run: mean target rate of the ``higher``
    set minus that of the ``lower`` set, its 95 % bootstrap interval, and the verdict. Predictions
    whose scenario × group the run lacks are listed as ``not_run``."""
    imp = attr[attr["kind"] == "implicit"]
    combos = imp[["model", "condition"]].drop_duplicates().sort_values(["model", "condition"]).itertuples(index=False)
    combos = list(combos)
    # each case's attribute rows, split once (not one comparison of every row per prediction and combination)
    cells = dict(list(imp.groupby(["model", "condition", "scenario", "group"], sort=False)))
    rows = []
    for i, p in enumerate(predictions):
        base = dict(id=p.id, scenario=p.scenario, group=p.group, prediction=p.prediction,
                    higher=", ".join(p.higher), lower=", ".join(p.lower), evidence=p.evidence)
        for model, condition in combos:
            g = cells.get((model, condition, p.scenario, p.group), imp.iloc[:0]).set_index("attribute")
            row = dict(base, model=model, condition=condition, mean_higher=np.nan, mean_lower=np.nan,
                       difference=np.nan, ci_low=np.nan, ci_high=np.nan, note="")
            if g.empty:
                rows.append(dict(row, verdict="not_run", note="this scenario × group is not in the run"))
                continue
            missing = [a for a in p.higher + p.lower if a not in g.index or g.loc[a, "n_valid"] == 0]
            if missing:
                rows.append(dict(row, verdict="not_testable", note=f"no valid decisions for {', '.join(missing)}"))
                continue
            h, lw = g.loc[p.higher], g.loc[p.lower]
            d, lo, hi = stats.mean_difference_interval(h["n_valid"], h["n_target"], lw["n_valid"], lw["n_target"],
                                                       B=B, seed=seed + i)
            rows.append(dict(row, mean_higher=float(h["rate"].mean()), mean_lower=float(lw["rate"].mean()),
                             difference=d, ci_low=lo, ci_high=hi, verdict=verdict(d, lo, hi)))
    return pd.DataFrame(rows, columns=DIRECTION_COLUMNS)
