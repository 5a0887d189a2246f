"""The case tables of a sequential run (issue 20): a sequential run looked at its data after every
wave and stopped when its test decided, so the fixed-N bootstrap of ``louder analyze`` (threshold,
p-value, interval, power) is not valid for it: optional stopping inflates its false positives. For the
cases the run tested, the cases table takes the interval and p-value of the confidence sequence
instead — the state after the case's last wave, which uses every answer the table counts (valid at any
time, so also after a test decided while its item went on) — and its verdict (``stop_reason``) and
``waves``; ``interval_method`` says which method a row's interval and p-value come from, and bootstrap
columns that cannot be valid are left empty. The statistics are ``louder.analysis.stats.sequential``'s."""

from __future__ import annotations

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.engine import select
from louder.analysis.stats.keys import CASE_KEYS, POPULATION_KEYS, present

BOOTSTRAP = "bootstrap"
SEQUENTIAL = "confidence sequence"
NOT_VALID = "none: a fixed-N bootstrap is not valid under optional stopping"
NOTE = ("sequential run: intervals and p-values of its cases come from the anytime-valid confidence sequence "
        "(interval_method); the fixed-N bootstrap columns are left empty — they are not valid under optional "
        "stopping")

Sequential = tuple[pd.DataFrame, pd.DataFrame]  # (sequential.csv, sequential_waves.csv)


def of_run(manifest: dict | None, final: pd.DataFrame | None, waves: pd.DataFrame | None) -> Sequential | None:
    """(sequential.csv, sequential_waves.csv) when the run folder's manifest says it was a sequential
    run (a later fixed run in the same folder leaves the old files behind; the manifest decides)."""
    if not manifest or "sequential" not in manifest or final is None or waves is None:
        return None
    return final, waves


def case_keys(df: pd.DataFrame) -> list[str]:
    """A tested case's columns (``signal``: a run with several signals tests each as a case of its own)."""
    return present(df, [*POPULATION_KEYS, "signal"])


def last_waves(final: pd.DataFrame, waves: pd.DataFrame) -> pd.DataFrame:
    """Per tested case: its state after the last wave it saw, with its ``stop_reason`` and ``waves`` run."""
    keys = case_keys(final)
    last = waves.sort_values("wave").groupby(keys, sort=False, dropna=False).tail(1)
    return last.drop(columns=["verdict"], errors="ignore").merge(final[keys + ["stop_reason"]], on=keys).assign(
        waves=lambda d: d["wave"] + 1)


def with_sequential(cases: pd.DataFrame, seq: Sequential | None, score: bool) -> pd.DataFrame:
    """The implicit cases table of a sequential run with the confidence sequence's interval and p-value
    (score mode: in the probability-DPD columns, the quantity the run tested) and its verdict; the
    bootstrap columns that cannot be valid are emptied; ``significant`` follows from these p-values
    with the run's Holm adjustment (``cases.with_holm``, applied after this). A fixed run's rows get
    ``interval_method`` bootstrap and nothing else changes."""
    out = cases.copy()
    out["interval_method"] = BOOTSTRAP
    if seq is None or out.empty:
        return out
    # a policy variant reads as its own scenario and a signal other than stated as its own condition, as in the cases
    last = select.keyed(last_waves(*seq), "signal", "variant")
    implicit = out["kind"] == "implicit"
    m = out[CASE_KEYS].merge(last, how="left", on=CASE_KEYS) if set(CASE_KEYS) <= set(last.columns) else \
        out[CASE_KEYS].assign(stop_reason=np.nan)
    tested = implicit & m["stop_reason"].notna().to_numpy()
    boot = ["threshold", "p_value", "ci_low", "ci_high", "ci_low_p", "ci_high_p", "p_value_p", "mdd", "p_independence"]
    out.loc[implicit, boot] = np.nan
    out.loc[implicit, "underpowered"] = False
    out.loc[implicit, "interval_method"] = NOT_VALID
    cols = ("ci_low_p", "ci_high_p", "p_value_p") if score else ("ci_low", "ci_high", "p_value")
    for c, src in zip(cols, ("cs_low", "cs_high", "p_value")):
        out.loc[tested, c] = m.loc[tested, src].to_numpy(dtype=float)
    out.loc[tested, "interval_method"] = SEQUENTIAL
    out["stop_reason"] = m["stop_reason"].where(tested, None).to_numpy()
    out["waves"] = pd.array(m["waves"].where(tested).to_numpy(), dtype="Int64") if "waves" in m else pd.NA
    return out


def with_sequential_groups(groups: pd.DataFrame, seq: Sequential | None) -> pd.DataFrame:
    """``population_groups`` of a sequential population run: per case × group the tested (unweighted)
    DPD with its confidence sequence, p-value and verdict beside the weighted DPD, whose bootstrap
    threshold, p-value and interval are emptied (not valid under optional stopping). ``p_holm`` is
    then Holm across the table's rows of the anytime-valid p-value (``p_sequential``) and
    ``significant`` the run's rule on it (``stats.significant``)."""
    if seq is None or groups.empty:
        return groups
    last = select.keyed(last_waves(*seq), "signal")
    key = present(last, POPULATION_KEYS)
    m = groups[key].merge(last, how="left", on=key)
    out = groups.copy()
    tested = m["stop_reason"].notna().to_numpy()
    out[["threshold", "p_value", "ci_low", "ci_high"]] = np.nan
    out["interval_method"] = np.where(tested, SEQUENTIAL, NOT_VALID)
    out["stop_reason"] = m["stop_reason"].to_numpy()
    out["waves"] = pd.array(m["waves"].to_numpy(), dtype="Int64")
    out["dpd_unweighted"], out["cs_low"], out["cs_high"], out["p_sequential"] = (
        m[c].to_numpy(dtype=float) for c in ("dpd", "cs_low", "cs_high", "p_value"))
    out["p_holm"] = stats.holm(out["p_sequential"].to_numpy())
    out["significant"] = stats.significant(out["p_holm"].to_numpy())
    return out
