"""The grouped-rate engine: per group, the count of every answer status, the target rate over the
valid answers and, per case, the DPD across a group's attributes — what Fairlearn's ``MetricFrame``
is for Fairlearn (``by_group``, ``difference()``, ``overall``), in louder's terms. Every measure
counts and rates through here.

For the rows i of one group (valid ones: status ``valid``), with outcome y_i ∈ {0, 1} (chose the
target) and weight w_i (1 without weights):

    n_<status>  = #{i : status_i = <status>}      n_target = Σ_valid y_i
    rate        = Σ_valid w_i y_i / Σ_valid w_i    (unweighted: n_target / n_valid; NaN when n_valid = 0)
    n_eff       = (Σ_valid w_i)² / Σ_valid w_i²    (Kish's effective size; weighted only)
    n_clusters  = distinct clusters with a valid answer (archetype × replicate, where the run has them)

and per case (the rows of the groups that share ``keys``): DPD = max_a rate_a − min_a rate_a over
its attributes a with a rate (NaN below two). Intervals and tests of these DPDs are the statistics
modules' (``stats``, ``intervals``, ``prob_dpd``, ``network``): they take the counts made here.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS, is_valid, targets, valid
from louder.status import status_table

__all__ = ["status_table", "target_rates", "rates", "difference", "attribute_table", "explicit_attribute_table",
           "with_choice_rates", "ATTRIBUTE_COLUMNS", "RateFrame"]


def target_rates(df: pd.DataFrame, by: list[str], weight: str | None = None, cluster: str | None = None,
                 target: str = "target") -> pd.DataFrame:
    """Per group of ``by`` with a valid answer (sorted): n_valid, n_target, rate (module docstring);
    with ``weight`` (a column; unit weights when the frame has none) the weighted rate and n_eff;
    with ``cluster`` (a column) n_clusters."""
    # only the columns used: selecting the valid rows of every column of a decisions frame (its texts
    # among them) costs more than the grouping
    used = [*by, target, *(c for c in (weight, cluster) if c is not None and (c != weight or c in df.columns))]
    d = df.loc[is_valid(df), list(dict.fromkeys(used))]
    y = targets(d, target)
    # the sums column by column: pandas' named aggregation (``agg(n_valid=("y", "size"), …)``) parses its
    # arguments on every call, which was most of this function on a case's few hundred rows
    if weight is None:
        g = d.assign(y=y).groupby(by, observed=True)
        out = pd.DataFrame({"n_valid": g["y"].size(), "n_target": g["y"].sum()})
        out["rate"] = out["n_target"] / out["n_valid"]
    else:
        w = d[weight].astype(float) if weight in d else pd.Series(1.0, index=d.index)
        g = d.assign(y=y, w=w, wy=w * y, w2=w ** 2).groupby(by, observed=True)
        out = pd.DataFrame({"n_valid": g["y"].size(), "n_target": g["y"].sum(), "sw": g["w"].sum(),
                            "swy": g["wy"].sum(), "sw2": g["w2"].sum()})
        out["rate"] = out["swy"] / out["sw"]
        out["n_eff"] = out["sw"] ** 2 / out["sw2"]
        out = out.drop(columns=["sw", "swy", "sw2"])
    if cluster is not None:
        out["n_clusters"] = g[cluster].nunique()
    return out.reset_index()


def rates(df: pd.DataFrame, by: list[str], weight: str | None = None, cluster: str | None = None,
          target: str = "target") -> pd.DataFrame:
    """Per group of ``by`` seen in any status (sorted): n_valid, n_invalid, n_refused, n_error,
    n_target and rate (NaN without a valid answer), and n_eff / n_clusters as ``target_rates``."""
    counts = status_table(df, by)
    t = target_rates(df, by, weight, cluster, target).drop(columns="n_valid")
    out = counts.merge(t, on=by, how="left") if len(counts) else counts.assign(n_target=[], rate=[])
    out["n_target"] = out["n_target"].fillna(0).astype("int64")
    return out


def difference(by_group: pd.DataFrame, keys: list[str], rate: str = "rate") -> pd.DataFrame:
    """Per case of ``keys``: its DPD (max − min of ``rate`` over its rows with a rate; NaN below two)
    and how many attributes had a rate (``n_rated``)."""
    def dpd(r: pd.Series) -> float:
        r = r.dropna().to_numpy(dtype=float)
        return float(np.max(r) - np.min(r)) if r.size >= 2 else float("nan")

    g = by_group.groupby(keys, observed=True, sort=True)[rate]
    return pd.DataFrame({"dpd": g.apply(dpd), "n_rated": g.count()}).reset_index()


class RateFrame:
    """The rates of a table by case × attribute (``by_group``), the DPD per case (``difference()``)
    and the pooled rate per case (``overall``) — Fairlearn's ``MetricFrame`` for target rates:
    ``keys`` are its control features, ``attribute`` its sensitive feature.

        >>> RateFrame(decisions, ["model", "scenario", "group"]).difference()
    """

    def __init__(self, df: pd.DataFrame, keys: list[str], attribute: str = "attribute", weight: str | None = None,
                 cluster: str | None = None, target: str = "target"):
        self.keys, self.attribute = list(keys), attribute
        self._df, self._weight, self._cluster, self._target = df, weight, cluster, target
        self.by_group = rates(df, [*self.keys, attribute], weight, cluster, target)

    def difference(self) -> pd.DataFrame:
        """keys → dpd (max − min attribute rate) and n_rated."""
        return difference(self.by_group, self.keys)

    @property
    def overall(self) -> pd.DataFrame:
        """keys → every status count and the pooled rate of the case (all its attributes)."""
        return rates(self._df, self.keys, self._weight, self._cluster, self._target)

    def __repr__(self) -> str:
        return f"RateFrame({len(self.by_group)} groups by {', '.join(self.keys + [self.attribute])})"


COLUMNS = [*COUNT_COLUMNS, "n_target", "rate"]


# --- attributes.csv: the rate of every attribute of every case ---------------------------------------

ATTRIBUTE_COLUMNS = ["kind", *ATTRIBUTE_KEYS, *COUNT_COLUMNS, "n_target", "rate"]


def attribute_table(decisions: pd.DataFrame, attributes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """One row per case × attribute: status counts, target count over valid decisions, rate.

    rate_a = n_target_a / n_valid_a (NaN when n_valid_a = 0). ``attributes`` (group → attributes)
    adds rows for attributes with no decisions at all, so nothing missing goes unseen.
    """
    if decisions.empty:
        return pd.DataFrame(columns=ATTRIBUTE_COLUMNS)
    table = rates(decisions, ATTRIBUTE_KEYS)
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
    return table[ATTRIBUTE_COLUMNS].sort_values(ATTRIBUTE_KEYS, ignore_index=True)


def explicit_attribute_table(probes: pd.DataFrame, attributes: dict[str, list[str]]) -> pd.DataFrame:
    """One row per explicit case × attribute: count of answers naming it over all valid answers.

    rate_a = c_a / N with N = valid answers including Unknown; status counts are per case (the
    same on each of its rows), since a probe answer belongs to no attribute until it is valid.
    """
    if probes.empty:
        return pd.DataFrame(columns=ATTRIBUTE_COLUMNS + ["n_unknown"])
    case = ["model", "scenario", "group"]
    answers = dict(iter(valid(probes, [*case, "attribute"]).groupby(case)))
    none = pd.DataFrame(columns=[*case, "attribute"])
    rows = []
    for key, st in status_table(probes, case).set_index(case).iterrows():
        g = answers.get(key, none)
        n = len(g)
        named = g["attribute"].value_counts()
        for a in attributes.get(key[2], sorted(named.index)):
            c = int(named.get(a, 0))
            rows.append(dict(kind="explicit", model=key[0], condition="explicit", scenario=key[1], group=key[2],
                             attribute=a, **{k: int(st[k]) for k in COUNT_COLUMNS}, n_target=c,
                             rate=c / n if n else np.nan, n_unknown=int(g["attribute"].isna().sum())))
    return pd.DataFrame(rows, columns=ATTRIBUTE_COLUMNS + ["n_unknown"])


def with_choice_rates(attr: pd.DataFrame, rates: pd.DataFrame) -> pd.DataFrame:
    """Add ``choice_rates`` (JSON choice → rate over valid decisions) to each implicit attribute row."""
    out = attr.copy()
    # row by row, not a groupby of ~500 small frames: each attribute's choices in the table's order
    per: dict[tuple, dict] = {}
    if len(rates):
        keys = zip(*(rates[c].tolist() for c in ATTRIBUTE_KEYS))
        for k, c, r in zip(keys, rates["choice"].tolist(), rates["rate"].tolist()):
            if not any(pd.isna(v) for v in k):  # a missing key is in no group (groupby leaves it out)
                per.setdefault(k, {})[c] = round(float(r), 6)
    js = {k: json.dumps(v, ensure_ascii=False) for k, v in per.items()}
    out["choice_rates"] = [js.get(tuple(r), "{}") for r in out[ATTRIBUTE_KEYS].itertuples(index=False)]
    return out
