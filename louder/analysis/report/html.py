"""The HTML pieces every report section is made of (``louder.analysis.report.page`` and the measures' sections):
a note paragraph, a figure (SVG, with its alt text and a download link), a table that fits (its key
columns shown, the rest behind a toggle, sortable, numbers printed as the console prints them), a
section with its anchor.

A measure places a figure it declared on the registry with ``a.figure(NAME, …)`` (``registry.Plot``),
which draws it and renders it with ``figure`` here."""

from __future__ import annotations

import base64
import html
import io
import re
import textwrap
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def fit_titles(fig: Figure) -> Figure:
    """Wrap every axes title wider than the figure (a long model spec in a narrow figure) onto more lines,
    so that the picture shows it whole instead of cutting it at the edges; then fix the layout.

    Each pass lays the figure out (its layout engine, constrained layout: what a draw does first, without
    drawing every artist after it) and narrows the titles that stick out. The layout of the last pass is
    the figure's: the layout engine is then taken away, so that saving the figure draws it once
    instead of laying it out again (constrained layout is most of a figure's time)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the renderer the text is measured with
    width = fig.bbox.width
    engine = fig.get_layout_engine()
    for _ in range(8):
        if engine is not None and fig.axes:
            engine.execute(fig)  # the axes' positions; a title's width and its axes' centre need nothing else
        else:
            fig.draw_without_rendering()
        renderer = canvas.get_renderer()
        titles = [(t, t.get_window_extent(renderer)) for ax in fig.axes for t in (ax.title, ax._left_title,
                                                                                   ax._right_title) if t.get_text()]
        wide = [(t, box) for t, box in titles if box.x0 < 0 or box.x1 > width]
        if not wide:
            _no_engine(fig)  # laid out as it stands: savefig keeps these positions
            break
        for title, box in wide:  # refill the whole text, its widest line 10 % narrower than the room it has
            lines = title.get_text().split("\n")
            chars = max(len(line) for line in lines) * 0.9 * min(1.0, _room(title, box, width) / box.width)
            title.set_text(textwrap.fill(" ".join(lines), max(16, int(chars))))
    return fig


def _fix_empty_labels(fig: Figure) -> None:
    """Pin every axis label without text where it stands. matplotlib places a label outside its axis's
    tick labels at each layout pass and draw, measuring every tick label again to do it; a label with no
    text takes no room (a layout leaves it out), so there is nothing to place."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.label.get_text():
                axis.set_label_coords(*axis.label.get_position(), transform=axis.label.get_transform())


def _room(title, box, width: float) -> float:
    """The width a title can take inside the figure, where it is anchored now: a centred title twice the
    distance from its centre to the nearer edge, a left title from its left end to the right edge, a right
    title from the left edge to its right end. Measuring against the figure's whole width left a centred
    title of a side panel sticking out after its wrap, and each further 10 % cost the figure another
    layout (most of its time)."""
    align = title.get_horizontalalignment()
    if align == "left":
        room = width - max(box.x0, 0.0)
    elif align == "right":
        room = min(box.x1, width)
    else:
        centre = (box.x0 + box.x1) / 2
        room = 2 * min(centre, width - centre)
    return room if room > 0 else width


# What ``set_layout_engine(None)`` reads: with these, None is no engine (not the one a matplotlibrc asks for)
NO_ENGINE_RC = {"figure.autolayout": False, "figure.constrained_layout.use": False}


def _no_engine(fig: Figure) -> None:
    """Take the figure's layout engine away. Not ``set_layout_engine("none")``: that leaves a placeholder
    engine, and savefig, seeing an engine, draws the whole figure once more (draw-disabled, measuring every
    text again) before the draw that writes it — half of the time of writing a figure. A user's
    matplotlibrc asking for tight or constrained layout must not put an engine back."""
    import matplotlib

    with matplotlib.rc_context(NO_ENGINE_RC):
        fig.set_layout_engine(None)


# What a figure is drawn under (``page.SectionContext.figure``): each title sits on top of its axes (matplotlib
# otherwise measures every tick label of the y axis at each layout and draw to check whether an axis label
# or an offset above the axes pushes it up — no figure of louder puts either there, and with offsets off
# (a tick reads its whole value, never "+1e3" apart) none can): about a sixth of writing a figure.
FIGURE_RC = {"axes.titley": 1.0, "axes.formatter.useoffset": False}


# Text stays text (<text>, anchored at its start, middle or end as matplotlib laid it out, in DejaVu Sans or
# the reader's nearest sans-serif): a third of the size of text drawn as glyph paths, and searchable and
# selectable in a downloaded figure. Fixed ids: the same figure gives the same bytes.
SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "louder", "svg.image_inline": True}


def svg(fig: Figure) -> bytes:
    """The figure as SVG (vector: crisp at any zoom), titles fitted; the same figure gives the same bytes
    (no date in it, fixed ids)."""
    import matplotlib

    _fix_empty_labels(fig)
    fit_titles(fig)
    buf = io.BytesIO()
    # savefig ends by setting back the engine it found (None, read under the rc of the moment): NO_ENGINE_RC
    # keeps it none, so that writing the figure again does not lay it out anew
    with matplotlib.rc_context({**SVG_RC, **NO_ENGINE_RC}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _size(data: bytes) -> tuple[int, int]:
    """The SVG's width and height in CSS pixels (matplotlib writes them in points)."""
    m = re.search(rb'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"', data[:2000])
    return (round(float(m.group(1)) * 4 / 3), round(float(m.group(2)) * 4 / 3)) if m else (600, 400)


def figure(fig: Figure | None, alt: str, name: str = "figure", download: str | None = None) -> str:
    """One figure of a section: the SVG (an ``<img>``: its alt text is what a screen reader says, and a
    figure's ids never meet another's), with a link that downloads it as ``DOWNLOAD.svg``. ``name``: the
    measure's figure it is (``data-figure``: measure/name). "" without a figure."""
    if fig is None:
        return ""
    data = svg(fig)
    w, h = _size(data)
    src = base64.b64encode(data).decode("ascii")
    file = html.escape(f"{download or name.replace('/', '-')}.svg", quote=True)
    return (f'<figure class="fig" data-figure="{html.escape(name, quote=True)}"><img '
            f'alt="{html.escape(alt, quote=True)}" width="{w}" height="{h}" src="data:image/svg+xml;base64,{src}">'
            f'<figcaption><a class="dl" download="{file}" href="#">download {file}</a></figcaption></figure>')


def no_figure(name: str, why: str) -> str:
    """Where a measure's figure would stand, the reason there is none (``registry.Plot.empty``)."""
    return f'<p class="note nofig" data-figure="{html.escape(name, quote=True)}">No figure: {html.escape(why)}.</p>'


# --- tables --------------------------------------------------------------------------------------------

MAX_SHOWN = 8  # a table without declared key columns shows this many; the rest are behind its toggle
COUNT = re.compile(r"^(n|n_.*|rows|count|calls|waves|agents.*|with_.*|.*_tokens)$")
P_VALUE = re.compile(r"^(p|p_.*|.*_p|.*p_value.*|.*p_holm.*)$")


def cell(column: str, v, digits: int = 3) -> str:
    """A value as the console prints it: "–" for none, yes / no, counts as integers, p-values with 4
    decimals, other numbers with ``digits``."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        if COUNT.match(column) and float(v).is_integer():
            return str(int(v))
        d = 4 if P_VALUE.match(column) else digits
        return f"{round(float(v), d) + 0.0:.{d}f}"  # + 0.0: never "-0.000"
    return str(v)


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def table(df: pd.DataFrame | None, scroll: bool = False, digits: int = 3, key: Iterable[str] | None = None) -> str:
    """``df`` as a table that fits the page: the ``key`` columns (default: the first eight that differ
    between rows) shown, the others behind a toggle ("all N columns"); a column every row shares is said
    once above it; every column sortable (click its heading). ``scroll``: a tall table scrolls in its own
    box past 480 px; a wide one always scrolls sideways in its box, never the page."""
    if df is None or df.empty:
        return '<p class="note">(no rows)</p>'
    cols = [str(c) for c in df.columns]
    text = {c: [cell(c, v, digits) for v in df[c].tolist()] for c in cols}
    shared = [c for c in cols if len(df) > 1 and not _numeric(df[c]) and len(set(text[c])) == 1]
    if key is not None:
        shown = [c for c in key if c in cols and c not in shared]
    else:
        shown = [c for c in cols if c not in shared][:MAX_SHOWN]
    hidden = [c for c in cols if c not in shown]
    numeric = {c for c in cols if _numeric(df[c])}
    order = shown + hidden

    def td(c: str, v: str, tag: str = "td") -> str:
        cls = " ".join(x for x in ("x" if c in hidden else "", "num" if c in numeric else "") if x)
        return f"<{tag}{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>{html.escape(v)}</{tag}>"

    head = "".join(td(c, c, "th") for c in order)
    rows = "".join("<tr>" + "".join(td(c, text[c][i]) for c in order) + "</tr>" for i in range(len(df)))
    once = [c for c in shared if c in hidden and text[c][0] not in ("", "–")]  # an empty column: nothing to say
    said = (f'<p class="shared">all rows: {" · ".join(f"{html.escape(c)} {html.escape(text[c][0])}" for c in once)}'
            "</p>" if once else "")
    toggle = (f'<button class="cols" type="button" aria-expanded="false">all {len(cols)} columns '
              f"({len(hidden)} more)</button>" if hidden else "")
    box = "scroll" if scroll else "wide"
    return (f'<div class="tbl">{said}<div class="{box}"><table class="t"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{toggle}</div>")


# --- sections --------------------------------------------------------------------------------------------

def slug(title: str) -> str:
    """The anchor of a section: its title in lower case, words joined by "-" (``#implicit-vs-explicit``)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


def section(title: str, *parts: str, anchor: str | None = None) -> str:
    """A section of the report: its ``<h2>`` title, its anchor (``slug(title)``) and its parts."""
    body = "\n".join(p for p in parts if p)
    return f'<section class="sec" id="{anchor or slug(title)}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'


def note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def case_heading(row, signal: bool = False) -> str:
    """The heading of one case's part of a section: "scenario × group — condition, model[, signal …]"."""
    text = f"{row['scenario']} × {row['group']} — {row['condition']}, {row['model']}"
    if signal:
        text += f", signal {row['signal']}"
    return f"<h3>{html.escape(text)}</h3>"
