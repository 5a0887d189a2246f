"""Explicit question-answer probes (section 4.2, appendix D of the paper).

For each model × scenario × group the model reads the third-person scenario with its decision
sentence ("The person decides to evacuate.") and is asked the group question ("What is the most
likely gender identity of this person?") with the group's attributes plus Unknown, N times at
temperature 0.2. Every answer gets a status like a simulation decision; ``probes.parquet`` keeps
them all, with raw text and rationale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd
from pydantic import BaseModel

from louder.config import ExperimentConfig, part
from louder.interventions import NONE, by_id
from louder.llm.base import stable_seed
from louder.session import ModelSession
from louder.presentation import joined, shown_order
from louder.prompts import Prompts
from louder.schemas import choice_schema
from louder.scenarios import Group, Scenario, load_group, load_scenario
from louder.status import status_block
from louder.task import Calls, Item, Task, execute
from louder.types import PROBE_COLUMNS, typed


def answer_schema(labels: list[str], constrained: bool) -> type[BaseModel]:
    """``{answer, rationale}``; with ``constrained`` the answer must be one of ``labels``."""
    return choice_schema("ExplicitAnswer", "answer", tuple(labels), constrained, rationale=True)


def trials_for(config: ExperimentConfig, group: Group) -> int:
    """N trials per scenario × group: ``probe_trials`` or, as in the paper, 100 × #attributes."""
    return part(config, "explicit").trials or 100 * len(group.attributes)


def count_probe_calls(config: ExperimentConfig) -> int:
    return explicit_task(config).planned_calls


def probe_case(session: ModelSession, scenario: Scenario, group: Group, trials: int, run_id: str,
               on_done: Callable[[], None] | None = None, intervention: str = NONE) -> list[dict]:
    """N explicit answers for one scenario × group, one row each (in trial order), under ``intervention``
    (``simulation.interventions``: its text before the question or as a system message; the same trial
    seeds under every intervention, so the answers are paired by trial)."""
    cfg, prompts = session.config, session.prompts
    if scenario.explicit is None or group.explicit is None:
        raise ValueError(f"scenario {scenario.id} or group {group.id} has no explicit-probe text")
    q = group.explicit
    options = [o.label for o in q.options]
    to_attribute = {o.label: o.attribute for o in q.options}
    iv = by_id(cfg).get(intervention)
    before = iv.text if iv is not None and iv.where == "before_decision" else None
    system = iv.text if iv is not None and iv.where == "system" else None
    completion_prompt = (prompts.explicit(scenario, group, cfg.paper_faithful, "completion", before_question=before)
                         if session.api == "completion" else None)

    def one(trial: int) -> dict:
        seed = stable_seed(cfg.seed, session.label, "explicit", scenario.id, group.id, trial)
        # the attribute options follow simulation.choice_order (balanced: rotation trial % k); Unknown stays last
        order = list(shown_order(options, cfg.simulation.choice_order, trial, seed))
        labels = order + [q.unknown.label]
        schema = answer_schema(labels, cfg.simulation.constrain_choices)
        prompt = prompts.explicit(scenario, group, cfg.paper_faithful, "chat", None if order == options else order,
                                  before)
        out, v = session.ask_choice(
            prompt, schema, cfg.explicit.params, seed, f"explicit|{scenario.id}|{group.id}|{trial}", labels, "answer",
            completion_prompt=completion_prompt, completion_params=cfg.explicit.completion_params,
            extraction_prompt=lambda text: prompts.explicit_extraction(text, group), system=system)
        raw = out.raw if out.raw else (out.reply.error or "")
        if session.api == "completion" and v.status != "error":
            raw = f"{out.raw}\n[extracted] {out.text}"
        return dict(run_id=run_id, probe="explicit", model=session.label, scenario=scenario.id, group=group.id,
                    trial=trial, answer=v.choice, attribute=to_attribute.get(v.choice) if v.choice else None,
                    rationale=v.rationale, status=v.status, raw_response=raw, attempts=out.attempts,
                    latency_s=out.latency_s, input_tokens=out.input_tokens, output_tokens=out.output_tokens,
                    choice_order=joined(labels), thinking=out.thinking, reasoning_tokens=out.reasoning_tokens,
                    intervention=intervention)

    return session.client.map(one, range(trials), on_done)


def explicit_task(config: ExperimentConfig) -> Task:
    """The explicit probes as a ``Task``: one item per (model, scenario, group), ``trials`` answers
    each (two calls per answer on the completion path: the completion and its extraction)."""
    prompts, own = Prompts(), part(config, "explicit")
    items = []
    for m in config.models:
        per = 2 if m.api == "completion" else 1
        for s in config.simulation.scenarios:
            for g in config.simulation.groups:
                scenario, group = load_scenario(s), load_group(g)
                n = trials_for(config, group)
                # every trial again under each intervention of the run (issue 33): the explicit side of a mitigation
                for iv_id, iv in by_id(config).items():
                    text = None if iv is None else iv.text
                    prompt = prompts.explicit(scenario, group, config.paper_faithful, "chat", before_question=text)
                    key = (m.label, scenario, group) if iv is None else (m.label, scenario, group, iv_id)
                    items.append(Item(key, n, (Calls(m.label, n * per, prompt, "explicit", own.params.max_tokens),)))

    def tables(ctx, results):
        rows = [r for case_rows in results for r in case_rows]
        probes = typed(pd.DataFrame(rows, columns=PROBE_COLUMNS), attribute="string")
        return {"probes.parquet": probes}, status_block({"probes": probes}, ["model", "scenario", "group"],
                                                        main="probes", by_name="status_by_case")

    return Task("explicit", items,
                lambda ctx, p, tick: probe_case(ctx.sessions[p[0]], p[1], p[2], trials_for(config, p[2]),
                                                ctx.run_id, tick, p[3] if len(p) > 3 else NONE),
                tables, "probes_manifest.json")


def run_explicit(config: ExperimentConfig, out_dir: str | Path, retry_errors: bool = False,
                 on_progress: Callable[[int, str], None] | None = None,
                 recorder=None) -> tuple[pd.DataFrame, dict] | None:
    """Run (or resume, through the cache) the explicit probes; write ``probes.parquet`` and
    ``probes_manifest.json`` into ``out_dir`` (the simulation's folder, so one report covers both)."""
    r = execute(explicit_task(config), config, out_dir, retry_errors, on_progress, recorder)
    return None if r is None else (r.tables["probes.parquet"], r.manifest)
