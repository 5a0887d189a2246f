"""WEAT (Caliskan, Bryson & Narayanan 2017) on the Bai et al. stimuli (issue 14).

Targets X, Y (here: stigmatised and default group tokens), attributes A, B (stigma and default
words), embeddings compared by cosine similarity:

    s(w, A, B) = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
    d = (mean_{x∈X} s(x, A, B) − mean_{y∈Y} s(y, A, B)) / std_{w∈X∪Y} s(w, A, B)      (sample std)
    S = Σ_{x∈X} s(x, A, B) − Σ_{y∈Y} s(y, A, B)
    p = P(S(X_i, Y_i) ≥ S) over the equal-size partitions (X_i, Y_i) of X ∪ Y (one-sided)

With X = stigma tokens and A = stigma words, d > 0 is the stereotypical direction, like a positive
association score. The p-value is exact when the partitions number at most ``max_exact``, else
Monte-Carlo over ``B`` random partitions (p = (1 + #{S* ≥ S}) / (B + 1)).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Weat:
    effect_size: float
    statistic: float
    p_value: float
    exact: bool
    n_x: int
    n_y: int


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def association(w: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w (formula in the module docstring)."""
    w, A, B = _unit(w), _unit(A), _unit(B)
    return (w @ A.T).mean(axis=1) - (w @ B.T).mean(axis=1)


def weat(X, Y, A, B, permutations: int = 10_000, seed: int = 0, max_exact: int = 100_000) -> Weat:
    """Effect size d and one-sided permutation p-value of the WEAT."""
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    s = association(np.vstack([X, Y]), np.asarray(A, dtype=float), np.asarray(B, dtype=float))
    nx, n = len(X), len(X) + len(Y)
    sx, sy = s[:nx], s[nx:]
    d = float((sx.mean() - sy.mean()) / s.std(ddof=1)) if s.std(ddof=1) > 0 else float("nan")
    stat = float(sx.sum() - sy.sum())
    total = s.sum()
    # S = Σ_X s − Σ_Y s = 2 Σ_X s − Σ s, so only the X-side sum of each partition is needed.
    if math.comb(n, nx) <= max_exact:
        sums = np.array([s[list(c)].sum() for c in itertools.combinations(range(n), nx)])
        draws, exact = 2 * sums - total, True
        p = float(np.mean(draws >= stat - 1e-12))
    else:
        rng = np.random.default_rng(seed)
        idx = np.argsort(rng.random((permutations, n)), axis=1)[:, :nx]
        draws, exact = 2 * s[idx].sum(axis=1) - total, False
        p = float((1 + np.count_nonzero(draws >= stat - 1e-12)) / (permutations + 1))
    return Weat(d, stat, p, exact, nx, len(Y))


def weat_table(stereotypes, embed, permutations: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per stereotype: X = stigma tokens, Y = default tokens, A = stigma words, B = default
    words, embedded with ``embed(list[str]) -> array``."""
    rows = []
    for i, st in enumerate(stereotypes):
        parts = [list(st.stigma_tokens), list(st.default_tokens), list(st.stigma_words), list(st.default_words)]
        vecs = embed([t for p in parts for t in p])
        cut = np.cumsum([len(p) for p in parts])[:-1]
        X, Y, A, B = np.split(vecs, cut)
        r = weat(X, Y, A, B, permutations=permutations, seed=seed + i)
        rows.append(dict(stereotype=st.name, category=st.category, effect_size=r.effect_size,
                         statistic=r.statistic, p_value=r.p_value, exact=r.exact, n_x=r.n_x, n_y=r.n_y,
                         n_a=len(A), n_b=len(B)))
    return pd.DataFrame(rows)


def correlation(weat_rows: pd.DataFrame, association_stats: pd.DataFrame) -> pd.DataFrame:
    """Per model (and convention): Pearson and Spearman correlation, across stereotypes, of the WEAT
    effect size and the mean association score (level = stereotype); NaN where either is the same for
    every stereotype (a correlation with a constant is not defined)."""
    from scipy.stats import pearsonr, spearmanr

    a = association_stats[association_stats["level"] == "stereotype"]
    rows = []
    for (model, conv), g in a.groupby(["model", "convention"]):
        m = g.merge(weat_rows, left_on="name", right_on="stereotype").dropna(subset=["mean", "effect_size"])
        if len(m) < 3:
            continue
        constant = m["mean"].nunique() < 2 or m["effect_size"].nunique() < 2
        rows.append(dict(model=model, convention=conv, n_stereotypes=len(m),
                         pearson=float("nan") if constant else float(pearsonr(m["mean"], m["effect_size"])[0]),
                         spearman=float("nan") if constant else float(spearmanr(m["mean"], m["effect_size"])[0])))
    return pd.DataFrame(rows, columns=["model", "convention", "n_stereotypes", "pearson", "spearman"])
