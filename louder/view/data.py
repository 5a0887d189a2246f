"""What the live view reads from a run folder, and the per-round summaries it draws.

A network run writes, beside ``decisions.parquet`` (one row per agent × round, with ``node`` and
``round``), ``network.parquet`` (the edges of each case's graph, ``source``/``target`` node ids) and
``control.parquet`` (the no-LLM control's ``target`` per node × round). The view needs nothing else
(``manifest.json``, when there, says whether the run was an archetype run). The DPD band it draws is
the one ``louder analyze`` wrote in ``network_rounds.csv`` when the folder holds an analysis of its
data as it is now; else the view computes it as ``louder analyze`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from louder.analysis.engine.run import written
from louder.analysis.stats.keys import CASE_KEYS, arm_keys
from louder.analysis.stats.rates import target_rates
from louder.errors import LouderError


@dataclass(frozen=True)
class ViewData:
    decisions: pd.DataFrame
    edges: pd.DataFrame
    control: pd.DataFrame | None
    cases: tuple[str, ...]  # "model | condition | scenario | group" labels (and the arm's levels), in file order
    archetype: bool = False  # agents of one archetype call share its randomness: intervals resample clusters
    rounds_table: pd.DataFrame | None = None  # network_rounds.csv of an analysis of this data (louder analyze)
    keys: tuple[str, ...] = tuple(CASE_KEYS)  # the columns of a label's parts


def view_keys(decisions: pd.DataFrame) -> list[str]:
    """The case columns and, where the run varies them, the policy variant and the levels of a network
    arm (``keys.arm_keys``: each wording, reasoning level or signal plays its own rounds)."""
    variant = ["variant"] if "variant" in decisions.columns and decisions["variant"].nunique(dropna=False) > 1 else []
    return CASE_KEYS + variant + arm_keys(decisions)


def case_label(key) -> str:
    return " | ".join(str(k) for k in key)


def load_view_data(run_dir: str | Path) -> ViewData:
    """Read the run folder (cached per folder and file modification times)."""
    run = Path(run_dir)
    files = [run / "decisions.parquet", run / "network.parquet", run / "control.parquet", run / "manifest.json",
             run / "analysis.json", run / "network_rounds.csv"]
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
    analysed = written(run, ["network_rounds"]) or {}
    return ViewData(d, edges, control, cases, is_archetype(d, _manifest(Path(run) / "manifest.json")),
                    analysed.get("network_rounds"), tuple(keys))


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
    frames = [target_rates(decisions, ["round", "attribute"])[["round", "attribute", "rate"]].assign(source="LLM")]
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
    from louder.analysis.stats.network import dpd_by_round, with_archetype_clusters

    if archetype is None:
        archetype = is_archetype(decisions, None)
    rows, cluster = (with_archetype_clusters(decisions), "cluster") if archetype else (decisions, None)
    d = dpd_by_round(rows, "attribute", cluster=cluster, B=B, seed=seed, level=level)
    return d.rename(columns={"ci_low": "low", "ci_high": "high"}).reindex(columns=["round", "dpd", "low", "high"])


def case_band(data: ViewData, label: str, B: int = 1000) -> pd.DataFrame:
    """The DPD band of one case over rounds (round, dpd, low, high): the LLM rows of the
    network_rounds.csv ``louder analyze`` wrote for this data, else ``dpd_band`` of the case's rows."""
    t = data.rounds_table
    if t is not None:
        rows = t[t["source"] == "LLM"]
        for col, value in zip(data.keys, label.split(" | ")):
            if col in rows.columns:
                rows = rows[rows[col].astype(str) == value]
        per_round = rows.drop_duplicates(["round", "dpd", "dpd_ci_low", "dpd_ci_high"])
        if len(rows) and not per_round["round"].duplicated().any():  # one band per round (policy variants: two)
            return (per_round.rename(columns={"dpd_ci_low": "low", "dpd_ci_high": "high"})
                    [["round", "dpd", "low", "high"]].sort_values("round", ignore_index=True))
    decisions, _, _ = case_frames(data, label)
    return dpd_band(decisions, archetype=data.archetype, B=B)


def is_archetype(decisions: pd.DataFrame, manifest: dict | None) -> bool:
    """An archetype run, as ``louder analyze`` decides it (``measures.network.is_archetype``)."""
    from louder.analysis.stats.network import is_archetype as analysed_as_archetype

    return analysed_as_archetype(decisions, manifest)
