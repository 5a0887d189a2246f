"""Anchoring to a human study (issue 34; docs/how-to/anchor-to-humans.md): ``anchoring.csv`` — the
agents and a small human survey of the same scenarios combined by prediction-powered inference — when
the run has a human study (``louder run --humans``). The table and its statistics are
``louder.analysis.stats.anchoring``'s; here its declaration, console table and report section with a figure
of the humans', agents' and PPI rates per attribute."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.anchoring import DPD_COLUMNS, anchoring

# the case selection with the respondents' paired agents, which every other input leaves out
INPUTS = (Input("humans", raw=True, doc="humans.parquet: the study's respondents"),
          Input("paired", "decisions.parquet", whole=("respondent",), doc="the decisions with the paired agents'"),
          Input("unlabelled", raw=True, doc="unlabelled.parquet: the profiles without a human answer (their weights)"))


def build(a) -> dict[str, pd.DataFrame]:
    """anchoring: the paired agents and the usual ones of the case selection against the respondents."""
    if a.paired is None:
        return {}
    t = anchoring(a.paired, a.humans, B=a.bootstrap, seed=a.seed, unlabelled=a.unlabelled)
    grounded = t[t["agents"] == "grounded"]
    if len(grounded) and grounded["rate_ppi"].isna().all():
        a.missing.append("anchoring: the grounded agents have no unlabelled set, so their rows carry counts and no "
                         "PPI estimate; add profiles without a human answer (--unlabelled FILE), drawn like the "
                         "respondents (docs/how-to/check-agents-against-humans.md)")
    return {"anchoring": t}


# --- the report section ------------------------------------------------------------------------------------

TITLE = "Anchoring to a human study (prediction-powered inference)"
# estimate → (label, colour)
SERIES = {"humans": ("humans only", P.BLACK), "agents": ("agents only", P.VERMILLION),
          "ppi": ("humans + agents (PPI)", P.BLUE)}


def anchoring_figure(t: pd.DataFrame):
    """One panel per case and kind of agent: per attribute, the humans-only, agents-only and PPI target
    rates as points with their 95 % intervals."""
    from louder.analysis.report.draw import case_panels, panels_legend, rate_panel  # matplotlib: drawn only

    rows = t[t["rate_humans"].notna()]
    if rows.empty:
        return None
    cases = list(rows.groupby(["model", "condition", "scenario", "group", "agents"], sort=False))
    fig, axes = case_panels(len(cases))
    for ax, (case, g) in zip(axes, cases):
        attrs = list(g["attribute"])
        for i, s in enumerate(SERIES):
            label, colour = SERIES[s]
            y = np.arange(len(attrs)) + (i - 1) * 0.22
            est, lo, hi = (g[f"{c}_{s}"].to_numpy(float) for c in ("rate", "ci_low", "ci_high"))
            err = np.clip([est - lo, hi - est], 0, None)  # (none drawn where there is no interval)
            ax.errorbar(est, y, xerr=np.nan_to_num(err), fmt="o", color=colour, capsize=3, ms=4, label=label)
        model, condition, scenario, group, agents = case
        rate_panel(ax, attrs, f"{model} · {condition} · {scenario} × {group} · {agents} agents")
    panels_legend(fig, axes)
    return fig


def report_section(a) -> str:
    """The section, when the run has a human study (``anchoring.csv``)."""
    t = a.tables.get("anchoring")
    if t is None:
        return ""
    if t.empty:
        return section(TITLE, note("The run has a human study, but none of its respondents is paired with an agent "
                                   "of a case (its scenarios and groups are not the run's cases as run)."))
    summary = []
    for _, r in t.drop_duplicates(["model", "condition", "scenario", "group", "agents"]).iterrows():
        if pd.isna(r["dpd_ppi"]):
            continue
        ratio = "–" if pd.isna(r["ratio"]) else (f"{r['ratio']:.2f} [{r['ratio_ci_low']:.2f}, "
                                                 f"{r['ratio_ci_high']:.2f}]")
        summary.append(f"<li>{html.escape(f'{r.model} · {r.condition} · {r.scenario} × {r.group}')}, "
                       f"{html.escape(str(r['agents']))} agents: DPD humans {r['dpd_humans']:.2f} "
                       f"[{r['dpd_ci_low_humans']:.2f}, {r['dpd_ci_high_humans']:.2f}], agents {r['dpd_agents']:.2f}, "
                       f"anchored (PPI) {r['dpd_ppi']:.2f} [{r['dpd_ci_low_ppi']:.2f}, {r['dpd_ci_high_ppi']:.2f}] — "
                       f"width {_pct(r['dpd_width_ratio'])} of the humans-only; magnitude ratio agents ÷ humans "
                       f"{html.escape(ratio)}</li>")
    shown = t.drop(columns=[c for c in DPD_COLUMNS])
    return section(
        TITLE,
        note("Each respondent of the human study got a paired agent of their attribute, asked like every other agent. "
             "<b>Humans only</b>: the respondents' (weighted) target rate with its Wilson interval. "
             "<b>Agents only</b>: "
             "the usual agents' rate — what the model says, not evidence about people. <b>PPI</b> "
             "(prediction-powered inference, Angelopoulos et al. 2023, with <code>ppi-python</code>): the agents' "
             "rate corrected by how far the paired agents missed their respondents; its interval is valid however "
             "wrong the agents are, and narrower than the humans' only as far as the agents predict the people "
             "(λ: the weight the agents get, 0 = none; <b>ess_gained</b>: the respondents the human-only interval "
             "would need in addition to be as narrow; <b>width_ratio</b>: PPI width ÷ humans-only width; "
             "<b>worth</b>: effective n ÷ n, the people each respondent counts for with the agents). "
             "<b>agents</b>: <i>attribute</i> — agents that know the respondent's attribute, the case's usual agents "
             "as the unlabelled set; <i>grounded</i> — agents whose persona was written from the respondent's "
             "profile, the agents of profiles without an answer as the unlabelled set "
             "(docs/how-to/check-agents-against-humans.md). <b>agreement</b>: the share of respondents whose agent "
             "decided as they did. paired_&lt;status&gt; accounts for every paired agent's answer; one without a "
             "valid answer counts at the agents' mean. DPD of the PPI rates: a joint bootstrap over respondents and "
             "agents; the magnitude ratio divides the agents' DPD by the humans' (docs/how-to/anchor-to-humans.md)."),
        f"<ul>{''.join(summary)}</ul>" if summary else "",
        a.figure("rates", t),
        table(shown, scroll=True))


# --- the console and the declaration ---------------------------------------------------------------------

def _pct(x) -> str:
    return "–" if pd.isna(x) else f"{x:.0%}"


def _gained(r) -> str:
    return "–" if pd.isna(r["ess_gained"]) else f"{round(r['ess_gained']) + 0.0:.0f}"  # never "-0"


CONSOLE = Console(
    "anchoring", "Anchoring to a human study: target rate [95 % CI] of the humans, the agents and both by "
                "prediction-powered inference; DPD of the PPI rates, magnitude ratio agents ÷ humans — "
                "docs/how-to/anchor-to-humans.md", (
        key("model"), key("condition"), key("scenario"), key("group"), key("agents"),
        Cell("attribute", "attribute", priority=1),
        Cell("n humans", "n_humans", number=True),
        Cell("humans", with_interval("rate_humans", "ci_low_humans", "ci_high_humans", 2), number=True, priority=1,
             name="rate_humans"),
        Cell("agents", with_interval("rate_agents", "ci_low_agents", "ci_high_agents", 2), number=True,
             name="rate_agents"),
        Cell("PPI", with_interval("rate_ppi", "ci_low_ppi", "ci_high_ppi", 2), number=True, priority=1,
             name="rate_ppi"),
        Cell("ess gained", _gained, number=True, priority=3, name="ess_gained"),
        Cell("width ÷ humans", lambda r: _pct(r["width_ratio"]), number=True, name="width_ratio"),
        Cell("worth", lambda r: number(r["worth"], 2), number=True, name="worth"),
        Cell("agreement", lambda r: number(r["agreement"], 2), number=True, priority=3, name="agreement"),
        Cell("DPD humans", with_interval("dpd_humans", "dpd_ci_low_humans", "dpd_ci_high_humans", 2), number=True,
             priority=3, name="dpd_humans"),
        Cell("DPD PPI", with_interval("dpd_ppi", "dpd_ci_low_ppi", "dpd_ci_high_ppi", 2), number=True, priority=1,
             name="dpd_ppi"),
        Cell("DPD width ÷ humans", lambda r: _pct(r["dpd_width_ratio"]), number=True, priority=3,
             name="dpd_width_ratio"),
        Cell("ratio agents ÷ humans", with_interval("ratio", "ratio_ci_low", "ratio_ci_high", 2), number=True,
             name="ratio")),
    position=42)


register(Measure(
    "anchoring", "the agents anchored to a small human study by prediction-powered inference: the humans', the agents' "
                "and the PPI rates, the anchored DPD and the magnitude ratio agents ÷ humans",
    tables=(
        Table("anchoring", "Runs with a human study ([Anchor to a human study](../how-to/anchor-to-humans.md)): one row "
                          "per case × attribute, the humans and the agents combined by prediction-powered inference "
                          "(`louder/analysis/stats/anchoring.py` has the formulas).", (
            Column(("model", "condition", "scenario", "group", "attribute"), "the case and attribute"),
            Column("agents", "which agents: `attribute` (the respondents' paired agents, which know the "
                             "attribute only; the case's usual agents are the unlabelled set) or `grounded` (agents "
                             "whose persona was written from the respondent's profile; the grounded agents of the "
                             "unlabelled profiles are the unlabelled set)"),
            Column(("n_humans", "n_agents"), "respondents (each with their paired agent) and unlabelled agents (the "
                                             "usual ones, or the unlabelled profiles' grounded ones) with a valid "
                                             "answer"),
            Column(("rate_humans", "ci_low_humans", "ci_high_humans"), "the respondents' (weighted) target rate and "
                                                                       "its Wilson interval at the Kish size"),
            Column(("rate_agents", "ci_low_agents", "ci_high_agents"), "the usual agents' target rate and its interval "
                                                                       "(agents only: what the model says)"),
            Column(("rate_ppi", "ci_low_ppi", "ci_high_ppi"), "the PPI++ rate and interval of `ppi-python`: valid "
                                                              "however wrong the agents are"),
            Column("lam", "λ, the weight PPI++ gives the agents (0: none, the interval is the humans'; 1: plain PPI)"),
            Column(("n_eff_ppi", "ess_gained"), "the effective sample size of the PPI interval, and how many "
                                                "respondents it adds to the humans' own"),
            Column("width_ratio", "the PPI interval's width ÷ the humans-only interval's (below 1: the agents "
                                  "narrow it)"),
            Column("worth", "the number of people the agents are worth per respondent: effective n ÷ n (Kish), "
                            "var(humans only) ÷ var(PPI)"),
            Column("agreement", "the share of respondents whose paired agent decided as they did (weighted; pairs "
                                "with a valid answer)"),
            Column(("paired_valid", "paired_invalid", "paired_refused", "paired_error"),
                   "the paired agents' answers by status (a respondent whose agent gave no valid answer counts with "
                   "the agents' mean rate as its prediction)"),
            Column(("unlabelled_valid", "unlabelled_invalid", "unlabelled_refused", "unlabelled_error"),
                   "the unlabelled agents' answers by status (only valid answers enter the estimate)"),
            Column(("dpd_humans", "dpd_agents"), "the case's DPD of the humans' and of the agents' rates"),
            Column(("dpd_ci_low_humans", "dpd_ci_high_humans"), "the humans-only DPD interval (the same bootstrap, "
                                                                "the humans' rates alone)"),
            Column(("dpd_ppi", "dpd_ci_low_ppi", "dpd_ci_high_ppi"), "the DPD of the PPI rates, with a joint bootstrap "
                                                                     "interval over respondents and agents"),
            Column(("dpd_width_ratio", "dpd_worth"), "the PPI DPD interval's width ÷ the humans-only one's, and "
                                                     "(humans-only ÷ PPI width)²: how many times the respondents a "
                                                     "humans-only DPD interval would need to be as narrow"),
            Column(("ratio", "ratio_ci_low", "ratio_ci_high"), "the magnitude ratio, agents' DPD ÷ humans' DPD, with "
                                                               "its interval (infinite above when the humans' DPD "
                                                               "interval reaches 0)")),),),
    build=build, inputs=INPUTS, needs=("humans",), console=(CONSOLE,), section=report_section, position=62,
    figures=(Figure("rates", lambda a, t: anchoring_figure(t), "Per case and attribute: the humans-only, agents-only "
                  "and prediction-powered target rates, each a point with its 95 % interval."),)))
