"""Policy variants of a scenario: loading, one-line errors, and the variant dimension of a plain run."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from louder.analysis.stats.population import variant_effects
from louder.config import build_config
from louder.errors import LouderError
from louder.kinds import count_calls
from louder.scenarios import BASE, load_scenario
from louder.simulation import run_experiment
from louder.types import DECISION_COLUMNS


def test_example_variants_change_only_the_message():
    s = load_scenario("emergency_response_policy")
    assert s.variant_ids == [BASE, "mandatory", "plain_language"]
    base = load_scenario("emergency_response")
    assert s.prompt_text() == base.prompt_text() and s.variant(BASE) is s
    for v in ("mandatory", "plain_language"):
        sv = s.variant(v)
        assert sv.prompt_text() != s.prompt_text()
        assert (sv.id, sv.labels, sv.target, sv.persona_context) == (s.id, s.labels, s.target, s.persona_context)
    assert "mandatory evacuation order" in s.variant("mandatory").situation
    assert "National Weather Service" not in s.variant("plain_language").situation


def write_scenario(tmp_path, variants) -> str:
    doc = yaml.safe_load(open(load_scenario.__globals__["DATA"].joinpath("scenarios", "emergency_response.yaml")
                              .__fspath__(), encoding="utf-8"))
    doc["variants"] = variants
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("variants, message", [
    ([{"id": "x", "replace": [{"find": "no such text", "with": "y"}]}], "does not occur"),
    ([{"id": "base", "situation": "other"}], "reserved"),
    ([{"id": "x"}], "changes nothing"),
    ([{"id": "x", "situation": "a"}, {"id": "x", "situation": "b"}], "distinct"),
    ([{"id": "x", "choices": {"Run": "run away"}}], "not labels of the scenario"),
    ([{"id": "x", "situation": "a", "colour": 1}], "unknown field"),
])
def test_bad_variants_fail_with_one_line(tmp_path, variants, message):
    with pytest.raises(LouderError) as e:
        load_scenario(write_scenario(tmp_path, variants))
    assert message in str(e.value) and "\n" not in str(e.value) and "s.yaml" in str(e.value)


def test_unknown_variant_in_config_is_one_line():
    with pytest.raises(LouderError) as e:
        build_config(dict(scenarios=["emergency_response_policy", "emergency_response"],
                          variants=["base", "mandatory"]))
    msg = str(e.value)
    assert "\n" not in msg and "scenario emergency_response has no variant 'mandatory'" in msg
    with pytest.raises(LouderError, match="no variant 'voluntary'"):
        build_config(dict(scenarios=["emergency_response_policy"], variants=["voluntary"]))
    with pytest.raises(LouderError, match="listed more than once"):
        build_config(dict(scenarios=["emergency_response_policy"], variants=["base", "base"]))


def cfg(**kw):
    base = dict(models=["fake:seed=1,bias=mandatory:0.9"], scenarios=["emergency_response_policy"],
                groups=["gender_identity"], agents=40, concurrency=4)
    return build_config({**base, **kw})


def test_variants_share_personas_and_recover_a_known_effect(tmp_path):
    plain = run_experiment(cfg(), tmp_path)
    assert list(plain.decisions.columns) == DECISION_COLUMNS  # base only: the seed pipeline's columns
    assert plain.manifest["model_calls"] == 2 * 3 * 40 == count_calls(cfg())
    both = run_experiment(c := cfg(variants=["base", "mandatory"]), tmp_path)
    # the base rows and the personas come from the cache: only the new variant's decisions are called
    assert both.manifest["model_calls"] == 3 * 40 and count_calls(c) == 3 * 40 * 3
    d = both.decisions
    assert list(d.columns) == DECISION_COLUMNS + ["variant"] and len(d) == 2 * 3 * 40
    base = d[d["variant"] == "base"].drop(columns=["variant", "run_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(base, plain.decisions.drop(columns="run_id"))
    wide = d.pivot_table(index=["attribute", "replicate"], columns="variant", values="persona", aggfunc="first")
    assert (wide["base"] == wide["mandatory"]).all()  # the same persona faces both variants
    assert (d["status"] == "valid").all()
    eff = variant_effects(d.assign(attr=d["attribute"]), "attr", "base", "mandatory", B=2000)
    overall = d.groupby("variant")["target"].mean()
    assert overall["mandatory"] - overall["base"] == pytest.approx(0.4, abs=0.12)  # fake: 0.9 vs 0.5
    assert len(eff) == 3 and (eff["lo"] > 0).all()


def test_analyze_a_plain_run_with_variants(tmp_path):
    from louder.analysis import analyze

    run_experiment(cfg(variants=["base", "mandatory"], agents=30), tmp_path)
    a = analyze(tmp_path, bootstrap=500)
    assert set(a.tables["cases"]["scenario"]) == {"emergency_response_policy", "emergency_response_policy [mandatory]"}
    eff = a.tables["variant_effects"]
    assert list(eff["attribute"]) == ["Female", "Male", "Non-binary"] and (eff["group"] == "gender_identity").all()
    assert (eff["difference"] > 0).all()  # fake: 0.9 under the mandatory order, 0.5 under base
    rates = a.tables["variant_rates"]
    allrows = rates[rates["attribute"] == "(all)"]
    assert (allrows[["n_valid", "n_invalid", "n_refused", "n_error"]].sum(axis=1) == 90).all()
    assert len(a.tables["variant_dpd"]) == 1 and "population_groups" not in a.tables
    assert (tmp_path / "variant_effects.csv").exists()
