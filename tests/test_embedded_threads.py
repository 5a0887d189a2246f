"""The embedded model on shared cores (issue 23.7): its llama.cpp threads sleep while they wait
instead of spinning, and a run does not assume every core is its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from louder.llm import embedded

# Evaluate a short prompt on 2 threads, then wait 20 ms, 30 times: the process CPU time spent in the
# waits is what spinning OpenMP threads burn (the main thread only sleeps). In a fresh process, so
# the OpenMP runtime is loaded by louder, as in a run, whatever this test process loaded before.
IDLE = """
import json, resource, time
from louder.llm.embedded import EmbeddedModel
llm = EmbeddedModel(n_threads=2)._model()
tokens = llm.tokenize(b"The river rose overnight and the", add_bos=True)
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
burnt = 0.0
for _ in range(30):
    llm.reset()
    llm.eval(tokens)
    before = cpu()
    time.sleep(0.02)
    burnt += cpu() - before
print(json.dumps({"burnt_s": burnt, "n_threads_batch": llm.n_threads_batch}))
"""


@pytest.mark.slow
def test_waiting_llama_threads_burn_no_cpu():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    r = subprocess.run([sys.executable, "-c", IDLE], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # Spinning (libgomp's default wait policy) burnt ~0.2 s here: ~7 ms after each evaluation.
    assert out["burnt_s"] < 0.05, out
    assert out["n_threads_batch"] == 2  # prompt evaluation uses the threads asked for, not every core


def test_default_threads_leave_cores_to_others(monkeypatch):
    for cpus, want in ((1, 1), (2, 1), (4, 2), (16, 8), (64, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)), raising=False)
        assert embedded.default_threads() == want
    for cpus, want in ((1, 1), (2, 2), (4, 4), (16, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)), raising=False)
        assert embedded.default_batch_threads() == want
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    default = embedded.EmbeddedModel(n_threads=None)
    assert (default.n_threads, default.n_threads_batch) == (1, 2)  # decode on 1, prompts on both
    given = embedded.EmbeddedModel(n_threads=3)
    assert (given.n_threads, given.n_threads_batch) == (3, 3)  # a number given is the limit for both


def test_openmp_threads_wait_passively_unless_told_otherwise():
    r = subprocess.run([sys.executable, "-c", "import os, louder.llm.embedded; print(os.environ['OMP_WAIT_POLICY'])"],
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"})
    assert r.stdout.strip() == "PASSIVE", r.stderr
    r = subprocess.run([sys.executable, "-c", "import os, louder.llm.embedded; print(os.environ['OMP_WAIT_POLICY'])"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_WAIT_POLICY": "ACTIVE"})
    assert r.stdout.strip() == "ACTIVE", r.stderr
