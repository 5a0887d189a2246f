"""Does a prompt intervention change the disparity? (issue 33; docs/how-to/test-a-mitigation.md)

``interventions.csv``: per case and intervention, the DPD under ``none`` and under the intervention,
the change with its paired-bootstrap interval and the paired permutation test, the side effects (the
overall target-rate shift, the share of agents whose decision changed) and a ``verdict`` —
``reduces``, ``increases``, ``no change`` or ``underpowered``. The statistics are
``louder.analysis.adjustment.intervention_table``'s (docs/statistics.md); this module picks the
rows it reads (the measure, its report section and console table: ``louder.analysis.measures.interventions``).

Every other table of the analysis reads the decisions under ``none`` only (``reference_view``): each
agent answers once per intervention, so pooling them would count one agent's answers as several
people."""

from __future__ import annotations

import numpy as np
import pandas as pd

from louder.analysis.adjustment import INTERVENTION_COLUMNS, intervention_table

COLUMN = "intervention"
NONE = "none"
KEYS = ["model", "condition", "scenario", "group"]


def levels_of(decisions: pd.DataFrame | None) -> list[str]:
    """The interventions of a run, ``none`` first (the reference), then in order of appearance."""
    if decisions is None or COLUMN not in decisions or decisions.empty:
        return []
    seen = list(decisions[COLUMN].fillna(NONE).astype(str).unique())  # order of appearance, without a Python loop
    return ([NONE] if NONE in seen else []) + [x for x in seen if x != NONE]


def varies(decisions: pd.DataFrame | None) -> bool:
    """Whether the run decided under more than one intervention."""
    return len(levels_of(decisions)) > 1


def reference_view(decisions: pd.DataFrame | None) -> pd.DataFrame | None:
    """The decisions the other tables read: those under ``none`` (else the run's first intervention)."""
    if not varies(decisions):
        return decisions
    ref = levels_of(decisions)[0]
    return decisions[decisions[COLUMN].fillna(NONE).astype(str) == ref].reset_index(drop=True)


# interventions.csv: the statistics' columns, then the explicit side effect, then the verdict
COLUMNS = [*INTERVENTION_COLUMNS[:-1], "explicit_dpd_none", "explicit_dpd", "verdict"]


def explicit_dpds(probes: pd.DataFrame | None, attributes: dict[str, list[str]]) -> pd.DataFrame:
    """The explicit DPD (largest − smallest share of valid answers naming an attribute, cases.csv's
    explicit ``dpd``) per model × scenario × group × intervention of the explicit probes."""
    from louder.analysis.measures.attributes import explicit_attribute_table

    cols = ["model", "scenario", "group", COLUMN, "explicit_dpd"]
    if probes is None or probes.empty:
        return pd.DataFrame(columns=cols)
    p = probes.assign(**{COLUMN: probes[COLUMN].fillna(NONE).astype(str) if COLUMN in probes else NONE})
    rows = []
    for iv, g in p.groupby(COLUMN, sort=True):
        a = explicit_attribute_table(g, attributes)
        for key, r in a.groupby(["model", "scenario", "group"]):
            rates = r["rate"].dropna()
            rows.append(dict(zip(cols, (*key, iv, float(rates.max() - rates.min()) if len(rates) else np.nan))))
    return pd.DataFrame(rows, columns=cols)


def interventions_table(decisions: pd.DataFrame, B: int = 2000, seed: int = 0, probes: pd.DataFrame | None = None,
                        attributes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """``interventions.csv`` of a run's decisions (every intervention; one wording, one reasoning level and
    round 0 already chosen by the caller, population runs once per group of the population), with the
    explicit DPD under none and under the intervention where the explicit probes ran under it. A run
    without ``none`` has no baseline: no rows."""
    d = decisions.assign(**{COLUMN: decisions[COLUMN].fillna(NONE).astype(str)})
    if NONE not in set(d[COLUMN]):
        return pd.DataFrame(columns=COLUMNS)
    t = intervention_table(d, none=NONE, B=B, seed=seed)
    ex = explicit_dpds(probes, attributes or {})
    keys = ["model", "scenario", "group"]
    none = ex[ex[COLUMN] == NONE].drop(columns=COLUMN).rename(columns={"explicit_dpd": "explicit_dpd_none"})
    t = t.merge(none, on=keys, how="left").merge(ex, on=[*keys, COLUMN], how="left")
    return t[COLUMNS]
