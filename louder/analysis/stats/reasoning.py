"""Does thinking change the bias? The DPD at each reasoning level of a run, and the change between
levels (issue 30; docs/how-to/reasoning-models.md).

A run with ``simulation.reasoning: [off, high]`` asks every agent its decision once per level, its
persona shared (as wordings do). Notation for one case × signal: agents i of attribute a(i), levels
l; y_il = 1 when agent i's valid decision at level l is the target, v_il = 1 when it is valid. The
rate of attribute a at level l and its DPD:

    r_la = Σ_{i∈a} y_il / Σ_{i∈a} v_il,        DPD_l = max_a r_la − min_a r_la.

The **reference** level is the first of the run's levels in the order default, off, on, low, medium,
high (the least thinking); every other level gets the change Δ_l = DPD_l − DPD_ref.

Intervals. Agents are resampled with replacement within each attribute (B times), and each resample
carries all of an agent's answers, so the levels' rates move together (a paired bootstrap). Per level,
the DPD interval is louder's (``intervals.dpd_interval``: a simultaneous bootstrap-t band of the pair
differences r_la − r_lb, se² from ``intervals.binomial_variance``, projected onto max − min). The
change's interval is ``intervals.dpd_difference_interval`` of the two levels' bands: one critical
value for both, Δ ∈ [lo_l − hi_ref, hi_l − lo_ref]. It contains Δ̂ and keeps its coverage when either
DPD is 0 (where a percentile interval of max − min fails), at the price of width: it does not use the
pairing to narrow (conservative).

Verdict of a level against the reference: ``raises`` (the interval lies above 0), ``lowers`` (below
0), ``no change`` (it contains 0 and lies within ±0.3, the smallest DPD of interest of ``louder
analyze``'s underpowered flag), ``underpowered`` (it contains 0 but reaches past ±0.3: a change of
that size could not have been seen). ``p_interaction`` is the likelihood-ratio test that the attribute
effect is the same at both levels (``robustness.heterogeneity_p``, levels as units; conservative for
paired answers).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.stats import intervals as I
from louder.analysis.stats import keys, power
from louder.analysis.stats.keys import CASE_KEYS, is_target, is_valid
from louder.analysis.stats.robustness import agent_weights, heterogeneity_p
from louder.llm.thinking import LEVELS, TRUNCATED

ORDER = {level: i for i, level in enumerate(LEVELS)}
SMALLEST = power.UNDERPOWERED  # a change this large must be excluded for `no change`
VERDICTS = ("reference", "raises", "lowers", "no change", "underpowered")
REASONING_COLUMNS = [*CASE_KEYS, "signal", "level", "reference", "n_agents", "n_valid", "rates", "dpd", "ci_low",
                     "ci_high", "change", "change_ci_low", "change_ci_high", "p_interaction", "verdict",
                     # what the thinking was at this level
                     "thinking_share", "reasoning_tokens_mean", "n_thinking_truncated"]


def levels_of(decisions: pd.DataFrame) -> list[str]:
    """The reasoning levels of a decisions table, least thinking first (the first is the reference)."""
    if "reasoning" not in decisions:
        return ["default"]
    return sorted(decisions["reasoning"].fillna("default").astype(str).unique(), key=lambda x: ORDER.get(x, 99))


def varies(decisions: pd.DataFrame | None) -> bool:
    """Whether the run decided at more than one reasoning level."""
    return decisions is not None and not decisions.empty and len(levels_of(decisions)) > 1


# --- the statistics: pure functions of agent × level matrices ------------------------------------

def _rates(G: np.ndarray, Y: np.ndarray, V: np.ndarray, groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rates r (B × k) and the weighted target / valid counts' binomial pair variances (B × P) of one
    level's column y, v (n,) under agent weights G (B × n)."""
    B, k = G.shape[0], len(groups)
    x, m = np.zeros((B, k)), np.zeros((B, k))
    for a, idx in enumerate(groups):
        x[:, a] = G[:, idx] @ Y[idx]
        m[:, a] = G[:, idx] @ V[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(m > 0, x / np.where(m > 0, m, 1), np.nan)
    return r, I.pair_sum(I.binomial_variance(x, np.maximum(m, 1e-12)))


def level_bands(Y: np.ndarray, V: np.ndarray, attribute: np.ndarray, B: int = 10_000,
                seed: int = 0) -> tuple[list[np.ndarray], list[I.Band | None]]:
    """Per level (column of Y, V: agents × levels, 0/1), the rates r_la and the band of its pair
    differences, all from one paired bootstrap: B resamples of agents within attribute, each
    carrying the agent's answers at every level."""
    Y, V, attribute = np.asarray(Y, float), np.asarray(V, float), np.asarray(attribute)
    n, L = Y.shape
    k = int(attribute.max()) + 1 if n else 0
    groups = [np.flatnonzero(attribute == a) for a in range(k)]
    G = agent_weights(np.random.default_rng(seed), [g for g in groups if g.size], n, B)
    ones = np.ones((1, n))
    rates, bands = [], []
    for j in range(L):
        r, v = _rates(ones, Y[:, j], V[:, j], groups)
        rb, vb = _rates(G, Y[:, j], V[:, j], groups)
        rates.append(r[0])
        bands.append(I.band(r[0], rb, v[0], vb))
    return rates, bands


def change_verdict(low: float, high: float) -> str:
    """raises / lowers / no change / underpowered from the change's interval (module docstring)."""
    if np.isnan(low) or np.isnan(high):
        return "underpowered"
    if low > 0:
        return "raises"
    if high < 0:
        return "lowers"
    return "no change" if -SMALLEST < low and high < SMALLEST else "underpowered"


def level_changes(Y: np.ndarray, V: np.ndarray, attribute: np.ndarray, B: int = 10_000, seed: int = 0,
                  level: float = 0.95) -> list[dict]:
    """Per level j (column of Y, V): DPD_j with its interval and, for j ≥ 1, the change from level 0
    with its interval and verdict (module docstring). A pure function of the matrices."""
    rates, bands = level_bands(Y, V, attribute, B, seed)
    out = []
    for j, (r, b) in enumerate(zip(rates, bands)):
        dpd = stats.dpd(r)
        lo, hi = I.band_interval(b, level)
        row = dict(rates=r, dpd=dpd, ci_low=lo, ci_high=hi, change=np.nan, change_ci_low=np.nan,
                   change_ci_high=np.nan, verdict="reference")
        if j:
            clo, chi = I.dpd_difference_interval(b, bands[0], level)
            row.update(change=dpd - out[0]["dpd"], change_ci_low=clo, change_ci_high=chi,
                       verdict=change_verdict(clo, chi))
        out.append(row)
    return out


# --- the table -----------------------------------------------------------------------------------

def _matrices(g: pd.DataFrame, attributes: list[str], levels: list[str]):
    """Agent × level matrices (Y target, V valid) and attribute index of one case × signal."""
    g = g.assign(_v=is_valid(g).astype(float), _y=is_target(g).astype(float),
                 _l=g["reasoning"].fillna("default").astype(str))
    agents = g.drop_duplicates("agent_id")[["agent_id", "attribute"]]
    agents = agents[agents["attribute"].isin(attributes)].sort_values("agent_id")
    ai = {x: i for i, x in enumerate(agents["agent_id"])}
    li = {x: j for j, x in enumerate(levels)}
    rows = g[g["agent_id"].isin(ai)]
    Y, V = np.zeros((len(ai), len(levels))), np.zeros((len(ai), len(levels)))
    idx = (rows["agent_id"].map(ai).to_numpy(), rows["_l"].map(li).to_numpy())
    np.add.at(Y, idx, rows["_y"].to_numpy())
    np.add.at(V, idx, rows["_v"].to_numpy())
    return Y, V, agents["attribute"].map({a: i for i, a in enumerate(attributes)}).to_numpy()


def reasoning_table(decisions: pd.DataFrame, attributes: dict[str, list[str]] | None = None, B: int = 10_000,
                    seed: int = 0) -> pd.DataFrame:
    """One row per model × condition × scenario × group × signal × reasoning level
    (REASONING_COLUMNS): the level's DPD and interval, the change from the reference level with its
    interval, verdict and interaction test (``level_changes``), and its thinking: the share of valid
    decisions that came with thinking, the mean reasoning tokens where reported, and the answers
    invalid because the thinking never closed. ``decisions``: one wording (``louder.analysis.engine.select``)."""
    if decisions is None or decisions.empty or "reasoning" not in decisions:
        return pd.DataFrame(columns=REASONING_COLUMNS)
    d = decisions.assign(signal=decisions["signal"].fillna("stated").astype(str) if "signal" in decisions
                         else "stated")
    rows = []
    for i, (key, g) in enumerate(d.groupby([*CASE_KEYS, "signal"], sort=True)):
        attrs = [a for a in (attributes or {}).get(key[3], []) if a in set(g["attribute"])] or sorted(
            g["attribute"].dropna().unique())
        levels = levels_of(g)
        Y, V, attr = _matrices(g, attrs, levels)
        s = stats.substream(seed, i)
        results = level_changes(Y, V, attr, B=B, seed=s)
        for j, (lv, res) in enumerate(zip(levels, results)):
            at = g[g["reasoning"].fillna("default").astype(str) == lv]
            valid = keys.valid(at)
            p_int = float("nan")
            if j:
                x = np.array([[Y[attr == a, c].sum() for a in range(len(attrs))] for c in (0, j)])
                n = np.array([[V[attr == a, c].sum() for a in range(len(attrs))] for c in (0, j)])
                p_int = heterogeneity_p(x, n)
            tokens = at["reasoning_tokens"].dropna() if "reasoning_tokens" in at else pd.Series(dtype=float)
            thinking = valid["thinking"].fillna("").astype(str).str.strip() != "" if "thinking" in valid else None
            truncated = at["raw_response"].fillna("").astype(str).str.contains(f"[{TRUNCATED}", regex=False)
            rows.append(dict(
                zip([*CASE_KEYS, "signal"], key), level=lv, reference=levels[0],
                n_agents=int((V[:, j] > 0).sum()), n_valid=int(V[:, j].sum()),
                rates=json.dumps({a: (None if np.isnan(r) else round(float(r), 6))
                                  for a, r in zip(attrs, res["rates"])}, ensure_ascii=False),
                dpd=res["dpd"], ci_low=res["ci_low"], ci_high=res["ci_high"], change=res["change"],
                change_ci_low=res["change_ci_low"], change_ci_high=res["change_ci_high"], p_interaction=p_int,
                verdict=res["verdict"],
                thinking_share=float(thinking.mean()) if thinking is not None and len(valid) else float("nan"),
                reasoning_tokens_mean=float(tokens.mean()) if len(tokens) else float("nan"),
                n_thinking_truncated=int(truncated.sum())))
    return pd.DataFrame(rows, columns=REASONING_COLUMNS)


def sentence(row: pd.Series) -> str:
    """One plain sentence per non-reference row of reasoning.csv: what its verdict means."""
    ci = f"[{row['change_ci_low']:+.2f}, {row['change_ci_high']:+.2f}]"
    what = (f"DPD {row['dpd']:.2f} at {row['level']} against {row['reference']}: change {row['change']:+.2f} {ci}")
    return {
        "reference": f"DPD {row['dpd']:.2f} at {row['level']}: the reference level.",
        "raises": f"{what}: thinking at this level raises the disparity beyond what sampling explains.",
        "lowers": f"{what}: thinking at this level lowers the disparity beyond what sampling explains.",
        "no change": f"{what}: no change, with power to see a change of {SMALLEST:.1f} either way.",
        "underpowered": f"{what}: no change shown, but a change of {SMALLEST:.1f} could not have been excluded; "
                        "this is not evidence that thinking leaves the bias alone.",
    }[row["verdict"]]
