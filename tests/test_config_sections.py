"""Nested config sections, and the old flat keys still working with a deprecation warning."""

import re
import warnings

import pandas as pd
import pytest

from louder.config import build_config, load_config
from louder.errors import LouderError

NESTED = """
models: [fake]
seed: 3
simulation:
  agents: 7
  groups: [gender_identity]
  decision: {temperature: 0.3, max_tokens: 100}
explicit:
  trials: 12
  params: {temperature: 0.1, max_tokens: 90}
association:
  trials: 5
  variations: [synonym]
decision_test:
  trials: 9
  variant: absolute
"""

FLAT = """
models: [fake]
seed: 3
agents: 7
groups: [gender_identity]
decision: {temperature: 0.3, max_tokens: 100}
probe_trials: 12
explicit: {temperature: 0.1, max_tokens: 90}
association_trials: 5
association_variations: [synonym]
decision_trials: 9
decision_variant: absolute
"""


def test_nested_sections_and_flat_keys_give_the_same_config(tmp_path):
    (tmp_path / "nested.yaml").write_text(NESTED)
    (tmp_path / "flat.yaml").write_text(FLAT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the nested form warns about nothing
        nested = load_config(tmp_path / "nested.yaml")
    with pytest.warns(FutureWarning, match=r"agents → simulation\.agents.*probe_trials → explicit\.trials") as w:
        flat = load_config(tmp_path / "flat.yaml")
    assert len(w) == 1
    assert nested == flat
    assert (nested.simulation.agents, nested.explicit.trials, nested.explicit.params.max_tokens,
            nested.association.trials, nested.decision_test.variant) == (7, 12, 90, 5, "absolute")


def test_unknown_key_in_a_section_names_it(tmp_path):
    (tmp_path / "bad.yaml").write_text("explicit:\n  trails: 3\n")
    with pytest.raises(LouderError, match=r"explicit\.trails is not a field of explicit"):
        load_config(tmp_path / "bad.yaml")


def test_a_component_reads_its_own_part():
    """`part` hands a component its section under the nested names, plus the shared fields only."""
    from louder.config import part

    cfg = build_config({"association": {"trials": 7, "variations": ["synonym"]}, "decision_test": {"trials": 3},
                        "seed": 11})
    a = part(cfg, "association")
    assert (a.trials, a.variations, a.seed) == (7, ["synonym"], 11)
    assert a.params.max_tokens == cfg.association.params.max_tokens
    assert not hasattr(a, "decision_trials") and not hasattr(a, "agents")  # nothing of other sections
    assert part(cfg, "decision_test").trials == 3


# --- issue 31.4: sections beside their code; old flat keys and old manifests still read -------------

def test_every_flat_key_of_earlier_versions_lands_in_its_section():
    """Each flat key alone gives the config its nested key gives (a value other than the default)."""
    from louder.config import MOVED, SECTION_MODELS
    from louder.sections import FLAT

    for flat, (section, field) in FLAT.items():  # the table of the old keys names fields that exist
        assert field in SECTION_MODELS[section].model_fields, flat

    values = {"agents": 7, "scenarios": ["emergency_response"], "groups": ["gender_identity"],
              "conditions": ["no_persona"], "decision_mode": "score", "score_pick": "draw", "constrain_choices": False,
              "reask": 2, "variants": ["base"], "choice_order": "balanced", "wordings": ["all"],
              "signal": ["stated"], "reasoning": ["off"], "rounds": 0, "no_influence": False,
              "control": {"rule": "threshold"}, "mode": "agents", "replicates": 3, "buckets": 4,
              "probe_trials": 5, "association_trials": 3, "association_variations": ["synonym"], "decision_trials": 4,
              "decision_variant": "absolute", "decision_extraction": "judge", "belief_trials": 9}
    params = {"temperature": 0.3, "max_tokens": 33}
    for flat, path in MOVED.items():
        if flat in ("names", "twins", "twin_groups", "twin_rewriter", "mode", "replicates", "buckets"):
            continue  # population settings and the names file need their section's other keys: below
        value = values.get(flat, params)
        section, key = path.split(".")
        with pytest.warns(FutureWarning, match=rf"{flat} → {path}"):
            old = load_config({flat: value})
        assert old == build_config({section: {key: value}}), flat
    pop = {"population": "us_gender_ideology", "twins": True, "twin_groups": ["gender_identity"], "mode": "agents"}
    with pytest.warns(FutureWarning, match=r"twins → population\.twins, twin_groups → population\.twin_groups"):
        old = load_config(pop)
    assert old.population.file == "us_gender_ideology" and old.population.twins and old.population.twin_groups


def test_a_misspelt_key_or_section_gets_a_suggestion():
    for doc, hint in (({"agnets": 3}, "did you mean simulation.agents?"),
                      ({"simulaton": {"agents": 3}}, "did you mean simulation?"),
                      ({"simulation": {"wording": ["all"]}}, "did you mean simulation.wordings?"),
                      ({"simulation": {"persona": {"temprature": 0.5}}},
                       "did you mean simulation.persona.temperature?"),
                      ({"influence": {"round": 2}}, "did you mean influence.rounds?"),
                      ({"models": [{"spec": "fake", "n_thread": 2}]}, "did you mean models.0.n_threads?")):
        with pytest.raises(LouderError, match=re.escape(hint)) as e:
            build_config(doc)
        assert "\n" not in str(e.value)


def test_one_field_given_flat_and_nested_is_refused():
    with pytest.raises(LouderError, match=r"simulation\.agents is given twice"):
        build_config({"agents": 3, "simulation": {"agents": 4}})


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_manifests_of_earlier_versions_are_read(tmp_path):
    """A manifest written before sections records the flat config; `louder analyze` reads it the same."""
    import json

    import louder
    from louder.config import MOVED, recorded

    flat = {"agents": 3, "groups": ["gender_identity"], "decision_mode": "score", "probe_trials": 4,
            "explicit": {"temperature": 0.2, "max_tokens": 200}, "population": "us_adults"}
    nested = build_config({k: v for k, v in flat.items() if k != "population"}).model_dump(mode="json")
    for path, want in (("simulation.agents", 3), ("simulation.groups", ["gender_identity"]),
                       ("simulation.decision_mode", "score"), ("explicit.trials", 4), ("population.file", "us_adults"),
                       ("explicit.params", {"temperature": 0.2, "max_tokens": 200}), ("seed", None)):
        assert recorded(flat, path) == want, path
    assert recorded(nested, "simulation.groups") == ["gender_identity"] and recorded(nested, "explicit.trials") == 4
    config = {"models": ["fake:seed=2,bias=female:0.9"], "sequential": {"budget": 8, "wave": 4},
              "simulation": {"scenarios": ["negative_information_sharing"], "groups": ["gender_identity"],
                             "decision_mode": "score"}}
    run = louder.run(config, out=tmp_path / "r", progress=False)
    now = run.analyze(bootstrap=200)["cases"]
    manifest = tmp_path / "r" / "manifest.json"
    m = json.loads(manifest.read_text("utf-8"))
    old = {k: v for k, v in m["config"].items() if not isinstance(v, dict) or k in ("network", "sequential")}
    for flat_key, path in MOVED.items():  # the shape louder wrote before sections
        section, key = path.split(".")
        if isinstance(m["config"].get(section), dict) and key in m["config"][section]:
            old[flat_key] = m["config"][section][key]
    manifest.write_text(json.dumps({**m, "config": old}), "utf-8")
    before = louder.open(tmp_path / "r").analyze(bootstrap=200)["cases"]
    pd.testing.assert_frame_equal(now, before)
    assert (before.loc[before["kind"] == "implicit", "ci_low_p"].notna()).all()  # read as score mode


def test_a_flag_of_the_population_section_keeps_the_configs_population():
    """`louder run examples/population.yaml --no-twins` is that population without twins (a population
    section of flags only was read as "no population", and the run silently became a plain one)."""
    from pathlib import Path

    example = Path(__file__).parents[1] / "examples" / "population.yaml"
    base = load_config(example)
    c = load_config(example, {"twins": False})
    assert base.population is not None and c.population is not None
    assert c.population.file == base.population.file and c.population.twins is False
    with pytest.raises(LouderError, match="twins"):
        load_config(None, {"twins": True})  # flags alone: still no population to twin
