"""City-scale archetype runs (issue 49): the README's examples/archetype-1m.yaml on the fake model,
``louder run`` then ``louder analyze -B 1000``, each cold in a fresh process, with its wall time and peak
RSS (the process's own ``ru_maxrss``, as ``/usr/bin/time -v`` reports it); and the same design on Ray
(``executor: ray``, the agents sharded by population cell), with each worker's peak from the manifest and
the dry run's estimate beside what was measured.

    python benchmarks/city_scale.py --agents 1000000                 # run + analyze, one process each
    python benchmarks/city_scale.py --agents 10000000 --ray 2         # 2 Ray workers on a local cluster

benchmarks/run.py's P12 and P13 lines are these (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "archetype-1m.yaml"

# runs `louder ARGS…` in this process and prints its peak RSS (KiB) last, whatever the exit
_WRAP = """import resource, sys
sys.argv = ["louder"] + sys.argv[1:]
try:
    from louder.cli import main
    main()
except SystemExit as e:
    code = e.code
else:
    code = 0
finally:
    print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def config(out: Path, agents: int, ray: int = 0, small: bool = False) -> Path:
    """The README's example on the fake model (its servers replaced), ``agents`` drawn; ``ray``: workers;
    ``small``: K = 1 and 2 buckets (a smoke run's few calls)."""
    text = EXAMPLE.read_text("utf-8")
    text = re.sub(r"models:\n  - spec: .*\n    client: http\n", 'models:\n  - spec: "fake:seed=1"\n', text)
    text = text.replace("agents: 1000000", f"agents: {agents}")
    if ray:
        text = text.replace("population:\n", f"executor: ray\npopulation:\n  shards: {ray}\n", 1)
    if small:
        text = text.replace("replicates: 5", "replicates: 1").replace("buckets: 8 ", "buckets: 2 ")
    path = out / f"archetype-{agents}.yaml"
    path.write_text(text, "utf-8")
    return path


def louder(*args: str, cwd: Path) -> tuple[float, float, str]:
    """``louder ARGS`` in a fresh process: (wall seconds, peak MB, its output)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               COLUMNS="200")
    env.setdefault("RAY_raylet_start_wait_time_s", "120")  # a loaded machine starts a raylet slowly
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _WRAP, *args], capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    peak = re.findall(r"PEAK_KB (\d+)", p.stderr)
    if p.returncode != 0 or not peak:
        raise RuntimeError(f"louder {' '.join(args)} failed ({p.returncode}): {(p.stderr or p.stdout)[-1500:]}")
    return wall, int(peak[-1]) / 1024, p.stdout + p.stderr


def estimate(cfg: Path, cwd: Path) -> dict:
    """The dry run's figures (archetype_size) for ``cfg``."""
    from louder.config import load_config
    from louder.simulation.archetype_run import shards_of
    from louder.simulation.archetype_size import size

    c = load_config(cfg)
    s = size(c, shards_of(c))
    return dict(run_mb=s.run_mb, worker_mb=s.worker_mb, analyze_mb=s.analyze_mb, rows=s.rows)


def run_and_analyze(tmp: Path, agents: int, bootstrap: int = 1000, small: bool = False) -> dict:
    """``louder run`` then ``louder analyze -B`` of the example at ``agents``, cold."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = config(tmp, agents, small=small)
    out = tmp / f"run-{agents}"
    run_s, run_mb, _ = louder("run", str(cfg), "--out", str(out), cwd=tmp)
    an_s, an_mb, _ = louder("analyze", str(out), "-B", str(bootstrap), cwd=tmp)
    m = json.loads((out / "manifest.json").read_text("utf-8"))
    est = estimate(cfg, tmp)
    return dict(agents=agents, run_s=run_s, run_peak_mb=run_mb, analyze_s=an_s, analyze_peak_mb=an_mb,
                seconds=run_s + an_s, calls=m["model_calls"], rows=m["rows"]["decisions"],
                run_estimate_mb=est["run_mb"], analyze_estimate_mb=est["analyze_mb"],
                run_bytes_per_agent=run_mb * 2 ** 20 / agents)


def on_ray(tmp: Path, agents: int, workers: int = 2, small: bool = False) -> dict:
    """``louder run`` of the example at ``agents`` on a local Ray cluster of ``workers``, cold: the driver's
    peak (this process) and each worker's (the manifest), against the dry run's estimates."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = config(tmp, agents, ray=workers, small=small)
    out = tmp / f"ray-{agents}"
    wall, driver_mb, _ = louder("run", str(cfg), "--out", str(out), cwd=tmp)
    m = json.loads((out / "manifest.json").read_text("utf-8"))
    peaks = [s["peak_mb"] for s in m["archetype"]["shards"]]
    est = estimate(cfg, tmp)
    worst = max(abs(est["worker_mb"] - max(peaks)) / max(peaks), abs(est["run_mb"] - driver_mb) / driver_mb)
    return dict(agents=agents, workers=workers, seconds=wall, driver_peak_mb=driver_mb, worker_peak_mb=max(peaks),
                worker_estimate_mb=est["worker_mb"], driver_estimate_mb=est["run_mb"], estimate_error=worst,
                rows=m["rows"]["decisions"], calls=m["model_calls"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=1_000_000)
    ap.add_argument("--ray", type=int, default=0, help="Ray workers (0: run and analyze in one process each)")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--dir", type=Path, help="keep the run folders here (default: a temporary folder)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as t:
        where = args.dir or Path(t)
        r = on_ray(where, args.agents, args.ray) if args.ray else run_and_analyze(where, args.agents, args.bootstrap)
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
