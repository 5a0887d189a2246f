"""The HTML pieces every report section is made of (``louder.analysis.report`` and the section
modules it draws on): a note paragraph, an embedded PNG figure, a table, a section."""

from __future__ import annotations

import base64
import html
import io
import textwrap

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def fit_titles(fig: Figure) -> Figure:
    """Wrap every axes title wider than the figure (a long model spec in a narrow figure) onto more lines,
    so that the picture shows it whole instead of cutting it at the edges."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the canvas savefig draws on
    width = fig.bbox.width
    for _ in range(8):  # each pass lays the figure out (constrained layout) as the PNG will be, then narrows
        renderer = canvas.get_renderer()
        fig.draw(renderer)
        wide = [(t, t.get_window_extent(renderer)) for ax in fig.axes for t in (ax.title, ax._left_title,
                                                                                 ax._right_title) if t.get_text()]
        wide = [(t, box) for t, box in wide if box.x0 < 0 or box.x1 > width]
        if not wide:
            break
        for title, box in wide:  # refill the whole text, its widest line 10 % narrower than what fits
            lines = title.get_text().split("\n")
            chars = max(len(line) for line in lines) * 0.9 * min(1.0, width / box.width)
            title.set_text(textwrap.fill(" ".join(lines), max(16, int(chars))))
    return fig


def png(fig: Figure | None) -> str:
    if fig is None:
        return ""
    fit_titles(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="figure" src="data:image/png;base64,{data}">'


def table(df: pd.DataFrame, scroll: bool = False, digits: int = 3) -> str:
    if df is None or df.empty:
        return '<p class="note">(no rows)</p>'
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            out[c] = out[c].map(lambda v: "–" if pd.isna(v) else f"{round(v, digits) + 0.0:.{digits}f}")
    body = out.to_html(index=False, escape=True, na_rep="–", border=0)
    # a wide table scrolls sideways in its own box, never the page (scroll: down too, past 480 px)
    return f'<div class="{"scroll" if scroll else "wide"}">{body}</div>'


def section(title: str, *parts: str) -> str:
    return f"<h2>{html.escape(title)}</h2>\n" + "\n".join(p for p in parts if p)


def note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def case_heading(row, signal: bool = False) -> str:
    """The heading of one case's part of a section: "scenario × group — condition, model[, signal …]"."""
    text = f"{row['scenario']} × {row['group']} — {row['condition']}, {row['model']}"
    if signal:
        text += f", signal {row['signal']}"
    return f"<h3>{html.escape(text)}</h3>"
