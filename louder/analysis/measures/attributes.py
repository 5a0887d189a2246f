"""The target-decision rate of every attribute of every case (implicit: the agents; explicit: the
probes), and the rate of every choice: ``attributes.csv`` and ``choices.csv``.

Only ``valid`` answers enter rates; every other status is counted beside them
(``louder.analysis.rates``). A case is model × condition × scenario × group (explicit probes have
condition ``explicit``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from louder.analysis.choices import choice_rates
from louder.analysis.html import note, png, section, table
from louder.analysis.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS, valid
from louder.analysis.rates import rates
from louder.analysis.registry import Column, Measure, Table, register
from louder.status import status_table

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
    js = {k[:5]: json.dumps({c: round(float(r), 6) for c, r in zip(g["choice"], g["rate"])}, ensure_ascii=False)
          for k, g in rates.groupby(ATTRIBUTE_KEYS)} if len(rates) else {}
    out["choice_rates"] = [js.get(tuple(r), "{}") for r in out[ATTRIBUTE_KEYS].itertuples(index=False)]
    return out


def build(a) -> dict[str, pd.DataFrame]:
    frames = []
    if a.decisions is not None:
        choices = choice_rates(a.decisions)
        frames.append(with_choice_rates(attribute_table(a.decisions, a.groups), choices))
    else:
        choices = choice_rates(None)
    if a.probes is not None:
        frames.append(explicit_attribute_table(a.probes, a.groups))
    attributes = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(
        len(f) for f in frames) else pd.DataFrame(columns=ATTRIBUTE_COLUMNS)
    return {"attributes": attributes, "choices": choices}


def _rates_table(attributes: pd.DataFrame) -> pd.DataFrame:
    return attributes[["kind", *CASE_KEYS, "attribute", "rate", "n_target", *COUNT_COLUMNS]]


def report_section(a) -> str:
    from louder.analysis import figures

    t = a.tables
    out = section("Target-decision rate per attribute (cf. Fig. 4)",
                  png(figures.rates_figure(t["attributes"])), table(_rates_table(t["attributes"]), scroll=True))
    choices = t.get("choices")
    if choices is None or choices.empty:
        return out
    # the rate of every choice per attribute (issue 14): DPD only compares the target's rate
    wide = choices.pivot_table(index=[*ATTRIBUTE_KEYS, "n_valid"], columns="choice", values="rate",
                               fill_value=0.0).reset_index()
    wide.columns.name = None
    return out + "\n" + section(
        "Rate of every choice per attribute",
        note("Share of each choice among an attribute's valid decisions. The cases table gives p_independence: a "
             "test that choice is independent of attribute over all choices (Pearson χ² when every expected count "
             "is at least 5, else a Monte-Carlo permutation test), beside the target-only DPD."),
        table(wide, scroll=True))


CASE_COLUMNS_DOC = (Column(("model", "condition", "scenario", "group"), "the case: model × persona condition × "
                                                                        "scenario × group (explicit: condition "
                                                                        "`explicit`)"),)

register(Measure(
    "attributes", "the target-decision rate of every attribute (agents and explicit probes), and every choice's rate",
    tables=(
        Table("attributes", "One row per case × attribute.", (
            Column("kind", "`implicit` (the agents) or `explicit` (the probes)"),
            *CASE_COLUMNS_DOC,
            Column("attribute", "the attribute"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "answers by status"),
            Column("n_target", "valid answers choosing the target (explicit: naming the attribute)"),
            Column("rate", "`n_target` / `n_valid`"),
            Column("choice_rates", "implicit: JSON object choice → rate"),
            Column("n_unknown", 'explicit: valid answers of "Unknown"'))),
        Table("choices", "One row per case × attribute × choice: a three-choice scenario is not reduced to target "
                         "vs the rest.", (
            *CASE_COLUMNS_DOC,
            Column("attribute", "the attribute"),
            Column("choice", "the choice label"),
            Column("n", "valid decisions for the choice"),
            Column("n_valid", "valid decisions of the attribute"),
            Column("rate", "`n` / `n_valid`")))),
    build=build, section=report_section, position=70))
