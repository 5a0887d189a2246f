"""What a measure is made of: the declarations a measure author writes, in one place.

A **measure** (``Measure``) declares everything about itself, so that adding one changes no other file:

* what it **reads** (``inputs``: ``Input``): each a selection of the rows of one file of the run
  folder over the run's dimensions — for each dimension (wording, choice order, signal, reasoning
  level, intervention, round, variant, paired respondents, …: ``louder.analysis.engine.select``)
  whether it keeps every level (``whole``), cuts to the reference level (``reference``) or keeps every
  level as part of the case (``keyed``), each dimension it does not name taking its default; ``needs``:
  the inputs without which it writes nothing;
* its **options** (``Option``: name, type, default, one documented line, and the shorthand ``flag``
  of ``louder analyze`` — declared here only), set with ``louder analyze RUN --set
  MEASURE.OPTION=VALUE``, the flag, or ``Run.analyze(options={MEASURE: {OPTION: VALUE}})``;
* the **tables** it writes (``Table`` of ``Column``\\ s, each documented: the docs' table reference is
  generated from them), the measures whose tables it reads (``after``), how it builds them
  (``build``), its **console** tables (``Console`` of ``Cell``\\ s: what ``louder analyze`` prints),
  its report section with its position, and what it leads to (next steps);
* its **figures** (``Figure``: a name, a function of the context that draws a matplotlib figure, and
  its alt text), which its section places with ``a.figure(NAME, …)``: every measure that writes a table
  draws one (``tests/test_figures.py``);
* its **findings** (``Finding``): the sentences the top of the report, ``Run.summary()`` and the end of
  ``louder analyze`` say about the run, each linked to the section it rests on.

``build``, ``section``, ``leads_to``, a console table's ``title`` / ``source`` and a figure's ``draw``
get the measure's **context** (``louder.analysis.engine.inputs.Context``): its declared inputs by name
(``a.decisions``), its options (``a.options.NAME``), the bootstrap draws and seed, the tables built so
far and ``a.missing``. The registry (``louder.analysis.engine.registry``) makes a measure known; this
module knows no measure and no statistic.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from louder.analysis.engine.select import ALL, KEYED, REFERENCE, WHOLE
from louder.errors import LouderError, did_you_mean


def _names(v: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


@dataclass(frozen=True)
class Column:
    """One or more columns of a table with the line that documents them (one row of the reference)."""

    names: tuple[str, ...]  # a pattern such as ``twin_<status>`` stands for a family of columns
    doc: str

    def __init__(self, names: str | tuple[str, ...], doc: str):
        object.__setattr__(self, "names", _names(names))
        object.__setattr__(self, "doc", doc)


@dataclass(frozen=True)
class Table:
    """A table a measure writes (``NAME.csv``): its description and its columns, documented."""

    name: str
    doc: str  # the paragraph under the table's heading in the reference
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> list[str]:
        return [n for c in self.columns for n in c.names]


@dataclass(frozen=True)
class Cell:
    """One column of a console table: ``header``, its text per row (a column name, printed by its
    dtype, or a function of the row: ``louder.analysis.report.console`` has ``number``, ``key`` and
    ``with_interval`` for them), whether it is a number (right-aligned), its priority (1: always shown;
    2: shown when the terminal has room; 3: only with ``--wide`` / ``--columns``) and a style per row
    (a rich style name, or None)."""

    header: str
    value: str | Callable[[Any], str]
    number: bool = False
    priority: int = 2
    style: Callable[[Any], str | None] | None = None
    identity: bool = False  # a key column: printed once under the table when all rows share its value
    name: str | None = None  # what ``--columns`` calls it (default: the column it shows, else the header)

    @property
    def key(self) -> str:
        return self.name or (self.value if isinstance(self.value, str) else self.header)


@dataclass(frozen=True)
class Console:
    """A console table of ``louder analyze``: the rows of ``table`` (or of ``source``, a function of the
    measure's context, for a table the run itself wrote) under ``title`` (a string, or a function of the
    context), with ``columns`` (its ``Cell``\\ s); ``position`` orders the console tables of every measure."""

    table: str
    title: str | Callable[[Any], str]
    columns: tuple[Cell, ...]
    position: float = 50
    source: Callable[[Any], pd.DataFrame | None] | None = None

    def frame(self, a) -> pd.DataFrame | None:
        return self.source(a) if self.source is not None else a.tables.get(self.table)


@dataclass(frozen=True)
class Input:
    """What a measure reads of one file of the run folder (``a.<name>``: its rows; None when the run
    folder has no such file).

    ``file``: the file (default ``<name>.parquet``; a ``.csv`` is read as CSV). ``raw``: the file as
    written. Otherwise every dimension of the run (``louder.analysis.engine.select``) whose column the file
    has is treated as the measure says — ``whole``: every level; ``reference``: the reference level
    only; ``keyed``: every level, as part of the case key (a signal as its own condition, a variant as
    its own scenario) — and each dimension it does not name as that dimension's default (the per-case
    selection: one wording, the reference reasoning level and intervention, round 0 of a network run,
    every choice order, signals and variants keyed, a human study's paired agents left out).
    ``whole=ALL`` keeps every dimension whole but those named in ``reference`` or ``keyed``.
    ``columns``: it reads a file that has these columns only (e.g. ``round``: a network run's
    decisions); of another it reads None, as of a missing file."""

    name: str
    file: str = ""
    whole: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    keyed: tuple[str, ...] = ()
    raw: bool = False
    columns: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "file", self.file or f"{self.name}.parquet")
        for f in ("whole", "reference", "keyed", "columns"):
            object.__setattr__(self, f, _names(getattr(self, f)))

    def mode(self, dimension: str, default: str) -> str:
        """What this input does with ``dimension`` (``default``: the dimension's own)."""
        for mode in (REFERENCE, KEYED, WHOLE):
            if dimension in getattr(self, mode):
                return mode
        return WHOLE if ALL in self.whole else default

    @property
    def selection(self) -> tuple:
        """What makes two inputs of the same file read the same rows (the analysis selects them once)."""
        return (self.file, self.raw, self.whole, self.reference, self.keyed, self.columns)


@dataclass(frozen=True)
class Option:
    """A setting of a measure: its name, type (bool, int, float, str or Path: a file, read as its
    absolute path, whose content is part of the analysis' data state), default and one documented
    line. ``multiple``: a list of values (``--set M.O=A --set M.O=B``, or a list from Python);
    ``choices``: the values it takes; ``flag``: its shorthand, ``--lower-case-words`` — the only place a
    shorthand is declared: ``louder analyze`` and ``louder report`` grow it, ``Run.analyze`` takes its
    keyword form (``lower_case_words=``); ``check``: a value → what is wrong with it and the fix (None:
    fine). ``louder.analysis.engine.options`` reads the values given."""

    name: str
    type: type = str
    default: Any = None
    doc: str = ""
    choices: tuple = ()
    multiple: bool = False
    flag: str | None = None
    check: Callable[[Any], str | None] | None = None

    def __post_init__(self):
        if self.multiple and self.default is None:
            object.__setattr__(self, "default", ())

    @property
    def type_name(self) -> str:
        name = "file" if self.type is Path else self.type.__name__
        return f"{name}, repeatable" if self.multiple else name


@dataclass(frozen=True)
class Figure:
    """A figure of a measure's report section. ``draw(a, *args)``: the measure's context (and what the
    section passes, e.g. one case's row) → a matplotlib figure, or None when there is nothing to draw.
    ``alt``: what the figure shows, in words, for a reader who cannot see it (a string, or a function of
    the same arguments). The section places it with ``a.figure(name, *args)``, which draws it as SVG
    with its alt text and a download link (``louder.analysis.report.html.figure``) — or, when ``draw``
    returns None, says why there is no figure (``empty``). Colours come from
    ``louder.analysis.report.palette``; an interval is drawn with its estimate inside it
    (``louder.analysis.report.draw``)."""

    name: str
    draw: Callable[..., Any]
    alt: str | Callable[..., str]
    empty: str = "nothing in this run to draw"  # why a section has no figure where draw returns None

    def alt_text(self, a, *args) -> str:
        return self.alt(a, *args) if callable(self.alt) else self.alt


@dataclass(frozen=True)
class Finding:
    """One sentence of the run's findings: plain text, the report section it rests on (its title: the
    report links it), and the model it is about (None: the whole run). Findings are said per model, in
    the order of their measures' positions."""

    text: str
    section: str = ""
    model: str | None = None


@dataclass(frozen=True)
class Measure:
    name: str
    summary: str  # one line: what it measures
    tables: tuple[Table, ...]
    build: Callable[[Any], dict[str, pd.DataFrame]]  # the measure's context → its tables
    inputs: tuple[Input, ...] = ()  # what it reads from the run folder
    options: tuple[Option, ...] = ()  # its settings
    needs: tuple[str, ...] = ()  # its inputs that must be there; without one the measure writes nothing
    after: tuple[str, ...] = ()  # measures whose tables ``build`` reads
    console: tuple[Console, ...] = ()  # what `louder analyze` prints
    section: Callable[[Any], str] | None = None  # its HTML section(s) of the report ("" without)
    position: float = 50  # where the section stands in the report (and the measure in the analysis' order)
    leads_to: Callable[[Any], list[str]] | None = None  # the next steps its tables suggest, one line each
    check: Callable[[dict], str | None] | None = None  # its options together → what is wrong (None: fine)
    figures: tuple[Figure, ...] = ()  # the figures its section places (``a.figure(name)``)
    findings: Callable[[Any], list[Finding]] | None = None  # what its tables say, in sentences (the report's top)
    module: str = field(default="", compare=False)  # where it was declared (set by ``register``)

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise LouderError(f"measure {self.name} places figure {name!r}, which it does not declare: add "
                          f"Figure({name!r}, draw, alt) to its figures (its figures: "
                          f"{', '.join(f.name for f in self.figures) or 'none'})")

    def option(self, name: str, where: str = "") -> Option:
        """The option ``name``; an unknown one is one line with "did you mean" (``where``: what it starts with)."""
        for o in self.options:
            if o.name == name:
                return o
        names = [o.name for o in self.options]
        raise LouderError(f"{where + ': ' if where else ''}measure {self.name} has no option {name!r}"
                          f"{did_you_mean(name, names)}; its options: {', '.join(names) or 'none'}")

    def plot(self, name: str) -> Figure:
        warnings.warn("Measure.plot(name) is now Measure.figure(name) (the old name goes in a later release)",
                      FutureWarning, stacklevel=2)
        return self.figure(name)


# ``views``, the earlier name of ``console``: still taken and read, with a warning
_init = Measure.__init__


@functools.wraps(_init)
def _measure_init(self, *args, views=None, **kwargs):
    if views is not None:
        warnings.warn("Measure(views=…) is now Measure(console=…) (the old name goes in a later release)",
                      FutureWarning, stacklevel=2)
        kwargs["console"] = tuple(views)
    _init(self, *args, **kwargs)


def _views(self: Measure) -> tuple[Console, ...]:
    warnings.warn("Measure.views is now Measure.console (the old name goes in a later release)", FutureWarning,
                  stacklevel=2)
    return self.console


Measure.__init__ = _measure_init
Measure.views = property(_views)
