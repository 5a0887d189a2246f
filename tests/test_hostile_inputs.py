"""Issue 36.7: the hostile inputs left over from the fault-injection audit, each one clear line (no
traceback), and the same failure labelled alike by both OpenAI clients."""

from __future__ import annotations

import pytest
from fake_openai import FakeOpenAIServer
from typer.testing import CliRunner

from louder.cli import app
from louder.config import load_config
from louder.llm.base import Request
from louder.llm.spec import ModelConfig, build_backend

runner = CliRunner()


def one_line_error(r) -> str:
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    err = r.stderr.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    return err


def test_a_config_that_is_not_utf8_is_one_line(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_bytes(b"models: [fake]\nrun_id: caf\xe9\n")
    err = one_line_error(runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")]))
    assert f"config file {f}: not UTF-8 text (byte 0xe9" in err and "save it as UTF-8" in err


def test_an_empty_config_is_an_error_naming_the_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("# nothing yet\n")
    err = one_line_error(runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")]))
    assert f"config file {f}: is empty" in err
    assert not (tmp_path / "o").exists()  # nothing ran (before: the defaults, on the embedded model)


def test_out_naming_an_existing_file_is_one_line(tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("mine\n")
    err = one_line_error(runner.invoke(app, ["run", "--out", str(f), "--model", "fake", "--agents", "1"]))
    assert f"--out {f}: is a file, not a folder" in err and f.read_text() == "mine\n"


def test_error_text_keeps_its_brackets(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("id: Bad-Id\nname: x\nsituation: x\nchoices: [a, b]\ntarget: a\npersona_context: x\n")
    r = runner.invoke(app, ["run", "--out", str(tmp_path / "o"), "--model", "fake", "--scenario", str(bad)])
    assert r.exit_code == 2 and "'^[a-z0-9_]+$'" in r.stderr, r.stderr  # rich markup no longer eats [a-z0-9_]


def test_help_text_keeps_its_brackets():
    r = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "250", "TERMINAL_WIDTH": "250"})
    assert "openai:MODEL[@URL]" in r.output, r.output


def test_a_scenario_file_that_is_not_utf8_is_named(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_bytes(b"id: s\nname: \xff\xfe\n")
    err = one_line_error(runner.invoke(app, ["run", "--out", str(tmp_path / "o"), "--model", "fake",
                                              "--scenario", str(bad)]))
    assert f"scenario file {bad}: not UTF-8 text" in err


def test_json_mode_off_unquoted_is_off(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("models:\n  - spec: openai:m@http://127.0.0.1:9/v1\n    json_mode: off\n")  # YAML reads false
    assert load_config(f).models[0].json_mode == "off"


def test_a_section_takes_a_partial_override_of_its_defaults(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("models: [fake]\nsimulation:\n  persona: {temperature: 0.5}\ninfluence: {control: {rule: threshold}}\n"
                 "explicit: {params: {temperature: 0.9}}\n")
    c = load_config(f)
    assert (c.simulation.persona.temperature, c.simulation.persona.max_tokens) == (0.5, 400)  # the default's
    assert (c.influence.control.rule, c.influence.control.self_weight) == ("threshold", 0.5)
    assert (c.explicit.params.temperature, c.explicit.params.max_tokens) == (0.9, 200)
    with pytest.raises(Exception, match="persona.temperature"):
        load_config({"simulation": {"persona": {"temperature": 9}}})  # what it names is still checked


@pytest.mark.parametrize("client", ["langchain", "http"])
@pytest.mark.parametrize("payload", [
    {"id": "x", "object": "chat.completion", "choices": []},
    {"id": "x", "object": "chat.completion"},
    ["not", "an", "object"],
], ids=["empty choices", "no choices", "a list"])
def test_both_clients_label_a_response_of_the_wrong_shape_alike(client, payload):
    server = FakeOpenAIServer(behaviour=lambda n, prompt, body: (200, payload, {}))
    server.start()
    try:
        spec = f"openai:fake@{server.url}"
        backend = build_backend(spec, ModelConfig(spec=spec, client=client, max_attempts=1, json_mode="off"))
        r = backend.generate(Request(messages=(("user", "hi"),)))
        assert r.error_cause == "bad_response" and r.error.startswith("bad_response: "), r.error
    finally:
        server.stop()
