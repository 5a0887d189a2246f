"""Anytime-valid statistics of a sequential run (issue 20): betting confidence sequences for the
differences between a case's attributes, the DPD confidence sequence they give, the verdict after
each wave, and the sequential e-value / p-value of parity. docs/sequential.md has the simulation study.

**Confidence sequence for a bounded mean.** Waudby-Smith & Ramdas (2023), "Estimating means of
bounded random variables by betting", JRSS-B 86(1): the hedged capital process with predictable
plug-in bets (their Theorem 3 with the PrPl± bets), computed on a grid of m exactly as their
reference code ``confseq.betting.hedged_cs`` does (tests/confseq_reference.py; confseq itself no
longer installs: no wheels, a C++/Boost build, NumPy-1 only). For z_1, z_2, … in [0, 1] with
common mean m* given the past:

    μ̂_t = (½ + Σ_{i≤t} z_i) / (t + 1),     σ̂²_t = (¼ + Σ_{i≤t} (z_i − μ̂_i)²) / (t + 1)     (σ̂²_0 = ¼)
    λ_t = sqrt( 2 log(2/α_bet) / (σ̂²_{t−1} · t · log(1 + t)) )
    K⁺_t(m) = Π_{i≤t} (1 + min(λ_i, c/m) (z_i − m)),    K⁻_t(m) = Π_{i≤t} (1 − min(λ_i, c/(1−m)) (z_i − m))
    K_t(m) = max(½ K⁺_t(m), ½ K⁻_t(m)),                  c = ½

At m = m*, K⁺ and K⁻ are nonnegative martingales (predictable bets; every factor ≥ 1 − c > 0), so
½K⁺ + ½K⁻ ≥ K is one with mean 1 and Ville's inequality gives P(∃t: K_t(m*) ≥ 1/α) ≤ α. The
confidence sequence C_t = {m : K_t(m) < 1/α} holds at every t at once: a run may look after every
wave and stop when it likes. It is read on the grid m ∈ {0, 0.001, …, 1} and widened by one grid
step each side (the reference code's rule), so a boundary between grid points is never cut off; an
empty set reads as [0, 1] (no information), as there. Any predictable bet keeps the martingale; the
bets are tuned to the level the CS is read at (α_bet = α/S below).

**From pairs of attributes to the DPD.** DPD = max_a r_a − min_b r_b = max over the pairs a < b of
|r_a − r_b|. For each pair, the i-th valid answer of a is paired with the i-th valid answer of b:
z_i = (x_{a,i} − x_{b,i} + 1)/2 ∈ [0, 1] is i.i.d. with mean (1 + r_a − r_b)/2, so the CS above
gives r_a − r_b ∈ [2L − 1, 2U − 1] = [l_ab, u_ab]. Pairing beats one CS per attribute by about 2×
in agents: a difference's CS adapts to the difference's variance (half that of x at rates near ½),
where two separate CSs must each be half as wide (docs/sequential.md). Then

    DPD ∈ [ max_ab dist(0, [l_ab, u_ab]),  max_ab max(|l_ab|, |u_ab|) ],

widened where needed to hold the plain estimate max_a mean_a − min_a mean_a over every valid answer.
A pair uses min(n_a, n_b) answers; answers not valid never enter (they are counted beside). An
attribute without valid answers leaves its pairs at [−1, 1]: the case cannot reach parity, while
the other pairs may still show a disparity.

**Multiple attributes and cases (the correction).** A run with S pairs in all (k(k−1)/2 per case,
summed over its cases, policy variants and — population runs — groups) reads every pair's CS at
level α/S (Bonferroni: a union bound holds at every time at once), so with probability ≥ 1 − α
*every* pair CS of the run covers its difference at every wave. Both verdicts are claims about that
one simultaneous event: `disparity` (DPD lower bound > 0) and `parity within D` (upper bound < D)
are wrong, anywhere in the run, with probability ≤ α — whenever and however often it looked. The
price of Bonferroni over cases is log(2S/α) in place of log(2P/α) in the bets and the threshold
(measured in docs/sequential.md).

**Sequential e-value and p-value of parity** (H0: every attribute of the case has the same rate, so
every pair's z has mean ½, a grid point):

    E_t = max_ab K_{ab,t}(½) / P,        p_t = min(1, 1 / max_{s≤t} E_s)      (P = pairs of the case)

Under H0, max_ab K_ab(½) / P ≤ mean_ab K_ab(½) ≤ a mean of test martingales, so
P(∃t: E_t ≥ 1/α) ≤ α (Ville) and p_t is an anytime-valid p-value of the case at any stopping time
(Holm across cases is valid on it). The run-wide Bonferroni p-value is p·S/P; `disparity` implies
p·S/P ≤ α (the widened CS is a little stricter, never looser).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from louder.analysis.stats.core import CACHE_CELLS

GRID = np.linspace(0.0, 1.0, 1001)  # the candidate means m
STEP = GRID[1] - GRID[0]
TRUNCATION = 0.5  # c: every factor of the capital stays ≥ 1 − c
DISPARITY = "disparity"  # stop reasons: "disparity", "parity within D", "undecided"
UNDECIDED = "undecided"
CONTINUE = ""


def parity_reason(precision: float) -> str:
    return f"parity within {precision:g}"


@dataclass(frozen=True)
class Capital:
    """The hedged capital processes of s streams (leading axis) on ``GRID``, after their
    observations so far: n (valid observations), Σx, Σ(x_i − μ̂_i)², log K⁺ and log K⁻ (s × grid)."""

    bet_alpha: float
    n: np.ndarray
    sum_x: np.ndarray
    sum_sq: np.ndarray
    log_plus: np.ndarray
    log_minus: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        """The plain mean of each stream (NaN with no observation)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.sum_x / np.maximum(self.n, 1), np.nan)

    @property
    def log_capital(self) -> np.ndarray:
        """log K_t(m) = max(log K⁺, log K⁻) − log 2, streams × grid."""
        return np.maximum(self.log_plus, self.log_minus) - np.log(2.0)


def start(streams: int, bet_alpha: float) -> Capital:
    """No observation yet: K⁺ = K⁻ = 1 for every m."""
    z = np.zeros(streams)
    return Capital(bet_alpha, z.astype(np.int64), z.copy(), z.copy(), np.zeros((streams, GRID.size)),
                   np.zeros((streams, GRID.size)))


def update(cap: Capital, x, max_cells: int = CACHE_CELLS) -> Capital:
    """The capital after the observations ``x`` (streams × w, in arrival order; NaN = no observation,
    e.g. an invalid answer or a stream with fewer observations this wave). The bets of each
    observation use only the observations before it (predictable), in the order given."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    s, w = x.shape
    if w == 0:
        return cap
    ok = ~np.isnan(x)
    xv = np.where(ok, x, 0.0)
    if np.any((xv < 0) | (xv > 1)):
        raise ValueError("observations must lie in [0, 1]")
    t = cap.n[:, None] + np.cumsum(ok, axis=1)  # the observation's number (for valid ones)
    sums = cap.sum_x[:, None] + np.cumsum(xv, axis=1)
    mu_t = np.minimum((0.5 + sums) / (t + 1), 1.0)
    sq = np.where(ok, (xv - mu_t) ** 2, 0.0)
    sum_sq = cap.sum_sq[:, None] + np.cumsum(sq, axis=1)
    prev_sq = sum_sq - sq  # Σ up to the observation before
    var_prev = (0.25 + prev_sq) / np.maximum(t, 1)  # σ̂²_{t−1} = (¼ + Σ_{i<t}) / t
    lam = np.sqrt(2 * np.log(2 / cap.bet_alpha) / (var_prev * np.maximum(t, 1) * np.log1p(np.maximum(t, 1))))
    lam = np.where(ok, lam, 0.0)  # no observation: no bet, factor 1
    m = GRID[None, None, :]
    with np.errstate(divide="ignore"):
        cap_plus = np.where(m > 0, TRUNCATION / m, np.inf)
        cap_minus = np.where(m < 1, TRUNCATION / (1 - m), np.inf)
    log_plus, log_minus = np.empty_like(cap.log_plus), np.empty_like(cap.log_minus)
    # streams × w × grid in blocks that stay in a core's cache (``CACHE_CELLS``: at 4,000,000 cells a block went to
    # memory on every pass, 1.9× slower); blocks split streams only: every product and sum is the same
    rows = max(1, max_cells // (w * GRID.size))
    for a in range(0, s, rows):
        b = slice(a, a + rows)
        d = xv[b, :, None] - m
        # 1 + λ⁺·d and 1 − λ⁻·d built in one buffer, in place: the same operations in the same order as
        # the expressions (the same bits), without their four temporaries of the block's size
        f = np.minimum(lam[b, :, None], cap_plus)
        f *= d
        f += 1
        np.add(cap.log_plus[b], _log_product(f), out=log_plus[b])  # (a copy, then +=: the same sum, one pass less)
        np.minimum(lam[b, :, None], cap_minus, out=f)
        f *= d
        np.subtract(1, f, out=f)
        np.add(cap.log_minus[b], _log_product(f), out=log_minus[b])
    n = cap.n + ok.sum(axis=1)
    return Capital(cap.bet_alpha, n, sums[:, -1], sum_sq[:, -1], log_plus, log_minus)


# factors multiplied before one log: each lies in [1 − c, 1 + λ], and λ is largest at a stream's first
# observation (σ̂² t = ¼): below 20 for any bet level down to 10⁻¹², so 64 of them stay far inside a double's range
# (0.5⁶⁴ ≈ 10⁻¹⁹, 21⁶⁴ ≈ 10⁸⁵)
PRODUCT_RUN = 64


def _log_product(f: np.ndarray) -> np.ndarray:
    """Σ_i log f_i over axis 1, as the logs of products of ``PRODUCT_RUN`` factors: one log for every 64
    factors instead of one each (the log was most of a sequential run's time); the same sum up to
    rounding (~10⁻¹⁵ on log K). Summed from the first run's log on (what ``sum`` gives after its 0 + x,
    which is x); a single factor is its own product (a look after every observation: no product pass)."""
    if f.shape[1] == 1:
        return np.log(f[:, 0])
    out = np.log(f[:, :PRODUCT_RUN].prod(axis=1))
    for i in range(PRODUCT_RUN, f.shape[1], PRODUCT_RUN):
        out += np.log(f[:, i:i + PRODUCT_RUN].prod(axis=1))
    return out


def intervals(cap: Capital, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """[L, U] of each stream's CS at level ``alpha``: the grid points with K(m) < 1/α, widened by one
    grid step each side; [0, 1] when no grid point is inside (no information)."""
    inside = cap.log_capital < np.log(1 / alpha)
    any_in = inside.any(axis=1)
    first = np.argmax(inside, axis=1)
    last = GRID.size - 1 - np.argmax(inside[:, ::-1], axis=1)
    lo = np.where(any_in, np.maximum(GRID[first] - STEP, 0.0), 0.0)
    hi = np.where(any_in, np.minimum(GRID[last] + STEP, 1.0), 1.0)
    return lo, hi


HALF = int(np.flatnonzero(np.isclose(GRID, 0.5))[0])  # m = ½: a pair's z-mean under parity


def pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k(k−1)/2 pairs a < b of k attributes, in ``np.triu_indices`` order."""
    return np.triu_indices(k, 1)


@dataclass(frozen=True)
class DpdSequence:
    """The DPD of a case (or of many: leading axes) after a wave: the plain estimate, its
    confidence-sequence bounds, and the case's e-value and its own sequential p-value (formulas in
    the module docstring)."""

    dpd: np.ndarray
    low: np.ndarray
    high: np.ndarray
    e_value: np.ndarray


def difference_bounds(lo_z, hi_z) -> tuple[np.ndarray, np.ndarray]:
    """A pair's CS for z = (x_a − x_b + 1)/2 as one for r_a − r_b: [2L − 1, 2U − 1]."""
    # rounded: grid arithmetic must not put a bound a hair below a threshold it sits on (0.3 as 0.29999…)
    return np.round(2 * np.asarray(lo_z, dtype=float) - 1, 9), np.round(2 * np.asarray(hi_z, dtype=float) - 1, 9)


def dpd_bounds(lo, hi, means, log_capital_half=None) -> DpdSequence:
    """DPD bounds from the pair CSs [l_ab, u_ab] of r_a − r_b (``lo``, ``hi``; last axis: the case's pairs):
    [max_ab dist(0, [l, u]), max_ab max(|l|, |u|)], widened where needed to hold the plain estimate
    max mean − min mean (``means``: last axis the k attributes; NaN = no valid answer; the estimate
    is over the attributes with answers, NaN with fewer than two). ``log_capital_half``: log K_ab(½)
    per pair, for E = max_ab K_ab(½) / P."""
    lo, hi, means = (np.asarray(v, dtype=float) for v in (lo, hi, means))
    near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    low = near.max(axis=-1)
    high = np.minimum(1.0, np.maximum(np.abs(lo), np.abs(hi)).max(axis=-1))
    have = (~np.isnan(means)).sum(axis=-1)
    top = np.where(np.isnan(means), -np.inf, means).max(axis=-1)
    bottom = np.where(np.isnan(means), np.inf, means).min(axis=-1)
    est = np.where(have >= 2, top - bottom, np.nan)
    filled = np.where(np.isnan(est), low, est)
    low, high = np.minimum(low, filled), np.maximum(high, filled)
    if log_capital_half is None:
        e = np.full(np.shape(low), np.nan)
    else:
        lk = np.asarray(log_capital_half, dtype=float)
        e = np.exp(lk.max(axis=-1)) / lk.shape[-1]
    return DpdSequence(est, low, high, e)


def verdict(low, high, precision: float) -> np.ndarray:
    """``disparity`` where the DPD CS is above 0, ``parity within D`` where it is below D, else ""."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    return np.where(low > 0, DISPARITY, np.where(high < precision, parity_reason(precision), CONTINUE))


def pair_alpha(alpha: float, pairs: int) -> float:
    """The level of each pair CS of a run with ``pairs`` attribute pairs in all (Bonferroni)."""
    return alpha / max(1, pairs)


class PairedStreams:
    """The running test of one case (k attributes) in a live run: the valid answers of each
    attribute in order, the pair CSs they feed (the i-th valid answer of a with the i-th of b), and
    the case's state after each wave. ``level`` is the pair CS level α/S of the run."""

    def __init__(self, k: int, level: float):
        self.k, self.level = k, level
        self.ia, self.ib = pair_index(k)
        self.values: list[list[float]] = [[] for _ in range(k)]
        self.paired = np.zeros(self.ia.size, dtype=np.int64)
        self.cap = start(self.ia.size, level)
        self.max_e = 0.0

    def add(self, answers: list[list[float]]) -> None:
        """One wave's valid answers (in [0, 1]) per attribute, in their order."""
        for a, xs in enumerate(answers):
            self.values[a].extend(float(v) for v in xs)
        n = np.array([len(v) for v in self.values])
        upto = np.minimum(n[self.ia], n[self.ib])
        width = int((upto - self.paired).max()) if upto.size else 0
        z = np.full((self.ia.size, width), np.nan)
        for p, (a, b) in enumerate(zip(self.ia, self.ib)):
            xa = np.asarray(self.values[a][self.paired[p]:upto[p]])
            xb = np.asarray(self.values[b][self.paired[p]:upto[p]])
            z[p, :xa.size] = (xa - xb + 1) / 2
        self.paired = upto
        self.cap = update(self.cap, z)

    def state(self) -> DpdSequence:
        lo, hi = intervals(self.cap, self.level)
        means = np.array([np.mean(v) if v else np.nan for v in self.values])
        seq = dpd_bounds(*difference_bounds(lo, hi), means, self.cap.log_capital[:, HALF])
        self.max_e = max(self.max_e, float(seq.e_value))
        return seq

    @property
    def p_value(self) -> float:
        """The case's own anytime-valid p-value, 1 / max_s E_s (after ``state`` at every wave)."""
        return float(min(1.0, 1.0 / self.max_e)) if self.max_e > 0 else 1.0


def _rows(cap: Capital, rows: np.ndarray) -> Capital:
    return Capital(cap.bet_alpha, cap.n[rows], cap.sum_x[rows], cap.sum_sq[rows], cap.log_plus[rows],
                   cap.log_minus[rows])


def run_design(x, alpha: float, precision: float, wave: int, budget: int, pairs_total: int | None = None):
    """A whole sequential design on simulated streams, vectorised over runs: ``x`` is
    runs × k × budget with every answer valid (the i-th answers of two attributes form their i-th
    pair). Each run stops after the first wave with a verdict, else at the budget (``undecided``).
    ``pairs_total``: pairs of the whole design for the Bonferroni level (default one case's).

    Returns (verdict per run, agents per attribute used per run, DpdSequence at the stop)."""
    x = np.asarray(x, dtype=float)
    if np.isnan(x).any():
        raise ValueError("run_design takes complete streams (every answer valid)")
    runs, k, _ = x.shape
    ia, ib = pair_index(k)
    P = ia.size
    level = pair_alpha(alpha, pairs_total or P)
    sums = np.cumsum(x, axis=2)
    cap = start(runs * P, level)  # the capital of the runs still going, run-major
    stop = np.full(runs, UNDECIDED, dtype=object)
    used = np.zeros(runs, dtype=np.int64)
    active = np.arange(runs)
    final = DpdSequence(*(np.full(runs, np.nan) for _ in range(4)))
    n_waves = -(-budget // wave)
    for w in range(n_waves):
        a, b = w * wave, min((w + 1) * wave, budget)
        xa = x[active]
        cap = update(cap, ((xa[:, ia, a:b] - xa[:, ib, a:b] + 1) / 2).reshape(active.size * P, -1))
        lo, hi = intervals(cap, level)
        d_lo, d_hi = difference_bounds(lo.reshape(-1, P), hi.reshape(-1, P))
        seq = dpd_bounds(d_lo, d_hi, sums[active, :, b - 1] / b, cap.log_capital[:, HALF].reshape(-1, P))
        v = verdict(seq.low, seq.high, precision)
        now = (v != CONTINUE) | (w == n_waves - 1)
        runs_now = active[now]
        stop[runs_now[v[now] != CONTINUE]] = v[now][v[now] != CONTINUE]
        used[runs_now] = b
        for name in ("dpd", "low", "high", "e_value"):
            getattr(final, name)[runs_now] = getattr(seq, name)[now]
        keep = ~now
        active = active[keep]
        if not active.size:
            break
        cap = _rows(cap, np.repeat(keep, P))  # stopped runs take no more answers
    return stop, used, final
