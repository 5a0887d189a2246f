"""Population files: validation (one-line errors), IPF fit, drawing agents, intersectional wording."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from louder.errors import LouderError
from louder.populations import (agent_description, describe_agent, draw_agents, fit_diagnostics, fit_population,
                                load_population)

AGE = {"id": "age_group", "name": "Age group", "attributes": ["18-29", "30-64", "65+"]}


def write_pop(tmp_path, distribution: dict, groups=None, **extra) -> str:
    doc = {"id": "t", "name": "test", "groups": groups or [AGE, "gender_identity"], "distribution": distribution,
           **extra}
    path = tmp_path / "pop.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(path)


GOOD_MARGINALS = {"age_group": {"18-29": 20, "30-64": 58, "65+": 22},
                  "gender_identity": {"Male": 49, "Female": 50, "Non-binary": 1}}


def test_example_population_reproduces_marginals_and_is_reproducible():
    pop = load_population("us_adults")
    fitted = fit_population(pop)
    a = draw_agents(fitted, 10_000, seed=7)
    assert list(a.columns) == ["agent_id", *pop.group_ids, "cell_id", "weight"]
    for gid, shares in pop.marginals.items():
        counts = a[gid].value_counts().reindex(pop.group(gid).attributes, fill_value=0).to_numpy()
        assert np.abs(counts - 10_000 * shares).max() <= 1.0, gid
    d = fit_diagnostics(fitted, a)
    assert d.max_marginal_error <= 1.0 and d.max_table_error is None and d.ipf_converged and d.df == 4 * 3 * 6 * 5 - 1
    assert a["weight"].sum() == pytest.approx(10_000)
    b = draw_agents(pop, 10_000, seed=7)
    assert a.equals(b)
    c = draw_agents(pop, 10_000, seed=8)
    assert not a.equals(c)  # the seed orders the agents
    assert sorted(a["cell_id"]) == sorted(c["cell_id"])  # same quota composition


def test_small_draw_within_one_agent_of_every_marginal():
    pop = load_population("us_adults")
    for n in (1, 37, 200):
        a = draw_agents(pop, n, seed=0)
        assert len(a) == n and fit_diagnostics(pop, a).max_marginal_error < 1.0


def test_joint_table_is_used_as_given(tmp_path):
    (tmp_path / "j.csv").write_text("age_group,gender_identity,count\n18-29,Male,30\n18-29,Female,10\n"
                                    "65+,Female,60\n30-64,Non-binary,0\n")
    pop = load_population(write_pop(tmp_path, {"joint": "j.csv"}))
    a = draw_agents(pop, 100, seed=1)
    combos = a.groupby(["age_group", "gender_identity"]).size().to_dict()
    assert combos == {("18-29", "Male"): 30, ("18-29", "Female"): 10, ("65+", "Female"): 60}


def test_two_way_table_shapes_the_joint(tmp_path):
    # Men all young, women all old: the table fixes the association that marginals alone cannot.
    (tmp_path / "ag.csv").write_text("age_group,gender_identity,weight\n18-29,Male,50\n65+,Female,50\n")
    dist = {"marginals": {"age_group": {"18-29": 50, "30-64": 0, "65+": 50}}, "tables": [
        {"groups": ["age_group", "gender_identity"], "file": "ag.csv"}]}
    pop = load_population(write_pop(tmp_path, dist))
    fitted = fit_population(pop)
    assert fitted.converged
    a = draw_agents(fitted, 1000, seed=0)
    assert set(map(tuple, a[["age_group", "gender_identity"]].to_numpy())) == {("18-29", "Male"), ("65+", "Female")}
    assert fit_diagnostics(fitted, a).max_marginal_error <= 1.0


def test_group_files_and_builtin_ids(tmp_path):
    (tmp_path / "region.yaml").write_text("id: region\nname: Region\nattributes: [North, South]\n")
    dist = {"marginals": {"region": {"North": 1, "South": 3}, "political_ideology": {
        "Very Conservative": 1, "Conservative": 1, "Moderate": 1, "Liberal": 1, "Very Liberal": 0}}}
    pop = load_population(write_pop(tmp_path, dist, groups=["region.yaml", "political_ideology"], tolerance=0.5))
    a = draw_agents(pop, 400, seed=3)
    assert (a["region"] == "South").sum() == 300 and (a["political_ideology"] == "Very Liberal").sum() == 0


BAD = [
    # (distribution, extra files, expected fragments of the one error line)
    ({"marginals": {**GOOD_MARGINALS, "age_group": {"18-29": 20, "30-64": 58, "65+": 122}}}, {},
     ["totals disagree", "age_group"]),
    ({"marginals": {**GOOD_MARGINALS, "gender_identity": {"Male": 49, "Female": 50, "Nonbinary": 1}}}, {},
     ["gender_identity", "'Nonbinary'"]),
    ({"marginals": {**GOOD_MARGINALS, "age_group": {"18-29": -20, "30-64": 98, "65+": 22}}}, {},
     ["age_group", "'18-29'", "-20", "negative"]),
    ({"marginals": {**GOOD_MARGINALS, "age_group": {"18-29": "many", "30-64": 58, "65+": 22}}}, {},
     ["age_group", "'18-29'", "'many'", "not a number"]),
    ({"joint": "j.csv"}, {"j.csv": "age_group,count\n18-29,3\n"}, ["j.csv", "gender_identity", "missing column"]),
    ({"joint": "j.csv"}, {"j.csv": "age_group,gender_identity,count\n18-29,Man,3\n"}, ["gender_identity", "'Man'"]),
    ({"joint": "j.csv"}, {"j.csv": "age_group,gender_identity,weight\n18-29,Male,x\n"}, ["'x'", "not a number"]),
    ({"joint": "j.csv"}, {"j.csv": "age_group,gender_identity,count\n18-29,Male,-1\n"}, ["'-1'", "negative"]),
    ({"marginals": {"age_group": GOOD_MARGINALS["age_group"]}}, {}, ["gender_identity", "no marginal"]),
    ({"marginals": {**GOOD_MARGINALS, "region": {"N": 1}}}, {}, ["'region'", "not in `groups`"]),
    ({"marginals": GOOD_MARGINALS, "tables": [{"groups": ["age_group", "gender_identity"], "file": "t.csv"}]},
     {"t.csv": "age_group,gender_identity,count\n18-29,Male,50\n65+,Female,50\n"},
     ["totals disagree", "age_group"]),
]


@pytest.mark.parametrize("dist,files,fragments", BAD)
def test_bad_population_files_get_one_line(tmp_path, dist, files, fragments):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = write_pop(tmp_path, dist)
    with pytest.raises(LouderError) as e:
        fit_population(load_population(path))
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path) in msg
    for f in fragments:
        assert f in msg, (f, msg)


def test_unknown_population_and_bad_yaml(tmp_path):
    with pytest.raises(LouderError, match="unknown population 'nowhere'.*us_adults"):
        load_population("nowhere")
    p = tmp_path / "p.yaml"
    p.write_text("id: t\nname: x\ngroups: [gender_identity]\ndistribution: {joint: a.csv, marginals: {a: {}}}\n")
    with pytest.raises(LouderError, match="distribution: either `joint`|not both"):
        load_population(str(p))


weights = st.one_of(st.integers(-5, 100), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                    st.none(), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(w=st.lists(weights, min_size=3, max_size=3), label=st.sampled_from(["18-29", "30-64", "65+", "99+", ""]))
def test_generated_marginals_fail_with_one_line_or_load(tmp_path, w, label):
    ages = dict(zip(["18-29", "30-64", label], w))
    dist = {"marginals": {"age_group": ages, "gender_identity": {"Male": 1, "Female": 1, "Non-binary": 0}}}
    path = write_pop(tmp_path, dist, tolerance=0.5)
    try:
        pop = load_population(path)
    except LouderError as e:
        assert "\n" not in str(e) and str(e).startswith(f"population file {path}")
        return
    # Loaded: then every weight was a number ≥ 0 and every age attribute present.
    assert all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in ages.values())
    assert set(ages) == set(AGE["attributes"])
    assert len(draw_agents(pop, 10, seed=0)) == 10


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["18-29", "65+", "old"]), st.sampled_from(["Male", "Female", "x"]),
                               st.sampled_from(["1", "2.5", "-3", "abc", ""])), min_size=1, max_size=5),
       drop=st.booleans())
def test_generated_joint_tables_fail_with_one_line_or_load(tmp_path, rows, drop):
    cols = ["age_group", "count"] if drop else ["age_group", "gender_identity", "count"]
    lines = [",".join(cols)] + [",".join([r[0], r[2]] if drop else list(r)) for r in rows]
    (tmp_path / "j.csv").write_text("\n".join(lines) + "\n")
    path = write_pop(tmp_path, {"joint": "j.csv"})
    try:
        pop = load_population(path)
    except LouderError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    assert not drop and len(draw_agents(pop, 5, seed=0)) == 5


def test_intersectional_description():
    phrases = {"gender_identity": {"Female": "a woman"}, "political_ideology": {"Moderate": "politically moderate"}}
    s = describe_agent({"age_group": "65 or older", "gender_identity": "Female", "race_ethnicity": "Black",
                        "political_ideology": "Moderate"}, phrases, "a person who is %attributes%")
    assert s == "a person who is 65 or older, a woman, Black and politically moderate"
    assert describe_agent({"g": "x"}, {}, "someone %attributes%") == "someone x"
    assert agent_description({"age_group": "65+", "gender_identity": "Female", "race_ethnicity": "Black",
                              "political_ideology": "Moderate"}, load_population("us_adults").phrases) == (
        "a person who is 65 or older, a woman, Black and politically moderate")


def test_phrases_must_name_known_attributes(tmp_path):
    path = write_pop(tmp_path, {"marginals": GOOD_MARGINALS}, phrases={"age_group": {"teen": "a teenager"}})
    with pytest.raises(LouderError, match="group 'age_group' has no attribute 'teen'"):
        load_population(path)


@pytest.mark.parametrize("item", [3, None, "", ["gender_identity"]])
def test_bad_group_entries_get_one_line(tmp_path, item):
    path = write_pop(tmp_path, {"marginals": GOOD_MARGINALS}, groups=[AGE, "gender_identity", item])
    with pytest.raises(LouderError) as e:
        load_population(path)
    assert "\n" not in str(e.value) and "groups.2" in str(e.value)


def test_description_fills_the_persona_prompt():
    from louder.prompts import Prompts
    from louder.scenarios import load_scenario

    words = agent_description({"gender_identity": "Non-binary", "race_ethnicity": "Hispanic/Latino"})
    assert words == "a person who is non-binary and Hispanic or Latino"
    prompt = Prompts().persona(words, "contextualized", load_scenario("emergency_response"), False, "chat")
    assert "the following demographic: a person who is non-binary and Hispanic or Latino." in prompt


def test_single_group_population(tmp_path):
    path = write_pop(tmp_path, {"marginals": {"gender_identity": {"Male": 1, "Female": 2, "Non-binary": 1}}},
                     groups=["gender_identity"])
    a = draw_agents(load_population(path), 8, seed=0)
    assert a["gender_identity"].value_counts().to_dict() == {"Female": 4, "Male": 2, "Non-binary": 2}
