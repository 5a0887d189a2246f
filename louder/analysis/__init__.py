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

from louder.analysis import moved
from louder.analysis.engine.inputs import Analysis, Context, Settings
from louder.analysis.engine.registry import (
           ALL,
           Column,
           Finding,
           Input,
           Measure,
           Option,
           Plot,
           Show,
           Table,
           View,
           register,
)
from louder.analysis.engine.run import analyze, for_report

moved.install()  # the modules' names before this layout still import, with a warning

__all__ = ["ALL", "Analysis", "Column", "Context", "Finding", "Input", "Measure", "Option", "Plot", "Settings", "Show",
           "Table", "View", "analyze", "for_report", "register"]
