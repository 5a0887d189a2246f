"""Actions, words, beliefs and the world (issue 21): the observed-rates file, the gap and amplification
statistics against hand-computed values and under null / planted effects, and the voices tables and
report section on a tiny FABRICATED run (known counts, made-up observed rates — test data, not
measurements)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from louder.analysis import analyze, stats
from louder.analysis.measures.attributes import ATTRIBUTE_COLUMNS
from louder.analysis.report.page import write_report
from louder.analysis.stats import voices as V
from louder.errors import LouderError
from louder.types import DECISION_COLUMNS, typed

Z = 1.959963984540054


# --- the observed file ---------------------------------------------------------------------------------

ENTRY = {"scenario": "emergency_response", "group": "gender_identity", "attribute": "Female", "rate": 0.6,
         "n": 500, "source": "FABRICATED test data", "year": 2020, "measure": "made-up share who evacuated"}


def _write(tmp_path, doc, name="observed.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    return p


@pytest.mark.parametrize("entries, fragment", [
    ([{**ENTRY, "rate": 1.4}], "entry 1 (emergency_response × gender_identity × Female): rate"),
    ([{**ENTRY, "n": 0}], "entry 1 (emergency_response × gender_identity × Female): n"),
    ([{k: v for k, v in ENTRY.items() if k != "source"}], "source: Field required"),
    ([ENTRY, {**ENTRY, "attribute": "Male"}, {**ENTRY, "rate": 0.5}], "entry 3 (emergency_response × "
                                                                      "gender_identity × Female) repeats entry 1"),
    ([{**ENTRY, "sample": 3}], "sample: unknown field"),
    ([{**ENTRY, "measure": "two\nlines"}], "measure: must be one line"),
    ({"scenario": "x"}, "must be a YAML list"),
    (["just text"], "entry 1: must be a mapping"),
])
def test_a_bad_observed_file_is_one_line_naming_the_entry_and_field(tmp_path, entries, fragment):
    with pytest.raises(LouderError) as e:
        V.load_observed(_write(tmp_path, entries))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_observed_entries_are_checked_against_the_run(tmp_path):
    entries = V.load_observed(_write(tmp_path, [ENTRY, {**ENTRY, "scenario": "career_path_selection"},
                                                {**ENTRY, "year": "2004–2005", "attribute": "Male"}]))
    assert entries[2].year == "2004–2005" and entries[0].year == "2020"
    groups = {"gender_identity": ["Male", "Female", "Non-binary"]}
    kept, notes = V.check_observed(entries, groups, {"emergency_response"})
    assert [e.attribute for e in kept] == ["Female", "Male"]
    assert len(notes) == 1 and "entry 2 (career_path_selection" in notes[0]
    bad = V.load_observed(_write(tmp_path, [{**ENTRY, "attribute": "female"}]))
    with pytest.raises(LouderError, match=r"attribute 'female' is not an attribute of group gender_identity"):
        V.check_observed(bad, groups, {"emergency_response"})


# --- statistics against hand-computed values ------------------------------------------------------------

def _wilson_by_hand(x, n):
    p = x / n
    d = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / d
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / d
    return centre - half, centre + half


def test_newcombe_gap_matches_the_formula_by_hand():
    """Newcombe (1998) method 10 written out from the Wilson intervals, independently of statsmodels."""
    l1, u1 = _wilson_by_hand(300, 500)
    l2, u2 = _wilson_by_hand(180, 400)
    lo = 0.15 - math.sqrt((0.6 - l1) ** 2 + (u2 - 0.45) ** 2)
    hi = 0.15 + math.sqrt((u1 - 0.6) ** 2 + (0.45 - l2) ** 2)
    g = V.newcombe_gap(300, 500, 180, 400)
    assert g.estimate == pytest.approx(0.15) and g.low == pytest.approx(lo) and g.high == pytest.approx(hi)
    assert (round(g.low, 4), round(g.high, 4)) == (0.0844, 0.2138)  # by hand, as in docs/voices.md
    w = stats.wilson(300 / 500, 500)  # the analysis' one Wilson interval
    assert (w.low, w.high) == pytest.approx(_wilson_by_hand(300, 500))


def test_fieller_matches_the_formula_by_hand():
    # a = 0.30, va = 0.01, o = 0.15, vo = 0.001, c = 2: A = 0.0185, half = 2·√0.000275 = 0.0331662
    lo, hi = V.fieller(0.30, 0.01, 0.15, 0.001, 2.0)
    assert (lo, hi) == pytest.approx((0.63966, 4.22520), abs=1e-5)
    for theta in (lo, hi):  # the ends solve (a − θo)² = c²(va + θ²vo)
        assert (0.30 - theta * 0.15) ** 2 == pytest.approx(4 * (0.01 + theta ** 2 * 0.001))
    assert V.fieller(0.30, 0.01, 0.05, 0.001, 2.0) is None  # o² ≤ c²·vo: unbounded


def test_amplification_is_the_ratio_of_gaps_with_a_fieller_interval():
    r = V.amplification(70, 100, 40, 100, 0.6, 500, 0.45, 400, B=4000, seed=1)
    assert r.estimate == pytest.approx((0.7 - 0.4) / 0.15) and r.note == ""
    assert r.low < r.estimate < r.high
    # both ends solve Fieller's equation with one critical value c ≥ z (the bootstrap-t one)
    v = lambda x, n: ((x + .5) / (n + 1)) * (1 - (x + .5) / (n + 1)) / n  # noqa: E731
    a, va, o, vo = 0.3, v(70, 100) + v(40, 100), 0.15, v(300, 500) + v(180, 400)
    cs = [abs(a - t * o) / math.sqrt(va + t * t * vo) for t in (r.low, r.high)]
    assert cs[0] == pytest.approx(cs[1]) and cs[0] >= Z - 1e-9
    # the observed gap's interval contains 0: θ is given, its interval is not, and the note says why
    r = V.amplification(70, 100, 40, 100, 0.55, 40, 0.45, 40, B=500)
    assert r.estimate == pytest.approx(3.0) and math.isnan(r.low) and "containing 0" in r.note


@pytest.mark.parametrize("rates, theta", [((0.5, 0.5), 0.0), ((0.6, 0.4), 2.0), ((0.45, 0.55), -1.0)])
def test_amplification_interval_covers_the_truth(rates, theta):
    """Agents' gap 0 (null), 0.2 (θ = 2) and −0.1 (reversed) against an observed gap of 0.1: the
    interval covers θ in about 95 % of 300 simulated runs and always contains its estimate."""
    rng = np.random.default_rng(5)
    hits = n = 0
    for i in range(300):
        x_h, x_l = rng.binomial(120, rates[0]), rng.binomial(120, rates[1])
        q_h, q_l = rng.binomial(2000, 0.55) / 2000, rng.binomial(2000, 0.45) / 2000
        r = V.amplification(x_h, 120, x_l, 120, q_h, 2000, q_l, 2000, B=600, seed=i)
        assert r.low <= r.estimate <= r.high
        n += 1
        hits += r.low <= theta <= r.high
    assert 0.92 <= hits / n <= 0.995, hits / n


def test_belief_rate_and_gaps_contain_their_estimates_and_cover():
    rng = np.random.default_rng(3)
    cover_rate = cover_gap = cover_share = 0
    for i in range(300):
        a, b = rng.integers(30, 71, 12) / 100, rng.integers(30, 71, 15) / 100  # true means 0.5 and 0.5
        e = V.mean_rate(a, B=500, seed=i)
        g = V.mean_gap(a, b, B=500, seed=i)
        c = rng.multinomial(90, [0.3, 0.3, 0.4])
        s = V.share_gap(c[0], c[1], 90, B=500, seed=i)
        for x in (e, g, s):
            assert x.low <= x.estimate <= x.high
        cover_rate += e.low <= 0.5 <= e.high
        cover_gap += g.low <= 0 <= g.high
        cover_share += s.low <= 0 <= s.high
    for c in (cover_rate, cover_gap, cover_share):
        assert 0.92 <= c / 300 <= 0.995, c
    same = V.mean_rate([0.8] * 5)  # identical answers: a point, the model's spread at that temperature
    assert (same.estimate, same.low, same.high) == pytest.approx((0.8, 0.8, 0.8))


# --- the tables on a fabricated run --------------------------------------------------------------------

COUNTS = {"Female": (14, 20), "Male": (8, 20), "Non-binary": (10, 20)}  # agents choosing Evacuate / valid
BELIEFS = {"Female": [70, 80, 90, 80], "Male": [50, 60, 40, 50], "Non-binary": [60, 60, 60, 60]}
OBSERVED = [  # FABRICATED: made-up numbers for the test, not a measurement
    {**ENTRY, "attribute": "Female", "rate": 0.6, "n": 500},
    {**ENTRY, "attribute": "Male", "rate": 0.45, "n": 400},
]


def fabricated_run(folder, model="fabricated"):
    rows = []
    for a, (x, n) in COUNTS.items():
        for i in range(n):
            rows.append(dict(run_id="fab", model=model, condition="contextualized", scenario="emergency_response",
                             group="gender_identity", attribute=a, agent_id=len(rows), replicate=0, name="N",
                             persona="P", decision="Evacuate" if i < x else "Stay", target=i < x, p_target=None,
                             rationale="fabricated", status="valid", raw_response="{}", attempts=1, latency_s=0.0,
                             input_tokens=None, output_tokens=None, choice_mass=None))
    typed(pd.DataFrame(rows, columns=DECISION_COLUMNS)).to_parquet(folder / "decisions.parquet")
    b = [dict(run_id="fab", probe="beliefs", model=model, scenario="emergency_response", group="gender_identity",
              attribute=a, trial=t, answer=v, status="valid", note="", raw_response=f'{{"count": {v}}}', attempts=1,
              latency_s=0.0, input_tokens=None, output_tokens=None)
         for a, vs in BELIEFS.items() for t, v in enumerate(vs)]
    b.append({**b[0], "trial": 4, "answer": None, "status": "invalid", "note": "'count' = 150 is outside 0–100",
              "raw_response": '{"count": 150}'})
    pd.DataFrame(b).astype({"answer": "Int64"}).to_parquet(folder / "beliefs.parquet")


def test_voices_table_on_a_fabricated_run_matches_hand_computed_values(tmp_path):
    fabricated_run(tmp_path)
    obs = _write(tmp_path, OBSERVED)
    a = analyze(tmp_path, bootstrap=2000, observed=obs)
    v = a.tables["voices"].iloc[0]
    assert (v["observed_higher"], v["observed_lower"]) == ("Female", "Male")
    assert v["action_dpd"] == pytest.approx(14 / 20 - 8 / 20)
    assert v["belief_dpd"] == pytest.approx(0.80 - 0.50)  # the invalid answer is not in Female's mean
    assert v["observed_gap"] == pytest.approx(0.15)
    assert (round(v["observed_ci_low"], 4), round(v["observed_ci_high"], 4)) == (0.0844, 0.2138)
    assert v["action_gap"] == pytest.approx(0.30) and v["belief_gap"] == pytest.approx(0.30)
    assert v["amplification"] == pytest.approx(2.0)
    assert v["amp_ci_low"] < 2.0 < v["amp_ci_high"] and pd.isna(v["explicit_dpd"])
    l1, u1 = _wilson_by_hand(14, 20)
    l2, u2 = _wilson_by_hand(8, 20)
    assert v["action_gap_ci_low"] == pytest.approx(0.3 - math.sqrt((0.7 - l1) ** 2 + (u2 - 0.4) ** 2))
    rates = a.tables["voice_rates"].set_index("attribute")
    assert rates.loc["Female", "belief_rate"] == pytest.approx(0.8) and rates.loc["Female", "belief_n"] == 4
    assert rates.loc["Male", "observed_n"] == 400 and pd.isna(rates.loc["Non-binary", "observed_rate"])
    assert rates.loc["Non-binary", "belief_ci_low"] == rates.loc["Non-binary", "belief_ci_high"] == 0.6
    assert list(a.tables["voices"].columns) == V.VOICES_COLUMNS
    assert (tmp_path / "voices.csv").exists() and (tmp_path / "voice_rates.csv").exists()
    con = a.tables["contrast"].iloc[0]
    assert con["n_belief"] == 1 and con["mean_belief"] == pytest.approx(0.3)
    page = write_report(a).read_text("utf-8")
    assert "Actions, words, beliefs and the world" in page and "amplification 2.00" in page
    assert "Beliefs probe (per attribute)" in page and "share of answers" in page


def test_no_interval_for_the_ratio_when_the_observed_gap_may_be_zero(tmp_path):
    fabricated_run(tmp_path)
    obs = _write(tmp_path, [{**OBSERVED[0], "n": 30, "rate": 0.5}, {**OBSERVED[1], "n": 30, "rate": 0.4}])
    v = analyze(tmp_path, bootstrap=500, observed=obs, write=False).tables["voices"].iloc[0]
    assert v["amplification"] == pytest.approx(3.0) and pd.isna(v["amp_ci_low"]) and pd.isna(v["amp_ci_high"])
    assert "containing 0" in v["note"]


def test_a_predictions_file_may_point_to_an_observed_file(tmp_path):
    fabricated_run(tmp_path)
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data", OBSERVED, "observed.yaml")
    preds = _write(tmp_path / "data", {"observed": "observed.yaml", "predictions": [
        {"id": "p", "scenario": "emergency_response", "group": "gender_identity", "prediction": "x",
         "higher": ["Female"], "lower": ["Male"]}]}, "predictions.yaml")
    v = analyze(tmp_path, bootstrap=500, predictions=preds, write=False).tables["voices"].iloc[0]
    assert v["amplification"] == pytest.approx(2.0)
    # the shipped predictions point to no observed file: louder ships no observed rates
    a = analyze(tmp_path, bootstrap=500, write=False)
    assert a.tables["voices"]["observed_gap"].isna().all()


def test_a_run_without_beliefs_or_observed_rates_has_no_voices_table(tmp_path):
    fabricated_run(tmp_path)
    (tmp_path / "beliefs.parquet").unlink()
    a = analyze(tmp_path, bootstrap=300, write=False)
    assert "voices" not in a.tables and a.tables["contrast"]["n_belief"].iloc[0] == 0
    assert "Actions, words, beliefs and the world" not in write_report(a).read_text("utf-8")
    a = analyze(tmp_path, bootstrap=300, write=False, observed=_write(tmp_path, OBSERVED))
    assert a.tables["voices"]["amplification"].iloc[0] == pytest.approx(2.0)
    assert any("louder probe beliefs" in m for m in a.missing)


def test_belief_dpd_reads_null_on_null_data_and_finds_a_planted_gap():
    """Belief DPD (prob_dpd over trials): 0 is covered ~95 % when every attribute's answers share one
    distribution; a planted 0.3 gap is covered and detected."""
    rng = np.random.default_rng(11)
    null_cover = planted_cover = planted_found = 0
    for i in range(150):
        null = {a: rng.integers(40, 61, 10) / 100 for a in "abc"}
        planted = {"a": rng.integers(40, 61, 10) / 100, "b": rng.integers(70, 91, 10) / 100,
                   "c": rng.integers(50, 71, 10) / 100}
        rows = []
        for kind, d in (("null", null), ("planted", planted)):
            for a, vs in d.items():
                rows += [dict(model=kind, scenario="s", group="g", attribute=a, answer=int(round(x * 100)),
                              status="valid") for x in vs]
        beliefs = pd.DataFrame(rows)
        v, _ = V.voices(pd.DataFrame(columns=ATTRIBUTE_COLUMNS),
                        pd.DataFrame(), beliefs, None, {"g": ["a", "b", "c"]}, B=400, seed=i)
        v = v.set_index("model")
        null_cover += v.loc["null", "belief_ci_low"] <= 0 <= v.loc["null", "belief_ci_high"]
        planted_cover += v.loc["planted", "belief_ci_low"] <= 0.3 <= v.loc["planted", "belief_ci_high"]
        planted_found += v.loc["planted", "belief_p"] < 0.05
    assert null_cover / 150 >= 0.93 and planted_cover / 150 >= 0.93 and planted_found / 150 >= 0.95
