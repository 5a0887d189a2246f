"""The tables `louder analyze` adds for a network run (decisions with a ``round`` column):

* ``network_rounds`` — per case × source (LLM, no influence, control) × round × attribute: the
  target rate over valid decisions with every status count, and the round's DPD with its bootstrap
  interval;
* ``network_flips`` — per case × source × round ≥ 1 × attribute: flips / agents valid in both rounds;
* ``amplification`` — per case × round: DPD_r(LLM) − DPD_r(no influence) (the no-influence arm, or
  round 0 where there is none), its paired bootstrap interval and the verdict (amplified / damped /
  no change); the control rule's DPD beside it as a reference only; ``final`` marks the last round,
  whose verdict is the case's.

The statistics are ``louder.analysis.network``'s. Agents mode bootstraps agents (``cluster=None``);
archetype runs (``bucket`` column or ``mode: archetype`` in the manifest) resample archetype ×
replicate clusters (``with_archetype_clusters``), since the agents of one call share its randomness.
"""

from __future__ import annotations

import pandas as pd

from louder.analysis.network import amplification, dpd_by_round, flip_rates, rates_by_round, with_archetype_clusters

NETWORK_TABLES = ("network_rounds", "network_flips", "amplification")
CASE = ["model", "condition", "scenario", "group", "variant"]
ROUND_COLUMNS = ["source", "round", "attribute", "n_valid", "n_target", "rate", "n_invalid", "n_refused", "n_error",
                 "dpd", "dpd_ci_low", "dpd_ci_high"]
FLIP_COLUMNS = ["source", "round", "attribute", "n_both_valid", "flips", "flip_rate"]
AMP_COLUMNS = ["round", "dpd_round0", "dpd_llm", "dpd_no_influence", "baseline", "change", "amplification", "ci_low",
               "ci_high", "verdict", "dpd_control", "final"]


def case_keys(decisions: pd.DataFrame) -> list[str]:
    """The columns that identify a case (``variant`` only in population runs), and the levels of a
    network arm where the run varies them: each level of a crossed or own-agents dimension (wording,
    reasoning level, signal; ``louder.dimensions``) plays its own rounds, control and no-influence arm."""
    from louder.dimensions import SPLIT, registered

    arms = [d.id for d in registered() if d.design != SPLIT]
    return [k for k in CASE if k in decisions.columns] + [
        c for c in arms if c in decisions.columns and decisions[c].nunique(dropna=False) > 1]


def is_archetype(decisions: pd.DataFrame, manifest: dict | None) -> bool:
    return "bucket" in decisions.columns or ((manifest or {}).get("network") or {}).get("mode") == "archetype"


def _clustered(rows: pd.DataFrame, control: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Archetype × replicate cluster of every row; the control's rows take their node's cluster."""
    rows = with_archetype_clusters(rows)
    if control is not None and "cluster" not in control.columns:
        by_node = rows.drop_duplicates("node").set_index("node")["cluster"]
        control = control.assign(cluster=control["node"].map(by_node))
    return rows, control


def case_network_tables(rows: pd.DataFrame, control: pd.DataFrame | None, cluster: str | None = None,
                        B: int = 2000, seed: int = 0, arm: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """The three tables of one case (rows, control and no-influence arm of one case, with ``cluster``
    if resampled by cluster)."""
    rounds, flips = [], []
    runs = {"LLM": rows, **({"no influence": arm} if arm is not None and len(arm) else {}),
            **({"control": control} if control is not None and len(control) else {})}
    dpd_control = {}
    for source, df in runs.items():
        d = dpd_by_round(df, "attribute", cluster=cluster, B=B, seed=seed)
        if source == "control":
            dpd_control = dict(zip(d["round"], d["dpd"]))
        r = rates_by_round(df, "attribute").merge(
            d.rename(columns={"ci_low": "dpd_ci_low", "ci_high": "dpd_ci_high"}).drop(columns="n_valid"),
            on="round", how="left")
        rounds.append(r.assign(source=source)[ROUND_COLUMNS])
        if "changed" in df.columns:
            flips.append(flip_rates(df, "attribute").assign(source=source)[FLIP_COLUMNS])
    with_arm = "no influence" in runs
    amp = amplification(rows, arm if with_arm else None, "attribute", cluster=cluster, B=B, seed=seed)
    amp["baseline"] = "no-influence arm" if with_arm else "round 0"
    amp["dpd_control"] = amp["round"].map(dpd_control).astype(float)
    amp["final"] = amp["round"] == amp["round"].max()
    return {"network_rounds": pd.concat(rounds, ignore_index=True),
            "network_flips": pd.concat(flips, ignore_index=True) if flips else pd.DataFrame(columns=FLIP_COLUMNS),
            "amplification": amp[AMP_COLUMNS]}


def network_tables(decisions: pd.DataFrame, control: pd.DataFrame | None, manifest: dict | None = None,
                   B: int = 2000, seed: int = 0, arm: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """The three tables over every case of a network run, case columns first. ``arm``: the
    no-influence arm's rows (no_influence.parquet), if the run asked it."""
    keys = case_keys(decisions)
    cluster = None
    if is_archetype(decisions, manifest):
        decisions, control = _clustered(decisions, control)
        cluster = "cluster"
    out: dict[str, list[pd.DataFrame]] = {n: [] for n in NETWORK_TABLES}
    # the control and the arm are matched on the case columns they have (a run may write them without ``variant``)

    def split(table: pd.DataFrame | None) -> tuple[list[str], dict]:
        k = [c for c in keys if table is not None and c in table.columns]
        return k, (dict(iter(table.groupby(k, sort=False))) if k else {})

    (ckeys, controls), (akeys, arms) = split(control), split(arm)
    for key, rows in decisions.groupby(keys, sort=False):
        pick = lambda k: tuple(v for c, v in zip(keys, key) if c in k)  # noqa: E731
        for name, t in case_network_tables(rows, controls.get(pick(ckeys)), cluster, B, seed,
                                           arms.get(pick(akeys))).items():
            if len(t):
                out[name].append(t.assign(**dict(zip(keys, key)))[keys + list(t.columns)])
    empty = {"network_rounds": ROUND_COLUMNS, "network_flips": FLIP_COLUMNS, "amplification": AMP_COLUMNS}
    return {n: pd.concat(f, ignore_index=True) if f else pd.DataFrame(columns=keys + empty[n])
            for n, f in out.items()}


def case_verdicts(amp: pd.DataFrame) -> pd.DataFrame:
    """The final round's row of every case: its verdict is the case's."""
    return amp[amp["final"].astype(bool)].reset_index(drop=True) if len(amp) else amp
