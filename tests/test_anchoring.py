"""Anchoring to a human study by prediction-powered inference (issue 34): coverage of synthetic
humans' known rates, informative agents narrow the interval, agents that know nothing never make it
wrong; against ``ppi_py``'s own estimates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from louder.analysis.stats.anchoring import DPD_COLUMNS, RATE_COLUMNS, ppi_dpd, ppi_rate, ppi_table

TRUTH = {"Male": 0.55, "Female": 0.80, "Non-binary": 0.65}  # the synthetic humans: DPD 0.25


def female_biased(attribute, rng, size):
    """The fake model with bias=female:0.9 in sample mode: its decisions ignore the respondent."""
    return (rng.random(size) < (0.9 if attribute == "Female" else 0.5)).astype(float)


def study(seed, n=80, agents=400, predict=female_biased):
    rng = np.random.default_rng(seed)
    humans, pool = [], []
    for a, t in TRUTH.items():
        y = (rng.random(n) < t).astype(float)
        humans.append(pd.DataFrame(dict(model="fake", scenario="evacuate", group="gender_identity", attribute=a,
                                        respondent=np.arange(n), target=y, prediction=predict(a, rng, n))))
        pool.append(pd.DataFrame(dict(model="fake", scenario="evacuate", group="gender_identity", attribute=a,
                                      prediction=predict(a, rng, agents))))
    return pd.concat(humans, ignore_index=True), pd.concat(pool, ignore_index=True)


def test_done_when_ppi_covers_the_truth_and_the_dpd_over_eight_seeds():
    covered, dpd_covered = 0, 0
    for seed in range(8):
        t = ppi_table(*study(seed), B=1000, seed=seed)
        truth = t["attribute"].map(TRUTH)
        covered += int(((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).sum())
        dpd_covered += int(t["dpd_ci_low_ppi"].iloc[0] <= 0.25 <= t["dpd_ci_high_ppi"].iloc[0])
    assert covered >= 21 and dpd_covered >= 7, (covered, dpd_covered)


def test_columns_and_every_interval_contains_its_estimate():
    h, a = study(1)
    t = ppi_table(h, a, B=500)
    assert list(t.columns) == ["model", "scenario", "group", *RATE_COLUMNS, *DPD_COLUMNS] and len(t) == 3
    for kind in ("humans", "agents", "ppi"):
        assert (t[f"ci_low_{kind}"] <= t[f"rate_{kind}"]).all() and (t[f"rate_{kind}"] <= t[f"ci_high_{kind}"]).all()
    r = t.iloc[0]
    assert r["dpd_ci_low_ppi"] <= r["dpd_ppi"] <= r["dpd_ci_high_ppi"]
    assert r["ratio_ci_low"] <= r["ratio"] <= r["ratio_ci_high"]
    assert r["ratio"] == pytest.approx(r["dpd_agents"] / r["dpd_humans"])
    # the agents ignore the respondents: agreement is chance (p·y + (1 − p)(1 − y) in expectation)
    assert (t["agreement"] - (t["rate_humans"] * t["rate_agents"] + (1 - t["rate_humans"]) * (1 - t["rate_agents"]))
            ).abs().max() < 0.15


def test_the_estimates_are_ppi_pys_with_its_own_tuning():
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    rng = np.random.default_rng(2)
    for weighted in (False, True):
        x = rng.random(120)
        Y = (rng.random(120) < x).astype(float)
        Yh, Yu = np.clip(x + rng.normal(0, 0.1, 120), 0, 1), rng.random(900)
        w = rng.lognormal(0, 0.4, 120) if weighted else None
        wu = rng.lognormal(0, 0.4, 900) if weighted else None
        r = ppi_rate(Y, Yh, Yu, w, wu)
        assert r["rate_ppi"] == pytest.approx(float(np.squeeze(ppi_mean_pointestimate(Y, Yh, Yu, w=w, w_unlabeled=wu))))
        lo, hi = ppi_mean_ci(Y, Yh, Yu, alpha=0.05, w=w, w_unlabeled=wu)
        assert (r["ci_low_ppi"], r["ci_high_ppi"]) == (pytest.approx(float(lo[0])), pytest.approx(float(hi[0])))
        assert 0 < r["lam"] <= 1 and r["ess_gained"] > 0


def _covariate_study(rng, n, N, informative):
    """Each person's rate depends on a covariate the agent also sees (an informative agent predicts
    it); an uninformative agent's predictions are noise. Truth: the covariate's mean rate."""
    def rate(x):
        return np.where(x > 0.5, 0.9, 0.1)

    x, xu = rng.random(n), rng.random(N)
    Y = (rng.random(n) < rate(x)).astype(float)
    if informative:
        return Y, rate(x), rate(xu)
    return Y, rng.random(n), rng.random(N)


def test_informative_agents_narrow_and_agents_that_know_nothing_never_make_it_wrong():
    rng = np.random.default_rng(3)
    S = 300
    for informative in (True, False):
        cover, ratio = 0, []
        for _ in range(S):
            Y, Yh, Yu = _covariate_study(rng, 80, 800, informative)
            r = ppi_rate(Y, Yh, Yu)
            cover += r["ci_low_ppi"] <= 0.5 <= r["ci_high_ppi"]
            ratio.append((r["ci_high_ppi"] - r["ci_low_ppi"]) / (r["ci_high_humans"] - r["ci_low_humans"]))
        assert cover / S >= 0.92, (informative, cover / S)
        if informative:
            assert np.median(ratio) < 0.8
        else:  # no narrower: the tuning sends λ to about 0 and the interval back to the humans'
            assert np.median(ratio) > 0.97


def test_biased_agents_that_know_nothing_keep_coverage_over_many_seeds():
    rng = np.random.default_rng(4)
    S, cover = 300, 0
    for _ in range(S):
        Y = (rng.random(80) < 0.8).astype(float)
        r = ppi_rate(Y, female_biased("Female", rng, 80), female_biased("Female", rng, 400))
        cover += r["ci_low_ppi"] <= 0.8 <= r["ci_high_ppi"]
    assert cover / S >= 0.92


def test_probability_predictions_and_constant_predictions():
    rng = np.random.default_rng(5)
    h, a = study(5, predict=lambda attr, rng, m: np.clip(rng.normal(0.7 if attr == "Female" else 0.5, 0.05, m), 0, 1))
    t = ppi_table(h, a, B=500)
    assert t["dpd_ci_low_ppi"].iloc[0] <= t["dpd_ppi"].iloc[0] <= t["dpd_ci_high_ppi"].iloc[0]
    # a score-mode fake model without noise: every prediction the same, nothing to learn, λ = 0
    Y = (rng.random(80) < 0.6).astype(float)
    r = ppi_rate(Y, np.full(80, 0.5), np.full(400, 0.5))
    assert r["lam"] == 0 and r["rate_ppi"] == pytest.approx(Y.mean())
    d = ppi_dpd([(Y, np.full(80, 0.5), np.ones(80), np.full(400, 0.5), np.ones(400))] * 2, B=200)
    assert d["dpd_ppi"] == 0 and d["dpd_ci_low_ppi"] == 0 and np.isnan(d["ratio"])
    # an attribute with a single respondent: its counts, no estimate, and no DPD from one attribute
    h, a = study(6)
    h = h[(h["attribute"] != "Male") | (h["respondent"] == 0)]
    t = ppi_table(h[h["attribute"] != "Non-binary"], a, B=200).set_index("attribute")
    assert t.loc["Male", "n_humans"] == 1 and np.isnan(t.loc["Male", "rate_ppi"]) and t["dpd_ppi"].isna().all()
