"""The linear mixed model's REML fit (``louder.analysis.regression.reml``, issue 47 item 2): its
likelihood against statsmodels' and a dense computation, its optimum against a closed form and a brute
force search, its convergence checks (starts, optimisers, a status when they disagree) and the boundary
it reports; and the discrimination score that uses it, on data with and without a slope variance."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from louder.analysis.stats import regression as R
from louder.analysis.stats.discrimination import discrimination_table

ATTRS = ["Male", "Female", "Non-binary"]


def cells(seed, m=2, per=10, slope_sd=(0.0, 0.0), intercept_sd=0.5, effects=(0.0, 1.0, 0.3), noise=0.6,
          additive=False):
    """y for m groups × 3 attributes × ``per`` agents: effect of the attribute + u_j (+ v_ja, sd ``slope_sd``)
    + N(0, noise²). ``additive``: each cell's noise centred, so that the cell means have no group ×
    attribute interaction at all (no slope variance in the data, exactly)."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(m):
        u, v = rng.normal(0, intercept_sd), rng.normal(0, slope_sd)
        for c, eff in enumerate(effects):
            e = rng.normal(0, noise, per)
            e = e - e.mean() if additive else e
            y = eff + u + (v[c - 1] if c else 0.0) + e
            rows += [(f"s{j}", ATTRS[c], yi) for yi in y]
    d = pd.DataFrame(rows, columns=["scenario", "attribute", "y"])
    X = np.column_stack([np.ones(len(d)), d["attribute"] == "Female", d["attribute"] == "Non-binary"]).astype(float)
    return d, X


def dense_llf(y, X, groups, T):
    """The REML log-likelihood profiled over β and σ², from the n × n covariance V = I + Z TT' Z' (Z the
    groups' random-effect columns, here the first k of X): −½[(n−p)(1 + log 2πσ̂²) + log|V| + log|X'V⁻¹X|],
    σ̂² = r²/(n−p) — no Woodbury, no cross-products."""
    n, p = X.shape
    k = T.shape[0]
    V = np.eye(n)
    for g in np.unique(groups):
        i = np.flatnonzero(groups == g)
        Z = X[np.ix_(i, range(k))]
        V[np.ix_(i, i)] += Z @ T @ T.T @ Z.T
    Vi = np.linalg.inv(V)
    XVX = X.T @ Vi @ X
    beta = np.linalg.solve(XVX, X.T @ Vi @ y)
    r2 = (y - X @ beta) @ Vi @ (y - X @ beta)
    s2 = r2 / (n - p)
    return -0.5 * ((n - p) * (1 + np.log(2 * np.pi * s2)) + np.linalg.slogdet(V)[1] + np.linalg.slogdet(XVX)[1]), \
        beta, np.sqrt(np.diag(s2 * np.linalg.inv(XVX)))


def _profile(d, X, k):
    codes = pd.factorize(d["scenario"], sort=True)[0]
    return R.RemlProfile(R.crossproducts(np.column_stack([X, d["y"].to_numpy()]), codes, codes.max() + 1), k, len(d))


@pytest.mark.parametrize("k", [1, 3])
def test_the_profile_equals_statsmodels_and_a_dense_computation_and_its_gradient_is_exact(k):
    from statsmodels.regression.mixed_linear_model import MixedLM, MixedLMParams

    d, X = cells(0, m=5, per=6, slope_sd=(0.4, 0.2))
    y, g = d["y"].to_numpy(), d["scenario"].to_numpy()
    prof = _profile(d, X, k)
    model = MixedLM(y, X, groups=g, exog_re=X[:, :k])
    model.reml, model.cov_pen, model.fe_pen, model._freepat, model._cov_sing = True, None, None, None, 0
    rng = np.random.default_rng(1)
    for _ in range(4):
        theta = rng.normal(0, 0.7, len(prof.tril[0]))
        theta[prof.diag] = np.abs(theta[prof.diag]) + 0.05  # TT' positive definite: statsmodels' likelihood holds
        T = prof.factor(theta)
        llf, beta, inv, r2, _ = prof.parts(theta)
        want, want_beta, want_se = dense_llf(y, X, g, T)
        assert llf == pytest.approx(want, rel=1e-12)
        assert np.allclose(beta, want_beta, rtol=1e-10) and np.allclose(np.sqrt(np.diag(inv) * r2 / (len(y) - 3)),
                                                                         want_se, rtol=1e-10)
        sm = MixedLMParams.from_components(np.zeros(3), cov_re=T @ T.T)  # statsmodels' REML, profiled the same way
        assert llf == pytest.approx(model.loglike(sm, profile_fe=True), rel=1e-10)
        grad = -prof.objective(theta)[1]
        h = 1e-6
        fd = [(prof.parts(theta + h * e)[0] - prof.parts(theta - h * e)[0]) / (2 * h) for e in np.eye(len(theta))]
        assert np.allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_two_scenarios_random_slopes_reach_the_closed_form_optimum_on_the_boundary():
    """The golden run's design: 2 scenarios × 3 attributes × 10 agents, random intercept and slopes. Then the
    cell means of scenario j are N(μ, Ψ + σ²/10·I) (Ψ: any 3 × 3 covariance), and REML has a closed form:
    with d = (ȳ₁ − ȳ₂)/√2, Ψ̂ = max(0, |d|² − σ̂²/10)·dd'/|d|², σ̂² = SSW/56 (rank 1: on the boundary), and
    β̂ = treatment contrasts of the cell means averaged over scenarios, Var = A (Ψ̂ + σ̂²/10·I)/2 A'."""
    for seed in range(3):
        d, X = cells(seed, slope_sd=(0.5, 0.3))
        means = d.groupby(["scenario", "attribute"])["y"].mean().unstack()[ATTRS].to_numpy()
        ssw = float(((d["y"] - d.groupby(["scenario", "attribute"])["y"].transform("mean")) ** 2).sum())
        s2 = ssw / 56
        dd = (means[0] - means[1]) / np.sqrt(2)
        psi = max(0.0, dd @ dd - s2 / 10) * np.outer(dd, dd) / (dd @ dd)
        A = np.array([[1, 0, 0], [-1, 1, 0], [-1, 0, 1]])
        fit = R.reml(d["y"], X, d["scenario"], 3)
        assert fit.status == "ok" and fit.boundary
        assert fit.sigma2 == pytest.approx(s2, rel=1e-7)
        assert np.allclose(fit.beta, A @ means.mean(axis=0), rtol=1e-9)
        assert np.allclose(np.sqrt(np.diag(fit.cov)), np.sqrt(np.diag(A @ (psi + s2 / 10 * np.eye(3)) @ A.T / 2)),
                           rtol=1e-6)


def test_a_brute_force_search_over_the_variance_parameters_finds_no_better_optimum():
    """Random intercept and one slope (k = 2: three parameters of T) on six scenarios: a grid over T, then
    Nelder–Mead on the dense likelihood from the best grid point, finds the same ℓ, β and se."""
    rng = np.random.default_rng(3)
    rows = []
    for j in range(6):
        u, v = rng.normal(0, 0.5), rng.normal(0, 0.6)
        for c in (0, 1):
            rows += [(f"s{j}", c, 0.2 + u + c * (0.7 + v) + e) for e in rng.normal(0, 0.8, 8)]
    d = pd.DataFrame(rows, columns=["scenario", "x", "y"])
    X = np.column_stack([np.ones(len(d)), d["x"]]).astype(float)
    y, g = d["y"].to_numpy(), d["scenario"].to_numpy()
    fit = R.reml(y, X, g, 2)

    def f(t):
        return -dense_llf(y, X, g, np.array([[abs(t[0]), 0], [t[1], abs(t[2])]]))[0]

    grid = np.linspace(-2, 2, 17)
    best = min(itertools.product(np.abs(grid[8:]), grid, np.abs(grid[8:])), key=f)
    brute = minimize(f, best, method="Nelder-Mead", options=dict(xatol=1e-9, fatol=1e-12, maxiter=20000))
    assert fit.status == "ok" and -brute.fun <= fit.llf + 1e-7
    assert fit.llf == pytest.approx(-brute.fun, abs=1e-6)
    _, beta, se = dense_llf(y, X, g, np.array([[abs(brute.x[0]), 0], [brute.x[1], abs(brute.x[2])]]))
    assert np.allclose(fit.beta, beta, rtol=1e-4) and np.allclose(np.sqrt(np.diag(fit.cov)), se, rtol=1e-4)


@pytest.mark.parametrize("case", ["boundary", "interior"])
def test_the_fit_does_not_depend_on_the_starting_values_or_the_optimisers_order(case):
    d, X = cells(4, m=2 if case == "boundary" else 25, per=10, slope_sd=(0.6, 0.3))
    fits = [R.reml(d["y"], X, d["scenario"], 3, runs=runs) for runs in (
        R.RUNS, tuple(reversed(R.RUNS)), (("SLSQP", 3.0), ("L-BFGS-B", 0.3)), (("L-BFGS-B", 0.02), ("L-BFGS-B", 50.0)),
        (("SLSQP", 0.5), ("SLSQP", 2.0), ("L-BFGS-B", 7.0)))]
    assert {f.status for f in fits} == {"ok"} and {f.boundary for f in fits} == {case == "boundary"}
    for f in fits[1:]:
        assert np.allclose(f.beta, fits[0].beta, rtol=1e-7, atol=1e-9)
        assert np.allclose(np.sqrt(np.diag(f.cov)), np.sqrt(np.diag(fits[0].cov)), rtol=1e-6)
        assert f.llf == pytest.approx(fits[0].llf, abs=1e-8)


def test_a_planted_slope_variance_is_recovered_and_agrees_with_statsmodels():
    from statsmodels.regression.mixed_linear_model import MixedLM

    est = []
    for seed in range(4):
        d, X = cells(10 + seed, m=40, per=15, slope_sd=(0.7, 0.0), noise=0.8)
        fit = R.reml(d["y"], X, d["scenario"], 3)
        assert fit.status == "ok"
        est.append(fit.cov_re[1, 1])
        if seed == 0:  # away from the boundary statsmodels' fit is close, a little short of the optimum
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sm = MixedLM(d["y"].to_numpy(), X, groups=d["scenario"], exog_re=X).fit(reml=True)
            assert sm.converged and fit.llf - 0.05 < sm.llf <= fit.llf
            assert np.allclose(fit.beta, sm.fe_params, rtol=1e-3)
            assert np.allclose(np.sqrt(np.diag(fit.cov)), sm.bse_fe, rtol=1e-2)
            assert np.allclose(fit.cov_re, sm.cov_re, atol=0.02)
            # the same standard errors where it stopped: σ̂²(X'V̂⁻¹X)⁻¹ is statsmodels' convention too
            T = np.linalg.cholesky(np.asarray(sm.cov_re) / sm.scale)
            assert np.allclose(dense_llf(d["y"].to_numpy(), X, d["scenario"].to_numpy(), T)[2], sm.bse_fe, rtol=1e-6)
    assert np.mean(est) == pytest.approx(0.7 ** 2, abs=0.15)  # 4 × 40 scenarios: se of the mean ≈ 0.06


def test_no_slope_variance_in_the_data_is_reported_as_a_boundary_and_equals_the_intercept_model():
    d, _ = cells(5, m=6, per=10, additive=True)
    d = d.assign(model="fake", condition="contextualized", group="gender_identity", status="valid",
                 p_target=expit(d["y"]))
    slopes = discrimination_table(d, random_slopes=True).set_index("attribute")
    plain = discrimination_table(d).set_index("attribute")
    assert (slopes["status"] == "ok").all() and slopes["boundary"].all() and (slopes["method"] == "mixedlm_slopes").all()
    assert not plain["boundary"].any()  # the scenarios' intercepts do vary
    for c in ("coef", "ci_low", "ci_high", "p_value"):  # the slopes' variances at 0: the random-intercept model's fit
        assert np.allclose(slopes[c], plain[c], rtol=1e-6)


def test_optimisers_that_cannot_confirm_each_other_give_a_status_and_no_number(monkeypatch):
    d, X = cells(6, m=8, slope_sd=(0.5, 0.5))
    one = R.reml(d["y"], X, d["scenario"], 3, runs=(("SLSQP", 1.0),))  # a single run: nothing to agree with
    assert one.status == "not converged" and np.isnan(one.beta).all()
    stopped = R.reml(d["y"], X, d["scenario"], 3, maxiter=1)  # every optimiser stopped after one step
    assert stopped.status == "not converged" and not any(r[3] for r in stopped.runs)
    monkeypatch.setattr(R, "RUNS", (("SLSQP", 1.0),))
    t = discrimination_table(d.assign(model="fake", condition="contextualized", group="gender_identity",
                                       status="valid", p_target=expit(d["y"])), random_slopes=True)
    assert t["status"].tolist() == ["not converged"] and t["coef"].isna().all() and not t["significant"].any()


def test_random_slopes_on_null_data_flag_at_most_the_nominal_rate():
    """No attribute effect, scenario slopes of sd 0.3 (what the random slopes are for), 8 scenarios: Holm's
    5 % across the two coefficients, 30 seeds. (With fewer scenarios the Wald interval of a mixed model
    is liberal — ~10 % with 4: its z ignores that the slopes' variance is estimated from a few.)"""
    flagged = []
    for seed in range(30):
        d, _ = cells(200 + seed, m=8, per=12, effects=(0.0, 0.0, 0.0), slope_sd=(0.3, 0.3))
        d = d.assign(model="fake", condition="contextualized", group="gender_identity", status="valid",
                     p_target=expit(d["y"]))
        t = discrimination_table(d, random_slopes=True)
        assert (t["status"] == "ok").all()
        flagged.append(bool(t["significant"].any()))
    assert sum(flagged) <= 4, flagged  # P(≥ 5 of 30) = 1.6 % at a true 5 %
