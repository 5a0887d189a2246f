"""The DPD of every case with its parity null, interval, power and Holm adjustment (cases.csv).

Implicit cases (the agents) are tested by the paper's parity bootstrap (``stats.parity_bootstrap``),
explicit ones (the probes) against uniform answers (``stats.explicit_parity_bootstrap``); each with
louder's DPD interval. Per implicit case the minimum detectable DPD at 80 % power (``power``) and
``underpowered`` = mdd > 0.3 (or none up to 1). ``with_holm``: Holm across every case of the run, and
the run's one rule ``significant`` = p_holm < 0.05 (``stats.significant``). Each case has its own
random stream (``stats.substream(seed, i)``: the i-th case in sort order; explicit cases offset)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from louder.analysis import stats
from louder.analysis.stats import power
from louder.analysis.stats.keys import CASE_KEYS, COUNT_COLUMNS, STATUSES
from louder.analysis.stats.sequential_cases import SEQUENTIAL

CASE_COLUMNS = ["kind", *CASE_KEYS, "dpd", "threshold", "p_value", "p_holm", "significant", "ci_low", "ci_high",
                *COUNT_COLUMNS, "rates",
                # issue 14: probability DPD (score mode) and the minimum detectable DPD at 80 % power
                "dpd_p", "ci_low_p", "ci_high_p", "p_value_p", "mdd", "underpowered",
                # issue 14: attribute × every choice, test of independence (analysis/stats/choices.py)
                "p_independence", "independence_test",
                # issue 20: where interval and p-value come from (bootstrap; a sequential run's confidence sequence)
                "interval_method"]


def implicit_cases(attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """DPD, parity-bootstrap threshold and p, and a 95 % interval for each implicit case."""
    def row(case) -> dict:
        i, (key, g) = case
        n, x = g["n_valid"].to_numpy(), g["n_target"].to_numpy()
        s = stats.substream(seed, i)
        test = stats.parity_bootstrap(n, x, B=B, seed=s)
        lo, hi = stats.dpd_confidence_interval(n, x, B=B, seed=s + 1)
        out = _case_row("implicit", key, test, lo, hi, g)
        out["_mdd"] = power.mdd_key(n, x.sum() / n.sum() if n.sum() else float("nan"))
        return out

    rows = stats.each_case(row, enumerate(attr.groupby(CASE_KEYS, sort=True)))
    # the analysis seed, not the case's: cases with the same (n, pooled rate) share one mdd, computed once
    keys = list(dict.fromkeys(r["_mdd"] for r in rows if r["_mdd"] is not None))
    mdd = dict(zip(keys, stats.each_case(lambda k: power.minimum_detectable_dpd(*k, seed=seed), keys)))
    for r in rows:
        r["mdd"] = mdd.get(r.pop("_mdd"), float("nan"))
        r["underpowered"] = bool(not r["mdd"] <= power.UNDERPOWERED)  # NaN (nothing detectable) counts
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def explicit_cases(attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Explicit DPD with its uniform-answer null and interval for each explicit case."""
    rows = []
    for i, (key, g) in enumerate(attr.groupby(CASE_KEYS, sort=True)):
        counts = g["n_target"].to_numpy()
        n_total = int(g["n_valid"].iloc[0])
        s = stats.substream(seed + 1_000_003, i)
        test = stats.explicit_parity_bootstrap(counts, n_total, B=B, seed=s)
        lo, hi = stats.explicit_dpd_confidence_interval(counts, n_total, B=B, seed=s + 1)
        rows.append(_case_row("explicit", key, test, lo, hi, g, n_valid=n_total))
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def _case_row(kind: str, key: tuple, test: stats.ParityTest, lo: float, hi: float, g: pd.DataFrame,
              n_valid: int | None = None):
    per_case = kind == "explicit"  # explicit status counts are per case, repeated on each attribute row
    counts = {f"n_{s}": int(g[f"n_{s}"].iloc[0] if per_case else g[f"n_{s}"].sum()) for s in STATUSES}
    if n_valid is not None:
        counts["n_valid"] = n_valid
    rates = {a: (None if np.isnan(r) else round(float(r), 6)) for a, r in zip(g["attribute"], g["rate"])}
    return dict(kind=kind, **dict(zip(CASE_KEYS, key)), dpd=test.dpd, threshold=test.threshold,
                p_value=test.p_value, p_holm=np.nan, significant=test.significant, ci_low=lo, ci_high=hi,
                **counts, rates=json.dumps(rates, ensure_ascii=False), dpd_p=np.nan, ci_low_p=np.nan,
                ci_high_p=np.nan, p_value_p=np.nan, mdd=np.nan, underpowered=False,
                p_independence=np.nan, independence_test="", interval_method="bootstrap")


def with_prob_dpd(cases: pd.DataFrame, prob: pd.DataFrame) -> pd.DataFrame:
    """Fill dpd_p … p_value_p of the implicit cases from ``prob_dpd.prob_dpd_table``."""
    out = cases.copy()
    cols = ["dpd_p", "ci_low_p", "ci_high_p", "p_value_p"]
    if len(prob) and len(out):
        merged = out[["kind", *CASE_KEYS]].merge(prob.assign(kind="implicit"), how="left", on=["kind", *CASE_KEYS])
        out[cols] = merged[cols].to_numpy(dtype=float)
    return out


def with_independence(cases: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """Fill p_independence / independence_test of the implicit cases from ``choices.independence_table``."""
    out = cases.copy()
    if len(tests) and len(out):
        merged = out[["kind", *CASE_KEYS]].merge(tests.assign(kind="implicit"), how="left", on=["kind", *CASE_KEYS])
        out["p_independence"] = merged["p_independence"].to_numpy(dtype=float)
        out["independence_test"] = merged["independence_test"].fillna("").to_numpy()
    return out


def with_holm(cases: pd.DataFrame) -> pd.DataFrame:
    """Holm-adjusted p-values across all cases of the run (implicit and explicit together), and the
    run's ``significant``: p_holm < 0.05 (``stats.significant``). A case's p-value is ``p_value``;
    for a sequential score-mode case, whose test is on the probability DPD, ``p_value_p`` (its
    anytime-valid p-value: Holm is valid on it, docs/sequential.md)."""
    out = cases.copy()
    if not len(out):
        out["p_holm"], out["significant"] = [], []
        return out
    out["p_holm"], out["significant"] = _holm(out, "p_value")
    return out


def _holm(cases: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Holm's adjustment of the p-values of ``column`` over every case, a sequential case (no fixed-N
    p-value) entering with its sequential one (``p_value_p``); and significant = adjusted p < 0.05."""
    p = cases[column].to_numpy(dtype=float).copy()
    if "interval_method" in cases:
        seq = (cases["interval_method"] == SEQUENTIAL).to_numpy() & np.isnan(p)
        p[seq] = cases.loc[seq, "p_value_p"].to_numpy(dtype=float)
    adjusted = stats.holm(p)
    return adjusted, stats.significant(np.asarray(adjusted))


SAMPLED, PROBABILITY = "sampled", "probability"


def headline(cases: pd.DataFrame, probability: bool) -> pd.DataFrame:
    """The test each case's finding rests on, beside the other: ``cases`` with the columns ``test``,
    ``h_dpd``, ``h_ci_low``, ``h_ci_high``, ``h_p``, ``h_p_holm`` and ``h_significant``.

    Without ``probability`` every case rests on its sampled DPD: the h_ columns are ``dpd``, ``ci_low``,
    ``ci_high``, ``p_value``, ``p_holm`` and ``significant`` as they are. With ``probability`` (a
    score-mode run whose decisions are argmax picks: every agent of a case whose probabilities tie or
    lean one way picks the same choice, so the picks' DPD can read 0 where the probabilities differ by
    0.4) an implicit case with a probability DPD rests on it — h_ = ``dpd_p``, ``ci_low_p``,
    ``ci_high_p``, ``p_value_p`` — and the run's Holm adjustment is taken again over these p-values and
    the other cases' own (as ``with_holm`` does: a sequential case enters with its sequential p-value);
    ``h_significant`` = h_p_holm < 0.05 (``stats.significant``). Only a reading: cases.csv keeps both tests'
    columns as written."""
    out = cases.copy()
    out["test"] = SAMPLED
    out["h_dpd"], out["h_ci_low"], out["h_ci_high"] = out["dpd"], out["ci_low"], out["ci_high"]
    out["h_p"], out["h_p_holm"], out["h_significant"] = out["p_value"], out["p_holm"], out["significant"]
    if not probability or not len(out):
        return out
    use = ((out["kind"] == "implicit") & out["dpd_p"].notna()).to_numpy()
    if not use.any():
        return out
    out.loc[use, "test"] = PROBABILITY
    for h, c in (("h_dpd", "dpd_p"), ("h_ci_low", "ci_low_p"), ("h_ci_high", "ci_high_p"), ("h_p", "p_value_p")):
        out.loc[use, h] = out.loc[use, c]
    out["h_p_holm"], out["h_significant"] = _holm(out, "h_p")
    return out
