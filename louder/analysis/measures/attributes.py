"""The target-decision rate of every attribute of every case (implicit: the agents; explicit: the
probes), and the rate of every choice: ``attributes.csv`` and ``choices.csv``.

Only ``valid`` answers enter rates; every other status is counted beside them (the grouped-rate
engine, ``louder.analysis.stats.rates``). A case is model × condition × scenario × group (explicit probes
have condition ``explicit``).
"""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.registry import Column, Input, Measure, Plot, Table, register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.choices import choice_rates
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS
from louder.analysis.stats.rates import ATTRIBUTE_COLUMNS, attribute_table, explicit_attribute_table, with_choice_rates


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
    from louder.analysis.report.draw import wilson

    out = attributes[["kind", *CASE_KEYS, "attribute", "rate", "n_target", *COUNT_COLUMNS]].copy()
    lo, hi = wilson(out["n_target"].fillna(0), out["n_valid"].fillna(0))
    out.insert(out.columns.get_loc("rate") + 1, "rate [Wilson 95 % CI]",
               ["–" if pd.isna(r) else f"{r:.3f} [{a:.3f}, {b:.3f}]" for r, a, b in zip(out["rate"], lo, hi)])
    return out.drop(columns="rate")


def report_section(a) -> str:
    t = a.tables
    out = section("Target-decision rate per attribute (cf. Fig. 4)",
                  note("The agents' target-decision rate per attribute with its Wilson 95 % interval (the explicit "
                       "probe's share of answers naming the attribute in the table too); n = valid answers."),
                  a.figure("rates"), table(_rates_table(t["attributes"]), scroll=True,
                                           key=["kind", *CASE_KEYS, "attribute", "rate [Wilson 95 % CI]", "n_valid"]))
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
        a.figure("choices"), table(wide, scroll=True))


def _rates_figure(a):
    from louder.analysis.report import draw as figures

    return figures.rates_figure(a.tables["attributes"])


def _choices_figure(a):
    from louder.analysis.report import draw as figures

    return figures.choices_figure(a.tables["choices"])


FIGURES = (
    Plot("rates", _rates_figure, lambda a: (
        "The target-decision rate of each attribute with its Wilson 95 % interval and its number of valid answers, "
        "one panel per scenario and group, one colour per model.")),
    Plot("choices", _choices_figure, "Stacked bars: the share of each choice among each attribute's valid decisions, "
                                     "one panel per case."))


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
    build=build, inputs=(Input("decisions", doc="the agents' decisions, the per-case view"),
                         Input("probes", doc="the explicit probe's answers (under no intervention)")),
    section=report_section, position=70, figures=FIGURES))
