"""What the live view reads from a run folder, and the per-round summaries it draws.

A network run writes, beside ``decisions.parquet`` (one row per agent × round, with ``node`` and
``round``), ``network.parquet`` (the edges of each case's graph, ``source``/``target`` node ids) and
``control.parquet`` (the no-LLM control's ``target`` per node × round). The view needs nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from louder.errors import LouderError
from louder.types import CASE_KEYS



@dataclass(frozen=True)
class ViewData:
    decisions: pd.DataFrame
    edges: pd.DataFrame
    control: pd.DataFrame | None
    cases: tuple[str, ...]  # "model | condition | scenario | group" labels, in file order


def case_label(key) -> str:
    return " | ".join(str(k) for k in key)


def load_view_data(run_dir: str | Path) -> ViewData:
    """Read the run folder (cached per folder and file modification times)."""
    run = Path(run_dir)
    files = [run / "decisions.parquet", run / "network.parquet", run / "control.parquet"]
    if not files[0].exists() or not files[1].exists():
        raise LouderError(f"{run} holds no network run (decisions.parquet and network.parquet); "
                          "run an experiment with `network:` in its config first")
    stamp = tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files)
    return _load(str(run.resolve()), stamp)


@lru_cache(maxsize=4)
def _load(run: str, stamp: tuple) -> ViewData:
    d = pd.read_parquet(Path(run) / "decisions.parquet")
    if "round" not in d.columns or "node" not in d.columns:
        raise LouderError(f"{run}/decisions.parquet has no round/node columns: it is not a network run")
    edges = pd.read_parquet(Path(run) / "network.parquet")
    control_path = Path(run) / "control.parquet"
    control = pd.read_parquet(control_path) if control_path.exists() else None
    cases = tuple(dict.fromkeys(case_label(k) for k in d[CASE_KEYS].itertuples(index=False)))
    return ViewData(d, edges, control, cases)


def case_frames(data: ViewData, label: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(decisions, edges, control) of one case."""
    key = label.split(" | ")

    def pick(df):
        if df is None:
            return None
        mask = np.ones(len(df), dtype=bool)
        for col, value in zip(CASE_KEYS, key):
            mask &= df[col].astype(str).to_numpy() == value
        return df[mask]

    return pick(data.decisions), pick(data.edges), pick(data.control)


def sample_nodes(nodes: np.ndarray, max_nodes: int, seed: int) -> np.ndarray:
    """All nodes, or a seeded sample of ``max_nodes`` of them (sorted)."""
    if len(nodes) <= max_nodes:
        return np.sort(nodes)
    return np.sort(np.random.default_rng(seed).choice(nodes, size=max_nodes, replace=False))


def rates_over_rounds(decisions: pd.DataFrame, control: pd.DataFrame | None) -> pd.DataFrame:
    """One row per source × round × attribute: the target rate over valid decisions (the control
    over every node) — what the chart beside the network draws."""
    valid = decisions[decisions["status"] == "valid"]
    llm = (valid.assign(t=valid["target"].astype(float)).groupby(["round", "attribute"])["t"].mean()
           .rename("rate").reset_index().assign(source="LLM"))
    frames = [llm]
    if control is not None and len(control):
        attr = decisions.drop_duplicates("node").set_index("node")["attribute"]
        c = control.assign(attribute=control["node"].map(attr), t=control["target"].astype(float))
        frames.append(c.groupby(["round", "attribute"])["t"].mean().rename("rate").reset_index()
                      .assign(source="control"))
    return pd.concat(frames, ignore_index=True)


def dpd_band(decisions: pd.DataFrame, B: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Per round: DPD = max_a r_a − min_a r_a over valid decisions, with the interval of
    ``louder.analysis.stats.dpd_confidence_interval`` (x_a^b ~ Binomial(n_a, r_a); contains the DPD)."""
    from louder.analysis.stats import dpd, dpd_confidence_interval

    rows = []
    valid = decisions[decisions["status"] == "valid"]
    for r, g in valid.groupby("round"):
        per = g.groupby("attribute")["target"].agg(["size", "sum"])
        n, x = per["size"].to_numpy(), per["sum"].astype(int).to_numpy()
        lo, hi = dpd_confidence_interval(n, x, B=B, seed=seed, level=level)
        rows.append(dict(round=int(r), dpd=dpd(x / n), low=lo, high=hi))
    return pd.DataFrame(rows, columns=["round", "dpd", "low", "high"])
