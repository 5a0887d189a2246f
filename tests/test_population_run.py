"""Population runs end to end on fake backends: the output contract, resume, known effects recovered
(regression, variants, twins) and the CLI through analyze and report."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from louder.analysis.stats.population import logistic_regression, twin_flips
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


def _letters(rng: random.Random) -> str:
    return "".join(rng.choice("bdklmnrst") + rng.choice("aeiou") for _ in range(3)).capitalize()


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
            return Reply(text=json.dumps({"name": f"Sam {_letters(rng)}",
                                          "persona": f"{pronoun} likes maps and tea {rng.randrange(1000)}."}))
        if "name" in props:  # a twin's name: a plausible one (letters), never the persona's
            return Reply(text=json.dumps({"name": f"Alex {_letters(rng)}"}))
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
    assert twin_check(text, twin, lex, "Female", "Male", "Maria Lopez", "John Reed").status == "ok"
    assert twin_check(text, twin.replace("Ohio", "Utah"), lex, "Female", "Male", "Maria Lopez",
                      "John Reed").status == "failed_check"
    v = twin_check(text, twin.replace("He loves", "She loves"), lex, "Female", "Male", "Maria Lopez", "John Reed")
    assert v.status == "failed_check" and v.reason == "old attribute word left: 'She'"
    ideology = group_lexicon(load_population(write_pop_tmp()).group("political_ideology"))
    assert twin_check(text, text, ideology, "Liberal", "Moderate").status == "unchanged"
    # a group that renames needs a new name: the old one fails
    v = twin_check(text, text, lex, "Female", "Male", "Maria Lopez", "Maria Lopez")
    assert v.status == "failed_check" and v.reason == "the new name is the old name"


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
    assert html.count("data:image/svg+xml;base64,") >= 4


def test_the_dry_run_plans_exactly_the_calls_a_cold_run_with_twins_makes_in_score_mode(tmp_path):
    """Issue 41: in score mode a twin decides with its source's seed, so a twin whose text and name are
    its source's or a sibling's (every ideology twin here: the fake's personas never name an ideology and
    the group does not rename) asked exactly their question and the cache answered it: the example's
    dry run said 360 calls where a cold run made 346 to 349 (identical calls in flight at once were both
    made). Each twin's score call is now its own, so the plan is what the run makes, every time."""
    config = tmp_path / "twins.yaml"
    config.write_text(yaml.safe_dump({"population": {"file": write_pop(tmp_path), "twins": True}, "simulation": {
        "scenarios": ["emergency_response_policy"], "variants": ["base", "mandatory"], "agents": 8,
        "decision_mode": "score"}}), encoding="utf-8")
    args = ["run", str(config), "-m", "fake:seed=1"]
    dry = CliRunner().invoke(app, args + ["--out", str(tmp_path / "dry"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    planned = int(re.search(r"│ fake:seed=1 │ ([\d,]+)", dry.output).group(1).replace(",", ""))
    # 8 personas and 8 × 2 gender names (ideology keeps the name), then per variant 8 × (1 + 2 + 2) decisions
    assert planned == 8 + 16 + 2 * 8 * 5
    for run in ("a", "b"):  # the same count in a second cold run: no race between identical calls left
        out = tmp_path / run
        r = CliRunner().invoke(app, args + ["--out", str(out)])
        assert r.exit_code == 0, r.output
        m = json.loads((out / "manifest.json").read_text())
        assert m["model_calls"] == m["planned_calls"] == planned
        # the only answers read back: the second variant's personas and twin names, written for the first
        assert m["cache_hits"] == 8 + 16
    tw = pd.read_parquet(tmp_path / "a" / "twins.parquet")
    twins = tw[~tw["original"]]
    assert (twins.loc[twins["group"] == "political_ideology", "twin_status"] == "unchanged").all()
    assert twins["status"].eq("valid").all() and twins["p_target"].between(0, 1).all()


def test_twin_groups_limit_the_twins_and_the_count(tmp_path):
    c = cfg(tmp_path, twins=True, twin_groups=["political_ideology"], agents=12)
    r = execute(population_task(c), c, tmp_path / "run")
    tw = r.tables["twins.parquet"]
    assert set(tw["group"]) == {"political_ideology"} and len(tw) == 12 * 3
    assert r.manifest["model_calls"] == count_calls(c) == 12 + 12 + 12 * 2  # ideology does not rename
    with pytest.raises(LouderError, match="twin_groups: age not a group"):
        cfg(tmp_path, twins=True, twin_groups=["age"])


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_twins_under_wordings_and_reasoning_levels_say_their_arm_and_analyze_reads_one(tmp_path):
    """Twins decide in every arm (wording × reasoning level), as their agents do: each twin row says its
    arm, and the twin tables read the reference arm, as the per-case tables do (a crash before: rows of
    all arms met in one index)."""
    import louder

    run = louder.run({"models": ["fake:seed=1"], "seed": 0,
                      "population": {"file": write_pop(tmp_path), "twins": True, "twin_groups": ["gender_identity"]},
                      "simulation": {"agents": 12, "scenarios": ["emergency_response"],
                                     "wordings": ["as_written", "plain"], "reasoning": ["default", "off"]}},
                     out=tmp_path / "run", progress=False)
    tw = pd.read_parquet(tmp_path / "run" / "twins.parquet")
    assert tw.groupby(["wording", "reasoning"]).size().nunique() == 1 and len(tw) == 4 * 12 * 3
    flips = run.analyze(bootstrap=200, write=False)["twin_flips"]
    assert len(flips) and flips["n_sets"].between(1, 12).all(), flips  # one arm's sets: 12 agents at most


# --- issue 23: groups without a word list (model rewrite) and placeholder personas ---------------------

EDU_PHRASES = {"No high school diploma": "without a high school diploma",
               "Bachelor's degree or higher": "with a bachelor's degree or higher"}


def write_edu_pop(tmp_path) -> str:
    doc = {"id": "edu", "name": "education toy",
           "groups": ["gender_identity", {"id": "education", "name": "Education",
                                          "attributes": list(EDU_PHRASES)}],
           "phrases": {"education": EDU_PHRASES},
           "distribution": {"marginals": {"gender_identity": {"Male": 45, "Female": 45, "Non-binary": 10},
                                          "education": dict(zip(EDU_PHRASES, (40, 60)))}}}
    p = tmp_path / "edu.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(p)


class EduModel:
    """Personas that name the education phrase of their prompt; a rewrite that swaps exactly that phrase
    (``careful``) or also drops a clause (``sloppy``); plausible names; "Stay" decisions."""

    def __init__(self, options: str = ""):
        self.options, self.rewrites = options, 0

    def identity(self):
        return {"backend": "edu", "model": self.options or "default"}

    def generate(self, request):
        text = " ".join(c for _, c in request.messages)
        rng = random.Random(stable_hash([request.key_material()]))
        props = request.schema_json().get("properties", {})
        if set(props) == {"persona"}:  # a twin rewrite
            self.rewrites += 1
            old, new = re.search(r"whose education is: (.+?)\. Rewrite it for a person whose education is: (.+?)\.",
                                 text).groups()
            persona = text.split("Persona:\n", 1)[1].split("\nPlease follow", 1)[0]
            out = persona.replace(old, new)
            if "sloppy" in self.options:
                out = out.replace(" and tea, and she volunteers at a shelter every weekend", "")
            return Reply(text=json.dumps({"persona": out}))
        if "persona" in props:
            phrase = next(p for p in EDU_PHRASES.values() if p in text)
            return Reply(text=json.dumps({"name": f"Dana {_letters(rng)}", "persona": f"Dana is a nurse {phrase} "
                                          "who likes maps and tea, and she volunteers at a shelter every weekend."}))
        if "name" in props:
            return Reply(text=json.dumps({"name": f"Alex {_letters(rng)}"}))
        return Reply(text=json.dumps({"decision": "Stay", "rationale": "x"}))


EDU_MODELS: dict[str, EduModel] = {}


@pytest.fixture
def edu_backend():
    register(BackendInfo("edu", lambda model, url, c: EDU_MODELS.setdefault(model or "", EduModel(model)),
                         forms=("edu",), local=True, takes_url=False, model_optional=True))
    yield "edu"
    unregister("edu")
    EDU_MODELS.clear()


def test_a_group_without_a_word_list_gets_model_rewrites_that_are_checked(tmp_path, edu_backend):
    c = build_config(dict(models=["edu"], scenarios=["emergency_response"], population=write_edu_pop(tmp_path),
                          agents=20, twins=True, twin_groups=["education"], concurrency=2))
    r = execute(population_task(c), c, tmp_path / "run")
    tw = r.tables["twins.parquet"]
    made = tw[~tw["original"]]
    assert len(made) == 20 and (made["twin_status"] == "ok").all() and made["twin_reason"].isna().all()
    assert (made["twin_similarity"] == 1.0).all() and made["name"].notna().all()
    # the twin is the persona with the other phrase, the name kept (a rewrite does not rename)
    persona = r.tables["personas.parquet"].set_index("agent_id")
    for row in made.itertuples():
        src = persona.loc[row.agent_id]
        assert row.persona == src["persona"].replace(EDU_PHRASES[row.source_attribute], EDU_PHRASES[row.attribute])
        assert row.name == src["name"]
    assert r.manifest["model_calls"] == count_calls(c) == 20 + 20 + 20 + 20  # personas, decisions, rewrites, twins


def test_a_sloppy_rewrite_fails_the_check_with_its_reason_and_similarity(tmp_path, edu_backend):
    c = build_config(dict(models=["edu:sloppy"], scenarios=["emergency_response"],
                          population=write_edu_pop(tmp_path), agents=10, twins=True, twin_groups=["education"]))
    tw = execute(population_task(c), c, tmp_path / "run").tables["twins.parquet"]
    made = tw[~tw["original"]]
    assert (made["twin_status"] == "failed_check").all()
    assert made["twin_reason"].str.startswith("changed beyond the attribute: similarity").all()
    assert (made["twin_similarity"] < 0.9).all()


def test_the_fake_model_rewrites_fail_the_check_and_a_named_rewriter_is_used_and_counted(tmp_path, edu_backend):
    # the fake's personas repeat the bias words of their prompt, so they name the education (diploma/degree)
    base = dict(models=["fake:seed=1,bias=diploma:0.5,bias=degree:0.5"], scenarios=["emergency_response"],
                population=write_edu_pop(tmp_path), agents=12, twins=True, twin_groups=["education"])
    c = build_config(base)
    r = execute(population_task(c), c, tmp_path / "fake")
    made = r.tables["twins.parquet"].query("not original")
    assert (made["twin_status"] == "failed_check").all() and made["twin_reason"].notna().all()
    assert r.manifest["model_calls"] == count_calls(c) == 12 * 4
    c = build_config({**base, "twin_rewriter": "edu:careful"})
    r = execute(population_task(c), c, tmp_path / "named")
    assert EDU_MODELS["careful"].rewrites == 12 and r.manifest["model_calls"] == count_calls(c) == 12 * 4
    assert r.manifest["models"][c.models[0].label]["twin_rewriter"] == {"backend": "edu", "model": "careful"}


def test_twin_rewriter_must_be_a_chat_model_spec(tmp_path):
    for spec, why in [("nosuch:model", "twin_rewriter"), ("completion:fake", "completion model")]:
        with pytest.raises(LouderError, match=why) as e:
            cfg(tmp_path, twins=True, twin_rewriter=spec)
        assert "\n" not in str(e.value)


class PlaceholderModel:
    """Echoes the persona template's placeholder for Male agents (as SmolLM2 did in issue 23) and for
    every twin name; plausible personas otherwise; "Stay" decisions."""

    def identity(self):
        return {"backend": "placeholder", "model": "test"}

    def generate(self, request):
        text = " ".join(c for _, c in request.messages)
        props = request.schema_json().get("properties", {})
        if "persona" in props:
            if re.search(r"\ba man\b", text):
                return Reply(text=json.dumps({"name": "Sam Lee",
                                              "persona": "<personalized json string describing the person's persona>"}))
            return Reply(text=json.dumps({"name": "Ana Ruiz", "persona": "She is a nurse who likes maps and tea."}))
        if "name" in props:
            return Reply(text=json.dumps({"name": "<a string representing the person’s name>"}))
        return Reply(text=json.dumps({"decision": "Stay", "rationale": "x"}))


def test_placeholder_personas_are_invalid_and_never_decide(tmp_path):
    register(BackendInfo("placeholder", lambda model, url, c: PlaceholderModel(), forms=("placeholder",),
                         local=True, takes_url=False, model_optional=True))
    try:
        c = cfg(tmp_path, models=["placeholder"], twins=True, twin_groups=["gender_identity"], agents=20)
        r = execute(population_task(c), c, tmp_path / "run")
    finally:
        unregister("placeholder")
    p, d = r.tables["personas.parquet"], r.tables["decisions.parquet"]
    male = p["attr_gender_identity"] == "Male"
    assert male.any() and (p.loc[male, "status"] == "invalid").all() and (p.loc[~male, "status"] == "valid").all()
    assert (p.loc[male, "reason"] == "persona echoes the prompt's placeholder").all()
    assert p.loc[male, "raw_response"].str.contains("personalized json string").all()  # the raw text is kept
    dm = d["attr_gender_identity"] == "Male"
    assert (d.loc[dm, "status"] == "invalid").all() and d.loc[dm, "decision"].isna().all()
    assert d.loc[dm, "raw_response"].str.startswith("[persona invalid: persona echoes the prompt's placeholder]").all()
    tw = r.tables["twins.parquet"].query("not original")
    # a Male source has no twin; every other twin's name echoes the placeholder: invalid, not decided
    assert (tw.loc[tw["source_attribute"] == "Male", "twin_status"] == "no_persona").all()
    named = tw[tw["source_attribute"] != "Male"]
    assert (named["twin_status"] == "invalid").all() and (named["status"] == "invalid").all()
    assert named["twin_reason"].str.contains("placeholder").all() and named["decision"].isna().all()
    n_valid = int((~male).sum())
    # asked: every persona, the valid agents' decisions and their twins' names — no decision of a placeholder
    assert r.manifest["model_calls"] == 20 + n_valid + 2 * n_valid


def test_analyze_and_report_lead_with_the_groups_and_the_regression(tmp_path):
    """Issue 23 point 3: for a three-group population run, `louder analyze` prints the per-group DPDs and
    the regression first; the joint-label case (every intersection as one attribute) comes after them,
    titled as intersections. The report's sections follow the same order."""
    doc = yaml.safe_load(Path(write_pop(tmp_path)).read_text(encoding="utf-8"))
    doc["groups"].append({"id": "region", "name": "Region", "attributes": ["North", "South"]})
    doc["distribution"]["marginals"]["region"] = {"North": 50, "South": 50}
    pop = tmp_path / "three.yaml"
    pop.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "--population", str(pop), "-m", "fake:seed=2,bias=female:0.9", "-s",
                                 "emergency_response_policy", "--agents", "80", "--out", str(out)])
    assert r.exit_code == 0, r.output
    a = CliRunner().invoke(app, ["analyze", str(out), "-B", "300"])
    assert a.exit_code == 0, a.output
    text = re.sub(r"\s+", " ", a.output)
    first = [text.find(s) for s in ("Population: DPD per group", "logistic regression", "Intersections as one group")]
    assert -1 not in first and first == sorted(first), first
    assert "DPD per case" not in text  # the joint label is not presented as the run's cases
    for g in ("gender_identity", "political_ideology", "region"):
        assert g in text[first[0]:first[1]]  # one row per group in the first table
    rep = CliRunner().invoke(app, ["report", str(out), "-B", "300"])
    assert rep.exit_code == 0, rep.output
    titles = re.findall(r"<h2>([^<]*)</h2>", (out / "report" / "index.html").read_text())
    assert titles[:4] == ["Findings", "Population", "Intersections",
                          "Intersections as one group: the joint label per case"]
    assert "Demographic parity difference per case (cf. Fig. 3)" not in titles


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
