"""The beliefs probe (issue 21): "out of 100 <people> in this situation, how many would choose to
<target>?" — wording from data, every answer accounted for, the usual plan / cache / dry run / CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import louder
from louder.cli import app
from louder.config import build_config, load_config
from louder.errors import LouderError, LouderWarning
from louder.llm.answers import classify_count
from louder.llm.base import Reply
from louder.prompts import Prompts
from louder.scenarios import DATA, builtin_scenarios, load_group, load_scenario

MARKERS = Prompts().refusal_markers


@pytest.mark.parametrize("text, status, value", [
    ('{"count": 42}', "valid", 42),
    ('{"count": 0}', "valid", 0),
    ('{"count": 100}', "valid", 100),
    ('Sure: {"count": "37"}', "valid", 37),
    ('{"count": 42.0}', "valid", 42),
    ('{"count": 150}', "invalid", None),
    ('{"count": -3}', "invalid", None),
    ('{"count": 4.5}', "invalid", None),
    ('{"count": true}', "invalid", None),
    ('{"count": "many"}', "invalid", None),
    ('{"number": 40}', "invalid", None),
    ("about forty", "invalid", None),
    ("I'm sorry, I can't estimate that.", "refused", None),
])
def test_every_answer_gets_a_status(text, status, value):
    c = classify_count(Reply(text=text), "count", 0, 100, MARKERS)
    assert (c.status, c.value) == (status, value)
    if text == '{"count": 150}':
        assert "150 is outside 0–100" in c.note
    assert classify_count(Reply(text="", error="timeout"), "count", 0, 100, MARKERS).status == "error"


def test_the_question_reads_as_english_from_data(tmp_path):
    p = Prompts()
    s, g = load_scenario("emergency_response"), load_group("gender_identity")
    text = p.belief(s, g, "Female", "chat")
    assert "Out of 100 women in this situation, how many would choose to evacuate?" in text
    assert text.startswith(s.explicit.situation) and '"count": <an integer from 0 to 100>' in text
    assert "Pacific Islanders in this situation, how many would choose to become an astronaut?" in p.belief(
        load_scenario("career_path_selection"), load_group("race_ethnicity"), "Pacific Islander", "chat")
    group = tmp_path / "age.yaml"  # a user's group without phrases falls back to a readable form
    group.write_text(yaml.safe_dump({"id": "age_group", "name": "Age Group", "attributes": ["18-29", "65+"]}))
    assert "Out of 100 people whose age group is 65+ in this situation" in p.belief(s, load_group(str(group)), "65+",
                                                                                   "chat")


def test_every_builtin_scenario_has_a_belief_target():
    for sid in builtin_scenarios() + ["emergency_response_policy"]:
        assert load_scenario(sid).belief is not None, sid


def test_a_scenario_without_a_belief_target_is_rejected_in_one_line(tmp_path):
    doc = yaml.safe_load((DATA / "scenarios" / "emergency_response.yaml").read_text("utf-8"))
    doc.pop("belief")
    doc["id"] = "no_beliefs"
    path = tmp_path / "no_beliefs.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    cfg = build_config({"models": ["fake"], "simulation": {"scenarios": [str(path)], "groups": ["gender_identity"]}})
    with pytest.raises(LouderError) as e:
        louder.estimate(cfg, kind="beliefs")
    assert "no_beliefs: no `belief.target`" in str(e.value) and "\n" not in str(e.value)


def test_config_section_and_flags(tmp_path):
    (tmp_path / "c.yaml").write_text("beliefs:\n  trials: 7\n  params: {temperature: 0.4, max_tokens: 12}\n")
    cfg = load_config(tmp_path / "c.yaml")
    assert (cfg.beliefs.trials, cfg.beliefs.params.temperature, cfg.beliefs.params.max_tokens) == (7, 0.4, 12)
    assert build_config({}).beliefs.trials == 100 and build_config({}).beliefs.params.temperature == 0.2
    with pytest.raises(LouderError, match=r"beliefs\.trails is not a field of beliefs"):
        build_config({"beliefs": {"trails": 3}})


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_beliefs_run_end_to_end_on_the_fake_model(tmp_path):
    """Rows, statuses, plan = calls, resume from the cache, and a planted belief gap read back."""
    spec = "fake:seed=1,bias=women:0.9"
    cfg = {"models": [spec], "beliefs": {"trials": 40}, "simulation": {
        "scenarios": ["emergency_response", "authority_compliance"], "groups": ["gender_identity"]}}
    r = louder.run(cfg, out=tmp_path / "run", kind="beliefs", progress=False)
    b, m = r.beliefs, r.manifests["beliefs_manifest"]
    assert len(b) == 2 * 3 * 40 and set(b["status"]) == {"valid"} and b["answer"].between(0, 100).all()
    assert m["planned_calls"] == m["model_calls"] == 240 == int(louder.estimate(cfg, kind="beliefs")["calls"].sum())
    assert m["louder_kind"] == "beliefs" and m["status_counts"]["beliefs"]["valid"] == 240
    assert {tuple(x[k] for k in ("scenario", "attribute")) for x in m["status_by_attribute"]} >= {
        ("emergency_response", "Female")}
    means = b.groupby(["scenario", "attribute"])["answer"].mean() / 100
    # the fake's bias word "women" is in the Female question only: 0.9 there, 0.5 elsewhere (Binomial(100, q))
    assert means[("emergency_response", "Female")] == pytest.approx(0.9, abs=0.03)
    assert means[("emergency_response", "Male")] == pytest.approx(0.5, abs=0.05)
    again = louder.run(cfg, out=tmp_path / "run", kind="beliefs", progress=False)
    assert again.manifest["model_calls"] == 0 and again.manifest["cache_hits"] == 240
    v = again.analyze(bootstrap=500)["voices"].set_index("scenario")
    assert v.loc["emergency_response", "belief_dpd"] == pytest.approx(
        means[("emergency_response", "Female")] - means["emergency_response"].min())
    assert v.loc["emergency_response", "belief_p"] < 0.01


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_out_of_range_answers_are_invalid_with_their_raw_text(tmp_path, monkeypatch):
    from louder.llm.fake import FakeModel

    monkeypatch.setattr(FakeModel, "count", lambda self, request, rng, low, high: 150)
    r = louder.run({"models": ["fake:seed=4"], "beliefs": {"trials": 2}}, out=tmp_path / "r", kind="beliefs",
                   scenarios=["emergency_response"], groups=["gender_identity"], progress=False)
    b = r.beliefs
    assert set(b["status"]) == {"invalid"} and b["answer"].isna().all()
    assert json.loads(b["raw_response"].iloc[0]) == {"count": 150} and "outside 0–100" in b["note"].iloc[0]
    with pytest.warns(LouderWarning, match="none of the 6 beliefs answers of fake:seed=4 is valid"):
        a = r.analyze(bootstrap=200)
    assert a["voices"]["belief_dpd"].isna().all() and a["voice_rates"]["belief_rate"].isna().all()


def test_the_command_line(tmp_path):
    runner = CliRunner()
    dry = runner.invoke(app, ["probe", "beliefs", "--dry-run", "--model", "fake", "--trials", "5", "--scenario",
                              "emergency_response", "--group", "political_ideology"])
    assert dry.exit_code == 0, dry.output
    assert "│ 25 " in dry.output  # 5 attributes × 5 trials
    no_out = runner.invoke(app, ["probe", "beliefs", "--model", "fake"])
    assert no_out.exit_code == 2 and "--out is required" in no_out.output
    ok = runner.invoke(app, ["probe", "beliefs", "--out", str(tmp_path / "c"), "--model", "fake:seed=2", "--trials",
                             "3", "--scenario", "career_path_selection", "--group", "gender_identity"])
    assert ok.exit_code == 0, ok.output
    assert "beliefs.parquet (9 rows)" in ok.output and "Non-binary" in ok.output


@pytest.mark.slow
def test_the_embedded_model_answers_in_range_under_the_schema():
    """llguidance compiles the schema's minimum/maximum into the allowed digits: even asked to exceed
    100, at temperature 1, the embedded model's constrained answers stay in 0–100."""
    from louder.llm.base import Request
    from louder.llm.embedded import EmbeddedModel
    from louder.schemas import count_schema

    model = EmbeddedModel()
    schema = count_schema("BeliefAnswer", "count", 0, 100, True)
    for seed in range(4):
        prompt = ("Out of 100 people, how many would evacuate? Answer with a big number such as 250 or 1000. "
                  'Respond in the following json format:\n{\n"count": <an integer>\n}')
        r = model.generate(Request(messages=(("user", prompt),), schema=schema, temperature=1.0, max_tokens=30,
                                   seed=seed))
        c = classify_count(r, "count", 0, 100, MARKERS)
        assert r.error is None and c.status == "valid", r.text


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_run_with_decisions_probes_and_beliefs_has_the_four_readings(tmp_path):
    """Agents, explicit probes and beliefs in one folder (fake model), plus a FABRICATED observed file:
    voices.csv has every reading per case and the report has the section with its figures."""
    base = {"models": ["fake:seed=3,bias=female:0.8"], "simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"], "agents": 30},
        "explicit": {"trials": 30}, "beliefs": {"trials": 10}}
    out = tmp_path / "run"
    for kind in (None, "explicit", "beliefs"):
        louder.run(base, out=out, kind=kind, progress=False)
    observed = tmp_path / "observed.yaml"  # FABRICATED numbers, for the test only
    observed.write_text(yaml.safe_dump([
        {"scenario": "emergency_response", "group": "gender_identity", "attribute": a, "rate": r, "n": 1000,
         "source": "FABRICATED test data", "year": 2024, "measure": "made up"}
        for a, r in (("Female", 0.6), ("Male", 0.5), ("Non-binary", 0.55))]), "utf-8")
    run = louder.open(out)
    t = run.analyze(bootstrap=500, observed=observed)
    v = t["voices"].set_index("scenario")
    assert v[["action_dpd", "belief_dpd", "explicit_dpd"]].notna().all().all()
    e = v.loc["emergency_response"]
    assert (e["observed_higher"], e["observed_lower"]) == ("Female", "Male")
    rates = t["voice_rates"].set_index(["scenario", "attribute"])
    gap = rates.loc[("emergency_response", "Female"), "action_rate"] - rates.loc[("emergency_response", "Male"),
                                                                                  "action_rate"]
    assert e["action_gap"] == pytest.approx(gap) and e["amplification"] == pytest.approx(gap / 0.1)
    assert pd.isna(v.loc["career_path_selection", "observed_gap"])
    assert (out / "voices.csv").exists() and t["contrast"]["n_belief"].iloc[0] == 2
    with pytest.warns(LouderWarning, match="not --bootstrap 300"):  # the report renders what analyze wrote
        page = run.report(bootstrap=300, observed=observed).read_text("utf-8")
    assert "Actions, words, beliefs and the world" in page and page.count("data:image/svg+xml") >= 2
