"""Responsible adjustment (issue 33): does a prompt intervention change the disparity, what logit
offsets calibrate the agents to parity or to observed rates, and does a policy conclusion survive
the model's bias?

**Interventions** (``intervention_table``). The same agents decide under ``none`` and under each
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

**Calibration offsets** (``calibration_offsets``, ``apply_offsets``). Agent i of attribute a has the
logit ℓ_i = logit p_i of the target choice. An offset δ_a shifts it: p'_i = expit(ℓ_i + δ_a). The
offsets solve, for every attribute,

    Σ_{i ∈ a} w_i expit(ℓ_i + δ_a) / Σ_{i ∈ a} w_i = t_a

with t_a = the pooled mean p̄ = Σ w p / Σ w of the case (``to="parity"``: afterwards every attribute's
mean adjusted probability is p̄, so their DPD is 0 up to the solver's 1e-10, and the overall rate
stays p̄) or the observed rate of a (``to="observed"``). Each equation is monotone in δ_a: one root.
(Shifting each attribute's mean *logit* to the pooled mean logit would leave a DPD of a few points
wherever the attributes' spreads differ — Jensen — so the offsets solve the equation itself.)
With several groups at once (a population run) the offsets add over groups, ℓ_i + Σ_g δ_{g, a_g(i)},
and are solved by raking: Newton steps on each group's equations in turn until no offset moves by
1e-10 (parity targets are always consistent; observed targets of different groups may not be, and
the residual is reported).

Sample mode stores no probabilities, only decisions. There ℓ_i is the logit of the agent's cell
rate (cell: its attribute, or its attributes in every group; ½-smoothed: (x + ½)/(n + 1)), so the
offsets move each attribute's *rate* exactly — δ_a = logit t_a − logit r̃_a for one group — and that
is all they can do: applied to an agent whose own probability differs from its cell's rate, the
attribute's mean moves by a different amount (by how much depends on the spread of the agents'
probabilities, which sampled decisions do not show). They calibrate rates, not individual agents;
run in score mode to calibrate agents.

**Policy sensitivity** (``sensitivity_table``). A population run with variants: each variant's
effect, rate(variant) − rate(base), overall and per attribute of every group, under ``raw`` agents
(p_i, or the decisions y_i in sample mode), ``parity`` and ``observed`` agents (offsets fitted on the
base variant, applied to every variant: one calibrated agent deciding each policy). Interval: a
bootstrap over agents, each variant's agents resampled independently, the offsets refitted on every
resample's base (their uncertainty included); percentile interval (a difference of means). A
conclusion is the sign class of an effect: ``raises`` (interval above 0), ``lowers`` (below), ``no
clear effect`` (covers 0). ``verdict``: ``holds`` when the class is the same under every agent set,
else ``depends on the model's bias``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from louder.analysis import intervals as I
from louder.analysis.keys import CASE_KEYS, is_valid
from louder.analysis.stats import dpd
from louder.errors import LouderError

KEYS = CASE_KEYS  # the case (louder.analysis.keys)
INTERVENTION_COLUMNS = [*KEYS, "intervention", "n_agents", "dpd_none", "dpd", "dpd_change", "ci_low", "ci_high",
                        "p_value", "rate_shift", "rate_shift_ci_low", "rate_shift_ci_high", "changed", "verdict"]
OFFSET_COLUMNS = ["group", "attribute", "source", "to", "n", "rate", "target", "offset", "se", "rate_adjusted"]
SENSITIVITY_COLUMNS = ["model", "condition", "scenario", "variant", "base", "agents", "group", "attribute", "rate_base",
                       "rate_variant", "effect", "ci_low", "ci_high", "verdict"]
P_CLIP = 1e-6
NAN = float("nan")


def _seed(seed: int, *parts) -> int:
    return int(np.random.SeedSequence([seed, *[zlib.crc32(str(p).encode()) for p in parts]]).generate_state(1)[0])


def _value_column(d: pd.DataFrame, value: str) -> str:
    if value != "auto":
        return value
    return "p_target" if "p_target" in d.columns and d["p_target"].notna().any() else "target"


# --- interventions -----------------------------------------------------------------------------------

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


def intervention_table(decisions: pd.DataFrame, none: str = "none", value: str = "auto", B: int = 2000,
                       seed: int = 0, level: float = 0.95, alpha: float = 0.05, min_agents: int = 10,
                       agent_keys: Sequence[str] = ("agent_id", "replicate")) -> pd.DataFrame:
    """``interventions.csv`` (``INTERVENTION_COLUMNS``): per case × intervention other than ``none``.

    ``decisions``: a run's decisions with ``intervention`` (the id; ``none`` the baseline), the case
    keys, ``attribute``, ``status``, ``target`` (and ``p_target`` in score mode; ``value`` picks it by
    default when present), ``decision`` (the label, for ``changed``) and the agent keys present among
    ``agent_keys``. Agents are paired on the case keys, attribute and agent keys; only agents valid
    under both enter (the run's accounting counts the rest)."""
    col = _value_column(decisions, value)
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
        c = intervention_contrast(by_attr, B=B, seed=_seed(seed, iv, *key), level=level)
        label = cols[-1]  # the decision label where the table has one, else the value itself
        enough = min(p[0].size for p in by_attr) >= min_agents
        rows.append(dict(case, **{k: c[k] for k in ("dpd_none", "dpd", "dpd_change", "ci_low", "ci_high", "p_value",
                                                    "rate_shift",
                                                    "rate_shift_ci_low", "rate_shift_ci_high")},
                         changed=float((paired[f"{label}_0"] != paired[f"{label}_1"]).mean()),
                         verdict=intervention_verdict(c["dpd_change"], c["p_value"], c["ci_low"], c["dpd_none"],
                                                      c["dpd_none_low"], enough, alpha)))
    return pd.DataFrame(rows, columns=INTERVENTION_COLUMNS)


# --- calibration offsets -----------------------------------------------------------------------------

def _sums(X: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
    """Σ over the agents of each attribute (columns ``members[a]``), per row: (R × n) → (R × k)."""
    return np.column_stack([X[:, m].sum(axis=1) for m in members])


def _solve_group(base: np.ndarray, W: np.ndarray, c: np.ndarray, t: np.ndarray, start: np.ndarray,
                 tol: float) -> np.ndarray:
    """δ (R × k) with Σ_{i ∈ a} W expit(base + δ_a) / Σ_{i ∈ a} W = t_a for every row and attribute: each
    equation is increasing in its own δ_a, so safeguarded Newton (a bisection step whenever Newton
    would leave the bracket [lo, hi] known to hold the root) converges for any start."""
    members = [np.flatnonzero(c == a) for a in range(t.shape[1])]
    den = _sums(W, members)
    live = den > 0
    lo, hi = np.full(start.shape, -40.0), np.full(start.shape, 40.0)
    delta = np.clip(start, lo, hi)
    for _ in range(200):
        s = expit(base + delta[:, c])
        ws = W * s
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(live, _sums(ws, members) / den - t, 0.0)
            slope = np.where(live, _sums(ws * (1 - s), members) / den, 0.0)
            lo, hi = np.where(f < 0, delta, lo), np.where(f > 0, delta, hi)
            newton = delta - f / slope
        new = np.where((slope > 0) & (newton > lo) & (newton < hi), newton, (lo + hi) / 2)
        new = np.where(live, new, 0.0)
        done = np.abs(new - delta).max() < tol
        delta = new
        if done:
            break
    return delta


def rake(L: np.ndarray, W: np.ndarray, codes: list[np.ndarray], targets: list[np.ndarray], tol: float = 1e-10,
         max_cycles: int = 500) -> tuple[list[np.ndarray], float]:
    """Offsets δ_g (R × k_g) with Σ_{i: a_g(i) = a} W_ri expit(L_ri + Σ_g δ_{g,r,a_g(i)}) / Σ W_ri = targets_g[r, a]
    for every group g and attribute a, for each of R rows (the data, or bootstrap resamples) at once.

    Raking on the logit scale: each group's equations solved exactly in turn (``_solve_group``, the
    other groups' offsets held), cycling until no offset moves by ``tol``. One group: one pass.
    ``codes``: each agent's attribute index per group; ``targets``: (R × k_g) or (k_g,). Returns the
    offsets and the largest remaining |mean − target| (0 up to the tolerance when the targets are
    consistent, as parity's always are). Attributes without weight get 0."""
    R = L.shape[0]
    sizes = [int(np.asarray(t).shape[-1]) for t in targets]
    ts = [np.broadcast_to(np.asarray(t, dtype=float), (R, k)) for t, k in zip(targets, sizes)]
    deltas = [np.zeros((R, k)) for k in sizes]
    eta = np.array(L, dtype=float)
    for _ in range(max_cycles if len(sizes) > 1 else 1):
        moved = 0.0
        for g, (c, t) in enumerate(zip(codes, ts)):
            base = eta - deltas[g][:, c]
            new = _solve_group(base, W, c, t, deltas[g], tol)
            moved = max(moved, float(np.abs(new - deltas[g]).max()))
            deltas[g] = new
            eta = base + new[:, c]
        if moved < tol:
            break
    s = expit(eta)
    residual = 0.0
    for c, t in zip(codes, ts):
        members = [np.flatnonzero(c == a) for a in range(t.shape[1])]
        den = _sums(W, members)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(den > 0, np.abs(_sums(W * s, members) / den - t), 0.0)
        residual = max(residual, float(r.max()) if r.size else 0.0)
    return deltas, residual


def _logits(p: np.ndarray) -> np.ndarray:
    return logit(np.clip(p, P_CLIP, 1 - P_CLIP))


def _cell_logits(y: np.ndarray, W: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Sample mode: per row of weights W (R × n), each agent's cell rate, ½-smoothed and on the logit
    scale: logit((x_c + ½)/(n_c + 1)) with x_c = Σ_{i ∈ c} W y, n_c = Σ_{i ∈ c} W."""
    members = [np.flatnonzero(cells == c) for c in range(int(cells.max()) + 1)]
    x, n = _sums(W * y, members), _sums(W, members)
    return logit((x + 0.5) / (n + 1))[:, cells]


def _codes(values: pd.Series, levels: list) -> np.ndarray:
    return pd.Index(levels).get_indexer(values)


def _groups_of(d: pd.DataFrame) -> list[str]:
    """The attribute columns: every ``attr_<group>`` of a population run, else ``attribute``."""
    cols = [c for c in d.columns if c.startswith("attr_")]
    return cols or ["attribute"]


def _observed_targets(observed: pd.DataFrame | None, scenario, group: str, levels: list) -> np.ndarray:
    if observed is None:
        raise LouderError("calibration to observed rates needs a table of observed rates (columns group, attribute, "
                          "rate; optionally scenario)")
    o = observed
    if "scenario" in o.columns:
        o = o[o["scenario"].isna() | (o["scenario"] == scenario)]
    o = o[o["group"] == group].set_index("attribute")["rate"]
    missing = [a for a in levels if a not in o.index]
    if missing:
        raise LouderError(f"observed rates: no rate for {group} = {', '.join(map(str, missing))}"
                          f"{f' in scenario {scenario}' if scenario else ''}; add a row for each attribute")
    return np.clip(o.reindex(levels).to_numpy(dtype=float), P_CLIP, 1 - P_CLIP)


def _fit(L: np.ndarray, W: np.ndarray, codes: list[np.ndarray], levels: list[list], to: str,
         observed: pd.DataFrame | None, scenario, names: list[str], p_for_parity: np.ndarray):
    """Targets for ``to`` and the raked offsets, for rows of L/W."""
    if to == "parity":
        pooled = (W * p_for_parity).sum(1) / W.sum(1)
        targets = [np.repeat(pooled[:, None], len(lv), axis=1) for lv in levels]
    elif to == "observed":
        targets = [_observed_targets(observed, scenario, n, lv) for n, lv in zip(names, levels)]
    else:
        raise LouderError(f"adjust to {to!r}: use parity or observed")
    deltas, residual = rake(L, W, codes, targets)
    return deltas, targets, residual


def _offset_se(y: np.ndarray, adjusted: np.ndarray, w: np.ndarray, source: str) -> float:
    """Standard error of one offset from its attribute's agents (delta method, weights at their Kish
    size m): score mode sd(p'_i)/√m ÷ mean p'(1 − p') — the error of the attribute's mean moved
    onto the logit scale by the slope of the equation; sample mode the se of a logit rate,
    1/√(m r̃(1 − r̃)). Offsets fitted on m agents leave a residual disparity of this order: a
    re-run as large as the calibration run flags it well above α of the time (docs/statistics.md)."""
    m = float(w.sum() ** 2 / (w * w).sum())
    if source == "sample":
        r = (float(w @ y) / w.sum() * m + 0.5) / (m + 1)
        return float(1 / np.sqrt(m * r * (1 - r)))
    wn = w / w.sum()
    mean = float(wn @ adjusted)
    sd = float(np.sqrt(wn @ (adjusted - mean) ** 2))
    slope = float(wn @ (adjusted * (1 - adjusted)))
    return sd / np.sqrt(m) / slope if slope > 0 else NAN


def calibration_offsets(decisions: pd.DataFrame, to: str = "parity", observed: pd.DataFrame | None = None,
                        value: str = "auto", by: Sequence[str] = ("model", "scenario"),
                        base_variant: str | None = "base") -> pd.DataFrame:
    """Offsets per ``by`` key × group × attribute (module docstring): columns ``[*by, *OFFSET_COLUMNS]``
    with the attribute's valid agents ``n``, its mean ``rate`` before, the ``target`` and its mean
    ``rate_adjusted`` after, and the offset's standard error ``se`` (``_offset_se``). ``source`` says
    ``score`` (from probabilities) or ``sample`` (from rates).
    A population run (``attr_<group>`` columns) is calibrated on all its groups at once, on the rows
    of ``base_variant`` when there are variants. ``observed``: group, attribute, rate (and optionally
    scenario) for ``to="observed"``. A ``condition`` that varies must be in ``by``."""
    by = list(by)
    for k in ("condition",):
        if k in decisions.columns and k not in by and decisions[k].nunique() > 1:
            raise LouderError(f"calibration: the decisions have several {k}s; add {k!r} to by= or pass one {k}")
    col = _value_column(decisions, value)
    source = "score" if col == "p_target" else "sample"
    d = decisions[is_valid(decisions) & decisions[col].notna()]
    if "variant" in d.columns and d["variant"].nunique() > 1:
        variants = list(dict.fromkeys(d["variant"]))
        d = d[d["variant"] == (base_variant if base_variant in variants else variants[0])]
    attr_cols = _groups_of(d)
    case_keys = by + (["group"] if attr_cols == ["attribute"] else [])
    rows = []
    for key, g in d.groupby(case_keys, sort=True):
        case = dict(zip(case_keys, key if isinstance(key, tuple) else (key,)))
        names = [case["group"]] if attr_cols == ["attribute"] else [c.removeprefix("attr_") for c in attr_cols]
        y = g[col].to_numpy(float)
        W = (g["weight"].to_numpy(float) if "weight" in g.columns else np.ones(len(g)))[None, :]
        levels = [sorted(set(g[c])) for c in attr_cols]
        codes = [_codes(g[c], lv) for c, lv in zip(attr_cols, levels)]
        if source == "score":
            L = _logits(y)[None, :]
        else:
            cells = pd.MultiIndex.from_frame(g[attr_cols]).factorize()[0] if len(attr_cols) > 1 else codes[0]
            L = _cell_logits(y, W, cells)
        deltas, targets, _ = _fit(L, W, codes, levels, to, observed, case.get("scenario"), names, y[None, :])
        eta = L[0] + sum(dl[0][c] for dl, c in zip(deltas, codes))
        adjusted = expit(eta)
        for name, c, lv, dl, t in zip(names, codes, levels, deltas, targets):
            t = np.asarray(t).reshape(-1, len(lv))[0]
            for j, a in enumerate(lv):
                m = c == j
                w = W[0][m]
                rows.append(dict({k: v for k, v in case.items() if k != "group"}, group=name, attribute=a,
                                 source=source, to=to, n=int(m.sum()), rate=float(w @ y[m] / w.sum()),
                                 target=float(t[j]), offset=float(dl[0, j]), se=_offset_se(y[m], adjusted[m], w, source),
                                 rate_adjusted=float(w @ adjusted[m] / w.sum())))
    return pd.DataFrame(rows, columns=[*by, *OFFSET_COLUMNS])


def adjust_probability(p, offset) -> np.ndarray:
    """p' = expit(logit p + δ) (p clipped to [1e-6, 1 − 1e-6] first)."""
    return expit(_logits(np.asarray(p, dtype=float)) + np.asarray(offset, dtype=float))


def apply_offsets(probabilities, target: int, offset) -> np.ndarray:
    """A choice distribution after the offset: the target choice's probability becomes
    p'_t = expit(logit p_t + δ); the other choices share 1 − p'_t in their old proportions
    (p'_j = p_j (1 − p'_t)/(1 − p_t); equally when p_t was 1). ``probabilities``: (…, C) rows summing
    to 1; ``offset``: a number or one per row."""
    p = np.asarray(probabilities, dtype=float)
    pt = p[..., target]
    new_t = adjust_probability(pt, offset)
    rest = 1 - pt
    others = np.delete(p, target, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(rest[..., None] > 0, others * ((1 - new_t) / np.where(rest > 0, rest, 1))[..., None],
                          ((1 - new_t) / max(p.shape[-1] - 1, 1))[..., None])
    return np.insert(scaled, target, new_t, axis=-1)


# --- policy sensitivity ------------------------------------------------------------------------------

def conclusion(lo: float, hi: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "cannot be judged"
    return "raises" if lo > 0 else "lowers" if hi < 0 else "no clear effect"


def sensitivity_table(decisions: pd.DataFrame, observed: pd.DataFrame | None = None, base: str | None = None,
                      value: str = "auto", B: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """``sensitivity.csv`` (``SENSITIVITY_COLUMNS``): per case (model × condition × scenario), variant ≠
    ``base`` (default "base", else the first variant), agent set (``raw``, ``parity``, and ``observed``
    when ``observed`` rates are given) and effect (overall: group and attribute "(all)"; per attribute
    of every group), the effect with its bootstrap interval and the verdict (module docstring).

    ``decisions``: a population run's decisions with ``variant``, ``attr_<group>`` columns (or
    ``attribute`` with ``group``, one group), ``status``, ``target`` / ``p_target``, ``weight``."""
    col = _value_column(decisions, value)
    score = col == "p_target"
    d = decisions[is_valid(decisions) & decisions[col].notna()]
    attr_cols = _groups_of(d)
    case_keys = [k for k in ("model", "condition", "scenario") if k in d.columns]
    if attr_cols == ["attribute"] and d["group"].nunique() > 1:
        case_keys.append("group")
    sets = ["raw", "parity"] + (["observed"] if observed is not None else [])
    out = []
    for key, g in d.groupby(case_keys, sort=True):
        case = dict(zip(case_keys, key if isinstance(key, tuple) else (key,)))
        variants = list(dict.fromkeys(g["variant"]))
        b = base if base is not None else ("base" if "base" in variants else variants[0])
        if b not in variants or len(variants) < 2:
            continue
        names = [case.get("group", "")] if attr_cols == ["attribute"] else [c.removeprefix("attr_") for c in attr_cols]
        levels = [sorted(set(g[c])) for c in attr_cols]
        out += _sensitivity_case(g, case, b, [v for v in variants if v != b], attr_cols, names, levels, col, score,
                                 sets, observed, B, _seed(seed, *case.values()), level)
    t = pd.DataFrame(out)
    if t.empty:
        return pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    keys = ["model", "condition", "scenario", "variant", "group", "attribute"]
    keys = [k for k in keys if k in t.columns]
    t["verdict"] = t.groupby(keys, dropna=False)["_class"].transform(
        lambda s: "holds" if s.nunique() == 1 and "cannot be judged" not in set(s) else "depends on the model's bias")
    return t[[c for c in SENSITIVITY_COLUMNS if c in t.columns]]


def _sensitivity_case(g, case, base, others, attr_cols, names, levels, col, score, sets, observed, B, seed, level):
    rng = np.random.default_rng(seed)
    arms = {}
    for v in [base, *others]:
        r = g[g["variant"] == v]
        y = r[col].to_numpy(float)
        w = r["weight"].to_numpy(float) if "weight" in r.columns else np.ones(len(r))
        codes = [_codes(r[c], lv) for c, lv in zip(attr_cols, levels)]
        cells = pd.MultiIndex.from_frame(r[attr_cols]).factorize()[0] if len(attr_cols) > 1 else codes[0]
        # row 0: the data; rows 1..B: resamples of this variant's agents (counts as weights)
        counts = np.vstack([np.ones(len(r)), rng.multinomial(len(r), np.full(len(r), 1 / len(r)), size=B)])
        arms[v] = dict(y=y, W=counts * w, codes=codes, cells=cells)

    def logits(arm):
        return np.broadcast_to(_logits(arm["y"]), arm["W"].shape) if score else _cell_logits(arm["y"], arm["W"],
                                                                                               arm["cells"])

    def rates(arm, p):  # (R,) overall and per group (R × k_g)
        W = arm["W"]
        overall = (W * p).sum(1) / W.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            per = [_sums(W * p, m) / _sums(W, m) for m in
                   ([np.flatnonzero(c == a) for a in range(len(lv))] for c, lv in zip(arm["codes"], levels))]
        return overall, per

    results = {}
    for s in sets:
        if s == "raw":
            p = {v: np.broadcast_to(a["y"], a["W"].shape) for v, a in arms.items()}
        else:
            a0 = arms[base]
            L0 = logits(a0)
            deltas, _, _ = _fit(L0, a0["W"], a0["codes"], levels, s, observed, case.get("scenario"), names,
                                np.broadcast_to(a0["y"], a0["W"].shape))
            p = {v: expit(logits(a) + sum(dl[:, c] for dl, c in zip(deltas, a["codes"]))) for v, a in arms.items()}
        results[s] = {v: rates(a, p[v]) for v, a in arms.items()}
    rows = []
    q = [(1 - level) / 2, (1 + level) / 2]
    for v in others:
        for s in sets:
            (ob, pb), (ov, pv) = results[s][base], results[s][v]
            effects = [("(all)", "(all)", ob, ov)]
            effects += [(n, a, pb[gi][:, j], pv[gi][:, j]) for gi, n in enumerate(names) for j, a in enumerate(levels[gi])]
            for n, a, rb, rv in effects:
                e = rv - rb
                ok = e[1:][np.isfinite(e[1:])]
                lo, hi = (np.quantile(ok, q) if ok.size else (NAN, NAN))
                lo, hi = (min(lo, e[0]), max(hi, e[0])) if np.isfinite(e[0]) else (NAN, NAN)
                rows.append(dict(case, variant=v, base=base, agents=s, group=n, attribute=a, rate_base=float(rb[0]),
                                 rate_variant=float(rv[0]), effect=float(e[0]), ci_low=float(lo), ci_high=float(hi),
                                 _class=conclusion(lo, hi)))
    return rows
