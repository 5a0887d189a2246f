"""Power of the parity-bootstrap DPD test, by seeded simulation (issue 14).

The test is the one ``louder analyze`` runs (``stats.parity_bootstrap``): with pooled rate
p̂ = Σ x_a / Σ n_a, the threshold is the (1 − α) quantile of DPD under x_a ~ Binomial(n_a, p̂), and the
single test rejects when its DPD exceeds it (its p-value is then below α, up to ties). This is the
power of one case tested alone: ``louder analyze`` calls a case significant on its p-value Holm-adjusted
across the run's cases, which needs more (α/m for the smallest of m p-values). Power at true rates r_a is

    power = P_r( DPD(x/n) > q_{1−α}(p̂(x)) ),   x_a ~ Binomial(n_a, r_a),

estimated from ``sims`` simulated cases. The threshold depends on the data only through the pooled
count X = Σ x_a, so it is computed once per distinct X (``B`` parity draws each) — that is what makes
a search over n take seconds.

The minimum detectable DPD of ``louder analyze`` (one per case, issue 24) goes further: it depends
on the case only through (n_1..n_k, pooled rate, α, target power), so it is computed once per
distinct key, and its bisection over the effect reads every threshold from one table q̂(X) per
n vector (``NullThresholds``) instead of redrawing the null at every step.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from louder.analysis.stats.intervals import columns_first

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


def _dpd_rows(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """max − min of each row's rates x / n, reduced over ``intervals.columns_first`` (faster, the same values)."""
    r = columns_first(x / n)
    return r.max(axis=0) - r.min(axis=0)


class NullThresholds:
    """q̂(X) = the (1 − α) quantile of DPD under parity at pooled count X, for one vector n.

    Computed at grid counts X_g from ``B`` draws x_a ~ Binomial(n_a, X_g / N), N = Σ n_a, each grid
    count with its own seeded stream (so a value never depends on which counts were asked for
    first), and linearly interpolated in θ = arcsin √(X/N) between the two grid counts around X:

    - X_g = round(N sin²(g·Δ)), Δ = 1 / (2√N), g = 0, 1, …: one step is about one standard
      deviation of X, √(N p(1−p)). On θ the quantile is smooth — it scales with
      √(p(1−p)) = sin 2θ / 2 — so the relative interpolation error is about Δ²/2 = 1/(8N), far
      below the Monte-Carlo error of a quantile from B draws;
    - but where n_min·p(1−p) < 100 (p = X/N) the null DPD lives on a coarse lattice, q̂ jumps
      between lattice values and interpolating would bias it downwards: there X is its own grid
      count (exact).

    Grid counts are drawn when first needed and kept (only those: memory stays small at any N).
    """

    LATTICE = 100  # n_min·p(1−p) below this: exact

    def __init__(self, n, alpha: float = 0.05, B: int = 1000, seed: int = 0):
        self.n = np.asarray(n, dtype=np.int64)
        self.N = int(self.n.sum())
        self.alpha, self.B, self.seed = alpha, B, seed
        self.step = 1 / (2 * np.sqrt(self.N))
        # the grid counts drawn so far (sorted) and their quantiles: looked up with searchsorted, not a
        # dict per count (a few hundred counts per call, hundreds of calls per analysis)
        self._grid, self._q = np.empty(0, dtype=np.int64), np.empty(0)
        self._lock = threading.Lock()  # cases analysed on threads (``stats.each_case``) may share a table

    def _theta(self, X) -> np.ndarray:
        return np.arcsin(np.sqrt(np.asarray(X) / self.N))

    def brackets(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The grid counts (lower ≤ X ≤ upper) that q̂(X) is interpolated between."""
        g = np.floor(self._theta(X) / self.step)
        lower, upper = (np.round(self.N * np.sin(np.minimum(i * self.step, np.pi / 2)) ** 2).astype(np.int64)
                        for i in (g, g + 1))
        p = X / self.N
        exact = self.n.min() * p * (1 - p) < self.LATTICE
        return np.where(exact, X, np.minimum(lower, X)), np.where(exact, X, np.maximum(upper, X))

    def __call__(self, totals) -> np.ndarray:
        with self._lock:
            return self._thresholds(totals)

    def _thresholds(self, totals) -> np.ndarray:
        X, inverse = np.unique(np.asarray(totals, dtype=np.int64), return_inverse=True)
        lower, upper = self.brackets(X)
        need = np.union1d(lower, upper)
        missing = need[~np.isin(need, self._grid)].tolist()
        if missing:
            null = np.stack([_dpd_rows(np.random.default_rng([self.seed, c]).binomial(
                self.n, c / self.N, size=(self.B, self.n.size)), self.n) for c in missing])
            grid = np.concatenate([self._grid, np.asarray(missing, dtype=np.int64)])
            order = np.argsort(grid, kind="stable")
            self._grid = grid[order]
            self._q = np.concatenate([self._q, np.quantile(null, 1 - self.alpha, axis=1)])[order]
        q_lo, q_hi = (self._q[np.searchsorted(self._grid, v)] for v in (lower, upper))
        t, t_lo, t_hi = self._theta(X), self._theta(lower), self._theta(upper)
        w = np.divide(t - t_lo, t_hi - t_lo, out=np.zeros_like(t), where=t_hi > t_lo)
        return (q_lo + w * (q_hi - q_lo))[inverse.ravel()]


def power(n, rates, alpha: float = 0.05, sims: int = 2000, B: int = 2000, seed: int = 0,
          thresholds: NullThresholds | None = None) -> float:
    """Simulated power of the parity-bootstrap test (formula in the module docstring).

    ``thresholds``: read q_{1−α}(X) from this table (built for the same n and α) instead of drawing
    B parity draws per distinct X here."""
    n = np.asarray(n, dtype=np.int64)
    rates = np.asarray(rates, dtype=float)
    rng = np.random.default_rng(seed)
    x = rng.binomial(n, rates, size=(sims, n.size))
    observed = _dpd_rows(x, n)
    totals = x.sum(axis=1)
    if thresholds is not None:
        return float(np.mean(observed > thresholds(totals)))
    threshold = np.empty(sims)
    for X in np.unique(totals):
        null = rng.binomial(n, X / n.sum(), size=(B, n.size))
        threshold[totals == X] = np.quantile(_dpd_rows(null, n), 1 - alpha)
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
    """Smallest DPD d (evenly spread around ``base``: ``spread_rates(d, k, base)``) that the test
    detects with power ≥ ``target`` at the given n_a; NaN when even DPD = 1 is not detected that often.

    Bisection on d ∈ [0, 1] down to ``tol``, each step power(d) from ``sims`` simulated cases with
    the same seed (common random numbers, so power is smooth in d), thresholds from one
    ``NullThresholds`` table (B = 1,000 parity draws per grid point) shared by every step.
    Attributes with n_a = 0 are left out and the rest sorted, so the result depends only on the key
    (sorted n, base, target, α, sims, seed, tol): cases sharing a key share one computation.
    """
    key = mdd_key(n, base)
    return float("nan") if key is None else _mdd(*key, target, alpha, sims, seed, tol)


def mdd_key(n, base: float) -> tuple[tuple[int, ...], float] | None:
    """What a case's minimum detectable DPD depends on of the case: its n_a > 0 sorted, and the base rate
    (None where there is nothing to detect: fewer than two attributes, or no base rate)."""
    n = np.asarray(n, dtype=np.int64)
    n = np.sort(n[n > 0])
    if n.size < 2 or not np.isfinite(base):
        return None
    return tuple(n.tolist()), float(base)


@lru_cache(maxsize=256)
def _null_table(n: tuple[int, ...], alpha: float, seed: int) -> NullThresholds:
    return NullThresholds(n, alpha, B=1000, seed=seed)


@lru_cache(maxsize=4096)
def _mdd(n: tuple[int, ...], base: float, target: float, alpha: float, sims: int, seed: int, tol: float) -> float:
    table = _null_table(n, alpha, seed)
    pw = lambda d: power(n, spread_rates(d, len(n), base), alpha, sims, seed=seed, thresholds=table)  # noqa: E731
    if pw(1.0) < target:
        return float("nan")
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if pw(mid) >= target else (mid, hi)
    return round(hi, 3)
