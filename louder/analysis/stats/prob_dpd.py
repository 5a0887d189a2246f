"""DPD on probabilities: the expected-rate DPD of score-mode runs (issue 14).

In ``decision_mode: score`` each agent i of attribute a carries p_i = P(target | persona i), its
model's probability of the target choice. The sampled DPD throws most of that away (a 0.49 and a
0.51 become 0 and 1); the expected-rate DPD keeps it:

    m_a = mean_{i ∈ a} p_i          DPD_p = max_a m_a − min_a m_a

Agents are the independent units (each has its own persona), so the interval resamples agents
within attributes and the test permutes attribute labels across agents. Intervals are those of
``louder.analysis.stats.intervals`` (they contain DPD_p and keep their coverage at DPD_p = 0).

Clusters (issue 14 point 1; archetype mode): agents that share an archetype × replicate share one
model call, hence one p — they are not independent. With a cluster id per agent the interval
resamples clusters instead (``cluster_interval``) and the test permutes attribute labels across
clusters (``cluster_permutation_p``). ``prob_dpd_table`` does this by itself for archetype rows
(columns ``cell_id`` and ``bucket``): cluster = cell_id/replicate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import intervals as I
from louder.analysis.stats import substream
from louder.analysis.stats.core import permuted_rows
from louder.analysis.stats.keys import CASE_KEYS, is_valid

COLUMNS = [*CASE_KEYS, "dpd_p", "ci_low_p", "ci_high_p", "p_value_p"]
TIE = 1e-9  # DPDs closer than this are equal in the permutation tests


@dataclass(frozen=True)
class ProbDPD:
    dpd: float
    ci_low: float
    ci_high: float
    p_value: float


NAN = ProbDPD(float("nan"), float("nan"), float("nan"), float("nan"))


def _dpd_of_means(sums: np.ndarray, n: np.ndarray) -> np.ndarray:
    means = sums / n
    return means.max(axis=-1) - means.min(axis=-1)


def bootstrap_interval(samples: list[np.ndarray], B: int = 10_000, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float]:
    """Interval for DPD_p resampling agents: for b = 1..B draw n_a agents with replacement from
    attribute a (independently per attribute), m_a^b = their mean p; var(m_a) = mean_i (p_i − m_a)² / n_a
    (plug-in, also per resample); the simultaneous bootstrap-t band of every m_a − m_b projected onto
    max − min (``intervals.dpd_interval``: contains DPD_p, holds its coverage at DPD_p = 0), its critical
    value at least Student's t with min_a n_a − 1 degrees of freedom."""
    rng = np.random.default_rng(seed)
    n = np.array([s.size for s in samples])
    draws = [s[rng.integers(0, s.size, size=(B, s.size))] for s in samples]
    sums = np.column_stack([d.sum(axis=1) for d in draws])
    squares = np.column_stack([(d * d).sum(axis=1) for d in draws])
    del draws

    def var(s1, s2):  # plug-in variance of each attribute's mean from Σp and Σp²
        return np.maximum(s2 / n - (s1 / n) ** 2, 0) / n

    obs1, obs2 = np.array([s.sum() for s in samples]), np.array([(s * s).sum() for s in samples])
    return I.dpd_interval(obs1 / n, sums / n, I.pair_sum(var(obs1, obs2)), I.pair_sum(var(sums, squares)), level,
                          df=n.min() - 1)


def permutation_p(samples: list[np.ndarray], B: int = 10_000, seed: int = 0) -> float:
    """Permutation test of equal means across attributes (statistic DPD_p).

    Pool the N = Σ n_a agents' p_i; for b = 1..B shuffle the pool and split it into groups of the
    observed sizes n_a; p = (1 + #{DPD_p^b ≥ DPD_p^obs}) / (B + 1).
    """
    n = np.array([s.size for s in samples])
    pooled = np.concatenate(samples)
    observed = _dpd_of_means(np.array([s.sum() for s in samples]), n)
    rng = np.random.default_rng(seed)
    starts = np.r_[0, np.cumsum(n)[:-1]]
    draws = permuted_rows(rng, pooled, B, lambda perm: _dpd_of_means(np.add.reduceat(perm, starts, axis=1), n))
    # means equal to 1e-9 are ties (calibrated agents' means agree to the offsets' solver tolerance, not to 1e-12)
    return float((1 + np.count_nonzero(draws >= observed - TIE)) / (B + 1))


def _cluster_sums(p: np.ndarray, attribute: np.ndarray, cluster: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """S[c, a] = Σ p_i and n[c, a] = #agents over the agents i of cluster c with attribute a."""
    attrs = sorted(set(attribute))
    ci, clusters = pd.factorize(cluster, sort=True)
    ai = pd.Index(attrs).get_indexer(attribute)
    S = np.zeros((len(clusters), len(attrs)))
    n = np.zeros_like(S)
    np.add.at(S, (ci, ai), p)
    np.add.at(n, (ci, ai), 1)
    return S, n, attrs


def cluster_interval(p, attribute, cluster, B: int = 10_000, seed: int = 0,
                     level: float = 0.95) -> tuple[float, float]:
    """Cluster bootstrap interval for DPD_p.

    With C clusters, S_ca = Σ_{i ∈ c, a} p_i and n_ca = #{i ∈ c, a}: resample b draws C clusters
    with replacement, w_bc = how often cluster c is drawn; m_a^b = Σ_c w_bc S_ca / Σ_c w_bc n_ca with
    its linearised variance Σ_c w_bc (S_ca − m_a^b n_ca)² / (Σ_c w_bc n_ca)² (``intervals.ratio_variance``;
    w = 1 for the data). The simultaneous bootstrap-t band of every m_a − m_b is projected onto max − min
    (``intervals.dpd_interval``, critical value at least Student's t with min_a C_a − 1 degrees of
    freedom, C_a the clusters of attribute a); pairs with an attribute a resample did not draw are
    skipped in it. One agent per cluster gives the bootstrap over agents (with the attribute sizes left free)."""
    S, n, _ = _cluster_sums(np.asarray(p, float), np.asarray(attribute, object), np.asarray(cluster, object))
    rng = np.random.default_rng(seed)
    C = S.shape[0]
    rates, variances = [], []
    chunk = max(1, 20_000_000 // max(C, 1))
    for start in range(0, B, chunk):
        m = min(chunk, B - start)
        w = np.stack([np.bincount(rng.integers(0, C, C), minlength=C) for _ in range(m)]).astype(float)
        r, v = I.ratio_variance(w, S, n)
        rates.append(r)
        variances.append(I.pair_sum(v))
    r, v = I.ratio_variance(np.ones(C), S, n)
    df = (n > 0).sum(axis=0).min() - 1  # clusters of the attribute with fewest
    return I.dpd_interval(r, np.concatenate(rates), I.pair_sum(v), np.concatenate(variances), level, df=df)


def cluster_permutation_p(p, attribute, cluster, B: int = 10_000, seed: int = 0) -> float:
    """Permutation test of equal means across attributes, permuting whole clusters.

    Each cluster lies within one attribute (an archetype's agents share its attributes; a cluster
    that spans attributes raises ValueError). Shuffle the attribute labels over the C clusters,
    keeping the count per attribute; m_a = Σ_{c ∈ a} S_c / Σ_{c ∈ a} n_c; statistic DPD_p;
    p = (1 + #{DPD_p^b ≥ DPD_p^obs}) / (B + 1)."""
    S, n, _ = _cluster_sums(np.asarray(p, float), np.asarray(attribute, object), np.asarray(cluster, object))
    if ((n > 0).sum(axis=1) > 1).any():
        raise ValueError("a cluster spans several attributes; clusters must lie within one attribute")
    label = (n > 0).argmax(axis=1)
    s, k = S.sum(axis=1), n.sum(axis=1)
    A = S.shape[1]

    def stat(lab: np.ndarray) -> np.ndarray:  # lab: (rows, C) labels → DPD per row
        idx = (lab + A * np.arange(lab.shape[0])[:, None]).ravel()
        size = A * lab.shape[0]
        sums = np.bincount(idx, np.tile(s, lab.shape[0]), size).reshape(-1, A)
        counts = np.bincount(idx, np.tile(k, lab.shape[0]), size).reshape(-1, A)
        means = sums / counts
        return means.max(axis=-1) - means.min(axis=-1)

    observed = stat(label[None, :])[0]
    rng = np.random.default_rng(seed)
    draws = permuted_rows(rng, label, B, stat)
    return float((1 + np.count_nonzero(draws >= observed - TIE)) / (B + 1))


def prob_dpd_clustered(p, attribute, cluster, B: int = 10_000, seed: int = 0, level: float = 0.95) -> ProbDPD:
    """DPD_p with the cluster bootstrap interval and the cluster permutation p-value; rows with a
    NaN p are left out, fewer than two attributes give NaN."""
    p, attribute, cluster = (np.asarray(x, dtype=float if i == 0 else object) for i, x in enumerate((p, attribute,
                                                                                                      cluster)))
    keep = ~np.isnan(p)
    p, attribute, cluster = p[keep], attribute[keep], cluster[keep]
    if len(set(attribute)) < 2:
        return NAN
    S, n, _ = _cluster_sums(p, attribute, cluster)
    means = S.sum(axis=0) / n.sum(axis=0)
    lo, hi = cluster_interval(p, attribute, cluster, B=B, seed=seed, level=level)
    return ProbDPD(float(means.max() - means.min()), lo, hi, cluster_permutation_p(p, attribute, cluster, B=B,
                                                                                     seed=seed + 1))


def prob_dpd(samples: list, B: int = 10_000, seed: int = 0, level: float = 0.95) -> ProbDPD:
    """DPD_p with its bootstrap interval and permutation p-value; attributes without any p are left
    out, and fewer than two attributes give NaN."""
    samples = [np.asarray(s, dtype=float) for s in samples]
    samples = [s[~np.isnan(s)] for s in samples]
    samples = [s for s in samples if s.size]
    if len(samples) < 2:
        return NAN
    observed = float(_dpd_of_means(np.array([s.sum() for s in samples]), np.array([s.size for s in samples])))
    lo, hi = bootstrap_interval(samples, B=B, seed=seed, level=level)
    return ProbDPD(observed, lo, hi, permutation_p(samples, B=B, seed=seed + 1))


def archetype_clusters(decisions: pd.DataFrame) -> pd.Series | None:
    """cell_id/replicate for rows of an archetype run (columns cell_id and bucket), else None."""
    if {"cell_id", "bucket", "replicate"} <= set(decisions.columns):
        return decisions["cell_id"].astype(str) + "/" + decisions["replicate"].astype(str)
    return None


def prob_dpd_table(decisions: pd.DataFrame, B: int = 10_000, seed: int = 0, cluster: str | None = None
                   ) -> pd.DataFrame:
    """One row per case with ``p_target`` values: dpd_p, ci_low_p, ci_high_p, p_value_p.

    Only valid rows with a p_target enter (sample-mode runs have none and give no rows). Runs with
    rounds of influence use round 0, the independent decisions (per-round DPDs: analysis.network).
    ``cluster`` names a column of cluster ids to resample and permute instead of agents; archetype
    rows get cell_id/replicate clusters without being asked.
    """
    if decisions is None or "p_target" not in decisions or decisions.empty:
        return pd.DataFrame(columns=COLUMNS)
    d = decisions[is_valid(decisions) & decisions["p_target"].notna()]
    if "round" in d.columns:
        d = d[d["round"] == 0]
    clusters = d[cluster] if cluster else archetype_clusters(d)
    if clusters is not None:
        d = d.assign(_cluster=clusters)
    rows = []
    for i, (key, g) in enumerate(d.groupby(CASE_KEYS, sort=True)):
        s = substream(seed, 7, i)
        if clusters is not None:
            r = prob_dpd_clustered(g["p_target"].to_numpy(dtype=float), g["attribute"].to_numpy(object),
                                   g["_cluster"].to_numpy(object), B=B, seed=s)
        else:
            r = prob_dpd([a["p_target"].to_numpy(dtype=float) for _, a in g.groupby("attribute")], B=B, seed=s)
        rows.append(dict(zip(CASE_KEYS, key), dpd_p=r.dpd, ci_low_p=r.ci_low, ci_high_p=r.ci_high,
                         p_value_p=r.p_value))
    return pd.DataFrame(rows, columns=COLUMNS)
