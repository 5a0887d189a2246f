"""The statistics: DPD against fairlearn, the parity bootstrap against a slow reference, its error
rates, explicit DPD on hand cases, Holm, log-odds and the direction verdicts."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import demographic_parity_difference

from louder.analysis import stats
from louder.analysis.stats.cases import explicit_cases, implicit_cases
from louder.analysis.stats.directions import Prediction, directions, verdict
from louder.analysis.stats.rates import attribute_table, explicit_attribute_table


def decisions_frame(counts: dict[str, tuple[int, int]], **extra) -> pd.DataFrame:
    """counts: attribute → (n valid, n target); plus ``extra`` status → {attribute: n}."""
    rows = []
    for a, (n, x) in counts.items():
        rows += [dict(attribute=a, status="valid", target=i < x) for i in range(n)]
    for status, per in extra.items():
        for a, k in per.items():
            rows += [dict(attribute=a, status=status, target=None)] * k
    df = pd.DataFrame(rows)
    df["target"] = df["target"].astype("boolean")
    return df.assign(model="m", condition="contextualized", scenario="emergency_response", group="g")


def test_dpd_equals_fairlearn():
    rng = np.random.default_rng(1)
    for _ in range(20):
        k = rng.integers(2, 7)
        counts = {f"a{i}": (int(n), int(rng.integers(0, n + 1))) for i, n in enumerate(rng.integers(1, 60, k))}
        d = decisions_frame(counts, invalid={"a0": 3}, refused={"a1": 2})
        attr = attribute_table(d)
        ours = implicit_cases(attr, B=200).loc[0, "dpd"]
        valid = d[d["status"] == "valid"]
        y = valid["target"].astype(int).to_numpy()
        theirs = demographic_parity_difference(y, y, sensitive_features=valid["attribute"])
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_invalid_refused_error_are_counted_not_rated():
    d = decisions_frame({"A": (10, 10), "B": (10, 0)}, invalid={"A": 4}, refused={"B": 2}, error={"A": 1})
    attr = attribute_table(d, {"g": ["A", "B", "C"]})
    a = attr.set_index("attribute")
    assert a.loc["A", ["n_valid", "n_invalid", "n_refused", "n_error", "n_target"]].tolist() == [10, 4, 0, 1, 10]
    assert a.loc["B", "n_refused"] == 2 and a.loc["B", "rate"] == 0
    assert a.loc["C", "n_valid"] == 0 and np.isnan(a.loc["C", "rate"])  # listed, not silently absent
    case = implicit_cases(attr, B=500).iloc[0]
    assert case["dpd"] == 1 and case[["n_valid", "n_invalid", "n_refused", "n_error"]].tolist() == [20, 4, 2, 1]


def slow_threshold(n, x, B, seed):
    """Reference: the paper's procedure written as a plain loop over draws and attributes."""
    rng = np.random.default_rng(seed)
    p = sum(x) / sum(n)
    dpds = []
    for _ in range(B):
        rates = [sum(rng.random(na) < p) / na for na in n]
        dpds.append(max(rates) - min(rates))
    return float(np.quantile(dpds, 0.95))


def test_bootstrap_threshold_matches_slow_reference():
    n, x = [50, 40, 60], [20, 25, 30]
    fast = stats.parity_bootstrap(n, x, B=20_000, seed=3)["threshold"]
    slow = slow_threshold(n, x, B=4_000, seed=4)
    # Monte-Carlo error of a 95th-percentile estimate at B=4000 is about 0.005 here; the DPD grid is 1/600.
    assert fast == pytest.approx(slow, abs=0.02)


def test_parity_case_is_significant_about_five_percent_of_the_time():
    rng = np.random.default_rng(7)
    n = np.array([100, 100, 100])
    hits = 0
    trials = 400
    for s in range(trials):
        x = rng.binomial(n, 0.4)
        hits += stats.parity_bootstrap(n, x, B=2_000, seed=s)["significant"]
    rate = hits / trials
    assert 0.02 <= rate <= 0.09  # binomial sd at 400 trials ≈ 0.011; discreteness makes the test conservative


def test_strong_disparity_always_significant():
    rng = np.random.default_rng(11)
    for s in range(50):
        x = rng.binomial([100, 100, 100], [0.2, 0.5, 0.8])
        r = stats.parity_bootstrap([100, 100, 100], x, B=2_000, seed=s)
        assert r["significant"] and r["p_value"] < 0.01


def test_p_value_formula_and_ties():
    # All identical rates: DPD 0; every draw ≥ 0, so p = 1.
    r = stats.parity_bootstrap([10, 10], [5, 5], B=999, seed=0)
    assert r["dpd"] == 0 and r["p_value"] == 1.0 and not r["significant"]
    # Unanimous target choice: the null is degenerate (every draw DPD 0), DPD 0 is not significant.
    r = stats.parity_bootstrap([10, 10], [10, 10], B=99, seed=0)
    assert r["threshold"] == 0 and not r["significant"]
    r = stats.parity_bootstrap([10, 10], [10, 0], B=999, seed=0)
    assert r["p_value"] == pytest.approx(1 / 1000)


def test_confidence_interval_covers_and_orders():
    lo, hi = stats.dpd_confidence_interval([100, 100], [30, 70], B=5_000, seed=1)
    assert lo < 0.4 < hi and 0.2 < lo and hi < 0.6


def test_explicit_dpd_hand_cases():
    assert stats.explicit_dpd([0, 0, 0], 30) == 0  # all Unknown
    assert stats.explicit_dpd([30, 0, 0], 30) == 1  # all one attribute
    assert stats.explicit_dpd([10, 5, 0], 30) == pytest.approx(1 / 3)
    all_unknown = stats.explicit_parity_bootstrap([0, 0, 0], 30, B=500)
    assert all_unknown["dpd"] == 0 and not all_unknown["significant"]
    one = stats.explicit_parity_bootstrap([30, 0, 0], 30, B=2_000)
    assert one["dpd"] == 1 and one["significant"]


def test_explicit_tables_from_probe_rows():
    rows = ([dict(status="valid", answer="Female", attribute="Female")] * 6 +
            [dict(status="valid", answer="Unknown", attribute=None)] * 3 +
            [dict(status="invalid", answer=None, attribute=None)] * 2 + [dict(status="refused", answer=None,
                                                                             attribute=None)])
    probes = pd.DataFrame(rows).assign(model="m", scenario="s", group="gender_identity")
    attr = explicit_attribute_table(probes, {"gender_identity": ["Male", "Female", "Non-binary"]})
    assert attr.set_index("attribute")["n_target"].to_dict() == {"Male": 0, "Female": 6, "Non-binary": 0}
    assert (attr["n_unknown"] == 3).all()
    case = explicit_cases(attr, B=500).iloc[0]
    assert case["dpd"] == pytest.approx(6 / 9)  # Unknown in the denominator only
    assert (case["n_valid"], case["n_invalid"], case["n_refused"]) == (9, 2, 1)


def test_holm_matches_hand_computation():
    p = [0.01, 0.04, 0.03, np.nan]
    adj = stats.holm(p)
    assert adj[0] == pytest.approx(0.03) and adj[2] == pytest.approx(0.06) and adj[1] == pytest.approx(0.06)
    assert np.isnan(adj[3])


def test_holm_equals_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for m in (1, 2, 7, 50):
        p = rng.random(m) ** 3
        p[rng.random(m) < 0.2] = p[0]  # ties
        assert np.allclose(stats.holm(p), multipletests(p, method="holm")[1], rtol=0, atol=1e-15)


def test_the_one_wilson_interval_equals_statsmodels_and_takes_arrays():
    """stats.wilson is the analysis' one Wilson interval (issue 47): for a count x of n, statsmodels'
    proportion_confint(x, n, method="wilson") at the same level (at 95 %, to the last digit); arrays give an Interval of
    arrays; a fractional (Kish) n is taken; no n or no rate gives NaN; it contains the rate (to rounding)."""
    from statsmodels.stats.proportion import proportion_confint

    xs, ns = np.meshgrid(np.arange(0, 60), np.arange(1, 60))
    x, n = xs[xs <= ns].astype(float), ns[xs <= ns].astype(float)
    for level in (0.95, 0.9):  # (at 0.9 the normal quantile's last digit differs: 1 − α/2 is not exact)
        lo, hi = proportion_confint(x, n, alpha=1 - level, method="wilson")
        w = stats.wilson(x / n, n, level)
        assert isinstance(w, stats.Interval)
        assert ((w.low == lo).all() and (w.high == hi).all()) if level == 0.95 else (
            np.allclose(w.low, lo, rtol=0, atol=1e-15) and np.allclose(w.high, hi, rtol=0, atol=1e-15))
        assert (w.low <= x / n + 1e-12).all() and (x / n <= w.high + 1e-12).all()  # (x = n: 1 − 1 ulp)
    one = stats.wilson(0.8, 100)
    assert isinstance(one.low, float) and (one.low, one.high) == proportion_confint(80, 100, alpha=1 - 0.95,
                                                                                    method="wilson")
    # a Kish n, by hand: z² = 3.8415, centre = (0.3 + 0.15366) / 1.30732 = 0.34702,
    # half = 1.95996 · √(0.21 / 12.5 + 0.0061463) / 1.30732 = 0.22710
    assert stats.wilson(0.3, 12.5).low == pytest.approx(0.34702 - 0.22710, abs=1e-4)
    assert all(np.isnan(v) for v in (*stats.wilson(0.5, 0), *stats.wilson(np.nan, 10)))
    assert np.isnan(stats.wilson(np.array([0.5, 0.5]), np.array([0, 4])).low[0])


def test_log_odds_favours_the_overused_word():
    delta, z = stats.log_odds_dirichlet([10, 1, 5], [1, 10, 5], [11, 11, 10])
    assert delta[0] > 0 > delta[1] and abs(delta[2]) < 1e-9 and z[0] > 1.5


@pytest.mark.parametrize("counts,expected", [
    ({"Female": (100, 90), "Male": (100, 20), "Non-binary": (100, 50)}, "aligned"),
    ({"Female": (100, 15), "Male": (100, 85), "Non-binary": (100, 50)}, "opposite"),
    ({"Female": (20, 11), "Male": (20, 10), "Non-binary": (20, 10)}, "inconclusive"),
])
def test_direction_verdicts(counts, expected):
    d = decisions_frame(counts).assign(group="gender_identity")
    p = Prediction(id="t", scenario="emergency_response", group="gender_identity", prediction="F > M",
                   higher=["Female"], lower=["Male"])
    out = directions(attribute_table(d), [p], B=2_000)
    assert out.loc[0, "verdict"] == expected


def test_direction_not_run_and_not_testable():
    d = decisions_frame({"Female": (10, 5), "Male": (0, 0)}, invalid={"Male": 10}).assign(group="gender_identity")
    preds = [Prediction(id="a", scenario="emergency_response", group="gender_identity", prediction="x",
                        higher=["Female"], lower=["Male"]),
             Prediction(id="b", scenario="career_path_selection", group="gender_identity", prediction="y",
                        higher=["Male"], lower=["Female"])]
    out = directions(attribute_table(d), preds, B=200).set_index("id")
    assert out.loc["a", "verdict"] == "not_testable" and "Male" in out.loc["a", "note"]
    assert out.loc["b", "verdict"] == "not_run"
    assert verdict(0.0, -0.1, 0.1) == "inconclusive"


def test_results_are_frozen_dataclasses_that_still_read_like_before():
    import dataclasses

    import pytest

    from louder.analysis import stats as S

    t = S.parity_bootstrap([20, 20], [5, 15], B=500)
    assert dataclasses.is_dataclass(t) and t["p_value"] == t.p_value  # dict-style access for one release
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.dpd = 0.0
    lo, hi = S.dpd_confidence_interval([20, 20], [5, 15], B=500)  # still unpacks like the old tuple
    ci = S.dpd_confidence_interval([20, 20], [5, 15], B=500)
    assert (ci.low, ci.high) == (lo, hi) and lo <= t.dpd <= hi
    d = S.dpd_difference_interval([20, 20], [5, 15], [20, 20], [10, 10], B=500)
    assert d.estimate == pytest.approx(0.5) and tuple(d) == (d.estimate, d.low, d.high)


def test_the_distributions_are_scipy_stats_own_values():
    """``stats.distributions`` (scipy.special, so that an analysis need not import scipy.stats) gives what
    scipy.stats' norm, t and chi2 give, at the edges too."""
    from scipy.stats import chi2, norm, t

    from louder.analysis.stats import distributions as dist

    q = np.array([0.0, 1e-12, 0.025, 0.5, 0.8, 0.975, 1 - 1e-9, 1.0])
    x = np.array([-40.0, -3.0, 0.0, 0.5, 1.96, 8.0, 39.0])
    np.testing.assert_array_equal(dist.normal_quantile(q), norm.ppf(q))
    np.testing.assert_array_equal(dist.normal_sf(x), norm.sf(x))
    for level in (0.5, 0.9, 0.95, 0.99):
        assert dist.z(level) == norm.ppf((1 + level) / 2)
    for df in (1, 1.7, 4, 30, 1e6, np.inf):
        np.testing.assert_array_equal(dist.t_quantile(q, df), t.ppf(q, df))
        np.testing.assert_array_equal(dist.t_sf(x, df), t.sf(x, df))
        assert dist.t_quantile(0.975, df) == t.ppf(0.975, df)  # a float for a float
    for df in (1, 2, 7.5, 40):
        np.testing.assert_array_equal(dist.chi2_sf(np.abs(x), df), chi2.sf(np.abs(x), df))


def test_welch_equals_scipy_ttest_ind():
    """Welch's test (closed form, ``stats.welch``) against scipy's ``ttest_ind(equal_var=False)`` on random
    samples of unequal sizes and spreads, ties included; NaN where the test is undefined."""
    import warnings

    from scipy.stats import ttest_ind

    for seed in range(200):
        rng = np.random.default_rng(seed)
        a = rng.normal(0, rng.uniform(0.1, 3), rng.integers(2, 40))
        b = rng.normal(rng.normal(0, 0.5), rng.uniform(0.1, 3), rng.integers(2, 40))
        if seed % 10 == 0:
            a, b = np.round(a), np.round(b)
        got = stats.welch(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ttest_ind(a, b, equal_var=False)
        np.testing.assert_allclose([got.t, got.df, got.p_value], [ref.statistic, ref.df, ref.pvalue], rtol=1e-12)
    assert np.isnan(stats.welch([1.0], [1.0, 2.0]).t) and np.isnan(stats.welch([1.0, 1.0], [2.0, 2.0]).p_value)
