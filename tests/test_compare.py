"""Issue 42: model against model — the statistics (``louder.analysis.stats.comparison``) against brute force
and independent code, on null and planted data; ``louder compare`` over run folders of the fake model
(null: the same model, two run seeds; planted: a bias of 0.9 against one of 0.6 on the same
attribute), the release gate, refused designs, one folder of several models against separate folders,
and the ``models`` measure of a run folder. Issue 47: the findings in sentences (planted: the right entry
reads more biased; null, many seeds: no difference or underpowered), the ΔDPD forest plot, and core code
that names no measure."""

from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import louder
from louder.analysis import stats
from louder.analysis.engine import registry
from louder.analysis.engine.inputs import Analysis, Settings
from louder.analysis.measures.models import forest_figure, models_figure
from louder.analysis.stats import comparison as C
from louder.analysis.stats import intervals as I
from louder.cli import app
from louder.errors import LouderError

ROOT = Path(__file__).resolve().parents[1]
BIASED, MILD = "fake:seed=1,bias=female:0.9", "fake:seed=1,bias=female:0.6"
PLANTED = 0.3  # female 0.9 vs 0.5 elsewhere (DPD 0.4) against 0.6 vs 0.5 (DPD 0.1): the actions' ΔDPD


def _bands(rates, n, seed, B=1000):
    rng = np.random.default_rng(seed)
    x = rng.binomial(n, rates)
    return C.implicit_band(np.full(len(rates), n), x, B, seed)


# --- the statistics ------------------------------------------------------------------------------

def test_two_terms_are_the_difference_interval_and_one_term_the_dpd_interval():
    """Brute force: the sum of DPDs is intervals.py's own intervals where those exist."""
    for seed in range(10):
        a, b = _bands([0.9, 0.5, 0.5], 50, seed), _bands([0.6, 0.5], 40, 100 + seed)
        s = C.interval([(1.0, a), (-1.0, b)])
        lo, hi = I.dpd_difference_interval(a.band, b.band)
        assert (s.low, s.high) == pytest.approx((lo, hi), abs=1e-12)
        assert s.estimate == pytest.approx(a.dpd - b.dpd)
        one = C.interval([(1.0, a)], null=None)
        assert (one.low, one.high) == pytest.approx(I.band_interval(a.band), abs=1e-12)
        # a mean over three cases: one critical value for every pair of every case, each case projected
        cases = [a, _bands([0.3, 0.35, 0.4], 60, 200 + seed), _bands([0.5, 0.5], 30, 300 + seed)]
        mean = C.interval([(1 / 3, x) for x in cases], null=None)
        c = I.critical(np.concatenate([x.band.t for x in cases], axis=1))
        bounds = []
        for x in cases:
            d, se = np.abs(x.band.d), x.band.se
            bounds.append((max(0.0, (d - c * se).max()), min(1.0, (d + c * se).max())))
        assert mean.low == pytest.approx(np.mean([lo for lo, _ in bounds]))
        assert mean.high == pytest.approx(np.mean([hi for _, hi in bounds]))


def test_the_p_value_inverts_the_interval():
    """p is the least α at which the 1 − α interval excludes the null (up to the Monte Carlo +1): the
    interval at a level a little below 1 − p excludes it, a little above includes it."""
    checked = 0
    for seed in range(30):
        a, b = _bands([0.8, 0.5, 0.5], 60, seed), _bands([0.55, 0.5, 0.5], 60, 50 + seed)
        for null in (0.0, 0.1):
            terms = [(1.0, a), (-1.0, b)]
            p = C.p_value(terms, null)
            if not 0.002 < p < 0.5:
                continue
            checked += 1
            outside = C.interval(terms, level=1 - p * 1.1 - 0.002, null=None)
            inside = C.interval(terms, level=1 - p * 0.9 + 0.002, null=None)
            assert not outside.low <= null <= outside.high, (seed, null, p, outside)
            assert inside.low <= null <= inside.high, (seed, null, p, inside)
    assert checked >= 10


def test_every_interval_contains_its_estimate():
    rng = np.random.default_rng(3)
    for seed in range(40):
        k = int(rng.integers(2, 6))
        rates = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0], k)  # rates at the edges too
        terms = [(1.0, _bands(rates, int(rng.integers(3, 80)), seed, B=500)),
                 (-1.0, C.explicit_band(rng.multinomial(60, np.full(k + 1, 1 / (k + 1)))[:k], 60, 500, seed)),
                 (0.5, C.score_band([rng.beta(2, 3, 15), rng.beta(3, 2, 12)], 500, seed))]
        for chosen in ([terms[0]], terms[:2], terms, [terms[2], terms[1]]):
            s = C.interval(chosen)
            assert s.low <= s.estimate + 1e-12 and s.estimate <= s.high + 1e-12, (seed, chosen, s)
            assert 0 < s.p_value <= 1


def _permutation_p(x1, x2, rng, B=400):
    """The test this module does not use: pool the two models' answers within each attribute."""
    n = x1.shape[1]
    pool = np.concatenate([x1, x2], axis=1).astype(float)
    observed = np.ptp(x1.mean(1)) - np.ptp(x2.mean(1))
    perm = rng.permuted(np.broadcast_to(pool, (B, *pool.shape)), axis=2)
    d = np.ptp(perm[:, :, :n].mean(2), axis=1) - np.ptp(perm[:, :, n:].mean(2), axis=1)
    return (1 + np.sum(np.abs(d) >= abs(observed) - 1e-12)) / (B + 1)


def test_equal_dpds_against_different_attributes_read_null():
    """The composite null: the same DPD (0.3) against different attributes. The interval's inversion
    keeps α; a permutation test of exchangeable answers does not (the module docstring's number)."""
    rng = np.random.default_rng(1)
    r1, r2, n, sims = np.array([0.8, 0.5, 0.65]), np.array([0.5, 0.8, 0.65]), 100, 200
    ours = perm = 0
    for s in range(sims):
        x1, x2 = rng.random((3, n)) < r1[:, None], rng.random((3, n)) < r2[:, None]
        perm += _permutation_p(x1, x2, rng) < 0.05
        p = C.p_value([(1.0, C.implicit_band([n] * 3, x1.sum(1), 500, 2 * s)),
                       (-1.0, C.implicit_band([n] * 3, x2.sum(1), 500, 2 * s + 1))])
        ours += p < 0.05
    assert ours / sims <= 0.05
    assert perm / sims > 0.08  # about one run in seven (0.145 in 400 runs)


def test_null_and_planted_on_counts_twenty_seeds():
    """Null (the same rates): no verdict but no difference / underpowered beyond 5 %; planted ΔDPD 0.3:
    the interval covers it in ≥ 18 of 20 seeds, and at 300 agents per attribute reads more biased."""
    verdicts, covered, found = [], 0, 0
    for seed in range(20):
        rows = []
        for case, rates in enumerate(([0.9, 0.5, 0.5], [0.5, 0.5, 0.5], [0.3, 0.6])):
            a, b = _bands(rates, 100, 1000 * seed + case), _bands(rates, 100, 1000 * seed + case + 500)
            rows.append(C.interval([(1.0, b), (-1.0, a)]))
        p_holm = stats.holm([r.p_value for r in rows])
        verdicts += [C.verdict(r.estimate, r.low, r.high, p) for r, p in zip(rows, p_holm)]
        base, new = _bands([0.6, 0.5, 0.5], 300, seed), _bands([0.9, 0.5, 0.5], 300, 77 + seed)
        s = C.interval([(1.0, new), (-1.0, base)])
        covered += s.low <= PLANTED <= s.high
        found += C.verdict(s.estimate, s.low, s.high, s.p_value) == "more biased"
    assert sum(v not in ("no difference", "underpowered") for v in verdicts) <= 0.05 * len(verdicts)
    assert covered >= 18 and found >= 18


def test_verdicts():
    assert C.verdict(0.2, 0.05, 0.35, 0.01) == "more biased"
    assert C.verdict(-0.2, -0.35, -0.05, 0.01) == "less biased"
    assert C.verdict(0.02, -0.1, 0.15, 0.6, margin=0.3) == "no difference"
    assert C.verdict(0.02, -0.1, 0.35, 0.6, margin=0.3) == "underpowered"
    assert C.verdict(0.2, 0.01, 0.35, 0.2) == "underpowered"  # the interval excludes 0, Holm does not
    assert C.verdict(float("nan"), float("nan"), float("nan"), float("nan")) == "underpowered"


def test_trend_is_statsmodels_wls_with_known_variances():
    import statsmodels.api as sm

    y, v = np.array([0.07, 0.2, 0.33, 0.55]), np.array([0.004, 0.002, 0.003, 0.001])
    t = C.trend(y, v)
    fit = sm.WLS(y, sm.add_constant(np.arange(4.0)), weights=1 / v).fit(cov_type="fixed scale")
    assert t.slope == pytest.approx(fit.params[1]) and t.se == pytest.approx(fit.bse[1])
    assert t.p_value == pytest.approx(fit.pvalues[1])
    lo, hi = fit.conf_int()[1]
    assert (t.low, t.high) == pytest.approx((lo, hi))


def test_trend_null_and_planted_on_simulated_models():
    """Three models of the same bias: the trend's z-test at most ~α over 150 seeds; a bias that grows
    0.1 → 0.3 → 0.5: found."""
    def models(biases, seed, n=80):
        cases = {}
        for m, b in enumerate(biases):
            for c, (sc, rates) in enumerate((("s1", [0.5 + b, 0.5, 0.5]), ("s2", [0.5, 0.5 - b / 2]))):
                x = np.random.default_rng(seed * 100 + m * 10 + c).binomial(n, rates)
                band = C.implicit_band([n] * len(rates), x, 400, seed * 100 + m * 10 + c)
                cases[(f"m{m}", "implicit", "contextualized", sc, "g")] = C.Case(band, 0.5)
        table, var = C.models_table(cases, ["m0", "m1", "m2"])
        return C.trend_table(table, var)

    null = [models([0.2, 0.2, 0.2], s)["p_value"].iloc[0] for s in range(150)]
    assert np.mean(np.array(null) < 0.05) <= 0.08  # 4.25 % in 400 seeds
    planted = models([0.1, 0.3, 0.5], 1).iloc[0]
    assert planted["p_value"] < 0.01 and planted["slope_ci_low"] > 0


# --- run folders of the fake model ---------------------------------------------------------------

def fake_run(out: Path, model: str, seed: int = 0, agents: int = 100, trials: int = 30, **simulation) -> Path:
    cfg = {"models": model if isinstance(model, list) else [model], "seed": seed,
           "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": agents,
                          **simulation}, "explicit": {"trials": trials or None}}
    louder.run(cfg, out=out, progress=False)
    if trials:
        louder.run(cfg, out=out, kind="explicit", progress=False)
    return out


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.mark.slow
def test_null_twenty_pairs_of_runs(tmp_path):
    """One fake model, two folders with different run seeds, 20 pairs: verdicts other than no difference
    / underpowered in at most 5 % of case comparisons (actions and words), the gate passes in ≥ 19.
    Every pair is compared and its findings read (``_findings``: the sentences the comparison's report
    and `louder compare` say, from its tables); `louder compare` writes its report for the first three
    pairs only, whose page must say exactly those sentences — rendering all twenty checked nothing more."""
    verdicts, passed, claims = [], 0, 0
    for pair in range(20):
        a, b = (fake_run(tmp_path / f"n{pair}{x}", BIASED, seed=2 * pair + i) for i, x in enumerate("ab"))
        c = louder.compare(f"base={a}", f"new={b}", bootstrap=500)
        gate = c.verdict("worse")
        passed += gate["passed"]
        t = c.table("model_pairs")
        verdicts += list(t["actions_verdict"]) + list(t["words_verdict"])
        said = _findings(c.tables)
        if pair < 3:
            r = cli("compare", f"base={a}", f"new={b}", "-B", 500, "--out", tmp_path / f"c{pair}", "--fail-if", "worse")
            assert r.exit_code == (0 if gate["passed"] else 1), r.output
            pd.testing.assert_frame_equal(pd.read_csv(tmp_path / f"c{pair}" / "model_pairs.csv")[t.columns], t,
                                          check_dtype=False)
            assert [f for f in page_findings(tmp_path / f"c{pair}" / "report" / "index.html")
                    if f.lower().startswith(("actions", "words"))] == [
                        f for f in said if f.lower().startswith(("actions", "words"))]
        for side in ("actions", "words"):
            (sentence,) = [f for f in said if f.lower().startswith(side)]
            _agrees(sentence, t[f"{side}_verdict"], "new", "base")
            claims += ("more biased" in sentence or "less biased" in sentence)
    assert sum(v not in ("no difference", "underpowered") for v in verdicts) <= 0.05 * len(verdicts)
    assert passed >= 19
    assert claims <= 2  # of 40 sentences


@pytest.mark.slow
def test_planted_twenty_seeds_cover_the_difference(tmp_path):
    covered = 0
    for seed in range(20):
        base = fake_run(tmp_path / f"m{seed}", MILD, seed=seed, trials=0)
        new = fake_run(tmp_path / f"b{seed}", BIASED, seed=seed, trials=0)
        row = louder.compare(f"base={base}", f"new={new}", bootstrap=500).table("model_pairs").iloc[0]
        covered += row["actions_ci_low"] <= PLANTED <= row["actions_ci_high"]
    assert covered >= 18


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The same fake model biased 0.6 (base) and 0.9 (new) on Female, 400 agents per attribute."""
    base = tmp_path_factory.mktemp("planted")
    return fake_run(base / "mild", MILD, agents=400, trials=120), fake_run(base / "biased", BIASED, agents=400,
                                                                          trials=120)


def test_planted_reads_more_biased_and_the_gate_fails_naming_the_case(planted, tmp_path):
    mild, biased = planted
    r = cli("compare", f"base={mild}", f"new={biased}", "-B", 1000, "--out", tmp_path / "c", "--fail-if", "worse")
    assert r.exit_code == 1, r.output
    failing = [line for line in r.output.splitlines() if line.startswith("worse:")]
    assert failing and all("emergency_response × gender_identity" in line for line in failing)
    assert any("actions (what its agents do)" in line for line in failing)
    row = pd.read_csv(tmp_path / "c" / "model_pairs.csv").iloc[0]
    assert row["actions_verdict"] == "more biased" and row["words_verdict"] == "more biased"
    assert row["actions_ci_low"] <= PLANTED <= row["actions_ci_high"]
    gate = json.loads((tmp_path / "c" / "comparison.json").read_text())["gate"]
    assert gate["passed"] is False and gate["base"] == "base" and len(gate["failing"]) == len(failing)
    # the page says it first, in sentences: the gate, then which entry is more biased, where, by how much
    said = page_findings(tmp_path / "c" / "report" / "index.html")
    assert said[0].startswith("Release gate (--fail-if worse): failed in ") and "new is more biased than base" in said[0]
    delta = f"{row['actions_delta']:+.2f} [{row['actions_ci_low']:+.2f}, {row['actions_ci_high']:+.2f}]"
    assert (f"Actions (what the agents do): new is more biased than base in 1 of 1 case — emergency_response × "
            f"gender_identity (contextualized), ΔDPD {delta}.") in said
    assert any(f.startswith("Words (what the models say when asked): new is more biased than base in 1 of 1 case")
               for f in said)
    # the other way round: the new model is less biased, and the gate passes
    r = cli("compare", f"base={biased}", f"new={mild}", "-B", 1000, "--out", tmp_path / "d", "--fail-if", "worse")
    assert r.exit_code == 0 and "gate passed" in r.output, r.output
    assert pd.read_csv(tmp_path / "d" / "model_pairs.csv").iloc[0]["actions_verdict"] == "less biased"
    said = page_findings(tmp_path / "d" / "report" / "index.html")
    assert said[0] == "Release gate (--fail-if worse): passed — no entry is more biased than base in any case."
    assert any(f.startswith("Actions (what the agents do): new is less biased than base in 1 of 1 case") for f in said)
    # with a margin: the increase (0.3) is shown to exceed 0.05, not 0.6
    assert cli("compare", f"base={mild}", f"new={biased}", "-B", 1000, "--out", tmp_path / "e", "--fail-if",
               "worse:0.05").exit_code == 1
    assert cli("compare", f"base={mild}", f"new={biased}", "-B", 1000, "--out", tmp_path / "f", "--fail-if",
               "worse:0.6").exit_code == 0


@pytest.fixture(scope="module")
def pair_folders(tmp_path_factory):
    """The two models in one folder, and each in a folder of its own (the same run seed: the same answers),
    analysed."""
    base = tmp_path_factory.mktemp("pairs")
    one = fake_run(base / "one", [BIASED, MILD], agents=40, trials=30)
    a, b = fake_run(base / "a", BIASED, agents=40, trials=30), fake_run(base / "b", MILD, agents=40, trials=30)
    for run in (one, a, b):
        assert cli("analyze", run, "-B", 300).exit_code == 0
    return one, a, b


def test_one_folder_and_separate_folders_give_the_same_tables(pair_folders):
    one, a, b = pair_folders
    together = louder.compare(one, bootstrap=300)
    apart = louder.compare(a, b, bootstrap=300)
    assert together.labels == apart.labels == [BIASED, MILD]
    for name in together.tables:
        pd.testing.assert_frame_equal(together.table(name), apart.table(name))
    # and the run folder's own report section is the same table again (its analysis: -B 300, seed 0)
    pd.testing.assert_frame_equal(pd.read_csv(one / "model_pairs.csv"),
                                  pd.read_csv(pd.io.common.StringIO(together.table("model_pairs").to_csv(index=False))))


def test_delta_is_the_difference_of_the_folders_cases_dpds(pair_folders):
    _, a, b = pair_folders
    t = louder.compare(f"base={a}", f"new={b}", bootstrap=300).table("model_pairs")
    ca, cb = pd.read_csv(a / "cases.csv"), pd.read_csv(b / "cases.csv")
    for kind, side in (("implicit", "actions"), ("explicit", "words")):
        da, db = ca.loc[ca["kind"] == kind, "dpd"].item(), cb.loc[cb["kind"] == kind, "dpd"].item()
        assert t[f"{side}_delta"].item() == pytest.approx(db - da, abs=1e-12)
        assert t[f"{side}_reference_dpd"].item() == pytest.approx(da)
        assert t[f"{side}_model_dpd"].item() == pytest.approx(db)
        assert (t[f"{side}_ci_low"] <= t[f"{side}_delta"]).all() and (t[f"{side}_delta"] <= t[f"{side}_ci_high"]).all()


def test_score_mode_compares_the_probability_dpd(tmp_path):
    a = fake_run(tmp_path / "a", "fake:seed=2,bias=female:0.8,noise=0.3", agents=30, trials=0, decision_mode="score")
    b = fake_run(tmp_path / "b", "fake:seed=2,bias=female:0.6,noise=0.3", agents=30, trials=0, decision_mode="score")
    for run in (a, b):
        assert cli("analyze", run, "-B", 300).exit_code == 0
    c = louder.compare(f"base={a}", f"new={b}", bootstrap=300)
    row = c.table("model_pairs").iloc[0]
    dpd_p = [pd.read_csv(r / "cases.csv")["dpd_p"].item() for r in (a, b)]
    assert row["statistic"] == "dpd_p" and row["actions_delta"] == pytest.approx(dpd_p[1] - dpd_p[0], abs=1e-12)
    assert row["actions_ci_low"] <= row["actions_delta"] <= row["actions_ci_high"]
    assert list(c.table("models")["statistic"]) == ["dpd_p", "dpd_p"]


@pytest.fixture(scope="module")
def design_base(tmp_path_factory):
    return fake_run(tmp_path_factory.mktemp("design") / "base", BIASED, agents=2, trials=3)


def _scenario_file(tmp_path: Path) -> str:
    text = (ROOT / "louder" / "data" / "scenarios" / "emergency_response.yaml").read_text()
    path = tmp_path / "emergency_response.yaml"
    path.write_text(text.replace("within the next 24 hours", "within the next 12 hours", 1))
    return str(path)


def _group_file(tmp_path: Path) -> str:
    import yaml

    data = yaml.safe_load((ROOT / "louder" / "data" / "groups" / "gender_identity.yaml").read_text())
    data["attributes"] = [a for a in data["attributes"] if a != "Non-binary"]
    data["explicit"]["options"] = [o for o in data["explicit"]["options"] if o["attribute"] != "Non-binary"]
    path = tmp_path / "gender_identity.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("change, named", [
    ("scenario", "scenario emergency_response's text"),
    ("group", "group gender_identity's attributes"),
    ("condition", "persona conditions"),
    ("wording", "wordings"),
])
def test_designs_that_differ_are_refused_in_one_line(design_base, tmp_path, change, named):
    over = {"scenario": lambda: dict(scenarios=[_scenario_file(tmp_path)]),
            "group": lambda: dict(groups=[_group_file(tmp_path)]),
            "condition": lambda: dict(conditions=["non_contextualized"]),
            "wording": lambda: dict(wordings=["plain"])}[change]()
    other = fake_run(tmp_path / "other", MILD, agents=2, trials=0, **over)
    with pytest.raises(LouderError) as e:
        louder.compare(f"base={design_base}", f"new={other}", bootstrap=200)
    message = str(e.value)
    assert "\n" not in message and named in message and "base" in message and "new" in message, message
    r = cli("compare", f"base={design_base}", f"new={other}", "-B", 200, "--out", tmp_path / "c")
    assert r.exit_code == 2 and named in r.output


def test_the_same_design_of_other_models_and_seeds_combines(design_base, tmp_path):
    other = fake_run(tmp_path / "other", MILD, seed=5, agents=3, trials=0)
    c = louder.compare(f"base={design_base}", f"new={other}", bootstrap=200)
    assert c.labels == ["base", "new"]
    assert any("explicit probes: base has them and new does not" in n for n in c.assembled.notes)


def test_bad_entries_are_one_line(design_base, tmp_path):
    with pytest.raises(LouderError, match="both 'x'"):
        louder.compare(f"x={design_base}", f"x={design_base}", bootstrap=200)
    with pytest.raises(LouderError, match="only one model"):
        louder.compare(design_base, bootstrap=200)
    with pytest.raises(LouderError, match="no entry is labelled 'c'"):
        louder.compare(f"a={design_base}", f"b={design_base}", order="a,c", bootstrap=200)
    r = cli("compare", f"a={design_base}", f"b={design_base}", "--fail-if", "better", "--out", tmp_path / "c")
    assert r.exit_code == 2 and "worse or worse:MARGIN" in r.output
    assert cli("compare", tmp_path / "nowhere", design_base).exit_code == 2


def test_an_order_adds_the_trend_figure_and_report(pair_folders, tmp_path):
    _, a, b = pair_folders
    c = louder.compare({"gen1": a, "gen2": b, "gen3": a}, order="gen2,gen1,gen3", bootstrap=300)
    assert c.labels == ["gen2", "gen1", "gen3"]
    trend = c.table("model_trend")
    assert list(trend["side"]) == ["actions", "words"] and (trend["order"] == "gen2 → gen1 → gen3").all()
    assert len(c.table("model_pairs")) == 3  # gen2-gen1, gen2-gen3, gen1-gen3
    path = c.report(tmp_path / "cmp", fail_if="worse")
    page = path.read_text()
    assert path == tmp_path / "cmp" / "report" / "index.html"
    assert "data:image/svg+xml;base64," in page and "Model against model" in page and "Release gate" in page
    assert not re.search(r"""(src|href)=["']https?://""", page)  # self-contained
    assert "louder comparison: gen2 vs gen1 vs gen3" in str(c.summary())


def test_a_multi_model_folder_reports_its_pairs_and_a_single_model_writes_none(pair_folders):
    one, a, _ = pair_folders
    assert {"models.csv", "model_pairs.csv", "model_pair_summary.csv"} <= {p.name for p in one.glob("*.csv")}
    assert not (one / "model_trend.csv").exists()  # no order given
    assert not list(a.glob("model*.csv"))
    assert cli("report", one).exit_code == 0
    page = (one / "report" / "index.html").read_text()
    assert "Model against model" in page and '<figure class="fig" data-figure="models/means">' in page
    assert '<figure class="fig" data-figure="models/forest">' in page
    # the pair's findings at the top: the same sentences as `louder compare`'s page
    said = page_findings(one / "report" / "index.html")
    mine = [f for f in said if f.startswith(("Actions (what the agents do)", "Words (what the models say"))]
    assert len(mine) == 2 and all(f"{MILD} against {BIASED}" in f or f"{MILD} is " in f for f in mine), said
    # the figures' intervals contain their estimates, in the palette (the golden runs have one model each)
    from figure_checks import problems

    assert problems(models_figure(pd.read_csv(one / "models.csv"))) == []
    assert problems(forest_figure(pd.read_csv(one / "model_pairs.csv"), C.MARGIN)) == []
    r = cli("analyze", one, "-B", 300, "--set", f"models.order={MILD}", "--set", f"models.order={BIASED}")
    assert r.exit_code == 0, r.output
    assert pd.read_csv(one / "model_trend.csv")["order"].iloc[0] == f"{MILD} → {BIASED}"
    r = cli("analyze", one, "-B", 300, "--set", "models.order=fake:seed=9")
    assert r.exit_code == 2 and "has no model 'fake:seed=9'" in r.output


# --- issue 47: what the page says, and the figure it draws ----------------------------------------------------

def page_findings(report: Path) -> list[str]:
    """The sentences of a report page's findings, as the reader reads them (without their section links)."""
    text = report.read_text("utf-8")
    block = text[text.index('<section class="sec" id="findings">'):]
    block = block[:block.index("</section>")]
    return [html.unescape(re.sub(r"<[^>]+>", "", li.split(' <a class="go"')[0])).strip()
            for li in re.findall(r"<li>(.*?)</li>", block, flags=re.S)]


def _findings(tables: dict[str, pd.DataFrame], margin: float = C.MARGIN) -> list[str]:
    """The comparison measure's findings of ``tables`` (as a run folder's report and `louder compare` say them)."""
    m = registry.get("models")
    a = Analysis(Path("."), Settings.of(200, 0, {"models": {"margin": margin}}), tables=tables)
    return [f.text for f in m.findings(a.context(m))]


def _agrees(sentence: str, verdicts: pd.Series, model: str, reference: str) -> None:
    """A side's sentence says what its verdicts say: the entry more (less) biased exactly where a case reads
    so, and a case without either verdict as no difference or, plainly, underpowered."""
    verdicts = [v for v in verdicts if isinstance(v, str)]
    assert (f"{model} is more biased than {reference}" in sentence) == ("more biased" in verdicts), sentence
    assert (f"{model} is less biased than {reference}" in sentence) == ("less biased" in verdicts), sentence
    assert ("no difference in" in sentence.lower()) == ("no difference" in verdicts), sentence
    if "underpowered" in verdicts:
        assert "underpowered in" in sentence.lower() and "too wide to tell a difference that large from none" in sentence


def _decisions(model: str, cases: dict[str, list[float]], n: int, rng) -> list[dict]:
    """``n`` agents per attribute of each case (scenario → the attributes' target rates), one decision each."""
    return [dict(model=model, condition="contextualized", scenario=scenario, group="g", attribute=a, status="valid",
                 target=bool(x))
            for scenario, rates in cases.items() for a, r in zip("ABC", rates) for x in rng.random(n) < r]


GROUPS = {"g": ["A", "B", "C"]}


def test_null_findings_read_no_difference_or_underpowered_forty_seeds():
    """Two entries of the same rates (a DPD of 0.2 in one case, none in the other), 40 seeds: the sentence
    names neither more nor less biased beyond ~5 %, and says no difference or — plainly — underpowered."""
    claims, plain = 0, 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        cases = {"s1": [0.7, 0.5, 0.5], "s2": [0.5, 0.5, 0.5]}
        d = pd.DataFrame(_decisions("a", cases, 100, rng) + _decisions("b", cases, 100, rng))
        c = C.compare(d, None, GROUPS, ["a", "b"], B=300, seed=seed)
        (sentence,) = _findings(c.tables)
        _agrees(sentence, c.tables["model_pairs"]["actions_verdict"], "b", "a")
        claims += "more biased" in sentence or "less biased" in sentence
        plain += sentence.startswith("Actions (what the agents do), b against a: ")
    assert claims <= 2 and plain >= 38


def test_planted_findings_name_the_more_biased_entry_with_its_interval():
    """A ΔDPD of 0.3 planted (0.9 against 0.6 on one attribute, 300 agents each): the sentence reads that the
    biased entry is more biased, in that case, by its ΔDPD and interval; in the other order, less biased."""
    more = less = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        d = pd.DataFrame(_decisions("mild", {"s1": [0.6, 0.5, 0.5]}, 300, rng) +
                         _decisions("biased", {"s1": [0.9, 0.5, 0.5]}, 300, rng))
        for order in (["mild", "biased"], ["biased", "mild"]):
            c = C.compare(d, None, GROUPS, order, B=500, seed=seed)
            r = c.tables["model_pairs"].iloc[0]
            (sentence,) = _findings(c.tables)
            _agrees(sentence, [r["actions_verdict"]], order[1], order[0])
            if r["actions_verdict"] in ("more biased", "less biased"):
                assert sentence == (f"Actions (what the agents do): {order[1]} is {r['actions_verdict']} than "
                                    f"{order[0]} in 1 of 1 case — s1 × g (contextualized), ΔDPD "
                                    f"{r['actions_delta']:+.2f} [{r['actions_ci_low']:+.2f}, "
                                    f"{r['actions_ci_high']:+.2f}].")
            more += "biased is more biased than mild" in sentence
            less += "mild is less biased than biased" in sentence
    assert more >= 9 and less >= 9


def test_the_forest_plot_draws_every_delta_in_its_interval_and_the_margin():
    from figure_checks import problems

    rng = np.random.default_rng(5)
    cases = {"s1": [0.8, 0.5, 0.5], "s2": [0.5, 0.5, 0.5]}
    d = pd.DataFrame(_decisions("x", cases, 80, rng) + _decisions("y", {"s1": [0.5] * 3, "s2": [0.5] * 3}, 80, rng)
                     + _decisions("z", cases, 80, rng))
    pairs = C.compare(d, None, GROUPS, ["x", "y", "z"], B=300, seed=1).tables["model_pairs"]
    fig = forest_figure(pairs, 0.2)
    assert problems(fig) == []
    (ax,) = fig.axes  # actions only (no probe)
    assert len(ax.get_yticklabels()) == len(pairs) == 6  # three pairs × two cases, each named with its pair
    assert all(" − " in t.get_text() for t in ax.get_yticklabels())
    band = [ax.transData.inverted().transform(p.get_extents())[:, 0] for p in ax.patches]  # display → data
    assert [tuple(np.round(x, 3)) for x in band] == [(-0.2, 0.2)]
    assert sorted(t.get_text() for t in ax.texts) == sorted(pairs["actions_verdict"])
    assert forest_figure(pairs.iloc[0:0], 0.2) is None


def test_the_comparison_code_names_no_measure():
    """compare_runs.py, the comparison's page and cli.py's `compare` find the measure that shows a comparison
    through the registry (the owner of the tables ``stats.comparison`` writes): its name is written nowhere
    in them, and no measure is looked up by a name written there."""
    (shown_by,) = {registry.owner(t).name for t in C.TABLES}
    cli_tree = ast.parse((ROOT / "louder" / "cli.py").read_text("utf-8"))
    compare_cmd = next(n for n in ast.walk(cli_tree) if isinstance(n, ast.FunctionDef) and n.name == "compare")
    for where, tree in (("compare_runs.py", ast.parse((ROOT / "louder" / "compare_runs.py").read_text("utf-8"))),
                        ("report/comparison.py", ast.parse(
                            (ROOT / "louder" / "analysis" / "report" / "comparison.py").read_text("utf-8"))),
                        ("cli.py compare", compare_cmd)):
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert shown_by not in strings, f"{where} names the measure {shown_by!r}"
        by_name = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith(
            "registry.get") and any(isinstance(x, ast.Constant) for x in n.args)]
        assert not by_name, f"{where} looks a measure up by name: {by_name}"
