"""The simulation pipeline end to end against a deterministic OpenAI-compatible server on 127.0.0.1."""

import json

import pandas as pd

from louder.config import build_config
from louder.simulation import run_experiment
from louder.simulation.runner import count_calls
from louder.types import DECISION_COLUMNS


def cfg(url, **kw):
    base = dict(models=[{"spec": f"openai:fake@{url}", "max_attempts": 2, "timeout_s": 5}],
                scenarios=["emergency_response", "career_path_selection"], groups=["gender_identity"],
                agents=3, concurrency=8)
    base.update(kw)
    return build_config(base)


def test_run_writes_the_contract(fake_server, tmp_path):
    run_experiment(cfg(fake_server.url), tmp_path)
    d = pd.read_parquet(tmp_path / "decisions.parquet")
    assert list(d.columns) == DECISION_COLUMNS
    assert len(d) == 2 * 3 * 3 and (d["status"] == "valid").all()
    assert d.groupby(["scenario", "attribute"]).size().eq(3).all()
    assert set(d.loc[d.scenario == "emergency_response", "decision"]) <= {"Evacuate", "Stay"}
    assert (d["target"] == (d["decision"].isin(["Evacuate", "Astronaut"]))).all()
    assert d["p_target"].isna().all()
    assert not d.duplicated(["model", "condition", "scenario", "group", "attribute", "replicate"]).any()
    p = pd.read_parquet(tmp_path / "personas.parquet")
    assert len(p) == 18 and p["name"].str.startswith("Agent").all()
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["model_calls"] == 36 == count_calls(res_cfg := cfg(fake_server.url)) and m["cache_hits"] == 0
    assert m["status_counts"]["decisions"] == {"valid": 18, "invalid": 0, "refused": 0, "error": 0}
    assert m["models"][f"openai:fake@{fake_server.url}"]["identity"]["base_url"] == fake_server.url
    assert set(m["prompt_template_sha256"]) >= {"persona.contextualized", "action.chat"}
    assert m["config"]["simulation"]["agents"] == 3 and res_cfg.simulation.agents == 3
    # Temperatures and seeds of the paper reach the server.
    bodies = [r["body"] for r in fake_server.requests]
    assert {b["temperature"] for b in bodies} == {0.7, 0.2}
    assert len({b["seed"] for b in bodies if b["temperature"] == 0.7}) == 18


def test_rerun_makes_zero_calls_and_same_rows(fake_server, tmp_path):
    first = run_experiment(cfg(fake_server.url), tmp_path)
    n = len(fake_server.requests)
    second = run_experiment(cfg(fake_server.url), tmp_path)
    assert len(fake_server.requests) == n
    assert second.manifest["model_calls"] == 0 and second.manifest["cache_hits"] == 36
    pd.testing.assert_frame_equal(first.decisions.drop(columns="run_id"), second.decisions.drop(columns="run_id"))


def test_more_agents_reuses_the_first_ones(fake_server, tmp_path):
    small = run_experiment(cfg(fake_server.url, agents=2), tmp_path)
    big = run_experiment(cfg(fake_server.url, agents=3), tmp_path)
    assert big.manifest["model_calls"] == 2 * 3 * 2  # only the new replicate: persona + decision
    keys = ["scenario", "attribute", "replicate"]
    merged = small.decisions.merge(big.decisions, on=keys, suffixes=("_s", "_b"))
    assert (merged["decision_s"] == merged["decision_b"]).all() and (merged["name_s"] == merged["name_b"]).all()


def test_statuses_for_off_list_refusal_and_server_errors(fake_server, tmp_path):
    def behaviour(n, prompt, body):
        if '"decision"' not in prompt:
            return None
        if "Agent 1" in prompt or body["seed"] % 4 == 0:
            return (500, {"error": {"message": "boom"}}, {})
        if body["seed"] % 4 == 1:
            return '{"decision": "Run away", "rationale": "fast"}'
        if body["seed"] % 4 == 2:
            return "I'm sorry, but I can't help with that."
        return None

    fake_server.behaviour = behaviour
    res = run_experiment(cfg(fake_server.url, agents=8), tmp_path)
    d = res.decisions
    assert len(d) == 2 * 3 * 8  # nothing dropped
    counts = d["status"].value_counts().to_dict()
    assert set(counts) == {"valid", "invalid", "refused", "error"}
    assert sum(counts.values()) == len(d) == sum(res.manifest["status_counts"]["decisions"].values())
    bad = d[d.status != "valid"]
    assert bad["decision"].isna().all() and bad["target"].isna().all()  # no default choice
    assert (d.loc[d.status == "invalid", "raw_response"].str.contains("Run away")).all()
    err = d[d.status == "error"]
    assert (err["attempts"] == 2).all() and err["raw_response"].str.contains("500|InternalServerError").all()
    # a plain re-run keeps the errors; --retry-errors asks again for exactly those rows
    fake_server.behaviour = None
    again = run_experiment(cfg(fake_server.url, agents=8), tmp_path)
    assert again.manifest["model_calls"] == 0
    retried = run_experiment(cfg(fake_server.url, agents=8), tmp_path, retry_errors=True)
    assert retried.manifest["model_calls"] == len(err)
    assert (retried.decisions["status"] != "error").all()


def test_all_conditions_and_completion_path(fake_server, tmp_path):
    c = cfg(fake_server.url, conditions=["contextualized", "non_contextualized", "no_persona"],
            models=[{"spec": f"completion:openai:fake@{fake_server.url}"}], scenarios=["emergency_response"])
    res = run_experiment(c, tmp_path)
    d = res.decisions
    assert set(d["condition"]) == {"contextualized", "non_contextualized", "no_persona"}
    assert (d["status"] == "valid").all(), d[["condition", "status", "raw_response"]]
    nop = res.personas[res.personas.condition == "no_persona"]
    assert (nop["persona"] == nop["attribute"]).all() and nop["name"].str.startswith("Named").all()
    paths = [r["path"] for r in fake_server.requests]
    assert any(p.endswith("/completions") and not p.endswith("/chat/completions") for p in paths)
    completion_prompts = [r["body"]["prompt"] for r in fake_server.requests if "prompt" in r["body"]]
    assert any(str(p).endswith("Answer: I choose to") or (isinstance(p, list) and p[0].endswith("Answer: I choose to"))
               for p in completion_prompts)
    assert res.manifest["model_calls"] == count_calls(c)


def test_paper_faithful_changes_only_the_swapped_contexts(fake_server, tmp_path):
    run_experiment(cfg(fake_server.url, scenarios=["career_path_selection"], paper_faithful=True, agents=1), tmp_path)
    prompts = [r["body"]["messages"][-1]["content"] for r in fake_server.requests]
    assert any("what kind of information this person usually share on social media" in p for p in prompts)
