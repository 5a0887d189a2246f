"""Parity given a legitimate factor (issue 37, item 2): a gap explained by a correlated control, a gap
that persists, null data, and the within-stratum rates against Fairlearn."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, selection_rate

from louder.analysis.stats.conditional import COLUMNS, conditional_dpd, conditional_tables, strata_table
from louder.errors import LouderError


def population(seed, n=3000, model_reads="ideology", tie=0.8, weights=False):
    """Agents whose gender is tied to ideology (Female mostly Liberal, Male mostly Conservative), an age
    group that is unrelated, and a model biased by ideology, by gender, or by nothing."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["Male", "Female"], n)
    liberal = np.where(g == "Female", rng.random(n) < tie, rng.random(n) < 1 - tie)
    ideology = np.where(liberal, np.where(rng.random(n) < 0.3, "Very Liberal", "Liberal"), "Conservative")
    age = rng.choice(["18-29", "30-44", "45-64", "65+"], n)
    p = {"ideology": np.where(liberal, 0.7, 0.4), "gender": np.where(g == "Female", 0.65, 0.45),
         "none": np.full(n, 0.55)}[model_reads]
    status = np.where(rng.random(n) < 0.03, "invalid", "valid")
    return pd.DataFrame(dict(model="fake", condition="contextualized", scenario="evacuate", variant="base",
                             status=status, target=np.where(status == "valid", rng.random(n) < p, None),
                             attr_gender_identity=g, attr_political_ideology=ideology, attr_age_group=age,
                             weight=rng.lognormal(0, 0.3, n) if weights else 1.0))


def _row(t, group):
    return t.set_index("group").loc[group]


def test_a_gap_the_ideology_explains():
    t, strata = conditional_tables(population(0), ["political_ideology"], B=2000)
    assert list(t.columns) == COLUMNS
    g = _row(t, "gender_identity")
    # raw gap ≈ (0.8·0.7 + 0.2·0.4) − (0.2·0.7 + 0.8·0.4) = 0.18; within every ideology none
    assert g["dpd_raw"] == pytest.approx(0.18, abs=0.05)
    assert g["verdict"] == "explained by political_ideology"
    assert g["ci_low"] == 0 <= g["dpd_within"] <= g["ci_high"] < g["dpd_raw"]
    assert _row(t, "age_group")["verdict"] == "no disparity"
    s = strata[strata["group"] == "gender_identity"]
    assert set(s["stratum"]) == {"Conservative", "Liberal", "Very Liberal"} and s["used"].all()
    assert s["share"].sum() == pytest.approx(1)


def test_a_gap_that_persists_within_every_stratum():
    t, _ = conditional_tables(population(1, model_reads="gender"), ["political_ideology"], B=2000)
    g = _row(t, "gender_identity")
    assert g["verdict"] == "persists"
    assert g["ci_low"] < 0.2 < g["ci_high"] and g["ci_low"] > 0 and g["p_value"] < 0.01


def test_null_flags_nothing_in_at_least_95_percent_of_seeds():
    verdicts = []
    for s in range(20):
        t, _ = conditional_tables(population(100 + s, n=1500, model_reads="none"),
                                  ["political_ideology", "age_group"], B=1000)
        verdicts.append(set(t["verdict"]))
    assert sum(v != {"no disparity"} for v in verdicts) <= 1, verdicts


def test_within_stratum_dpd_matches_fairlearn_and_a_brute_force():
    d = population(2, n=2000, model_reads="ideology", weights=True)
    v = d[d["status"] == "valid"]
    mf = MetricFrame(metrics=selection_rate, y_true=v["target"].astype(int), y_pred=v["target"].astype(int),
                     sensitive_features=v["attr_gender_identity"], control_features=v["attr_political_ideology"],
                     sample_params={"sample_weight": v["weight"].to_numpy()})
    s = strata_table(d, "attr_gender_identity", "attr_political_ideology").set_index("stratum")
    for stratum, diff in mf.difference().items():
        assert s.loc[stratum, "dpd"] == pytest.approx(diff, abs=1e-12)
    # the pooled DPD by hand: strata weighted by their agents' weight
    W = v.groupby("attr_political_ideology")["weight"].sum() / v["weight"].sum()
    rates = {a: sum(W[st] * np.average(c["target"].astype(float), weights=c["weight"])
                    for st, c in v[v["attr_gender_identity"] == a].groupby("attr_political_ideology"))
             for a in ("Male", "Female")}
    r = conditional_dpd(d, "attr_gender_identity", "attr_political_ideology", B=500)
    assert r.dpd_within == pytest.approx(abs(rates["Female"] - rates["Male"]), abs=1e-12)


def test_intervals_contain_their_estimate_and_thin_strata_are_left_out():
    for seed, n in itertools.product(range(15), (40, 200)):
        d = population(seed, n=n, model_reads=["ideology", "gender", "none"][seed % 3])
        r = conditional_dpd(d, "attr_gender_identity", "attr_age_group", B=300, seed=seed)
        assert r.ci_low <= r.dpd_within <= r.ci_high and 0 <= r.p_value <= 1
        assert r.raw_low <= r.dpd_raw <= r.raw_high
    d = population(3, n=600)
    d = d[~((d["attr_political_ideology"] == "Very Liberal") & (d["attr_gender_identity"] == "Male"))]
    s = strata_table(d, "attr_gender_identity", "attr_political_ideology").set_index("stratum")
    assert not s.loc["Very Liberal", "used"] and np.isnan(s.loc["Very Liberal", "share"])
    assert conditional_dpd(d, "attr_gender_identity", "attr_political_ideology", B=200).n_strata == 2


def test_an_unknown_control_is_one_line():
    with pytest.raises(LouderError, match="control 'region' is not a group"):
        conditional_tables(population(4, n=100), ["region"])
