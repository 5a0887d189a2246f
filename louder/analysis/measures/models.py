"""Model against model in one run folder (issue 42): a folder that holds several models gets the
paper's summary per model (``models.csv``), ΔDPD per pair of models and case for actions and words
with a verdict (``model_pairs.csv``), a summary per pair (``model_pair_summary.csv``) and, with an
order (``--set models.order=A --set models.order=B …``), the trend along it (``model_trend.csv``).
The statistics: ``louder.analysis.stats.comparison``; the same functions compare run folders
(``louder compare``). A folder of one model — or of models that share no case (the agents of one,
the explicit probe of another) — writes none of these."""

from __future__ import annotations

import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report.comparison import ALT, TITLE, models_figure, run_section
from louder.analysis.report.console import key, number, with_interval
from louder.analysis.stats import comparison as C
from louder.errors import LouderError, did_you_mean


def _margin(v: float) -> str | None:
    return None if 0 < v < 1 else "the margin is a DPD difference in (0, 1), e.g. 0.1"


ORDER = Option("order", str, (), "the models in order (e.g. generations, oldest first): the pairs follow it and "
                                 "model_trend.csv tests a trend along it (default: the run's order, no trend)",
               multiple=True)
MARGIN = Option("margin", float, C.MARGIN, "a verdict reads `no difference` only when the ΔDPD interval lies within "
                                           "± this margin (else `underpowered`)", check=_margin)
INPUTS = (Input("decisions", doc="the agents' decisions, the per-case selection (as cases.csv)"),
          Input("probes", doc="the explicit probe's answers (as cases.csv)"))


def order_of(a) -> list[str]:
    """The models compared, in order: the option's, else the run's."""
    models = C.models_of(a.manifests, a.decisions, a.probes)
    chosen = list(a.options.order)
    for m in chosen:
        if m not in models:
            raise LouderError(f"models.order={m}: the run has no model {m!r}{did_you_mean(m, models)}; its models: "
                              f"{', '.join(models)}")
    return chosen or models


def build(a) -> dict[str, pd.DataFrame]:
    order = order_of(a)
    if len(order) < 2:
        return {}  # one model: nothing to compare
    if a.decisions is not None and {"cell_id", "bucket"} <= set(a.decisions.columns):
        a.missing.append("models: an archetype run's agents share model calls (clusters); its models are not compared")
        return {}
    c = C.compare(a.decisions, a.probes, a.groups, order, score=a.score, B=a.bootstrap, seed=a.seed,
                  margin=a.options.margin, ordered=bool(a.options.order))
    # models that share no case (the agents of one, the explicit probe of another): nothing to compare
    return c.tables if len(c.rows) else {}


def report_section(a) -> str:
    ordered = bool(a.options.order)
    return run_section(a.tables, a.options.margin, ordered, a.figure("means", a.tables.get("models"), ordered))


def findings(a) -> list[Finding]:
    """Per pair of models and side (actions, words): the mean ΔDPD with its interval, and the cases' verdicts."""
    summary = a.tables.get("model_pair_summary")
    if summary is None or summary.empty:
        return []
    out = []
    for _, r in summary.iterrows():
        n = {v: int(r["n_" + v.replace(" ", "_")]) for v in C.VERDICTS}
        counts = ", ".join(f"{k} {v}" for v, k in n.items() if k)
        out.append(Finding(f"{r['model']} against {r['reference']}, {r['side']}: mean ΔDPD {number(r['mean_delta'], 2)} "
                           f"[{number(r['ci_low'], 2)}, {number(r['ci_high'], 2)}] over {int(r['n_cases'])} case(s) "
                           f"({counts or 'no verdict'}).", TITLE))
    return out


def _verdict_style(side: str):
    return lambda r: {"more biased": "bold red", "less biased": "green", "underpowered": "yellow"}.get(
        r[f"{side}_verdict"])


def _mean(kind: str):
    return with_interval(f"mean_{kind}", f"{kind}_ci_low", f"{kind}_ci_high")


def _sig(kind: str):
    return lambda r: "–" if not r[f"n_{kind}"] else f"{int(r[f'significant_{kind}'])} of {int(r[f'n_{kind}'])}"


MODELS_CONSOLE = Console("models", "Per model: cases significant of N (Holm within the model), mean DPD of the implicit and "
                             "explicit cases (95 % intervals: agents resampled within cases) and the gap", (
    Cell("model", "model", priority=1),
    Cell("implicit sig.", _sig("implicit"), number=True, priority=1, name="significant_implicit"),
    Cell("mean implicit [95 % CI]", _mean("implicit"), number=True, priority=1, name="mean_implicit"),
    Cell("explicit sig.", _sig("explicit"), number=True, name="significant_explicit"),
    Cell("mean explicit [95 % CI]", _mean("explicit"), number=True, priority=1, name="mean_explicit"),
    Cell("gap [95 % CI]", with_interval("gap", "gap_ci_low", "gap_ci_high"), number=True, name="gap"),
    Cell("gap p", lambda r: number(r["gap_p_value"], 4), number=True, name="gap_p_value")), position=24)

PAIRS_CONSOLE = Console("model_pairs", "Per pair and case: ΔDPD = model − reference for actions (the agents) and words "
                                 "(the explicit probe), Holm across pairs × cases", (
    Cell("reference", "reference", priority=1), Cell("model", "model", priority=1),
    key("condition"), key("scenario"), key("group"),
    Cell("actions Δ [95 % CI]", with_interval("actions_delta", "actions_ci_low", "actions_ci_high"), number=True,
         priority=1, name="actions_delta"),
    Cell("p_holm", lambda r: number(r["actions_p_holm"], 4), number=True, priority=3, name="actions_p_holm"),
    Cell("actions", lambda r: r["actions_verdict"] if isinstance(r["actions_verdict"], str) else "–", priority=1,
         style=_verdict_style("actions"), name="actions_verdict"),
    Cell("words Δ [95 % CI]", with_interval("words_delta", "words_ci_low", "words_ci_high"), number=True,
         name="words_delta"),
    Cell("p_holm ", lambda r: number(r["words_p_holm"], 4), number=True, priority=3, name="words_p_holm"),
    Cell("words", lambda r: r["words_verdict"] if isinstance(r["words_verdict"], str) else "–", priority=1,
         style=_verdict_style("words"), name="words_verdict")), position=25)

SUMMARY_CONSOLE = Console("model_pair_summary", "Per pair: mean ΔDPD over the cases and the verdicts' counts", (
    Cell("reference", "reference", priority=1), Cell("model", "model", priority=1), Cell("side", "side", priority=1),
    Cell("mean Δ [95 % CI]", with_interval("mean_delta", "ci_low", "ci_high"), number=True, priority=1,
         name="mean_delta"),
    Cell("more", lambda r: str(int(r["n_more_biased"])), number=True, priority=1, name="n_more_biased"),
    Cell("less", lambda r: str(int(r["n_less_biased"])), number=True, priority=1, name="n_less_biased"),
    Cell("no diff.", lambda r: str(int(r["n_no_difference"])), number=True, name="n_no_difference"),
    Cell("underpowered", lambda r: str(int(r["n_underpowered"])), number=True, name="n_underpowered")), position=26)

TREND_CONSOLE = Console("model_trend", "Trend of the mean DPD along the models' order (WLS on position; z-test of slope 0)", (
    Cell("side", "side", priority=1), Cell("order", "order", priority=2),
    Cell("slope [95 % CI]", with_interval("slope", "slope_ci_low", "slope_ci_high"), number=True, priority=1,
         name="slope"),
    Cell("p", lambda r: number(r["p_value"], 4), number=True, priority=1, name="p_value")), position=27)

SIDE_DOC = ("`actions`: the agents' decisions (the implicit cases; score mode: the probability DPD); `words`: the "
            "explicit probe")


def _side_columns(side: str, what: str) -> tuple[Column, ...]:
    return (
        Column((f"{side}_reference_dpd", f"{side}_model_dpd"),
               f"{what}: the two models' DPDs, as in their `cases.csv`"),
        Column(f"{side}_delta", f"{what}: ΔDPD = model − reference"),
        Column((f"{side}_ci_low", f"{side}_ci_high"), f"{what}: its 95 % interval (each model's agents resampled on "
                                                      "its own; contains ΔDPD, valid when either DPD is 0)"),
        Column(f"{side}_p_value", f"{what}: p-value of ΔDPD = 0 (the inversion of the interval: valid whatever the "
                                  "two models' rates)"),
        Column(f"{side}_p_holm", f"{what}: Holm-adjusted across every pair × case of the table (actions and words)"),
        Column(f"{side}_verdict", f"{what}: `more biased`, `less biased` (p_holm < 0.05), `no difference` (the "
                                  "interval within ± margin) or `underpowered` (it reaches past the margin)"))


register(Measure(
    "models", "model against model: the paper's summary per model, ΔDPD per pair of models and case (actions and "
              "words) with verdicts, per pair, and a trend along an order",
    tables=(
        Table("models", "A run folder with several models (or `louder compare`): one row per model, the paper's "
                        "summary. Formulas: `louder/analysis/stats/comparison.py`; how to read it: [the tutorial]"
                        "(../tutorials/compare-models.md).", (
            Column("model", "the model (in `louder compare`: its label)"),
            Column("position", "its place in the order (0 first)"),
            Column("statistic", "`dpd`, or in score mode `dpd_p` (the probability DPD) for the implicit cases"),
            Column("implicit_condition", "the persona condition of the implicit cases summarised (contextualized "
                                         "where the run has it)"),
            Column(("n_implicit", "significant_implicit"), "those implicit cases, and how many are significant (each "
                                                          "case's parity test, Holm within the model)"),
            Column(("mean_implicit", "implicit_ci_low", "implicit_ci_high"),
                   "their mean DPD and its 95 % interval (agents resampled within every case; conservative)"),
            Column(("n_explicit", "significant_explicit", "mean_explicit", "explicit_ci_low", "explicit_ci_high"),
                   "the same for the explicit cases"),
            Column(("gap", "gap_ci_low", "gap_ci_high"), "mean implicit − mean explicit DPD and its 95 % interval"),
            Column("gap_p_value", "p-value of gap = 0"),
            Column("gap_test", "the test of the gap: the inversion of its interval"))),
        Table("model_pairs", "One row per pair of models (reference before model in the order) × case: ΔDPD for "
                             "actions and for words side by side — each implicit case beside the explicit probe of "
                             "its scenario × group (an explicit case without an implicit one: a row of its own).", (
            Column(("reference", "model"), "the pair: ΔDPD = DPD(model) − DPD(reference)"),
            Column(("condition", "scenario", "group"), "the case (`condition` empty on a words-only row)"),
            Column("statistic", "the actions' DPD: `dpd`, or `dpd_p` in score mode"),
            *_side_columns("actions", "actions"), *_side_columns("words", "words"),
            Column("reading", "the two verdicts in words, e.g. \"more biased in what its agents do, less biased in "
                              "what it says\""))),
        Table("model_pair_summary", "One row per pair of models × side (" + SIDE_DOC + ").", (
            Column(("reference", "model"), "the pair"),
            Column("side", "`actions` or `words`"),
            Column("n_cases", "the cases both models have"),
            Column(("mean_delta", "ci_low", "ci_high"), "mean ΔDPD over them, with its 95 % interval"),
            Column("p_value", "p-value of mean ΔDPD = 0 (the inversion of the interval)"),
            Column(("n_more_biased", "n_less_biased", "n_no_difference", "n_underpowered"),
                   "how many of the cases read each verdict in `model_pairs.csv`"))),
        Table("model_trend", "With an order (`--set models.order=…`, `louder compare --order`): one row per side.", (
            Column("side", "`actions` or `words`"),
            Column("order", "the models, in order"),
            Column("n_models", "the models with a mean DPD on this side"),
            Column(("slope", "slope_ci_low", "slope_ci_high"), "change of the mean DPD per step of the order, with "
                                                               "its 95 % interval"),
            Column(("z", "p_value"), "z-test of slope 0"),
            Column("test", "the test: weighted least squares on position, weights 1 / the means' bootstrap "
                           "variances")))),
    inputs=INPUTS, options=(ORDER, MARGIN), build=build,
    console=(MODELS_CONSOLE, PAIRS_CONSOLE, SUMMARY_CONSOLE, TREND_CONSOLE),
    section=report_section, position=55, findings=findings,
    figures=(Figure("means", lambda a, models, ordered: models_figure(models, ordered), ALT),)))
