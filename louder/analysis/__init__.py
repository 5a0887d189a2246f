"""Analysis of a run folder: DPD per case with its parity null, contrasts, directions, rationales.

``analyze(run_dir)`` reads ``decisions.parquet`` and/or ``probes.parquet`` and writes the tidy
tables (CSV) the report draws from. The statistics themselves are small pure functions in
``louder.analysis.stats``.
"""

from louder.analysis.run import Analysis, analyze, for_report

__all__ = ["Analysis", "analyze", "for_report"]
