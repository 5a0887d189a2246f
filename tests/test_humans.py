"""A human study in a run (issue 34): the file's checks, the paired agents (planned, accounted for,
resumed), anchoring.csv end to end on the fake model — the issue's "Done when" — and the pairing of
anchoring() on tables without a run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cache_count import cached_replies  # tests/cache_count.py (never `from tests.…`: ppi-python owns `tests`)
from typer.testing import CliRunner

import louder
from louder.analysis.stats.anchoring import COLUMNS, anchoring
from louder.config import load_config
from louder.errors import LouderError

TRUTH = {"Male": 0.55, "Female": 0.80, "Non-binary": 0.65}  # the synthetic humans: DPD 0.25
ONE = dict(scenarios=["emergency_response"], groups=["gender_identity"])


def synthetic(path, seed: int, n: int = 80, truth=TRUTH, weights: bool = False):
    """Synthetic respondents: n per attribute, each choosing Evacuate with the attribute's true rate."""
    rng = np.random.default_rng(seed)
    rows = [dict(respondent=f"s{seed}-{a}-{i}", scenario="emergency_response", gender_identity=a,
                 decision="Evacuate" if rng.random() < t else "Stay")
            for a, t in truth.items() for i in range(n)]
    df = pd.DataFrame(rows)
    if weights:
        df["weight"] = rng.choice([0.5, 1.0, 2.0], len(df))
    df.to_csv(path, index=False)
    return path


def config(humans, model="fake:seed=1,bias=female:0.9", agents=3, **sim):
    return {"models": [model], "simulation": {**ONE, "agents": agents, "humans": str(humans), **sim}}


# --- the file ---------------------------------------------------------------------------------------

BAD = [
    ("respondent,scenario,gender_identity,decision\nr1,emergency_respons,Female,Evacuate\n",
     "row 1 (line 2), column scenario: 'emergency_respons' is not a scenario of the run; did you mean "
     "emergency_response?"),
    ("respondent,scenario,gender,decision\nr1,emergency_response,Female,Evacuate\n",
     "column 'gender' is not a group of the run; did you mean gender_identity?"),
    ("respondent,scenario,gender_identity,decision\nr1,emergency_response,Female,Evacuate\n"
     "r2,emergency_response,female,Stay\n",
     "row 2 (line 3), column gender_identity: 'female' is not an attribute of group gender_identity; did you mean "
     "Female?"),
    ("# a note\nrespondent,scenario,gender_identity,decision\nr1,emergency_response,Male,evacuate\n",
     "row 1 (line 3), column decision: 'evacuate' is not a choice of emergency_response; did you mean Evacuate?"),
    ("respondent,scenario,gender_identity,decision,weight\nr1,emergency_response,Male,Stay,-1\n",
     "row 1 (line 2), column weight: '-1': a weight must be a positive number"),
    ("respondent,scenario,gender_identity,decision\nr1,emergency_response,Male,Stay\nr1,emergency_response,Male,Stay\n",
     "row 2 (line 3), column respondent: 'r1' answers scenario emergency_response twice"),
    ("respondent,scenario,gender_identity\nr1,emergency_response,Male\n", "no column 'decision'"),
    ("respondent,scenario,gender_identity,decision\nr1,emergency_response,,Stay\n",
     "row 1 (line 2), column gender_identity: empty; a respondent needs an attribute in at least one group"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_a_bad_file_is_one_line_naming_its_row_and_column(tmp_path, text, message):
    path = tmp_path / "humans.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LouderError) as e:
        load_config(config(path))
    line = str(e.value)
    assert "\n" not in line and message in line and "simulation.humans" in line, line


def test_the_cli_refuses_a_bad_file_in_one_line_and_humans_outside_the_seed_simulation(tmp_path):
    from louder.cli import app

    bad = tmp_path / "bad.csv"
    bad.write_text("respondent,scenario,gender_identity,decision\nr1,emergency_response,Femme,Evacuate\n")
    r = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "o"), "-m", "fake", "--scenario", "emergency_response",
                                 "--group", "gender_identity", "--humans", str(bad)])
    assert r.exit_code != 0 and "column gender_identity: 'Femme' is not an attribute" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "o" / "cache.sqlite").exists()
    good = synthetic(tmp_path / "h.csv", 0, n=2)
    with pytest.raises(LouderError, match="simulation.humans: a human study pairs .* drop --population"):
        load_config({**config(good), "population": "us_adults"})
    with pytest.raises(LouderError, match="no such file"):
        load_config(config(tmp_path / "missing.csv"))


# --- the run ------------------------------------------------------------------------------------------

def test_paired_agents_are_planned_accounted_and_resumed_and_leave_the_usual_agents_alone(tmp_path):
    humans = synthetic(tmp_path / "h.csv", 1, n=4, weights=True)
    cfg = config(humans, conditions=["contextualized", "no_persona"])
    plain = louder.run({**cfg, "simulation": {**cfg["simulation"], "humans": None}}, tmp_path / "plain", progress=False)
    run = louder.run(cfg, tmp_path / "run", progress=False)
    d = run.decisions
    paired, usual = d[d["respondent"].notna()], d[d["respondent"].isna()]
    assert len(usual) == 2 * 3 * 3 and len(paired) == 2 * 12  # per condition: 3 × 3 agents, 12 respondents
    # the usual agents are the run without humans, row for row
    cols = [c for c in plain.decisions.columns if c not in ("run_id", "latency_s")]
    pd.testing.assert_frame_equal(usual[cols].reset_index(drop=True), plain.decisions[cols])
    h = pd.read_parquet(tmp_path / "run" / "humans.parquet")
    assert set(paired["respondent"]) == set(h["respondent"]) and len(h) == 12
    merged = paired.merge(h, on="respondent", suffixes=("", "_h"))
    assert (merged["attribute"] == merged["attribute_h"]).all()  # each agent has its respondent's attribute
    assert (paired["agent_id"] > 9).all() and run.personas["respondent"].notna().sum() == 24
    m = run.manifest
    # a persona (no_persona: a name) and a decision per paired agent, beside the usual agents' calls
    assert m["planned_calls"] == plain.manifest["planned_calls"] + 2 * 12 * 2 == 2 * 21 * 2
    statuses = ("valid", "invalid", "refused", "error")
    accounted = sum(sum(r[s] for s in statuses) for r in m["paired_status_by_attribute"])
    assert accounted == 24
    # resume: the same run asks nothing again (every answer cached, the tables the same)
    before = cached_replies(tmp_path / "run" / "cache.sqlite")
    again = louder.run(cfg, tmp_path / "run", progress=False)
    assert cached_replies(tmp_path / "run" / "cache.sqlite") == before == m["planned_calls"]
    pd.testing.assert_frame_equal(again.decisions.drop(columns="latency_s"), d.drop(columns="latency_s"))
    # the file's rows in another order: the same agents, nothing asked again
    pd.read_csv(humans).sample(frac=1, random_state=1).to_csv(humans, index=False)
    louder.run(cfg, tmp_path / "run", progress=False)
    assert cached_replies(tmp_path / "run" / "cache.sqlite") == before
    t = run.analyze(bootstrap=200)
    a = t["anchoring"]
    assert list(a.columns) == COLUMNS and len(a) == 2 * 3
    assert (a[["paired_valid", "paired_invalid", "paired_refused", "paired_error"]].sum(axis=1) == 4).all()
    for kind in ("humans", "agents", "ppi"):  # every interval contains its estimate (rates of 0 and 1 too)
        assert ((a[f"ci_low_{kind}"] <= a[f"rate_{kind}"]) & (a[f"rate_{kind}"] <= a[f"ci_high_{kind}"])).all(), kind
    # every other table reads the usual agents: the cases are the run's without humans
    pd.testing.assert_frame_equal(t["cases"], plain.analyze(bootstrap=200)["cases"])
    report = run.report().read_text("utf-8")
    assert "Anchoring to a human study" in report


# --- the "Done when" -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def eight_studies(tmp_path_factory):
    """Eight studies: synthetic humans (80 per attribute at TRUTH) and the fake model with a female bias,
    each analysed; and the same with the fake model without bias."""
    base = tmp_path_factory.mktemp("anchored")
    out = {}
    for bias in ("bias=female:0.9", None):
        tables = []
        for seed in range(8):
            humans = synthetic(base / f"h{seed}.csv", 100 + seed)
            model = f"fake:seed={seed}" + (f",{bias}" if bias else "")
            run = louder.run(config(humans, model=model, agents=60), base / f"{bias}-{seed}", progress=False)
            # anchoring.csv as analyze makes it (the test above goes through analyze; here only its table)
            study = pd.read_parquet(base / f"{bias}-{seed}" / "humans.parquet")
            tables.append(anchoring(run.decisions, study, B=1000, seed=seed))
        out[bias] = tables
    return out


def test_done_when_ppi_covers_the_truth_and_the_dpd_over_eight_seeds(eight_studies):
    covered, dpd_covered = 0, 0
    for t in eight_studies["bias=female:0.9"]:
        truth = t["attribute"].map(TRUTH)
        covered += int(((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).sum())
        dpd_covered += int(t["dpd_ci_low_ppi"].iloc[0] <= 0.25 <= t["dpd_ci_high_ppi"].iloc[0])
    assert covered >= 21 and dpd_covered >= 7, (covered, dpd_covered)
    # the agents are biased (Female 0.9, the others 0.5: DPD 0.4): the agents-only rates miss the truth, PPI does not
    t = pd.concat(eight_studies["bias=female:0.9"], ignore_index=True)
    assert abs(t.loc[t["attribute"] == "Female", "rate_agents"].mean() - 0.9) < 0.03
    assert abs(t["dpd_agents"].mean() - 0.4) < 0.05 and abs(t["dpd_ppi"].mean() - 0.25) < 0.05
    assert t["ratio"].mean() > 1.2  # the model exaggerates the people's gap (0.4 ÷ 0.25 = 1.6)


def test_agents_that_know_nothing_never_make_it_wrong_only_no_narrower(eight_studies):
    for bias, tables in eight_studies.items():
        t = pd.concat(tables, ignore_index=True)
        truth = t["attribute"].map(TRUTH)
        assert ((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).mean() >= 21 / 24, bias
        width = (t["ci_high_ppi"] - t["ci_low_ppi"]) / (t["ci_high_humans"] - t["ci_low_humans"])
        # a persona agent knows only the attribute: nothing to learn about the respondent, λ near 0
        assert width.median() > 0.95 and t["lam"].median() < 0.2, (bias, width.median(), t["lam"].median())
        for _, r in t.iterrows():
            assert r["ci_low_ppi"] <= r["rate_ppi"] <= r["ci_high_ppi"]


# --- anchoring() on tables: pairing, imputation, informative agents -----------------------------------------

def _tables(seed, informative: float, n=80, agents=400, fail=0):
    """decisions (usual and paired agents) and humans of one case; the paired agent copies its
    respondent's choice with probability ``informative``, else draws at the agents' rate 0.6; the
    first ``fail`` paired agents of each attribute answer with an error."""
    rng = np.random.default_rng(seed)
    rows, humans = [], []
    case = dict(model="fake", condition="contextualized", scenario="emergency_response", group="gender_identity")
    for a, t in TRUTH.items():
        y = rng.random(n) < t
        copy = rng.random(n) < informative
        yh = np.where(copy, y, rng.random(n) < t)
        for i in range(n):
            humans.append(dict(respondent=f"{a}{i}", scenario=case["scenario"], group=case["group"], attribute=a,
                               decision="Evacuate" if y[i] else "Stay", target=bool(y[i]), weight=1.0))
            rows.append(dict(case, attribute=a, respondent=f"{a}{i}", status="error" if i < fail else "valid",
                             target=None if i < fail else bool(yh[i]), p_target=None))
        for v in rng.random(agents) < t:
            rows.append(dict(case, attribute=a, respondent=None, status="valid", target=bool(v), p_target=None))
    d = pd.DataFrame(rows).astype({"target": "boolean", "p_target": "Float64", "respondent": "string"})
    return d, pd.DataFrame(humans)


def test_informative_agents_narrow_the_interval_against_humans_only():
    cover, width = 0, []
    for seed in range(8):
        t = anchoring(*_tables(seed, informative=0.8), B=500, seed=seed)
        truth = t["attribute"].map(TRUTH)
        cover += int(((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).sum())
        width += list((t["ci_high_ppi"] - t["ci_low_ppi"]) / (t["ci_high_humans"] - t["ci_low_humans"]))
        assert (t["ess_gained"] > 0).all() and (t["agreement"] > 0.8).all()
    assert cover >= 21 and np.median(width) < 0.8, (cover, np.median(width))


def test_paired_agents_without_an_answer_are_counted_and_predict_the_agents_mean():
    d, h = _tables(3, informative=0.8, fail=5)
    t = anchoring(d, h, B=300)
    assert (t["paired_error"] == 5).all() and (t["paired_valid"] == 75).all() and (t["n_humans"] == 80).all()
    # the imputed respondents stay in the human sample: the humans' rate is the file's
    rates = h.groupby("attribute")["target"].mean()
    assert np.allclose(t.set_index("attribute")["rate_humans"], rates.reindex(t["attribute"]))
    # without any usual agents' answers nothing is estimated, and the counts stay
    lone = anchoring(d[d["respondent"].notna()], h, B=300)
    assert lone["rate_ppi"].isna().all() and (lone["n_humans"] == 80).all()
