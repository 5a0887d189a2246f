"""Simulated calibration of grounded agents (issue 44; docs/statistics.md, "Grounded agents" and "Fidelity
to a human study"): the designs of tests/test_grounded.py and tests/test_fidelity.py (the synthetic study
of tests/grounded_study.py, agents as the fake model makes them), each repeated ``--sims`` times with fresh
seeds.

- anchoring: PPI coverage of the true attribute rates and DPD, PPI ÷ humans-only width, worth
  (effective n ÷ n), for agents that read the profile, ignore it, read it the wrong way round, or read it
  but are far too eager (200 respondents and 2,000 unlabelled profiles per attribute);
- fidelity: the share of each verdict for agents that flatten, double, reproduce (600 per attribute) or
  mirror the people's gap, and with no gap among people and agents (200 per attribute).

    python benchmarks/grounded_coverage.py [--sims 200] [--B 500] [--only anchoring,fidelity]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))  # the tests' simulators, one definition each

import grounded_study as G  # noqa: E402

from louder.analysis.stats.anchoring import ppi_table  # noqa: E402
from louder.analysis.stats.fidelity import case_fidelity  # noqa: E402


def share(xs) -> str:
    xs = list(xs)
    return f"{np.mean(xs):.3f} ({sum(xs)}/{len(xs)})"


def anchoring(S: int, B: int) -> list[tuple[str, str]]:
    rows = []
    dpd = max(G.TRUTH.values()) - min(G.TRUTH.values())
    for model in ("reads", "ignores", "wrong", "eager"):
        tables = [ppi_table(*G.ppi_frames(10_000 + s, 200, 2000, model), B=B, seed=s) for s in range(S)]
        t = pd.concat(tables, ignore_index=True)
        truth = t["attribute"].map(G.TRUTH)
        covered = ((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"])).tolist()
        cases = t.drop_duplicates(["dpd_ppi", "dpd_ci_low_ppi"])
        dpd_cov = [x["dpd_ci_low_ppi"].iloc[0] <= dpd <= x["dpd_ci_high_ppi"].iloc[0] for x in tables]
        rows += [(f"anchoring, {model}: PPI interval covers the attribute's true rate", share(covered)),
                 (f"anchoring, {model}: PPI DPD interval covers {dpd:.2f}", share(dpd_cov)),
                 (f"anchoring, {model}: PPI ÷ humans-only width, rates (mean)", f"{t['width_ratio'].mean():.3f}"),
                 (f"anchoring, {model}: PPI ÷ humans-only width, DPD (mean)", f"{cases['dpd_width_ratio'].mean():.3f}"),
                 (f"anchoring, {model}: worth, effective n ÷ n (mean)", f"{t['worth'].mean():.2f}")]
    return rows


FIDELITY = [("flat", 200, None, "flattened"), ("double", 200, None, "exaggerated"), ("reads", 600, None, "faithful"),
            ("reads", 200, None, "faithful"), ("mirror", 200, None, "reversed"),
            ("reads", 200, dict.fromkeys(G.SHARE, 0.55), "faithful or underpowered"),
            ("flat", 200, dict.fromkeys(G.SHARE, 0.55), "faithful or underpowered")]


def fidelity(S: int, B: int) -> list[tuple[str, str]]:
    rows = []
    for model, n, sh, want in FIDELITY:
        verdicts = [case_fidelity(G.fidelity_pairs(20_000 + s, n, model, sh), list(G.SHARE), B=B, seed=s)
                    ["verdict"].iloc[0] for s in range(S)]
        hits = [v in want.split(" or ") for v in verdicts]
        design = f"{model}, {n} per attribute" + (", no gap among people" if sh else "")
        counts = ", ".join(f"{v} {k}" for v, k in pd.Series(verdicts).value_counts().items())
        rows.append((f"fidelity, {design}: {want}", f"{share(hits)} — {counts}"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--B", type=int, default=500)
    ap.add_argument("--only", default="anchoring,fidelity")
    ns = ap.parse_args()
    t0 = time.time()
    rows = []
    for name in ns.only.split(","):
        rows += {"anchoring": anchoring, "fidelity": fidelity}[name](ns.sims, ns.B)
    print("| measure and design | share |\n|---|---|")
    for design, value in rows:
        print(f"| {design} | {value} |")
    print(f"\n({ns.sims} simulations, B = {ns.B}, {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
