"""Time `louder analyze` on a synthetic 100,000-decision run with B = 10,000 bootstrap draws.

The run: 1 model × 3 conditions × 4 scenarios × 3 groups (36 cases, 14 attributes per scenario ×
condition) with 595 agents per attribute = 99,960 decisions, ~3 % of them invalid/refused/error,
rationales drawn from a small vocabulary so the rationale analysis has real work. ``score``: a
score-mode run — each valid agent has p_target ~ Beta(8 r_a, 8 (1 − r_a)) and chose the target
when a uniform draw fell below it — so the probability DPD (bootstrap and permutation test) runs too.
Usage: python benchmarks/analyze_100k.py [--bootstrap 10000] [--score]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from louder.analysis import analyze
from louder.scenarios import load_group, load_scenario
from louder.types import DECISION_COLUMNS

WORDS = ("safety family community knowledge environment adventure risk children stand up authority "
         "stability career dream immediate threat home neighbours respect duty explore").split()


def synthetic_run(out: Path, agents: int = 595, seed: int = 0, score: bool = False) -> int:
    rng = np.random.default_rng(seed)
    frames = []
    for condition in ("contextualized", "non_contextualized", "no_persona"):
        for sid in ("emergency_response", "authority_compliance", "negative_information_sharing",
                    "career_path_selection"):
            s = load_scenario(sid)
            other = next(label for label in s.labels if label != s.target)
            for gid in ("gender_identity", "race_ethnicity", "political_ideology"):
                for attribute in load_group(gid).attributes:
                    p = rng.uniform(0.1, 0.9)
                    p_target = rng.beta(8 * p, 8 * (1 - p), agents) if score else np.full(agents, np.nan)
                    target = rng.random(agents) < (p_target if score else p)
                    status = rng.choice(["valid", "invalid", "refused", "error"], agents, p=[0.97, 0.015, 0.01, 0.005])
                    valid = status == "valid"
                    words = rng.choice(WORDS, size=(agents, 12))
                    frames.append(pd.DataFrame({
                        "run_id": "bench", "model": "synthetic", "condition": condition, "scenario": sid,
                        "group": gid, "attribute": attribute, "agent_id": np.arange(agents), "replicate": np.arange(agents),
                        "name": "A", "persona": "p",
                        "decision": np.where(valid, np.where(target, s.target, other), None),
                        "target": pd.array(np.where(valid, target, None), dtype="boolean"),
                        "p_target": np.where(valid, p_target, np.nan) if score else None,
                        "rationale": np.where(valid, [" ".join(w) for w in words], None),
                        "status": status, "raw_response": "{}", "attempts": 1, "latency_s": 0.1,
                        "input_tokens": 100, "output_tokens": 30, "choice_mass": None,
                        "thinking": None, "reasoning_tokens": None, "reasoning": "default", "intervention": "none",
                        "choice_order": "|".join(s.labels), "wording": "as_written", "signal": "stated"}))
    df = pd.concat(frames, ignore_index=True)[DECISION_COLUMNS]
    df.to_parquet(out / "decisions.parquet", index=False)
    return len(df)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", type=int, default=10_000)
    ap.add_argument("--score", action="store_true", help="score mode: a p_target per agent")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        n = synthetic_run(Path(tmp), score=args.score)
        t0 = time.perf_counter()
        a = analyze(tmp, bootstrap=args.bootstrap)
        secs = time.perf_counter() - t0
    print(f"analyze: {n} decisions, {len(a.tables['cases'])} cases, B={args.bootstrap}: {secs:.1f} s")


if __name__ == "__main__":
    main()
