"""louder: find implicit bias in language models by watching what persona-driven agents do.

The Python API (the command line is a thin layer over it):

- ``louder.run(config, out=None, **overrides) -> Run`` — run or resume an experiment (default folder
  ``runs/<run_id>``, else ``runs/run-<hash of the config>``);
- ``louder.open(run_dir) -> Run`` — a run folder: ``run.table(name)`` (``run.decisions``, ``run.cases``, …),
  ``run.manifest``, ``run.analyze() -> dict[str, DataFrame]`` (computed once per data state),
  ``run.summary()``, ``run.report() -> Path``; what a run lacks comes as ``LouderWarning``;
- ``louder.estimate(config) -> DataFrame`` — the dry run's calls, tokens and cost;
- ``louder.plan(effect, attributes, base_rate) -> Plan`` — agents per attribute for a wanted power;
- ``louder.compare("base=runs/a", "new=runs/b") -> Comparison`` — model against model: ``.table(name)``,
  ``.summary()``, ``.report()``, ``.gate()``.
"""

from louder.api import Comparison, Run, compare, estimate, open, plan, run
from louder.errors import LouderError, LouderWarning
from louder.version import __version__
__all__ = ["Comparison", "LouderError", "LouderWarning", "Run", "__version__", "compare", "estimate", "open", "plan",
           "run"]
