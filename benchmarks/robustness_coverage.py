"""Simulated calibration of robustness.csv's pooled interval and heterogeneity test (issue 25;
docs/robustness.md).

Two attributes × ``n`` agents answer in each of W wordings (crossed, as in a run: every agent answers
in every wording). On the logit scale: base rate, an agent's own shift (SD ``agent``), a wording ×
attribute interaction with mean 0 and SD τ (so the population DPD is 0 unless an effect is planted),
and a planted attribute effect. For each setting the share of runs whose pooled interval
(``robustness.pooled_dpd``) excludes 0 and whose heterogeneity test (``robustness.heterogeneity_p``)
is below 0.05.

    python benchmarks/robustness_coverage.py [--sims 300] [--B 400] [--n 40]
"""

from __future__ import annotations

import argparse

import numpy as np

from louder.analysis import robustness as R

SETTINGS = [  # W, τ, agent SD, planted logit effect
    (1, 0, 0, 0), (3, 0, 0, 0), (3, 0, 1.0, 0), (3, 0.5, 0, 0), (3, 1.0, 0, 0), (5, 0.5, 0, 0), (8, 0.5, 0, 0),
    (3, 0, 0, 0.5), (3, 0, 0, 1.0), (5, 0, 0, 1.0), (3, 0.5, 0, 1.0)]


def draw(W: int, n: int, base: float, tau: float, agent_sd: float, seed: int, effect: float = 0.0):
    """Agents × wordings matrices (Y target, V valid), attribute and order stratum of one simulated case."""
    rng = np.random.default_rng(seed)
    k = 2
    inter = rng.normal(0, tau, size=(W, k))
    attr = np.repeat(np.arange(k), n)
    u = rng.normal(0, agent_sd, size=k * n)
    Y, V = np.zeros((k * n, W)), np.ones((k * n, W))
    for w in range(W):
        eta = np.log(base / (1 - base)) + inter[w, attr] + u + effect * (attr == 1)
        Y[:, w] = rng.random(k * n) < 1 / (1 + np.exp(-eta))
    return Y, V, attr, np.tile(np.arange(n) % 2, k)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--B", type=int, default=400)
    ap.add_argument("--n", type=int, default=40)
    a = ap.parse_args()
    print("| wordings W | τ | agent SD | planted logit effect | P(interval excludes 0) | P(p_het < 0.05) |")
    print("|---|---|---|---|---|---|")
    for W, tau, asd, eff in SETTINGS:
        lows = het = 0
        for s in range(a.sims):
            Y, V, attr, stratum = draw(W, a.n, 0.5, tau, asd, 1000 + s, effect=eff)
            lows += R.pooled_dpd(Y, V, attr, stratum, B=a.B, seed=s).low > 0
            if W > 1:
                x = np.array([[Y[attr == j, w].sum() for j in range(2)] for w in range(W)])
                n = np.array([[V[attr == j, w].sum() for j in range(2)] for w in range(W)])
                het += R.heterogeneity_p(x, n) < 0.05
        print(f"| {W} | {tau} | {asd} | {eff} | {lows / a.sims:.3f} | {'–' if W == 1 else f'{het / a.sims:.3f}'} |",
              flush=True)


if __name__ == "__main__":
    main()
