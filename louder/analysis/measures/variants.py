"""Policy variants (issue 11): each variant against ``base`` — its effect on every attribute's rate and
on the DPD (``louder.analysis.stats.population.variant_tables``). A case is the case without its variant
(a population run: the group analysed)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.population import variant_tables


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
        a.figure("effects"),
        table(t["variant_effects"], scroll=True),
        note("Does the variant widen the disparity? DPD(variant) − DPD(base) with a 95 % bootstrap interval: "
             "<b>widens</b> / <b>narrows</b> when the interval excludes 0, else inconclusive."),
        a.figure("dpd"), table(t["variant_dpd"], scroll=True))


def _panels(t):
    keys = ["model", "condition", "scenario", "group", "variant"]
    return [(" · ".join(map(str, k)), g) for k, g in t.groupby(keys, sort=True, dropna=False)]


def _effects(a):
    from louder.analysis.report import draw as figures
    from louder.analysis.report import palette as P

    return figures.forest(_panels(a.tables["variant_effects"]), [
        dict(est="difference", lo="lo", hi="hi", label="rate(variant) − rate(base)",
             color=lambda r: P.UP if r["lo"] > 0 else P.DOWN if r["hi"] < 0 else P.NEUTRAL)],
        label="attribute", xlabel="change of the target rate against base (95 % interval)",
        title="Each variant's effect on every attribute's rate")


def _dpd(a):
    from louder.analysis.report import draw as figures
    from louder.analysis.report import palette as P

    t = a.tables["variant_dpd"]
    return figures.forest([("", t)], [
        dict(est="dpd_difference", lo="ci_low", hi="ci_high", marker="D", label="DPD(variant) − DPD(base)",
             color=lambda r: {"widens": P.UP, "narrows": P.DOWN}.get(r["verdict"], P.NEUTRAL))],
        label=lambda r: f"{r['scenario']} × {r['group']}: {r['variant']} ({r['verdict']})",
        xlabel="change of the DPD against base (95 % interval)", title="Does the variant widen the disparity?")


FIGURES = (Figure("effects", _effects, "Forest plot per case and variant: each attribute's change of the target rate "
                                     "against base, with its 95 % interval."),
           Figure("dpd", _dpd, "Forest plot: each variant's change of the DPD against base, with its 95 % interval and "
                             "verdict (widens, narrows or inconclusive)."))

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
    needs=("decisions",), section=_variants, position=110, figures=FIGURES))
