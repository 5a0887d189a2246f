"""Every choice, not only the target: rates per attribute and a test of independence (issue 14).

DPD compares the target's rate; with three or more choices it lumps the others together. Here the
whole attribute × choice table of valid decisions is kept:

    rate(a, c) = n(a, c) / n(a)

and the test asks whether choice is independent of attribute, with Pearson's statistic

    X² = Σ_{a,c} (n(a,c) − E(a,c))² / E(a,c),   E(a,c) = n(a) · n(c) / N.

When every expected count is ≥ 5, p comes from the χ² distribution with (k−1)(m−1) degrees of
freedom; otherwise from a Monte-Carlo permutation test (shuffle the choices across agents, keeping
both margins): p = (1 + #{X²* ≥ X²}) / (B + 1), which is exact up to simulation error at any N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import substream
from louder.analysis.stats.core import permuted_rows
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, valid

RATE_COLUMNS = [*CASE_KEYS, "attribute", "choice", "n", "n_valid", "rate"]
TEST_COLUMNS = [*CASE_KEYS, "chi2", "df", "p_independence", "independence_test"]


@dataclass(frozen=True)
class Independence:
    chi2: float
    df: int
    p_value: float
    method: str  # chi-square | monte-carlo | no variation


def _chi2(counts: np.ndarray) -> np.ndarray:
    """Pearson X² over the last two axes (rows: attributes, columns: choices)."""
    n = counts.sum(axis=(-2, -1), keepdims=True)
    expected = counts.sum(axis=-1, keepdims=True) * counts.sum(axis=-2, keepdims=True) / n
    return ((counts - expected) ** 2 / expected).sum(axis=(-2, -1))


def independence(attribute_codes, choice_codes, B: int = 10_000, seed: int = 0) -> Independence:
    """Test of independence of attribute and choice over one case's valid decisions (module docstring)."""
    # the codes of the sorted distinct values (np.unique's), by hashing: sorting 100,000 strings costs more
    a = pd.factorize(np.asarray(attribute_codes), sort=True)[0]
    c = pd.factorize(np.asarray(choice_codes), sort=True)[0]
    k, m = a.max(initial=-1) + 1, c.max(initial=-1) + 1
    if k < 2 or m < 2:
        return Independence(float("nan"), 0, float("nan"), "no variation")
    counts = np.bincount(a * m + c, minlength=k * m).reshape(k, m).astype(float)
    stat, df = float(_chi2(counts)), int((k - 1) * (m - 1))
    expected = counts.sum(1, keepdims=True) * counts.sum(0, keepdims=True) / counts.sum()
    if expected.min() >= 5:
        return Independence(stat, df, float(dist.chi2_sf(stat, df)), "chi-square")
    rng = np.random.default_rng(seed)
    draws = permuted_rows(rng, c, B, lambda perm: _shuffled_chi2(a, perm, k, m))
    return Independence(stat, df, float((1 + np.count_nonzero(draws >= stat - 1e-9)) / (B + 1)), "monte-carlo")


def _shuffled_chi2(a: np.ndarray, perm: np.ndarray, k: int, m: int) -> np.ndarray:
    """X² of each row of shuffled choice codes ``perm`` against the attribute codes ``a``."""
    rows = perm.shape[0]
    flat = (a * m + perm) + (np.arange(rows) * k * m)[:, None]
    return _chi2(np.bincount(flat.ravel(), minlength=rows * k * m).reshape(rows, k, m).astype(float))


def choice_rates(decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per case × attribute × choice seen among the case's valid decisions: n, n_valid, rate."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=RATE_COLUMNS)
    d = valid(decisions, [*ATTRIBUTE_KEYS, "decision"])
    if d.empty:
        return pd.DataFrame(columns=RATE_COLUMNS)
    seen = d.groupby([*CASE_KEYS, "attribute", "decision"], sort=False).size().rename("n").reset_index()
    # every attribute × every choice of its case, zero counts included
    grid = (seen[[*CASE_KEYS, "attribute"]].drop_duplicates()
            .merge(seen[[*CASE_KEYS, "decision"]].drop_duplicates(), on=CASE_KEYS))
    t = grid.merge(seen, how="left", on=[*CASE_KEYS, "attribute", "decision"]).rename(columns={"decision": "choice"})
    t["n"] = t["n"].fillna(0).astype("int64")
    t["n_valid"] = t.groupby([*CASE_KEYS, "attribute"], sort=False)["n"].transform("sum")
    t["rate"] = t["n"] / t["n_valid"]
    return t.sort_values([*CASE_KEYS, "attribute", "choice"], ignore_index=True)[RATE_COLUMNS]


def independence_table(decisions: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per case: X², df, p_independence and which test gave it."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=TEST_COLUMNS)
    d = valid(decisions, [*ATTRIBUTE_KEYS, "decision"])
    rows = []
    for i, (key, g) in enumerate(d.groupby(CASE_KEYS, sort=True)):
        s = substream(seed, 13, i)
        r = independence(g["attribute"].to_numpy(), g["decision"].astype(str).to_numpy(), B=B, seed=s)
        rows.append(dict(zip(CASE_KEYS, key), chi2=r.chi2, df=r.df, p_independence=r.p_value,
                         independence_test=r.method))
    return pd.DataFrame(rows, columns=TEST_COLUMNS)
