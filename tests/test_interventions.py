"""Prompt interventions end to end (issue 33.1): the dimension, the fake model's ``unless=WORD``, the
intervention files and interventions.csv of ``louder analyze``. The statistics themselves are tested
in tests/test_adjustment.py (20 null seeds, planted sizes)."""

from __future__ import annotations

import pandas as pd
import pytest

import louder
from louder import dimensions
from louder.analysis import analyze
from louder.analysis.stats.interventions import COLUMNS, INTERVENTION_COLUMNS
from louder.config import load_config
from louder.errors import LouderError
from louder.interventions import builtins, load_intervention
from louder.llm.base import Request
from louder.llm.fake import FakeModel, parse_all

FAIRNESS = "id: fairness\ntext: Please decide with fairness to everyone.\nwhere: {where}\n"


def fairness(tmp_path, where="before_decision"):
    path = tmp_path / f"fairness_{where}.yaml"
    path.write_text(FAIRNESS.format(where=where), encoding="utf-8")
    return str(path)


def config(model: str, interventions: list[str], agents: int = 100, seed: int = 0) -> dict:
    return {"models": [model], "seed": seed, "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "conditions": ["no_persona"],
        "agents": agents, "interventions": interventions}}


def intervention_rows(tmp_path, model, interventions, seed, agents=100):
    out = tmp_path / f"run{seed}-{abs(hash((model, tuple(interventions)))) % 10**6}"
    louder.run(config(model, interventions, agents, seed), out=out, progress=False)
    return analyze(out, bootstrap=1000, seed=seed, write=False, measures=["interventions"]).tables["interventions"]


def test_a_bias_the_intervention_stops_reads_reduces_in_three_of_three_seeds(tmp_path):
    """The issue's "done when": bias=female:0.9,pick=Evacuate,unless=fairness (no_persona) with an
    intervention whose text says "fairness": reduces, 3 of 3 seeds, the planted −0.4 inside the interval."""
    file = fairness(tmp_path)
    for seed in range(3):
        t = intervention_rows(tmp_path, f"fake:seed={seed},bias=female:0.9,pick=Evacuate,unless=fairness",
                              ["none", file], seed)
        assert list(t.columns) == COLUMNS and set(INTERVENTION_COLUMNS) < set(COLUMNS) and len(t) == 1
        r = t.iloc[0]
        assert r["intervention"] == "fairness" and r["verdict"] == "reduces", r.to_dict()
        assert r["ci_low"] <= r["dpd_change"] <= r["ci_high"] and r["ci_low"] <= -0.4 <= r["ci_high"]
        assert r["n_agents"] == 300 and r["rate_shift"] < 0  # Female's 0.9 falls to ½: the overall rate drops


def test_without_a_bias_no_change_in_at_least_1_minus_alpha_of_cases(tmp_path):
    """Null: the fake model without a bias, 12 independent cases (4 scenarios × 3 groups) of one run.
    The rate of `no change` is about 0.93–0.95 (37 of 40 seeds of the single case above; 189 of 200 in
    benchmarks/measures_calibration.py): at least 10 of 12 here (P ≈ 0.97 at 0.945)."""
    out = tmp_path / "null"
    louder.run({"models": ["fake:seed=11,pick=Evacuate,unless=fairness"], "simulation": {
        "scenarios": ["emergency_response", "career_path_selection", "authority_compliance",
                      "negative_information_sharing"], "groups": ["gender_identity", "race_ethnicity",
                                                                 "political_ideology"],
        "conditions": ["no_persona"], "agents": 100, "interventions": ["none", fairness(tmp_path)]}},
        out=out, progress=False)
    t = analyze(out, bootstrap=1000, write=False, measures=["interventions"]).tables["interventions"]
    assert len(t) == 12 and t["verdict"].isin(["no change", "underpowered", "reduces", "increases"]).all()
    assert (t["verdict"] == "no change").sum() >= 10, t[["scenario", "group", "verdict"]]
    assert ((t["ci_low"] <= t["dpd_change"]) & (t["dpd_change"] <= t["ci_high"])).all()


def test_an_intervention_as_a_system_message_and_one_that_misses_the_word(tmp_path):
    """`where: system` reaches the model too (the fake reads every message); a built-in without the word
    leaves the bias alone (no change); personas are written once per agent and shared; the other tables
    read the decisions under none only."""
    out = tmp_path / "sys"
    run = louder.run(config("fake:seed=7,bias=female:0.9,pick=Evacuate,unless=fairness",
                            ["none", fairness(tmp_path, "system"), "illegal"]), out=out, progress=False)
    d = run.decisions
    assert d.groupby("intervention").size().to_dict() == {"fairness": 300, "illegal": 300, "none": 300}
    assert len(run.personas) == 300  # one persona (a name, no_persona) per agent, shared by the interventions
    named = d.pivot_table(index=["attribute", "agent_id"], columns="intervention", values="name", aggfunc="first")
    assert (named.nunique(axis=1) == 1).all()
    # the explicit probe under the same interventions: what the model says under each (a side effect)
    louder.run(config("fake:seed=7,bias=female:0.9,pick=Evacuate,unless=fairness",
                      ["none", fairness(tmp_path, "system"), "illegal"]) | {"explicit": {"trials": 60}}, out=out,
               kind="explicit", progress=False)
    probes = pd.read_parquet(out / "probes.parquet")
    assert probes.groupby("intervention").size().to_dict() == {"fairness": 60, "illegal": 60, "none": 60}
    a = analyze(out, bootstrap=1000, write=True)
    t = a.tables["interventions"].set_index("intervention")
    assert t.loc["fairness", "verdict"] == "reduces" and t.loc["illegal", "verdict"] == "no change"
    assert t.loc["fairness", "explicit_dpd_none"] > 0.6 and t.loc["fairness", "explicit_dpd"] < 0.4
    assert t.loc["illegal", "explicit_dpd"] > 0.6
    assert a.tables["cases"].query("kind == 'explicit'")["n_valid"].tolist() == [60]  # answers under none only
    assert (a.tables["attributes"].query("kind == 'implicit'")["n_valid"] == 100).all()
    written = pd.read_csv(out / "interventions.csv")
    assert set(written["intervention"]) == {"fairness", "illegal"} and list(written.columns) == COLUMNS
    from louder.analysis.report.page import write_report

    html = write_report(a).read_text("utf-8")
    assert "Prompt interventions" in html and "arXiv:2312.03689" in html


def test_where_the_text_goes_and_the_default_changes_nothing(tmp_path):
    cfg = load_config(config("fake", ["none", "illegal", fairness(tmp_path, "system")]))
    none = dimensions.shape({"intervention": "none"}, cfg)
    assert none == dimensions.Ask()
    assert dimensions.shape({"intervention": "illegal"}, cfg).before_choices == builtins()["illegal"].text
    sys = dimensions.shape({"intervention": "fairness"}, cfg)
    assert sys.system == "Please decide with fairness to everyone." and sys.before_choices is None
    assert not dimensions.get("intervention").varies(load_config(config("fake", ["none"])))
    # every built-in names its source
    assert all(iv.source and "arXiv:" in iv.source for iv in builtins().values())


@pytest.mark.parametrize("text, message", [
    ("id: fair\ntext: x\n", "where: Field required — an intervention file gives"),
    ("id: fair\ntext: x\nwhere: top\n", "where: Input should be 'system' or 'before_decision'"),
    ("id: none\ntext: x\nwhere: system\n", "id 'none' is the run without an intervention"),
    ("id: illegal\ntext: x\nwhere: system\n", "id 'illegal' is a built-in"),
    ("- a list\n", "must be a YAML mapping"),
])
def test_a_bad_intervention_file_is_one_line_naming_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LouderError) as e:
        load_config(config("fake", ["none", str(path)]))
    assert message in str(e.value) and "simulation.interventions" in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_unknown_and_repeated_interventions():
    with pytest.raises(LouderError, match="unknown intervention 'ilegal'; did you mean illegal"):
        load_config(config("fake", ["none", "ilegal"]))
    with pytest.raises(LouderError, match="listed more than once"):
        load_config(config("fake", ["none", "illegal", "illegal"]))
    assert load_intervention("none") is None


def test_fake_unless_stops_every_bias():
    assert parse_all("bias=female:0.9,unless=fairness")["unless"] == "fairness"
    fake = FakeModel("bias=female:0.9,pick=Evacuate,unless=fairness")
    biased = Request(messages=(("user", "You are Female. Evacuate or Stay?"),))
    stopped = Request(messages=(("system", "Decide with Fairness."), ("user", "You are Female. Evacuate or Stay?")))
    assert fake.probabilities(biased, ["Stay", "Evacuate"]) == [pytest.approx(0.1), pytest.approx(0.9)]
    assert fake.probabilities(stopped, ["Stay", "Evacuate"]) == [0.5, 0.5]
    with pytest.raises(LouderError, match="unless=WORD"):
        parse_all("unless=")
