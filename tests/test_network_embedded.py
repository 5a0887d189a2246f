"""A network run on the real embedded model: SIGKILL during round 2, resume, equals an uninterrupted
run; a re-run calls nothing; analyze, report and the view read it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import ipywidgets
import pandas as pd
import pytest
import solara

from louder.view.app import make_page
from cache_count import cached_replies

pytestmark = pytest.mark.slow

# 3 agents (1 per attribute) on a ring, rounds 0..2, score mode, name-only personas:
# 3 name calls + 3 × 3 score calls + the no-influence arm (score_pick: draw asks it: 3 agents × rounds 1-2,
# asked in round 0's pass) = 18 calls per run (a shared 2-core machine can be slow: long timeout).
CONFIG = """\
models: [{spec: embedded, n_threads: 1}]
simulation: {scenarios: [emergency_response], groups: [gender_identity], conditions: [no_persona], agents: 1,
             decision_mode: score, score_pick: draw}
network: {generator: watts_strogatz, params: {k: 2, p: 0.0}, seed: 0}
rounds: 2
concurrency: 1
"""
CALLS = 18
ROUND_2_STARTS = 3 + 3 + 6 + 3  # names, round 0 with the arm's 6, round 1


def _run(cfg, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "louder.cli", "run", str(cfg), "--out", str(out)],
                          capture_output=True, text=True, timeout=1800)


@pytest.mark.timeout(3600)
def test_sigkill_in_round_two_then_resume_equals_uninterrupted(tmp_path):
    cfg = tmp_path / "net.yaml"
    cfg.write_text(CONFIG)
    reference = tmp_path / "ref"
    r = _run(cfg, reference)
    assert r.returncode == 0, r.stderr
    ref_manifest = json.loads((reference / "manifest.json").read_text())
    assert ref_manifest["model_calls"] == CALLS

    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "run", str(cfg), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 1800
        while cached_replies(out / "cache.sqlite") < ROUND_2_STARTS + 1 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
    finally:  # SIGKILL (proc.kill) — and never leave the run behind, even if the test stops here
        proc.kill()
        proc.wait()
    done_before = cached_replies(out / "cache.sqlite")
    assert ROUND_2_STARTS < done_before < CALLS  # killed inside round 2
    assert not (out / "decisions.parquet").exists()

    r = _run(cfg, out)
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["cache_hits"] == done_before and m["model_calls"] == CALLS - done_before  # nothing repeated or lost
    skip = ["run_id", "latency_s"]  # the folder's name; wall time of each call
    for name in ("decisions.parquet", "control.parquet", "network.parquet", "no_influence.parquet"):
        a = pd.read_parquet(reference / name).drop(columns=skip, errors="ignore")
        b = pd.read_parquet(out / name).drop(columns=skip, errors="ignore")
        pd.testing.assert_frame_equal(a, b)
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 3 * 3 and sorted(d["round"].unique()) == [0, 1, 2]
    assert set(d["status"]) <= {"valid", "invalid", "refused", "error"}

    again = _run(cfg, out)
    assert again.returncode == 0 and "model_calls: 0" in again.stdout

    for cmd in (["analyze", str(out), "-B", "500"], ["report", str(out), "-B", "500"]):
        r = subprocess.run([sys.executable, "-m", "louder.cli", *cmd], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
    assert "Networks and influence" in (out / "report" / "index.html").read_text()
    box, rc = solara.render(make_page(str(out)), handle_error=False)
    assert len(rc.find(ipywidgets.Image).widgets) == 2
