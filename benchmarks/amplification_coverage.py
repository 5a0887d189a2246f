"""Simulated coverage of the amplification interval (issue 21; docs/voices.md).

Agents' decisions x_a ~ Binomial(n, r_a) and observed counts y_a ~ Binomial(m, q_a) are drawn many
times for two attributes; ``voices.amplification`` gives θ̂ = (x_h/n − x_l/n) / (y_h/m − y_l/m) and its
Fieller interval with a bootstrap-t critical value. Coverage = the share of the non-empty intervals
that contain the true θ = (r_h − r_l) / (q_h − q_l); "empty" counts the runs where the observed gap's
Newcombe interval contained 0 (no interval, by design). Beside it, on the same data: the plain
percentile bootstrap of the ratio (the 2.5 / 97.5 % quantiles of a*/o*), and how often that interval
excludes its own estimate.

    python benchmarks/amplification_coverage.py [--sims 1000] [--B 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

from louder.analysis.stats.voices import amplification

SETTINGS = [  # (r_h, r_l), agents per attribute n, observed people per attribute m; q = (0.55, 0.45)
    ((0.5, 0.5), 120, 2000), ((0.6, 0.4), 120, 2000), ((0.6, 0.4), 30, 2000), ((0.6, 0.4), 120, 300),
    ((0.5, 0.5), 30, 300), ((0.7, 0.3), 50, 400)]
Q = (0.55, 0.45)


def simulate(rates, n: int, m: int, sims: int, B: int) -> dict:
    rng = np.random.default_rng(5)
    theta = (rates[0] - rates[1]) / (Q[0] - Q[1])
    hits = empty = pct_hits = pct_excludes = 0
    widths = []
    for i in range(sims):
        x_h, x_l = rng.binomial(n, rates[0]), rng.binomial(n, rates[1])
        q_h, q_l = rng.binomial(m, Q[0]) / m, rng.binomial(m, Q[1]) / m
        r = amplification(x_h, n, x_l, n, q_h, m, q_l, m, B=B, seed=i)
        if np.isnan(r.low):
            empty += 1
            continue
        hits += r.low <= theta <= r.high
        widths.append(r.high - r.low)
        g = np.random.default_rng(i)
        a = g.binomial(n, x_h / n, B) / n - g.binomial(n, x_l / n, B) / n
        o = g.binomial(m, q_h, B) / m - g.binomial(m, q_l, B) / m
        with np.errstate(divide="ignore", invalid="ignore"):
            lo, hi = np.nanquantile(a / o, [0.025, 0.975])
        pct_hits += lo <= theta <= hi
        pct_excludes += not lo <= r.estimate <= hi
    k = sims - empty
    return dict(theta=theta, coverage=hits / k, empty=empty, width=float(np.median(widths)),
                percentile=pct_hits / k, percentile_excludes=pct_excludes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--B", type=int, default=1000)
    args = ap.parse_args()
    print("| r_h, r_l | n | m | θ | coverage (Fieller, bootstrap-t c) | empty | median width | "
          "percentile coverage | percentile excludes θ̂ |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rates, n, m in SETTINGS:
        s = simulate(rates, n, m, args.sims, args.B)
        print(f"| {rates[0]}, {rates[1]} | {n} | {m} | {s['theta']:.0f} | {s['coverage']:.3f} | {s['empty']} | "
              f"{s['width']:.2f} | {s['percentile']:.3f} | {s['percentile_excludes']} |")


if __name__ == "__main__":
    main()
