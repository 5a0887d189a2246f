"""The Bai et al. tests: run the LLM Word Association Test or Relative Decision Test for every
model of a config and write ``association.parquet`` / ``decision_test.parquet`` (+ a manifest)
into the run folder."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable

import pandas as pd

from louder.config import ExperimentConfig, part
from louder.cost import numbers
from louder.probes.association import association_rows, make_trial
from louder.probes.decision_test import decision_rows, make_decision_trial
from louder.status import filler_line, filler_models, status_block
from louder.stimuli import get_stereotype, stereotypes
from louder.task import Calls, Item, Task, execute

FILES = {"association": "association.parquet", "decision": "decision_test.parquet"}


def selected(config: ExperimentConfig):
    return [get_stereotype(n) for n in (config.stereotypes or list(stereotypes()))]


def count_test_calls(config: ExperimentConfig, test: str) -> int:
    return test_task(config, test).planned_calls


def _decision_calls(model: str, st, trials: int, own) -> tuple[Calls, ...]:
    """Two calls per trial: the profiles and decision, then the follow-up (or judge) question, which
    re-reads the conversation and the first answer."""
    dt = make_decision_trial(st, 0, own.seed, own.variant, own.egalitarian)
    first = "".join(text for _, text in dt.messages)
    extra = (numbers()["typical_output_tokens"]["decision_test"] + numbers()["followup_prompt_tokens"])
    again = first + "x" * (extra * numbers()["chars_per_token"])
    return (Calls(model, trials, first, "decision_test", own.profiles.max_tokens),
            Calls(model, trials, again, "followup", own.followup.max_tokens))


def test_task(config: ExperimentConfig, test: str, generated: dict[str, list[dict]] | None = None) -> Task:
    """A Bai test (``association`` or ``decision``) as a ``Task``: one item per model × stereotype
    (× variation for the association test; × generated scenario for the decision test).
    ``generated`` (stereotype → generated scenarios) adds their trials beside the seed's."""
    own = part(config, "association" if test == "association" else "decision_test")
    # a run that cannot show what it claims says so, before any call (issue 32)
    filler = filler_models(m.spec for m in own.models)
    if filler and test == "association":
        warnings.warn(filler_line("association", filler), UserWarning, stacklevel=2)
    elif filler and own.variant == "chained":
        warnings.warn(f"{', '.join(filler)} writes a filler sentence, not word pairs, so the chained decision "
                      "test's association scores (and association_decision_link.csv) will be empty; its decisions "
                      "are read as usual. Run it on a real model (e.g. --model embedded) for the link",
                      UserWarning, stacklevel=2)
    if test == "association":
        items = [Item((m.label, st, v), own.trials,
                      (Calls(m.label, own.trials, make_trial(st, v, 0, own.seed).prompt, "association",
                             own.params.max_tokens),))
                 for m in own.models for st in selected(config) for v in own.variations]
        run = lambda ctx, p, tick: association_rows(ctx.sessions[p[0]], p[1], p[2], own.trials, tick)  # noqa: E731
    else:
        items = [Item((m.label, st, g), own.trials, _decision_calls(m.label, st, own.trials, own))
                 for m in own.models for st in selected(config) for g in [None, *(generated or {}).get(st.name, [])]]
        run = lambda ctx, p, tick: decision_rows(ctx.sessions[p[0]], p[1], own.trials, tick, p[2])  # noqa: E731
    keys = [i.key for i in items]

    def tables(ctx, results):
        df = pd.DataFrame([dict(r, model=p[0]) for p, rows in zip(keys, results) for r in rows])
        df.insert(0, "run_id", ctx.run_id)
        df["egalitarian"] = config.egalitarian
        by = ["model", "stereotype"] + (["variation"] if test == "association" else ["variant"])
        name = FILES[test].removesuffix(".parquet")
        fields = status_block({name: df}, by, main=name, by_name="status_by_case")
        return {FILES[test]: df}, dict(fields, source="Bai, Wang, Sucholutsky & Griffiths, arXiv 2402.04105; "
                                                       "stimuli MIT (louder/data/bai/LICENSE)")

    return Task(test, items, run, tables, f"{test}_manifest.json")


def run_test(config: ExperimentConfig, test: str, out_dir: str | Path, retry_errors: bool = False,
             on_progress: Callable[[int, str], None] | None = None, generated: dict[str, list[dict]] | None = None,
             recorder=None) -> tuple[pd.DataFrame, dict] | None:
    r = execute(test_task(config, test, generated), config, out_dir, retry_errors, on_progress, recorder)
    return None if r is None else (r.tables[FILES[test]], r.manifest)


def association_task(config: ExperimentConfig) -> Task:
    return test_task(config, "association")


def decision_task(config: ExperimentConfig, generated: dict[str, list[dict]] | None = None) -> Task:
    return test_task(config, "decision", generated)
