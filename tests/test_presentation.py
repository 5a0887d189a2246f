"""Issue 25: choice orders, wordings and the names signal reach every prompt they should, stay exact
under resume and a larger N, and refuse what they cannot do in one line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

import louder
from louder.config import build_config
from louder.errors import LouderError
from louder.llm.base import Reply
from louder.llm.registry import BackendInfo, register
from louder.presentation import ORDERS, draw_name, load_names, ordered, shown_order
from louder.scenarios import load_group, load_scenario

PROMPTS: list[str] = []


class Recorder:
    """A backend that keeps every prompt (and schema enum) it is sent and answers the first choice."""

    def __init__(self, options: str = ""):
        self.options = options

    def identity(self) -> dict:
        return {"backend": "recorder", "model": self.options or "default"}

    def generate(self, request) -> Reply:
        PROMPTS.append(request.messages[-1][1])
        props = request.schema_json().get("properties", {})
        out = {}
        for k, p in props.items():
            if p.get("enum"):
                out[k] = p["enum"][0]
                PROMPTS.append("ENUM " + "|".join(p["enum"]))
            else:
                out[k] = "Alex Morgan" if k == "name" else "A person who likes maps, tea and long walks."
        return Reply(text=json.dumps(out))

    def score(self, request, prefix, choices) -> Reply:
        PROMPTS.append("SCORE " + "|".join(choices))
        return Reply(text=json.dumps({"logprobs": {c: -0.1 * (i + 1) for i, c in enumerate(choices)}}))


register(BackendInfo("recorder", lambda model, url, cfg: Recorder(model), forms=("recorder",), can_score=True,
                     local=True, takes_url=False, model_optional=True))


@pytest.fixture(autouse=True)
def clear():
    PROMPTS.clear()
    yield
    PROMPTS.clear()


def run(tmp_path, name="r", models=("fake:seed=1",), **sim):
    cfg = {"models": list(models), "simulation": {"scenarios": ["emergency_response"],
                                                  "groups": ["gender_identity"], "agents": 4, **sim}}
    return louder.run(cfg, out=tmp_path / name, progress=False)


# --- choice order -------------------------------------------------------------------------------

def test_orders_are_pure_functions_of_identity():
    labels = ["A", "B", "C"]
    assert shown_order(labels, "as_written", 5, 1) == ("A", "B", "C")
    assert shown_order(labels, "reversed", 5, 1) == ("C", "B", "A")
    # balanced: the k cyclic rotations by replicate, each label in each position equally often
    rot = [shown_order(labels, "balanced", r, 0) for r in range(6)]
    assert rot[:3] == [("A", "B", "C"), ("B", "C", "A"), ("C", "A", "B")] and rot[3:] == rot[:3]
    for pos in range(3):
        assert Counter(o[pos] for o in rot) == Counter({"A": 2, "B": 2, "C": 2})
    assert shown_order(["E", "S"], "balanced", 1, 0) == ("S", "E")
    # shuffled: a permutation from the agent's seed — the same seed, the same order
    assert shown_order(labels, "shuffled", 0, 42) == shown_order(labels, "shuffled", 9, 42)
    assert len({shown_order(labels, "shuffled", 0, s) for s in range(60)}) == 6
    with pytest.raises(ValueError, match="choice_order"):
        shown_order(labels, "sideways", 0, 0)
    assert set(ORDERS) == {"as_written", "reversed", "balanced", "shuffled"}


def test_the_order_reaches_the_prompt_block_the_json_format_and_the_schema(tmp_path):
    s = ordered(load_scenario("emergency_response"), ("Stay", "Evacuate"))
    text = s.prompt_text()
    assert text.index("Stay: stay in your home") < text.index("Evacuate: leave your home")
    run(tmp_path, models=["recorder"], choice_order="reversed", conditions=["no_persona"], agents=1)
    decisions = [p for p in PROMPTS if "Please decide:" in p]
    assert decisions and all(p.index("\nStay:") < p.index("\nEvacuate:") for p in decisions)
    assert all('<a string, "Stay" or "Evacuate">' in p for p in decisions)
    assert "ENUM Stay|Evacuate" in PROMPTS  # a constrained decoder sees the same order
    d = louder.open(tmp_path / "r").decisions
    assert set(d["choice_order"]) == {"Stay|Evacuate"} and set(d["decision"]) == {"Stay"}


def test_score_mode_scores_the_labels_in_the_order_shown(tmp_path):
    run(tmp_path, models=["recorder"], choice_order="balanced", conditions=["no_persona"], agents=2,
        decision_mode="score")
    assert Counter(p for p in PROMPTS if p.startswith("SCORE")) == Counter(
        {"SCORE Evacuate|Stay": 3, "SCORE Stay|Evacuate": 3})
    d = louder.open(tmp_path / "r").decisions
    # the recorder gives the first-listed label the higher log-prob: decisions follow the order shown
    assert (d["decision"] == d["choice_order"].str.split("|").str[0]).all()


def test_balanced_is_exact_per_attribute_and_survives_resume_and_a_larger_n(tmp_path):
    small = run(tmp_path, "r", choice_order="balanced", agents=4).decisions
    assert (small.groupby("attribute")["choice_order"].value_counts() == 2).all()
    big = run(tmp_path, "r", choice_order="balanced", agents=6)  # the same folder: a larger N resumes
    assert big.manifest["model_calls"] == 2 * 3 * 2  # only the new agents' persona and decision
    cols = ["attribute", "replicate", "choice_order", "decision", "persona"]
    old = big.decisions[big.decisions["replicate"] < 4][cols].reset_index(drop=True)
    assert old.equals(small[cols].reset_index(drop=True))
    # an agent under its as-written rotation asks exactly what an as-written run asks (a shared cache hit)
    plain = run(tmp_path, "r", agents=6)
    assert plain.manifest["model_calls"] == 3 * 3  # the odd replicates' reversed prompts are not asked here


def test_shuffled_gives_each_agent_its_own_order_reproducibly(tmp_path):
    a = run(tmp_path, "a", choice_order="shuffled", agents=6, scenarios=["emergency_response"]).decisions
    b = run(tmp_path, "b", choice_order="shuffled", agents=6).decisions
    assert a["choice_order"].tolist() == b["choice_order"].tolist() and a["choice_order"].nunique() == 2


def test_explicit_probes_follow_the_order_with_unknown_last(tmp_path):
    cfg = {"models": ["recorder"], "explicit": {"trials": 6}, "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "choice_order": "balanced"}}
    louder.run(cfg, out=tmp_path / "p", kind="explicit", progress=False)
    p = louder.open(tmp_path / "p").probes
    assert p["choice_order"].tolist()[:3] == ["Female|Male|Non-binary|Unknown", "Male|Non-binary|Female|Unknown",
                                              "Non-binary|Female|Male|Unknown"]
    assert (p["answer"] == p["choice_order"].str.split("|").str[0]).all()
    asked = [x for x in PROMPTS if x.startswith("The person decides") or "Question:" in x]
    assert any(x.index("\nMale\n") < x.index("\nFemale\n") for x in asked)


def test_network_rounds_keep_each_agents_order(tmp_path):
    cfg = {"models": ["fake:seed=1"], "network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}},
           "influence": {"rounds": 1}, "simulation": {"scenarios": ["emergency_response"],
                                                      "groups": ["gender_identity"], "agents": 4,
                                                      "choice_order": "balanced"}}
    r = louder.run(cfg, out=tmp_path / "n", progress=False)
    d = r.decisions
    per_agent = d.groupby("agent_id")["choice_order"].nunique()
    assert (per_agent == 1).all() and d["choice_order"].nunique() == 2
    assert r.manifest["planned_calls"] == r.manifest["model_calls"]


def test_archetype_mode_refuses_other_orders_in_one_line():
    with pytest.raises(LouderError, match=r"choice_order: archetype mode") as e:
        build_config({"population": "us_gender_ideology", "mode": "archetype", "choice_order": "balanced",
                      "models": ["fake"]})
    assert "\n" not in str(e.value)


# --- wordings -----------------------------------------------------------------------------------

def test_the_paper_scenarios_have_louders_wordings_and_keep_their_own_text():
    for sid in ("emergency_response", "authority_compliance", "negative_information_sharing",
                "career_path_selection"):
        s = load_scenario(sid)
        assert len(s.wordings) >= 3
        for w in s.wordings:
            assert w.source.startswith("louder") and "not the paper" in w.source
            t = s.text("base", w.id)
            assert t.labels == s.labels and t.target == s.target and t.persona_context == s.persona_context
            assert t.situation != s.situation
        assert s.text("base", "as_written") is s  # the default is the paper's text, untouched


def test_wordings_carry_no_group_or_attribute_words():
    """louder's own wordings pass the checks a generated paraphrase must pass (no identity word the
    original lacks, every label keeps its own description, length within bounds)."""
    from louder.paraphrase import check

    for sid in ("emergency_response", "authority_compliance", "negative_information_sharing",
                "career_path_selection"):
        s = load_scenario(sid)
        for w in s.wordings:
            t = s.text("base", w.id)
            assert check(s, t.situation, {c.label: c.description for c in t.choices}) is None, (sid, w.id)


def test_a_run_says_each_scenario_in_each_wording_with_shared_personas(tmp_path):
    r = run(tmp_path, wordings=["all"], agents=2)
    d = r.decisions
    assert sorted(d["wording"].unique()) == ["as_written", "formal", "plain", "tradeoff_first"]
    assert len(d) == 4 * 3 * 2 and len(r.personas) == 3 * 2
    assert d.groupby("agent_id")["persona"].nunique().max() == 1  # the persona is the agent's in every wording
    assert r.manifest["planned_calls"] == r.manifest["model_calls"] == 6 + 24


def test_wordings_and_variants_combine(tmp_path):
    path = tmp_path / "flood.yaml"
    doc = yaml.safe_load(Path(load_scenario.__globals__["DATA"] / "scenarios" / "emergency_response_policy.yaml")
                         .read_text("utf-8"))
    doc["id"] = "flood"
    doc["wordings"] = [{"id": "short", "source": "test", "replace": [
        {"find": "It’s a normal day, and you are at home.", "with": "You are at home."}]}]
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    cfg = {"models": ["fake:seed=1"], "simulation": {"variants": ["base", "mandatory"],
        "scenarios": [str(path)], "groups": ["gender_identity"], "agents": 2, "wordings": ["all"]}}
    r = louder.run(cfg, out=tmp_path / "v", progress=False)
    d = r.decisions
    assert set(map(tuple, d[["variant", "wording"]].drop_duplicates().to_numpy())) == {
        ("base", "as_written"), ("base", "short"), ("mandatory", "as_written"), ("mandatory", "short")}
    s = load_scenario(str(path)).text("mandatory", "short")
    assert s.situation.startswith("You are at home.") and "mandatory evacuation order" in s.situation
    assert r.manifest["planned_calls"] == r.manifest["model_calls"]


def test_a_variant_that_a_wording_breaks_is_refused_when_the_config_is_read(tmp_path):
    path = tmp_path / "flood.yaml"
    doc = yaml.safe_load((Path(load_scenario.__globals__["DATA"]) / "scenarios" / "emergency_response_policy.yaml")
                         .read_text("utf-8"))
    doc["wordings"] = [{"id": "retold", "source": "test", "situation": "A flood is coming and police want you ready."}]
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    with pytest.raises(LouderError, match=r"variant 'mandatory' under wording 'retold'") as e:
        build_config({"simulation": {"variants": ["base", "mandatory"], "scenarios": [str(path)],
                                     "wordings": ["all"]}})
    assert "\n" not in str(e.value)
    doc["variants"].append({"id": "rewritten", "situation": "Another text entirely."})
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    with pytest.raises(LouderError, match="rewrites the whole situation"):
        build_config({"simulation": {"variants": ["rewritten"], "scenarios": [str(path)], "wordings": ["retold"]}})
    # without wordings the same variants run as before
    build_config({"simulation": {"variants": ["base", "mandatory", "rewritten"], "scenarios": [str(path)]}})


def test_bad_wordings_are_one_line_errors(tmp_path):
    with pytest.raises(LouderError, match=r"wordings: scenario emergency_response has no wording 'nope'") as e:
        build_config({"simulation": {"scenarios": ["emergency_response"], "wordings": ["nope"]}})
    assert "\n" not in str(e.value)
    # issue 31.3: network (and population, sequential) runs take wordings; archetype mode still cannot
    assert build_config({"simulation": {"scenarios": ["emergency_response"], "wordings": ["all"]},
                         "network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}}}).network
    with pytest.raises(LouderError, match="wordings: archetype mode"):
        build_config({"simulation": {"scenarios": ["emergency_response"], "wordings": ["all"],
                                     "decision_mode": "score"},
                      "population": {"file": "us_gender_ideology", "mode": "archetype"}})
    path = tmp_path / "s.yaml"
    doc = yaml.safe_load((Path(load_scenario.__globals__["DATA"]) / "scenarios" / "emergency_response.yaml")
                         .read_text("utf-8"))
    doc["wordings"] = [{"id": "as_written", "situation": "x"}]
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    with pytest.raises(LouderError, match="reserved"):
        load_scenario(str(path))
    doc["wordings"] = [{"id": "w", "choices": {"Leave": "go"}}]
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), "utf-8")
    with pytest.raises(LouderError, match="wording 'w': choices"):
        load_scenario(str(path))


# --- the names signal ---------------------------------------------------------------------------

def test_names_signal_never_states_the_attribute(tmp_path):
    r = run(tmp_path, models=["recorder"], groups=["race_black_white"], signal="names", agents=3)
    personas = [p for p in PROMPTS if "craft a detailed persona" in p]
    assert len(personas) == 6
    for p in personas:
        assert "demographic" not in p and "White" not in p and "Black" not in p and "a person named" in p
    names = load_names(None)
    d = r.decisions
    assert set(d["signal"]) == {"names"}
    for a, name in zip(d["attribute"], d["name"]):
        assert name in names.attributes[a].first  # the agent's name is the one drawn for its attribute
    assert all(f"You are {n}." in "".join(PROMPTS) for n in d["name"])
    assert r.manifest["planned_calls"] == r.manifest["model_calls"]


def test_names_under_no_persona_make_no_persona_call(tmp_path):
    r = run(tmp_path, groups=["gender_female_male"], signal="names", conditions=["no_persona"], agents=3)
    assert r.manifest["model_calls"] == r.manifest["planned_calls"] == 6  # decisions only
    assert r.personas["persona"].str.startswith("A person named ").all()
    assert (r.personas["status"] == "valid").all() and (r.personas["attempts"] == 0).all()


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_both_signals_run_side_by_side_and_the_cases_table_keeps_them_apart(tmp_path):
    r = run(tmp_path, groups=["race_black_white"], signal=["stated", "names"], agents=3)
    d = r.decisions
    assert Counter(d["signal"]) == Counter({"stated": 6, "names": 6}) and set(r.personas["signal"]) == {
        "stated", "names"}
    cases = r.analyze(bootstrap=200)["cases"]
    assert set(cases["condition"]) == {"contextualized", "contextualized [names]"}
    rob = r.analyze(bootstrap=200)["robustness"]
    assert set(rob["signal"]) == {"stated", "names"}


def test_a_group_without_a_name_list_is_refused_in_one_line():
    with pytest.raises(LouderError) as e:
        build_config({"simulation": {"groups": ["gender_identity"], "signal": "names"}})
    msg = str(e.value)
    assert "\n" not in msg and "gender_identity" in msg and "Non-binary" in msg and "simulation.names" in msg
    with pytest.raises(LouderError, match="completion"):
        build_config({"models": ["completion:fake"], "simulation": {"groups": ["race_black_white"],
                                                                    "signal": "names"}})


def test_a_users_names_file_is_accepted(tmp_path):
    path = tmp_path / "names.yaml"
    path.write_text(yaml.safe_dump({
        "id": "mine", "source": "a test", "taken": "made up for the test",
        "attributes": {a: {"first": [f"{a[:3]}one", f"{a[:3]}two"], "last": ["Lastname"]}
                       for a in load_group("gender_identity").attributes}}), "utf-8")
    r = run(tmp_path, groups=["gender_identity"], signal="names", names=str(path), conditions=["no_persona"],
            agents=2)
    assert r.decisions["name"].str.endswith(" Lastname").all()
    assert draw_name(load_names(str(path)).attributes["Male"], 7) in {"Malone Lastname", "Maltwo Lastname"}
    path.write_text("id: bad\nsource: x\ntaken: y\nattributes: {Male: {first: []}}\n", "utf-8")
    with pytest.raises(LouderError, match="names file"):
        from louder.presentation import _load_names

        _load_names.cache_clear()
        load_names(str(path))


def test_the_built_in_names_file_says_where_its_names_come_from():
    n = load_names(None)
    assert "Bertrand" in n.source and "American Economic Review 94(4)" in n.source and "Table A1" in n.taken
    assert {k: len(v.first) for k, v in n.attributes.items()} == {"White": 18, "Black": 18, "Female": 18, "Male": 18}
    assert "Lakisha" in n.attributes["Black"].first and "Emily" in n.attributes["White"].first
    assert not any(v.last for v in n.attributes.values())  # the publication prints no surnames


# --- the plan ------------------------------------------------------------------------------------

def test_the_dry_run_counts_wordings_orders_and_signals(tmp_path):
    from typer.testing import CliRunner

    from louder.cli import app

    out = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "d"), "--dry-run", "--model", "fake:seed=1",
                                   "--agents", "10", "--scenario", "emergency_response", "--group",
                                   "race_black_white", "--wording", "all", "--choice-order", "balanced",
                                   "--signal", "stated", "--signal", "names"])
    assert out.exit_code == 0, out.output
    # per signal: 20 personas + 4 wordings × 20 decisions
    assert "200" in out.output and "4 wording(s) × choice order balanced × 2 signal(s)" in out.output
