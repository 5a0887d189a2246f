"""``anchored.csv`` (issue 34; docs/how-to/anchor-to-humans.md): a run's agents aligned with a small
human study of the same scenarios by prediction-powered inference (``louder.analysis.anchoring``).

From the run's tables: the respondents of the study (``humans.parquet``, ``louder.simulation.humans``),
their paired agents (rows of ``decisions.parquet`` with a ``respondent``) and the usual agents (the
others). Per case (model × condition × scenario × group) and attribute:

- Y_i: respondent i chose the scenario's target (0/1), with its survey weight w_i;
- Ŷ_i: its paired agent's prediction — the agent chose the target (0/1), or in score mode its
  probability of the target (``p_target``);
- Ŷ^u_j: the usual agents' predictions (valid answers only).

A paired agent without a valid answer (invalid, refused, error) cannot be dropped — whether an agent
answers may depend on the respondent, and dropping would bias the human sample — so its respondent keeps
their label and gets the mean of the attribute's valid usual predictions as Ŷ_i. The usual agents keep
their valid answers only, so both predictions have the same expectation, E[Ŷ_i] = E[Ŷ^u | valid],
which is what PPI's validity needs; every paired answer is counted by status (``paired_<status>``).
``agreement`` is computed on the respondents whose agent answered validly.
"""

from __future__ import annotations

import pandas as pd

from louder.analysis.anchoring import DPD_COLUMNS, RATE_COLUMNS, anchored_table
from louder.types import CASE_KEYS, STATUSES

ACCOUNTING = [f"paired_{s}" for s in STATUSES]
COLUMNS = [*CASE_KEYS, *RATE_COLUMNS, *ACCOUNTING, *DPD_COLUMNS]


def _prediction(rows: pd.DataFrame) -> pd.Series:
    """The agents' prediction: p_target in score mode (every valid answer has one), else target as 0/1."""
    valid = rows[rows["status"] == "valid"]
    if "p_target" in rows.columns and len(valid) and valid["p_target"].notna().all():
        return rows["p_target"].astype("Float64").astype(float)
    return rows["target"].astype("Float64").astype(float)


def anchored(decisions: pd.DataFrame, humans: pd.DataFrame, B: int = 2000, seed: int = 0,
             level: float = 0.95) -> pd.DataFrame:
    """``anchored.csv``: per case and attribute the humans-only, agents-only and PPI rates with their
    intervals, λ, the effective sample size and its gain, the paired agents' agreement and accounting,
    and the case's DPDs (humans, agents, PPI with its interval) and magnitude ratio (``COLUMNS``;
    ``louder.analysis.anchoring`` has the formulas).

    ``decisions``: the case view of decisions.parquet with its ``respondent`` column; ``humans``: the
    study in long form (``louder.simulation.humans.COLUMNS``). Cases without paired agents (another
    scenario, a policy variant) are left out."""
    if "respondent" not in decisions.columns:
        return pd.DataFrame(columns=COLUMNS)
    d = decisions.assign(prediction=_prediction(decisions))
    usual, paired = d[d["respondent"].isna()], d[d["respondent"].notna()]
    valid = usual[usual["status"] == "valid"]
    mean = valid.groupby([*CASE_KEYS, "attribute"])["prediction"].mean().rename("agents_mean").reset_index()
    h = humans.rename(columns={"target": "human", "attribute": "human_attribute"})
    pairs = paired.merge(h[["respondent", "scenario", "group", "human_attribute", "human", "weight"]],
                         on=["respondent", "scenario", "group"], how="inner", validate="many_to_one")
    if (pairs["attribute"] != pairs["human_attribute"]).any():  # the agent was made from the respondent's row
        raise ValueError("paired agents whose attribute is not their respondent's")
    pairs = pairs.merge(mean, on=[*CASE_KEYS, "attribute"], how="left")
    ok = pairs["status"] == "valid"
    pairs["prediction"] = pairs["prediction"].where(ok, pairs["agents_mean"])
    human_rows = pairs.assign(target=pairs["human"].astype(float))[
        [*CASE_KEYS, "attribute", "target", "prediction", "weight"]]  # (no prediction only without usual agents:
    # then the attribute has its counts and no estimate)
    table = anchored_table(human_rows, valid[[*CASE_KEYS, "attribute", "prediction"]], keys=CASE_KEYS, B=B,
                           seed=seed, level=level)
    by = [*CASE_KEYS, "attribute"]
    counts = pd.crosstab([pairs[k] for k in by], pairs["status"]).reindex(columns=list(STATUSES), fill_value=0)
    counts = counts.rename(columns=lambda s: f"paired_{s}").reset_index()
    agree = pairs[ok].assign(hit=lambda x: x["weight"] * (x["human"].astype(float) * x["prediction"] +
                                                         (1 - x["human"].astype(float)) * (1 - x["prediction"])))
    agreement = (agree.groupby(by)["hit"].sum() / agree.groupby(by)["weight"].sum()).rename("agreement").reset_index()
    table = table.drop(columns="agreement").merge(agreement, on=by, how="left").merge(counts, on=by, how="left")
    table[ACCOUNTING] = table[ACCOUNTING].fillna(0).astype(int)
    return table[COLUMNS].sort_values(by, ignore_index=True)
