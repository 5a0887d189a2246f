"""Counterfactual twins (issue 11): each persona re-expressed for every other attribute — flips
between a persona's versions and the paired DPD (the same personas) beside the unpaired one (the drawn
agents), with every twin's answer and check (``louder.analysis.stats.population.twin_tables``)."""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.population import twin_tables

# twins decide in every arm as their agents do: both read one wording, level and intervention, every variant
INPUTS = (Input("decisions", whole=("variant",), doc="the drawn agents' decisions, every policy variant"),
          Input("twins", whole=("variant",), doc="the twins' decisions (twins.parquet)"))


def build(a) -> dict[str, pd.DataFrame]:
    if not len(a.twins):
        return {}
    return twin_tables(a.twins, a.decisions, a.bootstrap, a.seed)


def _twins(a) -> str:
    t = a.tables
    if "twin_dpd" not in t:
        return ""
    return section(
        "Counterfactual twins",
        note("Each persona was written once and re-expressed for every other attribute of each group, changing only "
             "the attribute's words, pronouns (with the grammar they govern) and (for gender and race/ethnicity) the "
             "name (<code>louder/data/twins.yaml</code>); a group without a word list is rewritten by a model. A "
             "check verifies that the old attribute's words are gone, the new ones present, a new name is a "
             "plausible name, and nothing else changed (exactly, or for a model rewrite to a difflib similarity of "
             "0.9). twin_status: <b>ok</b> passed the check; <b>unchanged</b> the persona never names the attribute "
             "(same text); <b>failed_check</b> failed it (twin_reason in twins.parquet says why); <b>no_persona</b> "
             "the original persona was not valid; <b>invalid / refused / error</b> the twin's name or rewrite call "
             "failed. Every twin that has a text decides; the analysis uses twin sets whose every member passed "
             "and decided validly."),
        table(t["twin_accounting"], scroll=True),
        note("<b>Paired vs unpaired DPD</b>: the paired DPD compares the attributes on the same personas (only the "
             "attribute changed), the unpaired one the drawn agents (each with its own persona). "
             "paired_to_unpaired near 1: the attribute alone explains the gap; near 0: the gap came from what the "
             "model wrote into the personas."),
        a.figure("dpd"),
        table(t["twin_dpd"], scroll=True),
        note("Per attribute pair: flip rate = discordant twin pairs / complete sets; exact McNemar test (two-sided "
             "binomial test of a_only among the discordant pairs at ½)."),
        table(t["twin_flips"], scroll=True))


def _figure(a):
    from louder.analysis.report import draw as figures
    from louder.analysis.report import palette as P

    t = a.tables["twin_dpd"]
    keys = ["model", "condition", "scenario", "variant"]
    panels = [(" · ".join(map(str, k)), g) for k, g in t.groupby(keys, sort=True, dropna=False)]
    return figures.forest(panels, [
        dict(est="paired_dpd", lo="paired_ci_low", hi="paired_ci_high", color=P.VERMILLION,
             label="paired: the same personas, only the attribute changed"),
        dict(est="unpaired_dpd", lo="unpaired_ci_low", hi="unpaired_ci_high", color=P.BLUE, marker="s",
             label="unpaired: the drawn agents")],
        label="group", xlabel="DPD (95 % interval)", ref=None, xlim=(-0.02, 1.02),
        title="Counterfactual twins: the paired DPD beside the unpaired one")


FIGURES = (Figure("dpd", _figure, "Forest plot per case and twin group: the DPD of the same personas with only the "
                                "attribute changed, beside the DPD of the drawn agents, each with its 95 % interval."),)

TWIN_CASE_DOC = Column(("model", "condition", "scenario", "variant", "group"), "the case and twin group")

register(Measure(
    "twins", "counterfactual twins: flips between a persona's versions, and the paired against the unpaired DPD",
    tables=(
        Table("twin_flips", "Population runs with `--twins`: per case × twin group × attribute pair.", (
            TWIN_CASE_DOC,
            Column(("attribute_a", "attribute_b"), "the attribute pair"),
            Column("n_sets", "complete twin sets"),
            Column(("a_only", "b_only"), "sets where only a's (only b's) version chose the target"),
            Column("flip_rate", "(`a_only` + `b_only`) / `n_sets`"),
            Column("p_mcnemar", "exact McNemar test"))),
        Table("twin_dpd", "Per case × twin group: the DPD of the same personas beside that of the drawn agents.", (
            TWIN_CASE_DOC,
            Column(("n_sets", "n_complete"), "twin sets, and those whose every member decided validly"),
            Column(("paired_dpd", "paired_ci_low", "paired_ci_high"), "DPD over the same personas with its interval"),
            Column(("unpaired_dpd", "unpaired_ci_low", "unpaired_ci_high"), "DPD over the drawn agents"),
            Column("paired_to_unpaired", "their ratio: how much of the gap the attribute alone explains"))),
        Table("twin_accounting", "Per case × twin group: every twin's answer and check.", (
            TWIN_CASE_DOC,
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "the twins' decision statuses"),
            Column("twin_<status>", "twins per `twin_status` (`twin_ok`, `twin_unchanged`, `twin_failed_check` …)")))),
    build=build, inputs=INPUTS, needs=("decisions", "twins"), section=_twins, position=120,
    figures=FIGURES))
