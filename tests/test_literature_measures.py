"""Issue 37 end to end: discrim-eval's discrimination score, parity given a legitimate factor and the
persona audit, each a measure of the registry — run on the fake model with a planted effect of known
size, analysed, and read back from ``analyze``, the report and ``Run.table``; on runs without an
effect over ten seeds, at most one flags anything. (The statistics' own tests, on simulated tables:
test_discrimination.py, test_conditional.py, test_persona_audit.py.)"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from pydantic import BaseModel
from scipy.special import logit
from typer.testing import CliRunner

import louder
from louder.analysis.engine import registry
from louder.analysis.engine.inputs import load
from louder.analysis.engine.run import settings_of
from louder.cli import app
from louder.llm.base import Request
from louder.llm.fake import FakeModel

pytestmark = pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the runs lack: expected
runner = CliRunner()
TWO = {"scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"]}
FEMALE = "C(attribute, Treatment('Male'))[T.Female]"


def _run(path, model, agents=20, score=False, **simulation):
    sim = {**TWO, "agents": agents, **simulation, **({"decision_mode": "score"} if score else {})}
    louder.run({"models": [model], "simulation": sim}, out=path, progress=False)
    return path


def _built(run, measure, **settings):
    """The tables of one measure (and those it reads) on the run folder's data, as `analyze` builds them."""
    a = load(run, settings_of(500, **settings))
    for m in registry.measures():
        if a.applies(m) and (m.name == measure or m.name in registry.runs_after(registry.get(measure))):
            a.tables.update(m.build(a.context(m, building=True)))
    return a.tables


def _analyze(run, *flags):
    r = runner.invoke(app, ["analyze", str(run), "-B", "300", *map(str, flags)], env={"COLUMNS": "160"})
    assert r.exit_code == 0, (r.output, r.exception)
    return r.output


# --- the fake model plants what the measures read ------------------------------------------------------

def test_fake_model_options_plant_noise_tone_and_sameness():
    noisy = FakeModel("seed=1,bias=female:0.8,noise=0.5")
    p = [json.loads(noisy.score(Request(prompt=f"female {i}"), "I choose", ["a", "b"]).text)["logprobs"]["a"]
         for i in range(400)]
    z = logit(np.exp(p))
    assert abs(z.mean() - logit(0.8)) < 0.15 and abs(z.std() - 0.5 * np.sqrt(2)) < 0.1  # logit p + N(0, 2·SD²)
    again = json.loads(noisy.score(Request(prompt="female 0"), "I choose", ["a", "b"]).text)["logprobs"]["a"]
    assert again == p[0]  # seeded per request
    plain = json.loads(FakeModel("seed=1,bias=female:0.8").score(Request(prompt="female"), "x", ["a", "b"]).text)
    assert plain["logprobs"]["a"] == pytest.approx(np.log(0.8))  # no noise unless asked
    class Persona(BaseModel):
        persona: str

    sad = FakeModel("seed=1,persona_tone=female:negative,persona_same=male")

    def persona(model, prompt):
        return json.loads(model.generate(Request(prompt=prompt, schema=Persona)).text)["persona"]

    from louder.analysis.stats.persona_audit import sentiment
    texts = [persona(sad, f"Write a persona of a female person, number {i}.") for i in range(30)]
    assert len(set(texts)) > 20 and max(map(sentiment, texts)) < -0.5
    assert len({persona(sad, f"Write a persona of a male person, number {i}.") for i in range(10)}) == 1
    neutral = persona(sad, "Write a persona of a non-binary person.")
    assert neutral.endswith("likes maps and tea, works in town and decides at random.")  # the default persona
    from louder.errors import LouderError
    for bad in ("noise=-1", "persona_tone=female:angry", "persona_same="):
        with pytest.raises(LouderError, match="persona_tone=WORD:negative|positive"):
            FakeModel(bad)


# --- 1. discrimination.csv ------------------------------------------------------------------------------

def test_discrimination_score_mode_equals_mixedlm_on_the_fake_model(tmp_path):
    run = _run(tmp_path / "score", "fake:seed=1,bias=female:0.8,noise=0.5", score=True)
    out = _analyze(run)
    assert "Discrimination score (discrim-eval)" in out
    t = louder.open(run).table("discrimination")
    declared = registry.tables()["discrimination"].column_names
    assert list(t.columns) == [c for c in declared if c != "variant"]  # variant: runs with variants only
    t = t.set_index("attribute")
    d = pd.read_parquet(run / "decisions.parquet")
    v = d[d["status"] == "valid"].assign(y=lambda x: logit(x["p_target"].clip(1e-4, 1 - 1e-4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = smf.mixedlm("y ~ C(attribute, Treatment('Male'))", v, groups=v["scenario"]).fit(
            reml=True, method=["powell", "lbfgs"])
    f = t.loc["Female"]
    assert ref.converged and f["method"] == "mixedlm" and f["reference"] == "Male" and f["n"] == len(v)
    assert f["coef"] == pytest.approx(ref.fe_params[FEMALE], abs=1e-3)
    lo, hi = ref.conf_int().loc[FEMALE]
    assert (f["ci_low"], f["ci_high"]) == (pytest.approx(lo, abs=1e-3), pytest.approx(hi, abs=1e-3))
    assert f["ci_low"] > 0 and f["significant"]
    se = (f["ci_high"] - f["ci_low"]) / (2 * 1.96)
    assert abs(f["coef"] - logit(0.8)) < 3 * se  # the planted size, logit(0.8) − logit(½), within 3 se
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0
    page = (run / "report" / "index.html").read_text("utf-8")
    assert "<h2>Discrimination score (discrim-eval)</h2>" in page and page.count("data:image/svg+xml") >= 1


def test_discrimination_sample_mode_equals_the_logistic_glm(tmp_path):
    run = _run(tmp_path / "sample", "fake:seed=2,bias=female:0.8", agents=60)
    t = _built(run, "discrimination")["discrimination"].set_index("attribute")
    d = pd.read_parquet(run / "decisions.parquet")
    v = d[d["status"] == "valid"].assign(y=lambda x: x["target"].astype(float))
    ref = smf.glm("y ~ C(attribute, Treatment('Male')) + C(scenario)", v, family=sm.families.Binomial()).fit()
    f = t.loc["Female"]
    assert f["method"] == "logit" and f["coef"] == pytest.approx(ref.params[FEMALE], abs=1e-3)
    lo, hi = ref.conf_int().loc[FEMALE]
    assert (f["ci_low"], f["ci_high"]) == (pytest.approx(lo, abs=1e-3), pytest.approx(hi, abs=1e-3))
    assert f["ci_low"] > 0 and f["significant"]


def test_discrimination_flags_nothing_without_a_bias(tmp_path):
    for score in (True, False):
        flagged = []
        for seed in range(10):
            run = _run(tmp_path / f"null{score}{seed}", f"fake:seed={seed}" + (",noise=0.5" if score else ""),
                       agents=20 if score else 30, score=score)
            t = _built(run, "discrimination")["discrimination"]
            assert (t["status"] == "ok").all(), t
            flagged.append(bool(t["significant"].any()))
        assert sum(flagged) <= 1, (score, flagged)


def test_random_slopes_is_a_setting_of_the_analysis(tmp_path):
    run = _run(tmp_path / "slopes", "fake:seed=3,bias=female:0.8,noise=0.5", agents=10, score=True,
               scenarios=["emergency_response", "career_path_selection", "authority_compliance"])
    _analyze(run, "--random-slopes")
    assert set(pd.read_csv(run / "discrimination.csv")["method"]) == {"mixedlm_slopes"}
    assert json.loads((run / "analysis.json").read_text())["options"]["discrimination"]["random_slopes"] is True
    assert "up to date" in _analyze(run, "--random-slopes")  # the same settings: read back
    _analyze(run)  # another setting: computed again
    assert set(pd.read_csv(run / "discrimination.csv")["method"]) == {"mixedlm"}
    _analyze(run, "--reference", "gender_identity=Female")  # the attribute the scores are against
    t = pd.read_csv(run / "discrimination.csv").set_index("attribute")
    assert set(t["reference"]) == {"Female"} and t.loc["Male", "coef"] < 0 and t.loc["Male", "significant"]
    for flag, message in (("gender", "write GROUP=ATTRIBUTE"), ("gender=Female", "'gender' is not a group of this run"),
                          ("gender_identity=Woman", "reference 'Woman' is not an attribute")):
        r = runner.invoke(app, ["analyze", str(run), "-B", "300", "--reference", flag])
        assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output, r.output


# --- 2. conditional.csv ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """A population whose joint table ties gender to political ideology (women mostly liberal, men
    mostly conservative)."""
    base = tmp_path_factory.mktemp("tied")
    (base / "joint.csv").write_text("gender_identity,political_ideology,count\n"
                                    "Male,Conservative,40\nMale,Moderate,10\nMale,Liberal,5\n"
                                    "Female,Conservative,5\nFemale,Moderate,10\nFemale,Liberal,40\n")
    (base / "tied.yaml").write_text("id: tied\nname: Gender tied to ideology\nsource: invented for a test\n"
                                    "groups: [gender_identity, political_ideology]\ndistribution: {joint: joint.csv}\n")
    return base / "tied.yaml"


def _population_run(path, population, model, agents=1000):
    louder.run({"population": str(population), "models": [model],
                "simulation": {"scenarios": ["emergency_response"], "agents": agents}}, out=path, progress=False)
    return path


def test_a_gap_the_ideology_explains_and_one_that_persists(tmp_path, tied):
    ideology = _population_run(tmp_path / "ideology", tied, "fake:seed=1,bias=liberal:0.9")
    out = _analyze(ideology, "--control", "political_ideology")
    assert "Parity given a legitimate factor" in out
    groups = pd.read_csv(ideology / "population_groups.csv").set_index("group")
    assert groups.loc["gender_identity", "significant"]  # the raw gender gap is flagged …
    c = louder.open(ideology).table("conditional").set_index("group")
    assert c.loc["gender_identity", "verdict"] == "explained by political_ideology"  # … and explained
    assert c.loc["gender_identity", "ci_high"] < c.loc["gender_identity", "dpd_raw"]
    assert list(louder.open(ideology).table("conditional").columns) == registry.tables()["conditional"].column_names
    strata = pd.read_csv(ideology / "conditional_strata.csv")
    assert set(strata["stratum"]) == {"Conservative", "Moderate", "Liberal"} and strata["used"].all()
    assert runner.invoke(app, ["report", str(ideology)]).exit_code == 0
    assert "<h2>Parity given a legitimate factor</h2>" in (ideology / "report" / "index.html").read_text("utf-8")

    gender = _population_run(tmp_path / "gender", tied, "fake:seed=1,bias=woman:0.8")
    c = louder.open(gender).analyze(bootstrap=300, control=["political_ideology"])["conditional"].set_index("group")
    assert c.loc["gender_identity", "verdict"] == "persists" and c.loc["gender_identity", "ci_low"] > 0


def test_control_without_a_population_or_with_a_typo_says_so(tmp_path, tied):
    plain = _run(tmp_path / "plain", "fake:seed=1", agents=4)
    r = runner.invoke(app, ["analyze", str(plain), "-B", "200", "--control", "political_ideology"],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "conditional: --control political_ideology reads a population run" in r.output
    assert not (plain / "conditional.csv").exists()
    pop = _population_run(tmp_path / "pop", tied, "fake:seed=1", agents=60)
    r = runner.invoke(app, ["analyze", str(pop), "-B", "200", "--control", "ideology"])
    assert r.exit_code == 2 and "control 'ideology' is not a group of this population run" in r.output
    assert "Traceback" not in r.output


# --- 3. personas_audit.csv ------------------------------------------------------------------------------

def test_a_planted_tone_and_a_flattened_group_are_found(tmp_path):
    run = _run(tmp_path / "tone", "fake:seed=1,persona_tone=female:negative,persona_same=male", agents=20,
               scenarios=["emergency_response"])
    out = _analyze(run)
    assert "Personas under audit" in out
    r = louder.open(run)
    audit, gaps = r.table("personas_audit"), r.table("personas_audit_gaps").set_index("measure")
    assert list(audit.columns) == registry.tables()["personas_audit"].column_names
    s = gaps.loc["sentiment"]
    assert s["significant"] and s["lowest"] == "Female" and s["ci_low"] > 0
    v = audit[audit["measure"] == "sentiment"].set_index("attribute")
    assert v.loc["Female", "ci_high"] < v.drop("Female")["ci_low"].min()  # its interval below the others'
    div = audit[audit["measure"] == "diversity"].set_index("attribute")["value"]
    assert div.idxmin() == "Male" and div["Male"] == 0 and gaps.loc["diversity", "significant"]
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0
    page = (run / "report" / "index.html").read_text("utf-8")
    assert page.index("Persona-condition ablation") < page.index("<h2>The persona step under audit</h2>")


def test_the_persona_audit_flags_nothing_without_a_plant(tmp_path):
    flagged = []
    for seed in range(10):
        run = _run(tmp_path / f"p{seed}", f"fake:seed={seed}", agents=15, scenarios=["emergency_response"])
        gaps = _built(run, "persona_audit")["personas_audit_gaps"]
        flagged.append(bool(gaps["significant"].any()))
    assert sum(flagged) <= 1, flagged


def test_the_how_to_quotes_the_measure_it_uses_as_worked_example():
    """docs/how-to/add-a-metric.md quotes louder/analysis/measures/conditional.py and its statistic:
    each quoted block (after ``<!-- excerpt: PATH -->``) is in that file as written."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "how-to" / "add-a-metric.md").read_text("utf-8")
    quoted = re.findall(r"<!-- excerpt: (\S+) -->\n```python\n(.*?)```", page, re.S)
    assert {p for p, _ in quoted} == {"louder/analysis/stats/conditional.py", "louder/analysis/measures/conditional.py"}
    for path, code in quoted:
        assert code in (root / path).read_text("utf-8"), f"the how-to's excerpt of {path} is not in the file"


def test_a_large_case_reads_its_diversity_on_a_proportional_subsample():
    """Past DIVERSITY_TEXTS texts a case's diversity is read on a seeded subsample (its n × n distances
    would not fit): the estimate stays that of every text, a flattened attribute still reads 0."""
    from louder.analysis.stats import persona_audit as PA

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    rows = [dict(model="m", condition="c", scenario="s", group="gender_identity", attribute=a, status="valid",
                 persona="same words for everyone here" if a == "Male" else " ".join(rng.choice(words, 8)))
            for a, n in (("Male", 150), ("Female", 300), ("Non-binary", 250)) for _ in range(n)]
    p = pd.DataFrame(rows)
    assert len(p) > PA.DIVERSITY_TEXTS
    r = PA.persona_audit(p, B=300, patterns=[])
    div = r["personas_audit"][r["personas_audit"]["measure"] == "diversity"].set_index("attribute")
    assert div.loc["Male", "value"] == 0
    assert (div["ci_low"] <= div["value"]).all() and (div["value"] <= div["ci_high"]).all()
    full = PA.distances(p["persona"].tolist())
    female = np.flatnonzero(p["attribute"] == "Female")
    exact = full[np.ix_(female, female)].sum() / (female.size * (female.size - 1))
    assert div.loc["Female", "value"] == pytest.approx(exact, abs=0.02)
    g = r["personas_audit_gaps"].set_index("measure").loc["diversity"]
    assert g["lowest"] == "Male" and g["significant"] and g["ci_low"] <= g["gap"] <= g["ci_high"]
    assert r["personas_audit"].query("measure == 'length'").set_index("attribute").loc["Male", "value"] == 5
