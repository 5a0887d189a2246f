"""E1 embedded contention: do two embedded-model runs side by side cost about twice one alone?

``python benchmarks/embedded_contention.py [--calls 6] [--threads N]`` runs N embedded calls in a
process of their own (the model loaded first, outside the timing), then two such processes at
once, and prints one line::

    E1 contention ratio=<pair wall / alone wall> ...

On an otherwise idle machine with C cores, the ideal ratio is 2 when one run keeps every core busy
(two runs each get half), and 1 when two runs fit side by side (each run's threads ≤ C / 2, louder's
default); spinning threads make it ≫ 2 (a thread that busy-waits for its sibling burns the core
the sibling needs). Each
worker also reports its process CPU time over the calls (``cpu/wall``: how many cores it kept
busy) and the CPU it burnt in one second of idling after its last call (``idle_cpu_s``: should
be ~0; spinning OpenMP threads show up here). On a machine busy with other work the ratio is
blurred (the run "alone" is not alone); the CPU seconds for the same calls (``cpu_s``) are not:
spinning shows as CPU time far above the work done. ``measure()`` returns the same as a dict, for
``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _requests(calls: int):
    from typing import Literal

    from pydantic import BaseModel

    from louder.llm.base import Request

    class Decision(BaseModel):
        decision: Literal["Evacuate", "Stay"]
        rationale: str

    system = ("You are Maria, 42, a nurse living near the river with two children. A flood warning was "
              "issued an hour ago for your district.")
    return [Request(messages=(("system", system), ("user", f"Agent {i}: do you evacuate now or stay? Answer in "
                                                              "JSON with your decision and a short rationale.")),
                    schema=Decision, temperature=0.7, max_tokens=80, seed=i) for i in range(calls)]


def worker(calls: int, n_threads: int | None) -> dict:
    """In this process: load the embedded model, make ``calls`` calls, then idle one second."""
    from louder.llm.embedded import EmbeddedModel

    model = EmbeddedModel(n_threads=n_threads)
    reqs = _requests(calls + 1)
    first = model.generate(reqs[0])  # loads the model and llguidance: not timed
    assert first.error is None, first.error
    c0, t0 = _cpu_s(), time.perf_counter()
    tokens = 0
    for r in reqs[1:]:
        reply = model.generate(r)
        assert reply.error is None, reply.error
        tokens += reply.output_tokens or 0
    wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    c1 = _cpu_s()
    time.sleep(1.0)
    idle = _cpu_s() - c1
    return {"wall_s": wall, "cpu_s": cpu, "idle_cpu_s": idle, "tokens": tokens, "n_threads": model.n_threads}


def _spawn(calls: int, n_threads: int | None, env: dict | None) -> subprocess.Popen:
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", "--calls", str(calls)]
    if n_threads:
        args += ["--threads", str(n_threads)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def _result(p: subprocess.Popen) -> dict:
    out, _ = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"embedded contention worker failed (exit {p.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def measure(calls: int = 6, n_threads: int | None = None, env: dict | None = None) -> dict:
    """One worker alone, then two at once (``env`` is added to the workers' environment).

    ratio = mean wall time of the two side-by-side workers ÷ the wall time of the one alone (the
    model loads are not timed). Goal: ≤ 2 (1–2 as the module docstring says); ≫ 2 is spinning.
    """
    alone = _result(_spawn(calls, n_threads, env))
    pair = [_spawn(calls, n_threads, env) for _ in range(2)]
    both = [_result(p) for p in pair]
    pair_wall = sum(b["wall_s"] for b in both) / 2
    return {"calls": calls, "n_threads": alone["n_threads"], "cores": len(os.sched_getaffinity(0)),
            "alone_wall_s": alone["wall_s"], "alone_cpu_s": alone["cpu_s"], "alone_idle_cpu_s": alone["idle_cpu_s"],
            "pair_wall_s": pair_wall, "pair_cpu_s": sum(b["cpu_s"] for b in both) / 2,
            "pair_idle_cpu_s": max(b["idle_cpu_s"] for b in both),
            "ratio": pair_wall / alone["wall_s"], "load_before": os.getloadavg()[0]}


def line(m: dict) -> str:
    return (f"E1 contention ratio={m['ratio']:.2f} alone_s={m['alone_wall_s']:.1f} pair_s={m['pair_wall_s']:.1f} "
            f"cpu_s alone={m['alone_cpu_s']:.1f} pair={m['pair_cpu_s']:.1f} "
            f"cpu/wall alone={m['alone_cpu_s'] / m['alone_wall_s']:.2f} pair={m['pair_cpu_s'] / m['pair_wall_s']:.2f} "
            f"idle_cpu_s={max(m['alone_idle_cpu_s'], m['pair_idle_cpu_s']):.3f} calls={m['calls']} "
            f"n_threads={m['n_threads']} cores={m['cores']} load={m['load_before']:.1f} (goal: ratio ≤ 2, not ≫ 2)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: louder's choice)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.calls, a.threads)))
        return
    print(line(measure(a.calls, a.threads)))


if __name__ == "__main__":
    main()
