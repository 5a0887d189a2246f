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

from louder import estimate
from louder.config import ExperimentConfig
from louder.llm.base import stable_seed
from louder.status import status_by, status_counts
from louder.scenarios import BASE, load_group, load_scenario
from louder.simulation.model import BiasModel, Case
from louder.task import Task, execute
from louder.types import DECISION_COLUMNS, PERSONA_COLUMNS

@dataclass
class RunResult:
    out: Path
    decisions: pd.DataFrame
    personas: pd.DataFrame
    manifest: dict = field(default_factory=dict)


def plan_cases(config: ExperimentConfig) -> list[tuple[str, str, str, str]]:
    """(model, condition, scenario, group) for every case, in run order."""
    return [(m.label, c, s, g) for m in config.models for c in config.conditions
            for s in config.scenarios for g in config.groups]


def count_calls(config: ExperimentConfig) -> int:
    """Model calls a cold run makes (two per step on the completion path, for non-name steps)."""
    return estimate.count_calls(config, "simulation")


def simulate_case(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                  tick: Callable[[], None] | None = None) -> tuple[pd.DataFrame, list[dict]]:
    """One case as a Mesa model per policy variant: its agents' decision rows (DataCollector) and
    persona rows. Variants run in turn: an agent's persona prompt is the same under every variant,
    so after the first variant it comes from the cache and the agent keeps its persona. With the
    default variants ["base"] the rows are exactly the single-attribute pipeline's (no variant column)."""
    frames, rows = [], []
    for i, variant in enumerate(config.variants):
        df, persona_rows = _simulate_variant(config, session, run_id, case_key, variant, tick)
        frames.append(df if config.variants == [BASE] else df.assign(variant=variant))
        if i == 0:
            rows = persona_rows
    return pd.concat(frames, ignore_index=True), rows


def _simulate_variant(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                      variant: str, tick: Callable[[], None] | None) -> tuple[pd.DataFrame, list[dict]]:
    model_label, condition, scenario_id, group_id = case_key
    case = Case(model_label, condition, load_scenario(scenario_id).variant(variant), load_group(group_id),
                config.seed)
    abm = BiasModel(case, session, config.agents,
                    seed=stable_seed(config.seed, model_label, condition, scenario_id, group_id))
    abm.step(tick)
    df = abm.datacollector.get_agent_vars_dataframe().reset_index()
    df = df.rename(columns={"AgentID": "agent_id"}).drop(columns=["Step"])
    df = df.assign(run_id=run_id, model=model_label, condition=condition, scenario=case.scenario.id,
                   group=case.group.id)
    rows = []
    for a in abm.agents:
        p = a.persona
        rows.append(dict(
            run_id=run_id, model=model_label, condition=condition, scenario=case.scenario.id,
            group=case.group.id, attribute=a.attribute, agent_id=a.unique_id, replicate=a.replicate,
            name=p.name, persona=p.persona, status=p.status, prompt=p.prompt, raw_response=p.outcome.raw,
            reason=p.reason, attempts=p.outcome.attempts, latency_s=p.outcome.latency_s,
            input_tokens=p.outcome.input_tokens, output_tokens=p.outcome.output_tokens))
    return df, rows


def simulation_task(config: ExperimentConfig) -> Task:
    """The simulation as a ``Task``: one item per (model, condition, scenario, group) case."""

    def run_case(ctx, case_key: tuple[str, str, str, str], tick):
        return simulate_case(config, ctx.sessions[case_key[0]], ctx.run_id, case_key, tick)

    def on_ray(ctx, cases, tick):
        from louder.simulation.ray_executor import run_cases_on_ray

        return run_cases_on_ray(config, ctx, cases, ctx.retry_errors, tick)

    def tables(ctx, results):
        keys = ["model", "condition", "scenario", "group", "agent_id"]
        columns = DECISION_COLUMNS if config.variants == [BASE] else DECISION_COLUMNS + ["variant"]
        dkeys = keys if config.variants == [BASE] else keys[:3] + ["variant"] + keys[3:]
        decisions = _typed_decisions(pd.concat([df for df, _ in results], ignore_index=True)[columns])
        personas = pd.DataFrame([r for _, rows in results for r in rows], columns=PERSONA_COLUMNS)
        decisions = decisions.sort_values(dkeys, ignore_index=True)
        personas = personas.sort_values(keys, ignore_index=True)
        fields = dict(
            rows={"decisions": len(decisions), "personas": len(personas)},
            status_counts={"decisions": status_counts(decisions), "personas": status_counts(personas)},
            low_mass_rows=int((decisions["choice_mass"] < 0.99).sum()),
            status_by_attribute=status_by(decisions, ["model", "condition", "scenario", "group", "attribute"]
                                          + ([] if config.variants == [BASE] else ["variant"])),
        )
        return {"decisions.parquet": decisions, "personas.parquet": personas}, fields

    return Task("simulation", plan_cases(config),
                lambda c: config.agents * len(load_group(c[3]).attributes) * len(config.variants),
                run_case, tables, "manifest.json", planned_calls=count_calls(config),
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
    r = execute(simulation_task(config), config, out_dir, retry_errors, on_progress, recorder)
    if r is None:
        return None
    return RunResult(r.out, r.tables["decisions.parquet"], r.tables["personas.parquet"], r.manifest)


def _typed_decisions(df: pd.DataFrame) -> pd.DataFrame:
    """Fix dtypes so the Parquet schema is the same for every run (nullable where rows can be null)."""
    return df.astype({
        "agent_id": "int64", "replicate": "int64", "target": "boolean", "p_target": "Float64",
        "attempts": "int64", "latency_s": "float64", "choice_mass": "Float64", "input_tokens": "Int64", "output_tokens": "Int64",
        "name": "string", "persona": "string", "decision": "string", "rationale": "string",
        "raw_response": "string", "status": "string",
    })
