"""DPD on probabilities: the expected-rate DPD of score-mode runs (issue 14).

In ``decision_mode: score`` each agent i of attribute a carries p_i = P(target | persona i), its
model's probability of the target choice. The sampled DPD throws most of that away (a 0.49 and a
0.51 become 0 and 1); the expected-rate DPD keeps it:

    m_a = mean_{i ∈ a} p_i          DPD_p = max_a m_a − min_a m_a

Agents are the independent units (each has its own persona), so the interval resamples agents
within attributes and the test permutes attribute labels across agents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

CASE_KEYS = ["model", "condition", "scenario", "group"]
COLUMNS = [*CASE_KEYS, "dpd_p", "ci_low_p", "ci_high_p", "p_value_p"]


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
    """Percentile bootstrap of DPD_p over agents: for b = 1..B draw n_a agents with replacement
    from attribute a (independently per attribute), DPD_p^b = max_a m_a^b − min_a m_a^b; the interval
    is the (1−level)/2 and (1+level)/2 quantiles of DPD_p^b."""
    rng = np.random.default_rng(seed)
    n = np.array([s.size for s in samples])
    sums = np.column_stack([s[rng.integers(0, s.size, size=(B, s.size))].sum(axis=1) for s in samples])
    lo, hi = np.quantile(_dpd_of_means(sums, n), [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def permutation_p(samples: list[np.ndarray], B: int = 10_000, seed: int = 0) -> float:
    """Permutation test of equal means across attributes (statistic DPD_p).

    Pool the N = Σ n_a agents' p_i; for b = 1..B shuffle the pool and split it into groups of the
    observed sizes n_a; p = (1 + #{DPD_p^b ≥ DPD_p^obs}) / (B + 1).
    """
    n = np.array([s.size for s in samples])
    pooled = np.concatenate(samples)
    observed = _dpd_of_means(np.array([s.sum() for s in samples]), n)
    rng = np.random.default_rng(seed)
    perm = rng.permuted(np.broadcast_to(pooled, (B, pooled.size)), axis=1)
    sums = np.add.reduceat(perm, np.r_[0, np.cumsum(n)[:-1]], axis=1)
    draws = _dpd_of_means(sums, n)
    return float((1 + np.count_nonzero(draws >= observed - 1e-12)) / (B + 1))


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


def prob_dpd_table(decisions: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per case with ``p_target`` values: dpd_p, ci_low_p, ci_high_p, p_value_p.

    Only valid rows with a p_target enter (sample-mode runs have none and give no rows).
    """
    if decisions is None or "p_target" not in decisions or decisions.empty:
        return pd.DataFrame(columns=COLUMNS)
    d = decisions[(decisions["status"] == "valid") & decisions["p_target"].notna()]
    rows = []
    for i, (key, g) in enumerate(d.groupby(CASE_KEYS, sort=True)):
        s = int(np.random.SeedSequence([seed, 7, i]).generate_state(1)[0])
        r = prob_dpd([a["p_target"].to_numpy(dtype=float) for _, a in g.groupby("attribute")], B=B, seed=s)
        rows.append(dict(zip(CASE_KEYS, key), dpd_p=r.dpd, ci_low_p=r.ci_low, ci_high_p=r.ci_high,
                         p_value_p=r.p_value))
    return pd.DataFrame(rows, columns=COLUMNS)
