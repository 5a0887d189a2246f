"""False-positive rate of agent-level vs cluster bootstrap under a no-bias fake in archetype mode.

Two attributes with the same true rate 0.5. Each attribute has ``cells`` archetypes × K replicates;
each archetype × replicate call returns p ~ 0.5 + N(0, sd) (clipped), independent of the attribute —
the spread a real model's persona/replicate randomness gives. Every agent of that cluster draws
Bernoulli(p). A false positive: the 95 % interval of r_a − r_b excludes 0.

    python benchmarks/network_null.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from louder.analysis.stats.network import gap_interval


def null_rows(seed: int, cells: int = 20, replicates: int = 5, agents_per_cluster: int = 100,
              sd: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for attribute in ("a", "b"):
        p = np.clip(0.5 + rng.normal(0, sd, cells * replicates), 0, 1)
        x = rng.random((cells * replicates, agents_per_cluster)) < p[:, None]
        cluster = np.repeat([f"{attribute}{c}" for c in range(cells * replicates)], agents_per_cluster)
        frames.append(pd.DataFrame({"attribute": attribute, "cluster": cluster, "target": x.ravel(),
                                    "status": "valid"}))
    rows = pd.concat(frames, ignore_index=True)
    rows["node"] = np.arange(len(rows))
    return rows


def false_positive_rate(seeds: int, cluster: str | None, B: int = 400, **kw) -> float:
    hits = 0
    for s in range(seeds):
        _, lo, hi = gap_interval(null_rows(s, **kw), "attribute", "a", "b", cluster=cluster, B=B, seed=s)
        hits += lo > 0 or hi < 0
    return hits / seeds


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    args = ap.parse_args()
    for name, cluster in (("cluster (archetype × replicate)", "cluster"), ("agent-level", None)):
        t = time.perf_counter()
        fp = false_positive_rate(args.seeds, cluster)
        print(f"{name}: false-positive rate {fp:.3f} over {args.seeds} seeds ({time.perf_counter() - t:.1f} s)")
