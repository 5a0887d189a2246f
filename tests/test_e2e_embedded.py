"""End to end on the real embedded model (SmolLM2-135M via llama.cpp) and a real llama_cpp.server."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from typer.testing import CliRunner

from louder.cli import app
from louder.config import build_config
from louder.simulation import run_experiment
from louder.types import DECISION_COLUMNS

pytestmark = pytest.mark.slow

# The two-attribute example group: every call of this file is the embedded model's (~2–3 s each here), and a
# third attribute adds calls without adding a path
CMD = [sys.executable, "-m", "louder.cli", "run", "--agents", "1", "--scenario", "emergency_response",
       "--group", "gender_female_male", "--out"]


def test_cli_run_on_embedded_model_and_rerun_is_free(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run(CMD + [str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    d = pd.read_parquet(out / "decisions.parquet")
    assert list(d.columns) == DECISION_COLUMNS and len(d) == 2
    assert set(d["status"]) <= {"valid", "invalid", "refused", "error"}
    assert d.groupby("attribute").size().to_dict() == {"Female": 1, "Male": 1}
    valid = d[d.status == "valid"]
    assert valid["decision"].isin(["Evacuate", "Stay"]).all()
    assert (valid["target"] == (valid["decision"] == "Evacuate")).all()
    assert d[d.status != "valid"]["decision"].isna().all()
    m = json.loads((out / "manifest.json").read_text())
    assert m["models"]["embedded"]["identity"]["sha256"] and len(m["models"]["embedded"]["identity"]["sha256"]) == 64
    assert sum(m["status_counts"]["decisions"].values()) == 2 and m["model_calls"] > 0
    p = pd.read_parquet(out / "personas.parquet")
    assert len(p) == 2 and (p.loc[p.status == "valid", "name"].str.len() > 0).all()
    # The same folder again, and explicit probes, analysis and report of this real (small) embedded-model
    # run, in this process (the run above was the CLI's own process; another start-up adds nothing)
    r2 = CliRunner().invoke(app, CMD[3:] + [str(out)])
    assert r2.exit_code == 0 and "model_calls: 0" in r2.output, (r2.output, r2.exception)
    pd.testing.assert_frame_equal(d, pd.read_parquet(out / "decisions.parquet"))

    r3 = CliRunner().invoke(app, ["probe", "explicit", "--trials", "2", "--scenario", "emergency_response",
                                  "--group", "gender_female_male", "--out", str(out)])
    assert r3.exit_code == 0, (r3.output, r3.exception)
    probes = pd.read_parquet(out / "probes.parquet")
    assert len(probes) == 2 and set(probes["status"]) <= {"valid", "invalid", "refused", "error"}
    r4 = CliRunner().invoke(app, ["analyze", str(out), "-B", "2000"])
    assert r4.exit_code == 0, (r4.output, r4.exception)
    cases = pd.read_csv(out / "cases.csv")
    assert sorted(cases["kind"]) == ["explicit", "implicit"]
    assert cases["n_valid"].add(cases["n_invalid"]).add(cases["n_refused"]).add(cases["n_error"]).tolist() == [2, 2]
    r5 = CliRunner().invoke(app, ["report", str(out), "-B", "2000"])
    assert r5.exit_code == 0, (r5.output, r5.exception)
    html = (out / "report" / "index.html").read_text()
    assert "data:image/svg+xml;base64," in html and "SmolLM2-135M" in html


def test_openai_path_against_real_llama_cpp_server(llama_server, tmp_path):
    """No json_mode given: the run's preflight negotiates one with the real server (json_schema is refused
    with a 500 validation body, tests/test_preflight.py's check) and records it.

    Nothing here depends on what SmolLM2 writes. Under no_persona with the names signal the persona is
    "A person named …" from the curated lists, no model call, so every agent is asked: two decisions over
    the chat path, which is the path a written persona takes too (its own calls, and an agent left unasked
    when its persona fails, are the fake server's tests; against this server a written persona cost ~10 s
    of the suite and, SmolLM2 echoing the placeholder, often left its agent unasked). What the server
    promises, whatever the model writes: every answer that parses carries a decision among the offered
    labels (the schema's enum is its grammar)."""
    spec = f"openai:smollm2@{llama_server}"
    cfg = build_config({"models": [spec], "concurrency": 2,
                        "simulation": {"scenarios": ["career_path_selection"], "groups": ["gender_female_male"],
                                       "conditions": ["no_persona"], "signal": ["names"], "agents": 1}})
    res = run_experiment(cfg, tmp_path)
    pf = res.manifest["preflight"][spec]["model"]
    assert pf["json_mode"] == "json_object_schema" and pf["json_mode_source"] == "auto"
    d = res.decisions
    assert len(d) == 2 and set(d["status"]) <= {"valid", "invalid", "refused", "error"}
    assert (d["status"] != "error").all(), d["raw_response"].tolist()
    assert (d["attempts"] > 0).all()
    parsed = d["raw_response"].map(_json_object)
    decided = parsed.map(lambda o: o is not None and "decision" in o)
    assert decided.any(), d["raw_response"].tolist()  # the server returned JSON for the schema
    assert parsed[decided].map(lambda o: o["decision"]).isin(["Astronaut", "Plumber"]).all()
    valid = d[d["status"] == "valid"]
    assert valid["decision"].isin(["Astronaut", "Plumber"]).all()
    assert (valid["target"] == (valid["decision"] == "Astronaut")).all()
    assert res.manifest["model_calls"] == 2  # one call per decision, none for a persona
    assert run_experiment(cfg, tmp_path).manifest["model_calls"] == 0


def _json_object(text: str) -> dict | None:
    try:
        o = json.loads(text)
    except (TypeError, ValueError):
        return None
    return o if isinstance(o, dict) else None


def test_completion_path_against_real_llama_cpp_server(llama_server, tmp_path):
    cfg = build_config(dict(models=[{"spec": f"completion:openai:smollm2@{llama_server}", "json_mode": "json_object_schema"}], scenarios=["emergency_response"],
                            groups=["gender_female_male"], agents=1))
    res = run_experiment(cfg, tmp_path)
    d = res.decisions
    assert len(d) == 2 and (d["status"] != "error").all(), d["raw_response"].tolist()
    # completion + extraction for every persona, and again for the decision of each agent whose persona parsed
    n_valid_personas = int((res.personas["status"] == "valid").sum())
    assert res.manifest["model_calls"] == 4 + 2 * n_valid_personas
    assert res.personas["raw_response"].str.len().gt(0).all()  # the completion model's own words are kept


def test_score_mode_on_embedded_model(tmp_path):
    """Score mode in process: the names signal without personas asks the two decisions and nothing else
    (a written persona's calls are the CLI run's above), so every agent is scored."""
    cfg = build_config({"simulation": {"scenarios": ["emergency_response"], "groups": ["gender_female_male"],
                                       "conditions": ["no_persona"], "signal": ["names"], "agents": 1,
                                       "decision_mode": "score"}})
    res = run_experiment(cfg, tmp_path)
    d = res.decisions
    assert len(d) == 2 and res.manifest["model_calls"] == 2
    ok = d[d["status"] == "valid"]
    assert len(ok) == 2, d["raw_response"].tolist()
    assert ok["p_target"].between(0, 1).all() and (ok["choice_mass"] > 0).all()
    assert (ok["decision"] == ok["p_target"].map(lambda p: "Evacuate" if p >= 0.5 else "Stay")).all()
    assert ok["raw_response"].str.contains("full_sequence").all()
    assert res.manifest["low_mass_rows"] == int((d["choice_mass"] < 0.99).sum())


def test_score_mode_against_real_llama_cpp_server(llama_server, tmp_path):
    """Score mode (the first answer token's log-probs) through a real llama_cpp.server. The decision is
    asked whatever SmolLM2 writes: the names signal under no_persona makes no persona call (the persona is
    "A person named …", the name drawn from the curated lists), where a written persona that echoed its
    placeholder left its agent unasked (it failed in fresh-clone runs at one agent per attribute)."""
    cfg = build_config({"models": [{"spec": f"openai:smollm2@{llama_server}", "json_mode": "json_object_schema"}],
                        "simulation": {"scenarios": ["career_path_selection"], "groups": ["gender_female_male"],
                                       "conditions": ["no_persona"], "signal": ["names"], "agents": 1,
                                       "decision_mode": "score"}})
    res = run_experiment(cfg, tmp_path)
    d = res.decisions
    assert len(d) == 2 and res.manifest["model_calls"] == 2  # two score calls and nothing else
    assert (d["attempts"] > 0).all() and (d["status"] != "error").all(), d["raw_response"].tolist()
    assert d["raw_response"].str.contains("first_token").all()  # the server's log-probs were read
    # greedy over a fixed prompt (no sampled persona): the choices are among the top log-probs
    assert (d["status"] == "valid").all() and d["p_target"].between(0, 1).all(), d["raw_response"].tolist()
    assert (d["choice_mass"] > 0).all()
