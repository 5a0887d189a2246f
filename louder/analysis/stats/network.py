"""Statistics of rounds of influence: per-round DPD, flip rates, amplification against the same
agents without influence, and the cluster bootstrap of archetype mode. Pure functions over the rows of ``run_rounds`` (columns
round, node, status, target, changed and the attribute column).

Notation: in round r, attribute a has n_a agents with a valid decision of which x_a chose the
target; r_a = x_a / n_a; DPD_r = max_a r_a − min_a r_a.

Clusters: in archetype mode every agent of cell c assigned replicate k draws from the same model
call p[c, k, ·], so agents are not independent — their decisions share that call's randomness.
The bootstrap therefore resamples clusters (archetype × replicate) with replacement, not agents;
with ``cluster=None`` every agent is its own cluster (individual mode, one call per agent).

Counts: every function also takes a *tally* in place of rows — one row per combination of the
columns it reads with ``n``, the number of rows it stands for (an archetype run's 6·10^6 decisions are
a few thousand such rows: ``louder.analysis.engine.columnar.tally``). Each count is then a sum of those
``n`` instead of a count of rows: whole numbers either way, so the statistics are the same to the last
digit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import dpd
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import STATUSES, VARIANT_CASE, arm_keys, is_valid, present, valid
from louder.analysis.stats.rates import rates


def _n(rows: pd.DataFrame) -> np.ndarray:
    """How many rows each row stands for: its ``n`` in a tally, 1 in rows."""
    return rows["n"].to_numpy(dtype=np.int64) if "n" in rows.columns else np.ones(len(rows), dtype=np.int64)


def rates_by_round(rows: pd.DataFrame, attr: str) -> pd.DataFrame:
    """Tidy: round, attribute, n_valid, n_target, rate (= x_a / n_a), n_invalid, n_refused, n_error."""
    cols = ["round", "attribute", "n_valid", "n_target", "rate", "n_invalid", "n_refused", "n_error"]
    if "n" not in rows.columns:
        return rates(rows, ["round", attr]).rename(columns={attr: "attribute"})[cols]
    # a tally: the counts of ``rates`` (louder.analysis.stats.rates) as sums of n
    by = ["round", attr]
    w = rows.assign(_w=_n(rows), _x=_n(rows) * (is_valid(rows) & rows["target"].fillna(False).astype(bool)))
    counts = w.pivot_table(index=by, columns="status", values="_w", aggfunc="sum", fill_value=0, observed=True)
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).astype("int64")
    counts.columns = [f"n_{s}" for s in STATUSES]
    out = counts.join(w.groupby(by, observed=True)["_x"].sum().rename("n_target").astype("int64")).reset_index()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rate"] = np.where(out["n_valid"] > 0, out["n_target"] / out["n_valid"].where(out["n_valid"] > 0), np.nan)
    return out.rename(columns={attr: "attribute"})[cols]


def _cluster_counts(rows: pd.DataFrame, attr: str, attributes: list, cluster: str | None, clusters: np.ndarray,
                    rounds: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """n[c, a], x[c, a]: valid decisions and target decisions of attribute a in cluster c. With ``rounds``,
    n[r, c, a] and x[r, c, a] of each of those rounds, in one pass over the rows (filtering them round by
    round took a pass and a copy a round); rows of other rounds are left out, and so are rows of an
    attribute not in ``attributes``."""
    v = valid(rows)
    index = [pd.Index(clusters).get_indexer(v[cluster] if cluster else v["node"]),
             pd.Index(attributes).get_indexer(v[attr])]
    shape = (len(clusters), len(attributes))
    if rounds is not None:
        index, shape = [pd.Index(rounds).get_indexer(v["round"]), *index], (len(rounds), *shape)
    keep = np.logical_and.reduce([i >= 0 for i in index])
    flat = np.ravel_multi_index(tuple(i[keep] for i in index), shape)
    w = _n(v)[keep]
    # counts are whole numbers: summed in any order they are exact
    n = np.bincount(flat, weights=w, minlength=int(np.prod(shape))).reshape(shape)
    x = np.bincount(flat, weights=w * v["target"].astype(bool).to_numpy()[keep], minlength=n.size).reshape(shape)
    return n, x


def _bootstrap_rates(pairs: list[tuple[np.ndarray, np.ndarray]], B: int, seed: int,
                     with_variance: bool = False) -> list:
    """Cluster bootstrap of rates, one B × A array per (n, x) pair, all with the same resamples.

    Resample b draws the C clusters with replacement; w_bc = how often cluster c is drawn (Σ_c w_bc = C);
    r_a^b = Σ_c w_bc x_ca / Σ_c w_bc n_ca (NaN when attribute a drew no valid decision).
    Weights are made in chunks so that 100,000 single-agent clusters fit in memory. ``with_variance``:
    (rates, pair variances) per pair instead, the variances of ``_rate_variance``.
    """
    rng = np.random.default_rng(seed)
    C = pairs[0][0].shape[0]
    chunk = max(1, 20_000_000 // max(C, 1))
    out: list[list[np.ndarray]] = [[] for _ in pairs]
    var: list[list[np.ndarray]] = [[] for _ in pairs]
    done = 0
    while done < B:
        m = min(chunk, B - done)
        w = np.stack([np.bincount(rng.integers(0, C, C), minlength=C) for _ in range(m)]).astype(float)
        for i, (n, x) in enumerate(pairs):
            if with_variance:
                r, v = _rate_variance(w, n, x)
                out[i].append(r)
                var[i].append(I.pair_sum(v))
                continue
            nb, xb = w @ n, w @ x
            with np.errstate(invalid="ignore", divide="ignore"):
                out[i].append(np.where(nb > 0, xb / nb, np.nan))
        done += m
    if with_variance:
        return [(np.concatenate(o), np.concatenate(v)) for o, v in zip(out, var)]
    return [np.concatenate(o) for o in out]


def _rate_variance(w: np.ndarray, n: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rates r_a = Σ_c w_c x_ca / Σ_c w_c n_ca and var(r_a): the cluster-robust (linearised) variance
    of ``intervals.ratio_variance``, at least the binomial ``intervals.binomial_variance`` of the
    attribute's pooled counts (so a rate of 0 or 1 keeps a positive variance; with one decision per
    cluster the two are equal up to that smoothing)."""
    sums = I.cluster_sums(w, x, n)
    r, v = I.ratio_variance_of(sums)
    with np.errstate(invalid="ignore", divide="ignore"):
        floor = I.binomial_variance(sums[0], sums[1])
    return r, np.fmax(v, floor)


def _dpd_rows(r: np.ndarray) -> np.ndarray:
    ok = (~np.isnan(r)).sum(axis=1) >= 2
    out = np.full(r.shape[0], np.nan)
    out[ok] = np.nanmax(r[ok], axis=1) - np.nanmin(r[ok], axis=1)
    return out


def _clusters(rows: pd.DataFrame, cluster: str | None) -> np.ndarray:
    # np.unique of the distinct values (hashed first): the same sorted array without sorting every row
    return np.unique(pd.unique(np.asarray(rows[cluster] if cluster else rows["node"])))


def _observed_dpd(n: np.ndarray, x: np.ndarray) -> float:
    tot = n.sum(axis=0)
    return dpd(np.where(tot > 0, x.sum(axis=0) / np.where(tot > 0, tot, 1), np.nan))


def _quantiles(v: np.ndarray, level: float) -> tuple[float, float]:
    if not np.isfinite(v).any():
        return float("nan"), float("nan")
    lo, hi = np.nanquantile(v, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def dpd_by_round(rows: pd.DataFrame, attr: str, cluster: str | None = None, B: int = 2000, seed: int = 0,
                 level: float = 0.95) -> pd.DataFrame:
    """Per round: DPD_r with a (cluster) bootstrap interval that contains it and keeps its coverage at
    DPD_r = 0: the resampled rates of ``_bootstrap_rates`` with their variances (``_rate_variance``), the
    simultaneous bootstrap-t band of every r_a − r_b projected onto max − min (``intervals.dpd_interval``;
    with ``cluster`` its critical value is at least Student's t on min_a C_a − 1 degrees of freedom, C_a
    the clusters with a valid decision of attribute a).
    """
    attributes = sorted(rows[attr].dropna().unique())
    clusters = _clusters(rows, cluster)
    rounds = sorted(rows["round"].unique())
    pairs = list(zip(*_cluster_counts(rows, attr, attributes, cluster, clusters, rounds)))
    boots = _bootstrap_rates(pairs, B, seed, with_variance=True)
    out = []
    for r, (n, x), (rb, vb) in zip(rounds, pairs, boots):
        rate, v = _rate_variance(np.ones(n.shape[0]), n, x)
        # with clusters the variances rest on few units: at least Student's t on (fewest clusters − 1) df
        seen = (n > 0).sum(axis=0)
        df = seen[seen > 0].min() - 1 if cluster and (seen > 0).any() else None
        lo, hi = I.dpd_interval(rate, rb, I.pair_sum(v), vb, level, df=df)
        out.append({"round": int(r), "dpd": _observed_dpd(n, x), "ci_low": lo, "ci_high": hi,
                    "n_valid": int(n.sum())})
    return pd.DataFrame(out)


def flip_rates(rows: pd.DataFrame, attr: str) -> pd.DataFrame:
    """Per round r ≥ 1 and attribute: flip_rate = #changed / #agents valid in both r−1 and r."""
    sub = rows[(rows["round"] > 0) & rows["changed"].notna()]
    w = _n(sub)
    g = sub.assign(w=w, c=w * sub["changed"].astype(bool).to_numpy()).groupby(["round", attr])
    out = pd.DataFrame({"n_both_valid": g["w"].sum(), "flips": g["c"].sum()}).reset_index().rename(
        columns={attr: "attribute"})
    out["flip_rate"] = out["flips"] / out["n_both_valid"]
    return out


@dataclass(frozen=True)
class Amplification:
    """What influence did to the disparity by round r, against the same agents without influence."""

    round: int
    dpd_round0: float  # the independent decisions
    dpd_llm: float  # round r of influence
    dpd_no_influence: float  # the baseline in round r: the no-influence arm, else round 0 itself
    change: float  # DPD_r(LLM) − DPD_0
    amplification: float  # DPD_r(LLM) − DPD_r(no influence)
    ci_low: float
    ci_high: float
    verdict: str  # amplified | damped | no change | cannot be judged


def verdict(lo: float, hi: float) -> str:
    """amplified when the interval lies above 0, damped when below, no change when it covers 0."""
    if np.isnan(lo) or np.isnan(hi):
        return "cannot be judged"
    return "amplified" if lo > 0 else "damped" if hi < 0 else "no change"


def amplification(llm: pd.DataFrame, arm: pd.DataFrame | None, attr: str, cluster: str | None = None,
                  B: int = 2000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Per round r: A_r = DPD_r(LLM) − DPD_r(N), with N the no-influence arm (``arm``: the same agents
    asked round 0's prompt again in round r, a fresh answer without neighbours) or, without an arm,
    round 0 of the LLM rows (where a second asking would repeat round 0: score mode, argmax).

    Under no influence both are independent answers of the same agents to the same question, so A_r
    is centred at 0 — whatever the graph does, unlike a rule-based control, which moves towards
    consensus on its own. Paired cluster bootstrap: each resample draws one set of cluster weights
    w_bc for the LLM and N rows alike (the same agents), A_r^b = DPD(r^b_LLM) − DPD(r^b_N); the
    interval is the (1∓level)/2 quantiles of A_r^b, widened to take in A_r itself where a percentile
    interval of a difference of maxima misses it by a hair. ``change`` = DPD_r(LLM) − DPD_0 is the
    raw movement, noise of a second asking included."""
    attributes = sorted(llm[attr].dropna().unique())
    frames = [llm] if arm is None else [llm, arm]
    clusters = np.unique(np.concatenate([_clusters(f, cluster) for f in frames]))
    rounds = sorted(llm["round"].unique())
    llm_counts = list(zip(*_cluster_counts(llm, attr, attributes, cluster, clusters, rounds)))
    if arm is None:  # the baseline of every round is round 0 of the LLM rows
        base = list(zip(*_cluster_counts(llm, attr, attributes, cluster, clusters, [0]))) * len(rounds)
    else:  # the arm's round r; in round 0 the LLM's own (the arm starts at round 1)
        base = list(zip(*_cluster_counts(arm, attr, attributes, cluster, clusters, rounds)))
        base = [llm_counts[i] if r == 0 else base[i] for i, r in enumerate(rounds)]
    pairs = [c for i in range(len(rounds)) for c in (llm_counts[i], base[i])]
    boots = _bootstrap_rates(pairs, B, seed)
    d0 = _observed_dpd(*pairs[0])
    out = []
    for i, r in enumerate(rounds):
        d_llm, d_base = _observed_dpd(*pairs[2 * i]), _observed_dpd(*pairs[2 * i + 1])
        a = d_llm - d_base
        lo, hi = _quantiles(_dpd_rows(boots[2 * i]) - _dpd_rows(boots[2 * i + 1]), level)
        if np.isfinite(lo) and np.isfinite(a):
            lo, hi = min(lo, a), max(hi, a)
        out.append(Amplification(int(r), d0, d_llm, d_base, d_llm - d0, a, lo, hi, verdict(lo, hi)))
    return pd.DataFrame([o.__dict__ for o in out])


def gap_interval(rows: pd.DataFrame, attr: str, a, b, cluster: str | None = None, B: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float, float]:
    """Rate gap g = r_a − r_b with a percentile (cluster) bootstrap interval; returns (g, lo, hi).
    Under no bias the interval should exclude 0 in about 1 − level of experiments."""
    clusters = _clusters(rows, cluster)
    n, x = _cluster_counts(rows, attr, [a, b], cluster, clusters)
    g = x[:, 0].sum() / n[:, 0].sum() - x[:, 1].sum() / n[:, 1].sum()
    (r,) = _bootstrap_rates([(n, x)], B, seed)
    lo, hi = np.nanquantile(r[:, 0] - r[:, 1], [(1 - level) / 2, (1 + level) / 2])
    return float(g), float(lo), float(hi)


def with_archetype_clusters(rows: pd.DataFrame, cell: str = "cell_id", replicate: str = "replicate",
                            name: str = "cluster") -> pd.DataFrame:
    """Add the archetype × replicate cluster id (``cell/replicate``) that archetype-mode bootstraps resample."""
    return rows.assign(**{name: rows[cell].astype(str) + "/" + rows[replicate].astype(str)})


# --- the tables of a network run: network_rounds, network_flips, amplification -------------------------

NETWORK_TABLES = ("network_rounds", "network_flips", "amplification")
ARM = ("signal", "wording", "reasoning")  # the arm columns a network table has where the run varies them
ROUND_COLUMNS = ["source", "round", "attribute", "n_valid", "n_target", "rate", "n_invalid", "n_refused", "n_error",
                 "dpd", "dpd_ci_low", "dpd_ci_high"]
FLIP_COLUMNS = ["source", "round", "attribute", "n_both_valid", "flips", "flip_rate"]
AMP_COLUMNS = ["round", "dpd_round0", "dpd_llm", "dpd_no_influence", "baseline", "change", "amplification", "ci_low",
               "ci_high", "verdict", "dpd_control", "final"]


def case_keys(decisions: pd.DataFrame) -> list[str]:
    """The columns that identify a case (``variant`` only in population runs), and the levels of a
    network arm where the run varies them (``keys.arm_keys``: each wording, reasoning level or signal
    plays its own rounds, control and no-influence arm)."""
    return present(decisions, VARIANT_CASE) + arm_keys(decisions)


def is_archetype(decisions: pd.DataFrame, manifest: dict | None) -> bool:
    """An archetype run (a ``bucket`` column, or ``mode: archetype`` in its manifest): resample clusters."""
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


# --- why an archetype run resamples clusters -----------------------------------------------------------

@dataclass(frozen=True)
class ArchetypeNote:
    """Round-0 DPD interval widths of one case, resampling clusters vs agents.

    width_cluster / width_agent: 95 % bootstrap interval widths of DPD_0 (``dpd_by_round``
    with cluster = cell_id/replicate, and with every agent its own cluster); ratio = their quotient.
    """

    agents: int
    clusters: int
    agents_per_cluster: float
    width_cluster: float
    width_agent: float
    ratio: float
    text: str


def archetype_cells(decisions: pd.DataFrame) -> bool:
    """The columns of an archetype run's agents (cell, bucket, replicate, round)."""
    return {"cell_id", "bucket", "replicate", "round"} <= set(decisions.columns)


def archetype_note(decisions: pd.DataFrame, B: int = 500, seed: int = 0) -> ArchetypeNote | None:
    """The note for the first case of an archetype run's decisions (None for any other run)."""
    if decisions is None or decisions.empty or not archetype_cells(decisions):
        return None
    keys = ["model", "condition", "scenario", "group"]  # the case (louder.analysis.stats.keys.CASE_KEYS)
    first = decisions[keys].iloc[0]
    case = decisions[(decisions[keys] == first).all(axis=1) & (decisions["round"] == 0)]
    rows = with_archetype_clusters(case)
    n, c = len(rows), rows["cluster"].nunique()
    clus = dpd_by_round(rows, "attribute", cluster="cluster", B=B, seed=seed).iloc[0]
    agent = dpd_by_round(rows, "attribute", cluster=None, B=B, seed=seed).iloc[0]
    wc, wa = clus["ci_high"] - clus["ci_low"], agent["ci_high"] - agent["ci_low"]
    ratio = wc / wa if wa > 0 else float("nan")
    text = (f"Archetype mode: the {n:,} agents of this run share {c:,} model calls (population cell × replicate), "
            f"about {n / c:,.0f} agents per call. Agents of one call draw from the same probability, so they are not "
            f"independent observations: every interval here resamples the {c:,} archetype × replicate clusters, not "
            f"the agents. For {first['scenario']} × {first['group']} (round 0) the cluster interval of the DPD is "
            f"{wc:.3f} wide; resampling agents would give {wa:.3f}" +
            (f", {ratio:.1f}× narrower — it would count each call's randomness once per agent and call almost any "
             f"gap significant." if ratio >= 1.2 else
             " — about the same here, because the calls of one cell barely differ in this run; where they do, "
             "agent-level intervals are far too narrow (docs/networks.md, \"Why clusters, not agents\")."))
    return ArchetypeNote(n, c, n / c, float(wc), float(wa), float(ratio), text)
