"""Population runs end to end on fake backends: the output contract, resume, known effects recovered
(regression, variants, twins) and the CLI through analyze and report."""

from __future__ import annotations

import json
import random
import re

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from louder.analysis.population import logistic_regression, twin_flips
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError
from louder.llm.base import Reply, stable_hash
from louder.llm.registry import BackendInfo, register, unregister
from louder.populations import load_population
from louder.populations.twins import group_lexicon, re_express, twin_check
from louder.simulation.population_run import count_calls, population_task
from louder.task import execute
from louder.types import DECISION_COLUMNS

GROUPS = ["gender_identity", "political_ideology"]


def write_pop(tmp_path, gender=(44, 46, 10), ideology=(30, 40, 30)) -> str:
    doc = {"id": "toy", "name": "toy population",
           "groups": ["gender_identity", {"id": "political_ideology", "name": "Ideology",
                                          "attributes": ["Conservative", "Moderate", "Liberal"]}],
           "distribution": {"marginals": {
               "gender_identity": dict(zip(["Male", "Female", "Non-binary"], gender)),
               "political_ideology": dict(zip(["Conservative", "Moderate", "Liberal"], ideology))}}}
    p = tmp_path / "toy.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(p)


def cfg(tmp_path, **kw):
    base = dict(models=["fake:seed=1"], scenarios=["emergency_response_policy"], population=write_pop(tmp_path),
                agents=30, concurrency=4)
    return build_config({**base, **kw})


def test_population_run_writes_the_contract_and_resumes_for_free(tmp_path):
    c = cfg(tmp_path, variants=["base", "mandatory"], twins=True)
    out = tmp_path / "run"
    r = execute(population_task(c), c, out)
    d = pd.read_parquet(out / "decisions.parquet")
    attr = ["attr_gender_identity", "attr_political_ideology"]
    assert list(d.columns) == DECISION_COLUMNS + ["variant", *attr, "cell_id", "weight"]
    assert len(d) == 30 * 2 and set(d["variant"]) == {"base", "mandatory"} and (d["group"] == "toy").all()
    assert (d["attribute"] == d[attr[0]] + " | " + d[attr[1]]).all()
    pop = pd.read_parquet(out / "population.parquet")
    assert list(pop.columns) == ["agent_id", *GROUPS, "cell_id", "weight"] and len(pop) == 30
    merged = d.merge(pop, on="agent_id")
    assert (merged["attr_gender_identity"] == merged["gender_identity"]).all()
    assert (merged["cell_id_x"] == merged["cell_id_y"]).all()
    m = json.loads((out / "manifest.json").read_text())
    assert m["louder_kind"] == "population"
    p = m["population"]
    assert p["n"] == 30 and p["groups"] == GROUPS and p["max_marginal_error"] < 1 and p["chi2"] >= 0
    # every call of the plan was made once (personas and twin names are shared by the variants)
    assert m["model_calls"] == count_calls(c) == 30 + 30 * 2 + 30 * 2 + 30 * 4 * 2
    tw = pd.read_parquet(out / "twins.parquet")
    assert len(tw) == 30 * 2 * (3 + 3)  # per agent and variant: 3 gender + 3 ideology members
    made = tw[~tw["original"]]
    assert sum(m["status_counts"]["twins"].values()) == len(made) == 30 * 2 * 4
    assert set(tw["twin_status"]) <= {"ok", "unchanged", "failed_check", "no_persona", "invalid", "refused",
                                      "error"}
    assert tw.groupby(["variant", "twin_set"]).size().eq(3).all()
    # the twin's name is new for gender (renamed), kept for ideology (not renamed)
    g = tw[tw["group"] == "gender_identity"].pivot_table(index=["variant", "agent_id"], columns="original",
                                                          values="name", aggfunc=lambda s: len(set(s)))
    assert (g[False] == 2).all()
    again = execute(population_task(c), c, out)
    assert again.manifest["model_calls"] == 0
    for name in ("decisions.parquet", "twins.parquet", "personas.parquet"):
        pd.testing.assert_frame_equal(r.tables[name].drop(columns="run_id"), again.tables[name].drop(columns="run_id"))


def test_regression_finds_the_one_attribute_the_fake_reads(tmp_path):
    # "woman" is in every Female agent's persona prompt, so the fake's persona repeats it and the
    # decision prompt carries it: P(Evacuate) = 0.9 for women, 0.5 for everyone else.
    c = cfg(tmp_path, models=["fake:seed=3,bias=woman:0.9"], agents=900, scenarios=["emergency_response"])
    r = execute(population_task(c), c, tmp_path / "run")
    d = r.tables["decisions.parquet"]
    reg = logistic_regression(d, ["attr_gender_identity", "attr_political_ideology"])
    assert reg.status == "ok"
    t = reg.table.set_index(["group", "attribute"])
    male = t.loc[("attr_gender_identity", "Male")]
    assert male["reference"] == "Female" and male["hi"] < 0.25  # true OR (0.5/0.5)/(0.9/0.1) = 0.11
    ideology = reg.table[reg.table["group"] == "attr_political_ideology"]
    assert len(ideology) == 2 and ((ideology["lo"] < 1) & (ideology["hi"] > 1)).all()
    assert ((ideology["odds_ratio"] > 0.6) & (ideology["odds_ratio"] < 1.6)).all()


def test_fake_that_ignores_attributes_gives_zero_twin_flips(tmp_path):
    # score mode with a seeded draw: decisions vary between agents (P = 0.5), but a twin draws with its
    # source's seed, so with attribute-blind probabilities it must decide exactly as its source.
    c = cfg(tmp_path, twins=True, decision_mode="score", score_pick="draw", agents=40)
    r = execute(population_task(c), c, tmp_path / "run")
    d = r.tables["decisions.parquet"]
    assert 0.2 < d["target"].astype(float).mean() < 0.8
    tw = r.tables["twins.parquet"]
    for group, t in tw.groupby("group"):
        f = twin_flips(t)
        assert len(f) == 3 and (f["n_sets"] == 40).all(), group
        assert (f["flip_rate"] == 0).all() and (f["p_mcnemar"] == 1).all()


class PronounModel:
    """Writes personas with the pronoun of the gender named in the prompt; chooses the target exactly
    when the decision prompt says "she"."""

    def identity(self):
        return {"backend": "pronoun", "model": "test"}

    def generate(self, request):
        text = " ".join(c for _, c in request.messages)
        rng = random.Random(stable_hash([request.key_material()]))
        props = request.schema_json().get("properties", {})
        if "persona" in props:
            pronoun = ("She" if re.search(r"\bwoman\b", text) else "They" if "non-binary" in text else "He")
            return Reply(text=json.dumps({"name": f"Sam {rng.randrange(1000)}",
                                          "persona": f"{pronoun} likes maps and tea {rng.randrange(1000)}."}))
        if "name" in props:
            return Reply(text=json.dumps({"name": f"Alex {rng.randrange(1000)}"}))
        return Reply(text=json.dumps({"decision": "Stay", "rationale": "x"}))

    def score(self, request, prefix, choices):
        she = bool(re.search(r"\bshe\b", " ".join(c for _, c in request.messages), re.IGNORECASE))
        return Reply(text=json.dumps({"logprobs": {choices[0]: 0.0 if she else -30.0,
                                                   choices[1]: -30.0 if she else 0.0}, "method": "test"}))


@pytest.fixture
def pronoun_backend():
    register(BackendInfo("pronoun", lambda model, url, c: PronounModel(), forms=("pronoun",), can_score=True,
                         local=True, takes_url=False, model_optional=True))
    yield "pronoun"
    unregister("pronoun")


def test_pronoun_keyed_fake_gives_exactly_the_expected_flips(tmp_path, pronoun_backend):
    c = cfg(tmp_path, models=[pronoun_backend], twins=True, decision_mode="score", agents=30)
    r = execute(population_task(c), c, tmp_path / "run")
    tw = r.tables["twins.parquet"]
    assert (tw["status"] == "valid").all() and set(tw["twin_status"]) == {"ok", "unchanged"}
    gender = tw[tw["group"] == "gender_identity"]
    assert (gender.loc[~gender["original"], "twin_status"] == "ok").all()
    f = twin_flips(gender).set_index(["attribute_a", "attribute_b"])
    # only the "She" twin evacuates: every set flips between Female and the others, never Male/Non-binary
    for (a, b), row in f.iterrows():
        expected = 1.0 if "Female" in (a, b) else 0.0
        assert row["flip_rate"] == expected and row["n_sets"] == 30, (a, b)
    assert f["p_mcnemar"].min() < 1e-6
    ideology = twin_flips(tw[tw["group"] == "political_ideology"])
    assert (ideology["flip_rate"] == 0).all()  # the persona never names the ideology: unchanged twins


def test_twin_check_accepts_slots_only():
    lex = group_lexicon(load_population(write_pop_tmp()).group("gender_identity"))
    text = "Maria Lopez is a woman from Ohio. She loves her dog; Maria walks daily."
    twin = re_express(text, lex, "Female", "Male", "Maria Lopez", "John Reed")
    assert twin == "John Reed is a man from Ohio. He loves his dog; John walks daily."
    assert twin_check(text, twin, lex, "Female", "Male", "Maria Lopez", "John Reed") == "ok"
    assert twin_check(text, twin.replace("Ohio", "Utah"), lex, "Female", "Male", "Maria Lopez", "John Reed") == \
        "failed_check"
    assert twin_check(text, twin.replace("He loves", "She loves"), lex, "Female", "Male", "Maria Lopez",
                      "John Reed") == "failed_check"  # an old attribute word left
    assert twin_check(text, text, lex, "Female", "Male", "Maria Lopez", "Maria Lopez") == "unchanged"


def write_pop_tmp() -> str:
    import tempfile
    from pathlib import Path

    return write_pop(Path(tempfile.mkdtemp()))


def test_bad_population_input_is_one_line(tmp_path):
    with pytest.raises(LouderError) as e:
        build_config(dict(population=str(tmp_path / "missing.yaml")))
    assert "\n" not in str(e.value) and "missing.yaml" in str(e.value)
    with pytest.raises(LouderError, match="twins need a population"):
        build_config(dict(twins=True))
    r = CliRunner().invoke(app, ["run", "--population", "nowhere", "-m", "fake", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "unknown population 'nowhere'" in r.output
    r = CliRunner().invoke(app, ["run", "--population", write_pop(tmp_path), "--twins", "--twin-group", "region",
                                 "-m", "fake", "--out", str(tmp_path / "o"), "--dry-run"])
    assert r.exit_code == 2 and "twin_groups: region not a group" in r.output


def test_cli_population_run_analyze_and_report(tmp_path):
    out = tmp_path / "run"
    args = ["run", "--population", write_pop(tmp_path), "-m", "fake:seed=5,bias=mandatory:0.9", "-s",
            "emergency_response_policy", "--variant", "base", "--variant", "mandatory", "--twins", "--agents", "60",
            "--out", str(out)]
    dry = CliRunner().invoke(app, args + ["--dry-run"])
    assert dry.exit_code == 0, dry.output
    planned = int(re.search(r"│ fake:seed=5,bias=mandatory:0.9 │ ([\d,]+)", dry.output).group(1).replace(",", ""))
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["model_calls"] == planned
    a = CliRunner().invoke(app, ["analyze", str(out), "-B", "500"])
    assert a.exit_code == 0, a.output
    for name in ("population_groups", "population_intersections", "population_regression", "population_overall",
                 "variant_rates", "variant_effects", "variant_dpd", "twin_flips", "twin_dpd", "twin_accounting"):
        assert (out / f"{name}.csv").exists(), name
    eff = pd.read_csv(out / "variant_effects.csv")
    overall = pd.read_csv(out / "variant_rates.csv")
    allrows = overall[(overall["attribute"] == "(all)") & (overall["group"] == "gender_identity")].set_index("variant")
    assert allrows.loc["mandatory", "rate"] - allrows.loc["base", "rate"] > 0.2  # fake: 0.9 vs 0.5
    assert (allrows["n_valid"] + allrows["n_invalid"] + allrows["n_refused"] + allrows["n_error"] == 60).all()
    assert len(eff) == 3 + 3
    reg = pd.read_csv(out / "population_regression.csv")
    assert len(reg) and reg["dropped"].str.contains("gender_identity=Non-binary").all()  # 6 agents < 10
    assert not reg["attribute"].eq("Non-binary").any()
    cases = pd.read_csv(out / "cases.csv")
    assert set(cases["scenario"]) == {"emergency_response_policy", "emergency_response_policy [mandatory]"}
    rep = CliRunner().invoke(app, ["report", str(out), "-B", "500"])
    assert rep.exit_code == 0, rep.output
    html = (out / "report" / "index.html").read_text()
    for title in ("Population", "Intersections", "Policy variants", "Counterfactual twins"):
        assert f"<h2>{title}</h2>" in html
    assert html.count("data:image/png;base64,") >= 4


def test_twin_groups_limit_the_twins_and_the_count(tmp_path):
    c = cfg(tmp_path, twins=True, twin_groups=["political_ideology"], agents=12)
    r = execute(population_task(c), c, tmp_path / "run")
    tw = r.tables["twins.parquet"]
    assert set(tw["group"]) == {"political_ideology"} and len(tw) == 12 * 3
    assert r.manifest["model_calls"] == count_calls(c) == 12 + 12 + 12 * 2  # ideology does not rename
    with pytest.raises(LouderError, match="twin_groups: age not a group"):
        cfg(tmp_path, twins=True, twin_groups=["age"])


def write_table_pop(tmp_path) -> str:
    """Three groups, age × ideology given as a two-way table (with an association), gender as a marginal."""
    (tmp_path / "ai.csv").write_text("age_group,political_ideology,weight\n18-29,Conservative,5\n18-29,Moderate,10\n"
                                     "18-29,Liberal,15\n30-64,Conservative,20\n30-64,Moderate,20\n30-64,Liberal,10\n"
                                     "65+,Conservative,12\n65+,Moderate,6\n65+,Liberal,2\n")
    ideology = {"id": "political_ideology", "name": "Ideology", "attributes": ["Conservative", "Moderate", "Liberal"]}
    doc = {"id": "tabled", "name": "tabled", "groups": [
        {"id": "age_group", "name": "Age", "attributes": ["18-29", "30-64", "65+"]}, "gender_identity", ideology],
           "distribution": {"marginals": {"gender_identity": {"Male": 49, "Female": 50, "Non-binary": 1}},
                            "tables": [{"groups": ["age_group", "political_ideology"], "file": "ai.csv"}]}}
    p = tmp_path / "tabled.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(p)


def test_one_way_and_two_way_fit_errors_are_reported_apart(tmp_path):
    """issue 23.7: every one-way marginal of 100 drawn agents is exact while a two-way table cell misses
    by an agent; the manifest, the console and the report give the two figures apart."""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "--population", write_table_pop(tmp_path), "-m", "fake:seed=1", "-s",
                                 "emergency_response_policy", "--agents", "100", "--out", str(out)])
    assert r.exit_code == 0, r.output
    agents = pd.read_parquet(out / "population.parquet")
    pop = load_population(write_table_pop(tmp_path))
    # independent of fit.py: counts by pandas against N × the stated shares
    one_way = max(float((agents[g].value_counts().reindex(pop.group(g).attributes, fill_value=0)
                         - 100 * pd.Series(s, index=pop.group(g).attributes)).abs().max())
                  for g, s in pop.marginals.items())
    for g in ("age_group", "political_ideology"):  # the table's margins are one-way targets too
        table = pd.read_csv(tmp_path / "ai.csv").groupby(g)["weight"].sum()
        one_way = max(one_way, float((agents[g].value_counts() - 100 * table / table.sum()).abs().max()))
    cells = pd.read_csv(tmp_path / "ai.csv").set_index(["age_group", "political_ideology"])["weight"]
    drawn = agents.groupby(["age_group", "political_ideology"]).size().reindex(cells.index, fill_value=0)
    two_way = float((drawn - 100 * cells / cells.sum()).abs().max())
    assert one_way < 1e-6 and two_way >= 1  # the situation the issue met
    p = json.loads((out / "manifest.json").read_text())["population"]
    assert p["max_marginal_error"] == pytest.approx(one_way, abs=1e-6)
    assert p["max_table_error"] == pytest.approx(two_way, abs=1e-6)
    assert p["max_table_share_error"] == pytest.approx(two_way / 100, abs=1e-8)
    text = " ".join(r.output.split())
    assert f"largest one-way marginal error {one_way:.2f} agents, largest two-way table cell error {two_way:.2f} " \
           "agents" in text, r.output
    rep = CliRunner().invoke(app, ["report", str(out), "-B", "200"])
    assert rep.exit_code == 0, rep.output
    html = (out / "report" / "index.html").read_text()
    assert f"largest one-way marginal error {one_way:.2f} agents, largest two-way table cell error {two_way:.2f}" in html
    # without tables the report says so rather than print a number
    c = cfg(tmp_path, agents=10)
    assert execute(population_task(c), c, tmp_path / "plain").manifest["population"]["max_table_error"] is None
