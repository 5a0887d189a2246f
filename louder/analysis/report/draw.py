"""What every figure of the report is drawn with: an estimate with its interval (``interval``: always
around the estimate), forest plots (``forest``), panels of cases (``case_panels``, ``rate_panel``,
``panels_legend``), the colours of the kinds of answer and of the stereotypes' categories and the mark of
a significant result (the palette's use: ``louder.analysis.report.palette``), and an id as words
(``plain``). A measure's own figures live in its module (``louder.analysis.measures``); each returns a
matplotlib Figure built without pyplot's global state."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from louder.analysis.report import palette as P

KIND_COLORS = {"implicit": P.IMPLICIT, "explicit": P.EXPLICIT}
MARK = "✱"  # significant: Holm-adjusted p < 0.05, the run's one rule


def interval(ax, est: float, y: float, lo: float = np.nan, hi: float = np.nan, color: str = P.BLACK,
             marker: str = "o", ms: float = 5, horizontal: bool = True, hollow: bool = False, label=None, **kw):
    """One estimate at ``y`` with its interval [lo, hi] as error bars (none when the interval is missing).
    The interval must contain the estimate (a float's last digit aside): one that does not is a bug of
    its statistic, and matplotlib refuses to draw it."""
    err = None
    if np.isfinite(lo) and np.isfinite(hi):
        err = np.array([[est - lo], [hi - est]], dtype=float)
        err[(err < 0) & (err > -1e-9)] = 0.0
    style = dict(fmt=marker, color=color, ecolor=color, capsize=2, ms=ms, label=label,
                 mfc=P.WHITE if hollow else color, elinewidth=1.2, **kw)
    return ax.errorbar(est, y, xerr=err, **style) if horizontal else ax.errorbar(y, est, yerr=err, **style)


def plain(text: str) -> str:
    """An id as words: ``emergency_response`` → "emergency response"."""
    return str(text).replace("_", " ")


def forest(panels: list[tuple[str, pd.DataFrame]], series: list[dict], label, xlabel: str = "",
           ref: float | None = 0.0, xlim: tuple[float, float] | None = None, title: str = "",
           width: float = 7.5) -> Figure | None:
    """Forest plots, one panel per (title, rows): each row of a panel a line with one mark per series —
    ``series``: dicts of ``est`` (its column), optional ``lo`` / ``hi`` (its interval's columns), ``color``
    (a colour, or a function of the row), ``marker``, ``label`` (the legend) and ``hollow``; ``label``: the
    row's label (a column, or a function of the row); ``ref``: a dashed reference line (None: none)."""
    panels = [(t, rows.reset_index(drop=True)) for t, rows in panels if len(rows)]
    if not panels:
        return None
    heights = [len(rows) for _, rows in panels]
    fig = Figure(figsize=(width, 0.26 * sum(heights) + 0.75 * len(panels) + 0.7), layout="constrained")
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=[max(h, 1.5) for h in heights])[:, 0]
    step = 0.5 / max(1, len(series))
    for ax, (name, rows) in zip(axes, panels):
        for i, (_, r) in enumerate(rows.iterrows()):
            for j, sr in enumerate(series):
                est = r.get(sr["est"], np.nan)
                if pd.isna(est):
                    continue
                color = sr["color"](r) if callable(sr.get("color")) else sr.get("color", P.BLACK)
                lo = r.get(sr["lo"], np.nan) if sr.get("lo") else np.nan
                hi = r.get(sr["hi"], np.nan) if sr.get("hi") else np.nan
                interval(ax, float(est), -i - (j - (len(series) - 1) / 2) * step, float(lo), float(hi), color=color,
                         marker=sr.get("marker", "o"), ms=4, hollow=sr.get("hollow", False))
        ax.set_yticks(-np.arange(len(rows)), [label(r) if callable(label) else str(r[label])
                                              for _, r in rows.iterrows()], fontsize=7)
        ax.set_ylim(-len(rows) + 0.4, 0.6)
        if ref is not None:
            ax.axvline(ref, color=P.GREY, ls="--", lw=1)
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.grid(axis="x", color=P.GRID, lw=0.6)
        ax.set_axisbelow(True)
        if name:
            ax.set_title(name, fontsize=8, loc="left")
    axes[-1].set_xlabel(xlabel, fontsize=8)
    handles = [Line2D([], [], color=s["color"] if isinstance(s.get("color"), str) else P.BLACK,
                      marker=s.get("marker", "o"), mfc=P.WHITE if s.get("hollow") else None, label=s["label"])
               for s in series if s.get("label")]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


CATEGORY_COLORS = {"race": P.VERMILLION, "gender": P.PURPLE, "religion": P.GREEN, "health": P.BLUE}


def case_panels(n: int) -> tuple[Figure, list]:
    """A figure of ``n`` panels, three a row (one per case: the human-study sections), and their axes."""
    ncol = min(n, 3)
    nrow = int(np.ceil(n / ncol))
    fig = Figure(figsize=(max(6.5, 4.3 * ncol), 0.8 + 2.6 * nrow), layout="constrained")
    axes = list(np.atleast_1d(fig.subplots(nrow, ncol, squeeze=False).ravel()))
    for ax in axes[n:]:
        ax.set_axis_off()
    return fig, axes[:n]


def rate_panel(ax, attributes: list[str], title: str) -> None:
    """A panel of target-decision rates, one row per attribute (top to bottom), titled."""
    ax.set_yticks(range(len(attributes)), attributes, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("target-decision rate", fontsize=7)
    ax.set_title(textwrap.fill(title.replace("_", " "), 48), fontsize=8)


def panels_legend(fig: Figure, axes: list) -> None:
    """One legend under the panels: every series once, in the order first drawn."""
    handles: dict = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=3, fontsize=7)
