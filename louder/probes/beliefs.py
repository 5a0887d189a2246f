"""The beliefs probe (issue 21, docs/voices.md; not from the paper): the model's *belief* about how
people act, asked in the third person and in the agents' own units.

For every model × scenario × group × attribute the model reads the scenario's third-person situation
and is asked "Out of 100 <people> in this situation, how many would choose to <target>?" (the
template and the collective phrases — "women" for Female — are data in louder/data/prompts.yaml; the
target phrase is the scenario file's ``belief.target``). The answer is one JSON integer, 0–100,
schema-constrained; ``trials`` answers per attribute at the probe temperature. Every answer gets a
status: valid (a whole number 0–100), invalid (out of range or unreadable, raw text kept), refused or
error; ``beliefs.parquet`` keeps them all.

The belief rate of an attribute is the mean valid answer / 100 (``louder.analysis.stats.voices``): a rate
of choosing the target, the same units as the agents' target-decision rate.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from louder.config import ExperimentConfig, part
from louder.llm.answers import classify_count
from louder.llm.base import stable_seed
from louder.prompts import Prompts, belief_text
from louder.scenarios import Group, Scenario, load_group, load_scenario
from louder.schemas import count_schema
from louder.session import ModelSession
from louder.status import status_block
from louder.task import Calls, Item, Task
from louder.types import typed

FIELD, LOW, HIGH = "count", 0, 100
COLUMNS = ["run_id", "probe", "model", "scenario", "group", "attribute", "trial", "answer", "status", "note",
           "raw_response", "attempts", "latency_s", "input_tokens", "output_tokens", "thinking", "reasoning_tokens"]


def belief_answer(session: ModelSession, scenario: Scenario, group: Group, attribute: str, trial: int,
                  run_id: str) -> dict:
    """One answer as a ``beliefs.parquet`` row. An invalid or refused answer is re-asked (fresh seed)
    up to ``reask`` more times, as decisions and explicit probes are; the last answer is recorded."""
    cfg, prompts = session.config, session.prompts
    schema = count_schema("BeliefAnswer", FIELD, LOW, HIGH, cfg.simulation.constrain_choices)
    prompt = prompts.belief(scenario, group, attribute, "chat")
    completion = {}
    if session.api == "completion":
        completion = dict(completion_prompt=prompts.belief(scenario, group, attribute, "completion"),
                          completion_params=cfg.beliefs.completion_params,
                          extraction_prompt=lambda text: prompts.belief_extraction(text, scenario, group, attribute))
    seed = stable_seed(cfg.seed, session.label, "beliefs", scenario.id, group.id, attribute, trial)
    replicate = f"beliefs|{scenario.id}|{group.id}|{attribute}|{trial}"
    attempts, latency = 0, 0.0
    for k in range(cfg.simulation.reask + 1):
        out = session.ask(prompt, schema, cfg.beliefs.params, seed if k == 0 else stable_seed(seed, "reask", k),
                          replicate if k == 0 else f"{replicate}|reask{k}", **completion)
        v = classify_count(out.reply, FIELD, LOW, HIGH, prompts.refusal_markers)
        attempts, latency = attempts + out.attempts, latency + out.latency_s
        if v.status in ("valid", "error"):
            break
    raw = out.raw if out.raw else (out.reply.error or "")
    if session.api == "completion" and v.status != "error":
        raw = f"{out.raw}\n[extracted] {out.text}"
    return dict(run_id=run_id, probe="beliefs", model=session.label, scenario=scenario.id, group=group.id,
                attribute=attribute, trial=trial, answer=v.value, status=v.status, note=v.note, raw_response=raw,
                attempts=attempts, latency_s=latency, input_tokens=out.input_tokens, output_tokens=out.output_tokens,
                thinking=out.thinking, reasoning_tokens=out.reasoning_tokens)


def probe_attribute(session: ModelSession, scenario: Scenario, group: Group, attribute: str, trials: int,
                    run_id: str, on_done: Callable[[], None] | None = None) -> list[dict]:
    """``trials`` answers for one scenario × attribute, one row each (in trial order)."""
    return session.client.map(lambda t: belief_answer(session, scenario, group, attribute, t, run_id), range(trials),
                              on_done)


def beliefs_task(config: ExperimentConfig) -> Task:
    """The beliefs probe as a ``Task``: one item per (model, scenario, group, attribute), ``trials``
    answers each (two calls per answer on the completion path: the completion and its extraction).
    A scenario without ``belief.target`` is rejected before any call, in one line."""
    prompts, own = Prompts(), part(config, "beliefs")
    cases = [(load_scenario(s), load_group(g)) for s in config.simulation.scenarios for g in config.simulation.groups]
    for scenario, _ in cases:
        belief_text(scenario)  # LouderError naming the scenario and the field to add
    items = []
    for m in config.models:
        per = 2 if m.api == "completion" else 1
        for scenario, group in cases:
            for a in group.attributes:
                prompt = prompts.belief(scenario, group, a, "chat")
                items.append(Item((m.label, scenario, group, a), own.trials,
                                  (Calls(m.label, own.trials * per, prompt, "belief", own.params.max_tokens),)))

    def tables(ctx, results):
        rows = [r for item_rows in results for r in item_rows]
        beliefs = typed(pd.DataFrame(rows, columns=COLUMNS), answer="Int64", attribute="string", note="string")
        return {"beliefs.parquet": beliefs}, status_block({"beliefs": beliefs}, ["model", "scenario", "group",
                                                                                 "attribute"], main="beliefs")

    return Task("beliefs", items,
                lambda ctx, k, tick: probe_attribute(ctx.sessions[k[0]], k[1], k[2], k[3], own.trials, ctx.run_id,
                                                     tick),
                tables, "beliefs_manifest.json")

