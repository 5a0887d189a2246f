"""``mode: archetype`` as a run (louder/simulation/archetype_run.py): calls per archetype, draws per agent."""

from __future__ import annotations

import json
import math
import re
import threading

import pandas as pd
import pytest

from louder.config import build_config
from louder.errors import LouderError
from louder.kinds import count_calls as estimate_calls
from louder.llm.base import Reply
from louder.llm.cache import ResponseCache
from louder.llm.fake import FakeModel
from louder.llm.registry import BackendInfo, register, unregister
from louder.simulation.archetype_run import count_calls, run_archetype
from louder.types import DECISION_COLUMNS

NET = {"generator": "watts_strogatz", "params": {"k": 6, "p": 0.1}, "seed": 0}


def cfg(**kw):
    base = dict(models=["fake:seed=1,bias=woman:0.8,bias=man:0.3"], population="us_adults", agents=3000,
                mode="archetype", decision_mode="score", scenarios=["emergency_response"],
                groups=["gender_identity"], replicates=2, buckets=2, network=NET, rounds=2, concurrency=4)
    return build_config({**base, **kw})


def test_recovers_the_analytic_dpd_and_writes_the_shared_schema(tmp_path):
    """The fake gives P(Evacuate) = 0.8 to every archetype described as a woman, 0.3 as a man and 0.5
    otherwise (non-binary): expected-rate DPD exactly 0.5, sampled rates within their binomial noise."""
    r = run_archetype(cfg(agents=20_000, rounds=0, network=None), tmp_path)
    d = r.tables["decisions.parquet"]
    assert list(d.columns[: len(DECISION_COLUMNS)]) == DECISION_COLUMNS
    for col in ("round", "node", "neighbours", "neighbour_share", "changed", "bucket", "cell_id", "variant",
                "weight", "attr_age_group", "attr_political_ideology"):
        assert col in d.columns
    assert (d["attribute"] == d["attr_gender_identity"]).all()
    truth = {"Female": 0.8, "Male": 0.3, "Non-binary": 0.5}
    mean_p = d.groupby("attribute")["p_target"].mean()
    for a, p in truth.items():
        assert mean_p[a] == pytest.approx(p, abs=1e-9)
        rows = d[d["attribute"] == a]
        sd = math.sqrt(p * (1 - p) / len(rows))
        assert abs(rows["target"].astype(float).mean() - p) < 4 * sd
    assert mean_p.max() - mean_p.min() == pytest.approx(0.5)


def test_calls_are_cells_times_buckets_times_replicates_plus_round0_exactly(tmp_path):
    c = cfg(agents=4000, replicates=3, buckets=4, rounds=3)
    r = run_archetype(c, tmp_path / "net")
    cells = r.manifest["population"]["cells"]
    assert r.manifest["model_calls"] == cells * 3 * (1 + 5) == count_calls(c) == estimate_calls(c)
    calls = pd.read_parquet(tmp_path / "net" / "archetypes.parquet")
    assert len(calls) == cells * 3 * 6 and not calls.duplicated(["cell_id", "bucket", "replicate"]).any()
    # every agent of a round ≥ 1 with a valid neighbour used the call of its nearest bucket
    d = r.tables["decisions.parquet"]
    later = d[(d["round"] > 0) & d["neighbour_share"].notna()]
    assert (abs(later["bucket"] - later["neighbour_share"]) <= 0.125 + 1e-12).all()
    assert d.loc[d["round"] == 0, "bucket"].isna().all()
    # without a network: round 0 only, cells × K calls
    r0 = run_archetype(cfg(agents=4000, replicates=3, network=None, rounds=0), tmp_path / "alone")
    assert r0.manifest["model_calls"] == r0.manifest["population"]["cells"] * 3
    assert set(r0.tables["decisions.parquet"]["round"]) == {0}
    # network outputs: one row per edge per case, and the control from the same round 0
    net = pd.read_parquet(tmp_path / "net" / "network.parquet")
    assert len(net) == r.manifest["network"]["edges"]
    ctl = pd.read_parquet(tmp_path / "net" / "control.parquet")
    assert len(ctl) == 4000 * 4
    m = d[d["round"] == 0].set_index("node")["decision"]
    assert (ctl[ctl["round"] == 0].set_index("node")["decision"] == m.reindex(ctl[ctl["round"] == 0]["node"])).all()


class Flaky(FakeModel):
    """The fake, except that archetypes described as Asian get a failed call and as Black an
    unscorable answer (no log-probs)."""

    def score(self, request, prefix, choices):
        text = request.messages[-1][1]
        if "Asian" in text:
            return Reply(error="HTTP 500: server error", error_cause="http_500")
        if "Black" in text:
            return Reply(text=json.dumps({"logprobs": {c: None for c in choices}}))
        return super().score(request, prefix, choices)


@pytest.fixture
def flaky():
    register(BackendInfo("flaky", lambda model, url, c: Flaky(model), forms=("flaky",), can_score=True, local=True,
                         takes_url=False, model_optional=True))
    yield
    unregister("flaky")


def test_failed_or_unscorable_calls_leave_their_agents_error_or_invalid_never_p0(tmp_path, flaky):
    r = run_archetype(cfg(models=["flaky"], agents=5000, groups=["race_ethnicity"]), tmp_path)
    d = r.tables["decisions.parquet"]
    for race, status in (("Asian", "error"), ("Black", "invalid")):
        rows = d[d["attr_race_ethnicity"] == race]
        assert len(rows) and (rows["status"] == status).all()
        assert rows["decision"].isna().all() and rows["target"].isna().all() and rows["p_target"].isna().all()
    ok = d[~d["attr_race_ethnicity"].isin(["Asian", "Black"])]
    assert (ok["status"] == "valid").all() and ok["p_target"].notna().all()
    # their neighbours' shares count valid neighbours only
    later = d[d["round"] == 1]
    r0 = d[d["round"] == 0].set_index("node")
    assert later["neighbour_share"].dropna().between(0, 1).all()
    counts = r.manifest["status_counts"]["decisions"]
    assert counts["error"] == int((d["status"] == "error").sum()) > 0 and sum(counts.values()) == len(d)
    assert r0["status"].isin(["error", "invalid"]).sum() == len(d[(d["round"] == 0) & d["attr_race_ethnicity"].isin(
        ["Asian", "Black"])])


def test_rerun_makes_no_call_and_gives_the_same_rows(tmp_path):
    c = cfg()
    first = run_archetype(c, tmp_path)
    again = run_archetype(c, tmp_path)
    assert first.manifest["model_calls"] > 0 and again.manifest["model_calls"] == 0
    pd.testing.assert_frame_equal(first.tables["decisions.parquet"], again.tables["decisions.parquet"])


class Interrupted(Exception):
    pass


def test_resume_after_interruption_is_exact(tmp_path):
    """The run dies after 7 answered calls; the resumed run asks only the rest, and its rows equal an
    uninterrupted run's."""
    answered = []
    lock = threading.Lock()

    class Dying(FakeModel):
        def score(self, request, prefix, choices):
            with lock:
                if len(answered) == 7:
                    raise Interrupted("killed")
                answered.append(1)
            return super().score(request, prefix, choices)

    register(BackendInfo("dying", lambda model, url, c: Dying(model), forms=("dying",), can_score=True, local=True,
                         takes_url=False, model_optional=True))
    try:
        c = cfg(models=["dying:seed=1,bias=woman:0.8"], concurrency=1)
        with pytest.raises(Interrupted):
            run_archetype(c, tmp_path / "run")
        cache = ResponseCache(tmp_path / "run" / "cache.sqlite")
        assert len(cache) == 7
        cache.close()
        answered.clear()
        answered.extend([0] * -10**6)  # no more interruptions
        lock_free = Dying.score
        Dying.score = lambda self, request, prefix, choices: FakeModel.score(self, request, prefix, choices)
        try:
            resumed = run_archetype(c, tmp_path / "run")
            whole = run_archetype(c, tmp_path / "whole")
        finally:
            Dying.score = lock_free
    finally:
        unregister("dying")
    assert resumed.manifest["model_calls"] == count_calls(c) - 7 and resumed.manifest["cache_hits"] == 7
    pd.testing.assert_frame_equal(resumed.tables["decisions.parquet"].drop(columns="run_id"),
                                  whole.tables["decisions.parquet"].drop(columns="run_id"))


def test_agents_of_a_cluster_share_their_archetype_call_and_replicates_differ_only_by_prompt(tmp_path):
    r = run_archetype(cfg(replicates=3, network=None, rounds=0), tmp_path)
    d = r.tables["decisions.parquet"]
    per = d.groupby(["cell_id", "replicate"])
    assert (per["p_target"].nunique() == 1).all() and (per["persona"].nunique() == 1).all()
    calls = pd.read_parquet(tmp_path / "archetypes.parquet")
    assert calls.groupby("cell_id")["prompt"].nunique().min() == 3  # attribute order differs per replicate
    # replicates are balanced within a cell (round-robin)
    sizes = d.groupby(["cell_id", "replicate"]).size().groupby("cell_id")
    assert ((sizes.max() - sizes.min()) <= 1).all()


@pytest.mark.parametrize("change, message", [
    (dict(population=None), "needs `population:`"),
    (dict(decision_mode="sample"), "needs decision_mode: score"),
    (dict(network=None, rounds=2), "rounds: 2 needs a `network:`"),
    (dict(groups=["gender_identity", "religion"]), None),
    (dict(buckets=[0.5, 2.0]), "buckets:"),
    (dict(twins=True), "twins: not available in mode: archetype"),
])
def test_bad_configs_fail_with_one_line(tmp_path, change, message):
    try:
        c = cfg(**change)
    except LouderError as e:  # caught earlier by the config itself (unknown group)
        assert "\n" not in str(e)
        return
    with pytest.raises(LouderError) as e:
        run_archetype(c, tmp_path)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cli_routes_archetype_mode_and_dry_run_prints_the_exact_count(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from louder.cli import app

    c = cfg(agents=2000, replicates=2, buckets=3, rounds=1)
    path = tmp_path / "a.yaml"
    data = c.model_dump(mode="json", exclude_defaults=True)
    path.write_text(yaml.safe_dump(data))
    runner = CliRunner()
    dry = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    n = count_calls(c)
    assert f"{n:,}" in dry.output
    res = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert f"model_calls: {n} " in res.output
    assert not (tmp_path / "out" / "personas.parquet").exists()
    # the dry run's size of the run (issue 49): its rows exactly, and a peak memory from bytes per agent
    rows = r"2,000 agents × 2 rounds × 1 case\(s\) × 1 analysed group\(s\) = 4,000 decision rows, 4,000 control rows"
    assert re.search(rows, " ".join(dry.output.split())), dry.output
    assert "peak memory (measured bytes per agent)" in dry.output and "for `louder analyze`" in dry.output
    m = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert m["rows"]["decisions"] == 4000


def test_a_run_that_cannot_fit_the_machine_is_refused_in_one_line(tmp_path, monkeypatch):
    """Before any agent is drawn: the peak from bytes per agent against the memory available, and the fix."""
    from louder.simulation import archetype_size

    monkeypatch.setattr(archetype_size, "available_mb", lambda: 2048.0)
    c = cfg(agents=50_000_000, rounds=5)
    with pytest.raises(LouderError) as e:
        count_calls(c)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("simulation.agents: 50,000,000 agents need about")
    assert "shard it on Ray (executor: ray" in msg and "or draw at most" in msg and "2.0 GB available" in msg
    fits = int(re.search(r"draw at most ([\d,]+) agents", msg).group(1).replace(",", ""))
    assert archetype_size.size(cfg(agents=fits, rounds=5)).run_mb <= 2048 < archetype_size.size(
        cfg(agents=fits + 10_000, rounds=5)).run_mb
    # on Ray the workers share the agents: the same design fits when the machine's memory would hold them
    monkeypatch.setattr(archetype_size, "available_mb", lambda: 1e9)
    s = archetype_size.size(c, shards=4)
    assert s.worker_mb < s.run_mb and len(s.lines()) == 2 and "per Ray worker × 4 workers" in s.lines()[1]
    # the peak does not grow with the rounds; the rows do
    a, b = archetype_size.size(cfg(agents=10**6, rounds=1)), archetype_size.size(cfg(agents=10**6, rounds=9))
    assert a.run_mb == b.run_mb and b.rows == 5 * a.rows


def test_batch_round_trip_is_one_stage_and_equals_a_live_run(fake_server, tmp_path):
    """Every archetype prompt is known before any answer: one export stage holds the whole plan."""
    from test_batch import round_trip

    c = cfg(models=[{"spec": f"openai:fake@{fake_server.url}", "client": "http"}], agents=600, replicates=2,
            buckets=1, rounds=1)
    assert round_trip(c, fake_server.url, tmp_path / "batch") == [count_calls(c)]
    done = run_archetype(c, tmp_path / "batch")
    live = run_archetype(c, tmp_path / "live")
    assert done.manifest["model_calls"] == 0 and live.manifest["model_calls"] == count_calls(c)
    pd.testing.assert_frame_equal(done.tables["decisions.parquet"].drop(columns="run_id"),
                                  live.tables["decisions.parquet"].drop(columns="run_id"))


@pytest.mark.slow
def test_embedded_scoring_of_a_shared_head_is_the_same_in_any_order():
    """The embedded scorer keeps a multi-message prompt's head evaluated between calls: the answers
    equal those of a fresh model, in reverse order too; one-message prompts are unaffected.

    The second model is the fresh one: its first call is the one-message prompt (no head to keep), so its
    first multi-message answer (the last request) is scored from nothing, and its others after the heads
    of the reversed order — 10 scoring calls (~2 s each here) where a third model took 4 more."""
    from louder.llm.base import Request
    from louder.llm.embedded import EmbeddedModel
    from louder.prompts import Prompts
    from louder.scenarios import load_scenario
    from louder.simulation.archetype_run import archetype_prompt

    p, sc = Prompts(), load_scenario("emergency_response")
    reqs = [Request(messages=archetype_prompt(p, d, sc, s), max_tokens=16)
            for d in ("a person who is a woman", "a person who is a man") for s in (None, 0.75)]
    one = Request(messages=(("user", p.action("Alex", "a woman", sc, "chat")),), max_tokens=16)
    m = EmbeddedModel(n_threads=1)
    forward = [m.score(r, p.score_prefix, sc.labels).text for r in reqs]
    single = m.score(one, p.score_prefix, sc.labels).text  # after the heads of four multi-message calls
    fresh = EmbeddedModel(n_threads=1)
    assert single == fresh.score(one, p.score_prefix, sc.labels).text
    backward = [fresh.score(r, p.score_prefix, sc.labels).text for r in reversed(reqs)][::-1]
    assert forward == backward
    assert len(set(forward)) == 4


THREE = """id: three_way
name: Three ways
source: a test scenario with three choices
situation: A storm is coming to your town tonight.
choices:
- label: Leave
  description: leave town now.
- label: Shelter
  description: go to the public shelter.
- label: Stay
  description: stay at home.
target: Shelter
persona_context: how this person would react to a storm warning
completion:
  question: Do you leave, shelter or stay?
  extraction_task: is asked to choose whether to Leave, Shelter or Stay
explicit:
  situation: A storm is coming to a person's town tonight.
  decision_sentence: The person goes to the shelter.
"""


@pytest.mark.parametrize("rule", ["majority", "degroot"])
def test_streamed_rows_equal_the_whole_table_rows(tmp_path, flaky, rule):
    """Issue 49: the decisions and the control, written round by round from a few vectors per agent, are
    the rows the whole-table code made (tests/archetype_reference.py, kept from before) value for value
    and in the same order — two models (one failing on some archetypes), a three-choice scenario, two
    analysed groups, a network with rounds."""
    import archetype_reference as ref

    from louder.simulation.archetype_run import Plan, check_config

    (tmp_path / "three.yaml").write_text(THREE)
    c = cfg(models=["fake:seed=1,bias=woman:0.8", "flaky"], agents=800, scenarios=["emergency_response",
            str(tmp_path / "three.yaml")], groups=["gender_identity", "race_ethnicity"], rounds=2, replicates=2,
            buckets=3, control={"rule": rule, "self_weight": 0.4})
    r = run_archetype(c, tmp_path / "run")
    calls = pd.read_parquet(tmp_path / "run" / "archetypes.parquet")
    by_case = {k: g.reset_index(drop=True) for k, g in calls.groupby(["model", "scenario"], sort=False)}
    want = ref.tables(Plan(c, check_config(c)), by_case, r.manifest["run_id"])
    for name in ("decisions.parquet", "control.parquet"):
        got = pd.read_parquet(tmp_path / "run" / name)
        pd.testing.assert_frame_equal(got, want[name], check_exact=True)
    d = pd.read_parquet(tmp_path / "run" / "decisions.parquet", columns=["status", "decision"])
    assert set(d["status"]) >= {"valid", "error", "invalid"} and d["decision"].nunique() == 4  # Evacuate, Stay, Leave, Shelter
    assert r.manifest["rows"]["decisions"] == len(d)
