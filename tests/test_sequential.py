"""Sequential runs (issue 20): the betting confidence sequence against its reference code and a
brute-force simulation, the DPD verdicts under no effect and a planted one, and runs in waves that
ask exactly the calls of a fixed run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from confseq_reference import hedged_cs  # not tests.…: ppi-python installs a top-level "tests" package
from typer.testing import CliRunner

import louder
from louder.analysis.stats import sequential as S
from louder.analysis.stats.power import spread_rates
from louder.cli import app
from louder.errors import LouderError
from louder.simulation.sequential import observations

FAKE = "fake:seed=1"
BIASED = "fake:seed=1,bias=female:0.9"
ONE_CASE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}


# --- the confidence sequence ------------------------------------------------------------------------

@pytest.mark.parametrize("p, kind", [(0.1, "bernoulli"), (0.5, "bernoulli"), (0.85, "bernoulli"), (0.3, "beta")])
def test_the_betting_cs_is_the_reference_codes_hedged_cs(p, kind):
    """Vectorised, in waves of uneven size with unanswered slots (NaN), it gives exactly confseq's
    hedged_cs (loop by loop, one grid point at a time) after every wave."""
    rng = np.random.default_rng(7)
    x = rng.binomial(1, p, 120).astype(float) if kind == "bernoulli" else rng.beta(2, 5, 120)
    lo_ref, hi_ref = hedged_cs(x, alpha=0.05)
    cap, seen = S.start(1, 0.05), 0
    for size in (1, 4, 10, 25, 30, 50):
        chunk = x[seen:seen + size]
        padded = np.full(2 * size, np.nan)
        padded[::2] = chunk  # every other slot not observed (NaN)
        cap = S.update(cap, padded[None, :])
        seen += size
        lo, hi = S.intervals(cap, 0.05)
        assert (lo[0], hi[0]) == pytest.approx((lo_ref[seen - 1], hi_ref[seen - 1]), abs=1e-12)
    assert cap.n[0] == 120 and cap.mean[0] == pytest.approx(x.mean())


def _first_exit(x: np.ndarray, truth: float, alpha: float, every: int) -> np.ndarray:
    """Per stream: did the truth leave the CS at any look (every ``every`` observations)?"""
    cap, out = S.start(len(x), alpha), np.zeros(len(x), dtype=bool)
    for a in range(0, x.shape[1], every):
        cap = S.update(cap, x[:, a:a + every])
        lo, hi = S.intervals(cap, alpha)
        out |= (truth < lo) | (truth > hi)
    return out


@pytest.mark.parametrize("p", [0.5, 0.1])
def test_the_cs_holds_at_every_time_at_once_brute_force(p):
    """Time-uniform coverage: over 1,000 simulated streams of 300 observations, looked at after every
    observation, the true mean stays inside at every time in ≥ 1 − α of them (plus Monte-Carlo
    error, 3 sd). The same harness catches a CI that is not time-uniform: a 95 % Wilson interval
    looked at after every observation loses the truth in far more than 5 % of streams."""
    rng = np.random.default_rng(11)
    x = rng.binomial(1, p, (1000, 300)).astype(float)
    miss = _first_exit(x, p, 0.05, every=1).mean()
    assert miss <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000)
    t = np.arange(1, 301)
    phat = np.cumsum(x, axis=1) / t
    z = 1.959964
    centre = (phat + z * z / (2 * t)) / (1 + z * z / t)
    half = z * np.sqrt(phat * (1 - phat) / t + z * z / (4 * t * t)) / (1 + z * z / t)
    wilson_miss = ((p < centre - half) | (p > centre + half)).any(axis=1).mean()
    assert wilson_miss > 0.2  # peeking at a fixed-n interval: what the betting CS avoids


def test_a_continuous_stream_keeps_its_coverage():
    """Score mode feeds probabilities in [0, 1]: Beta(2, 5) streams (mean 2/7), looked at every 10."""
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, (800, 300))
    assert _first_exit(x, 2 / 7, 0.05, every=10).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 800)


def test_a_population_draw_order_keeps_the_coverage():
    """A population case's stream is a random order of the budget's quota sample: sampling without
    replacement from agents whose cells differ. The with-replacement pair CS still covers the
    sample's difference (here 0) at every look: one attribute's agents half in a cell at 0.05 and half
    at 0.95 (the worst case for drift of the conditional mean), the other's all at 0.5."""
    rng = np.random.default_rng(4)
    runs, m = 600, 300
    cells = rng.permuted(np.tile(np.r_[np.full(m // 2, 0.05), np.full(m // 2, 0.95)], (runs, 1)), axis=1)
    xa = (rng.random((runs, m)) < cells).astype(float)
    xb = (rng.random((runs, m)) < 0.5).astype(float)
    cap, miss = S.start(runs, 0.05), np.zeros(runs, dtype=bool)
    for w in range(0, m, 10):
        cap = S.update(cap, (xa[:, w:w + 10] - xb[:, w:w + 10] + 1) / 2)
        lo, hi = S.difference_bounds(*S.intervals(cap, 0.05))
        miss |= (lo > 0) | (hi < 0)
    assert miss.mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_observations_outside_0_1_are_refused():
    with pytest.raises(ValueError):
        S.update(S.start(1, 0.05), np.array([[0.5, 1.5]]))


# --- DPD verdicts: no effect (many seeds) and planted effects ------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 5])
def test_under_parity_disparity_is_declared_at_most_alpha_of_the_time(k):
    """400 simulated cases with equal rates (0.5), looked at after every wave of 10, up to 300 agents per
    attribute: `disparity` in ≤ α of them (plus 3 sd of Monte-Carlo error)."""
    rng = np.random.default_rng(100 + k)
    x = (rng.random((400, k, 300)) < 0.5).astype(float)
    stop, _, final = S.run_design(x, 0.05, 0.1, 10, 300)
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400)
    assert (stop == S.DISPARITY).mean() <= bound
    assert (final.low <= final.dpd).all() and (final.dpd <= final.high).all()
    # every stopped CS covers the true DPD 0 unless it said disparity
    assert ((final.low > 0) == (stop == S.DISPARITY)).all()


@pytest.mark.parametrize("effect, most_agents", [(0.5, 60), (0.3, 150)])
def test_a_planted_disparity_is_found_early(effect, most_agents):
    """Rates spread evenly over `effect` around 0.5: every case stops at `disparity`, on average after
    far fewer agents than the budget; the CS at the stop covers the true DPD in ≥ 1 − α of cases."""
    rng = np.random.default_rng(int(effect * 100))
    rates = spread_rates(effect, 3, 0.5)
    x = (rng.random((300, 3, 600)) < rates[None, :, None]).astype(float)
    stop, used, final = S.run_design(x, 0.05, 0.1, 10, 600)
    assert (stop == S.DISPARITY).all()
    assert used.mean() < most_agents
    assert ((final.low <= effect) & (effect <= final.high)).mean() >= 0.95


def test_parity_within_d_is_declared_only_when_the_dpd_is_below_d():
    """True DPD 0: with D = 0.3 every case reaches parity within 0.3 well before the budget. True DPD
    0.35 (> D): parity within 0.3 would be an error; it happens in ≤ α of cases."""
    rng = np.random.default_rng(5)
    x = (rng.random((300, 3, 500)) < 0.5).astype(float)
    stop, used, _ = S.run_design(x, 0.05, 0.3, 10, 500)
    assert (stop == "parity within 0.3").mean() >= 0.95 and used.mean() < 250
    rates = spread_rates(0.35, 3, 0.5)
    y = (rng.random((300, 3, 500)) < rates[None, :, None]).astype(float)
    wrong, _, _ = S.run_design(y, 0.05, 0.3, 10, 500)
    assert (wrong == "parity within 0.3").mean() <= 0.05


def test_bonferroni_over_the_runs_pairs_costs_agents_not_validity():
    """The same streams read as one case of twelve (S = 36 pairs): wider CSs, more agents to a verdict."""
    rng = np.random.default_rng(8)
    x = (rng.random((200, 3, 600)) < spread_rates(0.3, 3, 0.5)[None, :, None]).astype(float)
    _, one, _ = S.run_design(x, 0.05, 0.1, 10, 600)
    _, twelve, _ = S.run_design(x, 0.05, 0.1, 10, 600, pairs_total=36)
    assert twelve.mean() > one.mean()


def test_paired_streams_match_the_vectorised_design_and_skip_invalid_answers():
    """The live test (answers arriving per wave, invalid ones left out) gives the vectorised design's
    numbers when every answer is valid, and with gaps pairs the i-th valid answers."""
    rng = np.random.default_rng(2)
    x = (rng.random((1, 3, 60)) < np.array([0.2, 0.5, 0.8])[None, :, None]).astype(float)
    _, used, final = S.run_design(x, 0.05, 0.1, 10, 60)
    live = S.PairedStreams(3, 0.05 / 3)
    for w in range(int(used[0]) // 10):
        live.add([list(x[0, a, w * 10:(w + 1) * 10]) for a in range(3)])
    st = live.state()
    assert (st.low, st.high, st.dpd) == pytest.approx((final.low[0], final.high[0], final.dpd[0]))
    gaps = S.PairedStreams(2, 0.05)
    gaps.add([[1.0, 0.0, 1.0], [0.0]])
    gaps.add([[], [1.0, 1.0]])
    assert gaps.paired.tolist() == [3] and gaps.cap.n.tolist() == [3]
    assert gaps.cap.sum_x[0] == pytest.approx((1 - 0 + 1) / 2 + (0 - 1 + 1) / 2 + (1 - 1 + 1) / 2)


def test_an_attribute_without_valid_answers_blocks_parity_not_disparity():
    live = S.PairedStreams(3, 0.05)
    for _ in range(30):
        live.add([[1.0] * 10, [0.0] * 10, []])
    st = live.state()
    assert st.low > 0 and st.high == 1.0  # the two with answers differ; the third could be anything
    assert str(S.verdict(st.low, st.high, 0.1)) == S.DISPARITY


def _log_k_half(z: np.ndarray, bet_alpha: float) -> np.ndarray:
    """log K_t(½) after every observation of each stream (streams × t), written out from the module
    docstring's formulas at the one grid point m = ½ that parity's e-value reads (c/m = c/(1 − m) = 1)."""
    t = np.arange(1, z.shape[1] + 1)
    mu = np.minimum((0.5 + np.cumsum(z, axis=1)) / (t + 1), 1.0)  # μ̂_t, with z_t
    sq = np.cumsum((z - mu) ** 2, axis=1)
    var_prev = (0.25 + sq - (z - mu) ** 2) / t  # σ̂²_{t−1}
    lam = np.minimum(np.sqrt(2 * np.log(2 / bet_alpha) / (var_prev * t * np.log1p(t))), 1.0)
    plus, minus = np.cumsum(np.log1p(lam * (z - 0.5)), axis=1), np.cumsum(np.log1p(-lam * (z - 0.5)), axis=1)
    return np.maximum(plus, minus) - np.log(2.0)


def test_the_e_value_and_p_value_are_valid_under_parity():
    """Anytime p-value: over 500 null cases looked at every 10, P(min over looks of p ≤ α) ≤ α (plus 3 sd
    of Monte-Carlo error). The live test's p-value (PairedStreams, every look) equals, on 40 of the cases,
    the one the docstring's formula gives at m = ½ (_log_k_half, independent of the grid code); the 500
    cases' rate is read from that formula (the grid code computes all 1,001 grid points at every look,
    ~15 s for the same number)."""
    rng = np.random.default_rng(9)
    x = (rng.random((500, 3, 300)) < 0.3).astype(float)
    level = 0.05 / 3
    ia, ib = S.pair_index(3)
    log_k = _log_k_half(((x[:, ia] - x[:, ib] + 1) / 2).reshape(-1, 300), level).reshape(500, 3, 300)
    looks = log_k[:, :, 9::10]  # after every wave of 10
    e = np.exp(looks.max(axis=1)) / 3  # E_t = max_ab K_ab(½) / P, cases × looks
    p = np.minimum(1.0, 1.0 / e.max(axis=1))
    for r in range(40):
        t = S.PairedStreams(3, level)
        for w in range(30):
            t.add([list(x[r, a, w * 10:(w + 1) * 10]) for a in range(3)])
            seq = t.state()
            assert float(seq.e_value) == pytest.approx(e[r, w], rel=1e-9)
        assert t.p_value == pytest.approx(p[r], rel=1e-9)
    hits = int((p <= 0.05).sum())
    assert hits / 500 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 500)


# --- runs in waves ---------------------------------------------------------------------------------

def _run(tmp_path: Path, name: str, model: str = FAKE, **sequential):
    config = {"models": [model], "simulation": {**ONE_CASE, "agents": 300}}
    if sequential is not None:
        config["sequential"] = sequential
    return louder.run(config, out=tmp_path / name, progress=False)


def test_a_planted_bias_stops_with_disparity_after_a_few_waves(tmp_path):
    run = _run(tmp_path, "biased", BIASED, budget=300, wave=10)
    seq = pd.read_csv(run.path / "sequential.csv")
    assert seq["stop_reason"].tolist() == ["disparity"] and seq["waves"].iloc[0] <= 5
    m = run.manifest
    n = int(seq["agents_per_attribute"].iloc[0])
    assert m["model_calls"] == 2 * 3 * n < m["planned_calls"] == 2 * 3 * 300
    assert m["sequential"]["budget"] == 300 and m["config"]["sequential"]["wave"] == 10
    d = run.decisions
    assert len(d) == 3 * n and sorted(d["wave"].unique()) == list(range(n // 10))
    assert (d["replicate"] // 10 == d["wave"]).all()


def test_an_unbiased_run_stops_at_parity_well_before_its_budget(tmp_path):
    run = _run(tmp_path, "fair", budget=300, wave=10, precision=0.3)
    seq = pd.read_csv(run.path / "sequential.csv").iloc[0]
    assert seq["stop_reason"] == "parity within 0.3" and seq["agents_per_attribute"] <= 200
    assert seq["cs_high"] < 0.3 and seq["cs_low"] <= seq["dpd"] <= seq["cs_high"]


def _replay(decisions: pd.DataFrame, level: float, value: str) -> list[dict]:
    """The test recomputed from decisions.parquet alone (wave column, replicate order)."""
    t = S.PairedStreams(3, level)
    rows = []
    for w, rows_w in decisions.groupby("wave"):
        t.add(observations(rows_w, "attribute", ["Male", "Female", "Non-binary"], value, "replicate"))
        st = t.state()
        rows.append(dict(wave=w, dpd=float(st.dpd), cs_low=float(st.low), cs_high=float(st.high)))
    return rows


def test_the_recorded_waves_replay_from_the_decisions(tmp_path):
    run = _run(tmp_path, "replay", budget=200, wave=20, precision=0.3)
    waves = pd.read_csv(run.path / "sequential_waves.csv")
    replay = pd.DataFrame(_replay(run.decisions, run.manifest["sequential"]["pair_level"], "target"))
    assert replay["wave"].tolist() == waves["wave"].tolist()
    for c in ("dpd", "cs_low", "cs_high"):
        assert replay[c].to_numpy() == pytest.approx(waves[c].to_numpy(), abs=1e-6)


def test_waves_ask_exactly_the_calls_of_a_fixed_run(tmp_path):
    """Stopped at N per attribute, then a fixed run of N on the same folder: 0 model calls and the
    same rows (agent_id as the fixed run numbers them). Extended with a larger budget: every answer
    reused."""
    run = _run(tmp_path, "x", budget=300, wave=10, precision=0.3)
    n = int(pd.read_csv(run.path / "sequential.csv")["agents_per_attribute"].iloc[0])
    seq_rows = run.decisions.drop(columns="wave")
    calls = run.manifest["model_calls"]
    fixed = louder.run({"models": [FAKE], "simulation": {**ONE_CASE, "agents": n}}, out=tmp_path / "x",
                       progress=False)
    assert fixed.manifest["model_calls"] == 0 and fixed.manifest["cache_hits"] == calls
    cols = ["attribute", "agent_id", "replicate", "persona", "decision", "target"]
    pd.testing.assert_frame_equal(seq_rows[cols].reset_index(drop=True),
                                  louder.open(tmp_path / "x").decisions[cols].reset_index(drop=True))
    more = louder.run({"models": [FAKE], "simulation": {**ONE_CASE, "agents": 300},
                       "sequential": {"budget": 400, "wave": 10, "precision": 0.05}}, out=tmp_path / "x", progress=False)
    assert more.manifest["cache_hits"] == calls
    assert more.manifest["model_calls"] == 2 * 3 * int(pd.read_csv(tmp_path / "x" / "sequential.csv")[
        "agents_per_attribute"].iloc[0]) - calls


def test_a_sequential_run_that_goes_to_its_budget_makes_its_planned_calls(tmp_path):
    run = _run(tmp_path, "budget", budget=20, wave=10, precision=0.01)
    assert pd.read_csv(run.path / "sequential.csv")["stop_reason"].tolist() == ["undecided"]
    assert run.manifest["planned_calls"] == run.manifest["model_calls"] == 2 * 3 * 20


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_score_mode_tests_the_probability_dpd(tmp_path):
    config = {"models": [BIASED], "simulation": {**ONE_CASE, "decision_mode": "score"},
              "sequential": {"budget": 200, "wave": 10}}
    run = louder.run(config, out=tmp_path / "score", progress=False)
    seq = pd.read_csv(run.path / "sequential.csv").iloc[0]
    d = run.decisions[run.decisions["status"] == "valid"]
    rates = d.groupby("attribute")["p_target"].mean()
    assert seq["dpd"] == pytest.approx(rates.max() - rates.min())
    assert seq["stop_reason"] == "disparity"
    cases = run.analyze(bootstrap=200)["cases"].iloc[0]
    assert cases["interval_method"] == "confidence sequence" and np.isnan(cases["p_value"])
    assert cases["ci_low_p"] == pytest.approx(seq["cs_low"]) and cases["dpd_p"] == pytest.approx(seq["dpd"])


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_analyze_and_report_use_the_confidence_sequence(tmp_path):
    run = _run(tmp_path, "an", BIASED, budget=300, wave=10)
    seq = pd.read_csv(run.path / "sequential.csv").iloc[0]
    cases = run.analyze(bootstrap=200)["cases"].iloc[0]
    assert cases["interval_method"] == "confidence sequence" and cases["stop_reason"] == "disparity"
    assert (cases["ci_low"], cases["ci_high"]) == pytest.approx((seq["cs_low"], seq["cs_high"]))
    assert np.isnan(cases["threshold"]) and np.isnan(cases["mdd"]) and np.isnan(cases["p_independence"])
    assert bool(cases["significant"]) and cases["p_value"] <= 0.05
    html = run.report().read_text("utf-8")
    assert "Sequential run: stop when it is decided" in html and "not valid under optional stopping" in html
    out = CliRunner().invoke(app, ["analyze", str(run.path), "-B", "200"])
    assert out.exit_code == 0 and "not valid under optional stopping" in out.output


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_fixed_run_is_analysed_as_before(tmp_path):
    run = louder.run({"models": [FAKE], "simulation": {**ONE_CASE, "agents": 5}}, out=tmp_path / "f", progress=False)
    cases = run.analyze(bootstrap=200)["cases"]
    assert (cases["interval_method"] == "bootstrap").all() and "stop_reason" not in cases


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_population_run_in_waves(tmp_path):
    """Waves of drawn agents in the budget's draw order, tested per group; a run that goes to its
    budget is exactly a fixed run of N = budget (0 calls after it)."""
    config = {"models": [FAKE], "population": "us_gender_ideology",
              "simulation": {"scenarios": ["emergency_response"], "agents": 60},
              "sequential": {"budget": 60, "wave": 20, "precision": 0.01}}
    run = louder.run(config, out=tmp_path / "pop", progress=False)
    seq = pd.read_csv(run.path / "sequential.csv")
    assert set(seq["group"]) == {"gender_identity", "political_ideology"}
    assert (seq["stop_reason"] == "undecided").all() and (seq["waves"] == 3).all()
    assert run.manifest["planned_calls"] == run.manifest["model_calls"] == 120
    d = run.decisions
    assert (d["agent_id"] // 20 == d["wave"]).all() and d["weight"].sum() == pytest.approx(60)
    fixed = louder.run({k: v for k, v in config.items() if k != "sequential"}, out=tmp_path / "pop", progress=False)
    assert fixed.manifest["model_calls"] == 0
    groups = louder.run(config, out=tmp_path / "pop", progress=False).analyze(bootstrap=200)["population_groups"]
    assert (groups["interval_method"] == "confidence sequence").all() and groups["p_value"].isna().all()


def test_a_stopped_population_case_weighs_its_own_agents(tmp_path):
    """A population of one group with a planted bias (the fake model favours "woman" personas) stops at
    disparity before its budget; its decisions and population.parquet hold the n agents it drew, with
    their own post-stratification weights (summing to n)."""
    pop = tmp_path / "gender.yaml"
    pop.write_text("id: gender_only\nname: gender only\nsource: test\ngroups: [gender_identity]\n"
                   "distribution:\n  marginals:\n    gender_identity: {Male: 48, Female: 48, Non-binary: 4}\n")
    config = {"models": ["fake:seed=1,bias=woman:0.9"], "population": str(pop),
              "simulation": {"scenarios": ["emergency_response"], "agents": 400}, "sequential": {"wave": 40}}
    run = louder.run(config, out=tmp_path / "pop2", progress=False)
    n = len(run.decisions)
    assert pd.read_csv(run.path / "sequential.csv")["stop_reason"].tolist() == ["disparity"]
    assert n < 400 and run.decisions["weight"].sum() == pytest.approx(n)
    assert len(run.population) == n and run.manifest["population"]["n"] == n


@pytest.mark.parametrize("config, name", [
    ({"network": {"generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}}}, "network"),
    ({"population": {"file": "us_gender_ideology", "mode": "archetype"}}, "archetype"),
])
def test_other_kinds_refuse_a_sequential_run_in_one_line(tmp_path, config, name):
    cfg = {"models": [FAKE], "sequential": {"budget": 20}, **config, "simulation": {"scenarios": ["emergency_response"],
                                                                                     "agents": 10}}
    with pytest.raises(LouderError, match=rf"^sequential: {name} runs have no sequential mode") as e:
        louder.run(cfg, out=tmp_path / name, progress=False)
    assert "\n" not in str(e.value)
    with pytest.raises(LouderError, match="sequential: explicit runs"):
        louder.run(cfg, out=tmp_path / "p", kind="explicit", progress=False)


@pytest.mark.parametrize("extra, field", [({"wordings": ["all"]}, "wording"),
                                          ({"signal": ["names"], "groups": ["race_black_white"]}, "signal")])
def test_several_wordings_or_signals_run_in_waves(tmp_path, extra, field):
    """Issue 31.3 lifts the refusal (issue 20) of several wordings or the names signal: a sequential run
    takes every dimension (tests/test_dimensions.py runs all of them at once)."""
    cfg = {"models": [FAKE], "sequential": {"budget": 20}, "simulation": {**ONE_CASE, **extra}}
    r = louder.run(cfg, out=tmp_path / "w", progress=False)
    assert r.decisions[field].nunique() == (4 if field == "wording" else 1)
    assert len(pd.read_csv(tmp_path / "w" / "sequential.csv")) == 1
    assert r.manifest["planned_calls"] >= r.manifest["model_calls"]


def test_the_command_line_flags(tmp_path):
    base = ["run", "--out", str(tmp_path / "cli"), "--model", BIASED, "--scenario", "emergency_response", "--group",
            "gender_identity"]
    bad = CliRunner().invoke(app, base + ["--budget", "50"])
    assert bad.exit_code == 2 and "--budget: needs --until decided" in bad.output
    bad = CliRunner().invoke(app, base + ["--until", "tired"])
    assert bad.exit_code == 2 and "--until tired" in bad.output
    ok = CliRunner().invoke(app, base + ["--until", "decided", "--budget", "100", "--wave", "10"])
    assert ok.exit_code == 0, ok.output
    assert "disparity" in ok.output and "at the budget: 600" in ok.output
    m = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    assert m["config"]["sequential"] == {"budget": 100, "wave": 10, "precision": 0.1, "alpha": 0.05}
    dry = CliRunner().invoke(app, base + ["--until", "decided", "--budget", "100", "--dry-run"])
    assert dry.exit_code == 0 and "600" in dry.output  # the plan is the budget
