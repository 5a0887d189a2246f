"""A slow, loop-by-loop reference of ``louder.analysis.stats.intervals.dpd_interval`` that tests compare
the vectorised code against (written from the formula in docs/statistics.md, not from the code)."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

from scipy.stats import t as student_t


def reference_dpd_interval(estimate: dict, variance: dict, resamples: list[tuple[dict, dict]],
                           level: float = 0.95, df: int | None = None) -> tuple[float, float]:
    """estimate: attribute → rate; variance: attribute → variance of that rate (independent attributes,
    so var(r_a − r_b) = v_a + v_b); resamples: (rates, variances) per bootstrap resample, an attribute
    the resample did not draw being absent; df: the critical value is at least Student's t on df."""
    pairs = list(itertools.combinations(sorted(estimate), 2))
    t_max = []
    for rates, var in resamples:
        ts = []
        for a, b in pairs:
            if a in rates and b in rates:
                dev = abs((rates[a] - rates[b]) - (estimate[a] - estimate[b]))
                se = math.sqrt(var[a] + var[b])
                ts.append(dev / se if se > 0 else (math.inf if dev > 1e-12 else 0.0))
        if ts:
            t_max.append(max(ts))
    t_max.sort()
    floor = NormalDist().inv_cdf((1 + level) / 2) if df is None else float(student_t.ppf((1 + level) / 2, df))
    c = max(floor, t_max[math.ceil(level * (len(t_max) - 1))])
    lows, highs = [], []
    for a, b in pairs:
        d, se = abs(estimate[a] - estimate[b]), math.sqrt(variance[a] + variance[b])
        lows.append(d - c * se)
        highs.append(d + c * se)
    return max(0.0, max(lows)), min(1.0, max(highs))
