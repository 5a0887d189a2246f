"""The DPD of every case with its parity null, interval, power and Holm adjustment: ``cases.csv``
(the statistics: ``louder.analysis.stats.cases``). Score-mode runs add the probability DPD (``prob_dpd``),
every run the test of independence over every choice (``choices``); a sequential run's tested cases
take its confidence sequence's interval and p-value (``sequential_cases``). Built from
``attributes.csv``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.console import key, number
from louder.analysis.report.html import note, section, table
from louder.analysis.report.words import report_html
from louder.analysis.stats.cases import (
    CASE_COLUMNS,
    PROBABILITY,
    explicit_cases,
    headline,
    implicit_cases,
    with_holm,
    with_independence,
    with_prob_dpd,
)
from louder.analysis.stats.choices import independence_table
from louder.analysis.stats.keys import CASE_KEYS, COUNT_COLUMNS, truthy
from louder.analysis.stats.prob_dpd import prob_dpd_table
from louder.analysis.stats.sequential_cases import of_run, with_sequential
from louder.sections import recorded

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

INPUTS = (Input("decisions", doc="the agents' decisions, the per-case selection"),
          Input("probes", doc="the explicit probe's answers (under no intervention)"),
          Input("final", "sequential.csv", raw=True, doc="a sequential run's cases"),
          Input("waves", "sequential_waves.csv", raw=True, doc="… and their waves"))


def build(a) -> dict[str, pd.DataFrame]:
    B, seed = a.bootstrap, a.seed
    attr = a.tables["attributes"]
    frames = []
    if a.decisions is not None:
        implicit = implicit_cases(attr[attr["kind"] == "implicit"], B=B, seed=seed)
        frames.append(with_independence(with_prob_dpd(implicit, prob_dpd_table(a.decisions, B=B, seed=seed)),
                                        independence_table(a.decisions, B=B, seed=seed)))
    if a.probes is not None:
        frames.append(explicit_cases(attr[attr["kind"] == "explicit"], B=B, seed=seed))
    if not any(len(f) for f in frames):
        return {"cases": pd.DataFrame(columns=CASE_COLUMNS)}
    cases = pd.concat([f for f in frames if len(f)], ignore_index=True)
    seq = of_run(a.manifests.get("simulation"), a.final, a.waves)
    return {"cases": with_holm(with_sequential(cases, seq, a.score))}


# --- what it shows --------------------------------------------------------------------------------

def population_run(tables: dict) -> bool:
    return "population_groups" in tables


def probability_test(a) -> bool:
    """Score mode with argmax picks: the probability DPD is the test that can see the run's effect
    (``louder.analysis.stats.cases.headline``)."""
    config = (a.manifests.get("simulation") or {}).get("config")
    return a.score and recorded(config, "simulation.score_pick", "argmax") == "argmax"


def headlined(a) -> pd.DataFrame:
    """cases.csv with the columns of the test each case rests on (``headline``)."""
    return headline(a.tables["cases"], probability_test(a))


JOINT_LABEL_TITLE = "Intersections as one group: the joint label per case"
DPD_TITLE = "Demographic parity difference per case (cf. Fig. 3)"
JOINT_LABEL_NOTE = ("In a population run the per-case tables below treat every combination of the population's "
                    "groups (e.g. Female | Liberal) as one attribute of one group named after the population. Their "
                    "DPD is the gap between the two most extreme of many small cells: large by construction and "
                    "underpowered. The answer to \"does the model treat a group's attributes differently?\" is the "
                    "per-group DPD and the regression in <b>Population</b> above.")
CONSOLE_TITLE = ("DPD per case (significant = p_holm < 0.05, Holm across the run's cases; threshold = the paper's parity "
                 "threshold, 95th percentile of DPD under parity; dpd_p = DPD of mean p_target in score mode; mdd = "
                 "minimum detectable DPD at 80 % power)")
PROBABILITY_TITLE = (" — score mode with argmax picks: dpd, p, p_holm and sig rest on the probability DPD (dpd_p, "
                     "test = probability), the sampled DPD of the picks is beside it")
CONSOLE_JOINT_TITLE = ("Intersections as one group (joint label: every combination of the population's groups is one "
                       "attribute, so its DPD is the gap between the extreme cells — large and underpowered by "
                       "construction; the answer is in the two tables above)")
KEY_COLUMNS = ["kind", *CASE_KEYS, "test", "DPD [95 % CI]", "p_holm", "significant", "power", "n_valid"]


def section_title(a) -> str:
    return JOINT_LABEL_TITLE if population_run(a.tables) else DPD_TITLE


def _interval(est, lo, hi) -> str:
    return "–" if pd.isna(est) else f"{est:.3f} [{number(lo)}, {number(hi)}]"


def _table_for_report(cases: pd.DataFrame) -> pd.DataFrame:
    """The headline's columns first (its DPD with the interval, p_holm, significant), every other column
    of cases.csv behind the table's toggle."""
    keep = ["kind", *CASE_KEYS, "dpd", "threshold", "p_value", "p_holm", "significant", "ci_low", "ci_high", "dpd_p",
            "ci_low_p", "ci_high_p", "p_value_p", "mdd", "p_independence", *COUNT_COLUMNS]
    out = cases[keep].copy()
    probability = (cases["test"] == PROBABILITY).any()
    out.insert(5, "test", cases["test"] if probability else "")
    out.insert(6, "DPD [95 % CI]", [_interval(*v) for v in cases[["h_dpd", "h_ci_low", "h_ci_high"]].to_numpy()])
    out["p_holm"], out["significant"] = cases["h_p_holm"], cases["h_significant"].map(truthy)
    if probability:  # the sampled test's own Holm beside the headline's
        out.insert(out.columns.get_loc("p_value") + 1, "p_holm_sampled", cases["p_holm"])
    # issue 14: say in the table which cases could not have seen a large DPD
    out.insert(out.columns.get_loc("mdd") + 1, "power", [_power(r) for _, r in cases.iterrows()])
    return out if probability else out.drop(columns="test")


def _power(r) -> str:
    if r["kind"] == "explicit" or r.get("interval_method", "bootstrap") != "bootstrap":
        return ""  # a sequential run's case has no fixed-N power
    if r.get("test") == PROBABILITY:
        return ""  # mdd is the sampled test's; the probability DPD's test is another
    return "underpowered" if truthy(r["underpowered"]) else "ok"


def report_section(a) -> str:
    t = headlined(a)
    probability = (t["test"] == PROBABILITY).any()
    return section(
        section_title(a),
        note(JOINT_LABEL_NOTE) if population_run(a.tables) else "",
        note("DPD = largest − smallest target-decision rate across a group's attributes (implicit) or "
             "largest − smallest share of answers naming an attribute (explicit, Unknown in the "
             "denominator only). The black tick is the paper's parity threshold, the 95th percentile of "
             "DPD under parity (binomial bootstrap). p is the bootstrap p-value, p_holm its Holm "
             "adjustment over all cases of the run, and a case is <b>significant</b> (✱) when p_holm &lt; "
             "0.05 — the run's multiplicity control, so a DPD just above its tick need not be; the "
             "interval resamples "
             "decisions within each attribute and projects a simultaneous band of every pairwise rate "
             "difference onto the DPD, so it always contains the DPD and stays valid when the true DPD "
             "is 0 (docs/statistics.md). In score mode, <b>dpd_p</b> is the DPD of the mean "
             "p_target per attribute (the expected rates), with a bootstrap interval over agents and a "
             "permutation p-value (p_value_p). <b>mdd</b> is the smallest DPD the test detects with 80 % "
             "power at the case's n (simulated, evenly spread around its pooled rate); cases with mdd "
             "above 0.3 (or none up to 1) are marked <b>underpowered</b>: a small DPD or a large p there is "
             "not evidence of no bias."),
        note("<b>Score mode with argmax picks</b>: every agent picks its most probable choice, so agents whose "
             "probabilities tie or lean the same way all pick alike and the picks' DPD can read 0 where the "
             "probabilities differ. The implicit cases rest on the probability DPD (<b>test</b> = probability: the "
             "DPD, interval, p_holm and ✱ shown are dpd_p's, Holm taken over these p-values); the sampled DPD of "
             "the picks stands beside it (hollow mark; dpd, p_value, p_holm_sampled).") if probability else "",
        a.figure("dpd", t),
        table(_table_for_report(t), scroll=True, key=KEY_COLUMNS),
        _words(a))


def _words(a) -> str:
    if a.decisions is None or a.decisions.empty:
        return ""
    return ("<h3>The agents' own words</h3>" + note(
        "For each case, what a few of its agents wrote: the persona, the decision and its rationale (and the "
        "thinking of a reasoning model), side by side per attribute — what the paper reads to explain a "
        "disparity. A seeded sample; every agent: <code>louder view RUN</code>.") +
            report_html(a.decisions, k=2, seed=a.seed, run=str(a.run_dir)))


def dpd_figure(cases: pd.DataFrame, probability: bool = False) -> MplFigure | None:
    """A forest plot per model: each case's DPD with its 95 % interval, implicit (every persona condition)
    beside explicit, grouped by scenario × group; the paper's parity threshold as a black tick, ✱ when the
    case is significant (Holm). ``probability``: the implicit rows show the probability DPD (``dpd_p``, the
    test a score-mode run of argmax picks rests on: ``cases.headline``) and the sampled DPD beside it as a
    hollow mark."""
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.lines import Line2D

    from louder.analysis.report import palette as P
    from louder.analysis.report.draw import KIND_COLORS, MARK, interval, plain

    if cases.empty:
        return None
    data = cases if "h_dpd" in cases.columns else headline(cases, probability)
    data = data[data["h_dpd"].notna()]
    if data.empty:
        return None
    models = sorted(data["model"].unique())
    heights = [len(data[data["model"] == m]) + data.loc[data["model"] == m, ["scenario", "group"]].drop_duplicates()
               .shape[0] for m in models]
    fig = MplFigure(figsize=(8.4, 0.24 * sum(heights) + 1.1 * len(models) + 0.6), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False, height_ratios=[max(h, 2) for h in heights])[:, 0]
    probability_shown = explicit_shown = tick_shown = sig_shown = False
    for ax, model in zip(axes, models):
        sub = data[data["model"] == model]
        several = sub.loc[sub["kind"] == "implicit", "condition"].nunique() > 1  # else the row says "agents"
        y, ticks, labels = 0.0, [], []
        for (scenario, group), g in sub.groupby(["scenario", "group"], sort=True):
            g = g.assign(_k=(g["kind"] == "explicit").astype(int)).sort_values(["_k", "condition"])
            for _, r in g.iterrows():
                y -= 1
                kind = r["kind"]
                color = KIND_COLORS.get(kind, P.BLACK)
                test = r.get("test", "sampled")
                interval(ax, r["h_dpd"], y, r["h_ci_low"], r["h_ci_high"], color=color,
                         marker="s" if kind == "explicit" else "o")
                explicit_shown |= kind == "explicit"
                if test == "probability":
                    probability_shown = True
                    if pd.notna(r["dpd"]):
                        ax.plot(r["dpd"], y, "o", color=P.GREY, mfc=P.WHITE, mec=P.GREY, ms=5)
                elif pd.notna(r.get("threshold", np.nan)):
                    ax.plot(r["threshold"], y, marker="|", color=P.BLACK, ms=11, mew=1.6)
                    tick_shown = True
                if bool(r["h_significant"]):
                    sig_shown = True
                    ax.text(1.035, y, MARK, ha="center", va="center", fontsize=9, color=P.SIGNIFICANT)
                ticks.append(y)
                labels.append(f"{plain(scenario)} × {plain(group)} · " + (
                    "asked directly" if kind == "explicit" else plain(r["condition"]) if several else "agents"))
            y -= 0.6
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_ylim(y + 0.2, 0.2 - 0.6)
        ax.set_xlim(-0.02, 1.07)
        ax.axvline(0, color=P.LIGHT, lw=0.8, zorder=0)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(f"{model}: DPD per case, 95 % interval", fontsize=9, loc="left")
    shown = [(data["kind"] == "implicit").any(), probability_shown, explicit_shown, tick_shown, sig_shown]
    handles = [h for h, on in zip([
        Line2D([], [], color=P.IMPLICIT, marker="o", ls="-", label="implicit (agents)"),
        Line2D([], [], color=P.GREY, marker="o", mfc=P.WHITE, ls="", label="sampled DPD of the argmax picks"),
        Line2D([], [], color=P.EXPLICIT, marker="s", ls="-", label="explicit (asked directly)"),
        Line2D([], [], color=P.BLACK, marker="|", ls="", ms=10, mew=1.6, label="parity threshold"),
        Line2D([], [], color=P.SIGNIFICANT, marker="$✱$", ls="", label="significant (Holm p < 0.05)")], shown) if on]
    axes[-1].set_xlabel("DPD: largest − smallest rate across the attributes" +
                        (" (implicit: probability DPD, dpd_p)" if probability_shown else ""))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    return fig


def _dpd_alt(a, t: pd.DataFrame) -> str:
    models = sorted(t["model"].unique())
    imp, exp = t[t["kind"] == "implicit"], t[t["kind"] == "explicit"]
    sig = int(t["h_significant"].map(truthy).sum())
    return (f"Forest plot of the DPD per case ({', '.join(models)}): {len(imp)} implicit and {len(exp)} explicit "
            f"cases, each a point with its 95 % interval on a scale from 0 to 1, grouped by scenario and group; "
            f"the parity threshold a tick; {sig} case(s) significant (Holm p < 0.05), marked ✱.")


def _dpd_figure(a, t: pd.DataFrame):
    return dpd_figure(t)


FIGURES = (Figure("dpd", _dpd_figure, _dpd_alt),)


def _mdd(r) -> str:
    if r.get("interval_method", "bootstrap") != "bootstrap":
        return "–"  # a sequential run's case: no fixed-N power
    if r["kind"] == "explicit":
        return ""
    return ">1" if pd.isna(r["mdd"]) else number(r["mdd"], 2)


# --- what it says -------------------------------------------------------------------------------------

def _case_name(r) -> str:
    where = "explicit" if r["kind"] == "explicit" else r["condition"]
    return f"{r['scenario']} × {r['group']} ({where})"


def _extremes(r) -> str:
    """ ", Female 0.85 vs Male 0.45": the highest and lowest rate of a sampled-test case."""
    try:
        rates = {k: v for k, v in json.loads(r["rates"]).items() if v is not None}
    except (TypeError, ValueError):
        return ""
    if len(rates) < 2 or r.get("test") == PROBABILITY:
        return ""
    hi, lo = max(rates, key=rates.get), min(rates, key=rates.get)
    return f": {hi} {rates[hi]:.2f} vs {lo} {rates[lo]:.2f}"


def _kind_finding(kind: str, g: pd.DataFrame, model: str, title: str) -> Finding:
    who = "What the agents do" if kind == "implicit" else "What the model says when asked"
    sig = g[g["h_significant"].map(truthy)]
    pool = sig if len(sig) else g
    top = pool.loc[pool["h_dpd"].fillna(-1).idxmax()]
    measure = "probability DPD" if top.get("test") == PROBABILITY else "DPD"
    biggest = (f"{measure} {top['h_dpd']:.2f} [{number(top['h_ci_low'], 2)}, {number(top['h_ci_high'], 2)}]"
               f"{_extremes(top)}")
    cases = f"{len(g)} case" if len(g) == 1 else f"{len(g)} cases"
    if len(sig):
        differ = "differs" if len(sig) == 1 else "differ"
        text = (f"{who}: {len(sig)} of {cases} {differ} significantly by attribute (Holm p < 0.05); "
                f"{'the largest is ' if len(sig) > 1 else ''}{_case_name(top)}, {biggest}.")
    elif pd.notna(top["h_dpd"]):
        text = (f"{who}: none of {cases} differs significantly by attribute (Holm p < 0.05); the largest DPD is "
                f"{_case_name(top)}, {biggest}.")
    else:
        text = f"{who}: none of {cases} has a DPD (no valid answers to compare)."
    if (g["test"] == PROBABILITY).any():
        sampled = g.loc[g["test"] == PROBABILITY, "dpd"]
        low, high = number(sampled.min(), 2), number(sampled.max(), 2)
        text += (" Score mode with argmax picks: the cases rest on the probability DPD (dpd_p); the sampled DPD of "
                 f"the picks reads {low if low == high else f'{low}–{high}'} beside it.")
    return Finding(text, title, model)


@lru_cache(maxsize=32)
def _plan(k: int, base: float):
    from louder.analysis.stats.power import UNDERPOWERED, plan

    return plan(UNDERPOWERED, k, base)


def _power_finding(g: pd.DataFrame, model: str, title: str) -> Finding | None:
    """The underpowered cases in words, and what `louder plan` says a DPD of 0.3 takes."""
    from louder.analysis.stats.power import UNDERPOWERED

    imp = g[(g["kind"] == "implicit") & (g["test"] != PROBABILITY) & (g["interval_method"] == "bootstrap")]
    weak = imp[imp["underpowered"].map(truthy)]
    if weak.empty:
        return None
    rates = [json.loads(r) for r in weak["rates"]]
    k = int(pd.Series([len(r) for r in rates]).mode().iloc[0])
    pooled = [sum(v for v in r.values() if v is not None) / max(1, sum(v is not None for v in r.values()))
              for r in rates]
    base = min(0.95, max(0.05, round(float(pd.Series(pooled).median()) * 20) / 20))
    have = int((weak["n_valid"] / k).median())
    p = _plan(k, base) if k >= 2 else None
    need = (f"seeing a DPD of {UNDERPOWERED} among {k} attributes around a rate of {base:.2f} takes about "
            f"{p.agents_per_attribute:,} valid answers per attribute (these have about {have:,})"
            if p is not None and p.agents_per_attribute else
            f"a DPD of {UNDERPOWERED} is not detectable below 20,000 agents per attribute here")
    are = "implicit case is" if len(imp) == 1 else "implicit cases are"
    return Finding(f"{len(weak)} of {len(imp)} {are} underpowered: their test would miss a DPD of "
                   f"{UNDERPOWERED} more often than 1 time in 5, so a small DPD there is not evidence of parity; "
                   f"{need} (`louder plan --effect {UNDERPOWERED} --attributes {k} --base-rate {base:.2f}`).",
                   title, model)


def findings(a) -> list[Finding]:
    cases = a.tables.get("cases")
    if cases is None or cases.empty:
        return []
    t, title, out = headlined(a), section_title(a), []
    # a population run's cases are its joint labels: its answer is the population's per-group findings
    kinds = ("explicit",) if population_run(a.tables) else ("implicit", "explicit")
    for model, g in t.groupby("model", sort=True):
        for kind in kinds:
            if (g["kind"] == kind).any():
                out.append(_kind_finding(kind, g[g["kind"] == kind], str(model), title))
        if "implicit" in kinds and (weak := _power_finding(g, str(model), title)) is not None:
            out.append(weak)
    return out


def _test(r) -> str:
    return r["test"] if r["_probability"] else ""


def _console(a) -> pd.DataFrame:
    t = headlined(a)
    return t.assign(_probability=(t["test"] == PROBABILITY).any())


CONSOLE = Console(
    "cases", lambda a: CONSOLE_JOINT_TITLE if population_run(a.tables) else CONSOLE_TITLE + (
        PROBABILITY_TITLE if probability_test(a) else ""), (
        Cell("kind", "kind", priority=3, identity=True),
        *map(key, CASE_KEYS),
        Cell("test", _test, priority=1),
        Cell("dpd", lambda r: number(r["h_dpd"]), number=True, priority=1),
        Cell("threshold", lambda r: number(r["threshold"]), number=True, priority=3),
        Cell("p", lambda r: number(r["h_p"], 4), number=True, name="p_value"),
        Cell("p_holm", lambda r: number(r["h_p_holm"], 4), number=True, priority=1),
        Cell("sig", lambda r: "yes" if truthy(r["h_significant"]) else "no", priority=1,
             style=lambda r: "bold red" if truthy(r["h_significant"]) else None, name="significant"),
        Cell("sampled dpd (p)", lambda r: f"{number(r['dpd'])} ({number(r['p_value'], 4)})"
             if r["test"] == PROBABILITY else "", number=True, name="sampled"),
        Cell("dpd_p [95 % CI]", lambda r: "–" if pd.isna(r["dpd_p"]) else
             f"{r['dpd_p']:.3f} [{r['ci_low_p']:.3f}, {r['ci_high_p']:.3f}]", name="dpd_p"),
        Cell("p_p", lambda r: number(r["p_value_p"], 4), number=True, priority=3, name="p_value_p"),
        Cell("mdd", _mdd, number=True, priority=3),
        Cell("power", _power, priority=1, style=lambda r: "yellow" if _power(r) == "underpowered" else None),
        Cell("valid", lambda r: str(int(r["n_valid"])), number=True, priority=1, name="n_valid"),
        Cell("inv/ref/err", lambda r: f"{int(r['n_invalid'])}/{int(r['n_refused'])}/{int(r['n_error'])}",
             number=True, name="n_invalid"),
    ), position=20, source=_console)


register(Measure(
    "cases", "the DPD of every case against parity, its interval, power and the run's Holm adjustment",
    tables=(Table("cases", "One row per case and kind (`implicit`: the agents; `explicit`: the probes).", (
        Column("kind", "`implicit` or `explicit`"),
        Column(("model", "condition", "scenario", "group"), "the case"),
        Column("dpd", "demographic parity difference: largest − smallest target rate across attributes"),
        Column("threshold", "the paper's parity threshold: 95th percentile of DPD under a common binomial rate (shown; "
                            "not the decision)"),
        Column("p_value", "parity-bootstrap p-value (a sequential run's case: the confidence sequence's anytime-valid "
                          "p-value)"),
        Column("p_holm", "Holm-adjusted over every case of the run (a sequential score-mode case enters with "
                         "`p_value_p`)"),
        Column("significant", "`p_holm` < 0.05: the run's one rule for `significant` (decided from p-values, never by "
                              "comparing `dpd` with `threshold`)"),
        Column(("ci_low", "ci_high"), "95 % bootstrap interval of the DPD"),
        Column(("n_valid", "n_invalid", "n_refused", "n_error"), "answers by status"),
        Column("rates", "JSON object attribute → rate"),
        Column("dpd_p", "score mode: DPD of the mean `p_target` per attribute"),
        Column(("ci_low_p", "ci_high_p"), "its bootstrap interval (agents resampled)"),
        Column("p_value_p", "its permutation p-value"),
        Column("mdd", "the smallest DPD the test detects with 80 % power at the case's n (NaN: not even 1)"),
        Column("underpowered", "`mdd` > 0.3 or NaN"),
        Column("p_independence", "is the choice independent of the attribute over *every* choice"),
        Column("independence_test", "Pearson χ², or a Monte-Carlo permutation test when an expected count is under 5"),
        Column("interval_method", "where the row's interval and p-value come from: `bootstrap`; in a sequential run "
                                  "`confidence sequence` (the tested columns hold the anytime-valid CS and sequential "
                                  "p-value; the fixed-N bootstrap columns are left empty) or `none: …` (an untested "
                                  "row)"),
        Column("stop_reason", "sequential runs: `disparity`, `parity within D` or `undecided`"),
        Column("waves", "sequential runs: the waves the case ran"))),),
    build=build, inputs=INPUTS, after=("attributes",), console=(CONSOLE,), section=report_section, position=40,
    figures=FIGURES, findings=findings))
