"""Does a prompt intervention change the disparity? (issue 33; docs/how-to/test-a-mitigation.md)

``interventions.csv``: per case and intervention, the DPD under ``none`` and under the intervention,
the change with its paired-bootstrap interval and the paired permutation test, the side effects (the
overall target-rate shift, the share of agents whose decision changed) and a ``verdict`` —
``reduces``, ``increases``, ``no change`` or ``underpowered``; beside it the explicit probe's DPD under
each intervention where the probe ran under them. Every other table of the analysis reads the
decisions under ``none`` only (``louder.analysis.engine.select``): each agent answers once per intervention,
so pooling them would count one agent's answers as several people.

**Interventions** (``intervention_changes``). The same agents decide under ``none`` and under each
intervention (paired on the agent). Per case (model × condition × scenario × group) and
intervention, over the agents with a valid decision under both, attribute a has values y⁰_i (none)
and y¹_i (intervention): the target decision (0/1), or in score mode p_target. r⁰_a, r¹_a their
means; DPD⁰ = max_a r⁰_a − min_a r⁰_a, DPD¹ likewise; the change Δ = DPD¹ − DPD⁰.

- Interval of Δ: a paired bootstrap over agents (resample b draws n_a agents of attribute a with
  replacement, the same agents under both), each arm's band of pair differences
  (bootstrap-t, ``intervals.band``; variance: ½-smoothed binomial for 0/1 values, plug-in var/n for
  probabilities), one critical value for both, projected: Δ ∈ [lo¹ − hi⁰, hi¹ − lo⁰]
  (``intervals.dpd_difference_interval``: contains Δ and keeps its coverage when either DPD is 0 —
  where the percentile interval of DPD¹* − DPD⁰* does not: 0.88 for a bias of 0.4 that vanishes,
  n = 100; it is conservative, about the sum of the two DPDs' intervals).
- Test (``p_value``): paired sign-flip permutation. Under "the intervention changes nothing" an
  agent's two answers are exchangeable: for b = 1..B swap y⁰_i and y¹_i of each agent with
  probability ½, Δ^b = DPD(swapped¹) − DPD(swapped⁰); p = (1 + #{|Δ^b| ≥ |Δ|}) / (B + 1). Exact under
  that null, and far more powerful than the conservative interval (a bias of 0.4 that vanishes, 100
  agents per attribute: detected in 100 of 100 simulations, against 61 by the interval).
- Side effects: ``rate_shift`` = mean(y¹) − mean(y⁰) over the paired agents, with the percentile
  interval of the same resamples (a difference of means: no boundary); ``changed`` = the share of
  paired agents whose decision (label) differs.
- ``verdict``: ``underpowered`` when an attribute has fewer than ``min_agents`` paired agents;
  else ``reduces`` / ``increases`` when p < alpha and Δ < 0 / Δ > 0; ``underpowered`` when p ≥ alpha
  but the disparity under ``none`` is real (its interval excludes 0) and the interval of Δ still
  reaches −DPD⁰ (the intervention may have removed the whole disparity unseen); else ``no change``.
  The interval bounds the size; the test decides the direction. Where they disagree (``reduces``
  with an interval that covers 0) the change is real but its size is only bounded conservatively.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from louder.analysis.stats import dpd, named_seed
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import CASE_KEYS, is_valid, value_column
from louder.analysis.stats.rates import explicit_attribute_table
from louder.errors import LouderError

COLUMN = "intervention"
NONE = "none"
KEYS = CASE_KEYS
NAN = float("nan")
INTERVENTION_COLUMNS = [*KEYS, "intervention", "n_agents", "dpd_none", "dpd", "dpd_change", "ci_low", "ci_high",
                        "p_value", "rate_shift", "rate_shift_ci_low", "rate_shift_ci_high", "changed", "verdict"]


def levels_of(decisions: pd.DataFrame | None) -> list[str]:
    """The interventions of a run, ``none`` first (the reference), then in order of appearance."""
    if decisions is None or COLUMN not in decisions or decisions.empty:
        return []
    seen = list(decisions[COLUMN].fillna(NONE).astype(str).unique())  # order of appearance, without a Python loop
    return ([NONE] if NONE in seen else []) + [x for x in seen if x != NONE]


def varies(decisions: pd.DataFrame | None) -> bool:
    """Whether the run decided under more than one intervention."""
    return len(levels_of(decisions)) > 1



def _variance(x: np.ndarray, binary: bool) -> np.ndarray:
    """var of the mean over the last axis: ½-smoothed binomial for 0/1 values, plug-in var/n otherwise."""
    n = x.shape[-1]
    return I.binomial_variance(x.sum(-1), n) if binary else x.var(-1) / n


def intervention_contrast(pairs: list[tuple[np.ndarray, np.ndarray]], B: int = 2000, seed: int = 0,
                          level: float = 0.95) -> dict:
    """One case and intervention: ``pairs`` per attribute (y⁰, y¹) over the same agents. Returns
    dpd_none, dpd, dpd_change with its interval, dpd_none's own interval, and the rate shift with its
    interval (module docstring)."""
    binary = all(np.isin(np.concatenate(p), (0.0, 1.0)).all() for p in pairs)
    rng = np.random.default_rng(seed)
    r0, r1 = (np.array([p[j].mean() for p in pairs]) for j in (0, 1))
    v0, v1 = (np.array([_variance(p[j], binary) for p in pairs]) for j in (0, 1))
    b0, b1, bv0, bv1 = (np.empty((B, len(pairs))) for _ in range(4))
    sizes = np.array([p[0].size for p in pairs])
    for a, (y0, y1) in enumerate(pairs):
        idx = rng.integers(0, y0.size, size=(B, y0.size))  # the same agents under both
        s0, s1 = y0[idx], y1[idx]
        b0[:, a], b1[:, a], bv0[:, a], bv1[:, a] = s0.mean(1), s1.mean(1), _variance(s0, binary), _variance(s1, binary)
    band0 = I.band(r0, b0, I.pair_sum(v0), I.pair_sum(bv0))
    band1 = I.band(r1, b1, I.pair_sum(v1), I.pair_sum(bv1))
    lo, hi = I.dpd_difference_interval(band1, band0, level)
    lo0, hi0 = I.dpd_interval(r0, b0, I.pair_sum(v0), I.pair_sum(bv0), level)
    # sign-flip permutation test: under "the intervention changes nothing" y⁰_i and y¹_i are exchangeable
    flips = [rng.random((B, p[0].size)) < 0.5 for p in pairs]
    f0 = np.column_stack([np.where(f, y1, y0).mean(1) for f, (y0, y1) in zip(flips, pairs)])
    f1 = np.column_stack([np.where(f, y0, y1).mean(1) for f, (y0, y1) in zip(flips, pairs)])
    null = (f1.max(1) - f1.min(1)) - (f0.max(1) - f0.min(1))
    change = dpd(r1) - dpd(r0)
    p_value = float((1 + np.count_nonzero(np.abs(null) >= abs(change) - 1e-12)) / (B + 1))
    shift = float((r1 - r0) @ sizes / sizes.sum())
    shifts = (b1 - b0) @ sizes / sizes.sum()
    s_lo, s_hi = np.quantile(shifts, [(1 - level) / 2, (1 + level) / 2])
    return dict(dpd_none=dpd(r0), dpd=dpd(r1), dpd_change=change, ci_low=lo, ci_high=hi, p_value=p_value,
                dpd_none_low=lo0, dpd_none_high=hi0, rate_shift=shift, rate_shift_ci_low=float(min(s_lo, shift)),
                rate_shift_ci_high=float(max(s_hi, shift)))


def intervention_verdict(change: float, p_value: float, lo: float, dpd_none: float, dpd_none_low: float,
                         enough: bool, alpha: float = 0.05) -> str:
    """The rule of the module docstring."""
    if not enough or not (np.isfinite(lo) and np.isfinite(p_value)):
        return "underpowered"
    if p_value < alpha:
        return "reduces" if change < 0 else "increases"
    if dpd_none_low > 0 and lo <= -dpd_none:
        return "underpowered"
    return "no change"


def intervention_changes(decisions: pd.DataFrame, none: str = "none", value: str = "auto", B: int = 2000,
                       seed: int = 0, level: float = 0.95, alpha: float = 0.05, min_agents: int = 10,
                       agent_keys: Sequence[str] = ("agent_id", "replicate")) -> pd.DataFrame:
    """``interventions.csv`` (``INTERVENTION_COLUMNS``): per case × intervention other than ``none``.

    ``decisions``: a run's decisions with ``intervention`` (the id; ``none`` the baseline), the case
    keys, ``attribute``, ``status``, ``target`` (and ``p_target`` in score mode; ``value`` picks it by
    default when present), ``decision`` (the label, for ``changed``) and the agent keys present among
    ``agent_keys``. Agents are paired on the case keys, attribute and agent keys; only agents valid
    under both enter (the run's accounting counts the rest)."""
    col = value_column(decisions, value)
    akeys = [k for k in agent_keys if k in decisions.columns]
    d = decisions[is_valid(decisions) & decisions[col].notna()]
    d = d.assign(_y=d[col].astype(float))
    cols = ["_y"] + (["decision"] if "decision" in d.columns else [])
    rows = []
    join = [*KEYS, "attribute", *akeys]
    if not (decisions["intervention"] == none).any():
        raise LouderError(f"interventions: no decisions under {none!r}, the baseline every intervention is compared "
                          f"with; add {none!r} to the run's interventions")
    base = d[d["intervention"] == none].set_index(join)[cols]
    if base.index.duplicated().any():
        raise LouderError(f"interventions: agents are not unique by {', '.join(join)}; pass agent_keys= naming "
                          "the columns that identify an agent")
    for (iv, *key), g in d[d["intervention"] != none].groupby(["intervention", *KEYS], sort=True):
        paired = g.set_index(join)[cols].add_suffix("_1").join(base.add_suffix("_0"), how="inner").reset_index()
        by_attr = [(a["_y_0"].to_numpy(float), a["_y_1"].to_numpy(float))
                   for _, a in paired.groupby("attribute", sort=True)]
        case = dict(zip(KEYS, key), intervention=iv, n_agents=len(paired))
        if len(by_attr) < 2:
            rows.append(dict(case, verdict="underpowered"))
            continue
        c = intervention_contrast(by_attr, B=B, seed=named_seed(seed, iv, *key), level=level)
        label = cols[-1]  # the decision label where the table has one, else the value itself
        enough = min(p[0].size for p in by_attr) >= min_agents
        rows.append(dict(case, **{k: c[k] for k in ("dpd_none", "dpd", "dpd_change", "ci_low", "ci_high", "p_value",
                                                    "rate_shift",
                                                    "rate_shift_ci_low", "rate_shift_ci_high")},
                         changed=float((paired[f"{label}_0"] != paired[f"{label}_1"]).mean()),
                         verdict=intervention_verdict(c["dpd_change"], c["p_value"], c["ci_low"], c["dpd_none"],
                                                      c["dpd_none_low"], enough, alpha)))
    return pd.DataFrame(rows, columns=INTERVENTION_COLUMNS)


# interventions.csv: the statistics' columns, then the explicit side effect, then the verdict
COLUMNS = [*INTERVENTION_COLUMNS[:-1], "explicit_dpd_none", "explicit_dpd", "verdict"]


def explicit_dpds(probes: pd.DataFrame | None, attributes: dict[str, list[str]]) -> pd.DataFrame:
    """The explicit DPD (largest − smallest share of valid answers naming an attribute, cases.csv's
    explicit ``dpd``) per model × scenario × group × intervention of the explicit probes."""
    cols = ["model", "scenario", "group", COLUMN, "explicit_dpd"]
    if probes is None or probes.empty:
        return pd.DataFrame(columns=cols)
    p = probes.assign(**{COLUMN: probes[COLUMN].fillna(NONE).astype(str) if COLUMN in probes else NONE})
    rows = []
    for iv, g in p.groupby(COLUMN, sort=True):
        a = explicit_attribute_table(g, attributes)
        for key, r in a.groupby(["model", "scenario", "group"]):
            rates = r["rate"].dropna()
            rows.append(dict(zip(cols, (*key, iv, float(rates.max() - rates.min()) if len(rates) else np.nan))))
    return pd.DataFrame(rows, columns=cols)


def interventions_table(decisions: pd.DataFrame, B: int = 2000, seed: int = 0, probes: pd.DataFrame | None = None,
                        attributes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """``interventions.csv`` of a run's decisions (every intervention; one wording, one reasoning level and
    round 0 already chosen by the caller, population runs once per group of the population), with the
    explicit DPD under none and under the intervention where the explicit probes ran under it. A run
    without ``none`` has no baseline: no rows."""
    d = decisions.assign(**{COLUMN: decisions[COLUMN].fillna(NONE).astype(str)})
    if NONE not in set(d[COLUMN]):
        return pd.DataFrame(columns=COLUMNS)
    t = intervention_changes(d, none=NONE, B=B, seed=seed)
    ex = explicit_dpds(probes, attributes or {})
    keys = ["model", "scenario", "group"]
    none = ex[ex[COLUMN] == NONE].drop(columns=COLUMN).rename(columns={"explicit_dpd": "explicit_dpd_none"})
    t = t.merge(none, on=keys, how="left").merge(ex, on=[*keys, COLUMN], how="left")
    return t[COLUMNS]
