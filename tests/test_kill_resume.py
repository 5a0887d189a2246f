"""A run SIGKILLed at random points and resumed equals an uninterrupted run, and no answer is asked twice:
a plain run, a network run (killed inside round 2) and a population run with variants and twins.

The killed runs are real ``louder run`` processes (the reference runs, the resumes and the analyses run
in this process: the same command, without a second start-up) talking to a model served over HTTP on
127.0.0.1 (the fake OpenAI-compatible server, tests/fake_openai.py, through the openai client users
run): what resuming proves is a property of louder's cache, task order and atomic writes, not of the
model, so the model is the fake one, its answers deterministic. Each answer is held back ``DELAY``
seconds and the runs make one call at a time (as the embedded model does), so a kill lands between
answers, mid-call and mid-write at a point the test chooses; at least two calls are left when the kill
comes, so a run is never over before it. (The embedded model has its own end-to-end run:
tests/test_e2e_embedded.py.)"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from typer.testing import CliRunner

from cache_count import cached_replies
from louder.cli import app

DELAY = 0.15  # seconds the server holds each answer: long enough to kill mid-call, short enough to be cheap
LOUDER = [sys.executable, "-m", "louder.cli"]


def _louder(*args) -> str:
    """A louder command in this process; its output."""
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output[-3000:], r.exception)
    return r.output


def _resume(*args) -> str:
    """The resuming run: it takes over the folder the killed run left locked, and says so."""
    with pytest.warns(RuntimeWarning, match="left locked by pid .* which is gone; taking the folder over"):
        return _louder(*args)


@pytest.fixture
def server(fake_server):
    fake_server.delay_s = DELAY
    return fake_server


def _kill_after(out, kill_after: int, cmd: list, rng: random.Random) -> None:
    """Start ``cmd``, wait until its cache holds ``kill_after`` answers, wait a random part of a call
    more (the kill lands mid-call or mid-write), SIGKILL it; never leave it behind."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while cached_replies(out / "cache.sqlite") < kill_after and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 1.5 * DELAY))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_sigkill_at_random_points_then_resume_equals_uninterrupted(server, tmp_path):
    run = ["run", "--agents", "2", "--scenario", "emergency_response", "--group", "gender_identity",
           "--model", f"openai:fake@{server.url}", "--concurrency", "1", "--out"]
    reference = tmp_path / "ref"
    _louder(*run, reference)
    ref_calls = json.loads((reference / "manifest.json").read_text())["model_calls"]
    assert ref_calls == 12  # 6 personas, 6 decisions
    out = tmp_path / "killed"
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    print(f"kill points seed {seed}")
    # Three kills at random points: after a random number of cached answers (12 in all), plus a
    # random extra delay so the kill also lands mid-call and mid-write.
    for kill_after in sorted(rng.sample(range(1, 11), 3)):
        _kill_after(out, kill_after, LOUDER + run + [str(out)], rng)
        assert cached_replies(out / "cache.sqlite") < ref_calls  # killed before the end …
        assert not (out / "decisions.parquet").exists()  # … and never a half-written output
        assert not list(out.glob(".*.tmp"))
    _resume(*run, out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["cache_hits"] >= kill_after and m["model_calls"] + m["cache_hits"] == ref_calls  # nothing repeated
    cols = ["attribute", "replicate", "name", "persona", "decision", "status", "raw_response"]
    a = pd.read_parquet(reference / "decisions.parquet")[cols]
    b = pd.read_parquet(out / "decisions.parquet")[cols]
    pd.testing.assert_frame_equal(a, b)
    assert (b["status"] == "valid").all()


# 3 agents (1 per attribute) on a ring, rounds 0..2, score mode, name-only personas:
# 3 name calls + 3 × 3 score calls + the no-influence arm (score_pick: draw asks it: 3 agents × rounds 1-2,
# asked in round 0's pass) = 18 calls per run.
NETWORK = """\
models: ['openai:fake@{url}']
simulation: {{scenarios: [emergency_response], groups: [gender_identity], conditions: [no_persona], agents: 1,
             decision_mode: score, score_pick: draw}}
network: {{generator: watts_strogatz, params: {{k: 2, p: 0.0}}, seed: 0}}
influence: {{rounds: 2}}
concurrency: 1
"""
CALLS = 18
ROUND_2_STARTS = 3 + 3 + 6 + 3  # names, round 0 with the arm's 6, round 1


def test_network_run_killed_in_round_two_then_resumed_equals_uninterrupted(server, tmp_path):
    """SIGKILL during round 2, resume: equals an uninterrupted run; a re-run calls nothing; analyze, report
    and the view read it."""
    cfg = tmp_path / "net.yaml"
    cfg.write_text(NETWORK.format(url=server.url))
    run = ["run", cfg, "--out"]
    reference = tmp_path / "ref"
    _louder(*run, reference)
    assert json.loads((reference / "manifest.json").read_text())["model_calls"] == CALLS

    out = tmp_path / "killed"
    _kill_after(out, ROUND_2_STARTS + 1, LOUDER + ["run", str(cfg), "--out", str(out)], random.Random(0))
    done_before = cached_replies(out / "cache.sqlite")
    assert ROUND_2_STARTS < done_before < CALLS  # killed inside round 2
    assert not (out / "decisions.parquet").exists()

    _resume(*run, out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["cache_hits"] == done_before and m["model_calls"] == CALLS - done_before  # nothing repeated or lost
    skip = ["run_id", "latency_s"]  # the folder's name; wall time of each call
    for name in ("decisions.parquet", "control.parquet", "network.parquet", "no_influence.parquet"):
        a = pd.read_parquet(reference / name).drop(columns=skip, errors="ignore")
        b = pd.read_parquet(out / name).drop(columns=skip, errors="ignore")
        pd.testing.assert_frame_equal(a, b)
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 3 * 3 and sorted(d["round"].unique()) == [0, 1, 2]
    assert (d["status"] == "valid").all() and d["p_target"].between(0, 1).all()

    assert "model_calls: 0" in _louder(*run, out)

    _louder("analyze", out, "-B", 500)
    _louder("report", out, "-B", 500)
    assert "Networks and influence" in (out / "report" / "index.html").read_text()
    # The viewer's stack here, not at the top: every pytest-xdist worker imports every test module, and this
    # one takes seconds
    import ipywidgets
    import solara

    from louder.view.app import make_page

    box, rc = solara.render(make_page(str(out)), handle_error=False)
    assert len(rc.find(ipywidgets.Image).widgets) == 2


def test_population_run_with_variants_and_twins_killed_then_resumed_equals_uninterrupted(server, tmp_path):
    pop = {"id": "tiny", "name": "tiny", "groups": [
        "gender_identity", {"id": "age_group", "name": "Age group", "attributes": ["18-44", "45+"]}],
        "distribution": {"marginals": {"gender_identity": {"Male": 49, "Female": 50, "Non-binary": 1},
                                       "age_group": {"18-44": 46, "45+": 54}}}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(pop), encoding="utf-8")
    config = {"models": [f"openai:fake@{server.url}"], "concurrency": 1,
              "population": {"file": str(tmp_path / "tiny.yaml"), "twins": True, "twin_groups": ["gender_identity"]},
              "simulation": {"agents": 2, "scenarios": ["emergency_response_policy"], "decision_mode": "score",
                             "variants": ["base", "mandatory"]}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    run = ["run", tmp_path / "c.yaml", "--out"]
    reference = tmp_path / "ref"
    _louder(*run, reference)
    ref = json.loads((reference / "manifest.json").read_text())
    ref_calls = ref["model_calls"]
    out = tmp_path / "killed"
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    print(f"kill points seed {seed}")
    for kill_after in sorted(rng.sample(range(1, ref_calls - 1), 2)):
        _kill_after(out, kill_after, LOUDER + [str(a) for a in run] + [str(out)], rng)
        assert cached_replies(out / "cache.sqlite") < ref_calls
        assert not (out / "decisions.parquet").exists() and not (out / "twins.parquet").exists()
    _resume(*run, out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["cache_hits"] >= kill_after and m["model_calls"] + m["cache_hits"] == ref_calls + ref["cache_hits"]
    # nothing asked twice: every distinct request is in the cache once, as many as the reference made
    assert cached_replies(out / "cache.sqlite") == cached_replies(reference / "cache.sqlite") == ref_calls
    for name, cols in (("decisions.parquet", ["variant", "agent_id", "attribute", "name", "persona", "decision",
                                               "p_target", "status", "raw_response"]),
                       ("twins.parquet", ["variant", "twin_set", "attribute", "name", "persona", "decision",
                                          "p_target", "status", "twin_status"]),
                       ("population.parquet", None)):
        a, b = pd.read_parquet(reference / name), pd.read_parquet(out / name)
        pd.testing.assert_frame_equal(a[cols] if cols else a, b[cols] if cols else b)
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 4 and set(d["status"]) <= {"valid", "invalid", "refused", "error"}
    tw = pd.read_parquet(out / "twins.parquet")
    assert len(tw) == 2 * 2 * 3  # agents × variants × gender twin set
