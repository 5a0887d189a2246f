"""Would the policy conclusion survive the model's bias? (issue 33.3; ``louder analyze RUN --adjust
parity | observed``; docs/tutorials/population-what-if.md)

``sensitivity.csv``: each policy variant's effect — its target rate minus the base variant's, overall
and per attribute of every group — under the raw agents (``agents = raw``), agents calibrated to
parity (``parity``) and, with ``--observed FILE``, to observed rates (``observed``), each with a
bootstrap interval, and a ``verdict``: ``holds`` when the conclusion (raises / lowers / no clear effect)
is the same under every set of agents, else ``depends on the model's bias``. The statistics are
``sensitivity_table``'s (docs/statistics.md): computed from the stored
probabilities (sample mode: decisions) with no new model call — the offsets are fitted on the base
variant and applied to every variant, refitted in every bootstrap resample.

A network run's agents hear each other, so calibrating one changes what its neighbours decide: its
sensitivity needs a run of its own (``louder calibrate`` then ``louder run --calibration``), not a
re-weighting of the stored answers.

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

import numpy as np
import pandas as pd
from scipy.special import expit

from louder.analysis.stats import calibration as C
from louder.analysis.stats import named_seed
from louder.analysis.stats.keys import is_valid, value_column
from louder.errors import LouderError

SENSITIVITY_COLUMNS = ["model", "condition", "scenario", "variant", "base", "agents", "group", "attribute", "rate_base",
                       "rate_variant", "effect", "ci_low", "ci_high", "verdict"]
NAN = float("nan")

CALIBRATIONS = ("parity", "observed")
MAX_B = 2000  # each resample refits the offsets (raking): the bootstrap is capped here


def conclusion(lo: float, hi: float, tie: float = 1e-9) -> str:
    """The sign class of an effect's interval: an end within ``tie`` of 0 is 0 (an effect that is exactly 0
    in every resample — agents whose probability the variant does not move — reads no clear effect, not a
    float's sign)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "cannot be judged"
    return "raises" if lo > tie else "lowers" if hi < -tie else "no clear effect"


def sensitivity_table(decisions: pd.DataFrame, observed: pd.DataFrame | None = None, base: str | None = None,
                      value: str = "auto", B: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """``sensitivity.csv`` (``SENSITIVITY_COLUMNS``): per case (model × condition × scenario), variant ≠
    ``base`` (default "base", else the first variant), agent set (``raw``, ``parity``, and ``observed``
    when ``observed`` rates are given) and effect (overall: group and attribute "(all)"; per attribute
    of every group), the effect with its bootstrap interval and the verdict (module docstring).

    ``decisions``: a population run's decisions with ``variant``, ``attr_<group>`` columns (or
    ``attribute`` with ``group``, one group), ``status``, ``target`` / ``p_target``, ``weight``."""
    col = value_column(decisions, value)
    score = col == "p_target"
    d = decisions[is_valid(decisions) & decisions[col].notna()]
    attr_cols = C.groups_of(d)
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
                                 sets, observed, B, named_seed(seed, *case.values()), level)
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
        codes = [C.level_codes(r[c], lv) for c, lv in zip(attr_cols, levels)]
        cells = pd.MultiIndex.from_frame(r[attr_cols]).factorize()[0] if len(attr_cols) > 1 else codes[0]
        # row 0: the data; rows 1..B: resamples of this variant's agents (counts as weights)
        counts = np.vstack([np.ones(len(r)), rng.multinomial(len(r), np.full(len(r), 1 / len(r)), size=B)])
        arms[v] = dict(y=y, W=counts * w, codes=codes, cells=cells)

    def arm_logits(arm):
        return np.broadcast_to(C.logits(arm["y"]), arm["W"].shape) if score else C.cell_logits(arm["y"], arm["W"],
                                                                                               arm["cells"])

    def rates(arm, p):  # (R,) overall and per group (R × k_g)
        W = arm["W"]
        overall = (W * p).sum(1) / W.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            per = [C.member_sums(W * p, m) / C.member_sums(W, m) for m in
                   (C.attribute_members(c, len(lv)) for c, lv in zip(arm["codes"], levels))]
        return overall, per

    results = {}
    for s in sets:
        if s == "raw":
            p = {v: np.broadcast_to(a["y"], a["W"].shape) for v, a in arms.items()}
        else:
            a0 = arms[base]
            L0 = arm_logits(a0)
            deltas, _, _ = C.fit_offsets(L0, a0["W"], a0["codes"], levels, s, observed, case.get("scenario"), names,
                                np.broadcast_to(a0["y"], a0["W"].shape))
            p = {v: expit(arm_logits(a) + sum(dl[:, c] for dl, c in zip(deltas, a["codes"]))) for v, a in arms.items()}
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


def sensitivity(decisions: pd.DataFrame, calibration: str, observed: pd.DataFrame | None = None, B: int = MAX_B,
                seed: int = 0) -> pd.DataFrame:
    """``sensitivity.csv`` of a single-round run's decisions (every variant, under ``none``, one wording and
    reasoning level; ``scenario`` without a " [variant]" suffix) with agents calibrated to ``calibration``
    (parity, or observed: the rates of ``observed``)."""
    if calibration not in CALIBRATIONS:
        raise LouderError(f"calibration {calibration}: use parity (agents calibrated to the pooled rate) or observed "
                          "(to observed rates)")
    if calibration == "observed" and observed is None:
        raise LouderError("calibration observed needs observed rates per scenario, group and attribute (docs/voices.md)")
    return sensitivity_table(decisions, observed=observed if calibration == "observed" else None, B=min(B, MAX_B),
                             seed=seed)


__all__ = ["CALIBRATIONS", "MAX_B", "SENSITIVITY_COLUMNS", "sensitivity", "sensitivity_table"]
