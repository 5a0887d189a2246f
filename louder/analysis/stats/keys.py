"""The keys of the analysis, in one place: what identifies a case (and an attribute, a population
case, a network case), which answers count (the valid ones), and how a policy variant is keyed.

Every measure and statistic imports these instead of writing them out: a case of the per-case
tables is model × condition × scenario × group (``CASE_KEYS``, from ``louder.types``: the Parquet
files carry the same columns); only ``valid`` answers enter rates, every other status is counted
beside them (``louder.status``, ``louder.analysis.stats.rates``).
"""

from __future__ import annotations

import pandas as pd

from louder.types import CASE_KEYS, STATUSES

__all__ = ["CASE_KEYS", "ATTRIBUTE_KEYS", "POPULATION_CASE", "POPULATION_KEYS", "VARIANT_CASE", "STATUSES", "VALID",
           "COUNT_COLUMNS", "present", "is_valid", "valid", "is_target", "targets", "truthy", "value_column", "by_population_group",
           "arm_keys"]

ATTRIBUTE_KEYS = [*CASE_KEYS, "attribute"]  # a row of attributes.csv
POPULATION_CASE = ["model", "condition", "scenario", "variant"]  # a case of a population run (groups are columns)
POPULATION_KEYS = [*POPULATION_CASE, "group"]  # … and one of its groups (sequential, twins)
VARIANT_CASE = [*CASE_KEYS, "variant"]  # a case of a network run (``variant``: archetype mode)
VALID = "valid"
COUNT_COLUMNS = [f"n_{s}" for s in STATUSES]  # n_valid, n_invalid, n_refused, n_error


def arm_keys(df: pd.DataFrame) -> list[str]:
    """The levels of a network arm that ``df`` varies: each level of a crossed or own-agents dimension
    (wording, reasoning level, signal; ``louder.dimensions``) plays its own rounds, control and
    no-influence arm, so a network case is keyed on them where the run has more than one."""
    from louder.dimensions import SPLIT, registered

    return [d.id for d in registered()
            if d.design != SPLIT and d.id in df.columns and df[d.id].nunique(dropna=False) > 1]


def present(df: pd.DataFrame, keys: list[str]) -> list[str]:
    """The ``keys`` that ``df`` has, in their order (``variant`` only in runs that have it)."""
    return [k for k in keys if k in df.columns]


def is_valid(df: pd.DataFrame) -> pd.Series:
    """True for the valid answers (one of the offered choices): the only ones that enter a rate."""
    return df["status"] == VALID


def valid(df: pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """The valid answers of ``df`` (only ``columns``, when given: grouping a narrow frame is faster)."""
    mask = is_valid(df)
    return df.loc[mask] if columns is None else df.loc[mask, columns]


def is_target(df: pd.DataFrame, target: str = "target") -> pd.Series:
    """True for valid answers that chose the target (null targets of other statuses count False)."""
    return is_valid(df) & df[target].fillna(False).astype(bool)


def truthy(v) -> bool:
    """A flag read from a table: a bool, or its CSV text ("True"; "False", "nan" and "0" are false)."""
    return bool(v) and str(v) not in ("False", "nan", "0")


def targets(df: pd.DataFrame, target: str = "target") -> pd.Series:
    """0/1 target of each row of an all-valid frame (``valid(df)``)."""
    return df[target].fillna(False).astype(bool).astype(int)


def value_column(d: pd.DataFrame, value: str = "auto") -> str:
    """The column a rate of ``d`` reads: ``value``, or with "auto" ``p_target`` where the run stored
    probabilities (score mode), else ``target``."""
    if value != "auto":
        return value
    return "p_target" if "p_target" in d.columns and d["p_target"].notna().any() else "target"


def by_population_group(decisions: pd.DataFrame | None) -> pd.DataFrame | None:
    """Population runs (issue 31.3): the rows once per group of the population, ``group`` the group and
    ``attribute`` the agent's attribute in it — the marginal reading population_groups.csv takes, where a
    case of joint labels would spread the agents over every intersection. Other runs: as they are."""
    cols = [c for c in (decisions.columns if decisions is not None else []) if c.startswith("attr_")]
    if not cols:
        return decisions
    return pd.concat([decisions.assign(group=c.removeprefix("attr_"), attribute=decisions[c]) for c in cols],
                     ignore_index=True)
