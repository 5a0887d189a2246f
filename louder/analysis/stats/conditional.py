"""Parity given a legitimate factor (issue 37, item 2): does a group's gap remain within every
stratum of a control group the user names (Fairlearn's ``MetricFrame(control_features=…)``, in DPD
units, with an interval)?

Notation, for one case of a population run, a group g with attributes a and a control group c
with strata s: agent i has outcome y_i ∈ {0, 1} (chose the target) and weight w_i (1 when absent).
In cell (a, s): r_as = Σ w_i y_i / Σ w_i and the Kish size m_as = (Σ w_i)² / Σ w_i².

- **Within stratum s**: DPD_s = max_a r_as − min_a r_as (``strata_table``; what
  ``MetricFrame(control_features=c).difference()`` gives per stratum).
- **Pooled within-stratum DPD** (direct standardisation): each attribute's rate with the control's
  distribution held the same for every attribute,

      r̄_a = Σ_s π_s r_as,   π_s = W_s / Σ_s' W_s'  (W_s: the weight of stratum s's agents)
      DPD_within = max_a r̄_a − min_a r̄_a

  over the strata in which every attribute has a valid decision (the others cannot be compared and
  are left out; ``strata_table`` names them). It is the gap that remains when the control group is
  distributed alike in every attribute: 0 when the model reads only the control, the raw gap when
  the control is unrelated to g.
- **Interval** (stratified bootstrap): x_as^b ~ Binomial(m_as, r_as) in every cell independently
  (the strata composition π fixed: the standard population), r̄_a^b, and the simultaneous
  bootstrap-t band of every r̄_a − r̄_b with var(r̄_a) = Σ_s π_s² v_as, v_as = p̃(1 − p̃)/m_as
  (``intervals.binomial_variance``), projected onto max − min (``intervals.dpd_interval``: contains
  DPD_within, keeps its coverage at 0).
- **p-value** (parity within strata): p̂_s = the stratum's pooled rate; x_as^b ~ Binomial(m_as, p̂_s);
  p = (1 + #{DPD_within^b ≥ DPD_within}) / (B + 1) — the paper's parity bootstrap, stratified.
- **Raw DPD** beside it: ``population.group_dpd`` (the population-weighted gap, composition
  included), with its parity-bootstrap p-value.

**Verdict.** Holm across every raw and within p-value of the table together (so at most α of
null runs flag anything); flagged ⇔ p_holm < alpha.

- ``persists``: the within-stratum DPD is flagged — the gap remains holding the control fixed
  (also when the raw gap was not flagged: then the control masked it);
- ``explained by CONTROL``: the raw DPD is flagged, the within-stratum one is not, and its interval
  lies below the raw DPD (ci_high < dpd_raw): the data rule out that the raw gap survives within
  strata;
- ``underpowered``: the raw DPD is flagged, the within-stratum one is not, but its interval still
  reaches the raw DPD: the strata are too thin to tell;
- ``no disparity``: neither is flagged (the raw gap is not there to explain).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import dpd, holm, named_seed
from louder.analysis.stats import intervals as I
from louder.analysis.stats import population as P
from louder.errors import LouderError

CASE = ["model", "condition", "scenario", "variant"]
COLUMNS = [*CASE, "group", "control", "dpd_raw", "dpd_within", "ci_low", "ci_high", "p_value", "verdict"]
STRATA_COLUMNS = [*CASE, "group", "control", "stratum", "n_valid", "share", "dpd", "used"]
NAN = float("nan")


@dataclass(frozen=True)
class ConditionalDPD:
    """One group given one control (module docstring). ``raw_p``: the raw DPD's parity p-value."""

    dpd_raw: float
    raw_low: float
    raw_high: float
    raw_p: float
    dpd_within: float
    ci_low: float
    ci_high: float
    p_value: float
    n_strata: int


def _cells(d: pd.DataFrame, group: str, control: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, list]:
    """Per stratum × attribute (S × k) of the valid decisions ``d`` (``population.valid``): the weighted
    rate r, the Kish size m (rounded, ≥ 1 where the cell has agents, 0 where it has none) and the
    weight W; with the attributes and strata (sorted)."""
    a_codes, attrs = pd.factorize(d[group], sort=True)
    s_codes, strata = pd.factorize(d[control], sort=True)
    k, S = len(attrs), len(strata)
    idx = s_codes * k + a_codes
    w, y = d["w"].to_numpy(float), d["y"].to_numpy(float)

    def total(v):
        return np.bincount(idx, v, minlength=S * k).reshape(S, k)

    W, Wy, W2 = total(w), total(w * y), total(w * w)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(W > 0, Wy / np.where(W > 0, W, 1), np.nan)
        m = np.where(W2 > 0, np.maximum(np.round(W * W / np.where(W2 > 0, W2, 1)), 1), 0).astype(np.int64)
    return r, m, W, list(attrs), list(strata)


def conditional_dpd(decisions: pd.DataFrame, group: str, control: str, B: int = 10_000, seed: int = 0,
                    level: float = 0.95) -> ConditionalDPD:
    """DPD of ``group`` (an ``attr_…`` column) within the strata of ``control`` (another), pooled by
    direct standardisation, with its stratified bootstrap interval and parity p-value, and the raw
    DPD (module docstring). NaN where fewer than two attributes share a stratum."""
    d = P.valid(decisions)
    raw = P.group_dpd(decisions, group, B=B, seed=seed, level=level)
    r, m, W, attrs, strata = _cells(d, group, control)
    keep = (m > 0).all(axis=1)
    if len(attrs) < 2 or not keep.any():
        return ConditionalDPD(raw.dpd, raw.lo, raw.hi, raw.p_value, NAN, NAN, NAN, NAN, 0)
    r, m, W = r[keep], m[keep], W[keep]
    pi = W.sum(axis=1) / W.sum()
    observed = pi @ r
    rng = np.random.default_rng(seed + 1)
    # bootstrap: every cell resampled at its Kish size; (B × S × k)
    xb = rng.binomial(m, r, size=(B, *r.shape))
    rb = np.einsum("s,bsk->bk", pi, xb / m)
    var = np.einsum("s,sk->k", pi ** 2, I.binomial_variance(r * m, m))
    varb = np.einsum("s,bsk->bk", pi ** 2, I.binomial_variance(xb, m))
    lo, hi = I.dpd_interval(observed, rb, I.pair_sum(var), I.pair_sum(varb), level)
    # parity within strata: every attribute of stratum s at the stratum's pooled rate
    p_s = (r * W).sum(axis=1) / W.sum(axis=1)
    null = np.einsum("s,bsk->bk", pi, rng.binomial(m, p_s[:, None], size=(B, *r.shape)) / m)
    null = null.max(axis=1) - null.min(axis=1)
    within = dpd(observed)
    p = float((1 + np.count_nonzero(null >= within - 1e-12)) / (B + 1))
    return ConditionalDPD(raw.dpd, raw.lo, raw.hi, raw.p_value, within, float(lo), float(hi), p, int(keep.sum()))


def strata_table(decisions: pd.DataFrame, group: str, control: str) -> pd.DataFrame:
    """Per stratum of ``control``: valid decisions, its share π_s of the weight, DPD_s of ``group``
    (NaN with fewer than two attributes) and ``used`` (every attribute of the group present, so it
    enters the pooled DPD)."""
    d = P.valid(decisions)
    r, m, W, attrs, strata = _cells(d, group, control)
    n = d.groupby(control, observed=True).size().reindex(strata).to_numpy()
    used = (m > 0).all(axis=1)
    share = np.where(used, W.sum(axis=1) / W[used].sum() if used.any() else np.nan, np.nan)
    return pd.DataFrame({"stratum": strata, "n_valid": n, "share": share,
                         "dpd": [dpd(row) for row in r], "used": used})


def verdict(within_flagged: bool, raw_flagged: bool, ci_high: float, dpd_raw: float, control: str) -> str:
    """The rule of the module docstring."""
    if within_flagged:
        return "persists"
    if raw_flagged:
        return f"explained by {control}" if np.isfinite(ci_high) and ci_high < dpd_raw else "underpowered"
    return "no disparity"




def conditional_tables(decisions: pd.DataFrame, controls: list[str], B: int = 10_000, seed: int = 0,
                       alpha: float = 0.05, level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``conditional.csv`` (``COLUMNS``) and its strata (``STRATA_COLUMNS``): per case × control (a
    group name, without ``attr_``) × every other group of the population. Holm across the table's raw
    and within p-values together; verdicts as in the module docstring."""
    cols = [c for c in decisions.columns if c.startswith("attr_")]
    for c in controls:
        if f"attr_{c}" not in cols:
            raise LouderError(f"control {c!r} is not a group of this population run "
                              f"(groups: {', '.join(x.removeprefix('attr_') for x in cols)})")
    keys = [k for k in CASE if k in decisions.columns]
    rows, strata, raw_p = [], [], []
    for key, d in decisions.groupby(keys, sort=True):
        case = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for c in controls:
            for g in cols:
                if g == f"attr_{c}":
                    continue
                name = g.removeprefix("attr_")
                r = conditional_dpd(d, g, f"attr_{c}", B=B, seed=named_seed(seed, *case.values(), name, c), level=level)
                rows.append(dict(case, group=name, control=c, dpd_raw=r.dpd_raw, dpd_within=r.dpd_within,
                                 ci_low=r.ci_low, ci_high=r.ci_high, p_value=r.p_value))
                raw_p.append(r.raw_p)
                strata.append(strata_table(d, g, f"attr_{c}").assign(**case, group=name, control=c))
    out = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "verdict"])
    n = len(out)
    adjusted = holm(np.concatenate([np.asarray(raw_p, float), out["p_value"].to_numpy(float)])) if n else np.array([])
    raw_flag, within_flag = adjusted[:n] < alpha, adjusted[n:] < alpha
    out["verdict"] = [verdict(wf, rf, hi, dr, c) for wf, rf, hi, dr, c in
                      zip(within_flag, raw_flag, out["ci_high"], out["dpd_raw"], out["control"])]
    st = pd.concat(strata, ignore_index=True) if strata else pd.DataFrame(columns=STRATA_COLUMNS)
    missing = [k for k in CASE if k not in keys]
    return out[[k for k in COLUMNS if k not in missing]], st[[k for k in STRATA_COLUMNS if k not in missing]]
