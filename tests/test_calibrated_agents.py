"""Calibrated agents (issue 33.2): `louder calibrate` fits logit offsets on a finished run and writes
calibration.yaml; `louder run --calibration FILE` shifts each agent's choice probabilities before it
decides (`louder adjust`, `--adjustment` and `simulation.adjustment`: the earlier names, still read).
The offsets' statistics are tested in tests/test_adjustment.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import louder
from louder.analysis import analyze
from louder.calibration import load_calibration
from louder.cli import app
from louder.config import load_config
from louder.errors import LouderError

BIASED = "fake:seed=2,bias=female:0.9,pick=Evacuate"
CASE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}


def cli(*args) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output[-2000:], r.exception)
    return r.output


def score_run(out, agents=100, calibration=None, model=BIASED, **extra):
    sim = {**CASE, "agents": agents, "decision_mode": "score", "score_pick": "draw",
           **({"calibration": str(calibration)} if calibration else {})}
    return louder.run({"models": [model], "simulation": sim, **extra}, out=out, progress=False)


def test_a_planted_disparity_adjusted_to_parity_reads_null_when_run_again(tmp_path):
    """The issue's "done when": significant before; `louder calibrate --to parity`, run again with
    --calibration: no significant DPD, in the decisions and in the probabilities."""
    score_run(tmp_path / "raw")
    before = analyze(tmp_path / "raw", bootstrap=1000, write=False).tables["cases"].iloc[0]
    assert before["significant"] and before["dpd_p"] == pytest.approx(0.4) and before["p_value_p"] < 0.01
    printed = cli("calibrate", tmp_path / "raw", "--to", "parity")
    assert "Calibration offsets to parity" in printed and "calibration.yaml" in printed
    adj = load_calibration(tmp_path / "raw" / "calibration.yaml")
    assert adj.to == "parity" and adj.source == "score" and len(adj.offsets) == 3
    offsets = {o.attribute: o.offset for o in adj.offsets}
    assert offsets["Female"] < 0 < offsets["Male"] == pytest.approx(offsets["Non-binary"])
    (tmp_path / "score.yaml").write_text("simulation: {decision_mode: score, score_pick: draw}\n")
    cli("run", tmp_path / "score.yaml", "--out", tmp_path / "adjusted", "-m", BIASED, "-s", "emergency_response",
        "-g", "gender_identity", "-n", 100, "--calibration", tmp_path / "raw" / "calibration.yaml")
    after_run = louder.open(tmp_path / "adjusted")
    after = analyze(tmp_path / "adjusted", bootstrap=1000, write=False).tables["cases"].iloc[0]
    assert not after["significant"] and after["p_value_p"] > 0.05 and after["dpd_p"] == pytest.approx(0, abs=1e-9)
    p = after_run.decisions.groupby("attribute")["p_target"].mean()
    assert np.allclose(p, (0.9 + 0.5 + 0.5) / 3)  # every attribute at the pooled rate; the overall rate kept
    assert after_run.manifest["config"]["simulation"]["calibration"].endswith("calibration.yaml")


def test_adjusted_to_observed_rates_the_rates_match_the_file(tmp_path):
    observed = tmp_path / "observed.yaml"
    rates = {"Female": 0.7, "Male": 0.5, "Non-binary": 0.6}
    observed.write_text(yaml.safe_dump([dict(scenario="emergency_response", group="gender_identity", attribute=a,
                                             rate=r, n=400, source="invented for this test", year=2026,
                                             measure="share who evacuated") for a, r in rates.items()]))
    score_run(tmp_path / "raw")
    cli("calibrate", tmp_path / "raw", "--to", "observed", "--observed", observed, "--out", tmp_path / "obs.yaml")
    run = score_run(tmp_path / "again", calibration=tmp_path / "obs.yaml")
    p = run.decisions.groupby("attribute")["p_target"].mean()
    assert p.to_dict() == pytest.approx(rates)
    # the sampled decisions' rates hold the file's rates within their intervals (Wilson, 95 %)
    a = analyze(tmp_path / "again", bootstrap=1000, write=False).tables["attributes"].set_index("attribute")
    from statsmodels.stats.proportion import proportion_confint

    for attr, r in rates.items():
        lo, hi = proportion_confint(a.loc[attr, "n_target"], a.loc[attr, "n_valid"], method="wilson")
        assert lo <= r <= hi, (attr, lo, r, hi)


def test_network_rounds_and_population_agents_are_calibrated(tmp_path):
    """A network run's agents decide with adjusted probabilities in every round (their neighbours hear
    adjusted decisions); a population run's offsets add over its groups (raked)."""
    score_run(tmp_path / "raw", agents=20)
    cli("calibrate", tmp_path / "raw", "--to", "parity")
    net = score_run(tmp_path / "net", agents=20, calibration=tmp_path / "raw" / "calibration.yaml",
                    network={"generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}}, influence={"rounds": 2})
    d = net.decisions
    assert set(d["round"]) == {0, 1, 2}
    by_round = d.groupby(["round", "attribute"])["p_target"].mean().unstack()
    assert np.allclose(by_round.to_numpy(), 0.9 / 3 + 1 / 3)  # (0.9 + 0.5 + 0.5) / 3 in every round
    pop = {"population": "us_gender_ideology"}
    louder.run({"models": ["fake:seed=3,bias=female:0.9,bias=conservative:0.8,pick=Evacuate"],
                "simulation": {"scenarios": ["emergency_response"], "agents": 120, "decision_mode": "score"}, **pop},
               out=tmp_path / "pop", progress=False)
    cli("calibrate", tmp_path / "pop", "--to", "parity")
    adj = load_calibration(tmp_path / "pop" / "calibration.yaml")
    assert {o.group for o in adj.offsets} == {"gender_identity", "political_ideology"}
    again = louder.run({"models": ["fake:seed=3,bias=female:0.9,bias=conservative:0.8,pick=Evacuate"],
                        "simulation": {"scenarios": ["emergency_response"], "agents": 120, "decision_mode": "score",
                                       "calibration": str(tmp_path / "pop" / "calibration.yaml")}, **pop},
                       out=tmp_path / "pop2", progress=False)
    d = again.decisions
    for col in ("attr_gender_identity", "attr_political_ideology"):
        means = d.groupby(col).apply(lambda g: np.average(g["p_target"], weights=g["weight"]), include_groups=False)
        assert means.max() - means.min() < 1e-6, (col, means)


def test_what_an_adjustment_cannot_do_is_one_line(tmp_path):
    score_run(tmp_path / "raw", agents=5)
    cli("calibrate", tmp_path / "raw", "--to", "parity")
    path = str(tmp_path / "raw" / "calibration.yaml")
    base = {"models": [BIASED], "simulation": {**CASE, "agents": 5, "calibration": path}}
    with pytest.raises(LouderError, match="only score mode has") as e:
        load_config(base)
    assert len(str(e.value).splitlines()) == 1
    score = {**base["simulation"], "decision_mode": "score"}
    with pytest.raises(LouderError, match="no offset for fake:seed=2,bias=female:0.9,pick=Evacuate × no_persona"):
        load_config({**base, "simulation": {**score, "conditions": ["no_persona"]}})
    with pytest.raises(LouderError, match="no offset for fake × contextualized"):
        load_config({**base, "models": ["fake"], "simulation": score})
    (tmp_path / "bad.yaml").write_text("to: parity\nsource: score\noffsets: []\n")
    with pytest.raises(LouderError, match="offsets: List should have at least 1 item"):
        load_config({**base, "simulation": {**score, "calibration": str(tmp_path / "bad.yaml")}})
    r = CliRunner().invoke(app, ["calibrate", str(tmp_path / "raw"), "--to", "observed"])
    assert r.exit_code == 2 and "--to observed needs --observed FILE" in r.output
    r = CliRunner().invoke(app, ["calibrate", str(tmp_path / "nothing"), "--to", "parity"])
    assert r.exit_code == 2 and "no decisions.parquet" in r.output


def test_sample_mode_offsets_calibrate_rates(tmp_path):
    louder.run({"models": [BIASED], "simulation": {**CASE, "agents": 60}}, out=tmp_path / "s", progress=False)
    out = cli("calibrate", tmp_path / "s", "--to", "parity")
    assert "They calibrate rates, not agents" in " ".join(out.split())
    adj = load_calibration(tmp_path / "s" / "calibration.yaml")
    assert adj.source == "sample"
    d = pd.read_parquet(tmp_path / "s" / "decisions.parquet")
    rates = d.groupby("attribute")["target"].mean()
    assert rates["Female"] > rates["Male"]
    assert {o.attribute: o.rate_adjusted for o in adj.offsets} == pytest.approx(
        {a: adj.offsets[0].target for a in rates.index})


# --- policy sensitivity (issue 33.3): `louder analyze RUN --adjust parity | observed` -----------------

def policy_run(out, model="fake:seed=4,bias=woman:0.9,pick=Evacuate", agents=240, **sim):
    return louder.run({"models": [model], "population": "us_gender_ideology", "simulation": {
        "scenarios": ["emergency_response_policy"], "variants": ["base", "mandatory"], "agents": agents,
        "decision_mode": "score", **sim}}, out=out, progress=False)


def test_a_population_run_with_variants_gets_sensitivity_under_raw_and_parity_agents(tmp_path):
    """The issue's "done when": sensitivity.csv with raw and parity rows and a verdict, from the stored
    probabilities (no new call); the report renders it again from analysis.json's settings."""
    from louder.analysis import for_report
    from louder.analysis.report.page import write_report
    from louder.analysis.stats.sensitivity import SENSITIVITY_COLUMNS

    policy_run(tmp_path / "pop")
    calls = pd.read_json(tmp_path / "pop" / "manifest.json", typ="series")["model_calls"]
    printed = " ".join(cli("analyze", tmp_path / "pop", "-B", 300, "--adjust", "parity").split())
    assert "Policy sensitivity" in printed and "sensitivity.csv" in printed
    t = pd.read_csv(tmp_path / "pop" / "sensitivity.csv")
    assert list(t.columns) == SENSITIVITY_COLUMNS and set(t["agents"]) == {"raw", "parity"}
    assert set(t["verdict"]) <= {"holds", "depends on the model's bias"} and set(t["variant"]) == {"mandatory"}
    assert set(t["group"]) == {"(all)", "gender_identity", "political_ideology"}
    assert ((t["ci_low"] <= t["effect"]) & (t["effect"] <= t["ci_high"])).all()
    # parity agents: under the base variant every gender has the pooled rate
    base = t[(t["agents"] == "parity") & (t["group"] == "gender_identity")]["rate_base"]
    assert base.max() - base.min() < 1e-6
    raw = t[(t["agents"] == "raw") & (t["group"] == "gender_identity")].set_index("attribute")["rate_base"]
    assert raw["Female"] - raw["Male"] > 0.3  # the planted bias, under the raw agents
    assert pd.read_json(tmp_path / "pop" / "manifest.json", typ="series")["model_calls"] == calls  # no new call
    a = for_report(tmp_path / "pop")
    assert "sensitivity" in a.tables and "Policy sensitivity" in write_report(a).read_text("utf-8")


def test_sensitivity_to_observed_rates_and_what_it_cannot_read(tmp_path):
    policy_run(tmp_path / "pop", model="fake:seed=5", agents=120)
    observed = tmp_path / "observed.yaml"
    from louder.populations import load_population

    groups = [(g.id, a) for g in load_population("us_gender_ideology").groups for a in g.attributes]
    observed.write_text(yaml.safe_dump([dict(scenario="emergency_response_policy", group=g, attribute=a, rate=0.6,
                                             n=400, source="invented for this test", year=2026,
                                             measure="share who evacuated") for g, a in groups]))
    r = CliRunner().invoke(app, ["analyze", str(tmp_path / "pop"), "-B", "200", "--adjust", "observed"])
    assert r.exit_code == 2 and "calibration=observed (--adjust observed) needs observed rates: --observed FILE" in \
        " ".join(r.output.split())
    r = CliRunner().invoke(app, ["analyze", str(tmp_path / "pop"), "-B", "200", "--adjust", "parityy"])
    assert r.exit_code == 2 and "--adjust=parityy: use one of parity, observed (did you mean 'parity'?)" in \
        " ".join(r.output.split())
    a = analyze(tmp_path / "pop", bootstrap=200, observed=observed, adjust="observed", write=False)
    t = a.tables["sensitivity"]
    assert set(t["agents"]) == {"raw", "parity", "observed"}
    obs = t[(t["agents"] == "observed") & (t["group"] == "gender_identity")]
    assert np.allclose(obs["rate_base"], 0.6, atol=1e-6)
    # a run without variants, and a network run: a note, no table
    louder.run({"models": ["fake"], "simulation": {**CASE, "agents": 4}}, out=tmp_path / "plain", progress=False)
    a = analyze(tmp_path / "plain", bootstrap=200, adjust="parity", write=False)
    assert "sensitivity" not in a.tables and any("compares policy variants" in m for m in a.missing)
    net = {"network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}}, "influence": {"rounds": 1}}
    louder.run({"models": ["fake"], "simulation": {**CASE, "agents": 4, "variants": ["base"]}, **net},
               out=tmp_path / "net", progress=False)
    a = analyze(tmp_path / "net", bootstrap=200, adjust="parity", write=False)
    assert "sensitivity" not in a.tables and any("run again with `louder run --calibration" in m for m in a.missing)


def test_the_earlier_names_of_calibration_still_work(tmp_path):
    """`louder adjust`, `louder run --adjustment` and `simulation.adjustment` (its names before issue 41) do
    what `louder calibrate`, `--calibration` and `simulation.calibration` do; the config key says its new name."""
    score_run(tmp_path / "raw", agents=20)
    cli("adjust", tmp_path / "raw", "--to", "parity")  # the hidden alias of `louder calibrate`
    path = tmp_path / "raw" / "calibration.yaml"
    assert load_calibration(path).to == "parity"
    (tmp_path / "score.yaml").write_text("simulation: {decision_mode: score, score_pick: draw}\n")
    cli("run", tmp_path / "score.yaml", "--out", tmp_path / "old", "-m", BIASED, "-s", "emergency_response",
        "-g", "gender_identity", "-n", 20, "--adjustment", path)
    assert louder.open(tmp_path / "old").manifest["config"]["simulation"]["calibration"] == str(path)
    with pytest.warns(FutureWarning, match="simulation.adjustment is now simulation.calibration"):
        cfg = load_config({"models": [BIASED], "simulation": {**CASE, "agents": 5, "decision_mode": "score",
                                                               "adjustment": str(path)}})
    assert cfg.simulation.calibration == str(path)

