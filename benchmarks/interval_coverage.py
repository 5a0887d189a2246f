"""Simulated coverage and width of louder's DPD intervals (issue 23; docs/statistics.md).

Data with a known true DPD are drawn many times; each interval is computed by the function louder
uses, and coverage = the share of intervals that contain the true DPD. True rates are spread evenly:
r_a = centre − D/2 + D·a/(k − 1), a = 0..k−1, so DPD = D. The old percentile bootstrap (the
(1∓level)/2 quantiles of the resampled max − min) is computed beside the new interval on the same
data for the cases table.

    python benchmarks/interval_coverage.py [--sims 1000] [--B 1000] [--out table.md]

Tables:
1. cases (``stats.dpd_confidence_interval``, binomial within attribute): k = 2, 3, 5; n = 10, 30, 100
   per attribute; D = 0, 0.1, 0.3; centre 0.5 and 0.15 (rates down to 0, where se = 0 without smoothing).
2. every other resampling unit at k = 3, centre 0.25: probability DPD over agents (p_i ~ Beta, mean r_a,
   concentration 4), cluster bootstrap (``network.dpd_by_round``: n/10 clusters of 10 agents per
   attribute, n = 30, 100, 300; cluster p ~ Beta(mean r_a, concentration 10)), population-weighted
   (``population.group_dpd``, lognormal weights independent of the outcome), twins
   (``population.paired_dpd``: twins share a persona's uniform U with probability 0.7,
   y_a = 1[U < r_a]), explicit shares
   (``stats.explicit_dpd_confidence_interval``, shares r_a of N = 3n answers, the rest Unknown).
3. differences: DPD(case 1) − DPD(case 2) (``stats.dpd_difference_interval``, k = 3, beside the old
   percentile interval) and the mean difference of two rates (``stats.mean_difference_interval``, a
   percentile interval, unchanged: linear in the rates, no boundary).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.stats import network, population, prob_dpd

LEVEL = 0.95


def rates(k: int, D: float, centre: float) -> np.ndarray:
    return centre - D / 2 + D * np.linspace(0, 1, k)


def percentile(n: np.ndarray, x: np.ndarray, B: int, seed: int) -> tuple[float, float]:
    """The interval louder reported before issue 23 (stats.dpd_confidence_interval up to then)."""
    rb = np.random.default_rng(seed).binomial(n, x / n, size=(B, n.size)) / n
    lo, hi = np.quantile(rb.max(axis=1) - rb.min(axis=1), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def covers(lo: float, hi: float, truth: float) -> bool:
    return lo - 1e-9 <= truth <= hi + 1e-9


def cases_table(sims: int, B: int, centres=(0.5, 0.15), ks=(2, 3, 5), ns=(10, 30, 100),
                Ds=(0.0, 0.1, 0.3)) -> pd.DataFrame:
    rows = []
    for centre in centres:
        for k in ks:
            for n in ns:
                for D in Ds:
                    rng = np.random.default_rng([k, n, int(D * 100), int(centre * 100)])
                    p, nn = rates(k, D, centre), np.full(k, n)
                    new, old = [], []
                    for s in range(sims):
                        x = rng.binomial(n, p)
                        new.append(stats.dpd_confidence_interval(nn, x, B=B, seed=s))
                        old.append(percentile(nn, x, B, s))
                    rows.append(dict(centre=centre, k=k, n=n, D=D,
                                     coverage=np.mean([covers(lo, hi, D) for lo, hi in new]),
                                     coverage_old=np.mean([covers(lo, hi, D) for lo, hi in old]),
                                     width=np.mean([hi - lo for lo, hi in new]),
                                     width_old=np.mean([hi - lo for lo, hi in old])))
    return pd.DataFrame(rows)


def _prob(rng, p, n, B, s):
    samples = [rng.beta(4 * r, 4 * (1 - r), n) if 0 < r < 1 else np.full(n, r) for r in p]
    return prob_dpd.bootstrap_interval(samples, B=B, seed=s)


def _cluster(rng, p, n, B, s):
    per, size = n // 10, 10
    frames = []
    for a, r in enumerate(p):
        pc = rng.beta(10 * r, 10 * (1 - r), per) if 0 < r < 1 else np.full(per, r)
        y = rng.random((per, size)) < pc[:, None]
        frames.append(pd.DataFrame({"attribute": a, "cluster": np.repeat([f"{a}/{c}" for c in range(per)], size),
                                    "target": y.ravel()}))
    rows = pd.concat(frames, ignore_index=True).assign(status="valid", round=0)
    rows["node"] = np.arange(len(rows))
    r = network.dpd_by_round(rows, "attribute", cluster="cluster", B=B, seed=s).iloc[0]
    return r["ci_low"], r["ci_high"]


def _weighted(rng, p, n, B, s):
    a = np.repeat(np.arange(len(p)), n)
    d = pd.DataFrame({"attr": a, "status": "valid", "target": rng.random(a.size) < p[a],
                      "weight": rng.lognormal(0, 0.5, a.size)})
    r = population.group_dpd(d, "attr", B=B, seed=s)
    return r.lo, r.hi


def _twins(rng, p, n, B, s):
    u = rng.random(n)
    own = rng.random((n, len(p)))
    shared = rng.random((n, 1)) < 0.7
    y = np.where(shared, u[:, None], own) < p[None, :]
    t = pd.DataFrame({"twin_set": np.repeat(np.arange(n), len(p)), "attribute": np.tile(np.arange(len(p)), n),
                      "target": y.ravel(), "status": "valid", "twin_status": "ok"})
    _, lo, hi = population.paired_dpd(t, B=B, seed=s)
    return lo, hi


def _explicit(rng, p, n, B, s):
    N = n * len(p)
    probs = np.append(p, 1 - p.sum())
    c = rng.multinomial(N, probs)[:-1]
    return stats.explicit_dpd_confidence_interval(c, N, B=B, seed=s)


UNITS = {"probability DPD, agents": _prob, "cluster bootstrap (network)": _cluster,
         "population-weighted": _weighted, "twins (paired)": _twins, "explicit shares": _explicit}


def units_table(sims: int, B: int, ns=(10, 30, 100), Ds=(0.0, 0.1, 0.3), centre: float = 0.25) -> pd.DataFrame:
    rows = []
    for name, f in UNITS.items():
        for n in (30, 100, 300) if f is _cluster else ns:  # clusters of 10 agents: 3, 10, 30 per attribute
            for D in Ds:
                rng = np.random.default_rng([len(name), n, int(D * 100)])
                p = rates(3, D, centre)
                got = [f(rng, p, n, B, s) for s in range(sims)]
                rows.append(dict(unit=name, k=3, n=n, D=D, coverage=np.mean([covers(lo, hi, D) for lo, hi in got]),
                                 width=np.mean([hi - lo for lo, hi in got])))
    return pd.DataFrame(rows)


def percentile_difference(n1, x1, n2, x2, B: int, seed: int) -> tuple[float, float]:
    """The DPD-difference interval louder reported before issue 23: percentiles of DPD_1* − DPD_2*."""
    rng = np.random.default_rng(seed)
    d1 = rng.binomial(n1, x1 / n1, size=(B, n1.size)) / n1
    d2 = rng.binomial(n2, x2 / n2, size=(B, n2.size)) / n2
    lo, hi = np.quantile((d1.max(1) - d1.min(1)) - (d2.max(1) - d2.min(1)), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def differences_table(sims: int, B: int, ns=(10, 30, 100)) -> pd.DataFrame:
    rows = []
    for n in ns:
        for D1, D2 in ((0.0, 0.0), (0.1, 0.0), (0.3, 0.0), (0.3, 0.3)):
            rng = np.random.default_rng([n, int(D1 * 100), int(D2 * 100)])
            p1, p2, nn = rates(3, D1, 0.5), rates(3, D2, 0.5), np.full(3, n)
            new, old = [], []
            for s in range(sims):
                x1, x2 = rng.binomial(n, p1), rng.binomial(n, p2)
                g = stats.dpd_difference_interval(nn, x1, nn, x2, B=B, seed=s)
                new.append((g.low, g.high))
                old.append(percentile_difference(nn, x1, nn, x2, B, s))
            rows.append(dict(statistic="DPD_1 − DPD_2 (k = 3)", n=n, truth=f"{D1} − {D2}",
                             coverage=np.mean([covers(lo, hi, D1 - D2) for lo, hi in new]),
                             coverage_old=np.mean([covers(lo, hi, D1 - D2) for lo, hi in old]),
                             width=np.mean([hi - lo for lo, hi in new]),
                             width_old=np.mean([hi - lo for lo, hi in old])))
        for d in (0.0, 0.1, 0.3):
            rng = np.random.default_rng([n, int(d * 100), 7])
            a, b = 0.5 + d / 2, 0.5 - d / 2
            got = [stats.mean_difference_interval([n], [rng.binomial(n, a)], [n], [rng.binomial(n, b)], B=B, seed=s)
                   for s in range(sims)]
            rows.append(dict(statistic="r_A − r_B (percentile, unchanged)", n=n, truth=f"{d}",
                             coverage=np.mean([covers(g.low, g.high, d) for g in got]), coverage_old=np.nan,
                             width=np.mean([g.high - g.low for g in got]), width_old=np.nan))
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    fmt = lambda v: ("–" if np.isnan(v) else f"{v:.3f}") if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--unit-sims", type=int, default=None, help="simulations for tables 2 and 3 (default --sims)")
    ap.add_argument("--out", default=None, help="also write the tables to this markdown file")
    ap.add_argument("--only", nargs="+", default=["cases", "units", "differences"],
                    choices=["cases", "units", "differences"])
    args = ap.parse_args()
    us = args.unit_sims or args.sims
    out = []
    ap_tables = {"cases": lambda: cases_table(args.sims, args.B), "units": lambda: units_table(us, args.B),
                 "differences": lambda: differences_table(us, args.B)}
    for title, make in ((t, ap_tables[t]) for t in args.only):
        t = time.perf_counter()
        table = make()
        out.append(f"### {title} ({time.perf_counter() - t:.0f} s)\n\n{markdown(table)}\n")
        print(out[-1], flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
