"""Property-based tests: any invalid config or data file gets one LouderError naming the field,
never a traceback."""

import itertools

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from louder.analysis.stats.directions import load_predictions
from louder.analysis.stats.rationales import load_patterns
from louder.config import ExperimentConfig, build_config
from louder.errors import LouderError
from louder.scenarios import load_group, load_scenario

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)
CONFIG_FIELDS = list(ExperimentConfig.model_fields)
config_docs = st.dictionaries(st.one_of(st.sampled_from(CONFIG_FIELDS), st.text(min_size=1, max_size=10)), values,
                              max_size=5)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(config_docs)
@example({"mix": {"\r": False}})  # a name printed as it was broke the line (found by a fresh clone's draws)
@example({"mix": {"a\nb": 0.5, "embedded": "\n"}})
def test_any_config_document_is_valid_or_one_clear_error(doc):
    try:
        build_config(doc)
    except LouderError as e:
        msg = str(e)
        assert msg.startswith("config")
        # Every line names a field of the document (or the top level) and says what is wrong.
        for line in msg.splitlines():
            named = [k for k in CONFIG_FIELDS + ["(top level)"] if f": {k}" in line]
            assert named or "unknown field" in line or "unknown scenario" in line or "unknown group" in line, line
            assert len(line) > len("config: x: ")


SCENARIO_FIELDS = ["id", "name", "situation", "choices", "target", "persona_context", "explicit", "notes",
                   "completion", "source"]
GROUP_FIELDS = ["id", "name", "attributes", "explicit", "source"]
counter = itertools.count()


def _write(tmp_path, doc) -> str:
    path = tmp_path / f"doc{next(counter)}.yaml"  # a fresh path: loaders cache by reference
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, allow_unicode=True))
    return str(path)


def _valid_scenario() -> dict:
    return dict(id="s", name="S", situation="x", choices=[{"label": "A"}, {"label": "B"}], target="A",
                persona_context="c")


@SETTINGS
@given(st.dictionaries(st.sampled_from(SCENARIO_FIELDS + ["extra"]), values, max_size=6),
       st.booleans())
def test_any_scenario_file_is_valid_or_one_clear_error(tmp_path, patch, start_valid):
    doc = {**_valid_scenario(), **patch} if start_valid else patch
    path = _write(tmp_path, doc)
    try:
        load_scenario(path)
    except LouderError as e:
        assert path in str(e)
        assert "Traceback" not in str(e)


@SETTINGS
@given(st.dictionaries(st.sampled_from(GROUP_FIELDS + ["extra"]), values, max_size=5))
def test_any_group_file_is_valid_or_one_clear_error(tmp_path, doc):
    path = _write(tmp_path, doc)
    try:
        load_group(path)
    except LouderError as e:
        assert path in str(e)


@SETTINGS
@given(st.text(max_size=60))
def test_any_text_as_a_data_file_is_valid_or_one_clear_error(tmp_path, text):
    for loader in (load_scenario, load_group):
        path = _write(tmp_path, text)
        try:
            loader(path)
        except LouderError as e:
            assert path in str(e)


@SETTINGS
@given(values)
def test_analysis_data_files_are_valid_or_one_clear_error(tmp_path, doc):
    for loader, name in ((load_predictions, "predictions"), (load_patterns, "patterns")):
        path = _write(tmp_path, {name: doc} if isinstance(doc, list) else doc)
        try:
            loader(path)
        except LouderError as e:
            assert path in str(e)


def test_a_wrong_field_is_named_with_its_fix():
    try:
        build_config({"agents": "many", "scenarios": ["flood"]})
    except LouderError as e:
        msg = str(e)
    assert "agents" in msg
    try:
        build_config({"scenarios": ["flood"]})
    except LouderError as e:
        msg = str(e)
    assert "unknown scenario 'flood'" in msg and "emergency_response" in msg
