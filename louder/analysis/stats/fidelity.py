"""Fidelity of agents to the people they stand for (issue 44; docs/how-to/check-agents-against-humans.md):
how close each respondent's agent decides to the respondent, how close the agents' decisions are to the
people's, and whether a gap between groups of people is kept, flattened, exaggerated or reversed.

Data of one case (model × condition × scenario × group) and one kind of agent (``agents``: the
respondents' attribute-only paired agents, or their agents grounded in the profile): the respondents i
with an attribute a_i in the case's group, their decision y_i, their agent's decision ŷ_i (a choice
label; a pair whose agent gave no valid answer is counted in ``n_no_answer`` and left out — whether an
agent answers is part of the model, not of the person, and an agent's "no answer" has no label to agree
with), their survey weight w_i (1 without one) and, where the study has a ``retest`` column, their
second answer y'_i to the same scenario (or none). A **subgroup** s is an attribute, or ``all`` (the
case's respondents together). m_s(x) = Σ_{i∈s} w_i x_i / Σ_{i∈s} w_i is the weighted mean over s, and
k_s = (Σ w)² / Σ w² its Kish size.

**Per subgroup**

- ``agreement`` A_s = m_s(1[ŷ = y]): the share of respondents whose agent decided as they did, with
  its Wilson interval at k_s. ``agreement_chance`` = Σ_c p_H(c)·p_A(c), p_H(c) = m_s(1[y = c]) and
  p_A(c) = m_s(1[ŷ = c]): the agreement of agents with the same decision shares that know nothing of
  which respondent decides what — agreement above it is individual knowledge.
- ``retest`` R_s = m over the retested respondents of 1[y' = y]: the people's agreement with
  themselves, and ``normalised`` = A_s / R_s (Park et al. 2024, *Generative agent simulations of 1,000
  people*: an agent's accuracy ÷ its person's own test–retest accuracy; 1 = the agent predicts the
  person as well as the person predicts themselves; it can exceed 1 by noise or when the retest was
  asked under other circumstances). A_s uses every pair and R_s the retested ones (both estimate their
  subgroup's mean when the retested respondents are a random part of it). Interval: A/R ± z·sd*(A*/R*)
  over the bootstrap below (symmetric, so it contains its estimate).
- ``distance``: the total variation distance between the agents' and the people's decision
  distributions, TV_s = ½ Σ_c |d_c|, d_c = p_A(c) − p_H(c) (two choices: |rate_agents − rate_humans|).
  Interval: a simultaneous bootstrap-t band over the choices for every d_c (the paired bootstrap below;
  se_c² = Σ w²(e_c − d_c)² / (Σw)², e_c = 1[ŷ = c] − 1[y = c], the linearised variance of a weighted
  mean of paired differences, recomputed in each resample), projected onto TV:
  [½ Σ_c dist(0, [l_c, u_c]), min(1, ½ Σ_c max(|l_c|, |u_c|))] — it contains TV̂ and keeps its coverage
  at TV = 0 (the projection argument of ``louder.analysis.stats.intervals``).

**Per case**, over the attributes with at least two pairs (k ≥ 2), the target rates r_H,a = m_a(1[y =
target]) and r_A,a = m_a(1[ŷ = target]) and their differences D_a = r_A,a − r_H,a:

- ``gap_humans`` = max_a r_H,a − min_a r_H,a (the people's DPD) and ``gap_agents`` (the agents' DPD,
  on the same respondents), each with the band-and-projection interval of ``louder.analysis.stats.intervals``.
- ``gap_difference``: on the people's widest pair (a⁺ = argmax r_H, a⁻ = argmin r_H), the agents' gap
  minus the people's, Δ = (r_A,a⁺ − r_A,a⁻) − (r_H,a⁺ − r_H,a⁻) = D_a⁺ − D_a⁻ — for two attributes
  the difference of differences, oriented so that the people's gap is positive: Δ < 0 the agents keep less
  of it (flattened; below −gap_humans reversed), Δ > 0 more (exaggerated). Interval Δ ± c·se.
- ``spread_index`` = gap_agents ÷ gap_humans (1: the same spread; 0: every group alike among the
  agents; 2: twice the people's), interval [lo_A / hi_H, hi_A / lo_H] (∞ above when lo_H = 0: the
  people may have no gap at all; NaN when gap_humans = 0).

The bootstrap: B resamples of respondents with replacement *within each attribute* (the study's
attribute counts are its design), each respondent with their agent, weight and retest — the pair is the
unit, so the agents' and the people's rates move together and the covariance of a good agent with its
person narrows every difference. The bands: bootstrap-t for every pair difference of the people's rates
(variance: the ½-smoothed binomial p̃(1 − p̃)/k_a, ``intervals.binomial_variance``), of the agents'
rates (the same) and of the D_a (var D_a = Σ w²(δ − D_a)² / (Σ w)², δ_i = 1[ŷ_i = target] − 1[y_i =
target]: var(D_a − D_b) = var D_a + var D_b, different people in each attribute), all three families
with **one** critical value c (the level-quantile of the largest |t| of the three together; at least
Student's t on min_a n_a − 1 df), so that every statement below holds at once with probability ≈ level,
for every pair — a pair chosen from the data (the people's widest) included.

**The verdict** (margin δ, ``margin``: a gap kept within δ — 0.1 by default, ten points of the target
rate — is kept), from the bands, in this order:

- ``faithful``: every pair's Δ_ab = D_a − D_b lies in [−δ, δ] with its whole interval — the agents'
  gaps are the people's within the margin (an equivalence test, as TOST);
- ``reversed``: on some pair the people's gap and the agents' gap both exclude 0, with opposite signs;
- ``flattened`` / ``exaggerated``: some pair's Δ_ab interval excludes 0 (the agents' gaps differ from
  the people's), and the agents' spread is smaller (``spread_index`` < 1) / not smaller than the people's;
- ``underpowered``: none of these — the intervals cannot tell a kept gap from a changed one (too few
  respondents, or a difference smaller than the noise); so it reads with no gap among people and none
  among agents unless the study is large enough to show the gaps equal within δ.

Under no gap difference (every Δ_ab = 0) a verdict other than ``faithful``/``underpowered`` needs a band
to miss a true 0: at most 1 − level. Null and planted cases are tested in tests/test_fidelity.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import dpd, named_seed, wilson
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import CASE_KEYS

ALL = "all"  # the subgroup of every respondent of the case
VERDICTS = ("faithful", "flattened", "exaggerated", "reversed", "underpowered")
SUBGROUP_COLUMNS = ["subgroup", "n_pairs", "n_no_answer", "rate_humans", "rate_agents", "agreement",
                    "agreement_ci_low", "agreement_ci_high", "agreement_chance", "retest", "n_retest", "normalised",
                    "normalised_ci_low", "normalised_ci_high", "distance", "distance_ci_low", "distance_ci_high"]
CASE_COLUMNS = ["gap_humans", "gap_humans_ci_low", "gap_humans_ci_high", "gap_agents", "gap_agents_ci_low",
                "gap_agents_ci_high", "gap_difference", "gap_difference_ci_low", "gap_difference_ci_high",
                "spread_index", "spread_ci_low", "spread_ci_high", "verdict"]
NAN = float("nan")
_CHUNK = 4_000_000  # resample × respondent cells per block of the bootstrap (bounded memory)


def _sums(counts: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """Σ_i c_bi w_i x_iq for every resample b (rows of ``counts``) and feature q (columns of ``wx``)."""
    return counts @ wx


class _Attribute:
    """One attribute's pairs as feature sums, for the data (``data``) and B resamples (``boot``)."""

    def __init__(self, human, agent, yt, at, w, retest, labels, B: int, rng):
        n = len(human)
        self.n = n
        L = len(labels)
        h = np.stack([human == c for c in labels], axis=1).astype(float)
        a = np.stack([agent == c for c in labels], axis=1).astype(float)
        e = a - h
        delta = at - yt
        has = np.array([r is not None for r in retest], dtype=float)
        same = np.array([r is not None and r == y for r, y in zip(retest, human)], dtype=float)
        agree = (human == agent).astype(float)
        one = np.ones(n)
        # features weighted by w, then by w² (the linearised variances)
        x1 = np.column_stack([one, agree, yt, at, delta, h, a, has, same])
        x2 = np.column_stack([one, delta, delta**2, e, e**2])
        self.L = L
        wx1, wx2 = w[:, None] * x1, (w * w)[:, None] * x2
        self.data = (wx1.sum(0)[None], wx2.sum(0)[None])
        self.boot = (np.empty((B, x1.shape[1])), np.empty((B, x2.shape[1])))
        chunk = max(1, _CHUNK // max(n, 1))
        for start in range(0, B, chunk):
            m = min(chunk, B - start)
            c = rng.multinomial(n, np.full(n, 1 / n), size=m).astype(float)
            self.boot[0][start:start + m] = _sums(c, wx1)
            self.boot[1][start:start + m] = _sums(c, wx2)


def _stats(s1: np.ndarray, s2: np.ndarray, L: int) -> dict[str, np.ndarray]:
    """Every statistic of a subgroup from its feature sums (rows: data or resamples)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        W = s1[:, 0]
        kish = W**2 / s2[:, 0]
        out = dict(W=W, kish=kish, agree=s1[:, 1] / W, rate_h=s1[:, 2] / W, rate_a=s1[:, 3] / W, D=s1[:, 4] / W,
                   ph=s1[:, 5:5 + L] / W[:, None], pa=s1[:, 5 + L:5 + 2 * L] / W[:, None],
                   retest=s1[:, 5 + 2 * L + 1] / s1[:, 5 + 2 * L], retested=s1[:, 5 + 2 * L])
        D = out["D"]
        out["var_D"] = np.maximum(s2[:, 2] - 2 * D * s2[:, 1] + D**2 * s2[:, 0], 0) / W**2
        d = out["pa"] - out["ph"]
        e1, e2 = s2[:, 3:3 + L], s2[:, 3 + L:3 + 2 * L]
        out["d"] = d
        out["var_d"] = np.maximum(e2 - 2 * d * e1 + d**2 * s2[:, :1], 0) / W[:, None] ** 2
        out["var_h"] = I.binomial_variance(out["rate_h"] * kish, kish)
        out["var_a"] = I.binomial_variance(out["rate_a"] * kish, kish)
    return out


def _tv_interval(st: dict, bt: dict, level: float, df: float | None) -> tuple[float, float, float]:
    """TV and its interval: the simultaneous band over the choices of every d_c, projected."""
    d, se = st["d"][0], np.sqrt(st["var_d"][0])
    tv = 0.5 * float(np.abs(d).sum())
    t = I.studentised(d, se, bt["d"], np.sqrt(bt["var_d"]))
    c = I.critical(t, level, df)
    half = np.where(se > 0, c * se, 0.0)
    lo_c, hi_c = d - half, d + half
    near = np.where((lo_c <= 0) & (hi_c >= 0), 0.0, np.minimum(np.abs(lo_c), np.abs(hi_c)))
    return tv, 0.5 * float(near.sum()), min(1.0, 0.5 * float(np.maximum(np.abs(lo_c), np.abs(hi_c)).sum()))


def _subgroup(name: str, st: dict, bt: dict, n: int, n_no_answer: int, n_retest: int, level: float,
              df: float | None) -> dict:
    """The row of one subgroup (module docstring)."""
    z = dist.z(level)
    A, kish = float(st["agree"][0]), float(st["kish"][0])
    lo, hi = wilson(A, kish, level)
    R = float(st["retest"][0]) if n_retest else NAN
    if n_retest and R > 0:
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = bt["agree"] / bt["retest"]
        ratio = ratio[np.isfinite(ratio)]
        sd = float(ratio.std(ddof=1)) if ratio.size > 1 else NAN
        nz = A / R
        nlo, nhi = (max(0.0, nz - z * sd), nz + z * sd) if np.isfinite(sd) else (NAN, NAN)
    else:
        nz = nlo = nhi = NAN
    tv, tv_lo, tv_hi = _tv_interval(st, bt, level, df)
    return dict(subgroup=name, n_pairs=n, n_no_answer=n_no_answer, rate_humans=float(st["rate_h"][0]),
                rate_agents=float(st["rate_a"][0]), agreement=A, agreement_ci_low=min(lo, A),
                agreement_ci_high=max(hi, A), agreement_chance=float((st["ph"][0] * st["pa"][0]).sum()),
                retest=R, n_retest=n_retest, normalised=nz, normalised_ci_low=nlo, normalised_ci_high=nhi,
                distance=tv, distance_ci_low=tv_lo, distance_ci_high=tv_hi)


def _pair_band(est: np.ndarray, draws: np.ndarray, var: np.ndarray, draw_var: np.ndarray) -> I.Band:
    return I.band(est, draws, I.pair_sum(var), I.pair_sum(draw_var))


def gaps(rate_h, rate_a, D, var_h, var_a, var_D, boot: dict, level: float = 0.95, margin: float = 0.1,
         df: float | None = None) -> dict:
    """The case's gap comparison and verdict (module docstring) from per-attribute estimates (k,) and
    their bootstrap draws (``boot``: rate_h, rate_a, D, var_h, var_a, var_D, each B × k)."""
    rate_h, rate_a, D = (np.asarray(x, float) for x in (rate_h, rate_a, D))
    bh = _pair_band(rate_h, boot["rate_h"], var_h, boot["var_h"])
    ba = _pair_band(rate_a, boot["rate_a"], var_a, boot["var_a"])
    bd = _pair_band(D, boot["D"], var_D, boot["var_D"])
    c = I.critical(np.concatenate([bh.t, ba.t, bd.t], axis=1), level, df)
    (lo_h, hi_h), (lo_a, hi_a) = I.project(bh, c), I.project(ba, c)
    g_h, g_a = dpd(rate_h), dpd(rate_a)
    i, j = I.pair_index(rate_h.size)

    def half(b: I.Band) -> np.ndarray:
        return np.where(b.se > 0, c * b.se, 0.0)

    # the people's widest pair (the agents' where the people have none), oriented upwards
    top, bottom = int(np.argmax(rate_h)), int(np.argmin(rate_h))
    if top == bottom:
        top, bottom = (int(np.argmax(rate_a)), int(np.argmin(rate_a))) if dpd(rate_a) > 0 else (1, 0)
    p = int(np.flatnonzero((i == min(top, bottom)) & (j == max(top, bottom)))[0])
    sign = 1.0 if top < bottom else -1.0  # pair differences are r_i − r_j with i < j
    diff = sign * float(bd.d[p])
    d_lo, d_hi = diff - float(half(bd)[p]), diff + float(half(bd)[p])
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = g_a / g_h if g_h > 0 else NAN
        s_lo = lo_a / hi_h if hi_h > 0 else NAN
        s_hi = (hi_a / lo_h if lo_h > 0 else (np.inf if hi_a > 0 else 0.0)) if hi_h > 0 else NAN
    dl, du = bd.d - half(bd), bd.d + half(bd)
    hl, hu, al, au = bh.d - half(bh), bh.d + half(bh), ba.d - half(ba), ba.d + half(ba)
    if ((dl >= -margin) & (du <= margin)).all():
        verdict = "faithful"
    elif (((hl > 0) & (au < 0)) | ((hu < 0) & (al > 0))).any():
        verdict = "reversed"
    elif ((dl > 0) | (du < 0)).any():
        verdict = "flattened" if g_a < g_h else "exaggerated"
    else:
        verdict = "underpowered"
    return dict(gap_humans=g_h, gap_humans_ci_low=lo_h, gap_humans_ci_high=hi_h, gap_agents=g_a,
                gap_agents_ci_low=lo_a, gap_agents_ci_high=hi_a, gap_difference=diff, gap_difference_ci_low=d_lo,
                gap_difference_ci_high=d_hi, spread_index=spread, spread_ci_low=s_lo, spread_ci_high=s_hi,
                verdict=verdict)


def case_fidelity(pairs: pd.DataFrame, attributes: Sequence[str] | None = None, B: int = 2000, seed: int = 0,
                  level: float = 0.95, margin: float = 0.1) -> pd.DataFrame:
    """One case and kind of agent: a row per subgroup (its attributes in order, then ``all``) with
    ``SUBGROUP_COLUMNS`` and the case's ``CASE_COLUMNS`` (module docstring).

    ``pairs``: one row per respondent — ``attribute``, ``human`` (their decision), ``agent`` (their
    agent's decision; None/NA: no valid answer), ``human_target`` and ``agent_target`` (the decision is
    the scenario's target), optionally ``weight`` and ``retest`` (the second answer, None/NA: not asked)."""
    rng = np.random.default_rng(seed)
    attributes = list(attributes) if attributes is not None else sorted(pairs["attribute"].unique())
    answered = pairs["agent"].notna()
    valid = pairs[answered]
    labels = sorted(set(valid["human"].astype(str)) | set(valid["agent"].astype(str)))
    parts, rows = {}, []
    for a in attributes:
        g = valid[valid["attribute"] == a]
        if len(g) == 0:
            continue
        w = g["weight"].to_numpy(float) if "weight" in g else np.ones(len(g))
        retest = [None if pd.isna(r) else str(r) for r in g["retest"]] if "retest" in g else [None] * len(g)
        parts[a] = _Attribute(g["human"].astype(str).to_numpy(), g["agent"].astype(str).to_numpy(),
                              g["human_target"].to_numpy(float), g["agent_target"].to_numpy(float), w, retest,
                              labels, B, rng)
    sizes = [x.n for x in parts.values()]
    df = (min(sizes) - 1) if sizes else None
    L = len(labels)
    stats, boots = {}, {}
    for a, x in parts.items():
        stats[a], boots[a] = _stats(*x.data, L), _stats(*x.boot, L)
    missing = (~answered).groupby(pairs["attribute"]).sum()
    retested = (pairs[answered]["retest"].notna().groupby(valid["attribute"]).sum() if "retest" in pairs
                else pd.Series(dtype=int))
    for a in attributes:
        n_no = int(missing.get(a, 0))
        if a not in parts:
            rows.append(dict(subgroup=a, n_pairs=0, n_no_answer=n_no, n_retest=0))
            continue
        rows.append(_subgroup(a, stats[a], boots[a], parts[a].n, n_no, int(retested.get(a, 0)), level, df))
    if parts:
        total = [sum(x.data[k] for x in parts.values()) for k in (0, 1)]
        total_b = [sum(x.boot[k] for x in parts.values()) for k in (0, 1)]
        rows.append(_subgroup(ALL, _stats(*total, L), _stats(*total_b, L), sum(sizes), int(missing.sum()),
                              int(retested.sum()), level, None))
    else:
        rows.append(dict(subgroup=ALL, n_pairs=0, n_no_answer=int(missing.sum()), n_retest=0))
    usable = [a for a in parts if parts[a].n >= 2]
    if len(usable) >= 2:
        est = {k: np.array([stats[a][k][0] for a in usable]) for k in ("rate_h", "rate_a", "D", "var_h", "var_a",
                                                                       "var_D")}
        boot = {k: np.column_stack([boots[a][k] for a in usable]) for k in est}
        case = gaps(est["rate_h"], est["rate_a"], est["D"], est["var_h"], est["var_a"], est["var_D"], boot, level,
                    margin, df=min(parts[a].n for a in usable) - 1)
    else:  # fewer than two attributes with two pairs: no gap to compare
        case = dict(dict.fromkeys(CASE_COLUMNS, NAN), verdict="underpowered")
    return pd.DataFrame([{**r, **case} for r in rows], columns=[*SUBGROUP_COLUMNS, *CASE_COLUMNS])


# --- fidelity.csv: a run's paired agents and its human study ----------------------------------------------

KEYS = [*CASE_KEYS, "agents"]
COLUMNS = [*KEYS, *SUBGROUP_COLUMNS, *CASE_COLUMNS]
KINDS = ("attribute", "grounded")


def fidelity(decisions: pd.DataFrame, humans: pd.DataFrame, attributes: dict[str, list[str]] | None = None,
             B: int = 2000, seed: int = 0, level: float = 0.95, margin: float = 0.1) -> pd.DataFrame:
    """``fidelity.csv``: per case, kind of agent (``agents``: ``attribute``, ``grounded``) and subgroup
    (``COLUMNS``; the module docstring has the formulas).

    ``decisions``: the case selection of decisions.parquet with its ``respondent`` column (and ``grounding``
    in a grounded study); ``humans``: the study in long form (``louder.humans.COLUMNS``);
    ``attributes``: group id → its attributes in order (default: sorted). Only the agents paired with a
    respondent are read (not the usual agents nor the unlabelled ones)."""
    if "respondent" not in decisions.columns:
        return pd.DataFrame(columns=COLUMNS)
    paired = decisions[decisions["respondent"].notna()]
    if "grounding" in paired.columns:
        kind = paired["grounding"].astype("string").fillna("attribute")
    else:
        kind = pd.Series("attribute", index=paired.index)
    paired = paired.assign(agents=kind)
    paired = paired[paired["agents"].isin(KINDS)]
    h = humans.rename(columns={"decision": "human", "target": "human_target", "attribute": "human_attribute"})
    cols = ["respondent", "scenario", "group", "human", "human_target", "weight"] + (
        ["retest"] if "retest" in h.columns else [])
    pairs = paired.merge(h[cols], on=["respondent", "scenario", "group"], how="inner", validate="many_to_one")
    ok = pairs["status"] == "valid"
    pairs = pairs.assign(agent=pairs["decision"].where(ok), agent_target=pairs["target"].astype("Float64")
                         .astype(float).where(ok), human_target=pairs["human_target"].astype(float))
    out = []
    for i, (key, g) in enumerate(pairs.groupby(KEYS, sort=True)):
        attrs = (attributes or {}).get(key[3])
        t = case_fidelity(g, attrs, B=B, seed=named_seed(seed, *key), level=level, margin=margin)
        out.append(t.assign(**dict(zip(KEYS, key))))
    if not out:
        return pd.DataFrame(columns=COLUMNS)
    table = pd.concat(out, ignore_index=True)[COLUMNS]
    order = table["agents"].map(KINDS.index)
    return (table.assign(_order=order).sort_values([*CASE_KEYS, "_order"], kind="stable", ignore_index=True)
            .drop(columns="_order"))
