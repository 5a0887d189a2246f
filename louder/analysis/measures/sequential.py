"""What ``louder analyze`` and the report make of a sequential run (issue 20): its verdicts and the
anytime-valid confidence sequence of every tested case. This measure writes no table of its own: the
run wrote ``sequential.csv`` and ``sequential_waves.csv``; it prints and reports them. The cases and
population measures take the confidence sequence's intervals and p-values for the cases it tested
(``louder.analysis.stats.sequential_cases``); the statistics are ``louder.analysis.stats.sequential``'s.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Console, Figure, Input, Measure
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.keys import POPULATION_KEYS
from louder.analysis.stats.sequential_cases import NOTE, case_keys, of_run

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

INPUTS = (Input("final", "sequential.csv", raw=True, doc="a sequential run's cases (sequential.csv)"),
          Input("waves", "sequential_waves.csv", raw=True, doc="… and their state after every wave"))


def _run(a):
    return of_run(a.manifests.get("simulation"), a.final, a.waves)


# --- the report section and the console --------------------------------------------------------------

MAX_PANELS = 12
STOP_COLORS = {"disparity": P.VERMILLION, "undecided": P.GREY}  # parity within D: green


def sequence_figure(waves: pd.DataFrame, final: pd.DataFrame, precision: float) -> MplFigure | None:
    """One panel per tested case: the DPD confidence sequence (band) and the DPD (line) after each
    wave against agents per attribute, with 0 and the precision D, and the stop marked."""
    from matplotlib.figure import Figure as MplFigure

    if waves.empty:
        return None
    keys = case_keys(final)
    cases = final.head(MAX_PANELS)
    cols = min(3, len(cases))
    rows = -(-len(cases) // cols)
    fig = MplFigure(figsize=(4.2 * cols, 2.8 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, (_, case) in zip(axes, cases.iterrows()):
        w = waves
        for k in keys:
            w = w[w[k] == case[k]]
        color = STOP_COLORS.get(case["stop_reason"], P.GREEN)
        x = w["agents_per_attribute"].to_numpy()
        ax.fill_between(x, w["cs_low"], w["cs_high"], step=None, color=color, alpha=0.25, lw=0)
        ax.plot(x, w["dpd"], color=color, lw=1.2, marker="o", ms=2.5)
        ax.axhline(0, color=P.BLACK, lw=0.8)
        ax.axhline(precision, color=P.BLACK, lw=0.8, ls="--")
        ax.axvline(case["agents_per_attribute"], color=color, lw=1, ls=":")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("agents per attribute", fontsize=8)
        ax.set_ylabel("DPD", fontsize=8)
        label = " · ".join(str(case[k]) for k in keys if k not in ("model", "condition"))
        ax.set_title(textwrap.fill(f"{label}: {case['stop_reason']} after {case['waves']} waves", 48), fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[len(cases):]:
        ax.set_visible(False)
    return fig


def _settings(a) -> dict:
    return (a.manifests.get("simulation") or {}).get("sequential", {})


def report_section(a) -> str:
    """The section, when the run folder holds a sequential run."""
    if (seq := _run(a)) is None:
        return ""
    final, waves = seq
    s = _settings(a)
    m = a.manifests.get("simulation") or {}
    precision = float(s.get("precision", 0.1))
    more = f" ({len(final) - MAX_PANELS} more cases in the tables)" if len(final) > MAX_PANELS else ""
    return section(
        "Sequential run: stop when it is decided",
        note(f"Each case ran in waves of {s.get('wave')} agents per attribute (population runs: drawn agents), up to "
             f"{s.get('budget')}. After every wave an anytime-valid test looked: a betting confidence sequence for "
             f"every pair of attributes (Waudby-Smith &amp; Ramdas 2023), each at level α/S = "
             f"{s.get('pair_level', float('nan')):.2g} (Bonferroni over the run's S = {s.get('pairs')} pairs), "
             f"projected onto the DPD. A case stopped at <b>disparity</b> when the DPD's lower bound left 0, at "
             f"<b>parity within {precision:g}</b> when its upper bound fell below {precision:g}, and is "
             f"<b>undecided</b> at the budget. Every verdict of the run is wrong with probability at most "
             f"α = {s.get('alpha')}, however often it looked. The run made {m.get('model_calls')} model calls of "
             f"the {m.get('planned_calls')} its budget allowed. {NOTE}; other fixed-N p-values and intervals of "
             f"this report (regression, intersections, ablation, directions) assume a fixed N too. "
             "p_value is the case's sequential p-value, p_adjusted its run-wide Bonferroni one."),
        table(final, scroll=True),
        note(f"The DPD confidence sequence after each wave (band), the DPD (line), 0 and the precision D = "
             f"{precision:g} (dashed); the dotted line marks where the case stopped{more}."),
        a.figure("sequence", waves, final, precision),
        table(waves, scroll=True))


def console_title(s: dict) -> str:
    return (f"Sequential: waves of {s['wave']} up to {s['budget']}, α = {s['alpha']} for every verdict of the run "
            f"(Bonferroni over {s['pairs']} pairs of attributes); p = run-wide sequential p-value")


COLUMNS = (*(key(k) for k in POPULATION_KEYS),
           Cell("stop", "stop_reason", priority=1),
           Cell("waves", lambda r: str(r["waves"]), number=True),
           Cell("agents", lambda r: str(r["agents_per_attribute"]), number=True, priority=1,
                name="agents_per_attribute"),
           Cell("DPD", lambda r: f"{r['dpd']:.3f}", number=True, priority=1, name="dpd"),
           Cell("CS", lambda r: f"[{r['cs_low']:.3f}, {r['cs_high']:.3f}]", number=True, priority=1, name="cs"),
           Cell("p", lambda r: f"{r['p_adjusted']:.3g}", number=True, priority=1, name="p_adjusted"))


register(Measure(
    "sequential", "a sequential run's verdicts: the anytime-valid confidence sequence of every tested case",
    tables=(), build=lambda a: {}, inputs=INPUTS, needs=("final", "waves"),
    console=(Console("sequential", lambda a: console_title(_settings(a)), COLUMNS, position=60,
                source=lambda a: seq[0] if (seq := _run(a)) is not None else None),),
    section=report_section, position=20, leads_to=lambda a: [NOTE] if _run(a) is not None else [],
    figures=(Figure("sequence", lambda a, waves, final, precision: sequence_figure(waves, final, precision),
                  "Per case: the DPD's anytime-valid confidence sequence after each wave (a band), the DPD (a line), 0 "
                  "and the precision (dashed), and where the case stopped (dotted)."),)))
