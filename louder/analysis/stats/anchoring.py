"""Anchoring agents to a small human study by prediction-powered inference (issue 34; Angelopoulos,
Bates, Fannjiang, Jordan & Zrnic, Science 2023; PPI++: Angelopoulos, Duchi & Zrnic 2023), with the
authors' package ``ppi-python`` (``ppi_py``).

Data of one case (model × scenario × group) and attribute a: n human respondents with Y_i ∈ {0, 1}
(chose the target), each with the prediction Ŷ_i of an agent given the respondent's attributes (0/1,
or its probability of the target), and weights w_i (1 when absent); and N agents without a human
label, with predictions Ŷ^u_j and weights w^u_j. Weights are normalised to mean 1 in each sample
(as ``ppi_py`` does).

- **Humans only**: r_H = Σ w Y / Σ w, Wilson interval at the Kish size m = (Σw)² / Σw²
  (``stats.wilson``).
- **Agents only**: r_A = Σ w^u Ŷ^u / Σ w^u; Wilson at the Kish size when the predictions are 0/1,
  else r_A ± z·sd(w^u Ŷ^u)/√N.
- **PPI** (PPI++ with its power tuning λ ∈ [0, 1], ``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci``
  with w and w_unlabeled):

      θ̂ = mean_j(w^u_j λ Ŷ^u_j) + mean_i(w_i (Y_i − λ Ŷ_i))
      se² = var_j(w^u λ Ŷ^u)/N + var_i(w (Y − λŶ))/n,     interval θ̂ ± z·se

  λ = Σ_i (g_i − ḡ)(ĝ_i − ĝ̄)/n ÷ ((1 + n/N)·var(ĝ ∪ ĝ^u)), g = w(Y − θ₁), ĝ = w(Ŷ − θ₁),
  ĝ^u = w^u(Ŷ^u − θ₁), θ₁ the λ = 1 estimate, clipped to [0, 1] — ``ppi_py``'s own rule, computed
  here (``_ppi``) so that it can be reported and re-tuned in every bootstrap resample, then handed
  to ``ppi_py`` (a test checks that ``ppi_py`` left to tune λ itself gives the same). λ = 0 when the
  predictions do not vary (nothing to learn from them): the PPI interval is then the classical one.
  The rectifier mean(w(Y − λŶ)) corrects the agents' bias, so the interval is valid however wrong
  the agents are; informative agents (Ŷ correlated with Y within the attribute) shrink it.
  Validity needs the labelled and unlabelled people to be draws from one population (the agents
  drawn like the respondents).
- **Effective sample size**: n_eff,PPI = m · var_classical / se², with var_classical =
  var(wY)/n (the λ = 0 case); ``ess_gained`` = n_eff,PPI − m: how many more respondents the human-only
  interval would need to be as narrow; ``worth`` = n_eff,PPI / m = var_classical / se²: the people the
  agents are worth, per respondent (1: nothing; with PPI++'s λ it is about 1 / (1 − ρ²·N/(n + N)), ρ
  the correlation of Y and Ŷ within the attribute); ``width_ratio`` = PPI width ÷ humans-only (Wilson)
  width.
- **DPD of the PPI rates** with a joint bootstrap over humans and agents: for b = 1..B, resample the
  humans (with their paired predictions and weights) and the agents within each attribute with
  replacement, re-tune λ and recompute θ̂_a^b and se_a^b; the simultaneous bootstrap-t band of every
  θ̂_a − θ̂_b (se² = se_a² + se_b²: different people per attribute) projected onto max − min
  (``intervals.dpd_interval``, critical value at least Student's t on min_a n_a − 1 df). Chosen over
  simultaneous per-attribute intervals (Bonferroni over k attributes) because it is the interval every
  other DPD of louder uses — it contains its estimate and keeps its coverage at DPD = 0 — and it is
  narrower than a Bonferroni projection; the resampling unit is the person, human or agent.
  ``dpd_humans`` and ``dpd_agents`` come from the same resamples (variance: the ½-smoothed binomial
  p̃(1 − p̃)/m for 0/1 values, var(wŶ)/N for probabilities); the humans-only DPD interval
  (``dpd_ci_low_humans``, ``dpd_ci_high_humans``) is the same band-and-projection on the humans' rates
  alone, so ``dpd_width_ratio`` = PPI width ÷ humans-only width compares like with like, and
  ``dpd_worth`` = (humans-only width ÷ PPI width)² is the factor by which the respondents would have to
  be multiplied for a humans-only DPD interval to be as narrow (widths shrink as 1/√n).
- **Magnitude ratio** ρ = DPD_agents / DPD_humans. Interval from the two DPD intervals each at level
  1 − (1 − level)/2 (Bonferroni: both hold at once with probability ≥ level):
  [lo_A / hi_H, hi_A / lo_H] (∞ when lo_H = 0: the humans may show no gap at all).
- **Agreement** on the paired respondents: Σ w (Y Ŷ + (1 − Y)(1 − Ŷ)) / Σ w — the share of
  respondents whose agent decided as they did (for probabilities, its expectation).

**The table of a run** (``anchoring``: ``anchoring.csv``; issue 34, docs/how-to/anchor-to-humans.md;
grounded agents: issue 44, docs/how-to/check-agents-against-humans.md): the run's agents aligned with its
human study by the prediction-powered inference above, once per kind of agent (``agents``):

- ``attribute``: the respondents' attribute-only paired agents, with the usual agents of the case as
  the unlabelled set (both know the attribute only, so they are drawn alike);
- ``grounded``: the respondents' grounded agents (persona written from the profile), with the grounded
  agents of the unlabelled profiles (``simulation.unlabelled``) as the unlabelled set — drawn like the
  respondents and grounded the same way, which is what PPI's validity needs (E[Ŷ] = E[Ŷ^u]). Their
  survey weights are the unlabelled file's (``unlabelled.parquet``). The usual agents cannot serve: an
  agent that knows only the attribute predicts differently from one that knows the profile, and the
  rectifier would then not remove the difference. Without unlabelled profiles the grounded rows carry
  their counts and no estimate.

From the run's tables: the respondents of the study (``humans.parquet``, ``louder.humans``),
their paired agents (rows of ``decisions.parquet`` with a ``respondent``) and the usual agents (the
others). Per case (model × condition × scenario × group) and attribute:

- Y_i: respondent i chose the scenario's target (0/1), with its survey weight w_i;
- Ŷ_i: its paired agent's prediction — the agent chose the target (0/1), or in score mode its
  probability of the target (``p_target``);
- Ŷ^u_j: the unlabelled agents' predictions (valid answers only; every answer counted in
  ``unlabelled_<status>``).

A paired agent without a valid answer (invalid, refused, error) cannot be dropped — whether an agent
answers may depend on the respondent, and dropping would bias the human sample — so its respondent keeps
their label and gets the mean of the attribute's valid usual predictions as Ŷ_i. The usual agents keep
their valid answers only, so both predictions have the same expectation, E[Ŷ_i] = E[Ŷ^u | valid],
which is what PPI's validity needs; every paired answer is counted by status (``paired_<status>``).
``agreement`` is computed on the respondents whose agent answered validly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import dpd, named_seed, wilson
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import CASE_KEYS
from louder.types import STATUSES

KEYS = CASE_KEYS  # the case (louder.analysis.stats.keys)
RATE_COLUMNS = ["attribute", "n_humans", "n_agents", "rate_humans", "ci_low_humans", "ci_high_humans",
                "rate_agents", "ci_low_agents", "ci_high_agents", "rate_ppi", "ci_low_ppi", "ci_high_ppi", "lam",
                "n_eff_ppi", "ess_gained", "width_ratio", "worth", "agreement"]
DPD_COLUMNS = ["dpd_humans", "dpd_ci_low_humans", "dpd_ci_high_humans", "dpd_agents", "dpd_ppi", "dpd_ci_low_ppi",
               "dpd_ci_high_ppi", "dpd_width_ratio", "dpd_worth", "ratio", "ratio_ci_low", "ratio_ci_high"]
NAN = float("nan")


def _normalised(w: np.ndarray) -> np.ndarray:
    return w / w.mean(axis=-1, keepdims=True)


def _ppi(Y, Yh, w, Yu, wu) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PPI++ estimate, its variance and λ (module docstring) over the last axis; leading axes are
    resamples. Weights must already be normalised to mean 1."""
    n, N = Y.shape[-1], Yu.shape[-1]
    th1 = (wu * Yu).mean(-1) + (w * (Y - Yh)).mean(-1)
    g = w * (Y - th1[..., None])
    gh = w * (Yh - th1[..., None])
    ghu = wu * (Yu - th1[..., None])
    cov = ((g - g.mean(-1, keepdims=True)) * (gh - gh.mean(-1, keepdims=True))).sum(-1) / n
    var = np.concatenate([gh, ghu], axis=-1).var(-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(var > 1e-15, np.clip(cov / ((1 + n / N) * var), 0, 1), 0.0)
    imputed, rectifier = wu * lam[..., None] * Yu, w * (Y - lam[..., None] * Yh)
    theta = imputed.mean(-1) + rectifier.mean(-1)
    return theta, imputed.var(-1) / N + rectifier.var(-1) / n, lam


def _binary(x: np.ndarray) -> bool:
    return bool(np.isin(x, (0.0, 1.0)).all())


def _mean_var(x: np.ndarray, w: np.ndarray, binary: bool) -> tuple[np.ndarray, np.ndarray]:
    """Weighted mean over the last axis (w normalised to mean 1) and its variance: ½-smoothed
    binomial at the Kish size for 0/1 values, var(w x)/n otherwise."""
    r = (w * x).mean(-1)
    if binary:
        m = x.shape[-1] / (w * w).mean(-1)  # Kish: (Σw)²/Σw² with Σw = n
        return r, I.binomial_variance(r * m, m)
    return r, (w * x).var(-1) / x.shape[-1]


def _rate_interval(x: np.ndarray, w: np.ndarray, level: float) -> tuple[float, float, float]:
    r = float((w * x).sum() / w.sum())
    if _binary(x):
        lo, hi = wilson(r, float(w.sum() ** 2 / (w * w).sum()), level)
        return r, min(lo, r), max(hi, r)  # (Wilson's bound at r = 0 or 1 can miss it by a rounding error)
    z = dist.z(level)
    wn = _normalised(w)
    se = float(np.sqrt((wn * x).var() / x.size))
    return r, r - z * se, r + z * se


def ppi_rate(Y, Yhat, Yhat_unlabeled, w=None, w_unlabeled=None, level: float = 0.95) -> dict:
    """One attribute: the human-only, agent-only and PPI rates with their intervals, λ, the effective
    sample size and the agreement (module docstring). ``ppi_py`` is imported here (it loads numba)."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    Y, Yh, Yu = (np.asarray(v, dtype=float) for v in (Y, Yhat, Yhat_unlabeled))
    w = np.ones_like(Y) if w is None else np.asarray(w, dtype=float)
    wu = np.ones_like(Yu) if w_unlabeled is None else np.asarray(w_unlabeled, dtype=float)
    if Y.size < 2 or Yu.size < 2:
        raise ValueError("PPI needs at least two labelled and two unlabelled predictions")
    _, _, lam = _ppi(Y, Yh, _normalised(w), Yu, _normalised(wu))
    lam = float(lam)
    theta = float(np.squeeze(ppi_mean_pointestimate(Y, Yh, Yu, lam=lam, w=w, w_unlabeled=wu)))
    lo, hi = (float(np.squeeze(v)) for v in ppi_mean_ci(Y, Yh, Yu, alpha=1 - level, lam=lam, w=w, w_unlabeled=wu))
    m = float(w.sum() ** 2 / (w * w).sum())
    z = dist.z(level)
    se_ppi = (hi - lo) / (2 * z)
    var_classical = float((_normalised(w) * Y).var() / Y.size)
    n_eff = m * var_classical / se_ppi**2 if se_ppi > 0 and var_classical > 0 else NAN
    rh, lo_h, hi_h = _rate_interval(Y, w, level)
    ra, lo_a, hi_a = _rate_interval(Yu, wu, level)
    return dict(n_humans=int(Y.size), n_agents=int(Yu.size), rate_humans=rh, ci_low_humans=lo_h, ci_high_humans=hi_h,
                rate_agents=ra, ci_low_agents=lo_a, ci_high_agents=hi_a, rate_ppi=theta, ci_low_ppi=lo,
                ci_high_ppi=hi, lam=lam, n_eff_ppi=n_eff, ess_gained=n_eff - m,
                width_ratio=_ratio(hi - lo, hi_h - lo_h), worth=n_eff / m,
                agreement=float((w * (Y * Yh + (1 - Y) * (1 - Yh))).sum() / w.sum()))


def _ratio(a: float, b: float) -> float:
    return float(a / b) if b > 0 else NAN


def _estimates(Y, Yh, w, Yu, wu, binary_u: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """(estimate, variance) of the humans-only, agents-only and PPI rates, per resample."""
    th, v, _ = _ppi(Y, Yh, w, Yu, wu)
    return [_mean_var(Y, w, True), _mean_var(Yu, wu, binary_u), (th, v)]


def ppi_dpd(samples: list[tuple], B: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """DPDs of one case from a joint bootstrap over humans and agents (module docstring).

    ``samples``: per attribute (Y, Ŷ, w, Ŷ^u, w^u). Returns dpd_humans with its humans-only interval,
    dpd_agents, dpd_ppi with its interval, their ratio of widths and the worth, and the magnitude ratio
    with its interval."""
    rng = np.random.default_rng(seed)
    k = len(samples)
    est = {s: np.empty(k) for s in ("h", "a", "p")}
    var = {s: np.empty(k) for s in ("h", "a", "p")}
    draws = {s: np.empty((B, k)) for s in ("h", "a", "p")}
    dvar = {s: np.empty((B, k)) for s in ("h", "a", "p")}
    binary_u = all(_binary(np.asarray(s[3], float)) for s in samples)
    for a, (Y, Yh, w, Yu, wu) in enumerate(samples):
        Y, Yh, w, Yu, wu = (np.asarray(v, dtype=float) for v in (Y, Yh, w, Yu, wu))
        n, N = Y.size, Yu.size
        data = (Y[None], Yh[None], _normalised(w)[None], Yu[None], _normalised(wu)[None])
        for s, (e, v) in zip("hap", _estimates(*data, binary_u)):
            est[s][a], var[s][a] = e[0], v[0]
        chunk = max(1, 4_000_000 // (n + N))  # resamples per block: bounded memory with many agents
        for start in range(0, B, chunk):
            m = min(chunk, B - start)
            ih, iu = rng.integers(0, n, size=(m, n)), rng.integers(0, N, size=(m, N))
            boot = (Y[ih], Yh[ih], _normalised(w[ih]), Yu[iu], _normalised(wu[iu]))
            for s, (e, v) in zip("hap", _estimates(*boot, binary_u)):
                draws[s][start:start + m, a], dvar[s][start:start + m, a] = e, v
    df = min(np.asarray(s[0]).size for s in samples) - 1

    def interval(s: str, lev: float) -> tuple[float, float]:
        return I.dpd_interval(est[s], draws[s], I.pair_sum(var[s]), I.pair_sum(dvar[s]), lev, df=df)

    lo, hi = interval("p", level)
    lo_hn, hi_hn = interval("h", level)  # the humans-only interval beside the PPI one, at the same level
    width = _ratio(hi - lo, hi_hn - lo_hn)
    bonferroni = 1 - (1 - level) / 2
    (lo_h, hi_h), (lo_a, hi_a) = interval("h", bonferroni), interval("a", bonferroni)
    d_h, d_a = dpd(est["h"]), dpd(est["a"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = d_a / d_h if d_h > 0 else NAN
        r_lo = lo_a / hi_h if hi_h > 0 else NAN
        r_hi = hi_a / lo_h if lo_h > 0 else (np.inf if hi_h > 0 else NAN)
    return dict(dpd_humans=d_h, dpd_ci_low_humans=lo_hn, dpd_ci_high_humans=hi_hn, dpd_agents=d_a,
                dpd_ppi=dpd(est["p"]), dpd_ci_low_ppi=lo, dpd_ci_high_ppi=hi, dpd_width_ratio=width,
                dpd_worth=width ** -2 if width > 0 else NAN, ratio=ratio, ratio_ci_low=r_lo, ratio_ci_high=r_hi)




def ppi_table(humans: pd.DataFrame, agents: pd.DataFrame, keys: Sequence[str] | None = None, B: int = 2000,
                   seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """``anchored.csv``: per case (``keys``, by default those of model, condition, scenario, group that
    both tables have) × attribute, the columns ``RATE_COLUMNS`` then ``DPD_COLUMNS`` (the case's DPDs,
    repeated on each attribute's row).

    ``humans``: one row per respondent and case: keys, ``attribute``, ``target`` (the respondent's
    decision was the target: 0/1), ``prediction`` (the paired agent's: 0/1 or its probability of the
    target; rows whose agent gave no valid answer must be dropped or given the agents' mean by the
    caller, and counted) and optionally ``weight``. ``agents``: one row per agent without a human
    label: keys, ``attribute``, ``prediction``, optionally ``weight``. An attribute needs at least two
    of each; with fewer its row has the counts and no estimate (and it stays out of the DPD)."""
    if keys is None:
        keys = [k for k in KEYS if k in humans.columns and k in agents.columns]
    keys = list(keys)
    out = []
    for i, (key, h) in enumerate(humans.groupby(keys, sort=True) if keys else [((), humans)]):
        key = key if isinstance(key, tuple) else (key,)
        a = agents[(agents[keys] == pd.Series(key, index=keys)).all(axis=1)] if keys else agents
        rows, samples = [], []
        for attr, ha in h.groupby("attribute", sort=True):
            aa = a[a["attribute"] == attr]
            if len(ha) < 2 or len(aa) < 2:  # reported with its counts, no estimate
                rows.append(dict(zip(keys, key), attribute=attr, n_humans=len(ha), n_agents=len(aa)))
                continue
            w = ha["weight"].to_numpy(float) if "weight" in ha else np.ones(len(ha))
            wu = aa["weight"].to_numpy(float) if "weight" in aa else np.ones(len(aa))
            Y, Yh, Yu = (ha["target"].to_numpy(float), ha["prediction"].to_numpy(float),
                         aa["prediction"].to_numpy(float))
            rows.append(dict(zip(keys, key), attribute=attr, **ppi_rate(Y, Yh, Yu, w, wu, level=level)))
            samples.append((Y, Yh, w, Yu, wu))
        if len(samples) >= 2:
            d = ppi_dpd(samples, B=B, seed=named_seed(seed, *key), level=level)
        else:
            d = dict.fromkeys(DPD_COLUMNS, NAN)
        out += [dict(r, **d) for r in rows]
    return pd.DataFrame(out, columns=[*keys, *RATE_COLUMNS, *DPD_COLUMNS])


# --- anchoring.csv: a run's agents and its human study ------------------------------------------------

ACCOUNTING = [f"paired_{s}" for s in STATUSES]
UNLABELLED_ACCOUNTING = [f"unlabelled_{s}" for s in STATUSES]
COLUMNS = [*CASE_KEYS, "agents", *RATE_COLUMNS, *ACCOUNTING, *UNLABELLED_ACCOUNTING, *DPD_COLUMNS]
KINDS = ("attribute", "grounded")  # the ``agents`` of the table (decisions.parquet's ``grounding`` column)


def _prediction(rows: pd.DataFrame) -> pd.Series:
    """The agents' prediction: p_target in score mode (every valid answer has one), else target as 0/1."""
    valid = rows[rows["status"] == "valid"]
    if "p_target" in rows.columns and len(valid) and valid["p_target"].notna().all():
        return rows["p_target"].astype("Float64").astype(float)
    return rows["target"].astype("Float64").astype(float)


def kinds(decisions: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per kind of agent (``KINDS``) present in ``decisions`` (with its ``respondent`` column): which rows
    are its paired agents and which its unlabelled set (module docstring). Without a ``grounding``
    column (a study without grounded agents) the one kind is ``attribute``."""
    paired = decisions["respondent"].notna().to_numpy(bool)
    if "grounding" not in decisions.columns:
        return {"attribute": (paired, ~paired)}
    g = decisions["grounding"].astype("string").fillna("")
    out = {"attribute": (paired & (g == "attribute").to_numpy(bool), ~paired),
           "grounded": ((g == "grounded").to_numpy(bool), (g == "unlabelled").to_numpy(bool))}
    return {k: (p, u) for k, (p, u) in out.items() if p.any()}


def anchoring(decisions: pd.DataFrame, humans: pd.DataFrame, B: int = 2000, seed: int = 0,
              level: float = 0.95, unlabelled: pd.DataFrame | None = None) -> pd.DataFrame:
    """``anchoring.csv``: per case, kind of agent (``agents``) and attribute the humans-only, agents-only
    and PPI rates with their intervals, λ, the effective sample size, its gain and the worth, the ratio of
    widths, the paired agents' agreement and accounting, the unlabelled agents' accounting, and the
    case's DPDs (humans with its interval, agents, PPI with its interval, the ratio of widths and the
    worth) and magnitude ratio (``COLUMNS``; the module docstring has the formulas).

    ``decisions``: the case selection of decisions.parquet with its ``respondent`` (and ``grounding``)
    column; ``humans``: the study in long form (``louder.humans.COLUMNS``); ``unlabelled``:
    the unlabelled profiles (``UNLABELLED_COLUMNS``: their weights). Cases without paired agents
    (another scenario, a policy variant) are left out."""
    if "respondent" not in decisions.columns:
        return pd.DataFrame(columns=COLUMNS)
    d = decisions.assign(prediction=_prediction(decisions), weight=1.0)
    if unlabelled is not None and "grounding" in d.columns and not unlabelled.empty:
        weights = unlabelled.set_index(["respondent", "scenario", "group"])["weight"]
        u = (d["grounding"] == "unlabelled").fillna(False).to_numpy(bool)
        at = pd.MultiIndex.from_frame(d.loc[u, ["respondent", "scenario", "group"]].astype(str))
        d.loc[u, "weight"] = weights.reindex(at).fillna(1.0).to_numpy()
    parts = [_anchoring(d[p].drop(columns="weight"), d[u], humans, B, seed, level).assign(agents=kind)
             for kind, (p, u) in kinds(d).items()]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    table = pd.concat(parts, ignore_index=True)[COLUMNS]
    order = table["agents"].map(KINDS.index)
    return (table.assign(_order=order).sort_values([*CASE_KEYS, "_order", "attribute"], ignore_index=True)
            .drop(columns="_order"))


def _counts(rows: pd.DataFrame, by: list[str], prefix: str) -> pd.DataFrame:
    """Every answer of ``rows`` by status, per ``by`` (``{prefix}_<status>``)."""
    counts = pd.crosstab([rows[k] for k in by], rows["status"]).reindex(columns=list(STATUSES), fill_value=0)
    return counts.rename(columns=lambda s: f"{prefix}_{s}").reset_index()


def _anchoring(paired: pd.DataFrame, usual: pd.DataFrame, humans: pd.DataFrame, B: int, seed: int,
               level: float) -> pd.DataFrame:
    """One kind of agent: its paired agents and its unlabelled set (``usual``) against the respondents."""
    by = [*CASE_KEYS, "attribute"]
    valid = usual[usual["status"] == "valid"]
    mean = valid.groupby(by)["prediction"].mean().rename("agents_mean").reset_index()
    h = humans.rename(columns={"target": "human", "attribute": "human_attribute"})
    pairs = paired.merge(h[["respondent", "scenario", "group", "human_attribute", "human", "weight"]],
                         on=["respondent", "scenario", "group"], how="inner", validate="many_to_one")
    if (pairs["attribute"] != pairs["human_attribute"]).any():  # the agent was made from the respondent's row
        raise ValueError("paired agents whose attribute is not their respondent's")
    pairs = pairs.merge(mean, on=by, how="left")
    ok = pairs["status"] == "valid"
    pairs["prediction"] = pairs["prediction"].where(ok, pairs["agents_mean"])
    human_rows = pairs.assign(target=pairs["human"].astype(float))[
        [*CASE_KEYS, "attribute", "target", "prediction", "weight"]]  # (no prediction only without unlabelled
    # agents: then the attribute has its counts and no estimate)
    table = ppi_table(human_rows, valid[[*by, "prediction", "weight"]], keys=CASE_KEYS, B=B, seed=seed, level=level)
    agree = pairs[ok].assign(hit=lambda x: x["weight"] * (x["human"].astype(float) * x["prediction"] +
                                                         (1 - x["human"].astype(float)) * (1 - x["prediction"])))
    agreement = (agree.groupby(by)["hit"].sum() / agree.groupby(by)["weight"].sum()).rename("agreement").reset_index()
    table = (table.drop(columns="agreement").merge(agreement, on=by, how="left")
             .merge(_counts(pairs, by, "paired"), on=by, how="left")
             .merge(_counts(usual, by, "unlabelled"), on=by, how="left"))
    counted = ACCOUNTING + UNLABELLED_ACCOUNTING
    table[counted] = table[counted].fillna(0).astype(int)
    return table
