"""Explicit question-answer probes (section 4.2, appendix D of the paper).

For each model × scenario × group the model reads the third-person scenario with its decision
sentence ("The person decides to evacuate.") and is asked the group question ("What is the most
likely gender identity of this person?") with the group's attributes plus Unknown, N times at
temperature 0.2. Every answer gets a status like a simulation decision; ``probes.parquet`` keeps
them all, with raw text and rationale.
"""

from __future__ import annotations

from pathlib import Path
from functools import cache
from typing import Callable, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, create_model

from louder.config import ExperimentConfig
from louder.io import write_json, write_parquet
from louder.llm.base import stable_seed
from louder.llm.session import ModelSession
from louder.llm.client import run_all
from louder.records import RunContext, status_by, status_counts
from louder.scenarios import Group, Scenario, load_group, load_scenario

PROBE_COLUMNS = [
    "run_id", "probe", "model", "scenario", "group", "trial", "answer", "attribute", "rationale", "status",
    "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens",
]


# Bounds that make a constrained answer close before max_tokens (200 tokens ≈ 800 characters);
# extra="forbid" stops invented keys.
RATIONALE_MAX = 500
FREE_CHOICE_MAX = 60
STRICT = ConfigDict(extra="forbid")


def answer_schema(labels: list[str], constrained: bool) -> type[BaseModel]:
    """``{answer, rationale}``; with ``constrained`` the answer must be one of ``labels``."""
    return _answer_schema(tuple(labels), constrained)


@cache
def _answer_schema(labels: tuple[str, ...], constrained: bool) -> type[BaseModel]:
    answer_type = Literal[tuple(labels)] if constrained else str  # type: ignore[valid-type]
    answer = (answer_type, ... if constrained else Field(max_length=FREE_CHOICE_MAX))
    return create_model("ExplicitAnswer", __config__=STRICT, answer=answer,
                        rationale=(str, Field(max_length=RATIONALE_MAX)))


def trials_for(config: ExperimentConfig, group: Group) -> int:
    """N trials per scenario × group: ``probe_trials`` or, as in the paper, 100 × #attributes."""
    return config.probe_trials or 100 * len(group.attributes)


def count_probe_calls(config: ExperimentConfig) -> int:
    total = 0
    for m in config.models:
        per = 2 if m.api == "completion" else 1
        for g in config.groups:
            total += per * trials_for(config, load_group(g)) * len(config.scenarios)
    return total


def probe_case(session: ModelSession, scenario: Scenario, group: Group, trials: int, run_id: str,
               on_done: Callable[[], None] | None = None) -> list[dict]:
    """N explicit answers for one scenario × group, one row each (in trial order)."""
    cfg, prompts = session.config, session.prompts
    if scenario.explicit is None or group.explicit is None:
        raise ValueError(f"scenario {scenario.id} or group {group.id} has no explicit-probe text")
    q = group.explicit
    labels = [o.label for o in q.options] + [q.unknown.label]
    to_attribute = {o.label: o.attribute for o in q.options}
    schema = answer_schema(labels, cfg.constrain_choices)
    prompt = prompts.explicit(scenario, group, cfg.paper_faithful, "chat")
    completion_prompt = (prompts.explicit(scenario, group, cfg.paper_faithful, "completion")
                         if session.api == "completion" else None)

    def one(trial: int) -> dict:
        seed = stable_seed(cfg.seed, session.label, "explicit", scenario.id, group.id, trial)
        out, v = session.ask_choice(
            prompt, schema, cfg.explicit, seed, f"explicit|{scenario.id}|{group.id}|{trial}", labels, "answer",
            completion_prompt=completion_prompt, completion_params=cfg.completion_explicit,
            extraction_prompt=lambda text: prompts.explicit_extraction(text, group))
        raw = out.raw if out.raw else (out.reply.error or "")
        if session.api == "completion" and v.status != "error":
            raw = f"{out.raw}\n[extracted] {out.text}"
        return dict(run_id=run_id, probe="explicit", model=session.label, scenario=scenario.id, group=group.id,
                    trial=trial, answer=v.choice, attribute=to_attribute.get(v.choice) if v.choice else None,
                    rationale=v.rationale, status=v.status, raw_response=raw, attempts=out.attempts,
                    latency_s=out.latency_s, input_tokens=out.input_tokens, output_tokens=out.output_tokens)

    return session.client.map(one, range(trials), on_done)


def run_explicit(config: ExperimentConfig, out_dir: str | Path, retry_errors: bool = False,
                 on_progress: Callable[[int, str], None] | None = None) -> tuple[pd.DataFrame, dict]:
    """Run (or resume, through the cache) the explicit probes; write ``probes.parquet`` and
    ``probes_manifest.json`` into ``out_dir`` (the simulation's folder, so one report covers both)."""
    plan = [(m.label, load_scenario(s), load_group(g)) for m in config.models for s in config.scenarios
            for g in config.groups]
    if on_progress:
        on_progress(sum(trials_for(config, g) for _, _, g in plan), "start")
    tick = (lambda: on_progress(0, "")) if on_progress else None
    with RunContext(config, out_dir, retry_errors) as ctx:
        total = sum(trials_for(config, g) for _, _, g in plan)
        results = run_all([lambda p=p: probe_case(ctx.sessions[p[0]], p[1], p[2], trials_for(config, p[2]), ctx.run_id,
                                                  tick) for p in plan], config.concurrency, total)
    rows = [r for case_rows in results for r in case_rows]
    probes = pd.DataFrame(rows, columns=PROBE_COLUMNS).astype({
        "trial": "int64", "answer": "string", "attribute": "string", "rationale": "string", "status": "string",
        "raw_response": "string", "attempts": "int64", "latency_s": "float64", "input_tokens": "Int64",
        "output_tokens": "Int64"})
    write_parquet(probes, ctx.out / "probes.parquet")
    manifest = ctx.manifest("explicit_probes", rows={"probes": len(probes)},
                            status_counts={"probes": status_counts(probes)},
                            status_by_case=status_by(probes, ["model", "scenario", "group"]))
    write_json(manifest, ctx.out / "probes_manifest.json")
    return probes, manifest
