"""The measures louder's analysis knows, in one registry (as ``louder.kinds`` is for kinds of run):
``register(Measure(...))`` makes one known (``louder.analysis.engine.declarations`` holds what a measure
declares), ``measures()`` lists them in the order the analysis runs them, ``get``, ``tables`` and
``owner`` find them.

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
import warnings
from functools import cache

from louder.analysis.engine import select
from louder.analysis.engine.declarations import Measure, Table
from louder.errors import LouderError
from louder.registry import Registry

FLAG = re.compile(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*")  # an option's shorthand flag: --lower-case-words
GROUP = "louder.measures"  # the entry-point group of measures from other packages
BUILTIN_PACKAGE = "louder.analysis.measures"
MEASURES: Registry[Measure] = Registry("measure", Measure, group=GROUP, unknown="no",
                                       hint="`louder measures` lists the measures and their options")


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
    for other in MEASURES.values():
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
    return MEASURES.register(Measure(**{**m.__dict__, "module": m.module or module}))


def unregister(name: str) -> None:
    MEASURES.unregister(name)


@cache
def _loaded() -> None:
    """louder's own measures (every module of ``louder.analysis.measures``), then those of installed
    packages (entry points), once."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}")
    for ep in MEASURES.entry_points().values():
        _load(ep)


def _load(ep: importlib.metadata.EntryPoint) -> None:
    obj = MEASURES.load(ep)  # its module's import registers it
    if isinstance(obj, Measure):  # an entry point may name the Measure itself: registered with its checks
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
            if dep not in MEASURES:
                raise LouderError(f"measure {m.name}: reads the tables of measure {dep!r}, which is not registered")
            visit(MEASURES.get(dep))
        order.append(m)

    for m in sorted(MEASURES.values(), key=lambda m: (m.position, m.name)):
        visit(m)
    return order


def runs_after(m: Measure) -> set[str]:
    """The measures ``m`` runs after, and those they run after, …: whose tables its ``build`` may read."""
    out: set[str] = set()
    todo = list(m.after)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(get(name).after)
    return out


def get(name: str, where: str = "") -> Measure:
    """The measure ``name``; an unknown one is one line with "did you mean" (``where``: what it starts with)."""
    _loaded()
    return MEASURES.get(name, where)


def tables() -> dict[str, Table]:
    """Every table any measure writes, by name, in analysis order."""
    return {t.name: t for m in measures() for t in m.tables}


def owner(table: str) -> Measure | None:
    """The measure that writes ``table``."""
    return next((m for m in measures() if any(t.name == table for t in m.tables)), None)


# names of this module before the declarations had a module of their own (issue 47): still importable
# from here, with a warning naming their new place
_MOVED = {**{n: "louder.analysis.engine.declarations" for n in ("Column", "Input", "Option", "Finding")},
          "ALL": "louder.analysis.engine.select",
          **{n: "louder.analysis.report.console" for n in ("key", "number", "with_interval")}}
_RENAMED = {"Plot": ("louder.analysis.engine.declarations", "Figure"),
            "Show": ("louder.analysis.engine.declarations", "Cell"),
            "View": ("louder.analysis.engine.declarations", "Console"),
            "before": (__name__, "runs_after")}


def __getattr__(name: str):
    if name in _MOVED or name in _RENAMED:
        module, new = _RENAMED.get(name) or (_MOVED[name], name)
        warnings.warn(f"{__name__}.{name} is now {module}.{new} (the old name goes in a later release)",
                      FutureWarning, stacklevel=2)
        return getattr(importlib.import_module(module), new)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
