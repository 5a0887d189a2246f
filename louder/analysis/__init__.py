"""Analysis of a run folder: DPD per case with its parity null, contrasts, directions, rationales,
and every other measure of the registry (``louder.analysis.registry``; louder's own measures are
the modules of ``louder.analysis.measures``).

``analyze(run_dir)`` reads ``decisions.parquet`` and/or ``probes.parquet`` (and whatever else the
folder holds) and writes the tidy tables (CSV) the report draws from, once per data state and
settings. The statistics themselves are small pure functions in ``louder.analysis.stats``,
``intervals``, ``rates`` and their neighbours.
"""

from louder.analysis.inputs import Analysis, Context, Settings
from louder.analysis.registry import ALL, Column, Finding, Input, Measure, Option, Plot, Show, Table, View, register
from louder.analysis.run import analyze, for_report

__all__ = ["ALL", "Analysis", "Column", "Context", "Finding", "Input", "Measure", "Option", "Plot", "Settings", "Show",
           "Table", "View", "analyze", "for_report", "register"]
