"""Run an experiment: models × scenarios × groups × conditions × agents, and write its data.

Outputs (the contract other parts read): ``decisions.parquet``, ``personas.parquet`` and
``manifest.json`` in the output folder. Every model answer is committed to the SQLite cache as it
arrives, so a run stopped at any point resumes where it stopped when started again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from louder import dimensions, humans, kinds
from louder.config import ExperimentConfig
from louder.dimensions import CROSSED, OWN
from louder.prompts import Prompts
from louder.scenarios import group_ids, load_group, scenario_ids
from louder.simulation.case import arms, labelled, seed_case_calls, simulate_case
from louder.status import status_block, status_by
from louder.task import Item, Task, execute
from louder.types import CASE_KEYS, DECISION_COLUMNS, PERSONA_COLUMNS, typed


@dataclass
class RunResult:
    out: Path
    decisions: pd.DataFrame
    personas: pd.DataFrame
    manifest: dict = field(default_factory=dict)


def plan_cases(config: ExperimentConfig) -> list[tuple[str, str, str, str]]:
    """(model, condition, scenario id, group id) for every case, in run order: a scenario or group
    named by path is keyed by its id, as the probes key it (``load_scenario(id, config.simulation.scenarios)``
    finds its file again)."""
    sim = config.simulation
    return [(m.label, c, s, g) for m in config.models for c in sim.conditions for s in scenario_ids(sim.scenarios)
            for g in group_ids(sim.groups)]


def count_calls(config: ExperimentConfig) -> int:
    """Model calls a cold run makes (two per step on the completion path, for non-name steps); a
    sequential run's at its budget (the registry builds its task in waves)."""
    return kinds.count_calls(config, "simulation")


def simulation_task(config: ExperimentConfig) -> Task:
    """The simulation as a ``Task``: one item per (model, condition, scenario, group) case, every case
    at its full N (a sequential run's task in waves is ``louder.simulation.sequential.simulation``)."""
    prompts = Prompts()
    sim = config.simulation
    items = [Item(c, (sim.agents * len(load_group(c[3], sim.groups).attributes) + len(humans.paired(config, *c[2:])))
                  * arms(config, c[2]), seed_case_calls(config, c, prompts)) for c in plan_cases(config)]
    study = humans.table(config)  # a human study: its respondents, written beside the agents (humans.parquet)
    unlabelled = humans.unlabelled_table(config)  # … and its unlabelled profiles (unlabelled.parquet)

    def run_case(ctx, case_key: tuple[str, str, str, str], tick):
        return simulate_case(config, ctx.sessions[case_key[0]], ctx.run_id, case_key, tick)

    def on_ray(ctx, cases, tick):
        from louder.simulation.ray_executor import run_cases_on_ray

        return run_cases_on_ray(config, ctx, cases, ctx.retry_errors, tick)

    def tables(ctx, results):
        label = labelled(config.simulation.variants)
        # the dimensions key the rows only when a run varies them (default: main's order exactly)
        signal = dimensions.labelled(config, OWN)
        wording = dimensions.labelled(config, CROSSED)
        paired = [] if study is None else ["respondent"] + (["grounding"] if config.simulation.ground else [])
        columns = DECISION_COLUMNS + dimensions.extra_columns() + (["variant"] if label else []) + (
            ["wave"] if "wave" in results[0].decisions else []) + paired
        dkeys = CASE_KEYS[:3] + (["variant"] if label else []) + CASE_KEYS[3:] + signal + wording + ["agent_id"]
        decisions = typed(pd.concat([r.decisions for r in results], ignore_index=True)[columns])
        decisions = decisions.sort_values(dkeys, ignore_index=True)
        personas = pd.DataFrame([p for r in results for p in r.personas], columns=PERSONA_COLUMNS + signal + paired)
        if paired:
            personas = personas.astype({c: "string" for c in paired})
        personas = personas.sort_values(CASE_KEYS + signal + ["agent_id"], ignore_index=True)
        out = {"decisions.parquet": decisions, "personas.parquet": personas}
        if study is not None:
            out["humans.parquet"] = study
        if unlabelled is not None:
            out["unlabelled.parquet"] = unlabelled
        fields = status_block({"decisions": decisions, "personas": personas},
                              CASE_KEYS + ["attribute"] + (["variant"] if label else []) + signal)
        if paired:  # the paired agents' answers apart too: what the anchored analysis pairs
            fields["paired_status_by_attribute"] = status_by(
                decisions[decisions["respondent"].notna()],
                CASE_KEYS + paired[1:] + ["attribute"] + (["variant"] if label else []))
        return out, fields

    return Task("simulation", items, run_case, tables, "manifest.json",
                run_items=on_ray if config.executor == "ray" else None)


def run_experiment(
    config: ExperimentConfig,
    out_dir: str | Path,
    retry_errors: bool = False,
    on_progress: Callable[[int, str], None] | None = None,
    recorder=None,
) -> RunResult | None:
    """Run (or resume) the experiment and write its files. ``on_progress(total, phase)`` is called
    once with the total number of agents, then with ``(0, "")`` after each agent has decided.
    With a ``recorder`` (batch export) returns None while answers are missing."""
    # the registry builds a sequential run's task in waves (issue 20)
    r = execute(kinds.get("simulation").build(config), config, out_dir, retry_errors, on_progress, recorder)
    if r is None:
        return None
    return RunResult(r.out, r.tables["decisions.parquet"], r.tables["personas.parquet"], r.manifest)
