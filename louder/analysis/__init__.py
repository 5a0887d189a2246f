"""Analysis of a run folder: every measure of the registry that applies — the DPD per case with its
parity null, contrasts, directions, rationales and the rest — written as tidy tables (CSV) once per
data state and settings, and the report drawn from them.

Its four parts, each a subpackage, point down in this order:

- ``measures`` — one module per measure: what it reads, its options, its tables, console tables,
  figures, findings and report section (``louder.analysis.measures.voices``);
- ``report`` — the report page, its findings, and the pieces every section is made of (HTML, drawing
  primitives, the palette);
- ``engine`` — how an analysis runs, knowing no measure and no statistic: the registry and the
  declarations a measure is made of, the views over the run's dimensions, the run folder as the
  measures read it, options, the analysis and its cache;
- ``stats`` — the statistics: small pure functions with their formulas in their docstrings, each
  measure's own beside the shared ones (``louder.analysis.stats.voices`` is the voices measure's).

``analyze(run_dir)`` runs it; what a measure author needs is importable from here.
"""

import warnings

from louder.analysis import moved
from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Option, Table
from louder.analysis.engine.inputs import Analysis, Context, Settings
from louder.analysis.engine.registry import register
from louder.analysis.engine.run import analyze, for_report
from louder.analysis.engine.select import ALL

moved.install()  # the modules' names before this layout still import, with a warning

__all__ = ["ALL", "Analysis", "Cell", "Column", "Console", "Context", "Figure", "Finding", "Input", "Measure", "Option",
           "Settings", "Table", "analyze", "for_report", "register"]

_RENAMED = {"Plot": "Figure", "Show": "Cell", "View": "Console"}  # their names before issue 47


def __getattr__(name: str):
    if name in _RENAMED:
        warnings.warn(f"louder.analysis.{name} is now louder.analysis.{_RENAMED[name]} (the old name goes in a later "
                      "release)", FutureWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
