"""Responsible adjustment (issue 33, item 5 at the statistics level): interventions on null data and
with a planted bias that vanishes; calibration offsets to parity and to observed rates; a policy
effect that the model's bias flips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from louder.analysis.stats import dpd
from louder.analysis.stats.calibration import _solve_group, attribute_members, calibration_offsets, member_sums, rake
from louder.analysis.stats.interventions import INTERVENTION_COLUMNS, intervention_changes
from louder.analysis.stats.prob_dpd import prob_dpd
from louder.analysis.stats.sensitivity import sensitivity_table
from louder.calibration import apply_offsets, calibrated_probability
from louder.errors import LouderError

ATTRS = ["Male", "Female", "Non-binary"]


def intervened(seed, n=100, bias=0.9, vanishes=True, score=False):
    """The same agents under ``none`` and ``fairness``: the fake model bias=female:0.9,pick=Evacuate,
    unless=fairness (the bias stops when the intervention's word is in the prompt)."""
    rng = np.random.default_rng(seed)
    rows = []
    for iv in ("none", "fairness"):
        for a in ATTRS:
            p = bias if a == "Female" and not (vanishes and iv == "fairness") else 0.5
            y = rng.random(n) < p
            rows.append(pd.DataFrame(dict(model="fake", condition="no_persona", scenario="evacuate",
                                          group="gender_identity", attribute=a, agent_id=np.arange(n), replicate=0,
                                          intervention=iv, status="valid", target=y,
                                          p_target=np.clip(p + rng.normal(0, 0.05, n), 0, 1) if score else np.nan,
                                          decision=np.where(y, "Evacuate", "Stay"))))
    d = pd.concat(rows, ignore_index=True)
    d.loc[d.index[::41], "status"] = "invalid"  # unpaired agents leave the contrast
    return d


def test_a_bias_that_vanishes_under_the_intervention_reduces_in_three_of_three_seeds():
    for seed in range(3):
        t = intervention_changes(intervened(seed), B=2000, seed=seed)
        assert list(t.columns) == INTERVENTION_COLUMNS and len(t) == 1
        r = t.iloc[0]
        assert r["verdict"] == "reduces", r.to_dict()
        assert r["ci_low"] <= -0.4 <= r["ci_high"]  # the planted change inside its interval
        assert r["ci_low"] <= r["dpd_change"] <= r["ci_high"]
        assert r["rate_shift_ci_low"] <= -0.4 / 3 <= r["rate_shift_ci_high"]  # Female 0.9 → 0.5: a third of 0.4
        assert 0.3 < r["changed"] < 0.7 and r["n_agents"] < 300


def test_without_a_bias_no_change_in_at_least_95_percent_of_seeds():
    verdicts = [intervention_changes(intervened(100 + s, bias=0.5), B=1000, seed=s)["verdict"].iloc[0] for s in range(20)]
    assert verdicts.count("no change") >= 19, verdicts
    # a bias the intervention leaves alone: no change either
    kept = [intervention_changes(intervened(200 + s, vanishes=False), B=1000, seed=s)["verdict"].iloc[0] for s in range(20)]
    assert kept.count("no change") >= 19, kept


def test_score_mode_and_thin_data():
    t = intervention_changes(intervened(5, score=True), B=1000)
    assert t["verdict"].iloc[0] == "reduces" and t["ci_low"].iloc[0] <= -0.4 <= t["ci_high"].iloc[0]
    thin = intervention_changes(intervened(6, n=8), B=500)
    assert thin["verdict"].iloc[0] == "underpowered"
    d = intervened(7)
    with pytest.raises(LouderError, match="no decisions under 'none'"):
        intervention_changes(d[d["intervention"] != "none"])


def score_run(seed, n=200, bias=1.0, noise=0.7):
    rng = np.random.default_rng(seed)
    rows = []
    for a, m in zip(ATTRS, (0.0, bias, 0.3 * bias)):
        p = expit(-0.2 + m + rng.normal(0, noise, n))
        rows.append(pd.DataFrame(dict(model="fake", condition="contextualized", scenario="evacuate",
                                      group="gender_identity", attribute=a, status="valid", p_target=p)))
    return pd.concat(rows, ignore_index=True)


def _adjusted_means(d, offsets):
    off = offsets.set_index("attribute")["offset"]
    adj = calibrated_probability(d["p_target"], d["attribute"].map(off))
    return pd.Series(adj, index=d.index).groupby(d["attribute"]).mean()


def test_parity_offsets_make_the_dpd_zero_and_a_rerun_reads_no_significant_dpd():
    d = score_run(0)
    before = prob_dpd([g["p_target"].to_numpy() for _, g in d.groupby("attribute")], B=2000)
    assert before.p_value < 0.01  # a significant planted DPD
    o = calibration_offsets(d)
    assert list(o.columns) == ["model", "scenario", "group", "attribute", "source", "to", "n", "rate", "target",
                               "offset", "se", "rate_adjusted"]
    m = _adjusted_means(d, o)
    assert dpd(m.to_numpy()) < 1e-9 and m.mean() == pytest.approx(d["p_target"].mean(), abs=1e-9)
    assert np.allclose(o["rate_adjusted"], o["target"])
    # the offsets' standard errors, against their spread over repeated calibration runs
    spread = np.std([calibration_offsets(score_run(20 + s)).set_index("attribute").loc["Female", "offset"]
                     for s in range(40)])
    assert o.set_index("attribute").loc["Female", "se"] == pytest.approx(spread, rel=0.35)
    # run again with --adjustment: new agents of the same model, their probabilities offset before deciding.
    # The offsets must come from a run much larger than the re-run: fitted on as many agents as the re-run
    # has, their own error is as large as the re-run's noise and is flagged in about 23 % of re-runs.
    o = calibration_offsets(score_run(0, n=20_000))
    flagged = 0
    for s in range(40):
        again = score_run(50 + s)
        again["p_target"] = calibrated_probability(again["p_target"], again["attribute"].map(o.set_index("attribute")["offset"]))
        flagged += prob_dpd([g["p_target"].to_numpy() for _, g in again.groupby("attribute")], B=500).p_value < 0.05
    assert flagged <= 4, flagged  # about α


def test_observed_offsets_hit_the_observed_rates_and_null_offsets_are_about_zero():
    d = score_run(1)
    obs = pd.DataFrame(dict(group="gender_identity", attribute=ATTRS, rate=[0.3, 0.5, 0.7]))
    o = calibration_offsets(d, to="observed", observed=obs).set_index("attribute")
    assert np.allclose(_adjusted_means(d, o.reset_index()).reindex(ATTRS), [0.3, 0.5, 0.7], atol=1e-9)
    # brute force: each offset is the root of its attribute's equation
    from scipy.optimize import brentq
    for a, t in zip(ATTRS, (0.3, 0.5, 0.7)):
        p = d.loc[d["attribute"] == a, "p_target"].to_numpy()
        root = brentq(lambda x: expit(logit(p) + x).mean() - t, -20, 20, xtol=1e-12)
        assert o.loc[a, "offset"] == pytest.approx(root, abs=1e-8)
    null = calibration_offsets(score_run(2, bias=0.0, n=400))
    assert null["offset"].abs().max() < 0.2  # sampling noise only (se of a mean logit ≈ 0.7/√400)


def test_sample_mode_offsets_move_rates_exactly():
    rng = np.random.default_rng(3)
    d = score_run(3)
    d = d.assign(target=rng.random(len(d)) < d["p_target"], p_target=np.nan)
    o = calibration_offsets(d).set_index("attribute")
    pooled = d["target"].mean()
    for a, g in d.groupby("attribute"):
        x, n = g["target"].sum(), len(g)
        assert o.loc[a, "source"] == "sample"
        assert o.loc[a, "offset"] == pytest.approx(logit(pooled) - logit((x + 0.5) / (n + 1)), abs=1e-9)


def test_raking_several_groups_at_once():
    rng = np.random.default_rng(4)
    n = 3000
    g = rng.choice(["Male", "Female"], n)
    ide = np.where(rng.random(n) < np.where(g == "Female", 0.8, 0.2), "Liberal", "Conservative")  # tied groups
    p = expit(0.8 * (g == "Female") - 0.6 * (ide == "Liberal") + rng.normal(0, 0.5, n))
    d = pd.DataFrame(dict(model="fake", scenario="evacuate", variant="base", status="valid", p_target=p,
                          attr_gender_identity=g, attr_political_ideology=ide, weight=rng.lognormal(0, 0.3, n)))
    o = calibration_offsets(d)
    assert set(o["group"]) == {"gender_identity", "political_ideology"}
    assert np.allclose(o["rate_adjusted"], o["target"], atol=1e-8)
    # the raking's fixed point, checked directly
    codes = [pd.factorize(d[c], sort=True)[0] for c in ("attr_gender_identity", "attr_political_ideology")]
    W = d["weight"].to_numpy()[None, :]
    pooled = float((W[0] * p).sum() / W.sum())
    deltas, residual = rake(logit(p)[None, :], W, codes, [np.full(2, pooled), np.full(2, pooled)])
    assert residual < 1e-8


def test_raking_to_inconsistent_targets_settles_instead_of_drifting():
    """Observed rates whose groups imply different overall rates (gender's 0.62, ideology's 0.57 here)
    cannot all hold. Raking used to move a constant from one group's offsets to the other's every cycle
    (the offsets are identified only up to it) and ran to max_cycles with offsets near ±36 — and past ±40,
    the solver's bracket, the fit itself broke. Centred, the offsets settle with the rates: the same after
    20 cycles as after 500, every group after the first with mean 0 over its agents, the last group's
    targets met, and every agent's adjusted logit the same as without centring (uncentred, 10 cycles:
    the rates settle before the drift reaches the bracket)."""
    rng = np.random.default_rng(9)
    n = 400
    g = rng.choice(["Male", "Female"], n)
    ide = rng.choice(["Liberal", "Moderate", "Conservative"], n, p=[0.3, 0.3, 0.4])
    p = expit(0.5 * (g == "Female") - 0.4 * (ide == "Liberal") + rng.normal(0, 0.7, n))
    codes = [pd.factorize(g, sort=True)[0], pd.factorize(ide, sort=True)[0]]
    W = np.vstack([np.ones(n), rng.multinomial(n, np.full(n, 1 / n), size=30)])  # the data and 30 resamples
    L = np.broadcast_to(logit(p), W.shape)
    targets = [np.array([0.7, 0.55]), np.array([0.5, 0.6, 0.65])]
    deltas, residual = rake(L, W, codes, targets)
    again, _ = rake(L, W, codes, targets, max_cycles=20)
    for d, e in zip(deltas, again):
        assert np.abs(d - e).max() < 1e-8
    assert max(np.abs(d).max() for d in deltas) < 5 and residual > 0.01  # finite offsets; the targets conflict
    eta = L + sum(d[:, c] for d, c in zip(deltas, codes))
    s = expit(eta)
    for a in range(3):  # the last group's targets hold in every row
        m = codes[1] == a
        assert np.allclose((W[:, m] * s[:, m]).sum(1) / W[:, m].sum(1), targets[1][a], atol=1e-9)
    assert np.allclose((W * deltas[1][:, codes[1]]).sum(1) / W.sum(1), 0, atol=1e-9)
    # the same fit as the plain alternation, stopped after 10 cycles, before its drift reaches the bracket
    plain = [np.zeros((len(W), 2)), np.zeros((len(W), 3))]
    eta_plain = np.array(L)
    for _ in range(10):
        for k, (c, t) in enumerate(zip(codes, targets)):
            base = eta_plain - plain[k][:, c]
            members = attribute_members(c, len(t))
            plain[k] = _solve_group(base, W, c, members, member_sums(W, members), np.broadcast_to(t, (len(W), len(t))),
                                    plain[k], 1e-12)
            eta_plain = base + plain[k][:, c]
    assert np.abs(expit(eta_plain) - s).max() < 1e-9


def test_calibrating_to_observed_rates_that_conflict_says_so():
    """`louder calibrate --to observed` on a population run whose groups' observed rates imply different
    overall rates (here gender's 0.60 against ideology's 0.52 on these agents): one warning naming both and
    the group whose rates the offsets meet; rates that agree (parity) warn of nothing."""
    import warnings

    from louder.errors import LouderWarning

    rng = np.random.default_rng(5)
    n = 2000
    g = rng.choice(["Female", "Male"], n)
    ide = rng.choice(["Liberal", "Conservative"], n)
    p = expit(0.4 * (g == "Female") - 0.3 * (ide == "Liberal") + rng.normal(0, 0.5, n))
    d = pd.DataFrame({"model": "fake", "scenario": "evacuate", "variant": "base", "status": "valid", "p_target": p,
                      "attr_gender_identity": g, "attr_political_ideology": ide})
    observed = pd.DataFrame({"group": ["gender_identity"] * 2 + ["political_ideology"] * 2,
                             "attribute": ["Female", "Male", "Liberal", "Conservative"], "rate": [0.7, 0.5, 0.5, 0.54]})
    implied = [0.7 * (g == "Female").mean() + 0.5 * (g == "Male").mean(),
               0.5 * (ide == "Liberal").mean() + 0.54 * (ide == "Conservative").mean()]
    with pytest.warns(LouderWarning, match=r"gender_identity 0\.\d{3}, political_ideology 0\.\d{3}\), so they cannot "
                                           r"all hold; the offsets meet political_ideology's") as caught:
        o = calibration_offsets(d, to="observed", observed=observed)
    assert f"gender_identity {implied[0]:.3f}" in str(caught[0].message)
    assert f"political_ideology {implied[1]:.3f}" in str(caught[0].message)
    ideology = o[o["group"] == "political_ideology"]
    assert np.allclose(ideology["rate_adjusted"], ideology["target"], atol=1e-8)  # the last group's rates hold
    with warnings.catch_warnings():
        warnings.simplefilter("error", LouderWarning)
        calibration_offsets(d, to="parity")


def test_apply_offsets_to_choice_probabilities():
    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1], [1.0, 0.0, 0.0]])
    out = apply_offsets(probs, 0, [1.0, 0.0, -2.0])
    assert np.allclose(out.sum(axis=1), 1)
    assert out[0, 0] == pytest.approx(expit(logit(0.2) + 1))
    assert out[0, 1] / out[0, 2] == pytest.approx(0.5 / 0.3)  # the others keep their proportions
    assert np.allclose(out[1], probs[1])
    assert out[2, 1] == pytest.approx(out[2, 2]) and out[2, 0] < 1


def policy_run(seed, flip=True, n=1500, score=True):
    """A population run with a policy variant. ``flip``: the model is strongly biased against Male agents,
    and the policy moves Female down and Male up on the logit scale — so the raw agents' overall effect
    is negative, the parity-calibrated agents' positive."""
    rng = np.random.default_rng(seed)
    base = {"Female": logit(0.6), "Male": logit(0.03)} if flip else {"Female": 0.0, "Male": 0.0}
    effect = {"Female": -0.5, "Male": 1.0} if flip else {"Female": 0.5, "Male": 0.5}
    rows = []
    for v in ("base", "policy"):
        for a in ("Female", "Male"):
            p = expit(base[a] + (effect[a] if v == "policy" else 0) + rng.normal(0, 0.3, n))
            rows.append(pd.DataFrame(dict(model="fake", condition="contextualized", scenario="evacuate", variant=v,
                                          attr_gender_identity=a, attr_age_group=rng.choice(["18-44", "45+"], n),
                                          status="valid", weight=1.0, p_target=p if score else np.nan,
                                          target=rng.random(n) < p)))
    return pd.concat(rows, ignore_index=True)


def test_a_bias_that_flips_the_policy_effect_reads_depends():
    t = sensitivity_table(policy_run(0), B=300)
    overall = t[(t["group"] == "(all)")].set_index("agents")
    assert overall.loc["raw", "ci_high"] < 0 < overall.loc["parity", "ci_low"]
    assert set(overall["verdict"]) == {"depends on the model's bias"}
    for agents, r in t.iterrows():
        assert r["ci_low"] <= r["effect"] <= r["ci_high"]


def test_an_unbiased_model_holds_and_observed_agents_hit_their_rates():
    obs = pd.DataFrame(dict(group=["gender_identity"] * 2 + ["age_group"] * 2,
                            attribute=["Female", "Male", "18-44", "45+"], rate=[0.4, 0.4, 0.4, 0.4]))
    t = sensitivity_table(policy_run(1, flip=False, score=False), observed=obs, B=300)
    assert set(t["agents"]) == {"raw", "parity", "observed"}
    assert (t["verdict"] == "holds").all()
    obs_base = t[(t["agents"] == "observed")]
    assert np.allclose(obs_base["rate_base"], 0.4, atol=1e-6)
