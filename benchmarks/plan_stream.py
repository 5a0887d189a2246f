"""P9 (issue 36): what a run costs before its first model call, at a million agents.

    python benchmarks/plan_stream.py AGENTS [OUT_DIR]

runs ``louder run`` (the Python API) on one case of ``gender_identity`` (3 attributes) with
``ceil(AGENTS / 3)`` agents per attribute against a backend that stops the process at its first call
and prints one JSON line: seconds from ``louder.run`` to that call (louder's lazy imports included)
and the process's peak memory then. ``measure`` runs it in fresh processes for a million agents and
for one, whose difference is the plan's own share (the imports and the fixed setup cost the same).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MILLION = 1_000_000


def _first_call(agents: int, out: str) -> None:
    import louder
    from louder.llm.fake import FakeModel
    from louder.llm.registry import BackendInfo, register

    start = time.perf_counter()

    class FirstCall(FakeModel):
        def generate(self, request):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
            print(json.dumps({"agents": 3 * -(-agents // 3), "seconds": time.perf_counter() - start,
                              "peak_mb": peak}), flush=True)
            os._exit(0)

    register(BackendInfo("firstcall", lambda model, url, cfg: FirstCall(model), forms=("firstcall",), local=True,
                         model_optional=True))
    louder.run({"models": ["firstcall"], "simulation": {"scenarios": ["emergency_response"],
                                                        "groups": ["gender_identity"], "agents": -(-agents // 3)}},
               out=out, progress=False)
    raise SystemExit("the run ended without calling the model")


def one(agents: int) -> dict:
    """``_first_call`` in a fresh process (nothing imported or cached before)."""
    import louder

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(louder.__file__).parents[1]),
                                                                     os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, __file__, str(agents), str(Path(tmp) / "run")], capture_output=True,
                             text=True, env=env, timeout=1800)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"first-call probe failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(agents: int = MILLION, repeats: int = 2) -> dict:
    """The fastest of ``repeats`` fresh processes each, for ``agents`` and for one agent per attribute."""
    big = min((one(agents) for _ in range(repeats)), key=lambda r: r["seconds"])
    small = min((one(3) for _ in range(repeats)), key=lambda r: r["seconds"])
    return {"agents": big["agents"], "seconds": big["seconds"], "peak_mb": big["peak_mb"],
            "baseline_s": small["seconds"], "baseline_mb": small["peak_mb"],
            "extra_s": big["seconds"] - small["seconds"], "extra_mb": big["peak_mb"] - small["peak_mb"]}


if __name__ == "__main__":
    _first_call(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp())
