"""Nested config sections, and the old flat keys still working with a deprecation warning."""

import warnings

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
