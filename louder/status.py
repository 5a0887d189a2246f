"""Status counting: how many answers of a table are valid / invalid / refused / error, and the
manifest's status block that every kind of run writes.

Pure pandas, so the analysis can count statuses without importing the model stack."""

from __future__ import annotations

import pandas as pd

from louder.types import STATUSES


def status_counts(df: pd.DataFrame) -> dict:
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def _plain(v):
    """numpy scalars as Python values, so the manifest's JSON keeps numbers as numbers."""
    return v.item() if hasattr(v, "item") else v


def status_table(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per ``keys`` combination seen (sorted), with ``n_<status>`` for every status in
    STATUSES order, zeros included (int64): the count every table of louder shows beside its rates."""
    columns = [f"n_{s}" for s in STATUSES]
    if df.empty:
        return pd.DataFrame(columns=[*keys, *columns])
    t = df.groupby(keys + ["status"], observed=True).size().unstack("status", fill_value=0)
    t = t.reindex(columns=list(STATUSES), fill_value=0)
    t.columns = columns
    return t.reset_index()


def status_by(df: pd.DataFrame, keys: list[str]) -> list[dict]:
    """One record per ``keys`` combination with the count of every status (zeros included)."""
    if df.empty:
        return []
    rows = []
    for r in status_table(df, keys).itertuples(index=False):
        rows.append({**{k: _plain(v) for k, v in zip(keys, r)},
                     **{s: int(n) for s, n in zip(STATUSES, r[len(keys):])}})
    return rows


def status_block(tables: dict[str, pd.DataFrame], by: list[str], main: str = "decisions",
                 by_name: str = "status_by_attribute", mass: str | None = None) -> dict:
    """The manifest fields every run writes about its answers: ``rows`` and ``status_counts`` of
    each table (that holds answers), ``low_mass_rows`` (score mode: rows of ``mass``, default ``main``,
    whose offered choices got under 0.99 of the probability) and ``main``'s status counts per ``by``
    combination (``by_name``)."""
    d, m = tables[main], tables[mass or main]
    out = dict(rows={k: len(v) for k, v in tables.items()},
               status_counts={k: status_counts(v) for k, v in tables.items() if "status" in v.columns})
    if "choice_mass" in m.columns:
        out["low_mass_rows"] = int((m["choice_mass"] < 0.99).sum())
    out[by_name] = status_by(d, [k for k in by if k in d.columns])
    if thinking := thinking_counts(tables):
        out["thinking"] = thinking
    return out


def thinking_counts(tables: dict[str, pd.DataFrame]) -> dict:
    """Issue 30, per table that has any: rows that came with thinking, rows whose thinking never closed
    (``invalid``, reason thinking_truncated) and the reasoning tokens the server reported."""
    out = {}
    for name, df in tables.items():
        if "thinking" not in df.columns:
            continue
        with_thinking = int((df["thinking"].fillna("").astype(str).str.strip() != "").sum())
        cut = int(df["raw_response"].fillna("").astype(str).str.contains("[thinking_truncated", regex=False).sum()) \
            if "raw_response" in df.columns else 0
        tokens = df["reasoning_tokens"].dropna() if "reasoning_tokens" in df.columns else []
        if with_thinking or cut or len(tokens):
            out[name] = {"with_thinking": with_thinking, "thinking_truncated": cut,
                         "reasoning_tokens": int(sum(tokens)) if len(tokens) else None}
    return out
