"""Convention runs (issue 48) on the fake model, where the runner is the subject: the plan is exactly the
calls a cold run makes, a run killed mid-step resumes to the same outcomes, a bad config is one line,
every answer is accounted per agent and per model, mixed-model populations, committed minorities, network
pairing and personas, the fake model playing its documented rule, and the analysis, report and view of a
run. The statistics themselves are checked on simulated populations in tests/test_convention_stats.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import figure_checks
from cache_count import cached_replies
from fake_openai import serve_in_background
from louder import kinds
from louder.analysis import analyze
from louder.analysis.report.page import write_report
from louder.analysis.stats import convention as C
from louder.analysis.stats.convention_models import memory_rule
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError
from louder.llm.fake import FakeModel
from louder.llm.registry import BackendInfo, register, unregister
from louder.simulation.convention_run import convention_task, pairs, roster
from louder.task import execute

ROOT = Path(__file__).resolve().parents[1]
FAKE = "fake:seed=1,follow=0.9"


def cfg(models=(FAKE,), **game) -> dict:
    return {"models": list(models) if not isinstance(models, dict) else models,
            "convention": {"agents": 6, "populations": 3, "steps": 5, "memory": 3, **game}}


def run(config: dict, out: Path):
    c = build_config(config)
    return execute(convention_task(c), c, out)


DESIGNS = {
    "plain": cfg(),
    "odd N, three options": cfg(agents=7, options=["Q", "M", "J"]),
    "personas with shares": cfg(group="gender_identity", shares={"Female": 0.5, "Male": 0.5, "Non-binary": 0.0}),
    "committed sweep, prepared": cfg(committed={"fraction": [0.0, 0.2, 0.5]}),
    "committed from the start": cfg(committed={"fraction": 0.3, "start": "start", "option": "Q"}),
    "mixed models": cfg(models={"fake:seed=2,follow=0.9": 0.5, "fake:seed=3,follow=0.9,bias=Q:0.9": 0.5}, agents=8),
    "two models apart": cfg(models=("fake:seed=2", "fake:seed=3,follow=1")),
    "network pairing": cfg(agents=10, pairing="network",
                           network={"generator": "watts_strogatz", "params": {"k": 2, "p": 0.2}, "seed": 1}),
    "group sizes": cfg(sizes=[4, 9]),
    "scenario options": cfg(scenario="emergency_response", shuffle=False),
}


@pytest.mark.parametrize("name", list(DESIGNS))
def test_a_cold_run_makes_exactly_its_planned_calls_and_a_rerun_none(tmp_path, name):
    config = DESIGNS[name]
    r = run(config, tmp_path / "run")
    planned = kinds.count_calls(build_config(config), "convention")
    assert r.manifest["model_calls"] == planned == r.manifest["planned_calls"] > 0
    plays = r.tables["convention.parquet"]
    asked = plays[~plays["committed"]]
    personas = r.tables["convention_agents.parquet"]["persona_status"].notna().sum()
    assert planned == len(asked) + personas  # one call per pick of an agent that is not committed, one per persona
    again = run(config, tmp_path / "run")
    assert again.manifest["model_calls"] == 0 and again.manifest["cache_hits"] == planned
    pd.testing.assert_frame_equal(r.tables["convention.parquet"], again.tables["convention.parquet"])


def test_the_game_is_the_design(tmp_path):
    """Each step pairs every agent once (odd N: one sits out), both partners' rows mirror each other, the
    payoff is the reward or the penalty, and each memory is the partners' last H picks."""
    r = run(cfg(agents=7, steps=6, memory=2, reward=10, penalty=4), tmp_path / "run")
    d = r.tables["convention.parquet"]
    per_step = d.groupby(["population", "step"]).size()
    assert (per_step == 6).all()  # 3 pairs of 7 agents
    by = d.set_index(["population", "step", "agent"])
    for row in d.itertuples():
        other = by.loc[(row.population, row.step, row.partner)]
        assert other["partner"] == row.agent and other["partner_pick"] == row.pick
        assert row.payoff == (10 if row.success else -4) and row.success == (row.pick == row.partner_pick)
    for (pop, agent), g in d.groupby(["population", "agent"]):
        seen: list[str] = []
        for row in g.sort_values("step").itertuples():
            assert row.memory == "|".join(seen[-2:]) and row.remembered == len(seen[-2:])
            seen.append(row.partner_pick)


def test_a_dry_run_says_the_calls(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg(agents=8, populations=4, steps=6)))
    out = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "o"), "--dry-run"])
    assert out.exit_code == 0, out.output
    assert re.search(r"fake:seed=1,follow=0\.9\D+192\b", out.output)  # 2 × 4 pairs × 6 steps × 4 populations
    assert not (tmp_path / "o" / "convention.parquet").exists()


# --- bad configs ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("game, field, fix", [
    ({"options": 1}, "convention.options", "at least 2 options"),
    ({"options": ["Q"]}, "convention.options", "at least 2 options"),
    ({"committed": {"fraction": 1.0}}, "convention.committed.fraction", "outside \\[0, 1\\)"),
    ({"committed": {"fraction": [0.1, -0.2]}}, "convention.committed.fraction", "outside \\[0, 1\\)"),
    ({"memory": 0}, "convention.memory", "memory: 1 or more"),
    ({"committed": {"fraction": 0.2, "option": "Z"}}, "convention: committed.option", "not an option"),
    ({"pairing": "network"}, "convention: pairing", "add convention.network"),
])
def test_a_bad_game_is_one_line_naming_the_field_and_the_fix(game, field, fix):
    with pytest.raises(LouderError) as e:
        build_config(cfg(**game))
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and field in msg and re.search(fix, msg), msg


@pytest.mark.parametrize("models, field, fix", [
    ({"fake:seed=1": 0.8, "fake:seed=2": 0.3}, "mix", "add up to 1.1"),
])
def test_bad_model_shares_are_one_line(models, field, fix):
    with pytest.raises(LouderError) as e:
        build_config(cfg(models=models))
    assert len(str(e.value).splitlines()) == 1 and field in str(e.value) and fix in str(e.value), str(e.value)


def test_an_unknown_model_share_is_one_line():
    with pytest.raises(LouderError) as e:
        build_config({**cfg(models=("fake:seed=1", "fake:seed=2")), "mix": {"fake:seed=1": 0.8, "fake:seed=9": 0.2}})
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and "mix: 'fake:seed=9' is not a model of the run" in msg and "models" in msg
    with pytest.raises(LouderError, match="mix: model fake:seed=2 has no share"):
        build_config({**cfg(models=("fake:seed=1", "fake:seed=2")), "mix": {"fake:seed=1": 1.0}})
    # a kind that gives each model its own agents refuses a mix in one line
    c = build_config({"models": {"fake:seed=1": 0.5, "fake:seed=2": 0.5},
                      "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 2}})
    with pytest.raises(LouderError, match="mix: simulation runs give each model its own agents.*convention") as e:
        kinds.for_config(c).build(c)
    assert len(str(e.value).splitlines()) == 1


def test_the_cli_says_a_bad_config_in_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(cfg(memory=0)))
    out = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "o")])
    assert out.exit_code != 0 and "convention.memory" in out.output and "memory: 1 or more" in out.output


# --- kill and resume --------------------------------------------------------------------------------------

class Killed(Exception):
    pass


def test_a_run_killed_mid_step_resumes_to_the_same_outcomes(tmp_path):
    """The model dies after 17 answers — in the middle of a step (a step asks 8): the resumed run asks only
    the rest, and every table equals an uninterrupted run's."""
    answered, lock, dying = [], threading.Lock(), [True]

    class Dying(FakeModel):
        def generate(self, request):
            with lock:
                if dying[0] and len(answered) == 17:
                    raise Killed("killed")
                answered.append(1)
            return super().generate(request)

    register(BackendInfo("dying", lambda model, url, c: Dying(model), forms=("dying",), local=True, takes_url=False,
                         model_optional=True))
    try:
        config = cfg(models=("dying:seed=4,follow=0.9,bias=M:0.6",), agents=8, steps=6, populations=2)
        config["concurrency"] = 1
        with pytest.raises(Killed):
            run(config, tmp_path / "cut")
        assert cached_replies(tmp_path / "cut" / "cache.sqlite") == 17
        assert not (tmp_path / "cut" / "convention.parquet").exists()
        dying[0] = False
        resumed = run(config, tmp_path / "cut")
        whole = run(config, tmp_path / "whole")
        total = kinds.count_calls(build_config(config), "convention")
    finally:
        unregister("dying")
    assert resumed.manifest["model_calls"] == total - 17 and resumed.manifest["cache_hits"] == 17
    for name in ("convention.parquet", "convention_agents.parquet"):
        pd.testing.assert_frame_equal(resumed.tables[name].drop(columns="run_id"),
                                      whole.tables[name].drop(columns="run_id"))


SLOW = """
import sys, time
from louder.llm.fake import FakeModel
from louder.llm.registry import BackendInfo, register
import louder

class Slow(FakeModel):  # the fake model, answering after 20 ms (its identity, so its cache keys, are the fake's)
    def generate(self, request):
        time.sleep(0.02)
        return super().generate(request)

register(BackendInfo("fake", lambda model, url, c: Slow(model), forms=("fake",), local=True, takes_url=False,
                     model_optional=True, can_score=True))
louder.run(sys.argv[1], sys.argv[2], progress=False)
"""


def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path):
    """A real kill: `louder.run` in a child process on a fake model slowed to 20 ms a call, SIGKILLed once its
    cache holds 30 answers (mid-step: a step asks 10); the same config run here resumes from the cache to the
    outcomes of a run never stopped."""
    config = cfg(models=("fake:seed=5,follow=0.9",), agents=10, steps=8, populations=2)
    config["concurrency"] = 2
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", SLOW, str(path), str(tmp_path / "cut")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while cached_replies(tmp_path / "cut" / "cache.sqlite") < 30 and child.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    kept = cached_replies(tmp_path / "cut" / "cache.sqlite")
    total = kinds.count_calls(build_config(config), "convention")
    assert 30 <= kept < total, (kept, child.stderr.read()[-2000:])
    with pytest.warns(RuntimeWarning, match="which is gone; taking the folder over"):  # the killed run's lock
        resumed = run(config, tmp_path / "cut")
    whole = run(config, tmp_path / "whole")
    assert resumed.manifest["model_calls"] == total - kept
    pd.testing.assert_frame_equal(resumed.tables["convention.parquet"].drop(columns="run_id"),
                                  whole.tables["convention.parquet"].drop(columns="run_id"))


# --- accounting, mixed populations ------------------------------------------------------------------------

X_BIASED, PLAIN = "fake:seed=3,follow=0.9,bias=Q:0.9", "fake:seed=2,follow=0.9"


def test_a_mixed_population_accounts_per_model_and_reports_the_pull_toward_x(tmp_path):
    """20 % of every population's agents ask a fake model biased to "Q" (0.9), the rest an unbiased one:
    each model's share of agents is exact, its calls have its own cache keys, its answers add up per agent,
    per model and over the run, and the pull of its preference on the conventions comes with an interval."""
    config = cfg(models={X_BIASED: 0.2, PLAIN: 0.8}, agents=10, steps=15, populations=30, memory=5)
    r = run(config, tmp_path / "run")
    plays = r.tables["convention.parquet"]
    m = r.manifest
    agents = r.tables["convention_agents.parquet"]
    assert (agents.groupby("population")["agent_model"].value_counts().unstack()[X_BIASED] == 2).all()
    by_model = {row["agent_model"]: row for row in m["status_by_model"]}
    for model in (X_BIASED, PLAIN):
        rows = plays[plays["agent_model"] == model]
        assert sum(by_model[model][s] for s in C.STATUS) == len(rows)
    assert sum(m["status_counts"]["convention"].values()) == len(plays) == m["model_calls"]
    a = analyze(tmp_path / "run", bootstrap=300, options={"convention": {"replicates": 100}})
    answers, members = a.tables["convention_answers"], a.tables["convention_members"]
    assert answers["answers"].sum() == len(plays) and (answers[[f"n_{s}" for s in C.STATUS]].sum(axis=1)
                                                        == answers["answers"]).all()
    mine = members[(members["kind"] == "model")].set_index("member")
    assert mine["answers"].sum() == len(plays)
    assert mine.loc[X_BIASED, "agents"] == 60 and mine.loc[PLAIN, "agents"] == 240
    x = mine.loc[X_BIASED]
    assert x["favourite"] == "Q" and x["prior_share"] > 0.75
    assert x["pull_low"] <= x["pull"] <= x["pull_high"] and x["pull"] > 0.1
    assert x["pull"] == pytest.approx(x["winner_share"] - x["pooled_share"])
    said = " ".join(f.text for f in _findings(a))
    assert f"{X_BIASED} (60 agents" in said and "pull of" in said


# --- collective bias read from a run of the fake model, end to end ------------------------------------------
# The verdicts' rates over many seeds are tests/test_convention_stats.py's (the fake's rule, simulated); here the
# fake model plays in a run and `louder analyze` reads it. Designs where the simulated rule reads the verdict in
# 200 of 200 seeds (a prior of 0.6: N = 16, 25 steps, 50 populations) and in 192 of 200 (favour, whose only
# misses are the empty-memory picks' own 5 % false positives); the null model reads none in 192 of 200.

PLANTED, FAVOURED, NULL = ("fake:seed=21,follow=0.9,bias=Q:0.6", "fake:seed=22,follow=0.9,favour=Q:2",
                           "fake:seed=23,follow=0.9")


@pytest.mark.parametrize("models, game, verdicts", [
    ((PLANTED,), dict(agents=16, steps=25, populations=50), {PLANTED: C.AMPLIFIES}),
    ((FAVOURED, NULL), dict(agents=10, steps=25, populations=40), {FAVOURED: C.EMERGES, NULL: C.NONE}),
], ids=["a prior of 0.6 amplifies", "a favouring memory emerges, none without"])
def test_the_fake_models_planted_collective_bias_is_read_from_its_run(tmp_path, models, game, verdicts):
    config = {**cfg(models=models, memory=5, **game), "concurrency": 16}
    run(config, tmp_path / "run")
    a = analyze(tmp_path / "run", bootstrap=300, options={"convention": {"replicates": 100}})
    bias = a.tables["convention_bias"]
    llm = bias[bias["source"] == "LLM"].set_index("model")
    assert llm["verdict"].to_dict() == verdicts, llm[["verdict", "prior", "winners"]]
    for model, r in llm.iterrows():
        assert r["n_prior"] == game["agents"] * game["populations"] and r["formed"] >= 0.75 * game["populations"]
        assert r["prior_low"] <= r["prior_share"] <= r["prior_high"]
        assert r["winner_low"] <= r["winner_share"] <= r["winner_high"]
    if PLANTED in llm.index:
        r = llm.loc[PLANTED]
        assert r["option"] == "Q" and r["prior_low"] <= 0.6 <= r["prior_high"]
        assert r["winner_low"] > r["prior_high"] and r["compare_p"] < 0.05  # the conventions beyond the prior
    if FAVOURED in llm.index:
        r = llm.loc[FAVOURED]
        assert r["option"] == "Q" and r["prior_p"] >= 0.05 and r["winner_p"] < 0.05
    said = " ".join(f.text for f in _findings(a))
    assert all(f"{m} (N = {game['agents']})" in said for m in models)


def _findings(a):
    from louder.analysis.report.findings import findings

    return [f for items in findings(a).by_model.values() for f in items]


# --- committed minorities and the fake model's rule ----------------------------------------------------

def test_the_fake_model_plays_its_documented_rule_in_a_run(tmp_path):
    """A committed minority in prepared populations of the fake model (follow=0.9): the share overturned at
    each p in the run agrees with the rule played without a model (louder.analysis.stats.convention_models
    .memory_rule, 2,000 populations) within Monte Carlo error — the fake model is the rule the statistics'
    tests simulate."""
    config = cfg(agents=10, steps=12, populations=16, memory=3,
                 committed={"fraction": [0.1, 0.3, 0.5], "established": "Q", "option": "M"})
    r = run(config, tmp_path / "run")
    pops = C.population_table(r.tables["convention.parquet"], C.Design.of(r.manifest))
    for p, g in pops.groupby("fraction"):
        sim = memory_rule(10, 12, 3, follow=0.9, replicates=2000, seed=7, committed=p, committed_option=1,
                          established=0)
        f = C.formation(sim.agreed, sim.step_of, 2, 30, 0.9)
        want = float((f.winner == 1).mean())
        got = float(g["overturned"].mean())
        se = np.sqrt(max(want * (1 - want), 0.02) / len(g))
        assert abs(got - want) <= 4 * se, (p, got, want)
    plays = r.tables["convention.parquet"]
    committed = plays[plays["committed"]]
    assert (committed["pick"] == "M").all() and committed["status"].isna().all()
    assert (plays[plays["step"] == 1].query("not committed")["remembered"] == 3).all()  # prepared memories
    agents = r.tables["convention_agents.parquet"]
    assert agents.groupby(["fraction", "population"])["committed"].sum().to_dict() == {
        (p, i): round(p * 10) for p in (0.1, 0.3, 0.5) for i in range(16)}


# --- pairing and personas ---------------------------------------------------------------------------------

def test_network_pairing_pairs_along_the_graphs_edges(tmp_path):
    from louder.simulation.convention_run import graph_of

    config = DESIGNS["network pairing"]
    r = run(config, tmp_path / "run")
    g = graph_of(build_config(config), 10)
    edges = {tuple(sorted(e)) for e in g.edges}
    d = r.tables["convention.parquet"]
    assert all(tuple(sorted((a, b))) in edges for a, b in zip(d["agent"], d["partner"]))
    assert r.manifest["convention"]["pairing"] == "network"


def test_personas_carry_their_attributes_by_share(tmp_path):
    r = run(cfg(group="gender_identity", shares={"Female": 0.5, "Male": 0.5, "Non-binary": 0.0}, agents=6),
            tmp_path / "run")
    agents = r.tables["convention_agents.parquet"]
    assert (agents.groupby("population")["attribute"].value_counts().unstack() == 3).all().all()
    assert (agents["persona_status"] == "valid").all() and agents["persona"].str.len().gt(10).all()
    plays = r.tables["convention.parquet"]
    assert set(plays["attribute"]) == {"Female", "Male"}
    assert r.manifest["status_counts"]["personas"]["valid"] == len(agents)


def test_roster_and_pairs_are_seeded(tmp_path):
    c = build_config(cfg(agents=9, committed={"fraction": 0.3}))
    from louder.simulation.convention_run import arms

    arm = arms(c)[0]
    assert roster(c, arm, 1) == roster(c, arm, 1) != roster(c, arm, 2)
    assert (pairs(c, arm, 0, 3, None) == pairs(c, arm, 0, 3, None)).all()
    assert sum(s.committed for s in roster(c, arm, 0)) == 3


# --- analysis, report, view -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    out = tmp_path_factory.mktemp("conv") / "run"
    config = cfg(models={"fake:seed=3,follow=0.9,bias=Q:0.8": 0.5, "fake:seed=2,follow=0.9": 0.5}, agents=8,
                 steps=10, populations=6, group="gender_identity", sizes=[4, 8],
                 committed={"fraction": [0.0, 0.5], "start": "start"})
    run(config, out)
    a = analyze(out, bootstrap=200, options={"convention": {"replicates": 60}})
    return out, a


def test_the_analysis_writes_every_table_with_its_documented_columns(analysed):
    from louder.analysis.engine import registry

    _, a = analysed
    m = registry.get("convention")
    for t in m.tables:
        assert t.name in a.tables, t.name
        assert set(a.tables[t.name].columns) <= set(t.column_names), (t.name, set(a.tables[t.name].columns) -
                                                                     set(t.column_names))
    bias = a.tables["convention_bias"]
    assert set(bias["source"]) == {"LLM", "minimal: naming game"} and set(bias["verdict"]) <= set(C.VERDICTS)
    assert set(a.tables["convention_tipping"]["source"]) == {"LLM", "minimal: naming game"}
    shares = a.tables["convention_shares"]
    assert np.allclose(shares.groupby(["model", "size", "fraction", "population", "step"])["share"].sum(), 1)


def test_the_report_shows_a_convention_forming_with_checked_figures(analysed, monkeypatch):
    out, a = analysed
    drawn = figure_checks.recorded(monkeypatch)
    page = write_report(a).read_text("utf-8")
    names = {n for n, _ in drawn}
    assert {"convention/shares", "convention/bias", "convention/sizes", "convention/tipping",
            "convention/force"} <= names, names
    assert not [p for _, problems in drawn for p in problems]
    assert "<h2>Conventions</h2>" in page and "the share of each option among every step" in page


def test_louder_view_serves_the_shares_over_the_steps(analysed):
    from louder.view.convention import server

    out, _ = analysed
    httpd = server(out, 0)
    serve_in_background(httpd)
    base = f"http://127.0.0.1:{httpd.server_port}"
    try:
        populations = json.load(urllib.request.urlopen(base + "/api/populations"))
        assert len(populations) == 2 * 2 * 6  # sizes × fractions × populations
        q = urllib.parse.urlencode({"population": populations[0]})
        shares = json.load(urllib.request.urlopen(f"{base}/api/shares?{q}"))
        assert shares["steps"] == list(range(1, 11)) and set(shares["shares"]) == {"Q", "M"}
        assert np.allclose(np.sum(list(shares["shares"].values()), axis=0), 1)
        plays = json.load(urllib.request.urlopen(f"{base}/api/plays?{q}&step=2"))
        assert len(plays) == 4 and all(p["step"] == 2 for p in plays)
        assert b"conventions of" in urllib.request.urlopen(base + "/").read()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_louder_view_command_serves_a_convention_run(analysed):
    """`louder view RUN` on a convention run (a process of its own, as a user starts it): it says how many
    populations it serves, its page and the shares of a population over the steps."""
    from conftest import free_port

    out, _ = analysed
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(out), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=os.environ.copy())
    try:
        said = ""
        while "Ctrl-C" not in said and proc.poll() is None:  # rich may wrap the line (COLUMNS)
            said += proc.stdout.readline()
        assert "".join(f"the 24 populations of {out} on http://127.0.0.1:{port}".split()) in "".join(said.split()), said
        base = f"http://127.0.0.1:{port}"
        assert b"conventions of" in urllib.request.urlopen(base + "/", timeout=30).read()
        first = json.load(urllib.request.urlopen(base + "/api/populations", timeout=30))[0]
        shares = json.load(urllib.request.urlopen(f"{base}/api/shares?{urllib.parse.urlencode({'population': first})}",
                                                  timeout=30))
        assert shares["steps"] == list(range(1, 11)) and set(shares["shares"]) == {"Q", "M"}
    finally:
        proc.kill()
        proc.wait(30)
        proc.stdout.close()


# --- mixed-model populations in network runs ----------------------------------------------------------------

def test_a_mixed_model_network_run_gives_each_agent_its_model_and_counts_its_answers(tmp_path):
    """`models: {A: 0.25, B: 0.75}` on a network run: one mixed population per case, a quarter of each
    attribute's agents asking A, the rest B, with the plan exact, every answer accounted per model, and the
    same agents on the same models in every round (and in the no-influence arm)."""
    import louder

    biased, plain = "fake:seed=2,bias=Female:0.95,pick=Evacuate", "fake:seed=3"
    config = {"models": {biased: 0.25, plain: 0.75},
              "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 8},
              "network": {"generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}, "seed": 1},
              "influence": {"rounds": 2}}
    r = louder.run(config, tmp_path / "net", progress=False)
    m = json.loads((tmp_path / "net" / "manifest.json").read_text())
    assert m["model_calls"] == m["planned_calls"] == kinds.count_calls(build_config(config), "network")
    d = pd.read_parquet(tmp_path / "net" / "decisions.parquet")
    assert set(d["model"]) == {f"{biased} 25% + {plain} 75%"}
    first = d[d["round"] == 0]
    assert (first.groupby("attribute")["agent_model"].value_counts().unstack()[biased] == 2).all()
    assert (d.groupby("agent_id")["agent_model"].nunique() == 1).all()
    arm = pd.read_parquet(tmp_path / "net" / "no_influence.parquet")
    assert arm.merge(first[["agent_id", "agent_model"]], on="agent_id", suffixes=("", "_0")).eval(
        "agent_model == agent_model_0").all()
    counted = {(x["agent_model"], x["round"]): sum(x[s] for s in C.STATUS) for x in m["status_by_model"]}
    assert sum(counted.values()) == len(d) and counted[(biased, 0)] == 6
    # the biased model's Female agents evacuate at round 0; the plain model's agents at the fake's coin flip
    female = first[(first["attribute"] == "Female") & (first["agent_model"] == biased)]
    assert (female["decision"] == "Evacuate").all() and r.path == (tmp_path / "net").resolve()
