"""Issue 36: a run folder that cannot lie — one writer at a time, a cache that keeps the first answer,
one generation of files, Ctrl-C's resume line, the circuit breaker. Runs against servers on 127.0.0.1
that *sample* (a different answer to every request), so any answer asked twice would show."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from contextlib import closing

import pandas as pd
import pytest
from cache_count import cached_replies
from fake_openai import FakeOpenAIServer, default_answer
from typer.testing import CliRunner

import louder
from louder import runfolder
from louder.cli import app
from louder.errors import LouderError

CLI = [sys.executable, "-m", "louder.cli"]
runner = CliRunner()


class SamplingServer(FakeOpenAIServer):
    """Answers every request anew (the request's number goes into the draw), like a model at
    temperature > 0. ``gate``: the run's requests wait until it is set (the preflight's do not)."""

    def __init__(self, **kw):
        self.gate = threading.Event()
        self.gate.set()
        super().__init__(behaviour=self._sample, **kw)

    def _sample(self, n, prompt, body):
        self.gate.wait(60)
        return default_answer(prompt, body.get("seed", 0) * 100_003 + n)


@pytest.fixture
def sampling():
    s = SamplingServer()
    s.start()
    yield s
    s.gate.set()
    s.stop()


def args(server, out, agents=6, *extra):
    return ["run", "--model", f"openai:fake@{server.url}", "--agents", str(agents), "-s", "emergency_response",
            "-g", "gender_identity", "--concurrency", "4", "--out", str(out), *extra]


def frame(out, name="decisions"):
    return pd.read_parquet(out / f"{name}.parquet").drop(columns=["run_id"])


def manifest(out, name="manifest.json"):
    return json.loads((out / name).read_text("utf-8"))


def test_two_runs_on_one_folder_one_runs_the_other_fails_in_one_line(sampling, tmp_path):
    out = tmp_path / "run"
    sampling.gate.clear()  # the winner waits at its first calls, holding the folder
    procs = [subprocess.Popen(CLI + args(sampling, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    deadline = time.time() + 120
    while all(p.poll() is None for p in procs) and time.time() < deadline:
        time.sleep(0.05)
    loser = next(p for p in procs if p.poll() is not None)
    winner = next(p for p in procs if p is not loser)
    err = loser.stderr.read().strip()
    assert loser.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"in use by another louder run: pid {winner.pid}" in err and "louder run --model" in err
    assert "started 20" in err  # the holder's start time
    sampling.gate.set()
    assert winner.wait(120) == 0, winner.stderr.read()
    first = frame(out), frame(out, "personas")
    n = len(sampling.requests)
    again = louder.run(None, out=out, progress=False, models=[f"openai:fake@{sampling.url}"], agents=6,
                       scenarios=["emergency_response"], groups=["gender_identity"], concurrency=4)
    assert again.manifest["model_calls"] == 0 and len(sampling.requests) == n  # 0 calls …
    pd.testing.assert_frame_equal(first[0], frame(out))  # … and 0 rows changed
    pd.testing.assert_frame_equal(first[1], frame(out, "personas"))


def test_two_writers_of_one_cache_keep_its_first_answers(sampling, tmp_path):
    """Two processes, two folders, one `cache:`: they ask the same calls in the same order at once; a
    sampling server answers each differently; whoever stores second goes on with the stored answer,
    so both folders hold the very same rows, and each re-run reproduces its folder with 0 calls."""
    cache = tmp_path / "shared.sqlite"
    config = tmp_path / "c.yaml"
    config.write_text(f"run_id: shared\ncache: {cache}\n")
    outs = [tmp_path / "a", tmp_path / "b"]
    sampling.gate.clear()  # both send their first calls before either gets an answer
    procs = [subprocess.Popen(CLI + ["run", str(config)] + args(sampling, o, 8)[1:], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for o in outs]
    deadline = time.time() + 120
    while len(sampling.requests) < 8 and time.time() < deadline and all(p.poll() is None for p in procs):
        # 4 in flight from each
        time.sleep(0.05)
    sampling.gate.set()
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()
    rows = cached_replies(cache)
    assert len(sampling.requests) > rows  # some calls were answered twice (differently) …
    a, b = frame(outs[0]), frame(outs[1])
    pd.testing.assert_frame_equal(a, b)  # … and both folders were built from the one stored answer
    pd.testing.assert_frame_equal(frame(outs[0], "personas"), frame(outs[1], "personas"))
    n = len(sampling.requests)
    for o in outs:
        before = frame(o), frame(o, "personas")
        r = runner.invoke(app, ["run", str(config)] + args(sampling, o, 8)[1:])
        assert r.exit_code == 0 and "model_calls: 0" in r.output, r.output
        pd.testing.assert_frame_equal(before[0], frame(o))
        pd.testing.assert_frame_equal(before[1], frame(o, "personas"))
    assert len(sampling.requests) == n


def test_the_lock_covers_the_python_api_and_is_released_on_every_path(tmp_path):
    cfg = {"models": ["fake:seed=1"], "simulation": {"scenarios": ["emergency_response"],
                                                   "groups": ["gender_identity"], "agents": 2}}
    held, go = threading.Event(), threading.Event()

    def other():
        with runfolder.hold(tmp_path / "r", "another run"):
            held.set()
            go.wait(30)

    t = threading.Thread(target=other)
    t.start()
    held.wait(10)
    with pytest.raises(LouderError, match="in use by another thread"):
        louder.run(cfg, out=tmp_path / "r", progress=False)
    go.set()
    t.join()
    # a run that fails mid-way (here: a bad kind) leaves the folder free
    with pytest.raises(LouderError):
        louder.run(cfg, out=tmp_path / "r", progress=False, kind="nonsense")
    assert runfolder.holder(tmp_path / "r") is None
    assert louder.run(cfg, out=tmp_path / "r", progress=False).manifest["model_calls"] == 12
    assert runfolder.holder(tmp_path / "r") is None and (tmp_path / "r" / ".louder.lock").read_text() == ""


def test_a_lock_whose_process_is_gone_is_taken_over_with_a_notice(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (out / ".louder.lock").write_text(json.dumps({"pid": dead.pid, "host": "h", "command": "louder run --out r",
                                                  "started": "2026-01-01T00:00:00+00:00"}))
    cfg = {"models": ["fake:seed=1"], "simulation": {"scenarios": ["emergency_response"],
                                                   "groups": ["gender_identity"], "agents": 1}}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        louder.run(cfg, out=out, progress=False)
    notes = [str(x.message) for x in w if "taking the folder over" in str(x.message)]
    assert len(notes) == 1 and f"pid {dead.pid}" in notes[0] and "which is gone" in notes[0]


def test_files_of_another_generation_are_refused_and_the_rerun_rebuilds_them(tmp_path):
    def cfg(seed):
        return {"models": [f"fake:seed={seed}"], "simulation": {"scenarios": ["emergency_response"],
                                                               "groups": ["gender_identity"], "agents": 4}}

    a, b = tmp_path / "a", tmp_path / "b"
    louder.run(cfg(1), out=a, progress=False)
    louder.run(cfg(2), out=b, progress=False)
    m = manifest(a)
    assert set(m["files"]) == {"decisions.parquet", "personas.parquet"}
    assert set(m["files"].values()) == {m["generation"]}
    good = frame(a)
    shutil.copy(b / "decisions.parquet", a / "decisions.parquet")  # decisions of another run's write
    r = runner.invoke(app, ["analyze", str(a), "-B", "200"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "decisions.parquet is not of the write manifest.json" \
        in r.stderr and "again: it rebuilds every file from the cache" in r.stderr, r.stderr
    # a writer killed mid-write leaves a temporary file; the next run removes it (an analysis' stays)
    (a / ".decisions.parquet.abcd1234.tmp").write_bytes(b"half")
    (a / ".cases.csv.abcd1234.tmp").write_bytes(b"half")
    again = louder.run(cfg(1), out=a, progress=False)
    assert again.manifest["model_calls"] == 0
    pd.testing.assert_frame_equal(frame(a), good)
    assert not (a / ".decisions.parquet.abcd1234.tmp").exists() and (a / ".cases.csv.abcd1234.tmp").exists()
    assert runner.invoke(app, ["analyze", str(a), "-B", "200"]).exit_code == 0
    # a table an earlier write left (the last run did not write it) is no part of this generation
    from louder.io import write_parquet

    write_parquet(frame(b, "personas"), a / "control.parquet", {runfolder.GENERATION_KEY: b"0123456789abcdef"})
    r = runner.invoke(app, ["analyze", str(a), "-B", "200"])
    assert r.exit_code == 2 and "control.parquet is left from an earlier write that no manifest records" in r.stderr


TERMINAL = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); sys.argv = ['louder', *sys.argv[1:]]; "
            "runpy.run_module('louder.cli', run_name='__main__')")


def _signal_masks(pid: int) -> str:
    """The process' blocked, ignored and caught signals (/proc/PID/status), for a failure's message."""
    try:
        lines = open(f"/proc/{pid}/status", encoding="ascii").read().splitlines()
    except OSError as e:
        return str(e)
    return ", ".join(ln for ln in lines if ln.startswith(("SigBlk", "SigIgn", "SigCgt")))


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path):
    gate = threading.Event()  # from its 11th request on the server holds its answers: the run cannot end first

    def behaviour(n, prompt, body):
        if n > 10:
            gate.wait(60)
        return None

    server = FakeOpenAIServer(behaviour=behaviour)
    server.start()
    out = tmp_path / "run"
    try:
        # As a terminal starts it: Ctrl-C at its default, unblocked. A child inherits an ignored or blocked
        # SIGINT from the process that starts it, and a test worker's may be either after other tests.
        p = subprocess.Popen([sys.executable, "-c", TERMINAL, *args(server, out, 20)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while cached_replies(out / "cache.sqlite") < 10 and p.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        masks = _signal_masks(p.pid)
        p.send_signal(signal.SIGINT)
        time.sleep(0.5)
        gate.set()  # the calls in flight answer; the interrupted run keeps what lands
        _, err = p.communicate(timeout=60)
        assert p.returncode == 130, (f"{err}\nchild's signal masks when interrupted: {masks}; cached "
                                     f"{cached_replies(out / 'cache.sqlite')}, requests {len(server.requests)}")
        line = next(ln for ln in err.splitlines() if ln.startswith("interrupted:"))
        kept = cached_replies(out / "cache.sqlite")
        assert f"interrupted: {kept} answers are kept in {out / 'cache.sqlite'}; resume with: louder run " in line
        assert "Traceback" not in err
        assert not (out / "decisions.parquet").exists() and runfolder.holder(out) is None
        n = len(server.requests)
        r = runner.invoke(app, args(server, out, 20))  # the same command resumes
        assert r.exit_code == 0 and f"model_calls: {120 - kept}" in r.output, r.output
        assert len(server.requests) == n + 120 - kept
    finally:
        server.stop()


@pytest.mark.parametrize("after, status, k", [(10, 401, 20), (10, 400, 5)])
def test_the_circuit_breaker_stops_a_run_whose_key_dies_and_the_rerun_completes(tmp_path, after, status, k):
    """From its 11th request on the server refuses the key (401: the run stops at once) or rejects the
    request (400: it stops after K = stop_after_errors in a row); the rerun against a healthy server
    completes with every answer, as an uninterrupted run would."""
    broken = {"on": True}
    jitter = __import__("random").Random(0)

    def behaviour(n, prompt, body):
        time.sleep(jitter.random() * 0.02)  # answers land out of order: a success may follow a failure
        if broken["on"] and n > after:
            return status, {"error": {"message": f"failure {status}", "type": "invalid_request_error"}}, {}
        return None

    server = FakeOpenAIServer(behaviour=behaviour)
    server.start()
    config = tmp_path / "c.yaml"
    config.write_text(f"stop_after_errors: {k}\n")
    out = tmp_path / "run"
    try:
        r = runner.invoke(app, ["run", str(config)] + args(server, out, 20)[1:])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        err = r.stderr.strip()
        assert len(err.splitlines()) == 1 and err.startswith("error: stopped:") and f"http_{status}" in err, err
        assert "run the same command again to resume" in err
        assert after < len(server.requests) <= after + k + 10
        with closing(sqlite3.connect(out / "cache.sqlite")) as db:  # the failures are not kept: the rerun asks
            assert db.execute("SELECT COUNT(*) FROM replies WHERE is_error = 1").fetchone()[0] == 0
        broken["on"] = False
        r = runner.invoke(app, ["run", str(config)] + args(server, out, 20)[1:])
        assert r.exit_code == 0, r.output
        d = frame(out)
        assert len(d) == 60 and (d["status"] == "valid").all()
        reference = louder.run(None, out=tmp_path / "ref", progress=False, models=[f"openai:fake@{server.url}"],
                               agents=20, scenarios=["emergency_response"], groups=["gender_identity"])
        pd.testing.assert_frame_equal(d.drop(columns=["latency_s", "attempts"]),
                                      reference.decisions.drop(columns=["run_id", "latency_s", "attempts"]))
    finally:
        server.stop()


def test_analyze_during_a_write_says_who_is_writing(tmp_path):
    cfg = {"models": ["fake:seed=1"], "simulation": {"scenarios": ["emergency_response"],
                                                   "groups": ["gender_identity"], "agents": 2}}
    louder.run(cfg, out=tmp_path / "a", progress=False)
    louder.run({**cfg, "models": ["fake:seed=2"]}, out=tmp_path / "b", progress=False)
    assert runner.invoke(app, ["analyze", str(tmp_path / "a"), "-B", "200"]).exit_code == 0  # one write: fine
    with runfolder.hold(tmp_path / "a", "louder run --out a"):  # a run has written its decisions, not its manifest
        shutil.copy(tmp_path / "b" / "decisions.parquet", tmp_path / "a" / "decisions.parquet")
        done = {}
        t = threading.Thread(target=lambda: done.update(r=runner.invoke(app, ["analyze", str(tmp_path / "a")])))
        t.start()
        t.join(60)
    err = done["r"].stderr.strip()
    assert done["r"].exit_code == 2 and len(err.splitlines()) == 1, err
    assert f"is being written by pid {os.getpid()}" in err and "louder run --out a" in err
