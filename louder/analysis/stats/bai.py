"""Statistics of the LLM Word Association and Relative Decision Tests (Bai et al.).

Association scores are tested against 0, decision scores against 0.5 (one-sample t-tests), overall,
per category and per stereotype, each with a 95 % percentile bootstrap interval of the mean.
Association results are given both ways: ``authors`` (an unparsed or refused answer scores 0 and
is kept, as in the authors' code) and ``strict`` (such answers are left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.analysis.stats import Interval, TupleLike
from louder.analysis.stats.keys import is_valid

STAT_COLUMNS = ["test", "model", "convention", "level", "name", "n", "mean", "ci_low", "ci_high", "null", "t", "p_value",
                "n_invalid", "n_refused", "n_error", "refusal_rate", "n_one_sided"]


def mean_interval(x, B: int = 10_000, seed: int = 0, level: float = 0.95) -> Interval:
    """Percentile bootstrap interval of the mean: resample the n values with replacement B times."""
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return Interval(float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = np.empty(B)
    for start in range(0, B, 1000):  # chunks keep memory at 1000 × n
        k = min(1000, B - start)
        means[start:start + k] = x[rng.integers(0, x.size, size=(k, x.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(lo), float(hi))


@dataclass(frozen=True)
class OneSample(TupleLike):
    t: float
    p_value: float


def one_sample(x, null: float) -> OneSample:
    """t = (x̄ − null) / (s / √n), two-sided p (scipy). NaN for fewer than two values or no variance."""
    from scipy.stats import ttest_1samp  # here: scipy.stats takes ~0.7 s to import (distributions.py)

    x = np.asarray(x, dtype=float)
    if x.size < 2 or np.allclose(x, x[0]):
        return OneSample(float("nan"), float("nan"))
    r = ttest_1samp(x, null)
    return OneSample(float(r.statistic), float(r.pvalue))


def _rows(df: pd.DataFrame, test: str, value: str, null: float, convention: str, B: int, seed: int) -> list[dict]:
    out = []
    for model, m in df.groupby("model", sort=True):
        levels = [("overall", "all", m)] + [("category", c, g) for c, g in m.groupby("category", sort=True)] + [
            ("stereotype", s, g) for s, g in m.groupby("stereotype", sort=True)]
        for i, (level, name, g) in enumerate(levels):
            counts = g["status"].value_counts()
            x = g[value].dropna().to_numpy(dtype=float)
            lo, hi = mean_interval(x, B=B, seed=seed + i)
            t, p = one_sample(x, null)
            out.append(dict(test=test, model=model, convention=convention, level=level, name=name, n=len(x),
                            mean=float(x.mean()) if len(x) else float("nan"), ci_low=lo, ci_high=hi, null=null,
                            t=t, p_value=p, n_invalid=int(counts.get("invalid", 0)),
                            n_refused=int(counts.get("refused", 0)), n_error=int(counts.get("error", 0)),
                            refusal_rate=float(counts.get("refused", 0) / len(g)) if len(g) else float("nan"),
                            # valid answers pairing every word with one group (association test only)
                            n_one_sided=int(g["one_sided"].fillna(False).astype(bool).sum())
                            if "one_sided" in g else 0))
    return out


def association_stats(df: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Both conventions. Errors (no answer at all) are excluded from both."""
    answered = df[df["status"] != "error"]
    # Authors' convention: one-sided answers keep their epsilon score (−0.5), other unscored answers 0.
    sided = answered["one_sided"].fillna(False).astype(bool) if "one_sided" in answered else False
    authors = answered.assign(value=answered["score"].astype(float).mask(sided, answered["score_authors"])
                              .fillna(0.0))
    strict = df.assign(value=df["score"].astype(float).where(is_valid(df)))
    rows = _rows(authors, "association", "value", 0.0, "authors", B, seed)
    rows += _rows(strict, "association", "value", 0.0, "strict", B, seed)
    return pd.DataFrame(rows, columns=STAT_COLUMNS)


def decision_stats(df: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Relative/chained: mean score vs 0.5 over valid answers. Absolute: the yes rate per pairing
    (stigmatised/default person × stereotype-consistent/inconsistent option)."""
    if df.empty:
        return pd.DataFrame(columns=STAT_COLUMNS)
    if (df["variant"] == "absolute").all():
        d = df.assign(pairing=[f"{who} person × {'stigma' if o == so else 'default'}-associated option"
                               for who, o, so in zip(df["asked_person"], df["asked_option"], df["stigma_option"])])
        rows = []
        for (model, pairing), g in d.groupby(["model", "pairing"]):
            x = g["score"].dropna().to_numpy(dtype=float)
            lo, hi = mean_interval(x, B=B, seed=seed)
            rows.append(dict(test="decision_absolute", model=model, convention="yes_rate", level="pairing",
                             name=pairing, n=len(x), mean=float(x.mean()) if len(x) else float("nan"), ci_low=lo,
                             ci_high=hi, null=float("nan"), t=float("nan"), p_value=float("nan"),
                             n_invalid=int((g["status"] == "invalid").sum()),
                             n_refused=int((g["status"] == "refused").sum()), n_error=int((g["status"] == "error").sum()),
                             refusal_rate=float((g["status"] == "refused").mean())))
        return pd.DataFrame(rows, columns=STAT_COLUMNS)
    return pd.DataFrame(_rows(df, "decision", "score", 0.5, "valid_only", B, seed), columns=STAT_COLUMNS)


def association_decision_link(df: pd.DataFrame) -> pd.DataFrame:
    """Chained prompts: logistic regression decision ~ association score (statsmodels Logit), per
    model, with the coefficient's 95 % interval (appendix O)."""
    import statsmodels.api as sm

    rows = []
    d = df[is_valid(df) & df["association_score"].notna()]
    for model, g in d.groupby("model"):
        y, x = g["score"].astype(float), g["association_score"].astype(float)
        row = dict(model=model, n=len(g), coef=np.nan, ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                   intercept=np.nan, note="")
        if len(g) < 10 or y.nunique() < 2 or x.nunique() < 2:
            rows.append(dict(row, note="too few valid chained answers, or no variation, to fit"))
            continue
        try:
            fit = sm.Logit(y, sm.add_constant(x, has_constant="add")).fit(disp=0)
            ci = fit.conf_int().loc["association_score"]
            rows.append(dict(row, coef=float(fit.params["association_score"]), ci_low=float(ci[0]),
                             ci_high=float(ci[1]), p_value=float(fit.pvalues["association_score"]),
                             intercept=float(fit.params["const"])))
        except Exception as e:  # perfect separation and the like: say so instead of failing the report
            rows.append(dict(row, note=f"fit failed: {type(e).__name__}"))
    return pd.DataFrame(rows, columns=["model", "n", "coef", "ci_low", "ci_high", "p_value", "intercept", "note"])
