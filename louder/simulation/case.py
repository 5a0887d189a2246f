"""One case of an agent run, made the same way by every agent run (simulation, network, population):
its policy variants in turn, the persona rows, and the model calls the case plans.

A case of the seed simulation is model × condition × scenario × group: a ``BiasModel`` whose
``PersonaAgent``s write their personas and decide (``simulate_case``). Network and population runs
make their cases with their own Mesa models, through the same ``run_variants`` and the same call
plan (``persona_calls``, ``decision_calls``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import pandas as pd

from louder.config import ExperimentConfig
from louder.cost import STAND_IN_NAME, stand_in_persona
from louder.llm.base import stable_seed
from louder.prompts import Prompts
from louder.presentation import wordings_for
from louder.scenarios import AS_WRITTEN, BASE, Scenario, load_group, load_scenario
from louder.simulation.model import BiasModel, Case
from louder.task import Calls

Tick = Callable[[], None] | None


@dataclass
class CaseFrames:
    """What one case gives its run: decision rows, persona rows, and any other tables (by file name)."""

    decisions: pd.DataFrame
    personas: list[dict]
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)


def labelled(variants: list[str]) -> bool:
    """Whether a run's tables carry a ``variant`` column: only when it runs more than the text as written."""
    return list(variants) != [BASE]


def run_variants(variants: Iterable[str], scenario: Scenario, one: Callable[..., CaseFrames],
                 label: bool, shared: tuple[str, ...] = (), wordings: Iterable[str] | None = None,
                 levels: Iterable[str] | None = None) -> CaseFrames:
    """Every policy variant of one case in turn: ``one(variant, scenario under the variant)``.

    An agent's persona prompt is the same under every variant, so after the first variant each
    persona comes from the cache and the agent keeps it: the persona rows are the first variant's.
    With ``label`` the decisions and every extra table get a ``variant`` column, except the
    ``shared`` tables (the same under every variant, e.g. a graph's edges), which are kept once.

    ``wordings`` (the seed simulation, docs/robustness.md): each variant is said in each wording in
    turn, ``one(variant, scenario under the variant in the wording, wording)``; like variants they
    share the personas (a wording never changes the persona context).

    ``levels`` (reasoning levels, docs/how-to/reasoning-models.md): each variant and wording is decided
    at each level in turn, ``one(variant, scenario, wording, level)``; the personas are shared too."""
    if wordings is None and levels is None:
        parts = [(v, one(v, scenario.variant(v))) for v in variants]
    elif levels is None:
        parts = [(v, one(v, scenario.text(v, w), w)) for v in variants for w in wordings]
    else:
        parts = [(v, one(v, scenario.text(v, w), w, lv)) for v in variants for w in (wordings or [AS_WRITTEN])
                 for lv in levels]
    first = parts[0][1]

    def stack(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
        return pd.concat([df.assign(variant=v) if label else df for v, df in frames], ignore_index=True)

    extra = {name: first.extra[name] if name in shared else stack([(v, f.extra[name]) for v, f in parts])
             for name in first.extra}
    return CaseFrames(stack([(v, f.decisions) for v, f in parts]), first.personas, extra)


# --- the plan: the calls of a case -------------------------------------------------------------

def _per(config: ExperimentConfig, model: str) -> int:
    """Calls per step: the completion path adds a chat extraction call to each non-name step."""
    return 2 if next(m for m in config.models if m.label == model).api == "completion" else 1


def persona_calls(config: ExperimentConfig, model: str, condition: str, scenario: Scenario, demographic: str,
                  n: int, prompts: Prompts, signal: str = "stated") -> Calls:
    """``n`` agents writing their persona (no_persona: only a name, one chat call each). Under the
    `names` signal the persona is written for a drawn name (one chat call; none under no_persona)."""
    if signal == "names":
        if condition == "no_persona":
            return Calls(model, 0, "", "name", config.persona.max_tokens)
        return Calls(model, n, prompts.persona_named(STAND_IN_NAME, condition, scenario, config.paper_faithful),
                     "persona", config.persona.max_tokens)
    name_only = condition == "no_persona"
    prompt = prompts.persona(demographic, condition, scenario, config.paper_faithful, "chat")
    per = 1 if name_only else _per(config, model)
    return Calls(model, n * per, prompt, "name" if name_only else "persona", config.persona.max_tokens)


def decision_calls(config: ExperimentConfig, model: str, condition: str, scenario: Scenario, demographic: str,
                   n: int, prompts: Prompts, neighbours: str | None = None) -> Calls:
    """``n`` decisions of agents under ``scenario`` (a stand-in persona, or the demographic itself
    under no_persona), with a neighbour message in rounds of influence."""
    persona = demographic if condition == "no_persona" else stand_in_persona()
    prompt = prompts.action(STAND_IN_NAME, persona, scenario, "chat", neighbours)
    return Calls(model, n * _per(config, model), prompt, "decision", config.decision.max_tokens)


def seed_case_calls(config: ExperimentConfig, case_key: tuple[str, str, str, str], prompts: Prompts,
                    rounds: int = 0, neighbours: str | None = None, arm: bool = False) -> tuple[Calls, ...]:
    """A seed case's calls: per signal and attribute, ``agents`` personas (shared by the variants and
    wordings) and ``agents`` decisions per variant × wording and per round 0..``rounds`` (and, with
    the no-influence ``arm``, round 0's prompt again in every round r ≥ 1). A choice order changes
    no count: each agent sees one order."""
    model, condition, scenario_id, group_id = case_key
    s = load_scenario(scenario_id, config.scenarios)
    out = []
    for signal, a in ((x, a) for x in config.signal for a in load_group(group_id, config.groups).attributes):
        out.append(persona_calls(config, model, condition, s, a, config.agents, prompts, signal))
        for v, w in ((v, w) for v in config.variants for w in wordings_for(config, s)):
            for level in config.reasoning:  # every agent decides once per reasoning level
                c = decision_calls(config, model, condition, s.text(v, w), a, config.agents, prompts)
                out.append(c if level == "default" else replace(c, reasoning=level))
            if rounds:
                out.append(decision_calls(config, model, condition, s.variant(v), a, config.agents * rounds,
                                          prompts, neighbours))
            if rounds and arm:
                out.append(decision_calls(config, model, condition, s.variant(v), a, config.agents * rounds,
                                          prompts))
    return tuple(out)


# --- the seed simulation's case -------------------------------------------------------------------

def case_model(config: ExperimentConfig, session, case_key: tuple[str, str, str, str],
               scenario: Scenario, wording: str = AS_WRITTEN, signal: str = "stated",
               replicates: range | None = None, reasoning: str = "default") -> BiasModel:
    """The Mesa model of a seed case under ``scenario`` (the case's scenario under one variant, said
    in ``wording``), its agents' attribute reaching their personas by ``signal``, deciding at reasoning
    level ``reasoning``; ``replicates``: only those of each attribute (a wave of a sequential run)."""
    model_label, condition, scenario_id, group_id = case_key
    case = Case(model_label, condition, scenario, load_group(group_id, config.groups), config.seed, wording, signal,
                reasoning)
    return BiasModel(case, session, config.agents, seed=stable_seed(config.seed, model_label, condition, scenario_id,
                                                                     group_id), replicates=replicates)


def case_columns(run_id: str, case_key: tuple[str, str, str, str]) -> dict:
    return dict(run_id=run_id, **dict(zip(("model", "condition", "scenario", "group"), case_key)))


def simulate_case(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                  tick: Tick = None, replicates: range | None = None) -> CaseFrames:
    """One case as a Mesa model per policy variant: its agents' decision rows (DataCollector) and
    persona rows. With the default variants ["base"] the rows are exactly the single-attribute
    pipeline's (no variant column). ``replicates``: only those agents of each attribute (a wave)."""
    keys = case_columns(run_id, case_key)
    scenario = load_scenario(case_key[2], config.scenarios)
    wordings = wordings_for(config, scenario)

    def signalled(signal: str) -> CaseFrames:
        def one(variant: str, scenario: Scenario, wording: str = AS_WRITTEN, level: str = "default") -> CaseFrames:
            abm = case_model(config, session, case_key, scenario, wording, signal, replicates, level)
            abm.on_done = tick
            abm.step()
            df = abm.datacollector.get_agent_vars_dataframe().reset_index(drop=True).assign(**keys)
            extra = {"signal": signal} if labelled_signals(config) else {}
            return CaseFrames(df, [{**keys, **a.persona_row(), **extra} for a in abm.agents])

        return run_variants(config.variants, scenario, one, labelled(config.variants),
                            wordings=None if wordings == [AS_WRITTEN] else wordings,
                            levels=None if list(config.reasoning) == ["default"] else list(config.reasoning))

    # each signal has its own agents (their personas are written from different prompts)
    parts = [signalled(x) for x in config.signal]
    if len(parts) == 1:
        return parts[0]
    return CaseFrames(pd.concat([p.decisions for p in parts], ignore_index=True),
                      [r for p in parts for r in p.personas])


def labelled_signals(config: ExperimentConfig) -> bool:
    """Whether personas.parquet carries a ``signal`` column: only when a run uses more than the stated signal."""
    return list(config.signal) != ["stated"]
