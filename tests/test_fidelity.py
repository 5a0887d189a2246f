"""Fidelity to a human study (issue 44, ``louder.analysis.stats.fidelity``): the issue's "Done when" for the
verdicts over 20 seeds on simulated tables of the synthetic study (tests/grounded_study.py: agents as the
fake model makes them), null data reading null, every interval containing its estimate, the per-subgroup
statistics against a brute force, and the measure's option."""

from __future__ import annotations

import grounded_study as G
import numpy as np
import pandas as pd
import pytest

from louder.analysis.stats.fidelity import ALL, CASE_COLUMNS, SUBGROUP_COLUMNS, case_fidelity, fidelity

ATTRS = list(G.SHARE)
SEEDS = range(20)
NO_GAP = dict.fromkeys(ATTRS, 0.55)  # P(evacuated) the same for every attribute: no gap among the people


def _verdicts(model: str, n: int, share=None) -> list[pd.DataFrame]:
    return [case_fidelity(G.fidelity_pairs(s, n, model, share), ATTRS, B=500, seed=s) for s in SEEDS]


@pytest.fixture(scope="module")
def tables() -> dict[str, list[pd.DataFrame]]:
    return {"flat": _verdicts("flat", 200), "double": _verdicts("double", 200), "reads": _verdicts("reads", 600),
            "mirror": _verdicts("mirror", 200), "null reads": _verdicts("reads", 200, NO_GAP),
            "null flat": _verdicts("flat", 200, NO_GAP)}


def _count(ts: list[pd.DataFrame]) -> dict[str, int]:
    return pd.Series([t["verdict"].iloc[0] for t in ts]).value_counts().to_dict()


@pytest.mark.parametrize("model,verdict", [("flat", "flattened"), ("double", "exaggerated"), ("reads", "faithful"),
                                           ("mirror", "reversed")])
def test_done_when_each_planted_gap_reads_its_verdict_in_18_of_20_seeds(tables, model, verdict):
    counts = _count(tables[model])
    assert counts.get(verdict, 0) >= 18, (model, counts)


@pytest.mark.parametrize("model", ["null reads", "null flat"])
def test_done_when_no_gap_among_people_and_agents_reads_faithful_or_underpowered(tables, model):
    counts = _count(tables[model])
    assert counts.get("faithful", 0) + counts.get("underpowered", 0) >= 19, (model, counts)


def test_every_interval_contains_its_estimate(tables):
    t = pd.concat([x for ts in tables.values() for x in ts], ignore_index=True)
    for est, lo, hi in [("agreement", "agreement_ci_low", "agreement_ci_high"),
                        ("normalised", "normalised_ci_low", "normalised_ci_high"),
                        ("distance", "distance_ci_low", "distance_ci_high"),
                        ("gap_humans", "gap_humans_ci_low", "gap_humans_ci_high"),
                        ("gap_agents", "gap_agents_ci_low", "gap_agents_ci_high"),
                        ("gap_difference", "gap_difference_ci_low", "gap_difference_ci_high"),
                        ("spread_index", "spread_ci_low", "spread_ci_high")]:
        ok = t[est].notna()
        assert ok.any(), est
        assert ((t.loc[ok, lo] <= t.loc[ok, est] + 1e-12) & (t.loc[ok, est] <= t.loc[ok, hi] + 1e-12)).all(), est
    assert set(t["verdict"]) <= {"faithful", "flattened", "exaggerated", "reversed", "underpowered"}


def test_the_sizes_and_directions_of_the_planted_gaps(tables):
    """The gap difference and the spread index estimate what was planted: flat agents keep none of the
    people's 0.36 (index 0), doubling agents twice it (index 2), mirrored ones the same size the other way."""
    def mean(model, col):
        return float(np.mean([t[col].iloc[0] for t in tables[model]]))

    dpd = max(G.TRUTH.values()) - min(G.TRUTH.values())
    assert abs(mean("flat", "gap_difference") + dpd) < 0.05 and mean("flat", "spread_index") < 0.3
    assert abs(mean("double", "gap_difference") - dpd) < 0.05 and abs(mean("double", "spread_index") - 2) < 0.25
    assert abs(mean("reads", "gap_difference")) < 0.02 and abs(mean("reads", "spread_index") - 1) < 0.1
    assert abs(mean("mirror", "gap_difference") + 2 * dpd) < 0.06
    # the distance between decisions: nothing for agents drawn like the people (its interval reaches 0)
    reads = pd.concat(tables["reads"])
    assert (reads["distance_ci_low"] == 0).mean() >= 0.9
    # grounded agents that decide as their people do agree as the people agree with themselves
    all_ = reads[reads["subgroup"] == ALL]
    assert abs(all_["normalised"].mean() - 1) < 0.03 and (all_["agreement"] > all_["agreement_chance"] + 0.3).all()


def test_the_subgroup_statistics_against_a_brute_force():
    pairs = G.fidelity_pairs(5, 60, "ignores")
    rng = np.random.default_rng(5)
    pairs["weight"] = rng.choice([0.5, 1.0, 3.0], len(pairs))
    pairs.loc[pairs.index[:4], "agent"] = None  # four agents without a valid answer
    t = case_fidelity(pairs, ATTRS, B=300, seed=1).set_index("subgroup")
    assert list(t.reset_index().columns) == [*SUBGROUP_COLUMNS, *CASE_COLUMNS]
    assert list(t.index) == [*ATTRS, ALL]
    valid = pairs[pairs["agent"].notna()]
    for name, g in [*valid.groupby("attribute"), (ALL, valid)]:
        r, w = t.loc[name], g["weight"]
        assert r["n_pairs"] == len(g)
        assert r["agreement"] == pytest.approx(np.average(g["human"] == g["agent"], weights=w))
        ph = {c: np.average(g["human"] == c, weights=w) for c in ("Evacuate", "Stay")}
        pa = {c: np.average(g["agent"] == c, weights=w) for c in ("Evacuate", "Stay")}
        assert r["agreement_chance"] == pytest.approx(sum(ph[c] * pa[c] for c in ph))
        assert r["distance"] == pytest.approx(0.5 * sum(abs(ph[c] - pa[c]) for c in ph))
        assert r["rate_humans"] == pytest.approx(ph["Evacuate"]) and r["rate_agents"] == pytest.approx(pa["Evacuate"])
        re = g[g["retest"].notna()]
        assert r["n_retest"] == len(re)
        assert r["retest"] == pytest.approx(np.average(re["retest"] == re["human"], weights=re["weight"]))
        assert r["normalised"] == pytest.approx(r["agreement"] / r["retest"])
    assert t.loc[ATTRS[0], "n_no_answer"] == 4 and t.loc[ALL, "n_no_answer"] == 4
    rates_h = valid.groupby("attribute").apply(lambda g: np.average(g["human_target"], weights=g["weight"]),
                                               include_groups=False)
    rates_a = valid.groupby("attribute").apply(lambda g: np.average(g["agent_target"], weights=g["weight"]),
                                               include_groups=False)
    r = t.loc[ALL]
    assert r["gap_humans"] == pytest.approx(rates_h.max() - rates_h.min())
    assert r["gap_agents"] == pytest.approx(rates_a.max() - rates_a.min())
    top, bottom = rates_h.idxmax(), rates_h.idxmin()
    assert r["gap_difference"] == pytest.approx((rates_a[top] - rates_a[bottom]) - (rates_h[top] - rates_h[bottom]))
    assert r["spread_index"] == pytest.approx(r["gap_agents"] / r["gap_humans"])


def test_a_study_without_retest_or_with_one_attribute():
    pairs = G.fidelity_pairs(6, 40, "reads").drop(columns="retest")
    t = case_fidelity(pairs, ATTRS, B=200)
    assert t["retest"].isna().all() and t["normalised"].isna().all() and (t["n_retest"] == 0).all()
    one = case_fidelity(pairs[pairs["attribute"] == "Female"], ATTRS, B=200)
    assert list(one["subgroup"]) == [*ATTRS, ALL] and one["gap_humans"].isna().all()
    assert set(one["verdict"]) == {"underpowered"} and one.set_index("subgroup").loc["Male", "n_pairs"] == 0


def test_fidelity_pairs_a_runs_decisions_with_its_respondents():
    """``fidelity`` on a run's tables: the paired agents of each kind (not the usual nor the unlabelled ones)
    merged with their respondents; an agent without a valid answer counted."""
    p = G.fidelity_pairs(9, 30, "reads")
    case = dict(model="fake", condition="contextualized", scenario="emergency_response", group="gender_identity")
    humans = pd.DataFrame(dict(respondent=[f"r{i}" for i in range(len(p))], scenario=case["scenario"],
                               group=case["group"], attribute=p["attribute"], decision=p["human"],
                               target=p["human_target"], weight=1.0, retest=p["retest"].astype("string")))
    rows = []
    for kind in ("attribute", "grounded"):
        for i, r in p.iterrows():
            bad = kind == "attribute" and i == 0
            rows.append(dict(case, attribute=r["attribute"], respondent=f"r{i}", grounding=kind,
                             status="error" if bad else "valid", decision=None if bad else r["agent"],
                             target=None if bad else r["agent_target"]))
    rows += [dict(case, attribute="Male", respondent=None, grounding=None, status="valid", decision="Stay",
                  target=False), dict(case, attribute="Male", respondent="u1", grounding="unlabelled", status="valid",
                                      decision="Stay", target=False)]
    d = pd.DataFrame(rows).astype({"target": "boolean", "respondent": "string", "grounding": "string"})
    t = fidelity(d, humans, {"gender_identity": ATTRS}, B=200)
    assert list(t["agents"].unique()) == ["attribute", "grounded"]
    a = t[(t["agents"] == "attribute") & (t["subgroup"] == ALL)].iloc[0]
    g = t[(t["agents"] == "grounded") & (t["subgroup"] == ALL)].iloc[0]
    assert a["n_no_answer"] == 1 and a["n_pairs"] == 89 and g["n_pairs"] == 90
    want = case_fidelity(p, ATTRS, B=200, seed=0)
    assert g["agreement"] == pytest.approx(want.set_index("subgroup").loc[ALL, "agreement"])
