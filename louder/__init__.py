"""louder: find implicit bias in language models by watching what persona-driven agents do.

The Python API (the command line is a thin layer over it):

- ``louder.run(config, out, **overrides) -> Run`` — run or resume an experiment;
- ``louder.open(run_dir) -> Run`` — a run folder: ``run.decisions``, ``run.personas``, ``run.manifest``,
  ``run.analyze() -> dict[str, DataFrame]``, ``run.report() -> Path``;
- ``louder.estimate(config) -> DataFrame`` — the dry run's calls, tokens and cost;
- ``louder.plan(effect, attributes, base_rate) -> Plan`` — agents per attribute for a wanted power.
"""

from louder.api import Run, estimate, open, plan, run
from louder.errors import LouderError

__version__ = "0.1.0"
__all__ = ["LouderError", "Run", "__version__", "estimate", "open", "plan", "run"]
