"""Issue 25: the robustness statistics — pooled DPD over wordings with its two-way interval, the
heterogeneity test, sign stability, the verdict, position bias — on null data (many seeds), on
planted effects of known size, and end to end on the fake model (a bias planted under one wording only
reads wording-dependent; a model that prefers the first-listed option is caught)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kstest

import louder
from louder.analysis import stats
from louder.analysis.stats import robustness as R
from louder.llm.base import Reply
from louder.llm.registry import BackendInfo, register


def agents(rates_by_wording: dict, n: int, seed: int, agent_sd: float = 0.0, orders=("A|B", "B|A")):
    """decisions of n agents per attribute, each deciding once in every wording; rates per wording and
    attribute on the probability scale, an agent's own logit shift of SD ``agent_sd``."""
    rng = np.random.default_rng(seed)
    rows, aid = [], 0
    k = len(next(iter(rates_by_wording.values())))
    for a in range(k):
        for i in range(n):
            aid += 1
            u = rng.normal(0, agent_sd)
            for w, rates in rates_by_wording.items():
                p = 1 / (1 + np.exp(-(np.log(rates[a] / (1 - rates[a])) + u)))
                t = bool(rng.random() < p)
                order = orders[i % len(orders)]
                first = order.split("|")[0]
                rows.append(dict(model="m", condition="c", scenario="s", group="g", attribute=f"a{a}", agent_id=aid,
                                 replicate=i, wording=w, choice_order=order, signal="stated", status="valid",
                                 target=t, decision="A" if t else "B", p_target=None, first=first))
    return pd.DataFrame(rows)


def matrices(d: pd.DataFrame):
    ws = sorted(d["wording"].unique())
    attrs = sorted(d["attribute"].unique())
    return R._matrices(d, attrs, ws)


# --- the pooled interval ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(12))
def test_the_pooled_interval_contains_its_estimate(seed):
    rng = np.random.default_rng(seed)
    k, W = int(rng.integers(2, 5)), int(rng.integers(1, 5))
    rates = {f"w{w}": list(rng.uniform(0.05, 0.95, size=k)) for w in range(W)}
    d = agents(rates, int(rng.integers(3, 25)), seed, agent_sd=float(rng.uniform(0, 1.5)))
    Y, V, attr, stratum = matrices(d)
    p = R.pooled_dpd(Y, V, attr, stratum, B=300, seed=seed)
    assert p.low <= p.dpd <= p.high and 0 <= p.low and p.high <= 1
    # the pooled rates are the plain pooled shares
    pooled = d.groupby("attribute")["target"].mean().to_numpy()
    assert np.allclose(p.rates, pooled)


def test_the_pooled_interval_holds_at_zero_on_null_data():
    """No effect, 3 wordings, 40 agents per attribute: the interval excludes 0 in about 5 % of runs."""
    seeds = range(60)
    lows = []
    for s in seeds:
        d = agents({"w1": [0.5, 0.5], "w2": [0.4, 0.4], "w3": [0.6, 0.6]}, 40, s)
        Y, V, attr, stratum = matrices(d)
        lows.append(R.pooled_dpd(Y, V, attr, stratum, B=300, seed=s).low)
    assert np.mean(np.array(lows) > 0) <= 0.12


def test_wording_variation_widens_the_interval():
    """The same pooled data with the wording-to-wording spread counted is wider than one wording's."""
    d = agents({"w1": [0.3, 0.7], "w2": [0.6, 0.6], "w3": [0.45, 0.55]}, 40, 3)
    Y, V, attr, stratum = matrices(d)
    crossed = R.pooled_dpd(Y, V, attr, stratum, B=1000, seed=1)
    # the same decisions as if 3 × 40 independent agents had each answered once (no wording unit)
    flat = R.pooled_dpd(Y.reshape(-1, 1) if False else Y.T.reshape(-1, 1),
                        V.T.reshape(-1, 1), np.tile(attr, 3), np.tile(stratum, 3), B=1000, seed=1)
    assert crossed.dpd == pytest.approx(flat.dpd)
    assert crossed.high - crossed.low > flat.high - flat.low


# --- heterogeneity --------------------------------------------------------------------------------

def test_heterogeneity_p_is_uniform_on_null_data():
    rng = np.random.default_rng(0)
    ps = []
    for _ in range(300):
        n = np.full((3, 3), 60)
        base = rng.uniform(0.2, 0.8, size=(3, 1))  # wordings differ overall; the attribute effect does not
        x = rng.binomial(n, np.clip(base + np.array([0.0, 0.05, -0.05]), 0, 1))
        ps.append(R.heterogeneity_p(x, n))
    ps = np.array(ps)
    assert 0.02 <= np.mean(ps < 0.05) <= 0.09
    assert kstest(ps, "uniform").pvalue > 0.01


def test_heterogeneity_detects_a_disparity_under_one_wording_only():
    n = np.full((3, 2), 60)
    x = np.array([[54, 30], [30, 30], [31, 29]])  # 0.9 vs 0.5 in the first wording only
    assert R.heterogeneity_p(x, n) < 0.001
    assert np.isnan(R.heterogeneity_p(x[:1], n[:1]))  # one unit: nothing to compare


def test_sign_stability_and_between_sd():
    pooled = np.array([0.7, 0.5, 0.3])
    units = np.array([[0.7, 0.5, 0.3], [0.6, 0.55, 0.2], [0.3, 0.5, 0.7]])
    assert R.sign_stability(units, pooled) == pytest.approx(2 / 3)
    n = np.full((3, 2), 10_000)
    same = np.array([[7000, 3000]] * 3)
    assert R.between_sd(same, n, np.array([0.7, 0.3])) == 0
    spread = np.array([[9000, 3000], [7000, 3000], [5000, 3000]])  # d = 0.6, 0.4, 0.2: SD 0.2
    assert R.between_sd(spread, n, np.array([0.7, 0.3])) == pytest.approx(0.2, abs=0.01)


# --- the verdict ----------------------------------------------------------------------------------

def test_verdict_rules():
    # issue 31: the first argument is the disparity's Holm p-value (was: the unadjusted interval's lower
    # bound, 0.1 → a disparity, 0.0 → none); the verdicts expected are the same
    assert R.verdict(0.01, 0.01, 1.0, 0.2) == "wording-dependent"
    assert R.verdict(0.01, 0.5, 1.0, 0.2) == "robust"
    assert R.verdict(0.01, 0.5, 1 / 3, 0.2) == "wording-dependent"
    assert R.verdict(0.01, float("nan"), float("nan"), 0.2) == "robust"
    assert R.verdict(0.5, 0.5, 1.0, 0.5) == "underpowered"
    assert R.verdict(0.5, 0.5, 1.0, float("nan")) == "underpowered"
    assert R.verdict(0.5, 0.5, 1.0, 0.2) == "no disparity"


def test_null_data_reads_no_disparity():
    verdicts = []
    for s in range(12):
        d = agents({"w1": [0.5, 0.5], "w2": [0.45, 0.45], "w3": [0.55, 0.55]}, 80, s, agent_sd=0.5)
        verdicts.append(R.robustness_table(d, B=300, seed=s)["verdict"].iloc[0])
    assert verdicts.count("no disparity") >= 10, verdicts


def test_a_bias_under_every_wording_is_robust():
    for s in range(4):
        d = agents({"w1": [0.85, 0.45], "w2": [0.8, 0.4], "w3": [0.9, 0.5]}, 40, s, agent_sd=0.5)
        row = R.robustness_table(d, B=500, seed=s).iloc[0]
        assert row["verdict"] == "robust", row.to_dict()
        assert row["pooled_ci_low"] > 0 and row["sign_stability"] == 1


def test_a_bias_under_one_wording_only_is_wording_dependent():
    for s in range(4):
        d = agents({"w1": [0.9, 0.5], "w2": [0.5, 0.5], "w3": [0.5, 0.5]}, 80, s, agent_sd=0.5)
        row = R.robustness_table(d, B=500, seed=s).iloc[0]
        assert row["verdict"] == "wording-dependent", row.to_dict()
        by = json.loads(row["dpd_by_wording"])
        assert by["w1"] > max(by["w2"], by["w3"]) and row["p_heterogeneity"] < 0.05


def test_few_agents_read_underpowered():
    d = agents({"w1": [0.5, 0.5], "w2": [0.5, 0.5]}, 4, 0)
    assert R.robustness_table(d, B=200, seed=0)["verdict"].iloc[0] == "underpowered"


def test_one_wording_uses_the_orders_as_units():
    d = agents({"as_written": [0.6, 0.6]}, 40, 0)
    row = R.robustness_table(d, B=200, seed=0).iloc[0]
    assert row["n_wordings"] == 1 and row["n_orders"] == 2 and row["unit"] == "choice_order"
    assert set(json.loads(row["dpd_by_order"])) == {"A|B", "B|A"} and not np.isnan(row["p_heterogeneity"])


# --- position bias --------------------------------------------------------------------------------

def test_position_bias_rate_interval_and_test():
    d = agents({"w": [0.5, 0.5]}, 50, 0)
    # a model that takes whatever is listed first 80 % of the time
    rng = np.random.default_rng(1)
    first = d["choice_order"].str.split("|").str[0]
    other = np.where(first == "A", "B", "A")
    d["decision"] = np.where(rng.random(len(d)) < 0.8, first, other)
    d["target"] = d["decision"] == "A"
    row = R.position_bias_table(d).iloc[0]
    assert row["ci_low"] <= row["rate_first_listed"] <= row["ci_high"]
    assert row["ci_low"] > 0.5 == row["expected"] and row["p_value"] < 1e-6 and row["n"] == 100
    lo, hi = stats.wilson(80 / 100, 100)  # the analysis' one Wilson interval
    assert lo == pytest.approx(0.7111, abs=1e-3) and hi == pytest.approx(0.8666, abs=1e-3)  # Wilson 1927
    # an order that never lists every label first cannot separate position from content: no row
    assert R.position_bias_table(d[d["choice_order"] == "A|B"]).empty


# --- end to end on fake models ------------------------------------------------------------------

class FirstFake:
    """A local server that prefers whichever option is listed first (70 %) and ignores personas."""

    def __init__(self, options: str = ""):
        from louder.llm.fake import FakeModel

        self.inner = FakeModel(f"seed=1,first=0.7{',' + options if options else ''}")

    def identity(self) -> dict:
        return {"backend": "firstfake", "model": "default"}

    def generate(self, request) -> Reply:
        return self.inner.generate(request)

    def score(self, request, prefix, choices) -> Reply:
        return self.inner.score(request, prefix, choices)


register(BackendInfo("firstfake", lambda model, url, cfg: FirstFake(model), forms=("firstfake",), can_score=True,
                     local=True, takes_url=False, model_optional=True))


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_first_listed_preference_is_caught_and_balanced_orders_read_no_disparity(tmp_path):
    """The issue's case: a server preferring the first-listed option (70 %) and ignoring personas gives
    every attribute an Evacuate rate far from 0.5 under the file's order; balanced, the position bias is
    detected and the disparity reads none."""
    cfg = {"models": ["firstfake"], "simulation": {"scenarios": ["emergency_response"],
                                                   "groups": ["gender_identity"], "agents": 60,
                                                   "conditions": ["no_persona"]}}
    as_written = louder.run(cfg, out=tmp_path / "w", progress=False).decisions
    rates = as_written.groupby("attribute")["target"].mean()
    assert (rates > 0.55).all() and 0.62 < as_written["target"].mean() < 0.78  # a pure position artefact
    balanced = louder.run({**cfg, "simulation": {**cfg["simulation"], "choice_order": "balanced"}},
                          out=tmp_path / "b", progress=False)
    t = balanced.analyze(bootstrap=500)
    pos = t["position_bias"].iloc[0]
    assert pos["ci_low"] > 0.5 and pos["p_value"] < 1e-6 and pos["n"] == 180
    assert abs(pos["rate_first_listed"] - 0.7) < 0.08
    rob = t["robustness"].iloc[0]
    assert rob["verdict"] == "no disparity" and rob["unit"] == "choice_order"
    rates = json.loads(pos["target_rate_balanced"])["gender_identity"]
    # each attribute's rate averaged over the two orders: (0.7 + 0.3) / 2 = 0.5 in expectation
    assert abs(np.mean(list(rates.values())) - 0.5) < 0.06 and all(abs(r - 0.5) < 0.18 for r in rates.values())
    assert "Robustness" in balanced.report().read_text("utf-8")


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_the_fake_model_bias_planted_under_one_wording_reads_wording_dependent(tmp_path):
    """The closing note's check: fake:…,bias=female:0.9,pick=Evacuate,only=Forecasters biases women's
    agents towards Evacuate only in the wording that says "Forecasters" (emergency_response's `plain`)."""
    cfg = {"models": ["fake:seed=1,bias=female:0.9,pick=Evacuate,only=forecasters"], "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 80,
        "choice_order": "balanced", "wordings": ["plain", "formal", "tradeoff_first"]}}
    r = louder.run(cfg, out=tmp_path / "one", progress=False)
    row = r.analyze(bootstrap=500)["robustness"].iloc[0]
    by = json.loads(row["dpd_by_wording"])
    assert by["plain"] > 0.25 and max(by["formal"], by["tradeoff_first"]) < 0.25
    assert row["verdict"] == "wording-dependent" and row["p_heterogeneity"] < 0.001, row.to_dict()
    everywhere = {**cfg, "models": ["fake:seed=1,bias=female:0.9,pick=Evacuate"]}
    row = louder.run(everywhere, out=tmp_path / "all", progress=False).analyze(bootstrap=500)["robustness"].iloc[0]
    assert row["verdict"] == "robust", row.to_dict()
