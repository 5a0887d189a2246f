"""Fidelity to a human study (issue 44; docs/how-to/check-agents-against-humans.md): ``fidelity.csv`` —
how close each respondent's agent (attribute-only, and grounded in the profile when the run has
``--ground``) decides to the respondent, how far the agents' decisions are from the people's, and
whether the people's gap between groups is kept (a verdict per case) — when the run has a human study
(``louder run --humans``). The statistics are ``louder.analysis.stats.fidelity``'s; here the declaration, the
console table and the report section with a figure of the people's and the agents' rates."""

from __future__ import annotations

import html

import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.fidelity import ALL, fidelity

INPUTS = (Input("humans", raw=True, doc="humans.parquet: the study's respondents (decisions, weights, retests)"),
          Input("paired", "decisions.parquet", whole=("respondent",), doc="the decisions with the paired agents'"))


def _margin(v: float) -> str | None:
    return None if 0 < v < 1 else f"{v} is not a margin between 0 and 1 (a difference of target rates, e.g. 0.1)"


MARGIN = Option("margin", float, 0.1, "δ: the agents keep the people's gap (`faithful`) when every gap difference "
                "between two attributes lies within ±δ with its whole interval (target-rate units)", check=_margin)


def build(a) -> dict[str, pd.DataFrame]:
    """fidelity: every respondent's paired agents against the respondent."""
    if a.paired is None or a.humans is None:
        return {}
    return {"fidelity": fidelity(a.paired, a.humans, a.groups, B=a.bootstrap, seed=a.seed,
                                 margin=a.options.margin)}


# --- the report section ------------------------------------------------------------------------------------

TITLE = "Fidelity to a human study"


def fidelity_figure(a, t: pd.DataFrame):
    """One panel per model: per case and kind of agent, the people's gap (DPD) and the agents' gap, each with
    its 95 % interval, the verdict in the row's label; a gap kept lies on the people's (within ±margin)."""
    from louder.analysis.report.draw import forest  # matplotlib: imported when a figure is drawn

    rows = t[(t["subgroup"] == ALL) & t["gap_humans"].notna()]
    if rows.empty:
        return None
    colour = {"attribute": P.VERMILLION, "grounded": P.GREEN}
    panels = [(str(model), g) for model, g in rows.groupby("model", sort=False)]
    return forest(panels, [
        dict(est="gap_humans", lo="gap_humans_ci_low", hi="gap_humans_ci_high", color=P.BLACK, marker="s",
             label="the people's gap"),
        dict(est="gap_agents", lo="gap_agents_ci_low", hi="gap_agents_ci_high",
             color=lambda r: colour.get(r["agents"], P.SKY), label="the agents' gap (vermillion: attribute-only; "
                                                                      "green: grounded)")],
        lambda r: f"{r['condition']} · {r['scenario']} × {r['group']} · {r['agents']}: {r['verdict']}",
        xlabel="gap: largest − smallest target rate across the attributes (DPD), 95 % interval",
        ref=None, xlim=(0, 1))


def report_section(a) -> str:
    """The section, when the run has a human study (``fidelity.csv``)."""
    t = a.tables.get("fidelity")
    cases = None if t is None else t[t["subgroup"] == ALL]
    if cases is None or cases.empty:
        return "" if t is None else section(TITLE, note("No respondent of the study has an agent in the run's cases."))
    summary = []
    for _, r in cases.iterrows():
        where = html.escape(f"{r.model} · {r.condition} · {r.scenario} × {r.group}, {r.agents} agents")
        normalised = "" if pd.isna(r["normalised"]) else f" ({r['normalised']:.2f} of the people's own retest)"
        summary.append(f"<li>{where}: <b>{html.escape(str(r['verdict']))}</b> — people's gap {r['gap_humans']:.2f}, "
                       f"agents' {r['gap_agents']:.2f}, difference {r['gap_difference']:+.2f} "
                       f"[{r['gap_difference_ci_low']:+.2f}, {r['gap_difference_ci_high']:+.2f}]; agreement "
                       f"{r['agreement']:.2f} against {r['agreement_chance']:.2f} by chance{normalised}; distance "
                       f"{r['distance']:.2f}</li>" if pd.notna(r["gap_humans"]) else
                       f"<li>{where}: {html.escape(str(r['verdict']))} (fewer than two attributes with two "
                       "respondents)</li>")
    return section(
        TITLE,
        note("How close are the agents to the people they stand for? Each respondent's <b>attribute-only</b> agent "
             "knows the respondent's attribute; a <b>grounded</b> agent (<code>--ground</code>) had its persona "
             "written from the respondent's profile. Per subgroup: <b>agreement</b>, the share of respondents whose "
             "agent decided as they did (<b>agreement_chance</b>: what agents with the same rates but no knowledge "
             "of the person would reach), <b>normalised</b> by the people's own <b>retest</b> agreement where the "
             "study asked again (Park et al. 2024), and the <b>distance</b> between the agents' and the people's "
             "decisions (total variation). Per case: the people's and the agents' gap (DPD), the agents' gap minus "
             "the people's on the people's widest pair with its interval, the <b>spread index</b> agents ÷ people, "
             f"and the verdict: <b>faithful</b> (every gap kept within ±{a.options.margin:g}), <b>flattened</b>, "
             "<b>exaggerated</b>, <b>reversed</b> or <b>underpowered</b> (the intervals cannot tell). A paired "
             "bootstrap over respondents within attribute; the formulas are in "
             "<code>louder/analysis/stats/fidelity.py</code> (docs/how-to/check-agents-against-humans.md)."),
        f"<ul>{''.join(summary)}</ul>" if summary else "",
        a.figure("gaps", t),
        table(t, scroll=True))


def findings(a) -> list[Finding]:
    """Per model and kind of agent: how many cases keep the people's gap, and how the others lose it."""
    rows = _rows(a)
    if rows is None or rows.empty:
        return []
    out = []
    for (model, agents), g in rows.groupby(["model", "agents"], sort=False):
        counts = g["verdict"].value_counts()
        said = ", ".join(f"{n} {v}" for v, n in counts.items())
        out.append(Finding(f"Fidelity to the human study ({agents} agents, margin ±{a.options.margin:g}): "
                           f"{int(counts.get('faithful', 0))} of {len(g)} cases keep the people's gap ({said}).",
                           TITLE, str(model)))
    return out


def leads_to(a) -> list[str]:
    """Attribute-only agents that lose the people's gap, in a run without grounded agents: ground them."""
    t = a.tables.get("fidelity")
    if t is None or t.empty or (t["agents"] == "grounded").any():
        return []
    off = t[(t["subgroup"] == ALL) & t["verdict"].isin(["flattened", "exaggerated", "reversed"])]
    if off.empty:
        return []
    return [f"fidelity.csv: the attribute-only agents' gap is {', '.join(sorted(set(off['verdict'])))}; if the study "
            "has profile columns, `louder run --humans FILE --ground COL,COL` gives each respondent an agent "
            "grounded in their profile (docs/how-to/check-agents-against-humans.md)"]


# --- the console and the declaration ---------------------------------------------------------------------

def _flag(r) -> str | None:
    return {"faithful": "green", "underpowered": None}.get(r["verdict"], "bold red")


def _rows(a) -> pd.DataFrame | None:
    t = a.tables.get("fidelity")
    return None if t is None else t[t["subgroup"] == ALL]


CONSOLE = Console(
    "fidelity", lambda a: f"Fidelity to a human study: each kind of agent against the respondents it stands for — "
                          f"agreement, distance, the people's and the agents' gap; faithful = every gap kept within "
                          f"±{a.options.margin:g} (docs/how-to/check-agents-against-humans.md)", (
        key("model"), key("condition"), key("scenario"), key("group"), Cell("agents", "agents", priority=1),
        Cell("pairs", "n_pairs", number=True),
        Cell("agreement", with_interval("agreement", "agreement_ci_low", "agreement_ci_high", 2), number=True,
             priority=1, name="agreement"),
        Cell("chance", lambda r: number(r["agreement_chance"], 2), number=True, name="agreement_chance"),
        Cell("÷ retest", with_interval("normalised", "normalised_ci_low", "normalised_ci_high", 2), number=True,
             name="normalised"),
        Cell("distance", with_interval("distance", "distance_ci_low", "distance_ci_high", 2), number=True,
             name="distance"),
        Cell("gap people", lambda r: number(r["gap_humans"], 2), number=True, name="gap_humans"),
        Cell("gap agents", lambda r: number(r["gap_agents"], 2), number=True, name="gap_agents"),
        Cell("difference", with_interval("gap_difference", "gap_difference_ci_low", "gap_difference_ci_high", 2),
             number=True, priority=1, name="gap_difference"),
        Cell("spread", lambda r: number(r["spread_index"], 2), number=True, name="spread_index"),
        Cell("verdict", "verdict", priority=1, style=_flag)),
    position=43, source=_rows)


register(Measure(
    "fidelity", "the agents against the respondents they stand for: agreement (÷ the people's retest), distance "
                "between decisions, the people's and the agents' gap, and a verdict (faithful, flattened, "
                "exaggerated, reversed, underpowered), attribute-only and grounded agents side by side",
    tables=(
        Table("fidelity", "Runs with a human study ([Check your agents against a human study]"
                          "(../how-to/check-agents-against-humans.md)): one row per case × kind of agent × subgroup "
                          "(each attribute, and `all`); the gap columns and the verdict are the case's, repeated on "
                          "its rows (`louder/analysis/stats/fidelity.py` has the formulas).", (
            Column(("model", "condition", "scenario", "group"), "the case"),
            Column("agents", "`attribute` (each respondent's agent that knows the attribute only) or `grounded` (the "
                             "agent whose persona was written from the respondent's profile, `--ground`)"),
            Column("subgroup", "an attribute of the group, or `all` (every respondent of the case)"),
            Column(("n_pairs", "n_no_answer"), "respondents whose agent gave a valid answer (the pairs scored), and "
                                               "those whose agent gave none (left out; counted here)"),
            Column(("rate_humans", "rate_agents"), "the respondents' and their agents' (weighted) target rates"),
            Column(("agreement", "agreement_ci_low", "agreement_ci_high"), "the share of respondents whose agent "
                                                                          "decided as they did, with its Wilson "
                                                                          "interval at the Kish size"),
            Column("agreement_chance", "the agreement of agents with the same decision shares that know nothing of "
                                       "the person (Σ_c p_people(c)·p_agents(c))"),
            Column(("retest", "n_retest"), "the people's agreement with their own second answer (`retest` column), "
                                           "and how many were asked again (empty without a retest column)"),
            Column(("normalised", "normalised_ci_low", "normalised_ci_high"), "agreement ÷ retest (Park et al. "
                                                                              "2024: 1 = as close as people are to "
                                                                              "themselves), with a bootstrap interval"),
            Column(("distance", "distance_ci_low", "distance_ci_high"), "total variation distance between the "
                                                                        "agents' and the people's decision "
                                                                        "distributions, with a projected "
                                                                        "simultaneous-band interval"),
            Column(("gap_humans", "gap_humans_ci_low", "gap_humans_ci_high"), "the people's gap: the DPD of the "
                                                                              "respondents' target rates, with its "
                                                                              "interval"),
            Column(("gap_agents", "gap_agents_ci_low", "gap_agents_ci_high"), "the agents' gap: the DPD of their "
                                                                              "paired agents' target rates"),
            Column(("gap_difference", "gap_difference_ci_low", "gap_difference_ci_high"),
                   "on the people's widest pair of attributes, the agents' gap minus the people's (for two "
                   "attributes the difference of differences), oriented so the people's gap is positive: below 0 "
                   "the agents keep less of it, above 0 more"),
            Column(("spread_index", "spread_ci_low", "spread_ci_high"), "the agents' gap ÷ the people's (1: the same "
                                                                        "spread; infinite above when the people's "
                                                                        "gap interval reaches 0)"),
            Column("verdict", "`faithful` (every gap difference within ±margin, `fidelity.margin`), `reversed`, "
                              "`flattened`, `exaggerated` or `underpowered` (the intervals cannot tell)"))),),
    build=build, inputs=INPUTS, options=(MARGIN,), needs=("humans",), console=(CONSOLE,), section=report_section,
    position=63, leads_to=leads_to, findings=findings,
    figures=(Figure("gaps", fidelity_figure, "Per case and kind of agent: the people's gap between attributes and the "
                  "agents' gap (DPD), each with its 95 % interval, and the fidelity verdict.",
                  "no case has two attributes with two respondents each"),)))
