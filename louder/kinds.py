"""The kinds of run louder knows, in one registry.

A kind declares how a config is recognised as it (``louder run`` kinds), its ``Task`` — whose items
are its plan, the model calls a cold run makes — its output files and manifest, its one-line
summary, and what the command line prints after it. ``louder run``, ``louder probe …``,
``louder batch …``, ``--dry-run`` and the Python API (``louder.run``) all dispatch through here.

A new kind is one module with a function ``config → Task`` (see ``louder.task``) plus one
``register(Kind(...))`` — below for louder's own, or from the module that defines a kind outside
louder (import it before the run). Tasks are named as ``"module:function"`` and imported on use,
so listing the kinds imports no model or simulation library.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.registry import Registry

DEFAULT = "simulation"  # the `louder run` kind of a config no other run kind recognises
RUN_ALIASES = ("simulation", "run")  # batch --kind names for "whatever `louder run` runs with this config"


def _load(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Kind:
    name: str
    summary: str  # one line: what this kind of run does
    command: str  # how it is started: "run" (recognised from the config) or "probe NAME"
    task: str  # "module:function": (config, **options) → louder.task.Task
    files: tuple[str, ...]  # the tables it writes into the run folder, its main table first
    manifest: str = "manifest.json"
    recognise: Callable[[ExperimentConfig], bool] | None = None  # run kinds: does a config run as this kind
    console: str | None = None  # "module:function": (TaskResult) → rich renderables printed after the run
    label: str = "answers"  # what the progress bar counts
    waves: str | None = None  # "module:function": the Task in waves until decided (`sequential:`; issue 20)

    def build(self, config: ExperimentConfig, **options):
        """The kind's ``Task`` (its plan) for ``config``; one-line LouderErrors for what it cannot run."""
        if config.sequential is not None:
            if not self.waves:
                raise LouderError(f"sequential: {self.name} runs have no sequential mode (simulation and population "
                                  "runs do); drop `sequential:` / --until decided for it")
            return _load(self.waves)(config, **options)
        return _load(self.task)(config, **options)

    def show(self, result) -> list:
        return _load(self.console)(result) if self.console else []


KINDS: Registry[Kind] = Registry("kind of run", Kind)


def register(kind: Kind) -> None:
    """Make ``kind`` known (replacing a kind of the same name)."""
    KINDS.register(kind)


def unregister(name: str) -> None:
    KINDS.unregister(name)


def names(command: str | None = None) -> list[str]:
    """Every kind's name (those started by ``command`` — "run" or "probe" — if given), in registry order."""
    return [k.name for k in KINDS.values() if command is None or k.command.split()[0] == command]


def get(name: str) -> Kind:
    return KINDS.get(name)


def for_config(config: ExperimentConfig) -> Kind:
    """The kind ``louder run`` runs with ``config``: the run kind that recognises it, else the default."""
    hits = [k for k in KINDS.values() if k.command == "run" and k.recognise is not None and k.recognise(config)]
    if len(hits) > 1:
        raise LouderError(f"config: it reads as several kinds of run at once ({', '.join(k.name for k in hits)}); "
                          "see `louder kinds` for what sets each")
    return hits[0] if hits else KINDS.get(DEFAULT)


def resolve(name: str, config: ExperimentConfig) -> Kind:
    """``name`` as a kind, where ``simulation``/``run`` mean whatever ``louder run`` runs with ``config``."""
    if name in RUN_ALIASES:
        return for_config(config)
    kind = get(name)
    if kind.command == "run" and kind is not for_config(config):
        raise LouderError(f"--kind {name}: this config runs as a {for_config(config).name} run; use --kind simulation "
                          f"(or --kind {for_config(config).name}) for it")
    return kind


def count_calls(config: ExperimentConfig, kind: str = DEFAULT) -> int:
    """Model calls a cold run of ``kind`` makes with ``config`` (its plan; cached answers not subtracted)."""
    return resolve(kind, config).build(config).planned_calls


# --- louder's own kinds ---------------------------------------------------------------------------
# Recognition: mode: archetype → archetype; a network (agents mode) → network; a population → population;
# otherwise the seed simulation. The tests are exclusive, so the registry order does not matter.

register(Kind(
    "simulation", "persona agents of one attribute each write a persona and decide, per case (the paper's method)",
    "run", "louder.simulation.runner:simulation_task", ("decisions.parquet", "personas.parquet"),
    console="louder.cli_tables:simulation_console", label="agents (persona + decision)",
    waves="louder.simulation.sequential:simulation"))
register(Kind(
    "population", "agents drawn from a population file carry one attribute of every group (policy variants, twins)",
    "run", "louder.simulation.population_run:population_task",
    ("decisions.parquet", "personas.parquet", "population.parquet", "twins.parquet"),
    recognise=lambda c: c.population is not None and c.network is None and c.population.mode == "agents",
    console="louder.cli_tables:population_console", label="agents (persona + decision)",
    waves="louder.simulation.sequential:population"))
register(Kind(
    "network", "single-attribute agents on a social network decide again in rounds of influence, beside a control",
    "run", "louder.simulation.network_run:network_task",
    ("decisions.parquet", "personas.parquet", "network.parquet", "control.parquet"),
    recognise=lambda c: c.network is not None and (c.population is None or c.population.mode == "agents"),
    console="louder.cli_tables:network_console", label="agents × rounds"))
register(Kind(
    "archetype", "one scored call per population cell × neighbour-share bucket × replicate; agents draw from it",
    "run", "louder.simulation.archetype_run:archetype_task",
    ("decisions.parquet", "archetypes.parquet", "control.parquet", "network.parquet"),
    recognise=lambda c: c.population is not None and c.population.mode == "archetype",
    console="louder.cli_tables:archetype_console", label="archetype calls (cell × bucket × replicate)"))
register(Kind(
    "explicit", "the model is asked directly which attribute a person who made the decision has (appendix D)",
    "probe explicit", "louder.probes.explicit:explicit_task", ("probes.parquet",), "probes_manifest.json",
    console="louder.cli_tables:explicit_console", label="explicit probes"))
register(Kind(
    "association", "LLM Word Association Test (Bai et al.): words assigned to two groups",
    "probe association", "louder.probes.bai_runner:association_task", ("association.parquet",),
    "association_manifest.json", console="louder.cli_tables:association_console", label="association test"))
register(Kind(
    "decision", "LLM Relative Decision Test (Bai et al.): which of two people gets which option",
    "probe decision", "louder.probes.bai_runner:decision_task", ("decision_test.parquet",),
    "decision_manifest.json", console="louder.cli_tables:decision_console", label="decision test"))
register(Kind(
    "beliefs", "the model is asked, per attribute, how many out of 100 such people would choose the target (issue 21)",
    "probe beliefs", "louder.probes.beliefs:beliefs_task", ("beliefs.parquet",), "beliefs_manifest.json",
    console="louder.cli_tables:beliefs_console", label="belief answers"))
