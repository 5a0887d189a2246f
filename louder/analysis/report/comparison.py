"""What a comparison of models shows (issue 42): the paper's Figure 3 — each model's mean implicit and
explicit DPD with its interval, in the models' order — and the HTML of the comparison's tables. The
run folder's report (the ``models`` measure) and the report of ``louder compare`` are both made here,
from the tables of ``louder.analysis.stats.comparison``."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.report.html import figure, note, section, table

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn: `louder compare` without a report stays light
    from matplotlib.figure import Figure

def models_figure(models: pd.DataFrame, ordered: bool = False) -> Figure | None:
    """The paper's Figure 3: per model (in order), its mean implicit DPD and mean explicit DPD with
    their intervals; joined by lines when the order means something (``ordered``)."""
    if models is None or models.empty:
        return None
    from matplotlib.figure import Figure

    from louder.analysis.report.draw import KIND_COLORS

    names = list(models["model"])
    fig = Figure(figsize=(max(5.0, 1.4 * len(names) + 2.5), 3.4), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(names))
    for j, kind in enumerate(("implicit", "explicit")):
        y = models[f"mean_{kind}"].to_numpy(dtype=float)
        if not np.isfinite(y).any():
            continue
        lo, hi = models[f"{kind}_ci_low"].to_numpy(dtype=float), models[f"{kind}_ci_high"].to_numpy(dtype=float)
        xs = x + (j - 0.5) * 0.12
        label = (f"implicit ({models['implicit_condition'].dropna().iloc[0]})" if kind == "implicit"
                 and models["implicit_condition"].notna().any() else kind)
        ax.errorbar(xs, y, yerr=[np.nan_to_num(y - lo), np.nan_to_num(hi - y)], fmt="o-" if ordered else "o",
                    color=KIND_COLORS[kind], capsize=4, label=label)
    ax.set_xticks(x, [_short(n) for n in names], fontsize=8)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean DPD over cases")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Mean DPD per model (cf. the paper's Fig. 3), 95 % intervals: agents resampled within cases",
                 fontsize=9)
    return fig


def _short(name: str, width: int = 22) -> str:
    import textwrap

    return textwrap.fill(name, width)


ALT = ("Per model, in order: its mean implicit DPD (the agents) and mean explicit DPD (the model asked "
       "directly) over the cases, each a point with its 95 % interval.")


def html_sections(tables: dict[str, pd.DataFrame], margin: float, ordered: bool = False,
                  drawn: str | None = None) -> str:
    """The comparison's HTML: the figure (``drawn``: as the run's report placed it; else drawn here), then
    each table with what it says."""
    models, pairs = tables.get("models"), tables.get("model_pairs")
    if drawn is None:
        drawn = figure(models_figure(models, ordered), ALT, "models/means", "models-means")
    summary, trend = tables.get("model_pair_summary"), tables.get("model_trend")
    parts = [
        note("Per model, the paper's summary: the cases significant of N (each case's parity test, Holm within the "
             "model and kind), the mean DPD of its implicit cases (one persona condition) and of its explicit cases "
             "with 95 % intervals, and the gap implicit − explicit with its interval and test. Intervals resample the "
             "agents "
             "(and the probe's answers) within every case, each model on its own; they contain their estimate and "
             "stay valid when a DPD is 0 — and are conservative (wide): see the tutorial "
             "<i>Compare two models</i>."),
        drawn,
        table(models, scroll=True),
    ]
    if summary is not None and len(summary):
        parts += ["<h3>Per pair of models</h3>",
                  note("ΔDPD = DPD(model) − DPD(reference), averaged over the cases both have, with its interval and "
                       "p-value, and how many cases read each verdict."),
                  table(summary, scroll=True)]
    if pairs is not None and len(pairs):
        parts += ["<h3>Per pair and case: actions and words</h3>",
                  note("Per case, ΔDPD of what the agents do (<b>actions</b>: the implicit case) and of what the model "
                       "says when asked (<b>words</b>: the explicit probe of the scenario × group), each with its "
                       "interval, p-value and Holm-adjusted p (across every pair × case of the table). <b>more / less "
                       "biased</b>: p_holm &lt; 0.05; <b>no difference</b>: not, and the interval within ± "
                       f"{margin:g}; <b>underpowered</b>: not, and the interval reaches past ± {margin:g} (a "
                       "difference of that size could not have been excluded: more agents, or trials, would settle "
                       "it)."),
                  table(pairs, scroll=True)]
    if trend is not None and len(trend):
        parts += ["<h3>Trend along the order</h3>",
                  note("Weighted least squares of each model's mean DPD on its position in the order, weights 1 / the "
                       "mean's bootstrap variance; z-test of slope 0 (H0: every model's mean DPD the same)."),
                  table(trend)]
    return "\n".join(p for p in parts if p)


TITLE = "Model against model"


def run_section(tables: dict[str, pd.DataFrame], margin: float, ordered: bool = False,
                drawn: str | None = None) -> str:
    """The section of a run folder's report that holds several models (``drawn``: its figure)."""
    return section(TITLE, html_sections(tables, margin, ordered, drawn))


def gate_html(failing: pd.DataFrame | None, rule: str | None) -> str:
    """The release gate's verdict, as the comparison report states it."""
    if rule is None:
        return ""
    if failing is None or failing.empty:
        return note(f"<b>Release gate</b> (<code>--fail-if {html.escape(rule)}</code>): passed — no case is worse than "
                    "the base.")
    return (note(f"<b>Release gate</b> (<code>--fail-if {html.escape(rule)}</code>): <span class='sig'>failed</span> "
                 f"in {len(failing)} case(s):") + table(failing))
