"""Issue 31.3: the experiment dimensions — wordings, choice order, the names signal, reasoning levels —
are one mechanism (louder/dimensions.py) that seed, population, network and sequential runs all take,
plan exactly and analyse for robustness; a new dimension is one declaration."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import louder
from louder import dimensions
from louder.cli import app
from louder.dimensions import CROSSED, Dimension
from louder.llm.base import Reply
from louder.llm.registry import BackendInfo, register
from louder.presentation import load_names, name_set
from louder.scenarios import load_scenario

# every dimension at once, as the issue asks: 4 wordings (emergency_response: as written + 3) × 2 levels,
# balanced orders, both signals
DIMENSIONS = ["--wording", "all", "--choice-order", "balanced", "--signal", "stated", "--signal", "names",
              "--reasoning", "off", "--reasoning", "high"]
CASE = ["--model", "fake:seed=3", "--scenario", "emergency_response"]
WORDINGS = len(load_scenario("emergency_response").wording_ids)
ARMS = WORDINGS * 2 * 2  # wordings × reasoning levels × signals


def run(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def analyze(out) -> dict[str, pd.DataFrame]:
    run("analyze", str(out), "--bootstrap", "200")
    return {n: pd.read_csv(out / f"{n}.csv") for n in ("cases", "robustness", "position_bias", "reasoning")}


def manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text("utf-8"))


def check_robustness(t: dict[str, pd.DataFrame]) -> None:
    """robustness.csv pools the wordings of every case × signal; position_bias.csv reads the orders;
    reasoning.csv compares the levels; cases.csv keeps the names signal as its own condition."""
    rob = t["robustness"]
    assert set(rob["signal"]) == {"stated", "names"}
    assert (rob["n_wordings"] == WORDINGS).all() and (rob["n_orders"] == 2).all() and (rob["unit"] == "wording").all()
    assert set(rob["verdict"]) <= {"robust", "wording-dependent", "underpowered", "no disparity"}
    assert len(t["position_bias"]) and set(t["reasoning"]["level"]) == {"off", "high"}
    assert {"contextualized", "contextualized [names]"} <= set(t["cases"]["condition"])


def check_agents(d: pd.DataFrame, per_agent: int) -> None:
    """Crossed: every agent answers once per wording × level; split: one order per agent (in every arm);
    own agents: each signal its own."""
    by = d.groupby(["signal", "agent_id"])
    assert (by.size() == per_agent).all()
    assert (by[["wording", "reasoning"]].nunique() == [WORDINGS, 2]).all().all()
    assert (d.groupby("agent_id")["choice_order"].nunique() == 1).all() and d["choice_order"].nunique() == 2


# --- population, network and sequential runs take every dimension --------------------------------------

def write_population(tmp_path) -> str:
    """Two groups a names file covers (White/Black × Female/Male): a name signals both at once."""
    doc = {"id": "audit", "name": "audit-study population",
           "groups": ["race_black_white", "gender_female_male"],
           "distribution": {"marginals": {"race_black_white": {"White": 50, "Black": 50},
                                          "gender_female_male": {"Male": 50, "Female": 50}}}}
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    return str(path)


def test_a_population_run_takes_every_dimension(tmp_path):
    out = tmp_path / "pop"
    run("run", "--out", str(out), *CASE, "--population", write_population(tmp_path), "--agents", "8", *DIMENSIONS)
    m = manifest(out)
    assert m["planned_calls"] == m["model_calls"]
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 8 * ARMS
    check_agents(d, WORDINGS * 2)
    personas = pd.read_parquet(out / "personas.parquet")
    assert len(personas) == 8 * 2 and set(personas["signal"]) == {"stated", "names"}
    # the names signal: the persona prompt names the person only; the name is on the lists of both attributes
    names = load_names(None)
    named = personas[personas["signal"] == "names"]
    for _, p in named.iterrows():
        race, sex = p["attr_race_black_white"], p["attr_gender_female_male"]
        assert p["name"] in name_set(names, [race, sex]).first
        assert race not in p["prompt"] and sex not in p["prompt"] and "a person named" in p["prompt"]
    stated = personas[personas["signal"] == "stated"]
    assert all(p["attr_race_black_white"] in p["prompt"] for _, p in stated.iterrows())
    t = analyze(out)
    check_robustness(t)
    # each group of the population in turn (its marginal view), not the joint labels
    for name in ("robustness", "reasoning"):
        assert set(t[name]["group"]) == {"race_black_white", "gender_female_male"}, name


def test_a_network_run_plays_each_level_as_its_own_arm(tmp_path):
    cfg = tmp_path / "net.yaml"
    cfg.write_text(yaml.safe_dump({"network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}},
                                   "influence": {"rounds": 1}}), "utf-8")
    out = tmp_path / "net"
    run("run", str(cfg), "--out", str(out), *CASE, "--group", "race_black_white", "--agents", "3", *DIMENSIONS)
    m = manifest(out)
    assert m["planned_calls"] == m["model_calls"]
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 6 * ARMS * 2  # 6 agents × arms × rounds 0, 1
    check_agents(d[d["round"] == 0], WORDINGS * 2)
    arms = ["signal", "wording", "reasoning"]
    # each arm is a network of its own: its round-1 answers, its control, its no-influence arm
    assert (d.groupby(arms + ["round"]).size() == 6).all() and d.groupby(arms).ngroups == ARMS
    for name in ("control", "no_influence"):
        t = pd.read_parquet(out / f"{name}.parquet")
        assert t.groupby(arms).ngroups == ARMS, name
    t = analyze(out)
    check_robustness(t)
    amp = pd.read_csv(out / "amplification.csv")
    assert set(arms) <= set(amp.columns) and amp.groupby(arms).ngroups == ARMS


def test_a_sequential_run_takes_every_dimension_and_decides_on_the_reference(tmp_path):
    out = tmp_path / "seq"
    run("run", "--out", str(out), *CASE, "--group", "race_black_white", "--until", "decided", "--budget", "4",
        "--wave", "2", "--precision", "0.01", *DIMENSIONS)
    m = manifest(out)
    assert m["planned_calls"] == m["model_calls"]  # precision 0.01: every case runs to its budget
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 2 * 4 * ARMS and set(d["wave"]) == {0, 1}
    check_agents(d, WORDINGS * 2)
    seq = pd.read_csv(out / "sequential.csv")
    assert sorted(seq["signal"]) == ["names", "stated"]  # each signal a case of its own
    # the test read the reference rows: the file's own text, the least thinking (what cases.csv reads)
    for _, row in seq.iterrows():
        ref = d[(d["signal"] == row["signal"]) & (d["wording"] == "as_written") & (d["reasoning"] == "off")
                & (d["status"] == "valid")]
        rates = ref.groupby("attribute")["target"].mean()
        assert row["dpd"] == pytest.approx(rates.max() - rates.min())
    t = analyze(out)
    check_robustness(t)
    cases = t["cases"][t["cases"]["kind"] == "implicit"]
    assert (cases["interval_method"] == "confidence sequence").all() and len(cases) == 2


# --- a new dimension is one declaration -------------------------------------------------------------

SENT: list[tuple] = []


class Messages:
    """A backend that keeps every chat request's messages and answers the first choice."""

    def identity(self) -> dict:
        return {"backend": "messages"}

    def generate(self, request) -> Reply:
        SENT.append(request.messages)
        props = request.schema_json().get("properties", {})
        return Reply(text=json.dumps({k: p["enum"][0] if p.get("enum") else "Alex Morgan likes maps and tea."
                                      for k, p in props.items()}))


register(BackendInfo("messages", lambda model, url, cfg: Messages(), forms=("messages",), local=True,
                     takes_url=False, model_optional=True))


@pytest.fixture
def toy():
    """An intervention-like dimension (issue 33's shape): a system message, crossed with the agents."""
    d = Dimension("toy", "toy", CROSSED, "none", levels=lambda config, s: ["none", "egal"],
                  value=lambda config: ["none", "egal"],
                  ask=lambda ask, level, config: replace(ask, system=None if level == "none" else
                                                         "Treat everyone alike."))
    dimensions.register(d)
    SENT.clear()
    yield d
    dimensions.unregister("toy")


@pytest.mark.parametrize("kind", ["simulation", "network", "population"])
def test_a_registered_dimension_reaches_the_runs_the_plan_and_the_tables(tmp_path, toy, kind):
    config = {"models": ["messages"], "simulation": {"scenarios": ["emergency_response"],
                                                     "groups": ["gender_identity"], "agents": 2}}
    if kind == "network":
        config |= {"network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}}, "influence": {"rounds": 1}}
    if kind == "population":
        config |= {"population": "us_gender_ideology"}
        config["simulation"]["agents"] = 6
    r = louder.run(config, out=tmp_path / kind, progress=False)
    assert r.manifest["planned_calls"] == r.manifest["model_calls"]
    d = r.decisions
    assert set(d["toy"]) == {"none", "egal"} and d.groupby(["toy"]).size().nunique() == 1
    decisions = [m for m in SENT if "Please decide:" in m[-1][1]]
    system = [m for m in decisions if m[0][0] == "system"]
    assert len(system) == len(decisions) // 2 and all(m[0][1] == "Treat everyone alike." for m in system)
    # the persona is shared: written once per agent, under the default level
    assert all(m[0][0] == "user" for m in SENT if "Please decide:" not in m[-1][1])
    if kind == "network":
        assert set(pd.read_parquet(tmp_path / kind / "control.parquet")["toy"]) == {"none", "egal"}
