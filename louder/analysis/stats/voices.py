"""Actions, words, beliefs and the world (issue 21; docs/voices.md): four readings of one case
(model × scenario × group), side by side, and how big the agents' gap is beside an observed one.

Units. Three readings are **rates of choosing the scenario's target** per attribute, comparable
with each other:

- actions: the agents' target-decision rate r_a = x_a / n_a (valid decisions, contextualized condition);
- beliefs: the mean answer / 100 to "out of 100 <people>, how many would choose to <target>?"
  (``louder probe beliefs``), b_a = mean_t(y_at) / 100 over the valid trials t;
- the world: an observed rate q_a measured on m_a people (a user's file; louder ships none).

The fourth, **words** (the explicit probe), is a **share of answers naming an attribute** among
answers to "the person decided to <target>: what is their most likely <group>?" — another quantity.
Its DPD and gap are shown for direction only; they are not in the units of the other three.

Per case: each reading's DPD = max − min over the attributes; and where at least two attributes have
observed rates, the observed attributes with the highest and lowest rate (``higher``, ``lower``),
every reading's gap between them (higher − lower, one sign convention) and the amplification

    θ = action_gap / observed_gap = (r_h − r_l) / (q_h − q_l)

with an interval (``amplification``) left empty, with the reason, when the observed gap's interval
contains 0. Every interval here contains its own estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import intervals as I
from louder.analysis.stats import substream, wilson
from louder.analysis.stats.keys import valid
from louder.analysis.stats.prob_dpd import prob_dpd
from louder.errors import LouderError, describe_validation_error

NAN = float("nan")
ACTION_CONDITION = "contextualized"  # the agents' reading: the paper's main condition, as the 5.1 contrast uses

VOICES_COLUMNS = [
    "model", "scenario", "group",
    "action_dpd", "action_ci_low", "action_ci_high",
    "belief_dpd", "belief_ci_low", "belief_ci_high", "belief_p",
    "explicit_dpd", "explicit_ci_low", "explicit_ci_high",
    "observed_higher", "observed_lower", "observed_gap", "observed_ci_low", "observed_ci_high",
    "action_gap", "action_gap_ci_low", "action_gap_ci_high",
    "belief_gap", "belief_gap_ci_low", "belief_gap_ci_high",
    "explicit_gap", "explicit_gap_ci_low", "explicit_gap_ci_high",
    "amplification", "amp_ci_low", "amp_ci_high", "note"]
RATE_COLUMNS = [
    "model", "scenario", "group", "attribute",
    "action_rate", "action_n", "action_ci_low", "action_ci_high",
    "belief_rate", "belief_n", "belief_ci_low", "belief_ci_high",
    "explicit_share", "explicit_n",
    "observed_rate", "observed_n", "observed_ci_low", "observed_ci_high", "observed_source", "observed_year",
    "observed_measure"]


# --- the observed file ------------------------------------------------------------------------------

class ObservedRate(BaseModel):
    """One observed rate: the share ``rate`` of ``n`` people with ``attribute`` of ``group`` who did
    what ``measure`` says, in the situation of ``scenario``, from ``source`` (``year``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    scenario: str = Field(min_length=1)
    group: str = Field(min_length=1)
    attribute: str = Field(min_length=1)
    rate: float = Field(ge=0, le=1)
    n: int = Field(ge=1)
    source: str = Field(min_length=1)
    year: str = Field(min_length=1)
    measure: str = Field(min_length=1)

    @field_validator("year", mode="before")
    @classmethod
    def _year_as_text(cls, v):  # 2012, or "2004–2005" for a pooled survey
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("measure", "source")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v.strip():
            raise ValueError("must be one line")
        return v.strip()


def load_observed(path: str | Path) -> list[ObservedRate]:
    """A user's YAML list of observed rates; any problem is one LouderError naming the entry and field."""
    p = Path(path)
    where = f"observed file {p}"
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise LouderError(f"{where}: cannot be read ({e.strerror}); check the path") from None
    except yaml.YAMLError as e:
        raise LouderError(f"{where}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, list) or not doc:
        raise LouderError(f"{where}: must be a YAML list of entries {{scenario, group, attribute, rate, n, source, "
                          "year, measure}} (docs/voices.md)")
    out, seen = [], {}
    for i, entry in enumerate(doc, 1):
        if not isinstance(entry, dict):
            raise LouderError(f"{where}: entry {i}: must be a mapping of fields, got {type(entry).__name__}")
        name = " × ".join(str(entry.get(k, "?")) for k in ("scenario", "group", "attribute"))
        try:
            e = ObservedRate.model_validate(entry)
        except ValidationError as err:
            problems = describe_validation_error(err, "").splitlines()
            raise LouderError(f"{where}: entry {i} ({name}): " + "; ".join(x.removeprefix(": ") for x in problems)
                              ) from None
        key = (e.scenario, e.group, e.attribute)
        if key in seen:
            raise LouderError(f"{where}: entry {i} ({name}) repeats entry {seen[key]}; give one rate per scenario × "
                              "group × attribute")
        seen[key] = i
        out.append(e)
    return out


def check_observed(entries: list[ObservedRate], attributes: dict[str, list[str]], scenarios: set[str],
                   where: str = "observed file") -> tuple[list[ObservedRate], list[str]]:
    """Entries against the run: an attribute that is not one of its group's is an error (a typo);
    a scenario or group the run does not have is left out with a note (a shared file may cover more)."""
    kept, notes = [], []
    for i, e in enumerate(entries, 1):
        if e.group in attributes and e.attribute not in attributes[e.group]:
            raise LouderError(f"{where}: entry {i}: attribute {e.attribute!r} is not an attribute of group {e.group} "
                              f"({', '.join(attributes[e.group])})")
        if e.scenario not in scenarios or e.group not in attributes:
            notes.append(f"observed rates: entry {i} ({e.scenario} × {e.group} × {e.attribute}) is not a case of "
                         "this run; left out")
            continue
        kept.append(e)
    return kept, notes


# --- small statistics --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Estimate:
    """An estimate with its confidence interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class Ratio:
    """The amplification θ with its interval; ``note`` says why the interval (or θ) is empty."""

    estimate: float
    low: float
    high: float
    note: str = ""


NO = Estimate(NAN, NAN, NAN)


def newcombe_gap(x1: float, n1: float, x2: float, n2: float, level: float = 0.95) -> Estimate:
    """d = x1/n1 − x2/n2, two independent binomial proportions, with Newcombe's hybrid score interval
    (method 10 of Newcombe 1998; statsmodels ``method="newcomb"``): with Wilson intervals [l_i, u_i]
    of p̂_i, lo = d − √((p̂1 − l1)² + (u2 − p̂2)²), hi = d + √((u1 − p̂1)² + (p̂2 − l2)²). Counts may be
    fractional (an observed rate × n). It contains d (each Wilson interval contains its p̂)."""
    if n1 <= 0 or n2 <= 0:
        return NO
    from statsmodels.stats.proportion import confint_proportions_2indep

    lo, hi = confint_proportions_2indep(x1, n1, x2, n2, method="newcomb", compare="diff", alpha=1 - level)
    return Estimate(x1 / n1 - x2 / n2, float(lo), float(hi))


def _symmetric_t(estimate: float, se: float, t_star: np.ndarray, level: float, df: float | None) -> Estimate:
    """estimate ± c·se with c = max(Student t_df (normal without df) quantile, level-quantile of |t*|)."""
    c = I._critical(t_star.reshape(-1, 1), level, df)
    return Estimate(estimate, estimate - c * se, estimate + c * se)


def mean_rate(values, B: int = 10_000, seed: int = 0, level: float = 0.95) -> Estimate:
    """A belief rate b = mean(v) (v = answer / 100 of each valid trial) with a bootstrap-t interval over
    trials: resample the n trials with replacement, t* = |b* − b| / se*, se² = mean((v − b)²)/n (the same
    formula per resample), c = max(t_{n−1}, level-quantile of t*); [b − c·se, b + c·se] ∩ [0, 1]. Symmetric,
    so it contains b. Identical answers give se = 0 and the point: the interval measures the model's
    answer-to-answer spread at the probe temperature, not any uncertainty about people."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return NO
    b = float(v.mean())
    rng = np.random.default_rng(seed)
    draw = v[rng.integers(0, v.size, size=(B, v.size))]
    m = draw.mean(axis=1)
    se_b = np.sqrt(np.maximum((draw * draw).mean(axis=1) - m * m, 0) / v.size)
    se = float(np.sqrt(v.var() / v.size))
    t = _t_values(m - b, se_b)
    e = _symmetric_t(b, se, t, level, df=v.size - 1)
    return Estimate(b, max(0.0, e.low), min(1.0, e.high))


def _t_values(dev: np.ndarray, se: np.ndarray) -> np.ndarray:
    """|dev| / se, with se = 0 giving 0 (no spread, no move) or ∞ (it moved: cannot be scaled)."""
    dev = np.abs(dev)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, dev / np.where(se > 0, se, 1), np.where(dev > 1e-12, np.inf, 0.0))


def mean_gap(first, second, B: int = 10_000, seed: int = 0, level: float = 0.95) -> Estimate:
    """The belief gap d = mean(v1) − mean(v2) (trials of two attributes, independent) with a bootstrap-t
    interval: trials resampled within each attribute, se² = var(v1)/n1 + var(v2)/n2 (plug-in, the same
    per resample), c = max(t_{min n − 1}, level-quantile of |d* − d| / se*); d ± c·se."""
    a, b = (np.asarray(x, dtype=float) for x in (first, second))
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size == 0 or b.size == 0:
        return NO
    rng = np.random.default_rng(seed)
    da, db = (x[rng.integers(0, x.size, size=(B, x.size))] for x in (a, b))
    ma, mb = da.mean(axis=1), db.mean(axis=1)
    va = np.maximum((da * da).mean(axis=1) - ma * ma, 0) / a.size
    vb = np.maximum((db * db).mean(axis=1) - mb * mb, 0) / b.size
    d = float(a.mean() - b.mean())
    se = float(np.sqrt(a.var() / a.size + b.var() / b.size))
    return _symmetric_t(d, se, _t_values(ma - mb - d, np.sqrt(va + vb)), level, df=min(a.size, b.size) - 1)


def share_gap(c1: int, c2: int, total: int, B: int = 10_000, seed: int = 0, level: float = 0.95) -> Estimate:
    """The explicit gap d = (c1 − c2)/N, shares of the N valid answers naming each attribute, with a
    bootstrap-t interval over the N answers (multinomial): se² = (p̃1 + p̃2 − (p̃1 − p̃2)²)/N with
    p̃ = (c + ½)/(N + 1), as the explicit DPD interval (docs/statistics.md); c = max(z, quantile); d ± c·se."""
    if total <= 0:
        return NO
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, [c1 / total, c2 / total, max(0.0, 1 - (c1 + c2) / total)], size=B)

    def var(x1, x2):
        p1, p2 = (np.asarray(x1) + 0.5) / (total + 1), (np.asarray(x2) + 0.5) / (total + 1)
        return (p1 + p2 - (p1 - p2) ** 2) / total

    d = (c1 - c2) / total
    t = _t_values((draws[:, 0] - draws[:, 1]) / total - d, np.sqrt(var(draws[:, 0], draws[:, 1])))
    return _symmetric_t(d, float(np.sqrt(var(c1, c2))), t, level, df=None)


def fieller(a: float, va: float, o: float, vo: float, c: float) -> tuple[float, float] | None:
    """Fieller's interval for θ = a / o from independent estimates a, o with variances va, vo at
    critical value c: {θ : (a − θ·o)² ≤ c²(va + θ²·vo)}. With A = o² − c²·vo > 0 it is the interval
    between the roots θ = (a·o ± c·√(a²·vo + va·A)) / A, which contains a/o (where the left side is 0);
    with A ≤ 0 (o not distinguishable from 0 at c) it is unbounded: None."""
    A = o * o - c * c * vo
    if A <= 0:
        return None
    half = c * np.sqrt(a * a * vo + va * A)
    return float((a * o - half) / A), float((a * o + half) / A)


def amplification(x_h: float, n_h: float, x_l: float, n_l: float, q_h: float, m_h: float, q_l: float, m_l: float,
                  B: int = 10_000, seed: int = 0, level: float = 0.95) -> Ratio:
    """θ = (r_h − r_l) / (q_h − q_l): the agents' gap (x/n valid decisions choosing the target) over the
    observed one (rate q measured on m people), between the same two attributes.

    Interval: Fieller's (``fieller``) with a bootstrap-t critical value. a = r_h − r_l with variance
    va = v(x_h, n_h) + v(x_l, n_l), o = q_h − q_l with vo = v(q_h·m_h, m_h) + v(q_l·m_l, m_l), v the
    smoothed binomial variance (``intervals.binomial_variance``). Resample b draws, jointly, the agents
    within each attribute, x* ~ Binomial(n, r), and the observed people, y* ~ Binomial(m, q);
    t*_b = |a*_b − θ̂·o*_b| / √(va*_b + θ̂²·vo*_b) (the studentised Fieller statistic at θ̂, where it is 0
    in the data), c = max(z, level-quantile of t*). The interval contains θ̂. It is left empty (with
    the reason in ``note``) when the observed gap's Newcombe interval contains 0 — dividing by a gap
    that may be 0 has no bounded answer — or when Fieller's set is unbounded at c.
    """
    obs = newcombe_gap(q_h * m_h, m_h, q_l * m_l, m_l, level)
    if n_h <= 0 or n_l <= 0:
        return Ratio(NAN, NAN, NAN, "no valid agents' decisions for " +
                     " and ".join(s for s, n in (("the higher attribute", n_h), ("the lower attribute", n_l))
                                  if n <= 0))
    a, o = x_h / n_h - x_l / n_l, q_h - q_l
    theta = a / o if o != 0 else NAN
    if obs.low <= 0 <= obs.high:
        return Ratio(theta, NAN, NAN, f"observed gap {o:.3f} has a 95 % interval [{obs.low:.3f}, {obs.high:.3f}] "
                                      "containing 0: no interval for the ratio")
    v = I.binomial_variance
    va = float(v(x_h, n_h) + v(x_l, n_l))
    vo = float(v(q_h * m_h, m_h) + v(q_l * m_l, m_l))
    rng = np.random.default_rng(seed)
    xh, xl = rng.binomial(int(n_h), x_h / n_h, B), rng.binomial(int(n_l), x_l / n_l, B)
    yh, yl = rng.binomial(int(m_h), q_h, B), rng.binomial(int(m_l), q_l, B)
    a_b, o_b = xh / n_h - xl / n_l, yh / m_h - yl / m_l
    se_b = np.sqrt(v(xh, n_h) + v(xl, n_l) + theta ** 2 * (v(yh, m_h) + v(yl, m_l)))
    c = max(dist.z(level), float(np.quantile(np.abs(a_b - theta * o_b) / se_b, level)))
    ci = fieller(a, va, o, vo, c)
    if ci is None:
        return Ratio(theta, NAN, NAN, f"observed gap {o:.3f} is within c·se of 0 at the bootstrap critical value "
                                      f"{c:.2f}: the ratio's interval is unbounded")
    return Ratio(theta, *ci)


# --- the tables ----------------------------------------------------------------------------------------

def _seed(seed: int, *parts: int) -> int:
    return substream(seed, 21, *parts)  # 21: the voices' own streams, apart from every other table's


def belief_samples(beliefs: pd.DataFrame | None) -> dict[tuple, dict[str, np.ndarray]]:
    """(model, scenario, group) → attribute → the valid answers / 100, from ``beliefs.parquet``."""
    if beliefs is None or beliefs.empty:
        return {}
    answers = dict(iter(valid(beliefs).groupby(["model", "scenario", "group"], sort=True)))
    out: dict[tuple, dict[str, np.ndarray]] = {}
    for key, sub in beliefs.groupby(["model", "scenario", "group"], sort=True):
        v = answers.get(key, sub.iloc[:0])
        out[key] = {a: v.loc[v["attribute"] == a, "answer"].to_numpy(dtype=float) / 100
                    for a in dict.fromkeys(sub["attribute"])}
    return out


def voices(attributes: pd.DataFrame, cases: pd.DataFrame, beliefs: pd.DataFrame | None,
           observed: list[ObservedRate] | None, groups: dict[str, list[str]], B: int = 10_000,
           seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(voices, voice_rates): one row per model × scenario × group with every reading's DPD and, where
    observed rates allow, the gaps and the amplification (``VOICES_COLUMNS``); and one row per attribute
    with every reading's rate (``RATE_COLUMNS``). The agents' reading is the contextualized condition;
    DPDs and their intervals of actions and words are the case table's (the same numbers as there)."""
    imp = attributes[(attributes["kind"] == "implicit") & (attributes["condition"] == ACTION_CONDITION)]
    exp = attributes[attributes["kind"] == "explicit"]
    bel = belief_samples(beliefs)
    keys = sorted(set(map(tuple, imp[["model", "scenario", "group"]].to_numpy())) |
                  set(map(tuple, exp[["model", "scenario", "group"]].to_numpy())) | set(bel))
    obs: dict[tuple, dict[str, ObservedRate]] = {}
    for e in observed or []:
        obs.setdefault((e.scenario, e.group), {})[e.attribute] = e
    case = cases.set_index(["kind", "condition", "model", "scenario", "group"]) if len(cases) else None
    rows, rates = [], []
    for i, (m, s, g) in enumerate(keys):
        order = list(groups.get(g, []))
        a_imp = imp[(imp["model"] == m) & (imp["scenario"] == s) & (imp["group"] == g)].set_index("attribute")
        a_exp = exp[(exp["model"] == m) & (exp["scenario"] == s) & (exp["group"] == g)].set_index("attribute")
        b = bel.get((m, s, g), {})
        o = obs.get((s, g), {})
        for a in list(a_imp.index) + list(a_exp.index) + list(b) + list(o):
            if a not in order:
                order.append(a)
        row: dict = dict(model=m, scenario=s, group=g)
        notes = []
        row.update(_case_dpd(case, "implicit", ACTION_CONDITION, m, s, g, "action"))
        row.update(_case_dpd(case, "explicit", "explicit", m, s, g, "explicit"))
        if b:
            r = prob_dpd([b[a] for a in order if a in b], B=B, seed=_seed(seed, i, 1))
            row.update(belief_dpd=r.dpd, belief_ci_low=r.ci_low, belief_ci_high=r.ci_high, belief_p=r.p_value)
        for a in order:
            rates.append(_rate_row(m, s, g, a, a_imp, a_exp, b, o, B, _seed(seed, i, 2, order.index(a))))
        if len(o) >= 2:
            row.update(_gaps(order, o, a_imp, a_exp, b, notes, B, _seed(seed, i, 3)))
        elif o:
            notes.append(f"observed rate for {', '.join(o)} only: a gap needs two attributes")
        row["note"] = "; ".join(notes)
        rows.append(row)
    return (pd.DataFrame(rows, columns=VOICES_COLUMNS).astype({"observed_higher": object, "observed_lower": object}),
            pd.DataFrame(rates, columns=RATE_COLUMNS))


def _case_dpd(case: pd.DataFrame | None, kind: str, condition: str, m: str, s: str, g: str, name: str) -> dict:
    key = (kind, condition, m, s, g)
    if case is None or key not in case.index:
        return {}
    c = case.loc[key]
    return {f"{name}_dpd": c["dpd"], f"{name}_ci_low": c["ci_low"], f"{name}_ci_high": c["ci_high"]}


def _rate_row(m, s, g, a, a_imp, a_exp, b, o, B, seed) -> dict:
    row = dict(model=m, scenario=s, group=g, attribute=a)
    if a in a_imp.index and a_imp.loc[a, "n_valid"] > 0:
        rate = a_imp.loc[a, "n_target"] / a_imp.loc[a, "n_valid"]
        w = wilson(rate, a_imp.loc[a, "n_valid"])
        row.update(action_rate=rate, action_n=int(a_imp.loc[a, "n_valid"]), action_ci_low=w.low,
                   action_ci_high=w.high)
    if a in b and b[a].size:
        e = mean_rate(b[a], B=B, seed=seed)
        row.update(belief_rate=e.estimate, belief_n=int(b[a].size), belief_ci_low=e.low, belief_ci_high=e.high)
    if a in a_exp.index:
        row.update(explicit_share=a_exp.loc[a, "rate"], explicit_n=int(a_exp.loc[a, "n_valid"]))
    if a in o:
        e = o[a]
        w = wilson(e.rate, e.n)
        row.update(observed_rate=e.rate, observed_n=e.n, observed_ci_low=w.low, observed_ci_high=w.high,
                   observed_source=e.source, observed_year=e.year, observed_measure=e.measure)
    return row


def _gaps(order: list[str], o: dict[str, ObservedRate], a_imp: pd.DataFrame, a_exp: pd.DataFrame,
          b: dict[str, np.ndarray], notes: list[str], B: int, seed: int) -> dict:
    """The observed attributes with the highest and lowest rate (the first in group order on a tie), and
    every reading's gap between them, higher − lower."""
    seen = [a for a in order if a in o]
    hi = max(seen, key=lambda a: o[a].rate)
    lo = min(seen, key=lambda a: o[a].rate)
    if hi == lo:  # every observed rate equal: the first two attributes, a gap of 0
        hi, lo = seen[0], seen[1]
    h, low = o[hi], o[lo]
    og = newcombe_gap(h.rate * h.n, h.n, low.rate * low.n, low.n)
    out = dict(observed_higher=hi, observed_lower=lo, observed_gap=og.estimate, observed_ci_low=og.low,
               observed_ci_high=og.high)
    n_h = int(a_imp.loc[hi, "n_valid"]) if hi in a_imp.index else 0
    n_l = int(a_imp.loc[lo, "n_valid"]) if lo in a_imp.index else 0
    if n_h and n_l:
        x_h, x_l = int(a_imp.loc[hi, "n_target"]), int(a_imp.loc[lo, "n_target"])
        ag = newcombe_gap(x_h, n_h, x_l, n_l)
        out.update(action_gap=ag.estimate, action_gap_ci_low=ag.low, action_gap_ci_high=ag.high)
        amp = amplification(x_h, n_h, x_l, n_l, h.rate, h.n, low.rate, low.n, B=B, seed=seed)
        out.update(amplification=amp.estimate, amp_ci_low=amp.low, amp_ci_high=amp.high)
        if amp.note:
            notes.append(f"amplification: {amp.note}")
    else:
        notes.append(f"no agents' decisions ({ACTION_CONDITION}) for {hi} and {lo}: no action gap or amplification")
    if b.get(hi) is not None and b.get(lo) is not None and b[hi].size and b[lo].size:
        bg = mean_gap(b[hi], b[lo], B=B, seed=seed + 1)
        out.update(belief_gap=bg.estimate, belief_gap_ci_low=bg.low, belief_gap_ci_high=bg.high)
    if hi in a_exp.index and lo in a_exp.index and a_exp.loc[hi, "n_valid"] > 0:
        eg = share_gap(int(a_exp.loc[hi, "n_target"]), int(a_exp.loc[lo, "n_target"]), int(a_exp.loc[hi, "n_valid"]),
                       B=B, seed=seed + 2)
        out.update(explicit_gap=eg.estimate, explicit_gap_ci_low=eg.low, explicit_gap_ci_high=eg.high)
    return out


def sentence(r: pd.Series) -> str:
    """One plain sentence about a voices row (the report's reading of the case)."""
    def f(v):
        return "–" if pd.isna(v) else f"{v:.2f}"

    def iv(lo, hi):
        return "" if pd.isna(lo) else f" [{f(lo)}, {f(hi)}]"

    parts = []
    if not pd.isna(r["action_dpd"]):
        parts.append(f"the agents' DPD is {f(r['action_dpd'])}{iv(r['action_ci_low'], r['action_ci_high'])}")
    if not pd.isna(r["belief_dpd"]):
        parts.append(f"the believed DPD {f(r['belief_dpd'])}{iv(r['belief_ci_low'], r['belief_ci_high'])}")
    if not pd.isna(r["explicit_dpd"]):
        parts.append(f"the explicit DPD (share of answers, other units) {f(r['explicit_dpd'])}")
    text = (", ".join(parts) or "no reading") + "."
    if not (pd.isna(r["action_dpd"]) or pd.isna(r["belief_dpd"])):
        if r["action_ci_low"] > r["belief_ci_high"]:
            text += " The agents act more biased than the model believes people are (intervals apart)."
        elif r["action_ci_high"] < r["belief_ci_low"]:
            text += " The agents act less biased than the model believes people are (intervals apart)."
        else:
            text += " Action and belief DPDs overlap at this n: not told apart."
    if isinstance(r["observed_higher"], str):
        text += (f" Observed: {r['observed_higher']} − {r['observed_lower']} = {f(r['observed_gap'])}"
                 f"{iv(r['observed_ci_low'], r['observed_ci_high'])}")
        if not pd.isna(r["action_gap"]):
            text += f"; the agents' gap {f(r['action_gap'])}"
        if not pd.isna(r["amp_ci_low"]):
            lo, hi = r["amp_ci_low"], r["amp_ci_high"]
            verdict = ("amplified" if lo > 1 else "reversed" if hi < 0 else "smaller than observed" if hi < 1
                       else "not told apart from the observed size")
            text += f", amplification {f(r['amplification'])} [{f(lo)}, {f(hi)}]: {verdict}"
        elif not pd.isna(r["amplification"]):
            text += f", amplification {f(r['amplification'])} (no interval: see note)"
        text += "."
    return text


__all__ = ["ObservedRate", "load_observed", "check_observed", "newcombe_gap", "mean_rate", "mean_gap",
           "share_gap", "fieller", "amplification", "voices", "sentence"]
