"""Issue 14: probability DPD, power planning and the minimum detectable DPD."""

import itertools
import json

import numpy as np
import pandas as pd
from interval_reference import reference_dpd_interval

from louder.analysis import stats
from louder.analysis.stats import power as P
from louder.analysis.stats import prob_dpd as PD


def test_prob_dpd_point_interval_and_p_against_brute_force():
    rng = np.random.default_rng(3)
    samples = [rng.beta(2, 3, 6), rng.beta(3, 2, 5), rng.beta(2, 2, 4)]
    r = PD.prob_dpd(samples, B=20_000, seed=11)
    means = [s.mean() for s in samples]
    assert r.dpd == max(means) - min(means)
    # brute-force bootstrap: a plain loop resampling agents within each attribute, then the
    # bootstrap-t band and projection of docs/statistics.md written out by hand
    g = np.random.default_rng(99)

    def mean_var(x):
        return float(x.mean()), float(((x - x.mean()) ** 2).mean() / x.size)

    resamples = []
    for _ in range(20_000):
        mv = [mean_var(s[g.integers(0, s.size, s.size)]) for s in samples]
        resamples.append(({a: m for a, (m, _) in enumerate(mv)}, {a: v for a, (_, v) in enumerate(mv)}))
    obs = [mean_var(s) for s in samples]
    lo, hi = reference_dpd_interval({a: m for a, (m, _) in enumerate(obs)}, {a: v for a, (_, v) in enumerate(obs)},
                                    resamples, df=3)  # 4 agents in the smallest attribute
    assert lo <= r.dpd <= hi and hi - lo > 0.2
    assert abs(r.ci_low - lo) < 0.02 and abs(r.ci_high - hi) < 0.02
    # exact permutation p: every assignment of the 15 agents to groups of 6, 5, 4 (all 630,630 of them,
    # enumerated with itertools and their means taken at once: the same enumeration as a loop per assignment)
    pooled = np.concatenate(samples)
    firsts = np.array(list(itertools.combinations(range(15), 6)))  # the 5,005 choices of the group of 6
    rests = np.array([sorted(set(range(15)) - set(a)) for a in firsts])  # the 9 agents each leaves
    seconds = np.array(list(itertools.combinations(range(9), 5)))  # the 126 choices of 5 of those 9
    thirds = np.array([sorted(set(range(9)) - set(b)) for b in seconds])
    m_a = pooled[firsts].mean(axis=1)[:, None]
    m_b = pooled[rests][:, seconds].mean(axis=2)
    m_c = pooled[rests][:, thirds].mean(axis=2)
    spread = np.maximum(np.maximum(m_a, m_b), m_c) - np.minimum(np.minimum(m_a, m_b), m_c)
    assert spread.size == 630_630
    assert abs(r.p_value - np.mean(spread >= r.dpd - 1e-12)) < 0.02


def test_prob_dpd_table_skips_sample_mode_and_missing_p():
    d = pd.DataFrame(dict(model="m", condition="c", scenario="s", group="g", attribute=list("aabb"),
                          status=["valid", "valid", "valid", "invalid"], p_target=[0.2, 0.4, 0.9, np.nan]))
    t = PD.prob_dpd_table(d, B=200)
    assert len(t) == 1 and abs(t["dpd_p"].iloc[0] - 0.6) < 1e-12
    assert PD.prob_dpd_table(d.assign(p_target=np.nan), B=200).empty


def test_probability_dpd_interval_is_narrower_than_sampled():
    # agents' probabilities spread around 0.55 / 0.65: the expected-rate DPD sees the gap with far
    # less noise than the 0/1 decisions drawn from the same probabilities
    rng = np.random.default_rng(0)
    p = [np.clip(rng.normal(m, 0.1, 100), 0, 1) for m in (0.55, 0.65)]
    x = [rng.random(100) < s for s in p]
    r = PD.prob_dpd(p, B=2000)
    lo, hi = stats.dpd_confidence_interval([100, 100], [int(v.sum()) for v in x], B=2000)
    assert (r.ci_high - r.ci_low) < 0.5 * (hi - lo)


def _direct_power(n: int, rates, sims: int, seed: int) -> float:
    """What `louder analyze` decides per case (implicit_cases calls parity_bootstrap on the case's
    n_valid and n_target), simulated directly from binomial counts."""
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(sims):
        x = rng.binomial(n, rates)
        attr = pd.DataFrame(dict(kind="implicit", model="m", condition="c", scenario="s", group="g",
                                 attribute=[f"a{j}" for j in range(len(rates))], n_valid=n, n_invalid=0,
                                 n_refused=0, n_error=0, n_target=x, rate=x / n))
        hits += bool(stats.parity_bootstrap(attr["n_valid"], attr["n_target"], B=1000, seed=i)["significant"])
    return hits / sims


def test_plan_power_matches_direct_simulation_of_analyze():
    for n, effect, k, base in ((40, 0.25, 2, 0.5), (60, 0.2, 3, 0.6)):
        rates = P.spread_rates(effect, k, base)
        planned = P.power(np.full(k, n), rates, sims=4000, seed=1)
        direct = _direct_power(n, rates, sims=1500, seed=2)
        assert 0.25 < direct < 0.95  # a design where power is informative
        assert abs(planned - direct) <= 0.03, (planned, direct)


def test_plan_finds_the_readme_scale():
    plan = P.plan(0.10, 3, 0.6, spread="even")
    assert 370 <= plan.agents_per_attribute <= 520 and plan.power >= 0.8
    assert P.power(np.full(3, 100), plan.rates, seed=5) < 0.5  # the paper's 100 misses it more often than not


def test_minimum_detectable_dpd_monotone_in_n():
    mdd = [P.minimum_detectable_dpd([n] * 3, 0.5, sims=800) for n in (5, 10, 20, 40, 80, 160)]
    assert all(a > b for a, b in zip(mdd, mdd[1:])), mdd
    assert mdd[0] > P.UNDERPOWERED > mdd[-1]


def test_plan_cli_prints_agents_and_cost(tmp_path):
    # in-process (`python -m louder.cli` itself is run by tests/test_kill_resume.py and others)
    from typer.testing import CliRunner

    from louder.cli import app

    out = CliRunner().invoke(app, ["plan", "--effect", "0.3", "--attributes", "2", "--base-rate", "0.5",
                                   "--model", "openai:gpt-4o"])
    assert out.exit_code == 0, out.output
    n = int(out.stdout.split("agents per attribute: ")[1].split()[0])
    assert n == P.plan(0.3, 2, 0.5).agents_per_attribute and "cost USD" in out.stdout
    bad = CliRunner().invoke(app, ["plan", "--effect", "1.5", "--attributes", "2", "--base-rate", "0.5"])
    assert bad.exit_code != 0 and "--effect 1.5" in bad.stderr


def test_independence_matches_scipy_and_brute_force():
    from scipy.stats import chi2_contingency

    from louder.analysis.stats.choices import independence

    rng = np.random.default_rng(4)
    a = np.repeat(["x", "y", "z"], 40)
    c = np.concatenate([rng.choice(["A", "B", "C"], 40, p=p) for p in ([.5, .3, .2], [.3, .4, .3], [.2, .3, .5])])
    r = independence(a, c)
    ref = chi2_contingency(pd.crosstab(a, c).to_numpy(), correction=False)
    assert r.method == "chi-square" and abs(r.chi2 - ref.statistic) < 1e-9 and abs(r.p_value - ref.pvalue) < 1e-12
    # small counts: Monte-Carlo against a plain loop of label shuffles
    a, c = a[::8], c[::8]
    r = independence(a, c, B=4000, seed=1)
    g = np.random.default_rng(2)
    stat = chi2_contingency(pd.crosstab(a, c).to_numpy(), correction=False).statistic
    rows, cols = np.unique(a, return_inverse=True)[1], np.unique(c, return_inverse=True)[1]

    def table(shuffled):  # the crosstab of a and the shuffled labels (np.add.at: pd.crosstab costs 20× more)
        t = np.zeros((rows.max() + 1, cols.max() + 1), dtype=int)
        np.add.at(t, (rows, shuffled), 1)
        return t

    assert (table(cols) == pd.crosstab(a, c).to_numpy()).all()
    loop = [chi2_contingency(table(g.permutation(cols)), correction=False).statistic for _ in range(2000)]
    assert r.method == "monte-carlo" and abs(r.chi2 - stat) < 1e-9
    assert abs(r.p_value - np.mean(np.array(loop) >= stat - 1e-9)) < 0.03


def test_three_choice_analysis_rates_every_choice(tmp_path):
    from louder.analysis import analyze

    # same Bike rate in both attributes (target DPD 0) but Bus vs Car differ: only the full table sees it
    rows = [dict(run_id="r", model="m", condition="contextualized", scenario="s3", group="g", attribute=at,
                 agent_id=i, decision=d, target=d == "Bike", status="valid", p_target=np.nan, rationale="")
            for at, counts in (("a", (10, 16, 4)), ("b", (10, 4, 16))) for i, d in
            enumerate(np.repeat(["Bike", "Bus", "Car"], counts))]
    pd.DataFrame(rows).to_parquet(tmp_path / "decisions.parquet")
    t = analyze(tmp_path, bootstrap=500).tables
    assert set(t["choices"]["choice"]) == {"Bike", "Bus", "Car"}
    assert np.allclose(t["choices"].groupby("attribute")["rate"].sum(), 1)
    case = t["cases"].iloc[0]
    assert case["dpd"] == 0
    assert case["independence_test"] == "chi-square" and case["p_independence"] < 0.01
    assert set(json.loads(t["attributes"]["choice_rates"].iloc[0])) == {"Bike", "Bus", "Car"}
