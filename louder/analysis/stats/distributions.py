"""The normal, Student t and χ² quantiles and tails the statistics use: scipy.special's functions, which are
what ``scipy.stats.norm``, ``t`` and ``chi2`` evaluate (the same values: tests/test_stats.py), without
importing scipy.stats — ~0.7 s, a fifth of a cold ``louder analyze`` that needs nothing else of it. (scipy.special
itself is imported at the first call: ``louder``'s CLI imports this module and mostly needs none of it.)

- ``z(level)`` = Φ⁻¹((1 + level)/2), the two-sided normal critical value (1.959964 at 0.95);
- ``normal_quantile(q)`` = Φ⁻¹(q); ``normal_sf(x)`` = 1 − Φ(x) = Φ(−x), accurate far in the tail;
- ``t_quantile(q, df)`` = F_df⁻¹(q), Student's t (df may be fractional or ∞); ``t_sf(x, df)`` = 1 − F_df(x);
- ``chi2_sf(x, df)`` = P(χ²_df > x).
"""

from __future__ import annotations

import numpy as np


def normal_quantile(q):
    """Φ⁻¹(q): −∞ at 0, ∞ at 1, NaN outside [0, 1]."""
    from scipy import special

    return special.ndtri(q)


def z(level: float) -> float:
    """Φ⁻¹((1 + level)/2): the normal critical value of a two-sided interval at ``level``."""
    return float(normal_quantile((1 + level) / 2))


def normal_sf(x):
    """1 − Φ(x), computed as Φ(−x) (no cancellation in the upper tail)."""
    from scipy import special

    return special.ndtr(-np.asarray(x, dtype=float))


def t_quantile(q, df):
    """Student t quantile with ``df`` degrees of freedom (−∞ at q = 0, where scipy.special's own answer is +∞)."""
    from scipy import special

    q = np.asarray(q, dtype=float)
    out = np.where(q == 0, -np.inf, special.stdtrit(df, q))
    return float(out) if out.ndim == 0 else out


def t_sf(x, df):
    """1 − F_df(x) for Student's t, computed as F_df(−x)."""
    from scipy import special

    return special.stdtr(df, -np.asarray(x, dtype=float))


def chi2_sf(x, df):
    """P(χ²_df > x)."""
    from scipy import special

    return special.chdtrc(df, x)
