"""Analysis of population runs, policy variants and counterfactual twins: small pure functions.

Input is a decisions table with ``status`` (valid / invalid / refused / error), ``target`` (the
valid decision was the scenario's target) and one column per group (e.g. ``attr_gender_identity``);
population runs add ``weight`` (the agent's post-stratification weight from ``draw_agents``, 1 when
absent), variant runs ``variant``. Only valid decisions enter rates; the callers count the rest.

Notation: agent i has outcome y_i ∈ {0, 1} (chose the target) and weight w_i; for a set S of agents
r_S = Σ_S w_i y_i / Σ_S w_i and the Kish effective size n_eff(S) = (Σ_S w_i)² / Σ_S w_i².
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import distributions as dist
from louder.analysis.stats import (
    dpd,
    dpd_difference_interval,
    holm,
    keys,
    level_alpha,
    mean_difference_interval,
    named_seed,
    significant,
    wilson,
)
from louder.analysis.stats import intervals as I
from louder.analysis.stats.keys import CASE_KEYS, POPULATION_CASE, is_valid
from louder.analysis.stats.rates import rates as rate_table
from louder.analysis.stats.rates import target_rates
from louder.status import status_table


def valid(decisions: pd.DataFrame) -> pd.DataFrame:
    """Valid decisions with y (0/1) and w (weight, 1 when the table has none)."""
    d = keys.valid(decisions)
    w = d["weight"].astype(float) if "weight" in d else pd.Series(1.0, index=d.index)
    return d.assign(y=keys.targets(d), w=w)


def _rate_rows(d: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """n_valid, n_target, the weighted rate and n_eff per ``by`` (the grouped-rate engine, ``rates``)."""
    return target_rates(d, by, weight="weight")


@dataclass(frozen=True)
class GroupDPD:
    """DPD across one group's attributes, population-weighted over the other groups.

    r_a = Σ_{i: a} w_i y_i / Σ_{i: a} w_i is the rate among the population's people with attribute a:
    the other groups enter with their population distribution *within* a (post-stratified by the
    weights). So the DPD = max_a r_a − min_a r_a is the gap a policy maker would see in that
    population, composition included; the attribute's own effect holding the others fixed is the
    logistic regression's odds ratio, not this.

    Null (the paper's parity bootstrap, weighted): p̂ = Σ w y / Σ w over all valid decisions; for
    b = 1..B, x_a^b ~ Binomial(m_a, p̂) with m_a = round(n_eff,a), DPD_b over x_a^b / m_a; threshold =
    ``level`` quantile of DPD_b, p = (1 + #{DPD_b ≥ DPD}) / (B + 1), significant ⇔ p < 1 − level (this
    one test; ``population_groups.csv`` decides on its Holm p-value across the run). With unit weights m_a = n_a and
    this is exactly ``stats.parity_bootstrap``. Interval: x_a^b ~ Binomial(m_a, r_a), the bootstrap-t
    band of every r_a − r_b (var p̃(1 − p̃)/m_a, ``intervals.binomial_variance`` of r_a·m_a) projected
    onto max − min (``intervals.dpd_interval``: contains the DPD, keeps its coverage at DPD = 0).
    """

    group: str
    n_valid: int
    dpd: float
    threshold: float
    p_value: float
    significant: bool
    lo: float
    hi: float


def group_dpd(decisions: pd.DataFrame, group: str, B: int = 10_000, seed: int = 0, level: float = 0.95) -> GroupDPD:
    """See ``GroupDPD``."""
    d = valid(decisions)
    t = _rate_rows(d, [group])
    m = np.maximum(np.round(t["n_eff"].to_numpy()), 1).astype(np.int64)
    r = t["rate"].to_numpy()
    if len(t) < 2:
        return GroupDPD(group, len(d), float("nan"), float("nan"), float("nan"), False, float("nan"), float("nan"))
    observed = dpd(r)
    p_hat = float((d["w"] * d["y"]).sum() / d["w"].sum())
    rng = np.random.default_rng(seed)
    null = rng.binomial(m, p_hat, size=(B, m.size)) / m
    null = null.max(axis=1) - null.min(axis=1)
    xb = rng.binomial(m, r, size=(B, m.size))
    threshold = float(np.quantile(null, level))
    lo, hi = I.dpd_interval(r, xb / m, I.pair_sum(I.binomial_variance(r * m, m)),
                            I.pair_sum(I.binomial_variance(xb, m)), level)
    p = float((1 + np.count_nonzero(null >= observed - 1e-12)) / (B + 1))
    return GroupDPD(group, len(d), observed, threshold, p, significant(p, level_alpha(level)), float(lo), float(hi))


def intersection_table(decisions: pd.DataFrame, group_a: str, group_b: str, min_n: int = 30,
                       alpha: float = 0.05) -> pd.DataFrame:
    """Rates per intersection of two groups, with n per cell.

    Each cell c with n_c ≥ ``min_n`` valid decisions is tested against the rest of the population
    ("is this intersection decided differently from everyone else?"): Fisher's exact test on the 2×2
    table [[x_c, n_c − x_c], [x_rest, n_rest − x_rest]] (unweighted counts). One deviant cell moves the
    rest's rate, so large cells near it can test significant in the opposite direction; read the
    rates, and the regression for effects holding the other groups fixed. Cells below ``min_n`` are shown with ``tested`` False and no p-value. p_bh: the
    Benjamini–Hochberg adjustment across the tested cells; significant ⇔ p_bh < alpha.
    """
    from scipy.stats import fisher_exact  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    d = valid(decisions)
    t = _rate_rows(d, [group_a, group_b])
    n_all, x_all = len(d), int(d["y"].sum())
    t["tested"] = t["n_valid"] >= min_n
    p = []
    for n, x, tested in zip(t["n_valid"], t["n_target"], t["tested"]):
        if not tested or n == n_all:
            p.append(np.nan)
            continue
        p.append(fisher_exact([[x, n - x], [x_all - x, (n_all - n) - (x_all - x)]])[1])
    t["p_value"] = p
    t["p_bh"] = np.nan
    ok = t["p_value"].notna().to_numpy()
    if ok.any():
        from statsmodels.stats.multitest import multipletests  # here: every analysis imports this module

        t.loc[ok, "p_bh"] = multipletests(t.loc[ok, "p_value"], method="fdr_bh")[1]
    t["significant"] = significant(t["p_bh"].to_numpy(dtype=float), alpha)
    return t


@dataclass(frozen=True)
class Regression:
    """Logistic regression of the target decision on every group's attributes.

    logit P(y = 1) = β₀ + Σ_g Σ_{a ≠ ref_g} β_{g,a} · 1[attribute_g = a] (treatment coding; each group's
    reference is its most frequent attribute). odds_ratio = exp(β), 95 % interval exp(β ± 1.96·se),
    p from the Wald z. ``status``: "ok"; "no variation" (every valid decision the same); "too few data"
    (fewer valid decisions than 10 per parameter); "separation" (some attribute predicts the outcome
    perfectly: a non-finite or huge coefficient or standard error); "failed" (the fit did not converge).
    Only "ok" comes with a table; otherwise the table is empty.
    """

    status: str
    n: int
    table: pd.DataFrame


REGRESSION_COLUMNS = ["group", "attribute", "reference", "odds_ratio", "lo", "hi", "p_value"]


def logistic_regression(decisions: pd.DataFrame, groups: list[str], level: float = 0.95) -> Regression:
    """See ``Regression``. Unweighted: drawn agents are a quota sample, so weights are ≈ 1. The design
    and the fit are the shared engine's (``regression.treatment_design``, ``regression.logit_glm``)."""
    from louder.analysis.stats import regression as R

    d = valid(decisions)
    empty = pd.DataFrame(columns=REGRESSION_COLUMNS)
    if d.empty:  # e.g. every attribute left out for separation before the fit
        return Regression("no data", 0, empty)
    if d["y"].nunique() < 2:
        return Regression("no variation", len(d), empty)
    refs = {g: d[g].value_counts().idxmax() for g in groups}
    X, terms = R.treatment_design(d, groups, refs)
    if len(d) < 10 * (len(terms) + 1):
        return Regression("too few data", len(d), empty)
    fit = R.logit_glm(d["y"].to_numpy(), X, terms)
    if fit.status != "ok":
        return Regression(fit.status, len(d), empty)
    z = dist.z(level)
    rows = [dict(group=t.factor, attribute=t.level, reference=t.reference, odds_ratio=float(np.exp(b)),
                 lo=float(np.exp(b - z * s)), hi=float(np.exp(b + z * s)), p_value=float(p))
            for t, b, s, p in zip(fit.terms, fit.coef, fit.se, fit.p_value)]
    return Regression("ok", len(d), pd.DataFrame(rows, columns=REGRESSION_COLUMNS))


@dataclass(frozen=True)
class RateEstimate:
    """Weighted target rate r = Σ w y / Σ w with a Wilson interval at the Kish effective size n_eff:
    (r + z²/2m ± z·√(r(1−r)/m + z²/4m²)) / (1 + z²/m), m = n_eff."""

    n_valid: int
    n_eff: float
    rate: float
    lo: float
    hi: float


def weighted_rate(decisions: pd.DataFrame, level: float = 0.95) -> RateEstimate:
    """The population's overall target rate (see ``RateEstimate``)."""
    d = valid(decisions)
    if d.empty:
        return RateEstimate(0, 0.0, float("nan"), float("nan"), float("nan"))
    w, y = d["w"].to_numpy(), d["y"].to_numpy()
    r, m = float((w * y).sum() / w.sum()), float(w.sum() ** 2 / (w**2).sum())
    lo, hi = wilson(r, m, level)
    return RateEstimate(len(d), m, r, lo, hi)


# --- policy variants ---

def variant_rates(decisions: pd.DataFrame, group: str) -> pd.DataFrame:
    """Per variant the overall rate (attribute "(all)") and the rate per attribute of ``group``."""
    d = valid(decisions)
    overall = _rate_rows(d, ["variant"]).assign(attribute="(all)")
    per = _rate_rows(d, ["variant", group]).rename(columns={group: "attribute"})
    return pd.concat([overall, per], ignore_index=True)[["variant", "attribute", "n_valid", "n_target", "rate", "n_eff"]]


def variant_effects(decisions: pd.DataFrame, group: str, base: str, variant: str, B: int = 10_000,
                    seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Effect of ``variant`` against ``base`` per attribute: d_a = r_a(variant) − r_a(base), with a
    percentile bootstrap interval (x^b ~ Binomial(n, r) on each side, ``stats.mean_difference_interval``).
    Unweighted counts; one row per attribute present under both variants."""
    t = _rate_rows(valid(decisions), ["variant", group]).set_index(["variant", group])
    rows = []
    for a in sorted(set(t.loc[base].index) & set(t.loc[variant].index)):
        v, b = t.loc[(variant, a)], t.loc[(base, a)]
        diff, lo, hi = mean_difference_interval([v.n_valid], [v.n_target], [b.n_valid], [b.n_target], B, seed, level)
        rows.append(dict(attribute=a, rate_base=b.n_target / b.n_valid, rate_variant=v.n_target / v.n_valid,
                         difference=diff, lo=lo, hi=hi))
    return pd.DataFrame(rows, columns=["attribute", "rate_base", "rate_variant", "difference", "lo", "hi"])


def variant_dpd_difference(decisions: pd.DataFrame, group: str, base: str, variant: str, B: int = 10_000,
                           seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """Does the variant widen the disparity? Δ = DPD(variant) − DPD(base) across ``group``'s attributes,
    interval of ``stats.dpd_difference_interval`` (valid when either DPD is 0). Returns (Δ, lo, hi); Δ > 0 widens."""
    t = _rate_rows(valid(decisions), ["variant", group])
    v, b = t[t["variant"] == variant], t[t["variant"] == base]
    return dpd_difference_interval(v["n_valid"], v["n_target"], b["n_valid"], b["n_target"], B, seed, level)


# --- counterfactual twins ---

def complete_twin_sets(twins: pd.DataFrame) -> pd.DataFrame:
    """Twin sets × attributes of target (0/1), keeping sets whose every twin passed the check
    (twin_status "ok", or "unchanged": the persona never names the attribute) and decided validly — a
    pair is only informative when both sides decided."""
    ok = twins.assign(good=is_valid(twins) & twins["twin_status"].isin(["ok", "unchanged"]))
    good_sets = ok.groupby("twin_set")["good"].all()
    keep = ok[ok["twin_set"].isin(good_sets[good_sets].index)]
    wide = keep.pivot(index="twin_set", columns="attribute", values="target")
    return wide[list(dict.fromkeys(keep["attribute"]))].astype(bool).astype(int)  # attributes in order of appearance


def twin_flips(twins: pd.DataFrame) -> pd.DataFrame:
    """Per attribute pair (a, b) over complete twin sets: b_ab = #(a chose target, b did not), b_ba the
    reverse; flip_rate = (b_ab + b_ba) / n_sets; exact McNemar p = two-sided binomial test of b_ab out of
    b_ab + b_ba discordant pairs at 1/2 (p = 1 with no discordant pair)."""
    from scipy.stats import binomtest  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    wide = complete_twin_sets(twins)
    rows = []
    attrs = list(wide.columns)
    for i, a in enumerate(attrs):
        for b in attrs[i + 1:]:
            ab = int(((wide[a] == 1) & (wide[b] == 0)).sum())
            ba = int(((wide[a] == 0) & (wide[b] == 1)).sum())
            n = len(wide)
            p = binomtest(ab, ab + ba, 0.5).pvalue if ab + ba else 1.0
            rows.append(dict(attribute_a=a, attribute_b=b, n_sets=n, a_only=ab, b_only=ba,
                             flip_rate=(ab + ba) / n if n else float("nan"), p_mcnemar=float(p)))
    return pd.DataFrame(rows, columns=["attribute_a", "attribute_b", "n_sets", "a_only", "b_only", "flip_rate",
                                       "p_mcnemar"])


def _paired_pair_variance(wide: np.ndarray) -> np.ndarray:
    """var(r_a − r_b) over n complete twin sets (rows: sets; columns: attributes' 0/1 decisions), for
    each pair a < b: (q̃ − d̃²)/n, q̃ = (D + ½)/(n + 1) the smoothed share of discordant sets, d̃ = (#a only −
    #b only)/(n + 1). Positive even with no discordant set. ``wide`` may carry resamples in front:
    (…, n, k) → (…, P)."""
    i, j = I.pair_index(wide.shape[-1])
    n = wide.shape[-2]
    diff = wide[..., i] - wide[..., j]
    q = (np.abs(diff).sum(axis=-2) + 0.5) / (n + 1)
    d = diff.sum(axis=-2) / (n + 1)
    return (q - d * d) / n


def paired_dpd(twins: pd.DataFrame, B: int = 10_000, seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """DPD over the attributes' rates within complete twin sets (each rate over the same personas), with
    a bootstrap resampling twin sets with replacement: the bootstrap-t band of every r_a − r_b (paired
    variance ``_paired_pair_variance``, also per resample) projected onto max − min
    (``intervals.dpd_interval``). Returns (DPD, lo, hi)."""
    wide = complete_twin_sets(twins).to_numpy(dtype=float)
    if wide.shape[0] == 0 or wide.shape[1] < 2:
        return float("nan"), float("nan"), float("nan")
    observed = dpd(wide.mean(axis=0))
    rng = np.random.default_rng(seed)
    rates, variances = [], []
    for start in range(0, B, 500):  # chunks keep memory at 500 × n_sets × k
        idx = rng.integers(0, wide.shape[0], size=(min(500, B - start), wide.shape[0]))
        drawn = wide[idx]
        rates.append(drawn.mean(axis=1))
        variances.append(_paired_pair_variance(drawn))
    lo, hi = I.dpd_interval(wide.mean(axis=0), np.concatenate(rates), _paired_pair_variance(wide),
                            np.concatenate(variances), level)
    return observed, lo, hi


# --- the tables of a population run: per case (model × condition × scenario × variant) ------------------

POP_CASE = POPULATION_CASE


def attr_groups(decisions: pd.DataFrame) -> list[str]:
    """The ``attr_<group>`` columns of a population run, in the population's group order."""
    return [c for c in decisions.columns if c.startswith("attr_")]


def _gname(col: str) -> str:
    return col.removeprefix("attr_")


def group_tables(decisions: pd.DataFrame, B: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per case × group: the population-weighted DPD with its parity bootstrap (``group_dpd``), p_holm
    across the table's rows and significant ⇔ p_holm < 0.05 (``stats.significant``); and per case ×
    group × attribute the weighted rate, n_eff and every status count."""
    cols = attr_groups(decisions)
    dpd_rows, rate_frames = [], []
    for i, (key, d) in enumerate(decisions.groupby(POP_CASE, sort=True)):
        for col in cols:
            r = group_dpd(d, col, B=B, seed=named_seed(seed, i, col))
            dpd_rows.append(dict(zip(POP_CASE, key), group=_gname(col), n_valid=r.n_valid, dpd=r.dpd,
                                 threshold=r.threshold, p_value=r.p_value, significant=r.significant,
                                 ci_low=r.lo, ci_high=r.hi))
            t = rate_table(d, [col], weight="weight").rename(columns={col: "attribute"})
            rate_frames.append(t.assign(**dict(zip(POP_CASE, key)), group=_gname(col)))
    dpd = pd.DataFrame(dpd_rows)
    if len(dpd):  # the run's multiplicity control: Holm across every case × group of the table
        dpd.insert(dpd.columns.get_loc("p_value") + 1, "p_holm", holm(dpd["p_value"].to_numpy(dtype=float)))
        dpd["significant"] = significant(dpd["p_holm"].to_numpy())
    rates = pd.concat(rate_frames, ignore_index=True) if rate_frames else pd.DataFrame()
    if len(rates):
        rates = rates[POP_CASE + ["group", "attribute", "n_valid", "n_target", "rate", "n_eff", "n_invalid",
                                  "n_refused", "n_error"]]
    return dpd, rates


def intersection_tables(decisions: pd.DataFrame, min_n: int = 30) -> pd.DataFrame:
    """Per case × pair of groups: ``intersection_table`` (rate and n per cell, Fisher test of cells
    with ≥ ``min_n`` valid decisions, Benjamini–Hochberg across the pair's tested cells)."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        for a, b in itertools.combinations(cols, 2):
            t = intersection_table(d, a, b, min_n=min_n).rename(columns={a: "attribute_a", b: "attribute_b"})
            frames.append(t.assign(**dict(zip(POP_CASE, key)), group_a=_gname(a), group_b=_gname(b)))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[POP_CASE + ["group_a", "group_b", "attribute_a", "attribute_b", "n_valid", "n_target", "rate",
                           "n_eff", "tested", "p_value", "p_bh", "significant"]]


def regression_tables(decisions: pd.DataFrame, min_n: int = 10) -> pd.DataFrame:
    """Per case: the logistic regression on every group (``logistic_regression``). Agents with an
    attribute the model cannot estimate — fewer than ``min_n`` valid decisions, or all of them the same
    decision (separation) — are left out first and named in ``dropped``; a case the data still cannot
    support gets one row with its status and no odds ratio."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        v = valid(d)
        keep = pd.Series(True, index=d.index)
        dropped = []
        for col in cols:
            stats = v.groupby(col)["y"].agg(["size", "mean"])
            bad = stats[(stats["size"] < min_n) | (stats["mean"] == 0) | (stats["mean"] == 1)].index
            dropped += [f"{_gname(col)}={a}" for a in bad]
            keep &= ~d[col].isin(bad)
        r = logistic_regression(d[keep], cols)
        t = r.table if len(r.table) else pd.DataFrame([{c: np.nan for c in REGRESSION_COLUMNS}])
        frames.append(t.assign(**dict(zip(POP_CASE, key)), status=r.status, n=r.n, dropped="; ".join(dropped)))
    out = pd.concat(frames, ignore_index=True)
    out["group"] = out["group"].map(lambda g: _gname(g) if isinstance(g, str) else g)
    return out[POP_CASE + ["status", "n", "dropped", *REGRESSION_COLUMNS]]


def overall_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per case: the population's weighted target rate with its Wilson interval (``weighted_rate``)
    and every status count."""
    rows = []
    counts = status_table(decisions, POP_CASE).set_index(POP_CASE)
    for key, d in decisions.groupby(POP_CASE, sort=True):
        r = weighted_rate(d)
        rows.append(dict(zip(POP_CASE, key), rate=r.rate, ci_low=r.lo, ci_high=r.hi, n_eff=r.n_eff,
                         **{c: int(n) for c, n in counts.loc[key].items()}))
    return pd.DataFrame(rows)


def variant_tables(decisions: pd.DataFrame, B: int, seed: int) -> dict[str, pd.DataFrame]:
    """Policy variants against ``base``, per case (without the variant) × group: rate per variant and
    attribute; each variant's effect per attribute with its interval; the change of DPD (Δ > 0 widens)."""
    if "variant" not in decisions or decisions["variant"].nunique() < 2:
        return {}
    cols = attr_groups(decisions) or ["attribute"]
    keys = ["model", "condition", "scenario"] + ([] if attr_groups(decisions) else ["group"])
    variants = list(dict.fromkeys(decisions["variant"]))
    base = "base" if "base" in variants else variants[0]
    rates, effects, dpds = [], [], []
    for i, (key, d) in enumerate(decisions.groupby(keys, sort=True)):
        case = {k: v for k, v in zip(keys, key) if k != "group"}  # group: the analysed group, set below
        for col in cols:
            g = _gname(col) if col != "attribute" else key[-1]
            r = variant_rates(d, col)
            counts = pd.concat([status_table(d, ["variant"]).assign(attribute="(all)"),
                                status_table(d, ["variant", col]).rename(columns={col: "attribute"})])
            counts = counts.drop(columns="n_valid")
            rates.append(r.merge(counts, on=["variant", "attribute"], how="left").assign(**case, group=g))
            for v in variants:
                if v == base:
                    continue
                s = named_seed(seed, i, col, v)
                effects.append(variant_effects(d, col, base, v, B=B, seed=s).assign(**case, group=g, variant=v,
                                                                                       base=base))
                diff, lo, hi = variant_dpd_difference(d, col, base, v, B=B, seed=s)
                dpds.append(dict(case, group=g, variant=v, base=base, dpd_difference=diff, ci_low=lo, ci_high=hi,
                                 verdict="widens" if lo > 0 else "narrows" if hi < 0 else "inconclusive"))
    out_keys = CASE_KEYS
    rt = pd.concat(rates, ignore_index=True)
    rt = rt[out_keys + [c for c in rt.columns if c not in out_keys]]
    rt[[c for c in rt.columns if c.startswith("n_") and c != "n_eff"]] = rt.filter(regex="^n_(?!eff)").fillna(0)
    ef = pd.concat(effects, ignore_index=True) if effects else pd.DataFrame()
    if len(ef):
        ef = ef[out_keys + ["variant", "base"] + [c for c in ef.columns if c not in out_keys + ["variant", "base"]]]
    return {"variant_rates": rt, "variant_effects": ef, "variant_dpd": pd.DataFrame(dpds)}


def twin_tables(twins: pd.DataFrame, decisions: pd.DataFrame, B: int, seed: int) -> dict[str, pd.DataFrame]:
    """Counterfactual twins per case × group: flip rate and exact McNemar test per attribute pair
    (``twin_flips``), the paired DPD (same personas) beside the unpaired one (the drawn agents,
    ``group_dpd``), and the twins' answer and check accounting."""
    keys = POP_CASE + ["group"]
    flips, dpds = [], []
    for i, (key, t) in enumerate(twins.groupby(keys, sort=True)):
        case = dict(zip(keys, key))
        f = twin_flips(t)
        flips.append(f.assign(**case))
        paired, lo, hi = paired_dpd(t, B=B, seed=named_seed(seed, i))
        d = decisions[(decisions[POP_CASE] == pd.Series(key[:4], index=POP_CASE)).all(axis=1)]
        u = group_dpd(d, f"attr_{case['group']}", B=B, seed=named_seed(seed, i, "unpaired"))
        n_sets = t["twin_set"].nunique()
        dpds.append(dict(case, n_sets=n_sets, n_complete=len(complete_twin_sets(t)), paired_dpd=paired,
                         paired_ci_low=lo, paired_ci_high=hi, unpaired_dpd=u.dpd, unpaired_ci_low=u.lo,
                         unpaired_ci_high=u.hi,
                         paired_to_unpaired=paired / u.dpd if u.dpd and np.isfinite(u.dpd) and u.dpd > 0 else np.nan))
    made = twins[~twins["original"].astype(bool)]
    status = status_table(made, keys)
    checks = made.groupby(keys)["twin_status"].value_counts().unstack(fill_value=0).reset_index()
    checks.columns = [c if c in keys else f"twin_{c}" for c in checks.columns]
    accounting = status.merge(checks, on=keys, how="left")
    flip_cols = keys + ["attribute_a", "attribute_b", "n_sets", "a_only", "b_only", "flip_rate", "p_mcnemar"]
    return {"twin_flips": pd.concat(flips, ignore_index=True)[flip_cols] if flips else pd.DataFrame(),
            "twin_dpd": pd.DataFrame(dpds), "twin_accounting": accounting}
