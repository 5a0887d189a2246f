"""Intervals for a DPD (and for a difference of DPDs) that contain their estimate and keep their
coverage at DPD = 0 (issue 23). docs/statistics.md gives the reasoning and the simulated coverage.

DPD = max_a r_a − min_a r_a = max over the pairs a < b of |d_ab|, with d_ab = r_a − r_b.

A percentile bootstrap of max − min is biased upward near 0 (every resample's max − min is ≥ 0 and
usually > 0), so its interval can exclude its own estimate and misses a true DPD of 0 almost always
when k ≥ 3. The pair differences d_ab are smooth (linear in the rates) and have no such boundary; the
max only enters at the end:

1. **Simultaneous band** for every pair difference (bootstrap-t, max-|t| over pairs). From the B
   bootstrap rate vectors r* that each caller already draws with its own resampling unit (decisions
   within attribute, agents, clusters, twin sets, weighted binomials):

       T*_b = max_{a<b} |d*_ab − d̂_ab| / se*_ab,      c = max(z_{(1+level)/2}, level-quantile of T*)

   (Student's t_{df} in place of z when the se rest on few clusters or agents: df = min_a m_a − 1.)

   se_ab is the caller's standard error of d̂_ab and se*_ab the same formula applied to resample b
   (studentising each resample is what keeps coverage at small n, where se is itself noisy).
   With probability ≈ level every d_ab lies in d̂_ab ± c·se_ab.

2. **Projection** onto DPD = max_ab |d_ab|:

       lo = max(0, max_ab (|d̂_ab| − c·se_ab)),      hi = min(1, max_ab (|d̂_ab| + c·se_ab))

   Since c·se ≥ 0, lo ≤ DPD̂ = max_ab |d̂_ab| ≤ hi always; whenever the band covers every d_ab,
   lo ≤ DPD ≤ hi — at DPD = 0 too, where lo > 0 only if some pair's band excludes 0. So the coverage
   is at least the band's (≈ level); away from 0 it is higher (conservative), the price of bounding a
   max through all pairs at once. Simulated in docs/statistics.md.

With k = 2 this is the bootstrap-t interval of r_1 − r_2 folded onto |r_1 − r_2|.

Degenerate rates: a rate of 0 or 1 has a plug-in variance of 0, so binary-outcome callers use
``binomial_variance``: p̃(1 − p̃)/n with p̃ = (x + ½)/(n + 1) (half a success and half a failure added),
positive for every x. A resample with se* = 0 and d* = d̂ contributes t* = 0; with d* ≠ d̂, t* = ∞.
Resamples missing an attribute (cluster bootstraps) skip that attribute's pairs; a resample with no
pair at all is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from louder.analysis.stats import distributions as dist

NAN = float("nan")


def columns_first(a) -> np.ndarray:
    """``a`` (… × k) with its last axis first, contiguous (k × …). numpy's max and min over a short last
    axis (k attributes) are ~10× slower than over the first axis of a contiguous array; both are exact, so
    reducing ``columns_first(a)`` over axis 0 gives the same values as reducing ``a`` over its last axis."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(a), -1, 0))


def pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k(k−1)/2 pairs a < b in ``np.triu_indices`` order, the order of every pair array here."""
    return np.triu_indices(k, 1)


def pair_sum(v) -> np.ndarray:
    """v_a + v_b over the pairs of the last axis: the variance of r_a − r_b when the attributes'
    estimates are independent (different people in each attribute)."""
    v = np.asarray(v, dtype=float)
    i, j = pair_index(v.shape[-1])
    return v[..., i] + v[..., j]


def binomial_variance(x, n) -> np.ndarray:
    """var(x/n) ≈ p̃(1 − p̃)/n with p̃ = (x + ½)/(n + 1); x may be fractional (weighted counts)."""
    x, n = np.asarray(x, dtype=float), np.asarray(n, dtype=float)
    p = (x + 0.5) / (n + 1)
    return p * (1 - p) / n


@dataclass(frozen=True)
class Band:
    """A case's pair differences d̂ (P,), their standard errors se (P,) and the bootstrap-t values
    t* = |d* − d̂| / se* (B × P, NaN where a resample lacks an attribute of the pair)."""

    d: np.ndarray
    se: np.ndarray
    t: np.ndarray


def band(estimates, draws, pair_variance, draw_pair_variance) -> Band | None:
    """``Band`` from rates r̂ (k,), bootstrap rates r* (B × k), var(d̂_ab) (P,) and the same per
    resample (B × P). Attributes with a NaN estimate and their pairs are left out; None when fewer
    than two attributes remain."""
    r = np.asarray(estimates, dtype=float)
    if r.size < 2:
        return None
    rb = np.asarray(draws, dtype=float).reshape(-1, r.size)
    v = np.asarray(pair_variance, dtype=float)
    vb = np.asarray(draw_pair_variance, dtype=float).reshape(-1, v.size)
    i, j = pair_index(r.size)
    keep = ~(np.isnan(r[i]) | np.isnan(r[j]))
    if not keep.any():
        return None
    i, j, v, vb = i[keep], j[keep], v[keep], vb[:, keep]
    d = r[i] - r[j]
    dev = np.abs(rb[:, i] - rb[:, j] - d)
    seb = np.sqrt(np.maximum(vb, 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = dev / seb
    flat = ~(seb > 0)  # se* = 0 (or NaN): no spread in this resample; it only counts if it moved (then ∞)
    if flat.any():
        t[flat] = np.where(dev[flat] > 1e-12, np.inf, 0.0)
    t[np.isnan(dev)] = np.nan
    return Band(d, np.sqrt(np.maximum(v, 0)), t)


def _quantile(t: np.ndarray, q: float) -> float:
    """q-quantile of the rows' max (rows without any pair left out); 'higher' so ∞ never interpolates."""
    if t.size and not np.isnan(t).any():  # every resample has every pair: a plain max (the same, faster)
        return float(np.quantile(columns_first(t).max(axis=0), q, method="higher"))
    ok = ~np.isnan(t).all(axis=1)
    if not ok.any():
        return 0.0
    return float(np.quantile(np.nanmax(t[ok], axis=1), q, method="higher"))


def _critical(t: np.ndarray, level: float, df: float | None = None) -> float:
    """c = the level-quantile of max-|t|, never below the pointwise normal quantile — or, when the
    standard errors rest on few units (clusters, agents' p), the Student t quantile with ``df``
    degrees of freedom (∞ below 1 df: one unit says nothing about the spread)."""
    if df is None:
        floor = dist.z(level)
    else:
        floor = float(dist.t_quantile((1 + level) / 2, df)) if df >= 1 else np.inf
    return max(floor, _quantile(t, level))


def _project(b: Band, c: float) -> tuple[float, float]:
    a, half = np.abs(b.d), np.zeros_like(b.se)
    pos = b.se > 0  # se = 0: that pair is known exactly (and ∞ · 0 would be NaN)
    half[pos] = c * b.se[pos]
    return float(max(0.0, (a - half).max())), float(min(1.0, (a + half).max()))


def dpd_interval(estimates, draws, pair_variance, draw_pair_variance, level: float = 0.95,
                 df: float | None = None) -> tuple[float, float]:
    """Interval for DPD = max_a r_a − min_a r_a (module docstring: band, then projection).

    estimates: r̂ (k,); draws: r* (B × k); pair_variance: var(d̂_ab) (P,) in ``pair_index`` order;
    draw_pair_variance: the same formula per resample (B × P). df: when the variances are estimated
    from few independent units (m_a clusters or agents of attribute a), min_a m_a − 1, so that c is at
    least Student's t quantile — the bootstrap alone under-covers with a handful of clusters
    (docs/statistics.md). (NaN, NaN) with fewer than two rates.
    """
    b = band(estimates, draws, pair_variance, draw_pair_variance)
    if b is None:
        return NAN, NAN
    return _project(b, _critical(b.t, level, df))


def studentised(estimates, se, draws, draw_se) -> np.ndarray:
    """t*_bp = |x*_bp − x̂_p| / se*_bp (B × P) for any P smooth statistics x̂ (not only pair differences:
    ``band`` makes those from rates), with ``band``'s rule for se* = 0 (0 if it did not move, else ∞)."""
    x = np.asarray(estimates, dtype=float)
    dev = np.abs(np.asarray(draws, dtype=float).reshape(-1, x.size) - x)
    seb = np.asarray(draw_se, dtype=float).reshape(-1, x.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(seb > 0, dev / np.where(seb > 0, seb, 1), np.where(dev > 1e-12, np.inf, 0.0))
    t[np.isnan(dev)] = np.nan
    return t


def critical(t: np.ndarray, level: float = 0.95, df: float | None = None) -> float:
    """The simultaneous critical value of a max-|t| band over the columns of ``t`` (B × P, any statistics
    together, e.g. several bands that must hold at once): the level-quantile of the rows' max, never below
    the normal quantile (Student's t with ``df``)."""
    return _critical(np.asarray(t, dtype=float), level, df)


def project(b: Band, c: float) -> tuple[float, float]:
    """``dpd_interval``'s projection of a band onto DPD = max |d| at a critical value ``c`` already chosen
    (e.g. ``critical`` of several bands that must hold at once)."""
    return _project(b, c)


def band_interval(b: Band | None, level: float = 0.95, df: float | None = None) -> tuple[float, float]:
    """``dpd_interval`` of a band already made (``band``): its critical value, then the projection."""
    if b is None:
        return NAN, NAN
    return _project(b, _critical(b.t, level, df))


def dpd_p_value(estimates, draws, pair_variance, draw_pair_variance, floor=None) -> float:
    """p-value of H0: DPD = 0 (every attribute's rate the same) that inverts ``dpd_interval``: the
    least α at which the interval at level 1 − α has its lower bound above 0. With the pair farthest
    from 0 in its own standard errors, T = max_ab |d̂_ab| / se_ab, and the band's statistic per
    resample, M*_b = max_ab t*_ab (``band``):

        p = max( p_floor(T),  (1 + #{b: M*_b ≥ T}) / (1 + B') )       (B': resamples with a pair)

    p_floor(T) is the tail of the critical value's floor: 2(1 − Φ(T)) by default, ``floor(T)`` when the
    interval's floor is another (Student's t: 2·t_df.sf(T)). Since lo > 0 ⇔ T > c = max(floor, quantile
    of M*), p < α ⇔ lo > 0 at level 1 − α, up to the +1 that makes a Monte Carlo p-value valid.
    NaN with fewer than two rates; 1 when every d̂ is 0."""
    b = band(estimates, draws, pair_variance, draw_pair_variance)
    if b is None:
        return NAN
    a, pos = np.abs(b.d), b.se > 0
    if (a[~pos] > 0).any():  # a pair known exactly and apart: the projection's lo is above 0 at any level
        T = np.inf
    else:
        T = float((a[pos] / b.se[pos]).max()) if pos.any() else 0.0
    if T == 0:
        return 1.0
    ok = ~np.isnan(b.t).all(axis=1)
    m = np.nanmax(b.t[ok], axis=1) if ok.any() else np.zeros(0)
    boot = (1 + np.count_nonzero(m >= T)) / (1 + m.size)
    tail = floor(T) if floor is not None else (0.0 if np.isinf(T) else float(2 * dist.normal_sf(T)))
    return float(min(1.0, max(tail, boot)))


def dpd_difference_interval(first: Band | None, second: Band | None, level: float = 0.95) -> tuple[float, float]:
    """Interval for DPD_1 − DPD_2 from the two cases' bands (same B; independent or paired resamples).

    One critical value c for both cases' pairs together (the level-quantile of the larger of the two
    max-|t|, so that both bands hold at once), each case projected as in ``dpd_interval``, then
    DPD_1 − DPD_2 ∈ [lo_1 − hi_2, hi_1 − lo_2]. It contains DPD̂_1 − DPD̂_2 and keeps its coverage
    when either DPD is 0, at the price of width (about the sum of the two intervals': conservative).
    """
    if first is None or second is None:
        return NAN, NAN
    c = _critical(np.concatenate([first.t, second.t], axis=1), level)
    lo1, hi1 = _project(first, c)
    lo2, hi2 = _project(second, c)
    return lo1 - hi2, hi1 - lo2


def ratio_variance(w, y, n) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-resampled rates and their linearised (cluster-robust) variances.

    With cluster weights w_c (how often resample b drew cluster c; all 1 for the data), y_ca the
    sum of the outcomes and n_ca the count of attribute a's units in cluster c:
    r_a = Σ_c w_c y_ca / Σ_c w_c n_ca and var(r_a) ≈ Σ_c w_c (y_ca − r_a n_ca)² / (Σ_c w_c n_ca)².
    w: (C,) or (B × C); y, n: (C × k). NaN where attribute a has no unit."""
    return ratio_variance_of(cluster_sums(w, y, n))


def cluster_sums(w, y, n) -> np.ndarray:
    """Σ_c w_c · [y, n, y², y·n, n²]_ca, stacked on a new first axis (5 × … × k): one product that reads the
    B × C weights once, where five read them five times (the bootstrap's weights are its largest array)."""
    w, y, n = (np.asarray(v, dtype=float) for v in (w, y, n))
    k = y.shape[1]
    s = w @ np.hstack([y, n, y * y, y * n, n * n])
    return np.stack([s[..., i * k:(i + 1) * k] for i in range(5)])


def ratio_variance_of(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``ratio_variance`` from its ``cluster_sums``."""
    sy, sn, syy, syn, snn = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(sn > 0, sy / sn, np.nan)
        v = (syy - 2 * r * syn + r * r * snn) / sn ** 2
    return r, np.maximum(v, 0)
