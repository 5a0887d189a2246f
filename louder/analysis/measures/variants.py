"""Policy variants (issue 11): each variant against ``base`` — its effect on every attribute's rate and
on the DPD (``louder.analysis.population.variant_tables``). A case is the case without its variant
(a population run: the group analysed)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.html import note, section, table
from louder.analysis.population import variant_tables
from louder.analysis.registry import Column, Input, Measure, Table, register


def build(a) -> dict[str, pd.DataFrame]:
    return variant_tables(a.decisions, a.bootstrap, a.seed)


def _variants(a) -> str:
    t = a.tables
    if "variant_rates" not in t:
        return ""
    return section(
        "Policy variants",
        note("Each variant rewords the scenario (its file's <code>variants:</code>); agents keep their persona across "
             "variants, so differences come from the wording. Rate per variant, overall ((all)) and per attribute "
             "(population runs: weighted), with every answer status."),
        table(t["variant_rates"], scroll=True),
        note("Effect of each variant against base per attribute: rate(variant) − rate(base) over valid decisions "
             "(unweighted), 95 % bootstrap interval."),
        table(t["variant_effects"], scroll=True),
        note("Does the variant widen the disparity? DPD(variant) − DPD(base) with a 95 % bootstrap interval: "
             "<b>widens</b> / <b>narrows</b> when the interval excludes 0, else inconclusive."),
        table(t["variant_dpd"], scroll=True))


VARIANT_CASE_DOC = Column(("model", "condition", "scenario", "group", "variant", "attribute"),
                          "the case without its variant (a population run: the group analysed), the variant and "
                          "the attribute (`(all)`: every agent)")

register(Measure(
    "variants", "each policy variant against base: its effect on every attribute's rate and on the DPD",
    tables=(
        Table("variant_rates", "Runs with policy variants: the rate per variant and attribute.", (
            VARIANT_CASE_DOC,
            Column(("n_valid", "n_target", "rate", "n_eff", "n_invalid", "n_refused", "n_error"),
                   "as in `population_rates.csv`"))),
        Table("variant_effects", "Each variant's effect on every attribute's rate.", (
            VARIANT_CASE_DOC,
            Column("base", "the variant compared against"),
            Column(("rate_base", "rate_variant", "difference", "lo", "hi"), "the variant's effect on the attribute's "
                                                                            "rate with its interval"))),
        Table("variant_dpd", "Does the variant widen the disparity?", (
            Column(("model", "condition", "scenario", "group", "variant", "base"), "the case, the variant and the "
                                                                                  "variant compared against"),
            Column(("dpd_difference", "ci_low", "ci_high"), "DPD(variant) − DPD(base) with its interval"),
            Column("verdict", "`widens`, `narrows`, `inconclusive`")))),
    build=build, inputs=(Input("decisions", whole=("variant",), doc="the agents' decisions, every "
                                                                          "policy variant"),),
    needs=("decisions",), section=_variants, position=110))
