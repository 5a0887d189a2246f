"""Per-case DPD tables from ``decisions.parquet`` (implicit) and ``probes.parquet`` (explicit).

A case is model × condition × scenario × group (explicit probes have condition ``explicit``).
Only ``valid`` answers enter rates; every other status is counted beside them.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from louder.analysis import power, stats
from louder.analysis.sequential_tables import SEQUENTIAL
from louder.types import CASE_KEYS, STATUSES

CASE_COLUMNS = ["kind", *CASE_KEYS, "dpd", "threshold", "p_value", "p_holm", "significant", "ci_low", "ci_high",
                "n_valid", "n_invalid", "n_refused", "n_error", "rates",
                # issue 14: probability DPD (score mode) and the minimum detectable DPD at 80 % power
                "dpd_p", "ci_low_p", "ci_high_p", "p_value_p", "mdd", "underpowered",
                # issue 14: attribute × every choice, test of independence (analysis/choices.py)
                "p_independence", "independence_test",
                # issue 20: where interval and p-value come from (bootstrap; a sequential run's confidence sequence)
                "interval_method"]
ATTRIBUTE_COLUMNS = ["kind", *CASE_KEYS, "attribute", "n_valid", "n_invalid", "n_refused", "n_error", "n_target",
                     "rate"]


def _case_seed(seed: int, i: int) -> int:
    # One independent stream per case, reproducible from the analysis seed.
    return int(np.random.SeedSequence([seed, i]).generate_state(1)[0])


def attribute_table(decisions: pd.DataFrame, attributes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """One row per case × attribute: status counts, target count over valid decisions, rate.

    rate_a = n_target_a / n_valid_a (NaN when n_valid_a = 0). ``attributes`` (group → attributes)
    adds rows for attributes with no decisions at all, so nothing missing goes unseen.
    """
    if decisions.empty:
        return pd.DataFrame(columns=ATTRIBUTE_COLUMNS)
    d = decisions.assign(is_target=(decisions["status"] == "valid") & decisions["target"].fillna(False).astype(bool))
    counts = d.groupby(CASE_KEYS + ["attribute", "status"]).size().unstack("status", fill_value=0)
    counts = counts.reindex(columns=list(STATUSES), fill_value=0)
    counts.columns = [f"n_{s}" for s in STATUSES]
    counts["n_target"] = d.groupby(CASE_KEYS + ["attribute"])["is_target"].sum()
    table = counts.reset_index()
    if attributes:
        extra = []
        for key, g in table.groupby(CASE_KEYS):
            for a in attributes.get(key[3], []):
                if a not in set(g["attribute"]):
                    extra.append(dict(zip(CASE_KEYS, key), attribute=a))
        if extra:
            table = pd.concat([table, pd.DataFrame(extra)], ignore_index=True)
            table[[c for c in table.columns if c.startswith("n_")]] = table.filter(like="n_").fillna(0)
    for c in [c for c in table.columns if c.startswith("n_")]:
        table[c] = table[c].astype("int64")
    table["rate"] = table["n_target"] / table["n_valid"].where(table["n_valid"] > 0)
    table.insert(0, "kind", "implicit")
    return table[ATTRIBUTE_COLUMNS].sort_values(CASE_KEYS + ["attribute"], ignore_index=True)


def explicit_attribute_table(probes: pd.DataFrame, attributes: dict[str, list[str]]) -> pd.DataFrame:
    """One row per explicit case × attribute: count of answers naming it over all valid answers.

    rate_a = c_a / N with N = valid answers including Unknown; status counts are per case (the
    same on each of its rows), since a probe answer belongs to no attribute until it is valid.
    """
    rows = []
    if probes.empty:
        return pd.DataFrame(columns=ATTRIBUTE_COLUMNS + ["n_unknown"])
    for key, g in probes.groupby(["model", "scenario", "group"]):
        status = g["status"].value_counts()
        valid = g[g["status"] == "valid"]
        n = len(valid)
        named = valid["attribute"].value_counts()
        for a in attributes.get(key[2], sorted(named.index)):
            c = int(named.get(a, 0))
            rows.append(dict(kind="explicit", model=key[0], condition="explicit", scenario=key[1], group=key[2],
                             attribute=a, **{f"n_{s}": int(status.get(s, 0)) for s in STATUSES}, n_target=c,
                             rate=c / n if n else np.nan, n_unknown=int(valid["attribute"].isna().sum())))
    return pd.DataFrame(rows, columns=ATTRIBUTE_COLUMNS + ["n_unknown"])


def implicit_cases(attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """DPD, parity-bootstrap threshold and p, and a 95 % interval for each implicit case."""
    rows = []
    for i, (key, g) in enumerate(attr.groupby(CASE_KEYS, sort=True)):
        n, x = g["n_valid"].to_numpy(), g["n_target"].to_numpy()
        s = _case_seed(seed, i)
        test = stats.parity_bootstrap(n, x, B=B, seed=s)
        lo, hi = stats.dpd_confidence_interval(n, x, B=B, seed=s + 1)
        row = _case_row("implicit", key, test, lo, hi, g)
        pooled = x.sum() / n.sum() if n.sum() else float("nan")
        # the analysis seed, not the case's: cases with the same (n, pooled rate) share one mdd, computed once
        row["mdd"] = power.minimum_detectable_dpd(n, pooled, seed=seed)
        row["underpowered"] = bool(not row["mdd"] <= power.UNDERPOWERED)  # NaN (nothing detectable) counts
        rows.append(row)
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def explicit_cases(attr: pd.DataFrame, B: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Explicit DPD with its uniform-answer null and interval for each explicit case."""
    rows = []
    for i, (key, g) in enumerate(attr.groupby(CASE_KEYS, sort=True)):
        counts = g["n_target"].to_numpy()
        n_total = int(g["n_valid"].iloc[0])
        s = _case_seed(seed + 1_000_003, i)
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


def with_choice_rates(attr: pd.DataFrame, rates: pd.DataFrame) -> pd.DataFrame:
    """Add ``choice_rates`` (JSON choice → rate over valid decisions) to each implicit attribute row."""
    out = attr.copy()
    js = {k[:5]: json.dumps({c: round(float(r), 6) for c, r in zip(g["choice"], g["rate"])}, ensure_ascii=False)
          for k, g in rates.groupby([*CASE_KEYS, "attribute"])} if len(rates) else {}
    out["choice_rates"] = [js.get(tuple(r), "{}") for r in out[[*CASE_KEYS, "attribute"]].itertuples(index=False)]
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
    p = out["p_value"].to_numpy(dtype=float).copy()
    if "interval_method" in out:
        seq = (out["interval_method"] == SEQUENTIAL).to_numpy() & np.isnan(p)
        p[seq] = out.loc[seq, "p_value_p"].to_numpy(dtype=float)
    out["p_holm"] = stats.holm(p)
    out["significant"] = stats.significant(out["p_holm"].to_numpy())
    return out
