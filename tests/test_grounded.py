"""Grounded agents (issue 44): the fake model reads a profile (``shift``), a study file's profile
columns (``--ground``) and unlabelled profiles (``--unlabelled``) checked before any call, grounded agents
in a run (planned, accounted for, resumed, beside the attribute-only ones), and the issue's "Done when"
for the anchoring that narrows — coverage and width over 20 seeds on simulated tables of the synthetic
study (tests/grounded_study.py), then end to end on the fake model."""

from __future__ import annotations

import json
from pathlib import Path

import grounded_study as G  # tests/grounded_study.py: the synthetic study and its agents
import numpy as np
import pandas as pd
import pytest
from cache_count import cached_replies
from typer.testing import CliRunner

import louder
from louder.analysis.stats.anchoring import COLUMNS, ppi_table
from louder.config import load_config
from louder.errors import LouderError
from louder.llm.base import Request
from louder.llm.fake import FakeModel, parse_all
from louder.schemas import choice_schema

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = choice_schema("Decision", "decision", ("Evacuate", "Stay"), True, rationale=True)
ONE = dict(scenarios=["emergency_response"], groups=["gender_identity"])


# --- the fake model reads a profile -------------------------------------------------------------------------

def _p(spec: str, prompt: str, options=("Evacuate", "Stay")) -> float:
    return FakeModel(spec).probabilities(Request(messages=(("user", prompt),)), list(options))[0]


def test_shift_moves_the_favoured_option_and_adds_to_a_bias():
    reads = "pick=Evacuate,bias=female:0.7,shift=evacuated:0.2,shift=stayed:-0.2"
    assert _p(reads, "A woman, Female; last flood: evacuated.") == pytest.approx(0.9)
    assert _p(reads, "Female; last flood: stayed.") == pytest.approx(0.5)
    assert _p(reads, "Male; last flood: evacuated.") == pytest.approx(0.7)
    assert _p(reads, "Male, nothing known.") == pytest.approx(0.5)
    # shifts add up and are clipped; the others keep their proportions; pick wherever it is listed
    assert _p("shift=a:0.4,shift=b:0.4", "a b") == 1.0 and _p("shift=a:-0.9", "a") == 0.0
    probs = FakeModel("pick=Stay,shift=a:0.3").probabilities(Request(messages=(("user", "a"),)), ["Go", "Stay", "Wait"])
    rest = (1 - (1 / 3 + 0.3)) / 2  # the two others had 1/3 each: they share what is left equally
    assert probs == pytest.approx([rest, 1 / 3 + 0.3, rest])
    assert sum(probs) == pytest.approx(1)
    assert parse_all("shift=evacuated:-0.45")["shift"] == {"evacuated": -0.45}
    for bad in ("shift=x:2", "shift=x", "shift=:0.1"):
        with pytest.raises(LouderError, match="shift=WORD:D"):
            parse_all(bad)


def test_a_written_persona_repeats_the_shift_words_so_the_decision_reads_them():
    model = FakeModel("seed=1,pick=Evacuate,shift=evacuated:0.45")
    persona_schema = __import__("louder.personas", fromlist=["PersonaOut"]).PersonaOut
    reply = model.generate(Request(messages=(("user", "a person with this profile: last flood: evacuated"),),
                                   schema=persona_schema))
    persona = json.loads(reply.text)["persona"]
    assert "evacuated" in persona
    decisions = [json.loads(model.generate(Request(messages=(("user", f"You are X. {persona}"),), schema=SCHEMA,
                                                   replicate=str(i))).text)["decision"] for i in range(400)]
    assert 0.91 < decisions.count("Evacuate") / 400 < 0.99


# --- the study file's profile columns and the unlabelled profiles --------------------------------------------

HEAD = "respondent,scenario,gender_identity,last_flood,household,decision\n"
GOOD = "r1,emergency_response,Female,evacuated,alone,Evacuate\nr2,emergency_response,Male,stayed,family,Stay\n"
BAD = [  # (study, ground, unlabelled, the one line)
    (HEAD + GOOD, "last_flod", None, "header (line 1), column last_flod: no such column, but simulation.ground "
                                     "(--ground) names it; did you mean last_flood?"),
    (HEAD + GOOD, "last_flood,decision", None, "header (line 1), column decision: simulation.ground (--ground) names "
                                               "it, but it is the study's own"),
    (HEAD + GOOD + "r3,emergency_response,Femme,stayed,alone,Stay\n", "last_flood", None,
     "row 3 (line 4), column gender_identity: 'Femme' is not an attribute of group gender_identity"),
    (HEAD + GOOD + "r3,emergency_response,Male,stayed,alone,\n", "last_flood", None,
     "row 3 (line 4), column decision: empty: respondent 'r3' gave no answer"),
    (HEAD + GOOD + "r2,emergency_response,Male,stayed,family,Stay\n", "last_flood", None,
     "row 3 (line 4), column respondent: 'r2' answers scenario emergency_response twice"),
    (HEAD + GOOD.replace("evacuated", "").replace("stayed", ""), "last_flood,household", None,
     "rows 1–2 (lines 2–3), column last_flood: empty in every row"),
    (HEAD + GOOD, "all", "respondent,gender_identity,last_flood\nu1,Female,stayed\n",
     "header (line 1), column household: no such column, but the study's agents are grounded on it"),
    (HEAD + GOOD, "last_flood", "respondent,gender_identity,last_flood\nu1,Female,stayed\nu1,Male,stayed\n",
     "row 2 (line 3), column respondent: 'u1' is listed twice"),
    (HEAD + GOOD, "last_flood", "respondent,gender_identity,last_flood\nu1,female,stayed\n",
     "row 1 (line 2), column gender_identity: 'female' is not an attribute of group gender_identity"),
    (HEAD + GOOD, "last_flood", "respondent,gender_identity,last_flood\nu1,Female,\n",
     "rows 1–1 (lines 2–2), column last_flood: empty in every row"),
]


def _config(study: Path, ground, unlabelled=None, model="fake", agents=2):
    sim = {**ONE, "agents": agents, "humans": str(study), "ground": ground}
    if unlabelled is not None:
        sim["unlabelled"] = str(unlabelled)
    return {"models": [model], "simulation": sim}


@pytest.mark.parametrize("study,ground,unlabelled,message", BAD)
def test_a_bad_study_or_profile_file_is_one_line_naming_its_row_and_column_before_any_call(tmp_path, study, ground,
                                                                                          unlabelled, message):
    from louder.cli import app

    (tmp_path / "h.csv").write_text(study, encoding="utf-8")
    args = ["run", "--out", str(tmp_path / "o"), "-m", "fake", "--scenario", "emergency_response", "--group",
            "gender_identity", "--humans", str(tmp_path / "h.csv"), "--ground", ground]
    if unlabelled is not None:
        (tmp_path / "u.csv").write_text(unlabelled, encoding="utf-8")
        args += ["--unlabelled", str(tmp_path / "u.csv")]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert r.exit_code != 0 and "Traceback" not in r.output, r.output
    line = " ".join(r.output.split())
    assert message in line, line
    assert not (tmp_path / "o" / "cache.sqlite").exists()  # refused before any call
    with pytest.raises(LouderError) as e:
        load_config(_config(tmp_path / "h.csv", ground, tmp_path / "u.csv" if unlabelled else None))
    assert "\n" not in str(e.value) and message in str(e.value)


def test_profile_columns_the_ground_flag_and_its_companions(tmp_path):
    study = tmp_path / "h.csv"
    study.write_text(HEAD + GOOD, encoding="utf-8")
    # a file with profile columns runs without --ground: its respondents get attribute-only agents
    assert load_config(_config(study, None)).simulation.ground is None
    cfg = load_config(_config(study, "last_flood, household"))
    assert cfg.simulation.ground == ["last_flood", "household"]
    from louder.humans import description
    from louder.humans import study as read
    from louder.prompts import Prompts

    s = read(study, ["emergency_response"], ["gender_identity"], ["all"])
    assert s.ground == ("last_flood", "household")
    assert description(s.profiles["r1"], Prompts()) == ("a person with this profile: gender identity: Female; "
                                                        "last flood: evacuated; household: alone")
    # one respondent, two scenarios, two profiles
    two = tmp_path / "two.csv"
    two.write_text(HEAD + GOOD + "r1,career_path_selection,Female,stayed,alone,Astronaut\n", encoding="utf-8")
    with pytest.raises(LouderError, match="row 3 .*column last_flood: respondent 'r1' has another profile in row 1"):
        load_config({"models": ["fake"], "simulation": {"scenarios": ["emergency_response", "career_path_selection"],
                                                        "groups": ["gender_identity"], "humans": str(two),
                                                        "ground": ["last_flood"]}})
    # a column that looks like a misspelt group is refused unless --ground names it
    typo = tmp_path / "typo.csv"
    typo.write_text("respondent,scenario,gender_identity,gender,decision\nr1,emergency_response,Female,f,Stay\n")
    with pytest.raises(LouderError, match="column 'gender' is not a group of the run; did you mean gender_identity"):
        load_config(_config(typo, None))
    assert load_config(_config(typo, "gender")).simulation.ground == ["gender"]
    for sim, match in (({"ground": ["all"]}, "simulation: ground: grounded agents stand for the respondents"),
                       ({"humans": str(study), "unlabelled": str(study)}, "name the profile columns"),
                       ({"humans": str(study), "ground": ["all", "household"]}, "give `all` alone"),
                       ({"humans": str(study), "ground": ["all"], "signal": ["stated", "names"]},
                        "drop --signal names or --ground")):
        with pytest.raises(LouderError, match=match):
            load_config({"models": ["fake"], "simulation": {**ONE, **sim}})


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    """A study of 30 respondents and 60 unlabelled profiles per attribute (the synthetic process)."""
    base = tmp_path_factory.mktemp("grounded")
    h = G.people(7, 30)[["respondent", "scenario", "gender_identity", "last_flood", "household", "decision",
                         "retest"]]
    h.to_csv(base / "h.csv", index=False)
    G.profiles(8, 60, prefix="u")[["respondent", "gender_identity", "last_flood", "household"]].to_csv(
        base / "u.csv", index=False)
    return base


def test_grounded_agents_are_planned_accounted_resumed_and_leave_the_other_agents_alone(small_study, tmp_path):
    base = small_study
    plain = louder.run(_config(base / "h.csv", None, model=f"fake:seed=3,{G.READS}", agents=4), tmp_path / "plain",
                       progress=False)
    cfg = _config(base / "h.csv", "last_flood,household", base / "u.csv", model=f"fake:seed=3,{G.READS}", agents=4)
    run = louder.run(cfg, tmp_path / "run", progress=False)
    d, p = run.decisions, run.personas
    counts = d["grounding"].value_counts(dropna=False).to_dict()
    assert counts == {"unlabelled": 180, "attribute": 90, "grounded": 90, pd.NA: 12}
    # the usual agents and the attribute-only paired agents are the run without grounding, row for row
    cols = [c for c in plain.decisions.columns if c not in ("run_id", "latency_s", "agent_id")]
    same = d[d["grounding"].isna() | (d["grounding"] == "attribute")].drop(columns="grounding")
    pd.testing.assert_frame_equal(same[cols].reset_index(drop=True), plain.decisions[cols])
    # a grounded persona is written from the profile; its decision reads it (the fake model's shift)
    g = p[p["grounding"] == "grounded"].merge(pd.read_csv(base / "h.csv"), on="respondent")
    assert all(f"last flood: {f}; household: {h}" in prompt for f, h, prompt in
               zip(g["last_flood"], g["household"], g["prompt"]))
    assert all(f in persona for f, persona in zip(g["last_flood"], g["persona"]))
    dg = d[d["grounding"] == "grounded"].merge(pd.read_csv(base / "h.csv"), on="respondent")
    rates = dg.groupby("last_flood")["target"].mean()
    assert rates["evacuated"] > 0.8 and rates["stayed"] < 0.2
    m = run.manifest
    assert m["planned_calls"] == 2 * len(d) and cached_replies(tmp_path / "run" / "cache.sqlite") == 2 * len(d)
    statuses = ("valid", "invalid", "refused", "error")
    accounted = sum(sum(r[s] for s in statuses) for r in m["paired_status_by_attribute"])
    assert accounted == 360 and {r["grounding"] for r in m["paired_status_by_attribute"]} == {
        "attribute", "grounded", "unlabelled"}
    u = pd.read_parquet(tmp_path / "run" / "unlabelled.parquet")
    assert len(u) == 180 and set(u["respondent"]) == set(d.loc[d["grounding"] == "unlabelled", "respondent"])
    # resume: nothing asked again; a dry run counts every call
    again = louder.run(cfg, tmp_path / "run", progress=False)
    assert cached_replies(tmp_path / "run" / "cache.sqlite") == m["planned_calls"]
    pd.testing.assert_frame_equal(again.decisions.drop(columns="latency_s"), d.drop(columns="latency_s"))
    from louder.cli import app

    r = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "dry"), "-m", f"fake:seed=3,{G.READS}", "--agents",
                                 "4", "--scenario", "emergency_response", "--group", "gender_identity", "--humans",
                                 str(base / "h.csv"), "--ground", "last_flood,household", "--unlabelled",
                                 str(base / "u.csv"), "--dry-run"], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and f"{m['planned_calls']:,}" in r.output, r.output
    # analysed: both kinds in anchoring.csv and fidelity.csv; the report has both sections
    t = run.analyze(bootstrap=200)
    a, f = t["anchoring"], t["fidelity"]
    assert list(a.columns) == COLUMNS and list(a["agents"]) == ["attribute"] * 3 + ["grounded"] * 3
    assert (a[a["agents"] == "grounded"]["n_agents"] == 60).all() and (a["unlabelled_valid"] > 0).all()
    assert set(f["agents"]) == {"attribute", "grounded"} and set(f["subgroup"]) == {"Male", "Female", "Non-binary",
                                                                                    "all"}
    assert (f["n_retest"] > 0).all()
    report = run.report().read_text("utf-8")
    assert "Fidelity to a human study" in report and "grounded agents" in report


def test_without_unlabelled_profiles_the_grounded_rows_have_no_estimate_and_say_why(small_study, tmp_path):
    run = louder.run(_config(small_study / "h.csv", "last_flood", model=f"fake:seed=3,{G.READS}", agents=3),
                     tmp_path / "run", progress=False)
    with pytest.warns(Warning, match="grounded agents have no unlabelled set"):
        a = run.analyze(bootstrap=100)["anchoring"]
    g = a[a["agents"] == "grounded"]
    assert len(g) == 3 and g["rate_ppi"].isna().all() and (g["n_humans"] == 30).all()


# --- the "Done when": anchoring that narrows ---------------------------------------------------------

SEEDS = range(20)
DPD = max(G.TRUTH.values()) - min(G.TRUTH.values())


def _anchored(model: str, n: int = 200, N: int = 2000) -> list[pd.DataFrame]:
    return [ppi_table(*G.ppi_frames(s, n, N, model), B=500, seed=s) for s in SEEDS]


def _covered(tables) -> tuple[pd.Series, int]:
    t = pd.concat(tables, ignore_index=True)
    truth = t["attribute"].map(G.TRUTH)
    per_attribute = ((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).groupby(t["attribute"]).sum()
    dpd = sum(int(x["dpd_ci_low_ppi"].iloc[0] <= DPD <= x["dpd_ci_high_ppi"].iloc[0]) for x in tables)
    return per_attribute, dpd


@pytest.fixture(scope="module")
def reads():
    return _anchored("reads")


def test_done_when_agents_that_read_the_profile_cover_the_truth_and_narrow_the_interval(reads):
    per_attribute, dpd = _covered(reads)
    assert (per_attribute >= 18).all() and dpd >= 18, (per_attribute.to_dict(), dpd)
    t = pd.concat(reads, ignore_index=True)
    cases = t.drop_duplicates("dpd_ppi")
    # narrower than humans-only by at least 25 % on average, rates and DPD; worth more than 1.5 people each
    assert t["width_ratio"].mean() <= 0.75 and cases["dpd_width_ratio"].mean() <= 0.75, (
        t["width_ratio"].mean(), cases["dpd_width_ratio"].mean())
    assert t["worth"].mean() > 1.5 and cases["dpd_worth"].mean() > 1.5
    assert (t["lam"] > 0.5).all()
    for kind in ("humans", "ppi"):  # every interval contains its estimate
        assert ((t[f"ci_low_{kind}"] <= t[f"rate_{kind}"]) & (t[f"rate_{kind}"] <= t[f"ci_high_{kind}"])).all()
        assert ((cases[f"dpd_ci_low_{kind}"] <= cases[f"dpd_{kind}"])
                & (cases[f"dpd_{kind}"] <= cases[f"dpd_ci_high_{kind}"])).all()
    assert np.allclose(t["worth"], t["n_eff_ppi"] / t["n_humans"])  # (no weights: the Kish size is n)


@pytest.mark.parametrize("model", ["ignores", "wrong", "eager"])
def test_done_when_agents_that_ignore_the_profile_or_read_it_wrong_keep_coverage(model):
    tables = _anchored(model)
    per_attribute, dpd = _covered(tables)
    assert (per_attribute >= 18).all() and dpd >= 18, (model, per_attribute.to_dict(), dpd)
    t = pd.concat(tables, ignore_index=True)
    if model == "eager":  # biased but informative: still narrower (the rectifier removes the bias)
        assert t["width_ratio"].mean() < 0.9
    else:  # nothing to learn within the attribute (or only the wrong way round): the width does not shrink
        assert t["width_ratio"].mean() > 0.97 and t["lam"].median() < 0.1, (model, t["width_ratio"].mean())
        assert t.drop_duplicates("dpd_ppi")["dpd_width_ratio"].mean() > 0.97


def test_survey_weights_are_honoured():
    """Weighted respondents and unlabelled profiles: the estimates are ppi-python's with the weights, and a
    respondent's weight moves the humans-only rate."""
    from ppi_py import ppi_mean_pointestimate

    h, a = G.ppi_frames(3, 200, 1000, "reads")
    rng = np.random.default_rng(3)
    h["weight"], a["weight"] = rng.lognormal(0, 0.5, len(h)), rng.lognormal(0, 0.5, len(a))
    t = ppi_table(h, a, B=200).set_index("attribute")
    for attr, g in h.groupby("attribute"):
        u = a[a["attribute"] == attr]
        want = float(np.squeeze(ppi_mean_pointestimate(g["target"].to_numpy(), g["prediction"].to_numpy(),
                                                       u["prediction"].to_numpy(), w=g["weight"].to_numpy(),
                                                       w_unlabeled=u["weight"].to_numpy())))
        assert t.loc[attr, "rate_ppi"] == pytest.approx(want)
        assert t.loc[attr, "rate_humans"] == pytest.approx(np.average(g["target"], weights=g["weight"]))
        kish = g["weight"].sum() ** 2 / (g["weight"] ** 2).sum()
        assert t.loc[attr, "worth"] == pytest.approx(t.loc[attr, "n_eff_ppi"] / kish)


# --- end to end on the fake model ---------------------------------------------------------------------------

def test_end_to_end_the_example_study_narrows_with_grounded_agents_only(tmp_path):
    """The example files of the how-to, the fake model reading the profile: the grounded agents are worth
    more than one respondent each, the attribute-only ones are not; fidelity reads their gap as kept or
    undecided for the grounded agents and flattened for the attribute-only ones."""
    cfg = {"models": [f"fake:seed=1,{G.READS}"],
           "simulation": {**ONE, "agents": 20, "humans": str(ROOT / "examples" / "humans-grounded.csv"),
                          "ground": ["last_flood", "household"],
                          "unlabelled": str(ROOT / "examples" / "profiles-grounded.csv")}}
    run = louder.run(cfg, tmp_path / "run", progress=False)
    t = run.analyze(bootstrap=500)
    a = t["anchoring"].set_index("agents")
    assert (a.loc["grounded", "worth"] > 1.5).all() and (a.loc["grounded", "width_ratio"] < 0.85).all()
    assert (a.loc["attribute", "worth"] < 1.1).all()
    truth = a.loc["grounded", "attribute"].map(G.TRUTH)
    assert ((a.loc["grounded", "ci_low_ppi"] <= truth) & (truth <= a.loc["grounded", "ci_high_ppi"])).all()
    f = t["fidelity"]
    verdict = f[f["subgroup"] == "all"].set_index("agents")["verdict"]
    assert verdict["attribute"] == "flattened" and verdict["grounded"] in ("faithful", "underpowered")
    g = f[(f["agents"] == "grounded") & (f["subgroup"] == "all")].iloc[0]
    assert g["agreement"] > 0.85 and 0.9 < g["normalised"] < 1.1
