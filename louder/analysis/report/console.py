"""What an analysis shows in the terminal: every measure's console tables (``Console`` of ``Cell``\\ s,
``louder.analysis.engine.declarations``) as rich tables, and the helpers a measure writes its cells with
(``number``, ``key``, ``with_interval``). ``louder analyze`` prints them; the command line's own tables
of a run (``louder.cli_tables``) use the same renderer, ``frame_table``.

The renderer shows the key columns at the terminal's width — a column every row shares (one model, one
condition) is said once under the table instead, a column that is empty in every row is left out, and
columns of priority 2 are dropped from the right until the table fits; priority 3 only with ``--wide``
or ``--columns``. Numbers are right-aligned; cell text is never read as rich markup (a scenario "x
[mandatory]" keeps its brackets).
"""

from __future__ import annotations

import io
from typing import Any, Callable

import pandas as pd
from rich.console import Console as Terminal
from rich.table import Table
from rich.text import Text

from louder.analysis.engine import registry
from louder.analysis.engine.declarations import Cell, Console
from louder.errors import LouderError

EMPTY = ("", "–")
HINT = "louder analyze --wide, or --columns NAME,…"
MIN_TEXT = 12  # a text column squeezed to fit still keeps this many characters (then it folds)


def number(v, digits: int = 3) -> str:
    """A number as the console prints it: ``digits`` decimals, "–" for none, and never "-0.000" (a value
    that rounds to zero prints as 0, whichever side of it floating point left it)."""
    return "–" if v is None or pd.isna(v) else f"{round(v, digits) + 0.0:.{digits}f}"


def key(name: str) -> Cell:
    """A key column of a console table (the case's model, condition, scenario, …): always shown,
    and said once under the table when every row shares its value."""
    return Cell(name, name, priority=1, identity=True)


def with_interval(est: str, low: str, high: str, digits: int = 3) -> Callable[[Any], str]:
    """A cell "estimate [low, high]" of the row's columns ``est``, ``low``, ``high`` ("–" without one)."""
    return lambda r: "–" if pd.isna(r[est]) else (f"{number(r[est], digits)} [{number(r[low], digits)}, "
                                                  f"{number(r[high], digits)}]")


def _text(cell: Cell, row) -> str:
    if isinstance(cell.value, str):
        v = row[cell.value]
        if isinstance(v, float):
            return "–" if pd.isna(v) else f"{v:.3f}"
        return "–" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)
    return cell.value(row)


def _build(title, shown: list[Cell], texts: dict, styles: dict, n: int, caption: str | None) -> Table:
    table = Table(title=title, caption=caption, caption_justify="left")
    for c in shown:
        widest = max([len(c.header), *map(len, texts[c])])
        table.add_column(c.header, justify="right" if c.number else "left", no_wrap=c.number, overflow="fold",
                         min_width=None if c.number else min(widest, MIN_TEXT))
    for i in range(n):
        table.add_row(*[Text(texts[c][i], style=styles[c][i] or "") for c in shown])
    return table


def _fits(table: Table, width: int) -> bool:
    """The table's natural width (measured without a limit) is within ``width``."""
    return Terminal(width=100_000, file=io.StringIO()).measure(table).maximum <= width


def pick(cells: list[Cell], names: list[str]) -> list[Cell]:
    """The ``cells`` that ``--columns`` names (by name or header), in the order named."""
    by = {}
    for c in cells:
        by.setdefault(c.key.lower(), c)
        by.setdefault(c.header.lower(), c)
    return list(dict.fromkeys(by[n.lower()] for n in names if n.lower() in by))


def frame_table(df: pd.DataFrame, title, cells: tuple[Cell, ...] | list[Cell], width: int | None = None,
                wide: bool = False, columns: list[str] | None = None, hint: str | None = HINT) -> Table:
    """``df`` as a rich table of ``cells`` at ``width`` (module docstring); ``columns`` names the columns
    to show instead (``--columns``), ``wide`` shows every column."""
    rows = [r for _, r in df.iterrows()]
    cells = [c for c in cells if not isinstance(c.value, str) or c.value in df.columns]
    texts = {c: [_text(c, r) for r in rows] for c in cells}
    styles = {c: [c.style(r) if c.style else None for r in rows] for c in cells}
    named = pick(cells, columns) if columns else []
    # a key column every row shares is said once, under the table; a column empty in every row is left out
    shared = [c for c in cells if c.identity and rows and not named and len(set(texts[c])) == 1]
    blank = [c for c in cells if set(texts[c]) <= set(EMPTY)]
    said = [f"{c.header} {texts[c][0]}" for c in shared]
    if named:
        chosen = named
    else:
        chosen = [c for c in cells if c not in shared and c not in blank and (wide or c.priority < 3)]
    hidden = [c for c in cells if c not in chosen and c not in shared and c not in blank]

    def caption(hide: list[Cell]) -> str | None:
        parts = []
        if said:
            parts.append("all rows: " + " · ".join(said))
        if hide and hint:
            hide = [c for c in cells if c in hide]  # in the table's order
            parts.append(f"{len(hide)} more column(s): {', '.join(c.key for c in hide)} ({hint})")
        return "\n".join(parts) or None

    table = _build(title, chosen, texts, styles, len(rows), caption(hidden))
    if width and not (wide or named):
        optional = [c for c in chosen if c.priority == 2]
        while not _fits(table, width) and optional:
            drop = optional.pop()  # the rightmost optional column first
            chosen.remove(drop)
            hidden.append(drop)
            table = _build(title, chosen, texts, styles, len(rows), caption(hidden))
    return table


def console_table(console: Console, ctx, width: int | None = None, wide: bool = False,
                  columns: list[str] | None = None) -> Table | None:
    """A measure's console table, of the measure's context ``ctx`` (None when it has no rows)."""
    df = console.frame(ctx)
    if df is None or df.empty:
        return None
    title = console.title(ctx) if callable(console.title) else console.title
    return frame_table(df, title, console.columns, width, wide, columns)


def analysis_consoles(a) -> list[tuple[Console, object]]:
    """Every measure's console tables that apply to the analysis ``a``, in their order, each with its
    measure's context."""
    return sorted(((c, a.context(m)) for m in registry.measures() if a.applies(m) for c in m.console),
                  key=lambda cc: cc[0].position)


def analysis_tables(a, width: int | None = None, wide: bool = False, columns: list[str] | None = None) -> list[Table]:
    """What `louder analyze` prints, in order (a population run leads with its per-group DPDs and its
    regression; its cases table, the joint label, comes after them, titled as the intersections it is)."""
    pairs = analysis_consoles(a)
    consoles = [c for c, _ in pairs]
    if columns:
        known = {k for c in consoles for cell in c.columns for k in (cell.key.lower(), cell.header.lower())}
        unknown = [c for c in columns if c.lower() not in known]
        if unknown:
            names = sorted({cell.key for c in consoles for cell in c.columns})
            raise LouderError(f"--columns {','.join(unknown)}: no such column in these tables; use some of "
                              f"{', '.join(names)}")
    return [t for c, ctx in pairs if (t := console_table(c, ctx, width, wide, columns)) is not None]
