"""Status counting: how many answers of a table are valid / invalid / refused / error.

Pure pandas, so the analysis can count statuses without importing the model stack."""

from __future__ import annotations

import pandas as pd

from louder.types import STATUSES


def status_counts(df: pd.DataFrame) -> dict:
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def status_by(df: pd.DataFrame, keys: list[str]) -> list[dict]:
    """One record per ``keys`` combination with the count of every status (zeros included)."""
    if df.empty:
        return []
    table = df.groupby(keys + ["status"]).size().unstack("status", fill_value=0)
    rows = []
    for idx, r in table.iterrows():
        row = dict(zip(keys, idx if isinstance(idx, tuple) else (idx,)))
        row.update({s: int(r.get(s, 0)) for s in STATUSES})
        rows.append(row)
    return rows
