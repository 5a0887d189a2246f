"""Power of the parity-bootstrap DPD test, by seeded simulation (issue 14).

The test is the one ``louder analyze`` runs (``stats.parity_bootstrap``): with pooled rate
p̂ = Σ x_a / Σ n_a, the threshold is the (1 − α) quantile of DPD under x_a ~ Binomial(n_a, p̂), and a
case is significant when its DPD exceeds it. Power at true rates r_a is

    power = P_r( DPD(x/n) > q_{1−α}(p̂(x)) ),   x_a ~ Binomial(n_a, r_a),

estimated from ``sims`` simulated cases. The threshold depends on the data only through the pooled
count X = Σ x_a, so it is computed once per distinct X (``B`` parity draws each) — that is what makes
a search over n take seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNDERPOWERED = 0.3  # minimum detectable DPD above this: the case could not have seen a large bias


@dataclass(frozen=True)
class Plan:
    agents_per_attribute: int | None  # None: not reached within max_n
    power: float                      # simulated power at that n
    rates: tuple[float, ...]


def spread_rates(effect: float, k: int, base: float, spread: str = "even") -> np.ndarray:
    """k true rates around ``base`` whose max − min is ``effect``.

    even: r_a = base + effect·(a/(k−1) − ½), a = 0..k−1; one: one attribute at base + effect/2, the
    rest at base − effect/2. Shifted as a block to stay inside [0, 1] (effect ≤ 1).
    """
    if spread == "even":
        r = base + effect * (np.linspace(0, 1, k) - 0.5)
    else:
        r = np.full(k, base - effect / 2)
        r[-1] = base + effect / 2
    r = r - min(r.min(), 0) - max(r.max() - 1, 0)
    return np.clip(r, 0.0, 1.0)  # rounding only


def power(n, rates, alpha: float = 0.05, sims: int = 2000, B: int = 2000, seed: int = 0) -> float:
    """Simulated power of the parity-bootstrap test (formula in the module docstring)."""
    n = np.asarray(n, dtype=np.int64)
    rates = np.asarray(rates, dtype=float)
    rng = np.random.default_rng(seed)
    x = rng.binomial(n, rates, size=(sims, n.size))
    r = x / n
    observed = r.max(axis=1) - r.min(axis=1)
    totals = x.sum(axis=1)
    threshold = np.empty(sims)
    for X in np.unique(totals):
        null = rng.binomial(n, X / n.sum(), size=(B, n.size)) / n
        threshold[totals == X] = np.quantile(null.max(axis=1) - null.min(axis=1), 1 - alpha)
    return float(np.mean(observed > threshold))


def plan(effect: float, k: int, base: float, target: float = 0.8, alpha: float = 0.05, spread: str = "even",
         sims: int = 2000, seed: int = 0, max_n: int = 20_000) -> Plan:
    """Smallest n (agents per attribute) whose simulated power reaches ``target``: doubling, then
    bisection (power is taken as increasing in n; the same seed at every n keeps it smooth)."""
    rates = spread_rates(effect, k, base, spread)
    pw = lambda m: power(np.full(k, m), rates, alpha, sims, seed=seed)  # noqa: E731
    lo, hi = 1, 2
    while pw(hi) < target:
        lo, hi = hi, hi * 2
        if hi > max_n:
            return Plan(None, pw(max_n), tuple(map(float, rates)))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if pw(mid) >= target else (mid, hi)
    return Plan(hi, pw(hi), tuple(map(float, rates)))


def minimum_detectable_dpd(n, base: float, target: float = 0.8, alpha: float = 0.05, sims: int = 1000,
                           seed: int = 0, tol: float = 0.01) -> float:
    """Smallest DPD (evenly spread around ``base``) that the test detects with power ``target`` at
    the given n_a, by bisection on the effect; NaN when even DPD = 1 is not detected that often."""
    n = np.asarray(n, dtype=np.int64)
    n = n[n > 0]
    if n.size < 2 or not np.isfinite(base):
        return float("nan")
    pw = lambda d: power(n, spread_rates(d, n.size, base), alpha, sims, B=1000, seed=seed)  # noqa: E731
    if pw(1.0) < target:
        return float("nan")
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pw(mid) >= target else (mid, hi)
    return round(hi, 3)
