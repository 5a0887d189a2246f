"""What the live view reads from a run folder, and the per-round summaries it draws.

A network run writes, beside ``decisions.parquet`` (one row per agent × round, with ``node`` and
``round``), ``network.parquet`` (the edges of each case's graph, ``source``/``target`` node ids) and
``control.parquet`` (the no-LLM control's ``target`` per node × round). The view needs nothing else
(``manifest.json``, when there, says whether the run was an archetype run).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import json

import numpy as np
import pandas as pd

from louder.errors import LouderError
from louder.types import CASE_KEYS


@dataclass(frozen=True)
class ViewData:
    decisions: pd.DataFrame
    edges: pd.DataFrame
    control: pd.DataFrame | None
    cases: tuple[str, ...]  # "model | condition | scenario | group" labels (and the arm's levels), in file order
    archetype: bool = False  # agents of one archetype call share its randomness: intervals resample clusters
    keys: tuple[str, ...] = tuple(CASE_KEYS)  # the columns of a label's parts


def view_keys(decisions: pd.DataFrame) -> list[str]:
    """The case columns and, where the run varies them, the policy variant and the levels of a network
    arm (``louder.dimensions``: each wording, reasoning level or signal plays its own rounds)."""
    from louder.dimensions import SPLIT, registered

    arms = ["variant"] + [d.id for d in registered() if d.design != SPLIT]
    return CASE_KEYS + [c for c in arms if c in decisions.columns and decisions[c].nunique(dropna=False) > 1]


def case_label(key) -> str:
    return " | ".join(str(k) for k in key)


def load_view_data(run_dir: str | Path) -> ViewData:
    """Read the run folder (cached per folder and file modification times)."""
    run = Path(run_dir)
    files = [run / "decisions.parquet", run / "network.parquet", run / "control.parquet", run / "manifest.json"]
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
    keys = view_keys(d)
    cases = tuple(dict.fromkeys(case_label(k) for k in d[keys].itertuples(index=False)))
    return ViewData(d, edges, control, cases, is_archetype(d, _manifest(Path(run) / "manifest.json")), tuple(keys))


def _manifest(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None  # no manifest (or an unreadable one): the decisions' columns decide alone


def case_frames(data: ViewData, label: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(decisions, edges, control) of one case (of one arm: the graph's edges are the case's)."""
    key = label.split(" | ")

    def pick(df):
        if df is None:
            return None
        mask = np.ones(len(df), dtype=bool)
        for col, value in zip(data.keys, key):
            if col in df.columns:
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


def dpd_band(decisions: pd.DataFrame, archetype: bool | None = None, B: int = 1000, seed: int = 0,
             level: float = 0.95) -> pd.DataFrame:
    """Per round: DPD = max_a r_a − min_a r_a over valid decisions with the interval ``louder analyze``
    gives it in network_rounds.csv (``network.dpd_by_round``): agents resampled, or — in an archetype
    run (``archetype``; None: decided from the columns) — archetype × replicate clusters, whose agents
    share one call's randomness, with at least Student's t on the clusters' degrees of freedom."""
    from louder.analysis.network import dpd_by_round, with_archetype_clusters

    if archetype is None:
        archetype = is_archetype(decisions, None)
    rows, cluster = (with_archetype_clusters(decisions), "cluster") if archetype else (decisions, None)
    d = dpd_by_round(rows, "attribute", cluster=cluster, B=B, seed=seed, level=level)
    return d.rename(columns={"ci_low": "low", "ci_high": "high"}).reindex(columns=["round", "dpd", "low", "high"])


def is_archetype(decisions: pd.DataFrame, manifest: dict | None) -> bool:
    """An archetype run, as ``louder analyze`` decides it (``network_tables.is_archetype``)."""
    from louder.analysis.network_tables import is_archetype as analysed_as_archetype

    return analysed_as_archetype(decisions, manifest)
