"""Comparisons across cases: implicit vs explicit (sections 5.1/5.3 of the paper: ``contrast``,
``contrast_cases``) and the persona-condition ablation (5.4: ``ablation``), from the cases and
attributes tables. Formulas in each docstring."""

from __future__ import annotations

import numpy as np
import pandas as pd

from louder.analysis import stats

CONTRAST_COLUMNS = ["model", "implicit_condition", "n_implicit", "mean_implicit", "sd_implicit",
                    "significant_implicit", "n_explicit", "mean_explicit", "sd_explicit", "significant_explicit",
                    "t", "df", "p_value",
                    # issue 21: the beliefs probe's DPDs, and Welch's test of implicit vs belief
                    "n_belief", "mean_belief", "sd_belief", "significant_belief", "t_belief", "df_belief",
                    "p_value_belief"]
# issue 32: the same contrast per case — each implicit case beside the explicit probe of its scenario × group
CONTRAST_CASE_COLUMNS = ["model", "condition", "scenario", "group", "implicit_dpd", "implicit_ci_low",
                         "implicit_ci_high", "implicit_significant", "implicit_underpowered", "explicit_dpd",
                         "explicit_ci_low", "explicit_ci_high", "explicit_significant", "difference", "diff_ci_low",
                         "diff_ci_high", "note"]
ABLATION_COLUMNS = ["model", "scenario", "group", "condition", "dpd", "threshold", "significant", "ci_low",
                    "ci_high", "diff_vs_contextualized", "diff_ci_low", "diff_ci_high"]
def contrast(cases: pd.DataFrame, implicit_condition: str = "contextualized",
             beliefs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model: mean (sd) DPD of implicit cases (of one condition) and of explicit cases, and
    Welch's t-test of the difference, as in section 5.1. With ``beliefs`` (the voices table: one
    belief DPD per case, ``analysis.voices``) also the mean (sd) belief DPD, its significant cases
    (permutation p Holm-adjusted across the run's belief cases, below 0.05: ``stats.significant``),
    and Welch's t-test of implicit vs belief — the same test as implicit vs
    explicit, for consistency (cases are treated as independent samples, not paired by scenario ×
    group). Belief and implicit DPDs are both differences of rates of choosing the target; the
    explicit DPD is a difference of shares of answers (docs/voices.md)."""
    rows = []
    if beliefs is not None and len(beliefs):  # the run's belief cases are one family: Holm across them
        beliefs = beliefs.assign(_sig=stats.significant(stats.holm(beliefs["belief_p"].to_numpy(dtype=float))))
    models = set(cases["model"]) | (set(beliefs["model"]) if beliefs is not None and len(beliefs) else set())
    for model in sorted(models):
        g = cases[cases["model"] == model]
        imp = g[(g["kind"] == "implicit") & (g["condition"] == implicit_condition)]["dpd"].to_numpy(dtype=float)
        exp = g[g["kind"] == "explicit"]["dpd"].to_numpy(dtype=float)
        sig_i = int(g[(g["kind"] == "implicit") & (g["condition"] == implicit_condition)]["significant"].sum())
        sig_e = int(g[g["kind"] == "explicit"]["significant"].sum())
        t = stats.welch(imp, exp)
        bel = np.array([], dtype=float)
        sig_b = 0
        if beliefs is not None and len(beliefs):
            b = beliefs[(beliefs["model"] == model) & beliefs["belief_dpd"].notna()]
            bel, sig_b = b["belief_dpd"].to_numpy(dtype=float), int(b["_sig"].sum())
        tb = stats.welch(imp, bel)
        rows.append(dict(model=model, implicit_condition=implicit_condition, n_implicit=len(imp),
                         mean_implicit=_mean(imp), sd_implicit=_sd(imp), significant_implicit=sig_i,
                         n_explicit=len(exp), mean_explicit=_mean(exp), sd_explicit=_sd(exp),
                         significant_explicit=sig_e, **t, n_belief=len(bel), mean_belief=_mean(bel),
                         sd_belief=_sd(bel), significant_belief=sig_b, t_belief=tb.t, df_belief=tb.df,
                         p_value_belief=tb.p_value))
    return pd.DataFrame(rows, columns=CONTRAST_COLUMNS)


def contrast_cases(cases: pd.DataFrame, attributes: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per case: the implicit DPD (each persona condition) beside the explicit DPD of the same model ×
    scenario × group (keys are ids, however the files were named), both as in ``cases.csv`` (interval,
    ``significant`` after the run's Holm correction), and their difference implicit − explicit with
    the interval of ``stats.implicit_explicit_difference``. A case with one side only is kept, its
    ``note`` saying what is missing and the command that adds it."""
    keys = ["model", "scenario", "group"]
    imp = cases[cases["kind"] == "implicit"].sort_values(["model", "condition", "scenario", "group"])
    exp = {tuple(e[keys]): e for _, e in cases[cases["kind"] == "explicit"].sort_values(keys).iterrows()}
    rows = []

    def counts(kind: str, condition: str, key: tuple) -> pd.DataFrame:
        a = attributes
        return a[(a["kind"] == kind) & (a["condition"] == condition) & (a["model"] == key[0])
                 & (a["scenario"] == key[1]) & (a["group"] == key[2])]

    def side(c, kind: str) -> dict:
        if c is None:
            return {f"{kind}_{k}": np.nan for k in ("dpd", "ci_low", "ci_high")} | {f"{kind}_significant": np.nan}
        return {f"{kind}_dpd": c["dpd"], f"{kind}_ci_low": c["ci_low"], f"{kind}_ci_high": c["ci_high"],
                f"{kind}_significant": bool(c["significant"])}

    for i, (_, c) in enumerate(imp.iterrows()):
        key = (c["model"], c["scenario"], c["group"])
        e = exp.get(key)
        diff, note = stats.Difference(np.nan, np.nan, np.nan), ""
        if e is None:
            note = (f"no explicit probe of {key[1]} × {key[2]} for this model: run `louder probe explicit` into "
                    "this folder with the same --scenario and --group")
        else:
            a, x = counts("implicit", c["condition"], key), counts("explicit", "explicit", key)
            diff = stats.implicit_explicit_difference(a["n_valid"], a["n_target"], x["n_target"], int(e["n_valid"]),
                                                      B=B, seed=stats.substream(seed, 32, i))
        rows.append(dict(model=key[0], condition=c["condition"], scenario=key[1], group=key[2], **side(c, "implicit"),
                         implicit_underpowered=bool(c["underpowered"]), **side(e, "explicit"),
                         difference=diff.estimate, diff_ci_low=diff.low, diff_ci_high=diff.high, note=note))
    paired = set(map(tuple, imp[keys].to_numpy()))
    for key, e in exp.items():
        if key not in paired:
            rows.append(dict(model=key[0], condition=None, scenario=key[1], group=key[2], **side(None, "implicit"),
                             implicit_underpowered=np.nan, **side(e, "explicit"), difference=np.nan,
                             diff_ci_low=np.nan, diff_ci_high=np.nan,
                             note=f"no implicit case of {key[1]} × {key[2]} for this model: run `louder run` into "
                                  "this folder with the same --scenario and --group"))
    return pd.DataFrame(rows, columns=CONTRAST_CASE_COLUMNS)


def _mean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def _sd(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.std(ddof=1)) if v.size >= 2 else float("nan")


def ablation(cases: pd.DataFrame, attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per model × scenario × group: each condition's DPD and significance, and its difference from
    the contextualized condition with a 95 % bootstrap interval (section 5.4)."""
    imp = cases[cases["kind"] == "implicit"]
    # each case's attribute rows, split once (not one comparison of every row per case and condition)
    cells = dict(list(attr.groupby(["model", "scenario", "group", "condition"], sort=False)))
    none = attr.iloc[:0]

    def group_rows(item) -> list[dict]:
        i, (key, g) = item
        ref = cells.get((*key, "contextualized"), none)
        out = []
        for _, c in g.iterrows():
            diff = (np.nan, np.nan, np.nan)
            if len(ref) and c["condition"] != "contextualized":
                other = cells.get((*key, c["condition"]), none).set_index("attribute")
                r = ref.set_index("attribute").loc[other.index.intersection(ref["attribute"])]
                o = other.loc[r.index]
                diff = stats.dpd_difference_interval(r["n_valid"], r["n_target"], o["n_valid"], o["n_target"],
                                                     B=B, seed=seed + i)
            out.append(dict(model=key[0], scenario=key[1], group=key[2], condition=c["condition"], dpd=c["dpd"],
                            threshold=c["threshold"], significant=c["significant"], ci_low=c["ci_low"],
                            ci_high=c["ci_high"], diff_vs_contextualized=diff[0], diff_ci_low=diff[1],
                            diff_ci_high=diff[2]))
        return out

    groups = stats.each_case(group_rows, enumerate(imp.groupby(["model", "scenario", "group"], sort=True)))
    rows = [r for g in groups for r in g]
    return pd.DataFrame(rows, columns=ABLATION_COLUMNS)
