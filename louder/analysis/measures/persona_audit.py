"""The persona step under audit (issue 37, item 3): ``personas_audit.csv``, ``personas_audit_gaps.csv``
and ``personas_words.csv`` — what the written personas of each attribute carry before any decision
(length, sentiment, stereotype phrases, whether they restate the attribute, how varied they are), the
largest gap between attributes per case and measure, and each attribute's most distinctive words —
with the report section that stands beside the ablation. The statistics are
``louder.analysis.stats.persona_audit`` (the formulas there)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from louder.analysis.engine import select
from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import note, section, table
from louder.analysis.stats import persona_audit as PA
from louder.analysis.stats.keys import CASE_KEYS, by_population_group, truthy
from louder.analysis.stats.rationales import load_patterns
from louder.sections.simulation import WRITTEN

# every signal (keyed below, once the condition is read); a human study's paired agents left out
INPUTS = (Input("personas", whole=("signal",), doc="personas.parquet: every persona with its status"),)
PATTERNS = Option("patterns", Path, None, "stereotype phrase patterns of your own (the format of "
                  "louder/data/analysis/rationale_patterns.yaml; default: the paper's)", flag="--patterns")


def build(a) -> dict[str, pd.DataFrame]:
    # only personas the model wrote: under no_persona the attribute itself stands in, and auditing it would
    # read the attribute's spelling (its length, its words) as a finding about the model
    p = a.personas[a.personas["condition"].isin(WRITTEN)]
    if p.empty:
        conditions = ", ".join(sorted(set(a.personas["condition"].astype(str)))) or "none"
        a.missing.append(f"persona audit: nothing to audit — the model wrote no persona in this run (conditions: "
                         f"{conditions}; under no_persona the attribute stands in for the persona); run "
                         "`--condition contextualized` to audit what the model writes")
        return {}
    # a names-signal persona is its own condition, as in the case tables; a population run's personas are
    # read per group of the population (each agent's attribute in it), not per joint label
    p = by_population_group(select.keyed(p, "signal"))
    return PA.persona_audit(p, B=a.bootstrap, seed=a.seed,
                            patterns=load_patterns(a.options.patterns))


def _sig(r) -> str | None:
    return "bold red" if truthy(r["significant"]) else None


def report_section(a) -> str:
    gaps = a.tables.get("personas_audit_gaps")
    if gaps is None or gaps.empty:
        return ""
    audit, words = a.tables["personas_audit"], a.tables.get("personas_words")
    parts = [note("Before an agent decides, a model writes its persona. These tables read the persona texts per "
                  "attribute: <b>length</b> (words), <b>sentiment</b> (VADER's compound score, −1 to 1), "
                  "<b>stereotype</b> (the rationale analysis's phrase patterns matched), <b>restates</b> (share of "
                  "personas that name their own attribute) and <b>diversity</b> (mean pairwise TF-IDF cosine distance "
                  "of the attribute's texts: a flattened group reads low). Per case and measure, the gap between the "
                  "highest and lowest attribute with a bootstrap interval, a permutation p-value and Holm across the "
                  "run. Read it beside the ablation above: a gap the persona step writes (here) reaches the decision "
                  "through the contextualized persona; a DPD that stays without a persona (no_persona, "
                  "non_contextualized) is added at the decision step."),
             a.figure("gaps"), table(gaps, scroll=True), table(audit, scroll=True)]
    if words is not None and len(words):
        top = (words.sort_values("z", ascending=False, kind="stable").groupby([*CASE_KEYS, "attribute"])
               .head(8).groupby([*CASE_KEYS, "attribute"], sort=True))
        rows = [dict(zip([*CASE_KEYS, "attribute"], k),
                     words=", ".join(f"{w} ({z:.1f})" for w, z in zip(g["word"], g["z"]))) for k, g in top]
        parts += [note("Most distinctive words of each attribute's personas (log-odds with an informative Dirichlet "
                       "prior, as for the rationales; z in brackets)."), table(pd.DataFrame(rows), scroll=True)]
    return section("The persona step under audit", *parts)


UNITS = {"length": "words", "sentiment": "VADER compound, −1 to 1", "stereotype": "phrase patterns matched",
         "restates": "share that names its attribute", "diversity": "mean TF-IDF cosine distance"}


def _gaps_figure(a):
    from louder.analysis.report import draw as figures
    from louder.analysis.report import palette as P

    gaps = a.tables["personas_audit_gaps"]
    panels = [(f"{m} ({UNITS.get(m, '')})", g) for m, g in gaps.groupby("measure", sort=False)]
    return figures.forest(panels, [dict(est="gap", lo="ci_low", hi="ci_high", label="gap between attributes "
                                        "(vermillion: Holm p < 0.05)",
                                        color=lambda r: P.SIGNIFICANT if truthy(r["significant"]) else P.GREY)],
                          label=lambda r: f"{r['scenario']} × {r['group']} · {r['condition']}: {r['lowest']} → "
                                          f"{r['highest']}",
                          xlabel="highest − lowest attribute (95 % interval), in each panel's unit", ref=0.0,
                          title="The personas: the largest gap between attributes, per measure")


CONSOLE = Console("personas_audit_gaps", "Personas under audit: the largest gap between attributes per case and measure "
                                   "(significant = p_holm < 0.05)", (
    *map(key, CASE_KEYS),
    Cell("measure", "measure", priority=1),
    Cell("gap [95 % CI]", with_interval("gap", "ci_low", "ci_high"), number=True, priority=1, name="gap"),
    Cell("p_holm", lambda r: number(r["p_holm"], 4), number=True, priority=1),
    Cell("sig", lambda r: "yes" if _sig(r) else "no", priority=1, style=_sig, name="significant"),
    Cell("lowest → highest", lambda r: "" if pd.isna(r["lowest"]) else f"{r['lowest']} → {r['highest']}",
         name="lowest")),
    position=75)

CASE_DOC = Column(("model", "condition", "scenario", "group"), "the case")

register(Measure(
    "persona_audit", "the persona step under audit: length, sentiment, stereotype phrases, restated attribute and "
                     "diversity of each attribute's personas, and the gaps between attributes",
    tables=(
        Table("personas_audit", "One row per case × attribute × measure: what the attribute's valid personas carry. "
                                "Formulas: `louder/analysis/stats/persona_audit.py`.", (
            CASE_DOC,
            Column("attribute", "the attribute the personas were written for"),
            Column("measure", "`length` (words), `sentiment` (VADER compound, −1 to 1), `stereotype` (phrase patterns "
                              "of the rationale analysis matched), `restates` (names its own attribute, 0/1) or "
                              "`diversity` (mean pairwise TF-IDF cosine distance of the texts; a case of more than "
                              "500 texts: of a seeded subsample of 500, every attribute in proportion)"),
            Column("value", "the attribute's mean (diversity: the mean distance)"),
            Column(("ci_low", "ci_high"), "95 % bootstrap interval over the attribute's texts (contains `value`)"))),
        Table("personas_audit_gaps", "One row per case × measure: the largest gap between the case's attributes.", (
            CASE_DOC,
            Column("measure", "as in `personas_audit.csv`"),
            Column("gap", "highest − lowest attribute's value"),
            Column(("ci_low", "ci_high"), "its 95 % interval (simultaneous bootstrap-t band of the attributes' "
                                          "differences; contains `gap`)"),
            Column("p_value", "permutation test of the attribute labels over the case's texts"),
            Column(("p_holm", "significant"), "`p_value` Holm-adjusted across every gap of the run, and `p_holm` < "
                                              "0.05"),
            Column(("lowest", "highest"), "the attributes with the lowest and highest value"))),
        Table("personas_words", "The most distinctive words of each attribute's personas (per case).", (
            CASE_DOC,
            Column(("attribute", "word", "count"), "the attribute, a word and its count in its personas"),
            Column(("delta", "z"), "log-odds ratio with an informative Dirichlet prior against the case's other "
                                   "attributes, and its z-score (|z| > 1.96 notable)")))),
    build=build, inputs=INPUTS, options=(PATTERNS,), needs=("personas",), console=(CONSOLE,), section=report_section,
    position=81,
    figures=(Figure("gaps", _gaps_figure, "Forest plots, one per measure of the personas (length, sentiment, stereotype "
                  "phrases, restated attribute, diversity): per case, the gap between the highest and the lowest "
                  "attribute with its 95 % interval; significant gaps in vermillion."),)))
