"""Issue 24: the minimum detectable DPD, once per key, from one table of null thresholds — equal to
the previous per-step simulation within its Monte-Carlo error."""

import numpy as np
import pandas as pd
import pytest

from louder.analysis import stats
from louder.analysis.measures import cases as C
from louder.analysis.stats import power as P


# --- the implementation before issue 24, kept as the reference ---
def old_power(n, rates, alpha=0.05, sims=2000, B=2000, seed=0):
    """Every call redraws B parity draws for every distinct pooled count."""
    n = np.asarray(n, dtype=np.int64)
    rates = np.asarray(rates, dtype=float)
    rng = np.random.default_rng(seed)
    x = rng.binomial(n, rates, size=(sims, n.size))
    r = x / n
    observed = r.max(axis=1) - r.min(axis=1)
    totals = x.sum(axis=1)
    threshold = np.empty(sims)
    for X in np.unique(totals):
        null = rng.binomial(n, X / n.sum(), size=(B, n.size)) / n
        threshold[totals == X] = np.quantile(null.max(axis=1) - null.min(axis=1), 1 - alpha)
    return float(np.mean(observed > threshold))


def old_mdd(n, base, target=0.8, alpha=0.05, sims=1000, seed=0, tol=0.01):
    n = np.asarray(n, dtype=np.int64)
    n = n[n > 0]
    if n.size < 2 or not np.isfinite(base):
        return float("nan")
    pw = lambda d: old_power(n, P.spread_rates(d, n.size, base), alpha, sims, B=1000, seed=seed)  # noqa: E731
    if pw(1.0) < target:
        return float("nan")
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pw(mid) >= target else (mid, hi)
    return round(hi, 3)


# keys on both sides of the lattice rule (n_min·p(1−p) < 100: every count exact; else the θ grid),
# extreme and middle rates, k = 2..5, equal and unequal n
KEYS = [((20, 20, 20), 0.5), ((50, 60), 0.1), ((100, 100, 100), 0.05), ((150, 150, 150, 150), 0.3),
        ((600, 600, 600), 0.5), ((450, 460, 470, 480, 490), 0.7)]


@pytest.mark.parametrize("n,base", KEYS)
def test_power_from_the_table_equals_the_old_simulation(n, base):
    # power near the mdd, where the mdd is decided; paired seeds for the simulated cases, so the
    # difference is the thresholds' alone. 12 seeds: SE of the mean difference ≈ 0.005.
    d = P.minimum_detectable_dpd(n, base)
    rates = P.spread_rates(d, len(n), base)
    diffs = [P.power(n, rates, sims=1000, seed=s, thresholds=P.NullThresholds(n, seed=1000 + s))
             - old_power(n, rates, sims=1000, B=1000, seed=s) for s in range(12)]
    assert abs(np.mean(diffs)) < 0.015, (np.mean(diffs), d)


@pytest.mark.parametrize("n,base", KEYS[:4])
def test_mdd_equals_the_old_bisection_within_monte_carlo_error(n, base):
    # both are bisections to 1/128; over seeds the old one moves by about one step
    old = [old_mdd(n, base, seed=s) for s in range(3)]
    new = [P.minimum_detectable_dpd(n, base, seed=s) for s in range(3)]
    assert abs(np.mean(new) - np.mean(old)) <= 1.5 / 128, (old, new)


def test_mdd_detects_with_the_target_power_in_direct_simulation_of_the_test():
    # planted effect of the mdd's size: `louder analyze`'s own test finds it ~80 % of the time; a
    # clearly smaller one (mdd − 0.04) far less often
    n, base = np.array([200, 200, 200]), 0.4
    mdd = P.minimum_detectable_dpd(n, base)
    rng = np.random.default_rng(7)

    def direct(d, sims=600):
        x = rng.binomial(n, P.spread_rates(d, n.size, base), size=(sims, n.size))
        return np.mean([stats.parity_bootstrap(n, xi, B=1000, seed=i).significant for i, xi in enumerate(x)])

    assert 0.74 <= direct(mdd) <= 0.9, mdd
    assert direct(mdd - 0.04) < 0.6


def test_no_effect_is_detected_at_the_nominal_rate():
    # the table's thresholds keep the test's size: with equal true rates power ≈ α
    n = (300, 300, 300)
    for base in (0.05, 0.5):
        size = np.mean([P.power(n, [base] * 3, sims=1000, seed=s, thresholds=P.NullThresholds(n, seed=s))
                        for s in range(10)])
        assert 0.03 <= size <= 0.07, (base, size)


def test_null_thresholds_do_not_depend_on_the_order_they_are_asked_in():
    n = (577, 580, 575)
    a, b = P.NullThresholds(n, seed=3), P.NullThresholds(n, seed=3)
    first = a([860, 870, 1000, 860])
    b([1200, 300])
    assert np.array_equal(first, b([860, 870, 1000, 860])) and first[0] == first[3]
    # at a grid count the value is that count's own B draws, nothing interpolated
    g = int(a.brackets(np.array([900]))[0][0])
    x = np.random.default_rng([3, g]).binomial(np.array(n), g / a.N, size=(1000, 3)) / np.array(n)
    assert a([g])[0] == np.quantile(x.max(1) - x.min(1), 0.95)


def test_null_thresholds_are_exact_where_the_null_is_coarse():
    X = np.arange(301)
    lo, hi = P.NullThresholds((100, 100, 100)).brackets(X)  # n·p(1−p) ≤ 25 < 100 everywhere: exact
    assert np.array_equal(lo, X) and np.array_equal(hi, X)
    big = P.NullThresholds((2000, 2000))
    X = np.arange(4001)
    lo, hi = big.brackets(X)
    assert np.all(lo <= X) and np.all(X <= hi)
    assert np.array_equal(lo[:50], X[:50]) and np.array_equal(hi[-50:], X[-50:])  # exact near 0 and N
    mid = np.unique(np.r_[lo[1900:2100], hi[1900:2100]])  # one step ≈ one SD of X (√1000 ≈ 32)
    assert 5 <= len(mid) <= 10 and np.all(np.diff(mid) <= 33)
    # interpolation between grid counts: q̂ rises smoothly with p up to ½
    q = big(np.arange(1500, 2001, 50))
    assert np.all(np.diff(q) > -0.002) and q[-1] > q[0]


def test_cases_sharing_a_key_share_one_mdd():
    def attr(key, n, x):
        return pd.DataFrame(dict(kind="implicit", model="m", condition="c", scenario=key, group="g",
                                 attribute=[f"a{i}" for i in range(len(n))], n_valid=n, n_invalid=0, n_refused=0,
                                 n_error=0, n_target=x, rate=np.array(x) / np.array(n)))
    # same n (in another attribute order) and pooled count, different rates; and one other key
    a = pd.concat([attr("s1", [80, 90, 100], [40, 45, 50]), attr("s2", [100, 80, 90], [20, 60, 55]),
                   attr("s3", [80, 90, 100], [10, 20, 30])], ignore_index=True)
    P._mdd.cache_clear()
    cases = C.implicit_cases(a, B=500)
    mdd = cases.set_index("scenario")["mdd"]
    assert mdd["s1"] == mdd["s2"] and mdd["s1"] != mdd["s3"]
    assert P._mdd.cache_info().misses == 2  # one computation per distinct key
    assert P.minimum_detectable_dpd([80, 90, 100], 135 / 270) == mdd["s1"]


def test_mdd_edge_cases():
    assert np.isnan(P.minimum_detectable_dpd([50], 0.5))         # one attribute
    assert np.isnan(P.minimum_detectable_dpd([50, 0], 0.5))      # n = 0 is left out
    assert np.isnan(P.minimum_detectable_dpd([50, 50], np.nan))  # no valid decision
    assert np.isnan(P.minimum_detectable_dpd([2, 2], 0.5))       # not even DPD = 1 is detected 80 % of the time
    assert P.minimum_detectable_dpd([40, 50], 0.0) == P.minimum_detectable_dpd([50, 40], 0.0)  # base 0: shifted up
