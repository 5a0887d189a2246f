"""The measures louder's analysis knows, in one registry (as ``louder.kinds`` is for kinds of run).

A **measure** declares everything about itself, so that adding one changes no other file:

* what it **reads** (``inputs``): each a view of a file of the run folder, selected over the run's
  dimensions — for each dimension (wording, choice order, signal, reasoning level, intervention,
  round, variant, paired respondents, …: ``louder.analysis.engine.select``) whether the view keeps every
  level (``whole``), cuts to the reference level (``reference``) or keeps every level as part of the
  case (``keyed``), each dimension it does not name taking its default; ``needs``: the inputs without
  which it writes nothing;
* its **options** (``Option``: name, type, default, one documented line), set with ``louder analyze
  RUN --set MEASURE.OPTION=VALUE`` or ``Run.analyze(options={MEASURE: {OPTION: VALUE}})``;
* the **tables** it writes, each column documented (the docs' table reference is generated from
  them), the measures whose tables it reads (``after``), how it builds them (``build``), its console
  tables (``views``), its report section with its position, and what it leads to (next steps);
* its **figures** (``Plot``: a name, a function of the context that draws a matplotlib figure, and
  its alt text), which its section places with ``a.figure(NAME, …)``: every measure that writes a
  table draws it (``tests/test_figures.py``);
* its **findings** (``Finding``): the sentences the top of the report, ``Run.summary()`` and the end of
  ``louder analyze`` say about the run, each linked to the section it rests on.

``build``, ``section``, ``leads_to`` and a view's ``title`` / ``source`` get the measure's **context**
(``louder.analysis.engine.inputs.Context``): its declared inputs by name (``a.decisions``), its options
(``a.options.NAME``), the bootstrap draws and seed, the tables built so far and ``a.missing``.

louder's own measures are the modules of ``louder.analysis.measures``, found there (each calls
``register(Measure(...))`` at import); one from another package declares an entry point in the group
``louder.measures`` naming its module::

    [project.entry-points."louder.measures"]
    mine = "louder_mine.measure"

or registers from code imported before the analysis runs (docs/how-to/add-a-metric.md). This module
knows no measure and no statistic.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from louder.analysis.engine import select
from louder.analysis.engine.select import ALL, KEYED, REFERENCE, WHOLE
from louder.errors import LouderError, did_you_mean

FLAG = re.compile(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*")  # an option's shorthand flag: --lower-case-words
GROUP = "louder.measures"  # the entry-point group of measures from other packages
BUILTIN_PACKAGE = "louder.analysis.measures"


@dataclass(frozen=True)
class Column:
    """One or more columns of a table with the line that documents them (one row of the reference)."""

    names: tuple[str, ...]  # a pattern such as ``twin_<status>`` stands for a family of columns
    doc: str

    def __init__(self, names: str | tuple[str, ...], doc: str):
        object.__setattr__(self, "names", (names,) if isinstance(names, str) else tuple(names))
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
class Show:
    """One column of a console table: ``header``, its text per row (a column name, printed by its
    dtype, or a function of the row), whether it is a number (right-aligned), its priority (1: always
    shown; 2: shown when the terminal has room; 3: only with ``--wide`` / ``--columns``) and a style
    per row (a rich style name, or None)."""

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


def key(name: str) -> Show:
    """A key column of a console table (the case's model, condition, scenario, …): always shown,
    and said once under the table when every row shares its value."""
    return Show(name, name, priority=1, identity=True)


def number(v, digits: int = 3) -> str:
    """A number as the console prints it: ``digits`` decimals, "–" for none, and never "-0.000" (a value
    that rounds to zero prints as 0, whichever side of it floating point left it)."""
    return "–" if v is None or pd.isna(v) else f"{round(v, digits) + 0.0:.{digits}f}"


def with_interval(est: str, low: str, high: str, digits: int = 3) -> Callable[[Any], str]:
    """A cell "estimate [low, high]" of the row's columns ``est``, ``low``, ``high`` ("–" without one)."""
    return lambda r: "–" if pd.isna(r[est]) else (f"{number(r[est], digits)} [{number(r[low], digits)}, "
                                                  f"{number(r[high], digits)}]")


@dataclass(frozen=True)
class View:
    """A console table of ``louder analyze``: the rows of ``table`` (or of ``source``, a function of the
    measure's context, for a table the run itself wrote) under ``title`` (a string, or a function of the
    context), with ``columns``; ``position`` orders the views of every measure."""

    table: str
    title: str | Callable[[Any], str]
    columns: tuple[Show, ...]
    position: float = 50
    source: Callable[[Any], pd.DataFrame | None] | None = None

    def frame(self, a) -> pd.DataFrame | None:
        return self.source(a) if self.source is not None else a.tables.get(self.table)


def _names(v: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(v)


@dataclass(frozen=True)
class Input:
    """A view of one file of the run folder, as a measure reads it (``a.<name>``; None when the run
    folder has no such file).

    ``file``: the file (default ``<name>.parquet``; a ``.csv`` is read as CSV). ``raw``: the file as
    written. Otherwise every dimension of the run (``louder.analysis.engine.select``) whose column the file
    has is treated as the measure says — ``whole``: every level; ``reference``: the reference level
    only; ``keyed``: every level, as part of the case key (a signal as its own condition, a variant as
    its own scenario) — and each dimension it does not name as that dimension's default (the per-case
    view: one wording, the reference reasoning level and intervention, round 0 of a network run, every
    choice order, signals and variants keyed, a human study's paired agents left out).
    ``whole=ALL`` keeps every dimension whole but those named in ``reference`` or ``keyed``.
    ``columns``: the view is of a file that has these columns only (e.g. ``round``: a network run's
    decisions); of another it is None, as of a missing file."""

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
        """What this view does with ``dimension`` (``default``: the dimension's own)."""
        for mode in (REFERENCE, KEYED, WHOLE):
            if dimension in getattr(self, mode):
                return mode
        return WHOLE if ALL in self.whole else default

    @property
    def selection(self) -> tuple:
        """What makes two views of the same file the same view (the analysis computes each once)."""
        return (self.file, self.raw, self.whole, self.reference, self.keyed, self.columns)


_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


@dataclass(frozen=True)
class Option:
    """A setting of a measure: its name, type (bool, int, float, str or Path: a file, read as its
    absolute path, whose content is part of the analysis' data state), default and one documented
    line. ``multiple``: a list of values (``--set M.O=A --set M.O=B``, or a list from Python);
    ``choices``: the values it takes; ``flag``: the ``louder analyze`` flag that is its shorthand;
    ``check``: a value → what is wrong with it and the fix (None: fine)."""

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

    def parse(self, text: str, where: str) -> Any:
        """One value from the text of ``--set`` (``where``: how the message names the option)."""
        if self.type is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise LouderError(f"{where}={text}: not a yes/no value; write true or false")
        if self.type in (int, float):
            try:
                return self.type(text)
            except ValueError:
                raise LouderError(f"{where}={text}: not a number ({self.type.__name__}); write e.g. "
                                  f"{where}={self.type(1)}") from None
        return text

    def one(self, value: Any, where: str) -> Any:
        """One value from Python or from ``parse``, checked (a file as its absolute path)."""
        if isinstance(value, str) and self.type is not str:
            value = self.parse(value, where)
        if self.type is Path:
            value = str(Path(value).resolve())
        elif self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise LouderError(f"{where}={value!r}: expected {self.type_name}")
        if self.choices and value not in self.choices:
            raise LouderError(f"{where}={value}: use one of {', '.join(map(str, self.choices))}"
                              f"{did_you_mean(str(value), [str(c) for c in self.choices])}")
        if self.check is not None and (problem := self.check(value)):
            raise LouderError(f"{where}={value}: {problem}")
        return value

    def value(self, given: Any, where: str) -> Any:
        """The option's value from what was given (a list for ``multiple``, without repeats)."""
        if self.multiple:
            values = [given] if isinstance(given, (str, Path)) or not hasattr(given, "__iter__") else list(given)
            return tuple(dict.fromkeys(self.one(v, where) for v in values))
        return self.one(given, where)


@dataclass(frozen=True)
class Plot:
    """A figure of a measure's report section. ``draw(a, *args)``: the measure's context (and what the
    section passes, e.g. one case's row) → a matplotlib ``Figure``, or None when there is nothing to draw.
    ``alt``: what the figure shows, in words, for a reader who cannot see it (a string, or a function of
    the same arguments). The section places it with ``a.figure(name, *args)``, which draws it as SVG
    with its alt text and a download link (``louder.analysis.report.html.figure``) — or, when ``draw`` returns
    None, says why there is no figure (``empty``). Colours come from ``louder.analysis.report.palette``; an
    interval is drawn with its estimate inside it."""

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
    views: tuple[View, ...] = ()  # what `louder analyze` prints
    section: Callable[[Any], str] | None = None  # its HTML section(s) of the report ("" without)
    position: float = 50  # where the section stands in the report (and the measure in the analysis' order)
    leads_to: Callable[[Any], list[str]] | None = None  # the next steps its tables suggest, one line each
    check: Callable[[dict], str | None] | None = None  # its options together → what is wrong (None: fine)
    figures: tuple[Plot, ...] = ()  # the figures its section places (``a.figure(name)``)
    findings: Callable[[Any], list[Finding]] | None = None  # what its tables say, in sentences (the report's top)
    module: str = field(default="", compare=False)  # where it was declared (set by ``register``)

    def input(self, name: str) -> Input | None:
        return next((i for i in self.inputs if i.name == name), None)

    def plot(self, name: str) -> Plot:
        for p in self.figures:
            if p.name == name:
                return p
        raise LouderError(f"measure {self.name} places figure {name!r}, which it does not declare: add "
                          f"Plot({name!r}, draw, alt) to its figures (its figures: "
                          f"{', '.join(p.name for p in self.figures) or 'none'})")

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        raise LouderError(f"measure {self.name} has no option {name!r}"
                          f"{did_you_mean(name, [o.name for o in self.options])}; its options: "
                          f"{', '.join(o.name for o in self.options) or 'none'}")


_MEASURES: dict[str, Measure] = {}


def register(measure: Measure) -> Measure:
    """Make ``measure`` known (replacing one of the same name). Its tables must not be another
    measure's, its inputs must select dimensions that exist and its ``needs`` must be its inputs."""
    m = measure
    names = [i.name for i in m.inputs]
    if len(set(names)) < len(names):
        raise LouderError(f"measure {m.name}: two inputs are named {next(n for n in names if names.count(n) > 1)!r}")
    unknown = [n for n in m.needs if n not in names]
    if unknown:
        raise LouderError(f"measure {m.name}: needs {', '.join(unknown)}, which it does not declare; add "
                          f"Input({unknown[0]!r}) to its inputs (its inputs: {', '.join(names) or 'none'})")
    for i in m.inputs:
        if problem := select.check(i.name, i.whole, i.reference, i.keyed):
            raise LouderError(f"measure {m.name}: {problem}")
    plots = [p.name for p in m.figures]
    if len(set(plots)) < len(plots):
        raise LouderError(f"measure {m.name}: two figures are named {next(n for n in plots if plots.count(n) > 1)!r}")
    opts = [o.name for o in m.options]
    if len(set(opts)) < len(opts):
        raise LouderError(f"measure {m.name}: two options are named {next(n for n in opts if opts.count(n) > 1)!r}")
    for o in m.options:
        if o.flag is not None and not FLAG.fullmatch(o.flag):
            raise LouderError(f"measure {m.name}: option {o.name}'s flag {o.flag!r} is not a flag; write it as "
                              "--lower-case-words (its keyword form in Python: lower_case_words)")
    for other in _MEASURES.values():
        if other.name == m.name:
            continue
        taken = {t.name for t in other.tables} & {t.name for t in m.tables}
        if taken:
            raise LouderError(f"measure {m.name}: table {', '.join(sorted(taken))} is already written by measure "
                              f"{other.name}; give it another name")
        for o in m.options:  # a flag several measures declare sets each of their options: one value for all
            same = next((p for p in other.options if o.flag and p.flag == o.flag), None)
            if same is not None and (same.type, same.multiple) != (o.type, o.multiple):
                raise LouderError(f"measure {m.name}: option {o.name}'s flag {o.flag} is also {other.name}."
                                  f"{same.name}'s, which takes another kind of value ({same.type_name}); give it "
                                  "another flag")
    module = getattr(m.build, "__module__", "") or ""
    _MEASURES[m.name] = Measure(**{**m.__dict__, "module": m.module or module})
    return _MEASURES[m.name]


def unregister(name: str) -> None:
    _MEASURES.pop(name, None)


@cache
def _loaded() -> None:
    """louder's own measures (every module of ``louder.analysis.measures``), then those of installed
    packages (entry points), once."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}")
    for ep in importlib.metadata.entry_points(group=GROUP):
        _load(ep)


def _load(ep: importlib.metadata.EntryPoint) -> None:
    from louder.errors import load_entry_point

    obj = load_entry_point(ep, "measure")
    if isinstance(obj, Measure):  # an entry point may name the Measure itself
        register(obj)


def outside(m: Measure) -> bool:
    """A measure of another package (not one of louder's own)."""
    return not m.module.startswith(BUILTIN_PACKAGE + ".")


def measures() -> list[Measure]:
    """Every measure, in the order the analysis runs them: by report position (then name), each after
    the measures it reads (``after``)."""
    _loaded()
    order: list[Measure] = []
    visiting: set[str] = set()

    def visit(m: Measure) -> None:
        if m in order:
            return
        if m.name in visiting:
            raise LouderError(f"measure {m.name}: its `after` measures read each other in a circle")
        visiting.add(m.name)
        for dep in m.after:
            if dep not in _MEASURES:
                raise LouderError(f"measure {m.name}: reads the tables of measure {dep!r}, which is not registered")
            visit(_MEASURES[dep])
        order.append(m)

    for m in sorted(_MEASURES.values(), key=lambda m: (m.position, m.name)):
        visit(m)
    return order


def before(m: Measure) -> set[str]:
    """The measures ``m`` runs after, and those they run after, …: whose tables its ``build`` may read."""
    out: set[str] = set()
    todo = list(m.after)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(get(name).after)
    return out


def get(name: str) -> Measure:
    _loaded()
    if name not in _MEASURES:
        raise LouderError(f"unknown measure {name!r}{did_you_mean(name, list(_MEASURES))}; measures: "
                          f"{', '.join(sorted(_MEASURES))} (`louder measures` lists them)")
    return _MEASURES[name]


def tables() -> dict[str, Table]:
    """Every table any measure writes, by name, in analysis order."""
    return {t.name: t for m in measures() for t in m.tables}


def owner(table: str) -> Measure | None:
    """The measure that writes ``table``."""
    return next((m for m in measures() if any(t.name == table for t in m.tables)), None)
