"""Population analysis on simulated decisions with known effects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from louder.analysis.measures.population import intersection_heatmap, odds_ratio_figure
from louder.analysis.stats import parity_bootstrap
from louder.analysis.stats.population import (
    complete_twin_sets,
    group_dpd,
    intersection_table,
    logistic_regression,
    paired_dpd,
    twin_flips,
    variant_dpd_difference,
    variant_effects,
    variant_rates,
    weighted_rate,
)
from louder.populations import draw_agents, load_population

GROUPS = ["age_group", "gender_identity", "race_ethnicity", "political_ideology"]


def simulated(n=10_000, seed=0, rate=lambda a: np.full(len(a), 0.4)):
    """Agents of the example population deciding with P(target) = rate(agents); 3 % invalid."""
    a = draw_agents(load_population("us_adults"), n, seed=seed)
    rng = np.random.default_rng(seed)
    y = rng.random(n) < rate(a)
    status = np.where(rng.random(n) < 0.03, "invalid", "valid")
    return a.assign(status=status, target=np.where(status == "valid", y, None))


def test_regression_finds_the_one_attribute_that_matters():
    d = simulated(rate=lambda a: np.where(a["gender_identity"] == "Female", 0.7, 0.3))
    reg = logistic_regression(d, GROUPS)
    assert reg.status == "ok" and reg.n == (d["status"] == "valid").sum()
    t = reg.table.set_index(["group", "attribute"])
    # Female is the reference (most frequent attribute), so Male's OR is (0.3/0.7)/(0.7/0.3) ≈ 0.18.
    male = t.loc[("gender_identity", "Male")]
    assert male["reference"] == "Female"
    assert male["hi"] < 0.25 and male["lo"] > 0.13
    others = reg.table[reg.table["group"] != "gender_identity"]
    # Non-effects: ORs near 1 (the rare groups have wide intervals, so test the well-populated ones).
    big = others[others["hi"] / others["lo"] < 2]
    assert len(big) >= 6 and ((big["odds_ratio"] > 0.75) & (big["odds_ratio"] < 1.33)).all()
    assert (others["lo"] < 1).mean() > 0.8 and (others["hi"] > 1).mean() > 0.8
    fig = odds_ratio_figure(reg.table)
    assert fig is not None and len(fig.axes[0].get_yticklabels()) == len(reg.table)


def test_regression_statuses():
    d = simulated(n=2000, rate=lambda a: np.full(len(a), 0.0))
    assert logistic_regression(d, GROUPS).status == "no variation"
    assert logistic_regression(simulated(n=100, rate=lambda a: np.full(len(a), 0.5)), GROUPS).status == "too few data"
    sep = simulated(n=4000, rate=lambda a: (a["age_group"] == "65+").astype(float))
    r = logistic_regression(sep, GROUPS)
    assert r.status == "separation" and r.table.empty
    # every row left out before the fit (the population tables drop separated attributes): a status, no crash
    assert logistic_regression(d.iloc[:0], GROUPS).status == "no data"


def test_group_dpd_null_and_effect():
    flat = simulated(seed=1)
    g = group_dpd(flat, "race_ethnicity", B=2000)
    assert not g.significant and g.dpd > 0
    eff = simulated(seed=2, rate=lambda a: np.where(a["political_ideology"].str.contains("Conservative"), 0.6, 0.4))
    g = group_dpd(eff, "political_ideology", B=2000)
    assert g.significant and g.dpd == pytest.approx(0.2, abs=0.05) and g.lo < 0.2 < g.hi
    assert not group_dpd(eff, "gender_identity", B=2000).significant


def test_group_dpd_with_unit_weights_is_the_parity_bootstrap():
    d = simulated(n=3000, seed=3).drop(columns="weight")
    g = group_dpd(d, "gender_identity", B=4000, seed=5)
    v = d[d["status"] == "valid"]
    counts = v.groupby("gender_identity")["target"].agg(["size", "sum"])
    ref = parity_bootstrap(counts["size"].to_numpy(), counts["sum"].astype(int).to_numpy(), B=4000, seed=5)
    assert g.dpd == pytest.approx(ref["dpd"]) and g.threshold == pytest.approx(ref["threshold"])


def test_intersections_min_n_and_bh():
    d = simulated(seed=4, rate=lambda a: np.where((a["gender_identity"] == "Female") & (a["age_group"] == "65+"),
                                                  0.8, 0.4))
    t = intersection_table(d, "age_group", "gender_identity", min_n=30)
    assert t["n_valid"].sum() == (d["status"] == "valid").sum()
    small = t[t["n_valid"] < 30]
    assert len(small) and not small["tested"].any() and small["p_value"].isna().all()
    hit = t.set_index(["age_group", "gender_identity"]).loc[("65+", "Female")]
    assert hit["significant"] and hit["rate"] == pytest.approx(0.8, abs=0.04)
    # Every other cell sits at 0.4, below the population's rate (pulled up by the hit): cells that
    # differ from the rest do so downwards, and the hit has the smallest p.
    others = t[t["significant"] & ~((t["age_group"] == "65+") & (t["gender_identity"] == "Female"))]
    assert (others["rate"] < 0.45).all()
    assert t.loc[t["p_value"].idxmin(), ["age_group", "gender_identity"]].tolist() == ["65+", "Female"]
    flat = intersection_table(simulated(seed=6), "age_group", "gender_identity")
    assert flat["significant"].sum() <= 1  # no effect: BH keeps false positives rare
    assert (t.loc[t["tested"], "p_bh"] >= t.loc[t["tested"], "p_value"]).all()
    fig = intersection_heatmap(t, "age_group", "gender_identity")
    assert fig is not None


def test_weighted_rate_interval():
    d = simulated(seed=5, rate=lambda a: np.full(len(a), 0.25))
    r = weighted_rate(d)
    assert r.lo < 0.25 < r.hi and r.hi - r.lo < 0.025 and r.n_valid == (d["status"] == "valid").sum()
    # Weights matter: doubling one attribute's weight moves the rate towards its rate.
    d2 = d.assign(target=np.where(d["gender_identity"] == "Female", True, False),
                  weight=np.where(d["gender_identity"] == "Female", 3.0, 1.0))
    assert weighted_rate(d2).rate == pytest.approx(3 * 0.503 / (3 * 0.503 + 0.497), abs=0.02)


def test_known_variant_effects_are_recovered():
    rng = np.random.default_rng(9)
    rows = []
    # Mandatory order raises evacuation by 0.2 for women only: the gap widens by 0.2.
    for variant in ("voluntary", "mandatory"):
        for attr, base in (("Male", 0.4), ("Female", 0.5)):
            p = base + (0.2 if variant == "mandatory" and attr == "Female" else 0.0)
            y = rng.random(3000) < p
            rows.append(pd.DataFrame({"variant": variant, "gender_identity": attr, "status": "valid", "target": y}))
    d = pd.concat(rows, ignore_index=True)
    rates = variant_rates(d, "gender_identity").set_index(["variant", "attribute"])
    assert rates.loc[("mandatory", "(all)"), "rate"] == pytest.approx(0.55, abs=0.02)
    eff = variant_effects(d, "gender_identity", "voluntary", "mandatory", B=2000).set_index("attribute")
    assert eff.loc["Female", "lo"] < 0.2 < eff.loc["Female", "hi"] and eff.loc["Female", "lo"] > 0.1
    assert eff.loc["Male", "lo"] < 0 < eff.loc["Male", "hi"]
    delta, lo, hi = variant_dpd_difference(d, "gender_identity", "voluntary", "mandatory", B=2000)
    assert lo < 0.2 < hi and lo > 0.1 and delta == pytest.approx(0.2, abs=0.05)


def twins_table(n_sets, decide, attrs=("Male", "Female", "Non-binary")):
    rows = []
    for s in range(n_sets):
        for a in attrs:
            rows.append(dict(twin_set=s, attribute=a, target=decide(s, a), status="valid", twin_status="ok"))
    return pd.DataFrame(rows)


def test_twins_without_attribute_effect_never_flip():
    t = twins_table(200, lambda s, a: s % 3 == 0)
    f = twin_flips(t)
    assert (f["a_only"] == 0).all() and (f["b_only"] == 0).all() and (f["flip_rate"] == 0).all()
    assert (f["p_mcnemar"] == 1).all()
    d, lo, hi = paired_dpd(t, B=500)
    # no discordant set among 200: DPD 0, and the interval bounds it near 0 (not at exactly 0, which
    # 200 sets cannot show: a flip rate of 1 % would give none here with probability 0.13)
    assert d == lo == 0 and 0 < hi < 0.02


def test_pronoun_keyed_twins_flip_at_the_expected_rate():
    # A fake that says "target" when the persona uses "she" and the set's coin (one in four) comes up:
    # Female differs from Male/Non-binary exactly on those sets.
    t = twins_table(400, lambda s, a: (a == "Female") and s % 4 == 0)
    f = twin_flips(t).set_index(["attribute_a", "attribute_b"])
    assert f.loc[("Male", "Female"), "flip_rate"] == 0.25 and f.loc[("Male", "Female"), "b_only"] == 100
    assert f.loc[("Male", "Non-binary"), "flip_rate"] == 0.0
    assert f.loc[("Male", "Female"), "p_mcnemar"] < 1e-20
    dpd_, lo, hi = paired_dpd(t, B=2000)
    assert dpd_ == 0.25 and lo < 0.25 < hi


def test_twin_sets_with_a_failed_twin_are_left_out():
    t = twins_table(10, lambda s, a: a == "Female")
    t.loc[(t["twin_set"] == 3) & (t["attribute"] == "Male"), "twin_status"] = "changed_other_text"
    t.loc[(t["twin_set"] == 4) & (t["attribute"] == "Female"), "status"] = "refused"
    assert len(complete_twin_sets(t)) == 8 and (twin_flips(t)["n_sets"] == 8).all()


@pytest.mark.parametrize("b01,b10", [(0, 5), (3, 9), (12, 12), (1, 30)])
def test_exact_mcnemar_matches_references(b01, b10):
    pairs = [(1, 0)] * b10 + [(0, 1)] * b01 + [(1, 1)] * 7 + [(0, 0)] * 11
    t = pd.DataFrame([dict(twin_set=i, attribute=a, target=bool(v), status="valid", twin_status="ok")
                      for i, (x, y) in enumerate(pairs) for a, v in (("A", x), ("B", y))])
    p = twin_flips(t)["p_mcnemar"].iloc[0]
    assert p == pytest.approx(binomtest(b10, b01 + b10, 0.5).pvalue)
    assert p == pytest.approx(mcnemar([[7, b10], [b01, 11]], exact=True).pvalue)
