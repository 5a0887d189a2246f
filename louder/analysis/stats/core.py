"""Small pure statistics over arrays. Each docstring states its formula.

Notation: a case has attributes a = 1..k; attribute a has n_a valid decisions of which x_a chose
the target; its rate is r_a = x_a / n_a.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass, fields

import numpy as np

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import intervals as I

NAN = float("nan")
ALPHA = 0.05  # the level of every `significant` decision (after the multiplicity control its table names)


def substream(seed: int, *parts: int) -> int:
    """The seed of one independent random stream, from the analysis seed and integer ``parts`` (a
    case's index, a statistic's own number): ``SeedSequence([seed, *parts])``'s first word, so every
    case has its own stream, reproducible from the seed alone."""
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])


def named_seed(seed: int, *parts) -> int:
    """``substream`` of parts of any kind (a group's name, a variant): each part enters as the crc32 of
    its text — not ``hash()``, whose value for a string changes from one process to the next."""
    import zlib

    return substream(seed, *[zlib.crc32(str(p).encode()) for p in parts])


# Results are frozen dataclasses (as statsmodels' result classes). For one release they also
# behave like what these functions returned before — a dict (``r["p_value"]``) or a tuple
# (``lo, hi = …``) — so callers move over at their own pace.
class DictLike:
    def __getitem__(self, key: str):
        return getattr(self, key)

    def keys(self) -> list[str]:  # so that ``**result`` still works
        return [f.name for f in fields(self)]


class TupleLike:
    def __iter__(self):
        return iter(astuple(self))

    def __len__(self) -> int:
        return len(astuple(self))

    def __getitem__(self, i: int):
        return astuple(self)[i]


@dataclass(frozen=True)
class ParityTest(DictLike):
    """DPD against its null distribution under parity."""

    dpd: float
    threshold: float  # the ``level`` quantile of DPD under parity (the paper's parity threshold)
    p_value: float
    significant: bool  # ``significant(p_value, 1 − level)``: this one test; a run's tables use its Holm p-value


@dataclass(frozen=True)
class Interval(TupleLike):
    """A confidence interval (for a DPD: ``intervals.dpd_interval``)."""

    low: float
    high: float


@dataclass(frozen=True)
class Difference(TupleLike):
    """An estimated difference with its confidence interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class TTest(DictLike):
    t: float
    df: float
    p_value: float


def dpd(rates) -> float:
    """Demographic parity difference: DPD = max_a r_a − min_a r_a (NaN rates ignored).

    NaN when fewer than two attributes have a rate.
    """
    r = np.asarray(rates, dtype=float)
    r = r[~np.isnan(r)]
    return float(r.max() - r.min()) if r.size >= 2 else float("nan")


def _dpd_rows(rates: np.ndarray) -> np.ndarray:
    """max − min of each row (B × k), reduced over ``I.columns_first`` (faster, the same values)."""
    r = I.columns_first(rates)
    return r.max(axis=0) - r.min(axis=0)


# Values (8 bytes each) in one block of resampling work: the block and the temporaries of its statistic stay in
# a core's L2 cache (1–2 MB on current x86), where blocks of 1–5 million values went out to memory on every pass.
# Measured (10,000 shuffles): a DPD_p permutation test of 3,500 agents 0.72 → 0.52 s, a cluster permutation of
# 2,000 clusters 0.84 → 0.40 s, a sequential design of 400 cases × 5 attributes 17.8 → 9.4 s.
CACHE_CELLS = 100_000


def permuted_rows(rng: np.random.Generator, values: np.ndarray, B: int, stat) -> np.ndarray:
    """``stat`` of B shuffles of ``values`` (each row ``rng.permuted``, one independent permutation per row),
    concatenated: ``stat`` maps a (rows × N) block of shuffles to one value per row. Made in blocks of
    about ``CACHE_CELLS`` values: the same shuffles in the same order as one B × N array (each row draws
    from the generator in turn), in cache and in bounded memory."""
    rows = max(1, CACHE_CELLS // max(values.size, 1))
    return np.concatenate([stat(rng.permuted(np.broadcast_to(values, (min(rows, B - i), values.size)), axis=1))
                           for i in range(0, B, rows)])


def each_case(fn, items) -> list:
    """``[fn(x) for x in items]``, on up to ``os.cpu_count()`` threads (8 at most): a case's statistics draw
    from a generator seeded by the case alone, so every result is the same in any order, and numpy's
    binomial draws and array loops — most of a bootstrap's time — release the GIL (a cold analysis of
    36 cases at B = 10,000 on 2 cores: ~0.6 s less)."""
    items = list(items)
    workers = min(8, os.cpu_count() or 1, len(items))
    if workers < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def parity_bootstrap(n, x, B: int = 10_000, seed: int = 0, level: float = 0.95) -> ParityTest:
    """Parametric bootstrap of DPD under parity (section 3.3 of the paper, made precise).

    p̂ = Σ x_a / Σ n_a (pooled target rate over the case's valid decisions). For b = 1..B draw
    x_a^b ~ Binomial(n_a, p̂) independently per attribute and compute DPD_b over r_a^b = x_a^b / n_a.
    threshold = the ``level`` quantile of DPD_b (95th percentile, the paper's parity threshold);
    p = (1 + #{DPD_b ≥ DPD_obs}) / (B + 1); significant ⇔ p < 1 − level (``significant``: decided from
    the p-value, never by comparing the DPD with the threshold, whose floats and ties disagree with p).

    Attributes with n_a = 0 are left out. Vectorised: one (B × k) binomial draw.
    """
    n, x = np.asarray(n, dtype=np.int64), np.asarray(x, dtype=np.int64)
    keep = n > 0
    n, x = n[keep], x[keep]
    if n.size < 2:
        return ParityTest(NAN, NAN, NAN, False)
    observed = dpd(x / n)
    p_hat = x.sum() / n.sum()
    rng = np.random.default_rng(seed)
    draws = _dpd_rows(rng.binomial(n, p_hat, size=(B, n.size)) / n)
    threshold = float(np.quantile(draws, level))
    p_value = float((1 + np.count_nonzero(draws >= observed - 1e-12)) / (B + 1))
    return ParityTest(observed, threshold, p_value, significant(p_value, level_alpha(level)))


def _binomial_draws(rng: np.random.Generator, n: np.ndarray, x: np.ndarray, B: int) -> tuple[np.ndarray, np.ndarray]:
    """x^b ~ Binomial(n_a, r_a) (resampling n_a decisions of attribute a with replacement): the
    bootstrap rates (B × k) and their pair variances (B × P, ``intervals.binomial_variance``)."""
    xb = rng.binomial(n, x / n, size=(B, n.size))
    return xb / n, I.pair_sum(I.binomial_variance(xb, n))


def dpd_confidence_interval(n, x, B: int = 10_000, seed: int = 0, level: float = 0.95) -> Interval:
    """Interval for DPD that contains it and holds its coverage at DPD = 0 (``intervals.dpd_interval``).

    Resamples decisions within each attribute, x_a^b ~ Binomial(n_a, r_a), r_a^b = x_a^b / n_a; the
    simultaneous bootstrap-t band for every r_a − r_b (se² = v_a + v_b, v = p̃(1 − p̃)/n_a with
    p̃ = (x_a + ½)/(n_a + 1), the same formula in each resample) is projected onto max − min:
    lo = max(0, max_ab (|d̂_ab| − c·se_ab)), hi = min(1, max_ab (|d̂_ab| + c·se_ab)) over the pairs that
    can be the largest. docs/statistics.md: formula, reasons and simulated coverage.
    """
    n, x = np.asarray(n, dtype=np.int64), np.asarray(x, dtype=np.int64)
    keep = n > 0
    n, x = n[keep], x[keep]
    if n.size < 2:
        return Interval(NAN, NAN)
    rng = np.random.default_rng(seed)
    rb, vb = _binomial_draws(rng, n, x, B)
    return Interval(*I.dpd_interval(x / n, rb, I.pair_sum(I.binomial_variance(x, n)), vb, level))


def explicit_dpd(counts, n_total) -> float:
    """Explicit DPD = max_a c_a / N − min_a c_a / N, where c_a counts answers naming attribute a and
    N counts all valid answers, Unknown included (Unknown enters the denominator only)."""
    c = np.asarray(counts, dtype=float)
    return float((c.max() - c.min()) / n_total) if n_total > 0 and c.size >= 2 else float("nan")


def explicit_parity_bootstrap(counts, n_total: int, B: int = 10_000, seed: int = 0,
                              level: float = 0.95) -> ParityTest:
    """Null for explicit DPD: each non-Unknown answer names an attribute uniformly at random.

    With m = Σ c_a non-Unknown answers over k attributes: c^b ~ Multinomial(m, 1/k each);
    DPD_b = (max c^b − min c^b) / N. Threshold, significance and p as in ``parity_bootstrap``.
    """
    c = np.asarray(counts, dtype=np.int64)
    if n_total <= 0 or c.size < 2:
        return ParityTest(NAN, NAN, NAN, False)
    observed = explicit_dpd(c, n_total)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(int(c.sum()), np.full(c.size, 1 / c.size), size=B)
    dist = _dpd_rows(draws) / n_total
    threshold = float(np.quantile(dist, level))
    p_value = float((1 + np.count_nonzero(dist >= observed - 1e-12)) / (B + 1))
    return ParityTest(observed, threshold, p_value, significant(p_value, level_alpha(level)))


def multinomial_pair_variance(c: np.ndarray, n_total: int) -> np.ndarray:
    """var(c_a/N − c_b/N) = (p_a + p_b − (p_a − p_b)²)/N for multinomial shares, with p̃ = (c + ½)/(N + 1)."""
    p = (np.asarray(c, dtype=float) + 0.5) / (n_total + 1)
    i, j = I.pair_index(p.shape[-1])
    return (p[..., i] + p[..., j] - (p[..., i] - p[..., j]) ** 2) / n_total


def explicit_dpd_confidence_interval(counts, n_total: int, B: int = 10_000, seed: int = 0,
                                     level: float = 0.95) -> Interval:
    """Interval for explicit DPD: resample the N valid answers (Unknown as category k+1),
    c^b ~ Multinomial(N, (c, N − Σc)/N); shares c_a^b / N; the band and projection of
    ``intervals.dpd_interval`` with the multinomial pair variance (``multinomial_pair_variance``)."""
    c = np.asarray(counts, dtype=np.int64)
    if n_total <= 0 or c.size < 2:
        return Interval(NAN, NAN)
    probs = np.append(c, n_total - c.sum()) / n_total
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_total, probs, size=B)[:, :-1]
    return Interval(*I.dpd_interval(c / n_total, draws / n_total, multinomial_pair_variance(c, n_total),
                                    multinomial_pair_variance(draws, n_total), level))


def wilson(rate, n, level: float = 0.95) -> Interval:
    """Wilson score interval of a rate r from n (effective: a weighted rate's Kish n may be fractional)
    observations, z the normal quantile of ``level``:
    (r + z²/2n ± z·√(r(1−r)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1]. It contains r (to rounding: at
    r = 1 the upper end may read 1 − 1 ulp, as statsmodels' does).
    ``rate`` and ``n`` may be arrays: an ``Interval`` of arrays. NaN where n ≤ 0 or the rate is missing.
    The one Wilson interval of the analysis (statsmodels' ``proportion_confint(x, n, method="wilson")``
    for a count x = r·n: tests/test_stats.py)."""
    r, m = np.asarray(rate, dtype=float), np.asarray(n, dtype=float)
    ok = (m > 0) & np.isfinite(r)
    r, m = np.where(ok, r, 0.5), np.where(ok, m, 1.0)  # (placeholders where there is no interval)
    z = dist.z(level)
    centre = (r + z * z / (2 * m)) / (1 + z * z / m)
    half = z * np.sqrt(r * (1 - r) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    low = np.where(ok, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(ok, np.clip(centre + half, 0.0, 1.0), np.nan)
    if low.ndim == 0:
        return Interval(float(low), float(high))
    return Interval(low, high)


def level_alpha(level: float) -> float:
    """α = 1 − level, rounded to 10 digits: 1 − 0.95 is 0.050000000000000044 in floats, which would
    count p = 0.05 as below it."""
    return round(1 - level, 10)


def significant(p_adjusted, alpha: float = ALPHA):
    """The one rule of every ``significant`` column: p < alpha, where p is already adjusted for the
    multiplicity its table controls (cases: Holm across the run's cases; docs/statistics.md). A
    missing p-value (NaN: no test) is not significant. A scalar gives a bool, an array a bool array."""
    p = np.asarray(p_adjusted, dtype=float)
    out = np.zeros(p.shape, dtype=bool)
    np.less(p, alpha, out=out, where=~np.isnan(p))
    return bool(out) if out.ndim == 0 else out


def holm(p_values) -> np.ndarray:
    """Holm step-down adjusted p-values (NaNs kept as NaN): with the m p-values sorted ascending,
    p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) p_(j)). The same as statsmodels' ``multipletests(p,
    method="holm")`` (tests/test_verdicts.py compares them), which runs a full ``gc.collect()`` on every
    call — a tenth of a second or more in a large process, and analyze adjusts several tables."""
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m:
        order = np.argsort(p[ok], kind="stable")
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[ok][order]))
        out[ok] = adjusted
    return out


def mean_difference_interval(n_a, x_a, n_b, x_b, B: int = 10_000, seed: int = 0,
                             level: float = 0.95) -> Difference:
    """Difference of mean rates between attribute sets A and B, with a percentile bootstrap interval.

    d = mean_{a∈A} r_a − mean_{b∈B} r_b; each r resampled as Binomial(n, r)/n. Returns (d, lo, hi).
    A difference of means is linear in the rates, with no boundary at 0, so the percentile interval
    keeps its coverage (benchmarks/interval_coverage.py, docs/statistics.md) — unlike a DPD's.
    """
    n_a, x_a, n_b, x_b = (np.asarray(v, dtype=np.int64) for v in (n_a, x_a, n_b, x_b))
    if (n_a == 0).any() or (n_b == 0).any() or n_a.size == 0 or n_b.size == 0:
        return Difference(NAN, NAN, NAN)
    d = float((x_a / n_a).mean() - (x_b / n_b).mean())
    rng = np.random.default_rng(seed)
    da = (rng.binomial(n_a, x_a / n_a, size=(B, n_a.size)) / n_a).mean(axis=1)
    db = (rng.binomial(n_b, x_b / n_b, size=(B, n_b.size)) / n_b).mean(axis=1)
    lo, hi = np.quantile(da - db, [(1 - level) / 2, (1 + level) / 2])
    return Difference(d, float(lo), float(hi))


def log_odds_dirichlet(counts_i, counts_j, prior) -> tuple[np.ndarray, np.ndarray]:
    """Log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008, eq. 16-22).

    For word w with counts y_w^i, y_w^j, prior α_w, n_i = Σ y^i, n_j = Σ y^j, α_0 = Σ α:
    δ_w = log((y_w^i + α_w) / (n_i + α_0 − y_w^i − α_w)) − log((y_w^j + α_w) / (n_j + α_0 − y_w^j − α_w)),
    σ²_w ≈ 1/(y_w^i + α_w) + 1/(y_w^j + α_w), z_w = δ_w / σ_w. Returns (δ, z).
    """
    yi, yj, a = (np.asarray(v, dtype=float) for v in (counts_i, counts_j, prior))
    ni, nj, a0 = yi.sum(), yj.sum(), a.sum()
    delta = np.log((yi + a) / (ni + a0 - yi - a)) - np.log((yj + a) / (nj + a0 - yj - a))
    var = 1 / (yi + a) + 1 / (yj + a)
    return delta, delta / np.sqrt(var)


def dpd_difference_interval(n1, x1, n2, x2, B: int = 10_000, seed: int = 0,
                            level: float = 0.95) -> Difference:
    """Difference of two cases' DPDs (case 1 − case 2) with an interval that contains it and keeps
    its coverage when either DPD is 0 (``intervals.dpd_difference_interval``).

    Δ = DPD(x1/n1) − DPD(x2/n2); each case resampled independently within attributes
    (x_a^b ~ Binomial(n_a, r_a)); one simultaneous bootstrap-t band over both cases' pair
    differences (critical value c shared), each case projected onto [lo_i, hi_i]; Δ ∈ [lo_1 − hi_2,
    hi_1 − lo_2]. Returns (Δ, lo, hi).
    """
    n1, x1, n2, x2 = (np.asarray(v, dtype=np.int64) for v in (n1, x1, n2, x2))
    k1, k2 = n1 > 0, n2 > 0
    n1, x1, n2, x2 = n1[k1], x1[k1], n2[k2], x2[k2]
    if n1.size < 2 or n2.size < 2:
        return Difference(NAN, NAN, NAN)
    delta = dpd(x1 / n1) - dpd(x2 / n2)
    rng = np.random.default_rng(seed)
    bands = []
    for n, x in ((n1, x1), (n2, x2)):
        rb, vb = _binomial_draws(rng, n, x, B)
        bands.append(I.band(x / n, rb, I.pair_sum(I.binomial_variance(x, n)), vb))
    lo, hi = I.dpd_difference_interval(*bands, level=level)
    return Difference(float(delta), lo, hi)


def implicit_explicit_difference(n, x, counts, n_total: int, B: int = 10_000, seed: int = 0,
                                 level: float = 0.95) -> Difference:
    """One case's implicit DPD minus its explicit DPD (the per-case selection of section 5.1), with an
    interval that contains the difference and keeps its coverage when either DPD is 0.

    Δ = DPD(x/n) − explicit_dpd(counts, N). The implicit side resampled within attributes
    (x_a^b ~ Binomial(n_a, r_a), as ``dpd_confidence_interval``), the explicit side as one
    multinomial of its N valid answers (as ``explicit_dpd_confidence_interval``) — independent
    samples (agents vs direct questions); one bootstrap-t critical value for both cases' pair
    differences, each projected onto [lo_i, hi_i]; Δ ∈ [lo_imp − hi_exp, hi_imp − lo_exp]
    (``intervals.dpd_difference_interval``). The two DPDs are in different units (a rate difference
    vs a difference of shares of answers, docs/voices.md): the difference reads as the paper's
    "implicit ≫ explicit", not as one quantity. NaNs when a side has fewer than two attributes.
    """
    n, x, c = (np.asarray(v, dtype=np.int64) for v in (n, x, counts))
    keep = n > 0
    n, x = n[keep], x[keep]
    if n.size < 2 or c.size < 2 or n_total <= 0:
        return Difference(NAN, NAN, NAN)
    delta = dpd(x / n) - explicit_dpd(c, n_total)
    rng = np.random.default_rng(seed)
    rb, vb = _binomial_draws(rng, n, x, B)
    implicit = I.band(x / n, rb, I.pair_sum(I.binomial_variance(x, n)), vb)
    draws = rng.multinomial(n_total, np.append(c, n_total - c.sum()) / n_total, size=B)[:, :-1]
    explicit = I.band(c / n_total, draws / n_total, multinomial_pair_variance(c, n_total),
                      multinomial_pair_variance(draws, n_total))
    lo, hi = I.dpd_difference_interval(implicit, explicit, level=level)
    return Difference(float(delta), lo, hi)


def welch(a, b) -> TTest:
    """Welch's two-sample t-test of mean(a) vs mean(b) (unequal variances).

    With v = s²/n per side (s² the sample variance, ddof 1): t = (ā − b̄) / √(v_a + v_b), Welch–Satterthwaite
    df = (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1)), p = 2·P(T_df > |t|) — scipy's
    ``ttest_ind(a, b, equal_var=False)`` (tests/test_stats.py compares them), computed here so that an
    analysis need not import scipy.stats (distributions.py). NaN when either side has fewer than two
    values or both have zero variance.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2 or (a.var() == 0 and b.var() == 0):
        return TTest(NAN, NAN, NAN)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    t = (a.mean() - b.mean()) / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return TTest(float(t), float(df), float(2 * dist.t_sf(abs(t), df)))
