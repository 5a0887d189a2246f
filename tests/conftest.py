"""Shared fixtures: a deterministic OpenAI-compatible test server on 127.0.0.1 and small configs."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# pytest-xdist's workers inherit COLUMNS=80 and LINES=24 from execnet: the console tests expect a terminal
# without them (louder's console then prints 160 wide), as in a run of the suite on one process
if os.environ.get("PYTEST_XDIST_WORKER"):
    for var in ("COLUMNS", "LINES"):
        os.environ.pop(var, None)

# One BLAS thread per process: the suite's workers already keep every core busy (``-n auto``: one more than
# the cores, below), so OpenBLAS's own threads (one per core in numpy's and in scipy's copy) only contend with
# the other workers and spin while they wait for work. Paired on the analysis-heavy files: 5-11 % less CPU.
# Read when OpenBLAS loads, so set before anything imports numpy (no plugin does); inherited by the suite's
# subprocesses.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from fake_openai import FakeOpenAIServer  # noqa: E402

# The collector's passes over the older generations walk every object a worker holds (the module fixtures'
# runs, the imported libraries): at Python's thresholds (700, 10, 10) they took ~3.5 % of the CPU of the
# analysis-heavy files, while reference counting frees nearly everything those passes would. Young
# objects are still collected; the old generations next to never.
gc.set_threshold(50_000, 50, 1_000)


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (``make test``) starts one worker more than the cores this process may use. A worker is
    often waiting, not computing: on a subprocess (a ``louder`` CLI, Ray, Chromium), on the embedded model's
    one-thread server, on the fake server's deliberate delays (kill-and-resume). With one worker per core
    a waiting worker left its core idle (the suite kept 2 cores ~92 % busy); the extra one fills those
    gaps (~96 %). Measured on 2 cores: 10 min 45 s -> 10 min 12 s, the same CPU time (1,183 and 1,176 s)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test``: ``-n auto --dist loadfile``) the tests marked slow are handed out
    first, so that the last minutes are not one long test on one core while the other waits: a file's
    tests go to one worker together (so a module's fixture is built once), the files in the order of their
    first test here.

    (``--dist loadgroup`` with ``xdist_group`` markers does nothing with pytest 9 and pytest-xdist 3.8:
    xdist writes the group into ``item._nodeid``, which pytest 9 no longer reads, so the tests sharing a
    module's fixture were spread over the workers and the golden runs were built twice.)"""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def fake_server():
    server = FakeOpenAIServer()
    server.start()
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server():
    """A real ``llama_cpp.server`` serving the embedded model on 127.0.0.1."""
    from louder.llm.embedded import smollm2_path

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--model_alias", "smollm2", "--logits_all", "true"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OPENAI_API_KEY": ""},
    )
    url = f"http://127.0.0.1:{port}/v1"
    import httpx

    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama_cpp.server did not start within 120 s")
    yield url
    proc.terminate()
    proc.wait(10)
