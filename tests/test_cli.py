"""CLI: bad flags and config fields give one line naming the field and the allowed values."""

import json

from typer.testing import CliRunner

from louder.cli import app

runner = CliRunner()


def test_unknown_scenario_lists_valid_ids(tmp_path):
    r = runner.invoke(app, ["run", "--out", str(tmp_path), "--scenario", "flood"])
    assert r.exit_code == 2
    assert "unknown scenario 'flood'" in r.output and "emergency_response" in r.output
    assert "Traceback" not in r.output


def test_unknown_condition_and_model(tmp_path):
    r = runner.invoke(app, ["run", "--out", str(tmp_path), "--condition", "persona"])
    assert r.exit_code == 2 and "conditions" in r.output and "no_persona" in r.output
    r = runner.invoke(app, ["run", "--out", str(tmp_path), "--model", "gpt4"])
    assert r.exit_code == 2 and "models.0.spec" in r.output and "openai:MODEL" in r.output


def test_bad_config_file_field(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("simulation: {agents: -3, scenarios: [emergency_response]}\ncolour: blue\n")
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "agents" in r.output and "greater than or equal to 1" in r.output and "colour" in r.output
    f.write_text("agents: [1\n")
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "not valid YAML" in r.output


def test_missing_openai_key_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = runner.invoke(app, ["run", "--out", str(tmp_path), "--model", "openai:gpt-4o", "--agents", "1"])
    assert r.exit_code == 2 and "OPENAI_API_KEY" in r.output


def test_run_from_yaml_against_local_server(fake_server, tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(f"models: ['openai:fake@{fake_server.url}']\n"
                 "simulation: {scenarios: [authority_compliance], groups: [political_ideology], agents: 2}\n")
    r = runner.invoke(app, ["run", str(f), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "Very Conservative" in r.output and "model_calls: 20" in r.output
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["rows"]["decisions"] == 10


def test_dry_run_counts_calls_and_calls_nothing(fake_server, tmp_path):
    from louder.config import build_config
    from louder.simulation.runner import count_calls

    r = runner.invoke(app, ["run", "--out", str(tmp_path / "dry"), "--dry-run", "-n", "7", "-m", "openai:gpt-4o",
                            "-m", f"openai:fake@{fake_server.url}", "-c", "contextualized", "-c", "no_persona"])
    assert r.exit_code == 0, r.output
    expected = count_calls(build_config(dict(agents=7, conditions=["contextualized", "no_persona"])))
    assert f"{expected:,}" in r.output and "local: free" in r.output and "USD per 1M tokens" in r.output
    assert not fake_server.requests and not (tmp_path / "dry").exists()


def test_backends_lists_the_registry(monkeypatch):
    """`louder backends` reads the registry: a backend registered from outside appears with its capabilities."""
    from louder.llm.registry import BackendInfo, register, unregister

    register(BackendInfo("mine", lambda *a: None, forms=("mine:MODEL",), can_score=False, needs_key="MINE_KEY"))
    try:
        r = runner.invoke(app, ["backends"], env={"COLUMNS": "200"})
    finally:
        unregister("mine")
    assert r.exit_code == 0, r.output
    rows = {line.split("│")[1].strip(): line for line in r.output.splitlines() if line.count("│") > 5}
    assert {"embedded", "openai", "ollama", "fake", "mine"} <= set(rows)
    assert "$MINE_KEY" in rows["mine"] and "remote" in rows["mine"]
    assert "here" in rows["embedded"]
