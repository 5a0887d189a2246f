"""What every figure of the report must hold (issue 43), read from the matplotlib figure itself rather than
from the code that drew it: each interval drawn (every error bar) contains its estimate, and every mark
of data — lines, markers, bars, bands — takes its colour from louder's palette (colour-blind safe)."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import Collection
from matplotlib.colors import to_hex, to_rgba
from matplotlib.container import ErrorbarContainer

from louder.analysis.report import palette

TOL = 1e-9


def _colours(value) -> list[str]:
    """The colours of an artist's property (one, or an array of them), transparent ones left out."""
    if value is None or (isinstance(value, str) and value == "none"):
        return []
    arr = np.asarray(value, dtype=object)
    items = [value] if isinstance(value, str) or (arr.ndim == 1 and len(arr) in (3, 4) and
                                                  all(isinstance(v, (int, float, np.floating)) for v in arr)) else list(value)
    out = []
    for c in items:
        rgba = to_rgba(c)
        if rgba[3] > 0:
            out.append(to_hex(rgba).upper())
    return out


def colour_problems(fig) -> list[str]:
    """Data marks whose colour is not in ``louder.analysis.report.palette.ALLOWED`` (colour maps — heat maps,
    colour bars — are data scales, not marks, and are left out: viridis is itself colour-blind safe)."""
    allowed = {c.upper() for c in palette.ALLOWED}
    bad = set()
    for ax in fig.axes:
        for line in ax.lines:
            for c in (line.get_color(), line.get_markerfacecolor(), line.get_markeredgecolor()):
                bad.update(x for x in _colours(c) if x not in allowed)
        for col in ax.collections:
            if isinstance(col, Collection) and col.get_array() is not None:
                continue  # colour-mapped
            for c in (col.get_facecolor(), col.get_edgecolor()):
                bad.update(x for x in _colours(c) if x not in allowed)
        for patch in ax.patches:
            for c in (patch.get_facecolor(), patch.get_edgecolor()):
                bad.update(x for x in _colours(c) if x not in allowed)
    return [f"colour {c} is not in louder.analysis.report.palette" for c in sorted(bad)]


def interval_problems(fig) -> list[str]:
    """Error bars whose interval does not contain the point they belong to."""
    out = []
    for ax in fig.axes:
        for c in ax.containers:
            if not isinstance(c, ErrorbarContainer) or not c.has_xerr and not c.has_yerr:
                continue
            line, _caps, bars = c.lines
            points = np.asarray(line.get_xydata(), dtype=float) if line is not None else np.empty((0, 2))
            for axis, coll in zip([a for a, has in ((0, c.has_xerr), (1, c.has_yerr)) if has], bars):
                for seg in coll.get_segments():
                    seg = np.asarray(seg, dtype=float)
                    other = 1 - axis
                    near = points[np.isclose(points[:, other], seg[0, other], atol=TOL)] if len(points) else points
                    if not len(near):
                        out.append(f"an interval at {seg.tolist()} has no estimate")
                        continue
                    lo, hi = seg[:, axis].min(), seg[:, axis].max()
                    if not any(lo - TOL <= p <= hi + TOL for p in near[:, axis]):
                        out.append(f"interval [{lo:.4g}, {hi:.4g}] does not contain its estimate "
                                   f"{near[0, axis]:.4g}")
    return out


def problems(fig) -> list[str]:
    return colour_problems(fig) + interval_problems(fig)


def recorded(monkeypatch) -> list[tuple[str, list[str]]]:
    """Every figure a report draws from now on (``html.figure``, patched for the test), checked as it is
    drawn: (its name, ``problems``), in order."""
    from louder.analysis.report import html

    drawn: list[tuple[str, list[str]]] = []
    real = html.figure

    def checked(fig, alt, name="figure", download=None):
        if fig is not None:
            drawn.append((name, problems(fig)))
        return real(fig, alt, name, download)

    monkeypatch.setattr(html, "figure", checked)
    return drawn
