"""The reference code the betting confidence sequence of ``louder.analysis.stats.sequential`` is checked
against: ``hedged_cs`` of confseq 0.0.11 (Waudby-Smith, Ramdas et al., MIT License, Copyright (c) 2021
confseq developers; https://github.com/gostevehoward/confseq, src/confseq/betting.py,
betting_strategies.py, misc.py), reduced to the path ``hedged_cs`` takes (with replacement, max of
the two capital processes, m-truncation) and kept loop-by-loop as written there. confseq itself no
longer installs (no wheels; a C++ build needing Boost; ``np.float_`` under NumPy 2), so the few
functions are copied here for the test, one grid point m at a time."""

from __future__ import annotations

import math

import numpy as np


def lambda_predmix_eb(x, alpha=0.05, prior_mean=0.5, prior_variance=0.25, fake_obs=1):
    t = np.arange(1, len(x) + 1)
    mu_hat_t = np.minimum((fake_obs * prior_mean + np.cumsum(x)) / (t + fake_obs), 1)
    sigma2_t = (fake_obs * prior_variance + np.cumsum(np.power(x - mu_hat_t, 2))) / (t + fake_obs)
    sigma2_tminus1 = np.append(prior_variance, sigma2_t[0:(len(x) - 1)])
    lambdas = np.sqrt(2 * np.log(1 / alpha) / (t * np.log(1 + t) * sigma2_tminus1))
    lambdas[np.isnan(lambdas)] = 0
    return lambdas


def betting_mart(x, m, alpha=0.05, theta=0.5, trunc_scale=0.5):
    mu_t = np.repeat(m, len(x))
    with np.errstate(divide="ignore"):
        lp = np.minimum(lambda_predmix_eb(x, alpha=alpha * theta), trunc_scale / mu_t)
        lp = np.maximum(lp, -trunc_scale / (1 - mu_t))
        ln = np.minimum(lambda_predmix_eb(x, alpha=alpha * (1 - theta)), trunc_scale / (1 - mu_t))
        ln = np.maximum(ln, -trunc_scale / mu_t)
    mp = 1 + lp * (x - mu_t)
    mp[np.logical_and(lp == math.inf, x - mu_t == 0)] = 1
    mn = 1 - ln * (x - mu_t)
    mn[np.logical_and(ln == math.inf, x - mu_t == 0)] = 1
    cp, cn = np.cumprod(mp), np.cumprod(mn)
    cp[np.isnan(cp)] = 0
    cn[np.isnan(cn)] = 0
    return np.maximum(theta * cp, (1 - theta) * cn)


def hedged_cs(x, alpha=0.05, breaks=1000):
    """(l, u) after every observation, as confseq's ``hedged_cs(x, alpha, breaks, running_intersection=False)``."""
    x = np.asarray(x, dtype=float)
    possible_m = np.arange(0, 1 + 1 / breaks, step=1 / breaks)
    inside = np.zeros((len(possible_m), len(x)), dtype=bool)
    for i, m in enumerate(possible_m):
        inside[i, :] = betting_mart(x, m, alpha=alpha) <= 1 / alpha
    lo, hi = np.zeros(len(x)), np.ones(len(x))
    for j in range(len(x)):
        where = np.where(inside[:, j])[0]
        if len(where):
            lo[j], hi[j] = possible_m[where[0]], possible_m[where[-1]]
    return np.maximum(0, lo - 1 / breaks), np.minimum(1, hi + 1 / breaks)
