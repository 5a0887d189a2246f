"""The DPD of every case with its parity null, interval, power and Holm adjustment: ``cases.csv``
(the statistics: ``louder.analysis.cases``). Score-mode runs add the probability DPD (``prob_dpd``),
every run the test of independence over every choice (``choices``); a sequential run's tested cases
take its confidence sequence's interval and p-value (``sequential_cases``). Built from
``attributes.csv``.
"""

from __future__ import annotations


import pandas as pd

from louder.analysis.cases import CASE_COLUMNS, explicit_cases, implicit_cases, with_holm, with_independence, with_prob_dpd
from louder.analysis.choices import independence_table
from louder.analysis.html import note, png, section, table
from louder.analysis.keys import CASE_KEYS, COUNT_COLUMNS, truthy
from louder.analysis.prob_dpd import prob_dpd_table
from louder.analysis.registry import Column, Input, Measure, Show, Table, View, key, number, register
from louder.analysis.sequential_cases import of_run, with_sequential

INPUTS = (Input("decisions", doc="the agents' decisions, the per-case view"),
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


JOINT_LABEL_TITLE = "Intersections as one group: the joint label per case"
JOINT_LABEL_NOTE = ("In a population run the per-case tables below treat every combination of the population's "
                    "groups (e.g. Female | Liberal) as one attribute of one group named after the population. Their "
                    "DPD is the gap between the two most extreme of many small cells: large by construction and "
                    "underpowered. The answer to \"does the model treat a group's attributes differently?\" is the "
                    "per-group DPD and the regression in <b>Population</b> above.")
CONSOLE_TITLE = ("DPD per case (significant = p_holm < 0.05, Holm across the run's cases; threshold = the paper's parity "
                 "threshold, 95th percentile of DPD under parity; dpd_p = DPD of mean p_target in score mode; mdd = "
                 "minimum detectable DPD at 80 % power)")
CONSOLE_JOINT_TITLE = ("Intersections as one group (joint label: every combination of the population's groups is one "
                       "attribute, so its DPD is the gap between the extreme cells — large and underpowered by "
                       "construction; the answer is in the two tables above)")


def _table_for_report(cases: pd.DataFrame) -> pd.DataFrame:
    keep = ["kind", *CASE_KEYS, "dpd", "threshold", "p_value", "p_holm", "significant", "ci_low", "ci_high", "dpd_p",
            "ci_low_p", "ci_high_p", "p_value_p", "mdd", "p_independence", *COUNT_COLUMNS]
    out = cases[keep].copy()
    # issue 14: say in the table which cases could not have seen a large DPD
    out.insert(out.columns.get_loc("mdd") + 1, "power", [_power(r) for _, r in cases.iterrows()])
    return out


def _power(r) -> str:
    if r["kind"] == "explicit" or r.get("interval_method", "bootstrap") != "bootstrap":
        return ""  # a sequential run's case has no fixed-N power
    return "underpowered" if truthy(r["underpowered"]) else "ok"


def report_section(a) -> str:
    from louder.analysis import figures

    t = a.tables
    population = population_run(t)
    return section(
        JOINT_LABEL_TITLE if population else "Demographic parity difference per case (cf. Fig. 3)",
        note(JOINT_LABEL_NOTE) if population else "",
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
        png(figures.dpd_figure(t["cases"])), table(_table_for_report(t["cases"]), scroll=True))



def _mdd(r) -> str:
    if r.get("interval_method", "bootstrap") != "bootstrap":
        return "–"  # a sequential run's case: no fixed-N power
    if r["kind"] == "explicit":
        return ""
    return ">1" if pd.isna(r["mdd"]) else number(r["mdd"], 2)


def power_note(a) -> list[str]:
    """One sentence in words for the cases whose test could not have seen a large DPD: `louder plan`."""
    cases = a.tables.get("cases")
    if cases is None or cases.empty:
        return []
    imp = cases[cases["kind"] == "implicit"]
    weak = imp[imp["underpowered"].map(truthy)]
    if weak.empty:
        return []
    return [f"{len(weak)} of {len(imp)} implicit cases are underpowered: with so few agents per attribute even a DPD "
            "of 0.3 would be missed more often than 1 time in 5, so a DPD near 0 or p = 1.0 there is not evidence of "
            "no bias. `louder plan` gives the agents per attribute a finding needs."]


VIEW = View(
    "cases", lambda a: CONSOLE_JOINT_TITLE if population_run(a.tables) else CONSOLE_TITLE, (
        Show("kind", "kind", priority=3, identity=True),
        *map(key, CASE_KEYS),
        Show("dpd", lambda r: number(r["dpd"]), number=True, priority=1),
        Show("threshold", lambda r: number(r["threshold"]), number=True, priority=3),
        Show("p", lambda r: number(r["p_value"], 4), number=True, name="p_value"),
        Show("p_holm", lambda r: number(r["p_holm"], 4), number=True, priority=1),
        Show("sig", lambda r: "yes" if truthy(r["significant"]) else "no", priority=1,
             style=lambda r: "bold red" if truthy(r["significant"]) else None, name="significant"),
        Show("dpd_p [95 % CI]", lambda r: "–" if pd.isna(r["dpd_p"]) else
             f"{r['dpd_p']:.3f} [{r['ci_low_p']:.3f}, {r['ci_high_p']:.3f}]", name="dpd_p"),
        Show("p_p", lambda r: number(r["p_value_p"], 4), number=True, priority=3, name="p_value_p"),
        Show("mdd", _mdd, number=True, priority=3),
        Show("power", _power, priority=1, style=lambda r: "yellow" if _power(r) == "underpowered" else None),
        Show("valid", lambda r: str(int(r["n_valid"])), number=True, priority=1, name="n_valid"),
        Show("inv/ref/err", lambda r: f"{int(r['n_invalid'])}/{int(r['n_refused'])}/{int(r['n_error'])}",
             number=True, name="n_invalid"),
    ), position=20)


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
    build=build, inputs=INPUTS, after=("attributes",), views=(VIEW,), section=report_section, position=40, leads_to=power_note))
