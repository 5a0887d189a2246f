"""Time a cold `louder compare` of two synthetic run folders of 99,960 decisions each (B = 10,000).

Each folder is benchmarks/analyze_100k.py's synthetic run (36 cases, 14 attributes per scenario ×
condition, ~3 % of the answers invalid, refused or an error), of another model (its own seed), with
the manifest a run of that design writes (the design check reads it). The timed part, in a fresh
process after importing louder (as P6; the imports are timed beside): assembling the two folders
(design check, the per-case views), every statistic of the comparison, and writing its CSVs,
comparison.json and HTML report.
Usage: python benchmarks/compare_100k.py [--bootstrap 10000] [--agents 595]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from analyze_100k import synthetic_run

CONDITIONS = ["contextualized", "non_contextualized", "no_persona"]
SCENARIOS = ["emergency_response", "authority_compliance", "negative_information_sharing", "career_path_selection"]
GROUPS = ["gender_identity", "race_ethnicity", "political_ideology"]

_COMPARE = """
import json, sys, time
t0 = time.perf_counter()
import louder
import louder.compare_runs  # the package's imports, as P6 leaves them out
imports = time.perf_counter() - t0
start, cpu = time.perf_counter(), time.process_time()
c = louder.compare(*sys.argv[1:3], bootstrap=int(sys.argv[4]))
c.write(sys.argv[3], fail_if="worse")
print(json.dumps(dict(seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu, import_s=imports,
                      rows=len(c.table("model_pairs")))))
"""


def synthetic_folder(out: Path, model: str, seed: int, agents: int = 595) -> int:
    """A synthetic run of ``model`` in ``out``, with its manifest."""
    from louder.config import build_config
    from louder.manifest import design_hashes
    from louder.prompts import Prompts

    out.mkdir(parents=True, exist_ok=True)
    n = synthetic_run(out, agents=agents, seed=seed)
    d = pd.read_parquet(out / "decisions.parquet")
    d.assign(model=model).to_parquet(out / "decisions.parquet", index=False)
    cfg = build_config(dict(models=[model], simulation=dict(scenarios=SCENARIOS, groups=GROUPS, conditions=CONDITIONS,
                                                            agents=agents)))
    manifest = {"run_id": out.name, "louder_kind": "simulation", "config": cfg.model_dump(mode="json"),
                "prompt_template_sha256": Prompts().hashes(), "design_sha256": design_hashes(cfg)}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return n


def compare_in_fresh_process(a: Path, b: Path, out: Path, bootstrap: int = 10_000) -> dict:
    import louder

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(louder.__file__).parents[1]),
                                                                     os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, "-c", _COMPARE, f"base={a}", f"new={b}", str(out), str(bootstrap)],
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", type=int, default=10_000)
    ap.add_argument("--agents", type=int, default=595)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        n = [synthetic_folder(Path(tmp) / name, f"openai:synthetic-{name}", seed, args.agents)
             for name, seed in (("a", 0), ("b", 1))]
        r = compare_in_fresh_process(Path(tmp) / "a", Path(tmp) / "b", Path(tmp) / "out", args.bootstrap)
    print(f"compare: 2 × {n[0]} decisions, {r['rows']} pair rows, B={args.bootstrap}: {r['seconds']:.1f} s "
          f"(cpu {r['cpu_s']:.1f} s; imports before it {r['import_s']:.1f} s)")


if __name__ == "__main__":
    main()
