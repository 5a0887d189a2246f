"""Does a DPD survive how the scenario was presented? (issue 25; formulas and reasons in docs/robustness.md)

A run may say each scenario in several **wordings** (every agent decides once per wording, its persona
shared), list the choices in several **orders** (each agent sees one, balanced across an attribute's
agents) and signal the attribute in several ways (**signals**, each with its own agents). Wordings and
orders are nuisance variation: the analysis pools over them and counts wording-to-wording variation as
a source of uncertainty. Signals are designs, never pooled: one row per signal.

Notation for one case × signal: agents i of attribute a(i), wordings w = 1..W; y_iw = 1 when agent i's
valid decision in wording w is the target, v_iw = 1 when it is valid. The pooled rate of attribute a is

    r_a = Σ_{i∈a} Σ_w y_iw / Σ_{i∈a} Σ_w v_iw,        pooled DPD = max_a r_a − min_a r_a.

Agents and wordings are **crossed** (every agent answers in every wording), so the interval comes from a
two-way ("pigeonhole", Owen 2007) bootstrap — wordings resampled with replacement and, independently,
agents within each attribute (and order, when every order has two agents or more) — and louder's DPD
interval (``intervals.dpd_interval``: a simultaneous bootstrap-t band of the pair differences projected
onto the max), with each pair difference's variance from the two-way cluster-robust formula of Cameron,
Gelbach & Miller (2011) and Satterthwaite degrees of freedom for the wording part.

The verdict (issue 31) reads two tests per case, each Holm-adjusted across the run's cases: the pooled
DPD against 0 (``p_disparity``, the interval inverted) and the heterogeneity test; and the sign
stability of the pooled contrast (``verdict``, ``sign_stability``).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.stats import distributions as dist
from louder.analysis.stats import intervals as I
from louder.analysis.stats import keys, power
from louder.analysis.stats.keys import CASE_KEYS, is_target, is_valid
from louder.scenarios import AS_WRITTEN

ALPHA = stats.ALPHA  # level of the disparity and heterogeneity decisions, after Holm across the run's cases
STABLE = 2 / 3  # least share of wordings in which the pooled contrast keeps its sign, for `robust`
VERDICTS = ("robust", "wording-dependent", "underpowered", "no disparity")
ROBUSTNESS_COLUMNS = [*CASE_KEYS, "signal", "n_wordings", "n_orders", "dpd_by_wording", "pooled_dpd", "pooled_ci_low",
                      "pooled_ci_high", "p_disparity", "p_disparity_holm", "between_wording_sd", "p_heterogeneity",
                      "p_heterogeneity_holm", "sign_stability", "verdict",
                      # beside the columns: what the verdict rests on
                      "unit", "ci_by_wording", "dpd_by_order", "pooled_rates", "n_agents", "n_valid", "mdd"]
POSITION_COLUMNS = ["model", "scenario", "k", "rate_first_listed", "ci_low", "ci_high", "expected", "n", "p_value",
                    "mean_p_first_listed", "orders", "target_rate_balanced", "dpd_balanced"]


def varies(decisions: pd.DataFrame | None) -> bool:
    """Whether any case of the run has more than one wording, order or signal."""
    if decisions is None or decisions.empty:
        return False
    cols = [c for c in ("wording", "choice_order", "signal") if c in decisions]
    return bool(cols) and bool((decisions.groupby(CASE_KEYS)[cols].nunique() > 1).any().any())


# --- the pooled DPD and its interval ----------------------------------------------------------

@dataclass(frozen=True)
class Pooled:
    """A case's pooled rates, DPD and interval."""

    rates: tuple[float, ...]
    dpd: float
    low: float
    high: float
    df: float | None  # degrees of freedom of the critical value (None: normal)
    p_value: float = float("nan")  # of DPD = 0, inverting the interval (``intervals.dpd_p_value``)


def agent_weights(rng: np.random.Generator, cells: list[np.ndarray], n: int, B: int) -> np.ndarray:
    """B × n agent weights: within each cell (index array), how often each agent was drawn."""
    g = np.zeros((B, n))
    for idx in cells:
        g[:, idx] = rng.multinomial(idx.size, np.full(idx.size, 1 / idx.size), size=B)
    return g


def _moments(G: np.ndarray, M: np.ndarray, Y: np.ndarray, V: np.ndarray, groups: list[np.ndarray]):
    """Rates and the two-way variance pieces for weights G (B × n agents) and M (B × W wordings).

    Per attribute a: N_a = Σ_i g_i Σ_w m_w v_iw, r_a = Σ_i g_i Σ_w m_w y_iw / N_a;
    A_a = Σ_i g_i e_i² / N_a² with e_i = Σ_w m_w (y_iw − r_a v_iw) (agents as clusters);
    C_a = Σ_i g_i Σ_w m_w (y_iw − r_a v_iw)² / N_a² (single decisions); S_aw = Σ_i g_i (y_iw − r_a v_iw) / N_a
    (wording residuals). Returns r (B × k), A, C (B × k), S (B × k × W)."""
    YM, VM = Y @ M.T, V @ M.T  # n × B
    B, k, W = G.shape[0], len(groups), Y.shape[1]
    r, A, C = np.full((B, k), np.nan), np.zeros((B, k)), np.zeros((B, k))
    S = np.zeros((B, k, W))
    for a, idx in enumerate(groups):
        g = G[:, idx]
        num, den = (g * YM[idx].T).sum(1), (g * VM[idx].T).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ra = np.where(den > 0, num / den, np.nan)
        r[:, a] = ra
        e = YM[idx].T - ra[:, None] * VM[idx].T
        with np.errstate(invalid="ignore", divide="ignore"):
            A[:, a] = (g * e * e).sum(1) / den ** 2
            # y ≤ v binary: (y − r v)² = y (1 − 2r) + r² v
            C[:, a] = ((1 - 2 * ra) * num + ra * ra * den) / den ** 2
            S[:, a, :] = (g @ Y[idx] - ra[:, None] * (g @ V[idx])) / den[:, None]
        # a rate at 0 or 1 has no plug-in spread: floor at the smoothed binomial variance (intervals module)
        A[:, a] = np.maximum(A[:, a], I.binomial_variance(num, den))
    return r, A, C, S


def _pair_variance(A: np.ndarray, C: np.ndarray, S: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """var(r_a − r_b) over the pairs (B × P): agents' part A_a + A_b plus the wordings' part
    W/(W−1) Σ_w m_w (S_aw − S_bw)² less the single decisions counted twice (C_a + C_b) — the two-way
    cluster-robust variance (Cameron, Gelbach & Miller 2011), floored at the agents' part. Also returns
    the wordings' excess over the agents' part (for Satterthwaite's df)."""
    i, j = I.pair_index(A.shape[1])
    agents = A[:, i] + A[:, j]
    W = M.shape[1]
    # W/(W − 1): the usual small-sample factor of a cluster-robust variance over W clusters (without it the
    # wordings' part is biased down by (W − 1)/W — a third with 3 wordings)
    scale = W / (W - 1) if W > 1 else 0.0
    wording = scale * np.einsum("bw,bpw->bp", M, (S[:, i, :] - S[:, j, :]) ** 2) - C[:, i] - C[:, j]
    excess = np.maximum(wording, 0)
    return agents + excess, excess


def pooled_dpd(Y: np.ndarray, V: np.ndarray, attribute: np.ndarray, stratum: np.ndarray, B: int = 10_000,
               seed: int = 0, level: float = 0.95, chunk: int = 1000) -> Pooled:
    """Pooled DPD over wordings with an interval that counts wording-to-wording variation.

    Y, V: agents × wordings (target, valid: 0/1); attribute (n,) in 0..k−1; stratum (n,): the agent's
    order (agents are resampled within attribute × stratum when every such cell has ≥ 2 agents,
    within attribute otherwise). Each resample draws W wordings with replacement (weights m_w; all 1
    when W = 1) and, independently, agents (weights g_i); the rates of the resample are
    r*_a = Σ g m y / Σ g m v. The interval is ``intervals.dpd_interval`` on these draws with the pair
    variances of ``_pair_variance`` (computed on the data and on each resample) and, when W ≥ 2, a
    floor on its critical value that gives each part of the variance its own degrees of freedom
    (``_component_df``). ``p_value`` tests DPD = 0 by inverting that interval
    (``intervals.dpd_p_value`` with the same floor, ``_floor_tail``): p < 1 − level ⇔ low > 0.
    """
    Y, V = np.asarray(Y, dtype=float), np.asarray(V, dtype=float)
    attribute, stratum = np.asarray(attribute), np.asarray(stratum)
    n, W = Y.shape
    k = int(attribute.max()) + 1 if n else 0
    groups = [np.flatnonzero(attribute == a) for a in range(k)]
    one = np.ones((1, W))
    r, A, C, S = _moments(np.ones((1, n)), one, Y, V, groups)
    rates = r[0]
    if np.sum(~np.isnan(rates)) < 2:
        return Pooled(tuple(map(float, rates)), float("nan"), float("nan"), float("nan"), None)
    est = stats.dpd(rates)
    var, excess = _pair_variance(A, C, S, one)
    cells = [np.flatnonzero((attribute == a) & (stratum == s)) for a in range(k) for s in np.unique(stratum)]
    cells = [c for c in cells if c.size]
    if any(c.size < 2 for c in cells):
        cells = [g for g in groups if g.size]
    rng = np.random.default_rng(seed)
    draws, dvar = [], []
    for start in range(0, B, chunk):
        b = min(chunk, B - start)
        M = rng.multinomial(W, np.full(W, 1 / W), size=b).astype(float) if W > 1 else np.ones((b, 1))
        G = agent_weights(rng, cells, n, b)
        rb, Ab, Cb, Sb = _moments(G, M, Y, V, groups)
        draws.append(rb)
        dvar.append(_pair_variance(Ab, Cb, Sb, M)[0])
    draws, dvar = np.vstack(draws), np.vstack(dvar)
    df = None
    if W > 1:
        df = _component_df(var[0] - excess[0], excess[0], W, level)
    lo, hi = I.dpd_interval(rates, draws, var[0], dvar, level, df)
    p = I.dpd_p_value(rates, draws, var[0], dvar, floor=_floor_tail(var[0] - excess[0], excess[0], W))
    return Pooled(tuple(map(float, rates)), est, lo, hi, df, p)


def _floor_tail(agents_part: np.ndarray, wording_part: np.ndarray, W: int):
    """The p-value side of ``_component_df``'s floor: T ↦ the α at which the floor's critical value,
    max over the pairs of c(α)² = (z² A + t²_{W−1} X) / (A + X) with z, t_{W−1} the upper α/2
    quantiles, equals T (a root search: c falls as α grows). None — the normal tail — with one
    wording or no wordings' part, where the floor is z."""
    from scipy.optimize import brentq

    total = agents_part + wording_part
    ok = total > 0
    if W < 2 or not (wording_part[ok] > 0).any():
        return None
    A, X = agents_part[ok] / total[ok], wording_part[ok] / total[ok]

    def critical(alpha: float) -> float:
        z, tw = -dist.normal_quantile(alpha / 2), -dist.t_quantile(alpha / 2, W - 1)
        return float(np.sqrt((z * z * A + tw * tw * X).max()))

    def tail(T: float) -> float:
        tiny = 1e-15  # below this the p-value reads 0 (t_1 quantiles overflow further out)
        if np.isinf(T) or critical(tiny) <= T:
            return 0.0
        return float(brentq(lambda a: critical(a) - T, tiny, 1.0, xtol=1e-17))

    return tail


def _component_df(agents_part: np.ndarray, wording_part: np.ndarray, W: int, level: float) -> float | None:
    """Degrees of freedom whose Student quantile is the critical value of the two parts together:
    c² = (z² A + t²_{W−1} X) / (A + X) per pair (A the agents' part, X the wordings' part of the
    variance; z the normal and t_{W−1} the Student quantile, W wordings), the largest c over the pairs,
    turned back into df with t_df = c. Each part keeps its own critical value: the wordings' part rests
    on W − 1 degrees of freedom however small its estimate happens to be (Satterthwaite's df, which
    trusts that estimate, under-covered with 3 wordings in simulation; docs/robustness.md)."""
    from scipy.optimize import brentq

    q = (1 + level) / 2
    z, tw = dist.normal_quantile(q), dist.t_quantile(q, W - 1)
    total = agents_part + wording_part
    ok = total > 0
    if not ok.any():
        return None
    c = float(np.sqrt(((z * z * agents_part + tw * tw * wording_part)[ok] / total[ok]).max()))
    if c <= z * (1 + 1e-9):
        return None
    return float(brentq(lambda df: dist.t_quantile(q, df) - c, W - 1 - 1e-9, 1e7))


# --- heterogeneity, stability, the verdict ----------------------------------------------------

def heterogeneity_p(x, n) -> float:
    """Goodness-of-fit test that the attribute effect is the same in every unit (wording or order).

    x, n: units × attributes (targets, valid decisions). Logistic model logit p_ua = α_u + β_a against
    the saturated one (the unit × attribute interaction), by Pearson's statistic
    X² = Σ_ua (x − μ)² / (μ (1 − μ/n)) with μ the additive fit (statsmodels GLM, binomial,
    ``pearson_chi2``), df = cells − (U + k − 1), p = P(χ²_df ≥ X²). Pearson's rather than the deviance
    G²: with rates near 0 or 1 and tens of answers per cell the χ² tail of G² is liberal (6.3 % below
    0.05 at rates 0.9/0.5/0.5, 40 answers per cell; X²: 4.7 %; docs/robustness.md). The deviance stands
    in where X² is not finite (a fitted rate of exactly 0 or 1). Cells with n = 0 are left out; NaN
    with fewer than 2 units or df < 1. Observations are treated as independent: an agent's answers in
    several wordings are positively correlated, which makes this test of a within-agent contrast
    conservative (docs/robustness.md)."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    x, n = np.asarray(x, dtype=float), np.asarray(n, dtype=float)
    u, a = np.nonzero(n > 0)
    if np.unique(u).size < 2 or np.unique(a).size < 2:
        return float("nan")
    _, ui = np.unique(u, return_inverse=True)
    _, ai = np.unique(a, return_inverse=True)
    U, K = ui.max() + 1, ai.max() + 1
    df = len(u) - (U + K - 1)
    if df < 1:
        return float("nan")
    X = np.column_stack([np.ones(len(u))] + [(ui == j).astype(float) for j in range(1, U)]
                        + [(ai == j).astype(float) for j in range(1, K)])
    xs, ns = x[u, a], n[u, a]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerfectSeparationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            fit = sm.GLM(np.column_stack([xs, ns - xs]), X, family=sm.families.Binomial()).fit()
            stat = float(fit.pearson_chi2)
            if not np.isfinite(stat):
                stat = float(fit.deviance)
        except Exception:  # noqa: BLE001 — a fit that fails says nothing; no p-value rather than a wrong one
            return float("nan")
    return float(dist.chi2_sf(max(stat, 0.0), df)) if np.isfinite(stat) else float("nan")


def sign_stability(unit_rates: np.ndarray, pooled: np.ndarray) -> float:
    """Share of units (wordings, or orders) in which the pooled contrast keeps its sign: with hi and lo
    the pooled highest- and lowest-rate attributes, the share of units u with r_u,hi − r_u,lo > 0
    (units lacking either rate left out). Only these two attributes are compared, so attributes tied
    elsewhere — two at the bottom, say — cannot flip it. NaN with fewer than 2 units or no pooled
    contrast (pooled DPD 0)."""
    pooled = np.asarray(pooled, dtype=float)
    if np.sum(~np.isnan(pooled)) < 2:
        return float("nan")
    hi, lo = int(np.nanargmax(pooled)), int(np.nanargmin(pooled))
    if not pooled[hi] > pooled[lo]:
        return float("nan")
    u = np.asarray(unit_rates, dtype=float).reshape(-1, pooled.size)
    d = u[:, hi] - u[:, lo]
    d = d[~np.isnan(d)]
    return float(np.mean(d > 0)) if d.size >= 2 else float("nan")


def between_sd(x: np.ndarray, n: np.ndarray, pooled: np.ndarray) -> float:
    """SD across units of the pooled-extremes contrast, net of sampling noise (method of moments):
    d_u = r_u,hi − r_u,lo (hi, lo: the pooled highest and lowest attributes), v_u = p̃(1−p̃)/n summed
    over the two (``intervals.binomial_variance``), τ² = max(0, s²(d) − mean v). NaN with < 2 units."""
    if np.sum(~np.isnan(pooled)) < 2:
        return float("nan")
    hi, lo = int(np.nanargmax(pooled)), int(np.nanargmin(pooled))
    keep = (n[:, hi] > 0) & (n[:, lo] > 0)
    if keep.sum() < 2:
        return float("nan")
    x, n = x[keep], n[keep]
    d = x[:, hi] / n[:, hi] - x[:, lo] / n[:, lo]
    v = I.binomial_variance(x[:, hi], n[:, hi]) + I.binomial_variance(x[:, lo], n[:, lo])
    return float(np.sqrt(max(0.0, np.var(d, ddof=1) - np.mean(v))))


def verdict(p_disparity: float, p_het: float, stability: float, mdd: float, alpha: float = ALPHA) -> str:
    """The rules of docs/robustness.md. p_disparity and p_het are Holm-adjusted across the run's cases
    (``robustness_table``); each decides through ``stats.significant`` (p < alpha).

    1. A disparity first: p_disparity < alpha (the pooled interval above 0, after the run's
       multiplicity control) → ``robust``, unless the wordings disagree: p_het < alpha (the
       disparity differs between wordings beyond noise) or the pooled contrast keeps its sign in
       fewer than 2/3 of them (``sign_stability``) → ``wording-dependent``. One unit (NaN): robust.
    2. No disparity shown, but p_het < alpha → ``wording-dependent``: an attribute effect that some
       wordings show and others do not, which the pool dilutes or cancels.
    3. Otherwise ``underpowered`` when the test could not see a DPD of 0.3 (mdd > 0.3 or none), else
       ``no disparity``."""
    heterogeneous = stats.significant(p_het, alpha)
    if stats.significant(p_disparity, alpha):
        unstable = not np.isnan(stability) and stability < STABLE
        return "wording-dependent" if heterogeneous or unstable else "robust"
    if heterogeneous:
        return "wording-dependent"
    if not mdd <= power.UNDERPOWERED:
        return "underpowered"
    return "no disparity"


# --- the tables -------------------------------------------------------------------------------

def _matrices(d: pd.DataFrame, attributes: list[str], wordings: list[str]):
    """Agent × wording matrices (Y target, V valid), attribute index and order stratum of a case."""
    d = d.assign(_v=is_valid(d).astype(float), _y=is_target(d).astype(float))
    agents = d.drop_duplicates("agent_id")[["agent_id", "attribute", "choice_order"]].sort_values("agent_id")
    agents = agents[agents["attribute"].isin(attributes)]
    ai = {x: i for i, x in enumerate(agents["agent_id"])}
    Y, V = np.zeros((len(agents), len(wordings))), np.zeros((len(agents), len(wordings)))
    wi = {w: j for j, w in enumerate(wordings)}
    rows = d[d["agent_id"].isin(ai)]
    r_idx = rows["agent_id"].map(ai).to_numpy()
    w_idx = rows["wording"].map(wi).to_numpy()
    np.add.at(Y, (r_idx, w_idx), rows["_y"].to_numpy())
    np.add.at(V, (r_idx, w_idx), rows["_v"].to_numpy())
    attr = agents["attribute"].map({a: i for i, a in enumerate(attributes)}).to_numpy()
    stratum = pd.factorize(agents["choice_order"].astype(str))[0]
    return Y, V, attr, stratum


def _unit_counts(d: pd.DataFrame, unit: str, attributes: list[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    valid = keys.valid(d)
    units = sorted(d[unit].astype(str).unique())
    x = np.zeros((len(units), len(attributes)))
    n = np.zeros_like(x)
    for (u, a), g in valid.groupby([valid[unit].astype(str), "attribute"]):
        if a in attributes:
            x[units.index(u), attributes.index(a)] = g["target"].fillna(False).astype(bool).sum()
            n[units.index(u), attributes.index(a)] = len(g)
    return units, x, n


def _dpds(units: list[str], x: np.ndarray, n: np.ndarray, B: int, seed: int, intervals: bool):
    dpd, ci = {}, {}
    for j, u in enumerate(units):
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(n[j] > 0, x[j] / n[j], np.nan)
        dpd[u] = None if np.sum(~np.isnan(r)) < 2 else round(stats.dpd(r), 6)
        if intervals:
            lo, hi = stats.dpd_confidence_interval(n[j].astype(int), x[j].astype(int), B=B, seed=seed + j)
            ci[u] = None if np.isnan(lo) else [round(lo, 6), round(hi, 6)]
    return dpd, ci


def robustness_table(decisions: pd.DataFrame, attributes: dict[str, list[str]] | None = None, B: int = 10_000,
                     seed: int = 0) -> pd.DataFrame:
    """One row per model × condition × scenario × group × signal (ROBUSTNESS_COLUMNS): the DPD in each
    wording with its interval, the pooled DPD with the two-way interval and its p-value
    (``pooled_dpd``), the between-wording SD (``between_sd``), the heterogeneity test
    (``heterogeneity_p``), the sign stability and the verdict (``verdict``). The run's multiplicity
    control: p_disparity and p_heterogeneity are each Holm-adjusted across the table's rows (every
    case × signal of the run) before the verdict reads them. The unit of nuisance variation is the
    wording when the case has two or more, else the choice order (then n_wordings = 1 and every
    per-wording column reads the order)."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=ROBUSTNESS_COLUMNS)
    d = decisions.copy()
    for c, default in (("wording", AS_WRITTEN), ("signal", "stated")):
        d[c] = d[c].fillna(default).astype(str) if c in d else default
    d["choice_order"] = d["choice_order"].fillna("").astype(str) if "choice_order" in d else ""
    rows = []
    for i, (key, g) in enumerate(d.groupby([*CASE_KEYS, "signal"], sort=True)):
        attrs = [a for a in (attributes or {}).get(key[3], []) if a in set(g["attribute"])] or sorted(
            g["attribute"].dropna().unique())
        wordings = sorted(g["wording"].unique())
        orders = sorted(g["choice_order"].unique())
        unit = "wording" if len(wordings) > 1 else "choice_order" if len(orders) > 1 else None
        s = stats.substream(seed, i)
        Y, V, attr, stratum = _matrices(g, attrs, wordings)
        pooled = pooled_dpd(Y, V, attr, stratum, B=B, seed=s)
        rates = np.array(pooled.rates)
        if unit:
            units, x, n = _unit_counts(g, unit, attrs)
            by_unit, ci_unit = _dpds(units, x, n, B, s + 1, intervals=True)
            unit_rates = np.where(n > 0, x / np.where(n > 0, n, 1), np.nan)
            p_het, stab, sd = heterogeneity_p(x, n), sign_stability(unit_rates, rates), between_sd(x, n, rates)
        else:
            by_unit, ci_unit, p_het, stab, sd = {}, {}, float("nan"), float("nan"), float("nan")
        _, xo, no = _unit_counts(g, "choice_order", attrs)
        by_order, _ = _dpds(orders, xo, no, B, s, intervals=False)
        n_agents = np.array([int(((attr == a) & (V.sum(1) > 0)).sum()) for a in range(len(attrs))])
        base = float(np.nansum(Y) / V.sum()) if V.sum() else float("nan")
        mdd = power.minimum_detectable_dpd(n_agents, base, seed=seed)
        wording_dpd = by_unit if unit == "wording" else {wordings[0]: None if np.isnan(pooled.dpd) else round(
            pooled.dpd, 6)}
        rows.append(dict(
            zip([*CASE_KEYS, "signal"], key), n_wordings=len(wordings), n_orders=len(orders),
            dpd_by_wording=json.dumps(wording_dpd), pooled_dpd=pooled.dpd, pooled_ci_low=pooled.low,
            pooled_ci_high=pooled.high, p_disparity=pooled.p_value, between_wording_sd=sd, p_heterogeneity=p_het,
            sign_stability=stab, unit=unit or "",
            ci_by_wording=json.dumps(ci_unit if unit == "wording" else {}),
            dpd_by_order=json.dumps(by_order), pooled_rates=json.dumps(
                {a: (None if np.isnan(r) else round(float(r), 6)) for a, r in zip(attrs, rates)}, ensure_ascii=False),
            n_agents=int(n_agents.sum()), n_valid=int(V.sum()), mdd=mdd))
    out = pd.DataFrame(rows, columns=ROBUSTNESS_COLUMNS)
    out["p_disparity_holm"] = stats.holm(out["p_disparity"].to_numpy(dtype=float))
    out["p_heterogeneity_holm"] = stats.holm(out["p_heterogeneity"].to_numpy(dtype=float))
    out["verdict"] = [verdict(*v) for v in out[["p_disparity_holm", "p_heterogeneity_holm", "sign_stability",
                                                "mdd"]].to_numpy(dtype=float)]
    return out


def position_bias_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per model × scenario whose run listed every choice first for some agents (POSITION_COLUMNS).

    rate_first_listed = share of valid decisions choosing the label listed first (over every condition,
    group, wording and signal), with its Wilson 95 % interval, against ``expected`` = 1/k (no position
    effect: under orders that put each label first equally often, content preferences average out to
    1/k) and an exact binomial test (p_value). mean_p_first_listed (score mode, two choices): the mean
    probability of the first-listed label. target_rate_balanced: per group and attribute the target
    rate averaged over the orders (each order weighs the same, whatever its count), and dpd_balanced
    its DPD per group."""
    from scipy.stats import binomtest  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    if decisions is None or decisions.empty or "choice_order" not in decisions:
        return pd.DataFrame(columns=POSITION_COLUMNS)
    rows = []
    for (model, scenario), g in decisions.groupby(["model", "scenario"], sort=True):
        orders = g["choice_order"].dropna().astype(str)
        if orders.empty:
            continue
        firsts = orders.str.split("|").str[0]
        labels = orders.iloc[0].split("|")
        if set(firsts) != set(labels):  # some label was never listed first: position and content are confounded
            continue
        valid = keys.valid(g)
        first = valid["choice_order"].astype(str).str.split("|").str[0]
        x, n = int((valid["decision"] == first).sum()), len(valid)
        lo, hi = stats.wilson(x / n if n else float("nan"), n)
        p = binomtest(x, n, 1 / len(labels)).pvalue if n else float("nan")
        mean_p = float("nan")
        if len(labels) == 2 and valid["p_target"].notna().any():
            target_first = valid["target"].astype(bool) == (valid["decision"] == first)  # valid: decision known
            pt = valid["p_target"].astype(float)
            # target listed first ⇔ (decision is target) == (decision is first)
            mean_p = float(np.where(target_first, pt, 1 - pt).mean())
        per = valid.assign(_t=valid["target"].astype(bool)).groupby(["group", "attribute", "choice_order"])["_t"].mean()
        balanced = per.groupby(level=["group", "attribute"]).mean()
        rates = {gid: {a: round(float(r), 6) for (_, a), r in s.items()} for gid, s in balanced.groupby(level=0)}
        rows.append(dict(model=model, scenario=scenario, k=len(labels), rate_first_listed=x / n if n else float("nan"),
                         ci_low=lo, ci_high=hi, expected=1 / len(labels), n=n, p_value=p, mean_p_first_listed=mean_p,
                         orders=json.dumps(orders.value_counts().sort_index().to_dict(), ensure_ascii=False),
                         target_rate_balanced=json.dumps(rates, ensure_ascii=False),
                         dpd_balanced=json.dumps({gid: round(stats.dpd(list(r.values())), 6) for gid, r in rates.items()
                                                  if len(r) >= 2})))
    return pd.DataFrame(rows, columns=POSITION_COLUMNS)


def sentence(row: pd.Series) -> str:
    """One plain sentence per robustness row: what its verdict means."""
    units = ("wordings" if row["unit"] == "wording" else "choice orders" if row["unit"] else "presentations")
    unit = units[:-1]
    n = row["n_wordings"] if row["unit"] == "wording" else row["n_orders"]
    ci = f"[{row['pooled_ci_low']:.2f}, {row['pooled_ci_high']:.2f}]"
    what = f"pooled DPD {row['pooled_dpd']:.2f} {ci} over {n} {units}"
    if not row["unit"]:
        return f"{what}: nothing was varied in this case, so the verdict says nothing about wording."
    p_d, p_h = _p(row["p_disparity_holm"]), _p(row["p_heterogeneity_holm"])
    if row["verdict"] == "wording-dependent":
        why = (f"it differs between {units} beyond noise (heterogeneity Holm p = {p_h})"
               if stats.significant(row["p_heterogeneity_holm"]) else
               f"the pooled contrast keeps its sign in only {row['sign_stability']:.0%} of the {units}")
        shown = ("a disparity overall (Holm p = " + p_d + ") that" if stats.significant(row["p_disparity_holm"])
                 else "no disparity overall (Holm p = " + p_d + "), but the attribute effect")
        return (f"{what}: {shown} depends on the {unit} — {why}; report it per {unit}, not as a finding about the "
                "attribute.")
    return {
        "robust": f"{what}: the disparity holds across {units} — the pooled interval, which counts {unit}-to-{unit} "
                  f"variation, excludes 0 after Holm across the run's cases (p = {p_d}), the {units} do not differ "
                  f"beyond noise (heterogeneity Holm p = {p_h}) and the pooled contrast keeps its sign in "
                  + ("each of them." if pd.isna(row["sign_stability"]) else f"{row['sign_stability']:.0%} of them."),
        "underpowered": f"{what}: no disparity shown (Holm p = {p_d}), but the test could not have seen a DPD of 0.3 ("
                        + ("no DPD up to 1 is detectable" if pd.isna(row["mdd"]) else f"mdd {row['mdd']:.2f}")
                        + "); this is not evidence of no bias.",
        "no disparity": f"{what}: no disparity beyond what {units} and sampling explain (Holm p = {p_d}), with power "
                        f"to see a DPD of {row['mdd']:.2f}.",
    }[row["verdict"]]


def _p(p: float) -> str:
    return "–" if pd.isna(p) else f"{p:.3g}"
