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
scores); "not converged" (the mixed model's optimisers do not agree on one optimum, ``reml``);
"failed" (statsmodels raised, or did not converge).

The logistic GLM is fitted here by IRLS (``irls_logit``: statsmodels' ``GLM`` step for step, without its ~0.9 s
import); OLS is statsmodels'. The linear mixed model is fitted here too (``reml``): statsmodels'
``MixedLM`` inverts the random effects' covariance, so its likelihood jumps where that covariance is
singular — where a random slope estimated from a few scenarios usually sits — and its optimisers stop
short of it, at points that move with the library's version (issue 47: a 2 % change of an interval).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from louder.analysis.stats import distributions as dist

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
    boundary: bool | None = None  # a mixed model's: a random-effect variance at its boundary 0 (``reml``)

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
    """[const, X]: what statsmodels' ``add_constant(X, has_constant="add")`` makes of a DataFrame (a column
    "const" of 1.0 first), without its check of every column for constancy (a pandas ``apply``)."""
    return pd.concat([pd.DataFrame({"const": np.ones(len(X))}, index=X.index), X], axis=1)


def outcome_counts(d: pd.DataFrame, columns: list[str], y) -> pd.DataFrame:
    """One row per distinct (values of ``columns``, y) of ``d`` with its number of rows in ``count``:
    what a logistic GLM on those columns' indicators needs of the data (``logit_glm``'s ``counts``).
    Missing values are kept as values of their own, as the row-level design keeps them."""
    cells = d[columns].assign(y=np.asarray(y, dtype=float))
    return cells.groupby([*columns, "y"], dropna=False, sort=False, observed=True).size().rename("count").reset_index()


def irls_logit(y, X: np.ndarray, weights=None, maxiter: int = 100, tol: float = 1e-8):
    """Maximum likelihood of logit P(y_i = 1) = x_i'β by IRLS, statsmodels' ``GLM(y, X, Binomial(),
    freq_weights=weights).fit()`` step for step (tests/test_discrimination.py compares them on random
    designs), in numpy alone: statsmodels' import — scipy.stats with it — takes ~0.9 s, a quarter of a
    cold ``louder analyze`` that fits nothing else.

    μ₀ = (y + ½)/2, η₀ = logit μ₀; then w = c·μ(1 − μ) (c: the frequency weights), z = η + (y − μ)/(μ(1 − μ))
    (μ clipped to [ε, 1 − ε] there), β = the least-squares solution of √w·X β = √w·z, η = Xβ, μ = 1/(1 + e^{−η}),
    until the deviance D = 2 Σ c [y log(y/μ) + (1 − y) log((1 − y)/(1 − μ))] changes by at most ``tol``.
    Returns (β, cov = (X'WX)⁺ with the last step's W, converged). Raises ValueError where statsmodels does:
    a deviance or working response that is not finite."""
    eps = np.finfo(float).eps
    y, X = np.asarray(y, dtype=float), np.asarray(X, dtype=float)
    c = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)

    def deviance(mu):
        a = np.clip(y / (mu + 1e-20), eps, np.inf)
        b = np.clip((1 - y) / (1 - mu + 1e-20), eps, np.inf)
        return float(np.sum(c * 2 * (y * np.log(a) + (1 - y) * np.log(b))))

    mu = (y + 0.5) / 2
    p = np.clip(mu, eps, 1 - eps)
    eta = np.log(p / (1 - p))
    dev = [np.inf, deviance(mu)]
    if np.isnan(dev[-1]):
        raise ValueError("the first deviance is not a number")
    converged = False
    for _ in range(maxiter):
        p = np.clip(mu, eps, 1 - eps)
        v = p * (1 - p)
        w = c * (1.0 / ((1 / v) ** 2 * v))  # statsmodels' 1 / (g'(μ)² V(μ)), in its order of operations
        z = eta + (1 / v) * (y - mu)
        sw = np.sqrt(w)
        wx, wz = X * sw[:, None], z * sw
        if not (np.all(np.isfinite(wz)) and np.all(np.isfinite(w))):
            raise ValueError("a working response or weight is not finite")
        beta = np.linalg.lstsq(wx, wz, rcond=-1)[0]
        eta = X @ beta
        mu = 1 / (1 + np.exp(-eta))
        dev.append(deviance(mu))
        converged = bool(np.isclose(dev[-2], dev[-1], rtol=0, atol=tol))
        if converged:
            break
    pinv = np.linalg.pinv(wx)  # statsmodels' closing WLS step: β and (X'WX)⁺ from the pseudo-inverse
    return pinv @ wz, pinv @ pinv.T, converged


def logit_glm(y, X: pd.DataFrame, terms: list[Term], nuisance: pd.DataFrame | None = None,
              method: str = "logit", counts=None) -> Fit:
    """Logistic GLM logit P(y = 1) = β₀ + Σ β_t x_t (+ nuisance columns), fitted by IRLS (``irls_logit``:
    statsmodels' ``GLM`` with the Binomial family, step for step). The terms are the first columns after the
    intercept; se = √diag((X'WX)⁺), p = 2(1 − Φ(|β/se|)). "separation" when any coefficient is non-finite or
    |β| > 15 or any se is non-finite or > 50; "failed" when the fit raises or IRLS did not converge.

    ``counts``: row i stands for counts[i] identical observations (x_i, y_i) (frequency weights; n =
    Σ counts). The log-likelihood Σ_i c_i [y_i η_i − log(1 + e^{η_i})] is the row-level one summed by
    pattern, so β, the information matrix X'WX and hence se and p are those of the fit on every row;
    IRLS even takes the same steps (same start μ₀ = (y + ½)/2 per row, same deviance to stop on), so
    they agree to rounding. Rows of a categorical design are mostly repeats: ``outcome_counts``."""
    y = np.asarray(y, dtype=float)
    n = len(y) if counts is None else int(np.sum(counts))
    full = X if nuisance is None or nuisance.empty else pd.concat([X, nuisance], axis=1)
    design = _with_constant(full)
    with np.errstate(all="ignore"):  # overflow and 0/0 of a separating fit become the status below
        try:
            beta, cov, converged = irls_logit(y, design.to_numpy(dtype=float), counts)
        except (ValueError, np.linalg.LinAlgError):
            return failed("failed", n, method, terms)
        se = np.sqrt(np.diag(cov))
    if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(se))) or np.abs(beta).max() > 15 or se.max() > 50:
        return failed("separation", n, method, terms)
    if not converged:
        return failed("failed", n, method, terms)
    k = len(terms)
    b, s = beta[1:k + 1], se[1:k + 1]
    return Fit("ok", n, method, tuple(terms), b, s, 2 * dist.normal_sf(np.abs(b / s)))


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


# --- the linear mixed model, by REML -----------------------------------------------------------------

REML_STARTS = (1.0, 0.1, 10.0)  # T = s·I: lme4's start (1) and one a decade either side
# first-order optimality of the REML log-likelihood, per unit of T: lme4's absolute gradient check (0.002 on
# the deviance −2ℓ). Quasi-Newton stops where ℓ's rounding (~10⁻¹² of ℓ) hides its progress along the flat
# directions of a boundary fit, a gradient of a few 10⁻⁴ there; SQP, stopping on the exact gradient, goes on
GTOL = 1e-3
# the optimisers and starts compared: quasi-Newton with bounds (L-BFGS-B) and sequential quadratic programming
# (SLSQP), both with the exact gradient. (Derivative-free searches — Powell's, Nelder–Mead — stall where a
# diagonal of T meets its bound 0; truncated Newton (TNC) runs out of evaluations along a boundary fit's flat
# directions.) The fit kept is then polished by Newton's method: the last digits never hang on which run won.
RUNS = tuple((how, s) for how in ("L-BFGS-B", "SLSQP") for s in REML_STARTS)
AGREE = 1e-4  # relative: two optima that give the same β and se to this are one
BOUNDARY = 1e-4  # a relative standard deviation (random effect ÷ residual) below this is 0 (lme4's isSingular)


@dataclass(frozen=True)
class Reml:
    """A REML fit (``reml``). ``status`` "ok" or "not converged" (no β then); ``beta`` and its covariance
    ``cov`` = σ̂²(X'V̂⁻¹X)⁻¹; ``sigma2`` = σ̂²; ``cov_re`` = σ̂²·TT' (the random effects' covariance);
    ``llf`` the REML log-likelihood; ``boundary``: TT' singular (a variance at 0 or a correlation at
    ±1); ``runs``: every optimiser run compared — (optimiser, start, llf, converged, agrees)."""

    status: str
    beta: np.ndarray
    cov: np.ndarray
    sigma2: float
    cov_re: np.ndarray
    llf: float
    boundary: bool
    runs: tuple[tuple[str, float, float, bool, bool], ...]


def crossproducts(A: np.ndarray, codes: np.ndarray, m: int) -> np.ndarray:
    """S_j = A_j'A_j for every group j = 0 … m−1 (A_j: the rows of ``A`` whose ``codes`` are j), (m, q, q)."""
    q = A.shape[1]
    S = np.empty((m, q, q))
    for a in range(q):
        for b in range(a, q):
            S[:, a, b] = S[:, b, a] = np.bincount(codes, weights=A[:, a] * A[:, b], minlength=m)
    return S


class RemlProfile:
    """The REML log-likelihood of y_j = X_j β + Z_j b_j + ε_j, b_j ~ N(0, σ²TT'), ε_j ~ N(0, σ²I) for groups
    j = 1 … m, profiled over β and σ², as a function of the relative covariance factor T (k × k, lower
    triangular; θ its entries row by row) — lme4's profiled REML criterion (Bates et al. 2015, eqs. 34–42):

        ℓ(θ) = −½ [ (n−p)(1 + log(2π r²/(n−p))) + Σ_j log|M_j| + log|X'V⁻¹X| ],
        M_j = I + T'Z_j'Z_jT,  V_j = I + Z_jTT'Z_j',  V_j⁻¹ = I − Z_jT M_j⁻¹ T'Z_j' (Woodbury), |V_j| = |M_j|,
        β̂ = (X'V⁻¹X)⁻¹X'V⁻¹y,  r² = (y − Xβ̂)'V⁻¹(y − Xβ̂),  σ̂² = r²/(n−p).

    T is never inverted, so ℓ is smooth up to and on the boundary (TT' singular: a variance 0), where
    statsmodels' ``MixedLM`` — which inverts the covariance (a pseudo-inverse when singular) — jumps.
    Everything is a function of the groups' cross-products S_j = [X_j y_j]'[X_j y_j] (Z_j = the first k
    columns of X_j), so one evaluation costs O(m·k³), whatever n. The gradient, with D = ∂ℓ/∂(TT')
    (P the REML projection, e = y − Xβ̂):

        D = −½ Σ_j [Z_j'V_j⁻¹Z_j − Z_j'V_j⁻¹X_j (X'V⁻¹X)⁻¹ X_j'V_j⁻¹Z_j] + ½ (n−p)/r² Σ_j u_j u_j',
        u_j = Z_j'V_j⁻¹e_j,   ∂ℓ/∂T = 2 D T (its lower triangle)."""

    def __init__(self, S: np.ndarray, k: int, n: int):
        self.k, self.p, self.n = k, S.shape[1] - 1, n
        self.ZZ, self.ZA, self.AA = S[:, :k, :k], S[:, :k, :], S.sum(axis=0)
        self.tril = np.tril_indices(k)
        self.diag = np.flatnonzero(self.tril[0] == self.tril[1])  # θ's entries on T's diagonal

    def factor(self, theta: np.ndarray) -> np.ndarray:
        T = np.zeros((self.k, self.k))
        T[self.tril] = theta
        return T

    def parts(self, theta: np.ndarray):
        """(ℓ, β̂, (X'V⁻¹X)⁻¹, r², D) at θ; ℓ = −inf where a factorisation fails (r² ≤ 0: an exact fit)."""
        k, p, n = self.k, self.p, self.n
        T = self.factor(theta)
        try:
            C = np.linalg.cholesky(np.eye(k) + T.T @ self.ZZ @ T)  # M_j = C_j C_j'
            W = np.linalg.solve(C, T.T @ self.ZA)  # C_j⁻¹T'Z_j'[X_j y_j]
            G = self.AA - np.einsum("mki,mkj->ij", W, W)  # [X y]'V⁻¹[X y]
            L = np.linalg.cholesky(G[:p, :p])
        except np.linalg.LinAlgError:
            return -np.inf, None, None, np.nan, None
        inv = np.linalg.inv(G[:p, :p])
        beta = inv @ G[:p, p]
        r2 = G[p, p] - G[:p, p] @ beta
        if not r2 > 0:
            return -np.inf, None, None, r2, None
        llf = -0.5 * ((n - p) * (1 + np.log(2 * np.pi * r2 / (n - p))) + 2 * np.log(np.diagonal(C, axis1=1, axis2=2)).sum()
                      + 2 * np.log(np.diag(L)).sum())
        B = self.ZA - self.ZZ @ T @ np.linalg.solve(np.swapaxes(C, 1, 2), W)  # Z_j'V_j⁻¹[X_j y_j]
        ZVX, u = B[:, :, :p], B[:, :, p] - B[:, :, :p] @ beta
        D = -0.5 * (B[:, :, :k].sum(axis=0) - np.einsum("mip,pq,mjq->ij", ZVX, inv, ZVX)) \
            + 0.5 * (n - p) / r2 * np.einsum("mi,mj->ij", u, u)
        return llf, beta, inv, r2, D

    def objective(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """(−ℓ(θ), −∂ℓ/∂θ): what a minimiser takes."""
        llf, _, _, _, D = self.parts(theta)
        if not np.isfinite(llf):
            return np.inf, np.zeros_like(theta)
        return -llf, -(2 * D @ self.factor(theta))[self.tril]

    def optimal(self, theta: np.ndarray, D: np.ndarray) -> bool:
        """First-order optimality on the cone of covariances TT' ⪰ 0: no ascent within TT's range
        (|2DT| ≤ GTOL) and none by adding variance outside it (D ⪯ GTOL on TT's null space)."""
        T = self.factor(theta)
        if np.abs(2 * D @ T).max() > GTOL:
            return False
        w, v = np.linalg.eigh(T @ T.T)
        N = v[:, w <= BOUNDARY ** 2]
        return bool(N.shape[1] == 0 or np.linalg.eigvalsh(N.T @ D @ N).max() <= GTOL)


def _optimise(profile: RemlProfile, how: str, theta0: np.ndarray, maxiter: int) -> np.ndarray:
    """θ that ``how`` (a scipy.optimize method taking bounds and the exact gradient) finds from ``theta0``."""
    from scipy.optimize import minimize

    bounds = [(0.0, None) if i in profile.diag else (None, None) for i in range(len(theta0))]  # diag(T) ≥ 0: T unique
    options = dict(maxiter=maxiter, ftol=1e-15) | (dict(gtol=1e-10) if how == "L-BFGS-B" else {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a failed line search is judged by ``optimal`` like any other end
        return minimize(profile.objective, theta0, jac=True, method=how, bounds=bounds, options=options).x


def _newton(profile: RemlProfile, theta: np.ndarray, steps: int = 10) -> np.ndarray:
    """θ polished by Newton's method on ℓ's exact gradient: the Hessian by central differences of the
    gradient, over the coordinates not held at their bound (a diagonal of T at 0 where ℓ falls into the
    cone), a step kept only when it does not lower ℓ. The optimisers stop where ℓ's rounding (10⁻¹⁶ of ℓ)
    hides progress — θ good to ~10⁻⁸ and the interval's last digits dependent on which run stopped where;
    the gradient's zero is ~10⁻¹² away, the same from any of them."""
    f, g = profile.objective(theta)
    on_diag = np.isin(np.arange(len(theta)), profile.diag)
    for _ in range(steps):
        free = ~(on_diag & (theta <= 0) & (g >= 0))
        if not free.any() or np.abs(g[free]).max() < 1e-12 * max(1.0, abs(f)):
            break
        idx = np.flatnonzero(free)
        H = np.empty((len(idx), len(idx)))
        for col, j in enumerate(idx):
            h = 1e-6 * max(1.0, abs(theta[j]))
            up, down = theta.copy(), theta.copy()
            up[j] += h
            down[j] = max(theta[j] - h, 0.0) if on_diag[j] else theta[j] - h  # one-sided at the bound
            H[:, col] = (profile.objective(up)[1][idx] - profile.objective(down)[1][idx]) / (up[j] - down[j])
        step = np.linalg.lstsq((H + H.T) / 2, -g[idx], rcond=None)[0]
        new = theta.copy()
        new[idx] += step
        new[on_diag] = np.maximum(new[on_diag], 0.0)
        f_new, g_new = profile.objective(new)
        if not f_new <= f + 1e-13 * abs(f):
            break
        theta, f, g = new, f_new, g_new
    return theta


def reml(y, X: np.ndarray, groups, k: int, maxiter: int = 2000,
         runs: tuple[tuple[str, float], ...] | None = None) -> Reml:
    """The linear mixed model y_ij = x_ij'β + z_ij'b_j + ε_ij, b_j ~ N(0, Σ), ε ~ N(0, σ²), by REML
    (``RemlProfile``: Σ = σ²TT'), its random effects z_ij the first ``k`` columns of X (an intercept, or
    the intercept and the terms: random slopes). X must have full column rank.

    Convergence is checked, not assumed: the likelihood is maximised by several optimisers from several
    starts (``runs``: (optimiser, s), start T = s·I; default ``RUNS``: L-BFGS-B and SLSQP, both with the
    exact gradient, from each of ``REML_STARTS``); the fit is the converged run (first-order optimal on
    the cone Σ ⪰ 0, ``RemlProfile.optimal``) with the largest ℓ, and it stands only when another converged
    run agrees with it (β and se equal to ``AGREE``): else "not converged". It is then polished by
    Newton's method on the exact gradient (``_newton``; kept when it still agrees and ℓ did not fall), so
    that its last digits do not depend on which run won a tie of ℓ within rounding.
    "no residual variance": X and the groups' own random-effect columns fit every response exactly
    (``residual_ss``; σ² → 0 and ℓ has no maximum). ``boundary``: the fit's Σ is singular (some relative
    standard deviation, a diagonal of T, below ``BOUNDARY``) — the groups show less variation than the
    model allows (lme4's "singular fit"); β and se stand, conditional on it."""
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    codes, _ = pd.factorize(np.asarray(groups), sort=True)
    shift = np.linalg.lstsq(X, y, rcond=None)[0]  # fit OLS's residuals: the same ℓ, less cancellation
    S = crossproducts(np.column_stack([X, y - X @ shift]), codes, int(codes.max()) + 1)
    nan = np.full(p, np.nan)

    def empty(status, runs_=()) -> Reml:
        return Reml(status, nan, np.diag(nan), np.nan, np.full((k, k), np.nan), np.nan, False, runs_)

    if _exact(residual_ss(S, k) / n, y):
        return empty("no residual variance")
    profile = RemlProfile(S, k, n)

    def run(how: str, start: float, theta0: np.ndarray) -> _Run:
        theta = _optimise(profile, how, theta0, maxiter)
        llf, beta, inv, r2, D = profile.parts(theta)
        ok = bool(np.isfinite(llf) and profile.optimal(theta, D))
        return _Run(how, start, theta, float(llf), ok, beta, inv, r2,
                    np.sqrt(np.diag(inv) * r2 / (n - p)) if ok else None)

    def agrees(f: _Run, best: _Run) -> bool:  # the same optimum: the same β and se
        return f.converged and bool(np.allclose(f.beta, best.beta, rtol=AGREE, atol=AGREE * best.se.max())
                                    and np.allclose(f.se, best.se, rtol=AGREE, atol=0))

    # many tiny BLAS calls: OpenBLAS's threads would spin between them (5–20 times the CPU on a busy machine)
    with threadpool_limits(limits=1, user_api="blas"):
        found = [run(how, s, (s * np.eye(k))[profile.tril]) for how, s in runs or RUNS]
        converged = [f for f in found if f.converged]
        best = max(converged, key=lambda f: f.llf) if converged else None
        seen = tuple((f.how, f.start, f.llf, f.converged, best is not None and agrees(f, best)) for f in found)
        if best is None or sum(agrees(f, best) for f in found) < 2:  # none converged, or the best unconfirmed
            return empty("not converged", seen)
        theta = _newton(profile, best.theta)
        llf, beta, inv, r2, D = profile.parts(theta)
        polished = _Run("Newton", best.start, theta, float(llf), bool(np.isfinite(llf) and profile.optimal(theta, D)),
                        beta, inv, r2, np.sqrt(np.diag(inv) * r2 / (n - p)) if np.isfinite(llf) else None)
        if agrees(polished, best) and polished.llf >= best.llf - 1e-12 * abs(best.llf):
            best = polished
    sigma2 = best.r2 / (n - p)
    T = profile.factor(best.theta)
    return Reml("ok", best.beta + shift, sigma2 * best.inv, sigma2, sigma2 * T @ T.T, best.llf,
                bool(np.diag(T).min() < BOUNDARY), seen)


@dataclass(frozen=True)
class _Run:
    """One optimiser's end point (``reml``)."""

    how: str
    start: float
    theta: np.ndarray
    llf: float
    converged: bool
    beta: np.ndarray
    inv: np.ndarray
    r2: float
    se: np.ndarray | None


def residual_ss(S: np.ndarray, k: int) -> float:
    """min over β, b_j of Σ_j |y_j − X_jβ − Z_j b_j|² (the random effects as free coefficients of each
    group; Z_j the first k columns of X_j), from the cross-products S_j = [X_j y_j]'[X_j y_j]."""
    p = S.shape[1] - 1
    ZA = S[:, :k, :]
    G = (S - np.swapaxes(ZA, 1, 2) @ np.linalg.pinv(S[:, :k, :k], hermitian=True) @ ZA).sum(axis=0)  # Σ A_j'(I − H_j)A_j
    return float(G[p, p] - G[:p, p] @ np.linalg.pinv(G[:p, :p], hermitian=True) @ G[:p, p])


def mixed_lm(y, X: pd.DataFrame, terms: list[Term], groups, random_slopes: bool = False,
             method: str = "mixedlm") -> Fit:
    """Linear mixed model y_ij = β₀ + Σ β_t x_t,ij + u_j (+ Σ v_jt x_t,ij with ``random_slopes``) + ε_ij,
    u_j (and v_j) ~ N(0, Σ) per group j (scenario), ε ~ N(0, σ²), fitted by REML (``reml``: several
    optimisers and starts, the fit kept only when they agree). Fixed effects β with their Wald standard
    errors √diag(σ̂²(X'V̂⁻¹X)⁻¹). "singular" when the design has not full rank; "no residual variance"
    when the fixed and random effects fit every response exactly (a deterministic model's scores);
    "not converged" when the optimisers do not agree on one optimum. ``boundary``: Σ̂ is singular (a
    variance component at 0) — not a failure: the fixed effects stand, conditional on it."""
    y = np.asarray(y, dtype=float)
    exog = _with_constant(X).to_numpy()
    n, t = len(y), len(terms)
    if np.linalg.matrix_rank(exog) < exog.shape[1]:
        return failed("singular", n, method, terms)
    res = reml(y, exog, groups, t + 1 if random_slopes else 1)
    if res.status != "ok":
        return failed(res.status, n, method, terms)
    beta, se = res.beta[1:t + 1], np.sqrt(np.diag(res.cov))[1:t + 1]
    if not np.all(np.isfinite(beta)) or not np.all(np.isfinite(se) & (se > 0)):
        return failed("singular", n, method, terms)
    return Fit("ok", n, method, tuple(terms), beta, se, 2 * dist.normal_sf(np.abs(beta / se)), boundary=res.boundary)
