"""Network runs in agents mode (`louder run` with `network:`): round 0 is the seed simulation, rounds
of influence are cached per round and resume exactly, the control runs beside, every answer counted."""

from __future__ import annotations

import json
import math
import re
import threading

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from louder import kinds
from louder.analysis import analyze
from louder.analysis.report.page import write_report
from louder.analysis.stats.network import network_tables
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError
from louder.llm.base import Reply
from louder.llm.registry import BackendInfo, register
from louder.simulation import run_experiment
from louder.simulation.network_run import network_task
from louder.task import execute
from louder.types import DECISION_COLUMNS

MESSAGE = re.compile(r"Of the (\d+) people you know best, (\d+) decided to evacuate and (\d+) decided to stay")


class ShareModel:
    """A stand-in model whose decision follows the rule the tests compute by hand.

    Round 0 (no neighbour message): Evacuate iff the prompt names the attribute ``Female``; with
    ``offlist`` set, an agent named ``Non-binary`` answers off the list (invalid). Rounds ≥ 1:
    Evacuate iff at least half of the valid neighbours evacuated (K ≥ J in the message); with
    ``stubborn`` set, the message is ignored and every round answers as round 0. With ``split``,
    everyone evacuates without a message, and with one only the Female agents do: influence alone
    makes the disparity."""

    def __init__(self, options: str = ""):
        self.options = options
        self.offlist = "offlist" in options
        self.stubborn = "stubborn" in options
        self.split = "split" in options
        self.prompts: list[str] = []
        self.calls = 0
        self.fail_after: int | None = None  # raise once this many calls have been answered
        self.lock = threading.Lock()

    def identity(self) -> dict:
        return {"backend": "sharefake", "model": self.options or "default"}

    def _evacuate(self, prompt: str) -> bool | None:
        m = MESSAGE.search(prompt)
        if self.split:
            return bool(re.search(r"\bFemale\b", prompt)) if m else True
        if m and not self.stubborn:
            k, j = int(m.group(2)), int(m.group(3))
            return k >= j
        if self.offlist and re.search(r"\bNon-binary\b", prompt):
            return None
        return bool(re.search(r"\bFemale\b", prompt))

    def _count(self, prompt: str) -> None:
        with self.lock:
            if self.fail_after is not None and self.calls >= self.fail_after:
                raise RuntimeError("killed")
            self.calls += 1
            self.prompts.append(prompt)

    def generate(self, request) -> Reply:
        prompt = request.messages[-1][1]
        self._count(prompt)
        props = request.schema_json().get("properties", {})
        if "decision" not in props:
            return Reply(text=json.dumps({k: "Alex" if k == "name" else "A person." for k in props}))
        e = self._evacuate(prompt)
        return Reply(text=json.dumps({"decision": "Maybe" if e is None else "Evacuate" if e else "Stay",
                                      "rationale": "because"}))

    def score(self, request, prefix, choices) -> Reply:
        prompt = request.messages[-1][1]
        self._count(prompt)
        e = self._evacuate(prompt)
        p = 0.9 if e else 0.1
        return Reply(text=json.dumps({"logprobs": {"Evacuate": math.log(p), "Stay": math.log(1 - p)}}))


MODELS: dict[str, ShareModel] = {}


def _build(model, url, cfg):
    return MODELS.setdefault(model or "default", ShareModel(model))


register(BackendInfo("sharefake", _build, forms=("sharefake",), can_score=True, local=True, takes_url=False,
                     model_optional=True))


@pytest.fixture(autouse=True)
def fresh_models():
    MODELS.clear()
    yield
    MODELS.clear()


def edges_file(tmp_path, edges) -> str:
    p = tmp_path / "edges.txt"
    p.write_text("".join(f"{a} {b}\n" for a, b in edges))
    return str(p)


def config(network: dict, rounds: int = 3, agents: int = 2, **kw):
    base = dict(models=["sharefake"], scenarios=["emergency_response"], groups=["gender_identity"],
                conditions=["no_persona"], agents=agents, network=network, rounds=rounds, run_id="r", seed=3)
    return build_config({**base, **kw})


def run(cfg, out, **kw):
    return execute(network_task(cfg, **kw), cfg, out)


def by_round(df: pd.DataFrame, col: str = "decision") -> list[list]:
    return [g.sort_values("node")[col].tolist() for _, g in df.groupby("round")]


E, S = "Evacuate", "Stay"


def test_share_dependent_model_gives_the_hand_computed_cascade(tmp_path):
    # path 0-1-2-3-4-5; agents 1,2 Male (nodes 0,1), 3,4 Female (2,3), 5,6 Non-binary (4,5).
    net = dict(generator="edge_list", params=dict(path=edges_file(tmp_path, [(i, i + 1) for i in range(5)])))
    r = run(config(net), tmp_path / "out")
    d = r.tables["decisions.parquet"]
    assert by_round(d) == [[S, S, E, E, S, S], [S, E, E, E, E, S], [E] * 6, [E] * 6]
    assert by_round(d[d["round"] == 1], "neighbour_share") == [[0, 0.5, 0.5, 0.5, 0.5, 0]]
    assert by_round(d, "changed")[1:] == [[False, True, False, False, True, False],
                                          [True, False, False, False, False, True], [False] * 6]
    assert d.loc[d["round"] == 0, "changed"].isna().all() and d.loc[d["round"] == 0, "neighbour_share"].isna().all()
    assert by_round(d, "neighbours")[0] == [1, 2, 2, 2, 2, 1]
    # what node 1 read in round 1 (neighbours 0: Stay, 2: Evacuate), between the situation and the choices
    prompts = MODELS["default"].prompts
    said = [p for p in prompts if "Of the 2 people you know best, 1 decided to evacuate and 1 decided to stay." in p]
    assert said and all(p.index("Of the 2 people") < p.index("Please decide:") for p in said)
    # the majority control from the same round 0: every tie keeps its decision, so it stays split
    c = r.tables["control.parquet"]
    assert by_round(c) == [[S, S, E, E, S, S]] * 4
    assert set(c.columns) >= {"model", "condition", "scenario", "group", "node", "round", "attribute", "decision",
                              "target", "status"}
    edges = r.tables["network.parquet"]
    assert sorted(zip(edges["source"], edges["target"])) == [(i, i + 1) for i in range(5)]


def test_two_cliques_joined_by_a_bridge_stay_split_under_the_majority_control(tmp_path):
    # agents=3: nodes 0-2 Male, 3-5 Female, 6-8 Non-binary; cliques {3,4,5} (evacuate) and the rest, bridge 5-6
    a, b = [3, 4, 5], [0, 1, 2, 6, 7, 8]
    edges = [(x, y) for c in (a, b) for i, x in enumerate(c) for y in c[i + 1:]] + [(5, 6)]
    r = run(config(dict(generator="edge_list", params=dict(path=edges_file(tmp_path, edges))), agents=3),
            tmp_path / "out")
    c = r.tables["control.parquet"]
    split = [S, S, S, E, E, E, S, S, S]
    assert by_round(c) == [split] * 4
    assert by_round(r.tables["decisions.parquet"]) == [split] * 4  # the share rule agrees


def test_complete_graph_converges_in_one_round(tmp_path):
    # 9 agents, everyone knows everyone; round 0: the 3 Female agents evacuate, 6 stay
    r = run(config(dict(generator="erdos_renyi", params=dict(p=1.0)), agents=3), tmp_path / "out")
    for df in (r.tables["decisions.parquet"], r.tables["control.parquet"]):
        rounds = by_round(df)
        assert rounds[0].count(E) == 3 and all(x == [S] * 9 for x in rounds[1:])
    assert r.manifest["network"]["edges"] == 36


def test_round_zero_is_the_seed_run_and_reuses_its_cache(tmp_path):
    kw = dict(models=["fake:seed=2,bias=female:0.9"], conditions=["contextualized"], agents=4)
    net = dict(generator="watts_strogatz", params=dict(k=4, p=0.2), seed=5)
    seed_cfg = config(None, rounds=0, **kw)
    seed = run_experiment(seed_cfg, tmp_path)
    r = run(config(net, rounds=2, **kw), tmp_path)  # same folder, same cache
    d = r.tables["decisions.parquet"]
    zero = d[d["round"] == 0][DECISION_COLUMNS].reset_index(drop=True)
    pd.testing.assert_frame_equal(zero, seed.decisions[DECISION_COLUMNS].reset_index(drop=True))
    # only the rounds and the no-influence arm: personas and round 0 came from the cache
    assert r.manifest["model_calls"] == 12 * 2 + 12 * 2
    assert r.manifest["cache_hits"] == 24


def test_every_agent_and_round_once_and_every_status_counted(tmp_path):
    net = dict(generator="watts_strogatz", params=dict(k=2, p=0.0), seed=1)  # a ring
    r = run(config(net, rounds=2, agents=3, models=["sharefake:offlist"]), tmp_path / "out")
    d = r.tables["decisions.parquet"]
    assert len(d) == 9 * 3 and not d.duplicated(["agent_id", "round"]).any()
    assert (d.groupby("round")["node"].apply(sorted) == pd.Series([list(range(9))] * 3)).all()
    m = r.manifest
    counted = {s: sum(x[s] for x in m["status_by_attribute"]) for s in ("valid", "invalid", "refused", "error")}
    assert counted == m["status_counts"]["decisions"] and sum(counted.values()) == len(d)
    # Non-binary agents (nodes 6-8) answer off the list in round 0: invalid, no decision, no target
    zero = d[d["round"] == 0].sort_values("node")
    assert zero["status"].tolist() == ["valid"] * 6 + ["invalid"] * 3
    assert zero["decision"].isna().tolist() == [False] * 6 + [True] * 3 and zero["target"].isna().sum() == 3
    # their neighbours hear of them as no clear answer, not as stayers; the share is over valid neighbours
    one = d[d["round"] == 1].sort_values("node")
    assert one["neighbours_valid"].tolist() == [1, 2, 2, 2, 2, 1, 1, 0, 1]
    assert one["neighbour_share"].isna().tolist() == [False] * 7 + [True, False]
    assert any("gave no clear answer" in p for p in MODELS["offlist"].prompts)
    # the control keeps an invalid agent's status (no model to ask); changed is NA where either answer is invalid
    c = r.tables["control.parquet"]
    assert (c[c["node"] >= 6]["status"] == "invalid").all() and c[c["node"] >= 6]["changed"].isna().all()
    assert m["status_counts"]["control"]["invalid"] == 9


def test_agent_creation_order_changes_nothing(tmp_path):
    net = dict(generator="watts_strogatz", params=dict(k=4, p=0.3), seed=2)
    cfg = config(net, rounds=2, agents=4, models=["fake:seed=1,bias=female:0.8"], conditions=["contextualized"])
    a = run(cfg, tmp_path / "a")
    orders = [list(np.random.default_rng(s).permutation(12)) for s in (1, 2)]
    for i, o in enumerate(orders):
        b = run(cfg, tmp_path / f"b{i}", order=lambda n, o=o: o)
        for name in ("decisions.parquet", "control.parquet"):
            pd.testing.assert_frame_equal(a.tables[name].drop(columns="run_id", errors="ignore"),
                                          b.tables[name].drop(columns="run_id", errors="ignore"))


def test_score_mode_rounds(tmp_path):
    net = dict(generator="edge_list", params=dict(path=edges_file(tmp_path, [(i, i + 1) for i in range(5)])))
    r = run(config(net, rounds=2, decision_mode="score", control=dict(rule="degroot", self_weight=0.5)),
            tmp_path / "out")
    d = r.tables["decisions.parquet"]
    assert by_round(d) == [[S, S, E, E, S, S], [S, E, E, E, E, S], [E] * 6]
    assert by_round(d, "p_target")[0] == pytest.approx([0.1, 0.1, 0.9, 0.9, 0.1, 0.1])
    # DeGroot, w = 0.5, from the round-0 probabilities: node 1 → 0.5·0.1 + 0.5·(0.1 + 0.9)/2 = 0.3
    c = r.tables["control.parquet"]
    assert c[(c["round"] == 1) & (c["node"] == 1)]["p_target"].iloc[0] == pytest.approx(0.3)


def test_interrupted_mid_round_resumes_exactly_and_rerun_calls_nothing(tmp_path):
    net = dict(generator="watts_strogatz", params=dict(k=4, p=0.3), seed=4)
    cfg = config(net, rounds=3, agents=3, concurrency=1)
    whole = run(cfg, tmp_path / "whole")
    total = whole.manifest["model_calls"]
    assert total == 9 + 9 * 4 + 9 * 3 == kinds.count_calls(cfg, "network")  # + the no-influence arm, rounds 1-3
    MODELS.clear()
    model = _build("", None, None)
    model.fail_after = 9 + 9 + 9 + 4  # names, round 0, and 13 calls into the no-influence arm
    with pytest.raises(RuntimeError, match="killed"):
        run(cfg, tmp_path / "cut")
    assert not (tmp_path / "cut" / "decisions.parquet").exists()
    model.fail_after = None
    resumed = run(cfg, tmp_path / "cut")
    assert resumed.manifest["model_calls"] == total - 31 and resumed.manifest["cache_hits"] == 31
    for name in ("decisions.parquet", "control.parquet", "network.parquet", "personas.parquet"):
        pd.testing.assert_frame_equal(whole.tables[name], resumed.tables[name])
    again = run(cfg, tmp_path / "cut")
    assert again.manifest["model_calls"] == 0
    pd.testing.assert_frame_equal(again.tables["decisions.parquet"], whole.tables["decisions.parquet"])


def test_bad_network_configs_are_one_line_errors(tmp_path):
    sbm = dict(generator="homophily_sbm", params=dict(group="political_ideology", within=0.8, mean_degree=2))
    with pytest.raises(LouderError, match="network.params.group: 'political_ideology' is not a column.*group: "
                                          "gender_identity"):
        network_task(config(sbm, agents=4))
    with pytest.raises(LouderError, match="network.params.mean_degree"):
        network_task(config({**sbm, "params": dict(group="attribute", within=0.9, mean_degree=6)}, agents=2))
    with pytest.raises(LouderError, match="executor: ray"):
        network_task(config(dict(generator="erdos_renyi", params=dict(p=0.5)), executor="ray"))


def test_cli_runs_a_network_config_and_counts_its_calls(tmp_path):
    cfg = tmp_path / "net.yaml"
    cfg.write_text("models: [sharefake]\nsimulation: {scenarios: [emergency_response], groups: [gender_identity], "
                   "conditions: [no_persona], agents: 2}\ninfluence: {rounds: 1}\n"
                   "network: {generator: homophily_sbm, params: {group: gender_identity, within: 0.8, "
                   "mean_degree: 1}, seed: 1}\n")
    runner = CliRunner()
    dry = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "o"), "--rounds", "2", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert re.search(r"sharefake\D+36\b", dry.output)  # 6 names + 6 × 3 decisions + 6 × 2 without influence
    r = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "round" in r.output and (tmp_path / "o" / "control.parquet").exists()
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert m["louder_kind"] == "network" and m["network"]["rounds"] == 1 and m["model_calls"] == 6 + 12 + 6
    bad = runner.invoke(app, ["run", "--out", str(tmp_path / "p"), "--rounds", "2", "-m", "sharefake"])
    assert bad.exit_code == 2 and "rounds" in bad.output and "network" in bad.output


# --- analysis and report -------------------------------------------------------------------------

def test_analysis_tables_follow_the_hand_computed_cascade(tmp_path):
    # path graph: the share rule cascades to everyone evacuating (LLM DPD 1 → 0) while the majority control
    # stays split (DPD 1)
    path = edges_file(tmp_path, [(i, i + 1) for i in range(5)])
    run(config(dict(generator="edge_list", params=dict(path=path))), tmp_path / "out")
    a = analyze(tmp_path / "out", bootstrap=500)
    amp = a.tables["amplification"]
    assert amp["round"].tolist() == [0, 1, 2, 3] and amp["final"].tolist() == [False, False, False, True]
    assert amp["amplification"].tolist() == pytest.approx([0, -1 / 2, -1, -1])  # round 1: rates 0.5, 1, 0.5
    assert amp["ci_low"].iloc[0] == amp["ci_high"].iloc[0] == 0  # round 0 is shared by both runs
    rounds = a.tables["network_rounds"]
    llm3 = rounds[(rounds["source"] == "LLM") & (rounds["round"] == 3)]
    assert llm3["rate"].tolist() == [1, 1, 1] and llm3["n_valid"].tolist() == [2, 2, 2]
    assert (llm3["dpd"] == 0).all()
    ctl = rounds[rounds["source"] == "control"]
    assert set(ctl["dpd"]) == {1.0}
    flips = a.tables["network_flips"]
    f1 = flips[(flips["source"] == "LLM") & (flips["round"] == 1)].set_index("attribute")["flip_rate"]
    assert f1.to_dict() == {"Female": 0.0, "Male": 0.5, "Non-binary": 0.5}
    # the seed tables read round 0 only: 6 agents, not 6 × 4 rows
    from louder.analysis.engine import registry

    assert a.tables["cases"]["n_valid"].tolist() == [6]
    assert len(a.context(registry.get("cases")).decisions) == 6 and len(a.context(registry.get("network")).rounds) == 24
    for name in ("network_rounds", "network_flips", "amplification"):
        assert (tmp_path / "out" / f"{name}.csv").exists()


def test_report_states_amplified_damped_and_no_change_per_case(tmp_path):
    complete = dict(generator="erdos_renyi", params=dict(p=1.0))
    # 30 agents who all know each other; round 0: the 10 Female agents evacuate. The share rule makes
    # everyone stay (DPD 0), while the same agents asked again without neighbours answer as in round 0
    # (DPD 1): damped, −1. A threshold-1 control keeps round 0 (DPD 1): a reference, not the verdict.
    run(config(complete, agents=10, control=dict(rule="threshold", threshold=1.0)), tmp_path / "damped")
    a = analyze(tmp_path / "damped", bootstrap=500)
    final = a.tables["amplification"].iloc[-1]
    assert final["amplification"] == pytest.approx(-1) and final["verdict"] == "damped"
    assert final["baseline"] == "no-influence arm" and final["dpd_control"] == pytest.approx(1)
    html = write_report(a).read_text()
    section = html[html.index("<h2>Networks and influence</h2>"):]
    section = section[:section.find("<h2>", 4)]  # this section only
    assert "<b>damped</b> the disparity" in section and "textbook contagion" in section
    assert section.count('data-figure="network/') == 2 and section.count('<img alt="') == 2  # rounds, amplification
    # a model that ignores its neighbours keeps the split (DPD 1) with and without them — while the majority
    # control converges (DPD 0), which the old verdict read as "amplified": no change
    run(config(complete, agents=10, models=["sharefake:stubborn"]), tmp_path / "stubborn")
    a = analyze(tmp_path / "stubborn", bootstrap=500)
    final = a.tables["amplification"].iloc[-1]
    assert final["amplification"] == 0 and final["verdict"] == "no change" and final["dpd_control"] == 0
    assert "made <b>no change</b> to the disparity" in write_report(a).read_text()
    # a model whose answers split by attribute only when it hears its neighbours: amplified, +1
    run(config(complete, agents=10, models=["sharefake:split"]), tmp_path / "amplified")
    a = analyze(tmp_path / "amplified", bootstrap=500)
    final = a.tables["amplification"].iloc[-1]
    assert final["amplification"] == pytest.approx(1) and final["verdict"] == "amplified"
    assert final["dpd_no_influence"] == 0 and final["change"] == pytest.approx(1)
    assert "<b>amplified</b> the disparity" in write_report(a).read_text()


def test_archetype_rows_are_resampled_by_cluster():
    # two attributes, 4 cells each × 2 replicates; all agents of a cluster decide alike, so the cluster
    # bootstrap (8 clusters per attribute) gives a wider interval than resampling 400 agents as independent
    rng = np.random.default_rng(0)
    rows = []
    for cell in range(8):
        for k in range(2):
            t = bool(rng.random() < 0.5)
            for i in range(25):
                rows.append(dict(model="m", condition="c", scenario="s", group="g", cell_id=cell, replicate=k,
                                 attribute="a" if cell < 4 else "b", node=len(rows), round=0, status="valid",
                                 target=t, changed=pd.NA, bucket=pd.NA))
    d = pd.DataFrame(rows)
    clustered = network_tables(d, None, B=400)["network_rounds"].iloc[0]
    agents = network_tables(d.drop(columns="bucket"), None, B=400)["network_rounds"].iloc[0]
    assert clustered["dpd"] == agents["dpd"]
    width = lambda r: r["dpd_ci_high"] - r["dpd_ci_low"]  # noqa: E731
    assert width(clustered) > 1.5 * width(agents)


def test_the_view_replays_a_network_run(tmp_path):
    import ipywidgets
    import solara

    from louder.view.app import make_page
    from louder.view.data import load_view_data, rates_over_rounds
    from louder.view.model import ReplayModel

    net = dict(generator="homophily_sbm", params=dict(group="gender_identity", within=0.8, mean_degree=2), seed=1)
    r = run(config(net, rounds=2, agents=4, models=["sharefake:offlist"]), tmp_path / "out")
    m = ReplayModel(str(tmp_path / "out"))
    assert m.n_nodes == 12 and m.last_round == 2 and not m.sampled
    d = r.tables["decisions.parquet"]
    for rnd in range(3):
        rec = d[(d["round"] == rnd) & (d["status"] == "valid")].set_index("node")["target"].astype(bool).to_dict()
        assert {a.node: a.target for a in m.agents if a.target is not None} == rec
        assert sum(a.status == "invalid" for a in m.agents) == 4  # Non-binary agents answer off the list
        m.step()
    rates = rates_over_rounds(load_view_data(tmp_path / "out").decisions, r.tables["control.parquet"])
    assert set(rates["source"]) == {"LLM", "control"}
    # the control keeps the Non-binary agents' invalid status: no rate for them, not a rate of 0
    none = rates["rate"].isna()
    assert (rates.loc[none, "attribute"] == "Non-binary").all() and (rates.loc[none, "source"] == "control").all()
    assert none.sum() == 3
    box, rc = solara.render(make_page(str(tmp_path / "out")), handle_error=False)
    assert len(rc.find(ipywidgets.Image).widgets) == 2


def test_batch_stages_run_round_by_round_and_complete_the_run(fake_server, tmp_path):
    from test_batch import round_trip

    from louder.batching import status

    cfg = build_config(dict(models=[{"spec": f"openai:fake@{fake_server.url}", "client": "http"}],
                            scenarios=["emergency_response"], groups=["gender_identity"], conditions=["no_persona"],
                            agents=2, rounds=2, network=dict(generator="watts_strogatz", params=dict(k=2, p=0.0))))
    # each agent's name call is followed by its round-0 decision and its no-influence answers (rounds 1
    # and 2); then one stage per round of influence
    assert round_trip(cfg, fake_server.url, tmp_path) == [6, 18, 6, 6]
    assert status(cfg, tmp_path, ["simulation"]).needed == 0
    n = len(fake_server.requests)
    r = run(cfg, tmp_path)
    assert r.manifest["model_calls"] == 0 and len(fake_server.requests) == n
    assert len(r.tables["decisions.parquet"]) == 18 and r.manifest["cache_hits"] == 36
