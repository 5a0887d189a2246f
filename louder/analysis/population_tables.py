"""The tables ``louder analyze`` adds for population runs, policy variants and counterfactual twins.

Each function takes the run's tidy tables and returns tidy DataFrames, one row per case × …; the
statistics are the small functions of ``louder.analysis.population`` (formulas there). A case is
model × condition × scenario × variant for a population run; for a plain run with variants it is
model × condition × scenario × group, the variant being what is compared.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd

from louder.analysis import population as P
from louder.analysis import stats as S
from louder.types import CASE_KEYS, STATUSES

POP_CASE = ["model", "condition", "scenario", "variant"]


def attr_groups(decisions: pd.DataFrame) -> list[str]:
    """The ``attr_<group>`` columns of a population run, in the population's group order."""
    return [c for c in decisions.columns if c.startswith("attr_")]


def _gname(col: str) -> str:
    return col.removeprefix("attr_")


def _status_counts(d: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    t = d.groupby(by + ["status"], observed=True).size().unstack("status", fill_value=0)
    t = t.reindex(columns=list(STATUSES), fill_value=0)
    t.columns = [f"n_{s}" for s in STATUSES]
    return t.reset_index()


def _seed(seed: int, *parts) -> int:
    # crc32, not hash(): str hashes change between processes, and the analysis must be reproducible
    return int(np.random.SeedSequence([seed, *[zlib.crc32(str(p).encode()) for p in parts]]).generate_state(1)[0])


def group_tables(decisions: pd.DataFrame, B: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per case × group: the population-weighted DPD with its parity bootstrap (``P.group_dpd``), p_holm
    across the table's rows and significant ⇔ p_holm < 0.05 (``stats.significant``); and per case ×
    group × attribute the weighted rate, n_eff and every status count."""
    cols = attr_groups(decisions)
    dpd_rows, rate_frames = [], []
    for i, (key, d) in enumerate(decisions.groupby(POP_CASE, sort=True)):
        for col in cols:
            r = P.group_dpd(d, col, B=B, seed=_seed(seed, i, col))
            dpd_rows.append(dict(zip(POP_CASE, key), group=_gname(col), n_valid=r.n_valid, dpd=r.dpd,
                                 threshold=r.threshold, p_value=r.p_value, significant=r.significant,
                                 ci_low=r.lo, ci_high=r.hi))
            rates = P.group_rates(d, col)
            counts = _status_counts(d, [col]).rename(columns={col: "attribute"})
            t = counts.merge(rates.drop(columns=["n_valid"]), on="attribute", how="left")
            rate_frames.append(t.assign(**dict(zip(POP_CASE, key)), group=_gname(col)))
    dpd = pd.DataFrame(dpd_rows)
    if len(dpd):  # the run's multiplicity control: Holm across every case × group of the table
        dpd.insert(dpd.columns.get_loc("p_value") + 1, "p_holm", S.holm(dpd["p_value"].to_numpy(dtype=float)))
        dpd["significant"] = S.significant(dpd["p_holm"].to_numpy())
    rates = pd.concat(rate_frames, ignore_index=True) if rate_frames else pd.DataFrame()
    if len(rates):
        rates = rates[POP_CASE + ["group", "attribute", "n_valid", "n_target", "rate", "n_eff", "n_invalid",
                                  "n_refused", "n_error"]]
        rates["n_target"] = rates["n_target"].fillna(0).astype("int64")
    return dpd, rates


def intersection_tables(decisions: pd.DataFrame, min_n: int = 30) -> pd.DataFrame:
    """Per case × pair of groups: ``P.intersection_table`` (rate and n per cell, Fisher test of cells
    with ≥ ``min_n`` valid decisions, Benjamini–Hochberg across the pair's tested cells)."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        for a, b in itertools.combinations(cols, 2):
            t = P.intersection_table(d, a, b, min_n=min_n).rename(columns={a: "attribute_a", b: "attribute_b"})
            frames.append(t.assign(**dict(zip(POP_CASE, key)), group_a=_gname(a), group_b=_gname(b)))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[POP_CASE + ["group_a", "group_b", "attribute_a", "attribute_b", "n_valid", "n_target", "rate",
                           "n_eff", "tested", "p_value", "p_bh", "significant"]]


def regression_tables(decisions: pd.DataFrame, min_n: int = 10) -> pd.DataFrame:
    """Per case: the logistic regression on every group (``P.logistic_regression``). Agents with an
    attribute the model cannot estimate — fewer than ``min_n`` valid decisions, or all of them the same
    decision (separation) — are left out first and named in ``dropped``; a case the data still cannot
    support gets one row with its status and no odds ratio."""
    cols, frames = attr_groups(decisions), []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        v = P.valid(d)
        keep = pd.Series(True, index=d.index)
        dropped = []
        for col in cols:
            stats = v.groupby(col)["y"].agg(["size", "mean"])
            bad = stats[(stats["size"] < min_n) | (stats["mean"] == 0) | (stats["mean"] == 1)].index
            dropped += [f"{_gname(col)}={a}" for a in bad]
            keep &= ~d[col].isin(bad)
        r = P.logistic_regression(d[keep], cols)
        t = r.table if len(r.table) else pd.DataFrame([{c: np.nan for c in P.REGRESSION_COLUMNS}])
        frames.append(t.assign(**dict(zip(POP_CASE, key)), status=r.status, n=r.n, dropped="; ".join(dropped)))
    out = pd.concat(frames, ignore_index=True)
    out["group"] = out["group"].map(lambda g: _gname(g) if isinstance(g, str) else g)
    return out[POP_CASE + ["status", "n", "dropped", *P.REGRESSION_COLUMNS]]


def overall_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per case: the population's weighted target rate with its Wilson interval (``P.weighted_rate``)
    and every status count."""
    rows = []
    for key, d in decisions.groupby(POP_CASE, sort=True):
        r = P.weighted_rate(d)
        counts = d["status"].value_counts()
        rows.append(dict(zip(POP_CASE, key), rate=r.rate, ci_low=r.lo, ci_high=r.hi, n_eff=r.n_eff,
                         **{f"n_{s}": int(counts.get(s, 0)) for s in STATUSES}))
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
            r = P.variant_rates(d, col)
            counts = pd.concat([_status_counts(d, ["variant"]).assign(attribute="(all)"),
                                _status_counts(d, ["variant", col]).rename(columns={col: "attribute"})])
            counts = counts.drop(columns="n_valid")
            rates.append(r.merge(counts, on=["variant", "attribute"], how="left").assign(**case, group=g))
            for v in variants:
                if v == base:
                    continue
                s = _seed(seed, i, col, v)
                effects.append(P.variant_effects(d, col, base, v, B=B, seed=s).assign(**case, group=g, variant=v,
                                                                                       base=base))
                diff, lo, hi = P.variant_dpd_difference(d, col, base, v, B=B, seed=s)
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
    (``P.twin_flips``), the paired DPD (same personas) beside the unpaired one (the drawn agents,
    ``P.group_dpd``), and the twins' answer and check accounting."""
    keys = POP_CASE + ["group"]
    flips, dpds = [], []
    for i, (key, t) in enumerate(twins.groupby(keys, sort=True)):
        case = dict(zip(keys, key))
        f = P.twin_flips(t)
        flips.append(f.assign(**case))
        paired, lo, hi = P.paired_dpd(t, B=B, seed=_seed(seed, i))
        d = decisions[(decisions[POP_CASE] == pd.Series(key[:4], index=POP_CASE)).all(axis=1)]
        u = P.group_dpd(d, f"attr_{case['group']}", B=B, seed=_seed(seed, i, "unpaired"))
        n_sets = t["twin_set"].nunique()
        dpds.append(dict(case, n_sets=n_sets, n_complete=len(P.complete_twin_sets(t)), paired_dpd=paired,
                         paired_ci_low=lo, paired_ci_high=hi, unpaired_dpd=u.dpd, unpaired_ci_low=u.lo,
                         unpaired_ci_high=u.hi,
                         paired_to_unpaired=paired / u.dpd if u.dpd and np.isfinite(u.dpd) and u.dpd > 0 else np.nan))
    made = twins[~twins["original"].astype(bool)]
    status = _status_counts(made, keys)
    checks = made.groupby(keys)["twin_status"].value_counts().unstack(fill_value=0).reset_index()
    checks.columns = [c if c in keys else f"twin_{c}" for c in checks.columns]
    accounting = status.merge(checks, on=keys, how="left")
    flip_cols = keys + ["attribute_a", "attribute_b", "n_sets", "a_only", "b_only", "flip_rate", "p_mcnemar"]
    return {"twin_flips": pd.concat(flips, ignore_index=True)[flip_cols] if flips else pd.DataFrame(),
            "twin_dpd": pd.DataFrame(dpds), "twin_accounting": accounting}


def population_tables(decisions: pd.DataFrame | None, twins: pd.DataFrame | None, B: int = 10_000,
                      seed: int = 0) -> dict[str, pd.DataFrame]:
    """Every table above that the run's data supports (none for a plain run without variants)."""
    if decisions is None:
        return {}
    out: dict[str, pd.DataFrame] = {}
    if attr_groups(decisions) and "variant" in decisions:
        out["population_groups"], out["population_rates"] = group_tables(decisions, B, seed)
        out["population_intersections"] = intersection_tables(decisions)
        out["population_regression"] = regression_tables(decisions)
        out["population_overall"] = overall_table(decisions)
    out.update(variant_tables(decisions, B, seed))
    if twins is not None and len(twins):
        out.update(twin_tables(twins, decisions, B, seed))
    return out
