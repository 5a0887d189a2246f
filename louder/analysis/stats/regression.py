"""One regression engine for attribute effects: a treatment-coded design, fitted as a logistic GLM
(the population regression, ``population.logistic_regression``; discrim-eval's score in sample mode)
or as a linear mixed model (discrim-eval's score in score mode, ``discrimination``).

Design. For factors g (columns of the data) with reference levels ref_g, one 0/1 column per
non-reference level a of each factor: x_{g,a} = 1[g = a] (treatment coding; levels in sorted order),
plus an intercept. Nuisance columns (e.g. scenario fixed effects) come after the terms and are not
reported.

A fit returns, for each term, the coefficient β, its standard error se and the two-sided Wald
p-value 2·(1 − Φ(|β/se|)), with a ``status`` that says when there is nothing to report
(``Fit``). Statuses: "ok"; "separation" (a non-finite or huge coefficient or standard error: some
level predicts the outcome perfectly); "singular" (a standard error that is not finite or is 0: the
design is degenerate); "no residual variance" (a linear model fits every response exactly: the
coefficients are exact differences with no sampling spread to test — e.g. a deterministic model's
scores); "failed" (statsmodels raised, or did not converge).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

NAN = float("nan")


@dataclass(frozen=True)
class Term:
    """One reported column of the design: ``factor`` = ``level`` against ``reference``."""

    factor: str
    level: str
    reference: str


@dataclass(frozen=True)
class Fit:
    """Coefficients of the design's terms (in ``terms`` order; empty unless status is "ok")."""

    status: str
    n: int
    method: str
    terms: tuple[Term, ...]
    coef: np.ndarray
    se: np.ndarray
    p_value: np.ndarray

    def table(self, z: float) -> pd.DataFrame:
        """Tidy: factor, level, reference, coef, ci_low, ci_high (β ± z·se), p_value."""
        cols = ["factor", "level", "reference", "coef", "ci_low", "ci_high", "p_value"]
        if self.status != "ok":
            return pd.DataFrame(columns=cols)
        return pd.DataFrame({"factor": [t.factor for t in self.terms], "level": [t.level for t in self.terms],
                             "reference": [t.reference for t in self.terms], "coef": self.coef,
                             "ci_low": self.coef - z * self.se, "ci_high": self.coef + z * self.se,
                             "p_value": self.p_value}, columns=cols)


def failed(status: str, n: int, method: str, terms=()) -> Fit:
    empty = np.array([], dtype=float)
    return Fit(status, n, method, tuple(terms), empty, empty, empty)


def treatment_design(d: pd.DataFrame, factors: list[str], refs: dict[str, str]) -> tuple[pd.DataFrame, list[Term]]:
    """The 0/1 columns x_{g,a} = 1[d[g] = a] for every level a ≠ refs[g] of every factor g (sorted
    levels), named "g=a", with their ``Term``s. No intercept."""
    cols, terms = [], []
    for g in factors:
        for a in sorted(set(d[g]) - {refs[g]}):
            cols.append((d[g] == a).astype(float).rename(f"{g}={a}"))
            terms.append(Term(g, a, refs[g]))
    return (pd.concat(cols, axis=1) if cols else pd.DataFrame(index=d.index)), terms


def dummies(values: pd.Series, name: str) -> pd.DataFrame:
    """Treatment-coded nuisance columns for ``values`` (first sorted level as reference)."""
    levels = sorted(set(values))
    return pd.DataFrame({f"{name}={v}": (values == v).astype(float) for v in levels[1:]}, index=values.index)


def _with_constant(X: pd.DataFrame) -> pd.DataFrame:
    from statsmodels.tools.tools import add_constant  # not statsmodels.api: importing it costs ~0.5 s

    return add_constant(X, has_constant="add")


def outcome_counts(d: pd.DataFrame, columns: list[str], y) -> pd.DataFrame:
    """One row per distinct (values of ``columns``, y) of ``d`` with its number of rows in ``count``:
    what a logistic GLM on those columns' indicators needs of the data (``logit_glm``'s ``counts``).
    Missing values are kept as values of their own, as the row-level design keeps them."""
    cells = d[columns].assign(y=np.asarray(y, dtype=float))
    return cells.groupby([*columns, "y"], dropna=False, sort=False, observed=True).size().rename("count").reset_index()


def logit_glm(y, X: pd.DataFrame, terms: list[Term], nuisance: pd.DataFrame | None = None,
              method: str = "logit", counts=None) -> Fit:
    """Logistic GLM logit P(y = 1) = β₀ + Σ β_t x_t (+ nuisance columns), statsmodels ``GLM`` with the
    Binomial family (IRLS). The terms are the first columns after the intercept. "separation" when any
    coefficient is non-finite or |β| > 15 or any se is non-finite or > 50; "failed" when statsmodels
    raises or IRLS did not converge.

    ``counts``: row i stands for counts[i] identical observations (x_i, y_i) (frequency weights; n =
    Σ counts). The log-likelihood Σ_i c_i [y_i η_i − log(1 + e^{η_i})] is the row-level one summed by
    pattern, so β, the information matrix X'WX and hence se and p are those of the fit on every row;
    IRLS even takes the same steps (same start μ₀ = (y + ½)/2 per row, same deviance to stop on), so
    they agree to rounding. Rows of a categorical design are mostly repeats: ``outcome_counts``."""
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM

    y = np.asarray(y, dtype=float)
    n = len(y) if counts is None else int(np.sum(counts))
    full = X if nuisance is None or nuisance.empty else pd.concat([X, nuisance], axis=1)
    design = _with_constant(full)
    weights = None if counts is None else np.asarray(counts, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # separation / convergence warnings become the status below
        try:
            res = GLM(y, design.to_numpy(), family=Binomial(), freq_weights=weights).fit()
        except Exception:  # noqa: BLE001 — statsmodels raises several types for singular/separated data
            return failed("failed", n, method, terms)
    beta, se = np.asarray(res.params), np.asarray(res.bse)
    if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(se))) or np.abs(beta).max() > 15 or se.max() > 50:
        return failed("separation", n, method, terms)
    if not res.converged:
        return failed("failed", n, method, terms)
    k = len(terms)
    return Fit("ok", n, method, tuple(terms), beta[1:k + 1], se[1:k + 1], np.asarray(res.pvalues)[1:k + 1])


def _exact(scale: float, y: np.ndarray) -> bool:
    """The residual variance is 0 up to rounding (relative to the response's own variance)."""
    return bool(np.isfinite(scale) and scale <= 1e-12 * (1 + float(np.var(y))))


def ols(y, X: pd.DataFrame, terms: list[Term], method: str = "ols") -> Fit:
    """Ordinary least squares y = β₀ + Σ β_t x_t + ε (statsmodels ``OLS``), classical standard errors.
    "singular" when a standard error is not finite and positive (e.g. no residual variance)."""
    from statsmodels.regression.linear_model import OLS

    y = np.asarray(y, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = OLS(y, _with_constant(X).to_numpy()).fit()
        except Exception:  # noqa: BLE001
            return failed("failed", len(y), method, terms)
    k = len(terms)
    if _exact(res.scale, y):
        return failed("no residual variance", len(y), method, terms)
    se = np.asarray(res.bse)[1:k + 1]
    if not np.all(np.isfinite(se) & (se > 0)):
        return failed("singular", len(y), method, terms)
    return Fit("ok", len(y), method, tuple(terms), np.asarray(res.params)[1:k + 1], se,
               np.asarray(res.pvalues)[1:k + 1])


def mixed_lm(y, X: pd.DataFrame, terms: list[Term], groups, random_slopes: bool = False,
             method: str = "mixedlm") -> Fit:
    """Linear mixed model y_ij = β₀ + Σ β_t x_t,ij + u_j (+ Σ v_jt x_t,ij with ``random_slopes``) + ε_ij,
    u_j (and v_j) ~ N(0, Σ) per group j (scenario), ε ~ N(0, σ²), fitted by REML (statsmodels
    ``MixedLM``: its default optimisers, then Powell's when they do not converge). Fixed effects β
    with their Wald standard errors. "singular" when a standard error is not finite and positive;
    "failed" when statsmodels raises or did not converge. (A random-effect variance at its boundary 0 is not a failure: the fixed effects stand.)"""
    from statsmodels.regression.mixed_linear_model import MixedLM

    y = np.asarray(y, dtype=float)
    exog = _with_constant(X)
    exog_re = exog.iloc[:, : len(terms) + 1].to_numpy() if random_slopes else None
    try:
        model = MixedLM(y, exog.to_numpy(), groups=np.asarray(groups), exog_re=exog_re)
    except Exception:  # noqa: BLE001
        return failed("failed", len(y), method, terms)
    res = None
    # statsmodels' default (gradient) optimisers first; when they do not converge — a variance that few
    # scenarios identify weakly, near its boundary 0 — Powell's derivative-free search, then L-BFGS
    for how in ({}, {"method": ["powell", "lbfgs"]}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # boundary / convergence warnings become the status below
            try:
                res = model.fit(reml=True, **how)
            except Exception:  # noqa: BLE001 — singular matrices, failed optimisers
                continue
        if res.converged:
            break
    if res is None:
        return failed("failed", len(y), method, terms)
    k = len(terms)
    if _exact(res.scale, y):
        return failed("no residual variance", len(y), method, terms)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a covariance with a negative diagonal: NaN se, "singular" below
        beta, se = np.asarray(res.fe_params)[1:k + 1], np.asarray(res.bse_fe)[1:k + 1]
        p = np.asarray(res.pvalues)[1:k + 1]
    if not np.all(np.isfinite(beta)) or not np.all(np.isfinite(se) & (se > 0)):
        return failed("singular", len(y), method, terms)
    if not res.converged:
        return failed("failed", len(y), method, terms)
    return Fit("ok", len(y), method, tuple(terms), beta, se, p)
