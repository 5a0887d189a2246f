"""The measures louder's analysis knows, in one registry (as ``louder.kinds`` is for kinds of run).

A **measure** declares its name, the tables it writes with their columns (a line of description per
column: the docs' table reference is generated from them), the inputs it needs from the run folder
(``INPUTS``), the measures whose tables it reads (``after``), how it builds its tables, its console
tables for ``louder analyze``, its report section with its position, and what it leads to (the next
step it suggests). ``louder analyze``, ``louder report``, ``louder view``, the Python API
(``Run.table``) and the docs' output reference all read this registry.

A new measure is one module that calls ``register(Measure(...))`` at import: louder's own are the
modules of ``louder.analysis.measures`` (``BUILTIN``, imported when the registry is first read); one
from another package declares an entry point in the group ``louder.measures`` naming its module::

    [project.entry-points."louder.measures"]
    mine = "louder_mine.measure"

or registers from code imported before the analysis runs (docs/how-to/add-a-metric.md).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

if TYPE_CHECKING:
    from louder.analysis.inputs import Analysis

# What a measure can read from the run folder (``Analysis`` attributes of the same name).
INPUTS = {
    "decisions": "decisions.parquet as the per-case tables read it: one wording, every choice order, the reference "
                 "reasoning level, round 0 of a network run, a policy variant as its own scenario",
    "presented": "every wording, choice order and signal (the reference reasoning level)",
    "levels": "every reasoning level (and every wording)",
    "personas": "personas.parquet", "probes": "probes.parquet (the explicit probe)",
    "beliefs": "beliefs.parquet (the beliefs probe)", "association": "association.parquet (Bai et al.)",
    "decision_test": "decision_test.parquet (Bai et al.)", "weat": "weat.parquet",
    "rounds": "every round of a network run", "control": "control.parquet (a network run's rule-based control)",
    "no_influence": "no_influence.parquet (the no-influence arm)", "population": "population.parquet",
    "twins": "twins.parquet", "sequential": "sequential.csv and sequential_waves.csv of a sequential run",
    "interventions": "every prompt intervention of a run that varies them (one wording, the reference reasoning "
                     "level, round 0); every other input holds the decisions and answers under none",
    "intervention_probes": "probes.parquet under every prompt intervention, when the probe varied them",
    "humans": "humans.parquet (a human study's respondents); ``paired``: the case view with their paired agents' rows, "
              "which every other input leaves out",
}
BUILTIN = ("attributes", "cases", "voices", "anchored", "compare", "rationales", "bai", "weat", "network", "robustness",
           "reasoning", "sequential", "population", "archetype", "interventions",
           "sensitivity", "discrimination", "conditional", "persona_audit")  # modules of louder.analysis.measures
GROUP = "louder.measures"  # the entry-point group of measures from other packages


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
    """A number as the console prints it: ``digits`` decimals, "–" for none."""
    return "–" if v is None or pd.isna(v) else f"{v:.{digits}f}"


def with_interval(est: str, low: str, high: str, digits: int = 3) -> Callable[[Any], str]:
    """A cell "estimate [low, high]" of the row's columns ``est``, ``low``, ``high`` ("–" without one)."""
    return lambda r: "–" if pd.isna(r[est]) else (f"{number(r[est], digits)} [{number(r[low], digits)}, "
                                                  f"{number(r[high], digits)}]")


@dataclass(frozen=True)
class View:
    """A console table of ``louder analyze``: the rows of ``table`` (or of ``source``, a function of the
    analysis, for a table the run itself wrote) under ``title`` (a string, or a function of the
    analysis), with ``columns``; ``position`` orders the views of every measure."""

    table: str
    title: str | Callable[[Analysis], str]
    columns: tuple[Show, ...]
    position: float = 50
    source: Callable[[Analysis], pd.DataFrame | None] | None = None

    def frame(self, a: Analysis) -> pd.DataFrame | None:
        return self.source(a) if self.source is not None else a.tables.get(self.table)


@dataclass(frozen=True)
class Measure:
    name: str
    summary: str  # one line: what it measures
    tables: tuple[Table, ...]
    build: Callable[[Analysis], dict[str, pd.DataFrame]]  # the analysis so far (inputs, settings, earlier tables)
    needs: tuple[str, ...] = ()  # INPUTS that must be there; without one the measure writes nothing
    after: tuple[str, ...] = ()  # measures whose tables ``build`` reads
    views: tuple[View, ...] = ()  # what `louder analyze` prints
    section: Callable[[Analysis], str] | None = None  # its HTML section(s) of the report ("" without)
    position: float = 50  # where the section stands in the report
    leads_to: Callable[[Analysis], list[str]] | None = None  # the next steps its tables suggest, one line each

    def applies(self, a: Analysis) -> bool:
        """Every input it needs is in the run folder."""
        return all(getattr(a, n, None) is not None for n in self.needs)


_MEASURES: dict[str, Measure] = {}
_RANK: dict[str, tuple[int, int]] = {}  # louder's own in BUILTIN order (whichever imports first), then the others


def _rank(measure: Measure) -> tuple[int, int]:
    module = getattr(measure.build, "__module__", "") or ""
    tail = module.removeprefix("louder.analysis.measures.")
    return (BUILTIN.index(tail) if module != tail and tail in BUILTIN else len(BUILTIN), len(_RANK))


def register(measure: Measure) -> Measure:
    """Make ``measure`` known (replacing one of the same name). Its tables must not be another
    measure's, its inputs must be ``INPUTS``."""
    from louder.errors import LouderError

    unknown = [n for n in measure.needs if n not in INPUTS]
    if unknown:
        raise LouderError(f"measure {measure.name}: needs {', '.join(unknown)}, which no run folder has; inputs are "
                          f"{', '.join(INPUTS)}")
    for other in _MEASURES.values():
        taken = {t.name for t in other.tables} & {t.name for t in measure.tables}
        if taken and other.name != measure.name:
            raise LouderError(f"measure {measure.name}: table {', '.join(sorted(taken))} is already written by measure "
                              f"{other.name}; give it another name")
    _MEASURES[measure.name] = measure
    _RANK.setdefault(measure.name, _rank(measure))
    return measure


def unregister(name: str) -> None:
    _MEASURES.pop(name, None)
    _RANK.pop(name, None)


@cache
def _loaded() -> None:
    """louder's own measures, then those of installed packages (entry points), once."""
    for module in BUILTIN:
        importlib.import_module(f"louder.analysis.measures.{module}")
    for ep in importlib.metadata.entry_points(group=GROUP):
        _load(ep)


def _load(ep: importlib.metadata.EntryPoint) -> None:
    from louder.errors import load_entry_point

    obj = load_entry_point(ep, "measure")
    if isinstance(obj, Measure):  # an entry point may name the Measure itself
        register(obj)


def measures() -> list[Measure]:
    """Every measure, in the order the analysis runs them: registration order, each after the
    measures it reads (``after``)."""
    from louder.errors import LouderError

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

    for m in sorted(_MEASURES.values(), key=lambda m: _RANK[m.name]):
        visit(m)
    return order


def get(name: str) -> Measure:
    from louder.errors import LouderError

    _loaded()
    if name not in _MEASURES:
        raise LouderError(f"unknown measure {name!r}; one of {', '.join(_MEASURES)}")
    return _MEASURES[name]


def tables() -> dict[str, Table]:
    """Every table any measure writes, by name, in analysis order."""
    return {t.name: t for m in measures() for t in m.tables}


def owner(table: str) -> Measure | None:
    """The measure that writes ``table``."""
    return next((m for m in measures() if any(t.name == table for t in m.tables)), None)
