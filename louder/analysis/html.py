"""The HTML pieces every report section is made of (``louder.analysis.report`` and the section
modules it draws on): a note paragraph, an embedded PNG figure, a table, a section."""

from __future__ import annotations

import base64
import html
import io

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def png(fig: Figure | None) -> str:
    if fig is None:
        return ""
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
            out[c] = out[c].map(lambda v: "–" if pd.isna(v) else f"{v:.{digits}f}")
    body = out.to_html(index=False, escape=True, na_rep="–", border=0)
    return f'<div class="scroll">{body}</div>' if scroll else body


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
