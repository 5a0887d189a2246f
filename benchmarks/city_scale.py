"""City-scale archetype runs (issue 49): the README's examples/archetype-1m.yaml on the fake model,
``louder run`` then ``louder analyze -B 1000``, each cold in a fresh process, with its wall time and peak
RSS (the process's own ``ru_maxrss``, as ``/usr/bin/time -v`` reports it); and the same design on Ray
(``executor: ray``, the agents sharded by population cell), with each worker's peak from the manifest and
the dry run's estimate beside what was measured.

    python benchmarks/city_scale.py --agents 1000000                 # run + analyze, one process each
    python benchmarks/city_scale.py --agents 10000000 --ray 2         # 2 Ray workers on a local cluster
    python benchmarks/city_scale.py --agents 100000 --against TREE    # every table against TREE's code

``--against TREE``: the same run + analysis made by the louder of another source tree (e.g. the code before
issue 49: ``git archive BASE | tar -x -C TREE``), and every table of the two run folders compared value
for value (the issue's "every table equal to today's on a 10^5-agent version").

benchmarks/run.py's P13 and P14 lines are these (docs/benchmarks.md).
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


def louder(*args: str, cwd: Path, root: Path = ROOT) -> tuple[float, float, str]:
    """``louder ARGS`` in a fresh process, ``root``'s louder: (wall seconds, peak MB, its output)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
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


def run_and_analyze(tmp: Path, agents: int, bootstrap: int = 1000, small: bool = False, root: Path = ROOT,
                    name: str = "run") -> dict:
    """``louder run`` then ``louder analyze -B`` of the example at ``agents``, cold (``root``'s louder)."""
    tmp.mkdir(parents=True, exist_ok=True)
    cfg = config(tmp, agents, small=small)
    out = tmp / f"{name}-{agents}"
    run_s, run_mb, _ = louder("run", str(cfg), "--out", str(out), cwd=tmp, root=root)
    an_s, an_mb, _ = louder("analyze", str(out), "-B", str(bootstrap), cwd=tmp, root=root)
    m = json.loads((out / "manifest.json").read_text("utf-8"))
    est = estimate(cfg, tmp)
    return dict(agents=agents, run_s=run_s, run_peak_mb=run_mb, analyze_s=an_s, analyze_peak_mb=an_mb,
                seconds=run_s + an_s, calls=m["model_calls"], rows=m["rows"]["decisions"],
                run_estimate_mb=est["run_mb"], analyze_estimate_mb=est["analyze_mb"],
                run_bytes_per_agent=run_mb * 2 ** 20 / agents)


def differences(a: Path, b: Path) -> list[str]:
    """Every CSV and Parquet table of run folder ``a`` against ``b``'s, value for value (``run_id`` aside:
    a run's own id; ``network.parquet`` as a set of edges, whose order issue 49 changed): one line per
    table that differs or is in one folder only."""
    import pandas as pd

    names = sorted({p.relative_to(d).as_posix() for d in (a, b) for p in d.rglob("*")
                    if p.suffix in (".csv", ".parquet")})
    out = []
    for n in names:
        if not (a / n).exists() or not (b / n).exists():
            out.append(f"{n}: in {'the first' if (a / n).exists() else 'the second'} folder only")
            continue
        read = pd.read_csv if n.endswith(".csv") else pd.read_parquet
        x, y = (read(d / n).drop(columns="run_id", errors="ignore") for d in (a, b))
        if n == "network.parquet":  # the edges as a set: issue 49 writes each node's neighbours in ascending
            x, y = (f.sort_values(list(f.columns), kind="stable", ignore_index=True) for f in (x, y))  # order
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=True, check_dtype=False, check_categorical=False)
        except AssertionError as e:
            out.append(f"{n}: {' '.join(str(e).split())[:300]}")
    return out


def against(tmp: Path, agents: int, tree: Path, bootstrap: int = 1000) -> dict:
    """The run + analysis by this tree's louder and by ``tree``'s, every table compared."""
    mine = run_and_analyze(tmp, agents, bootstrap)
    theirs = run_and_analyze(tmp, agents, bootstrap, root=tree.resolve(), name="against")
    tables = sum(1 for p in (tmp / f"run-{agents}").rglob("*") if p.suffix in (".csv", ".parquet"))
    return dict(this=mine, against=theirs, tables=tables,
                differences=differences(tmp / f"against-{agents}", tmp / f"run-{agents}"))


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
    ap.add_argument("--against", type=Path, metavar="TREE", help="also run TREE's louder and compare every table")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as t:
        where = args.dir or Path(t)
        r = (on_ray(where, args.agents, args.ray) if args.ray else
             against(where, args.agents, args.against, args.bootstrap) if args.against else
             run_and_analyze(where, args.agents, args.bootstrap))
    print(json.dumps(r, indent=1))
    return 1 if r.get("differences") else 0


if __name__ == "__main__":
    sys.exit(main())
