"""One case of an agent run, made the same way by every agent run (simulation, network, population):
its policy variants in turn, the persona rows, and the model calls the case plans.

A case of the seed simulation is model × condition × scenario × group: a ``BiasModel`` whose
``PersonaAgent``s write their personas and decide (``simulate_case``). Network and population runs
make their cases with their own Mesa models, through the same arms (``run_arms``: policy variants ×
the levels of the experiment dimensions, ``louder.dimensions``) and the same call plan
(``persona_calls``, ``decision_calls``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from louder import dimensions, humans
from louder.config import ExperimentConfig
from louder.cost import STAND_IN_NAME, stand_in_persona
from louder.dimensions import CROSSED, OWN
from louder.llm.base import stable_seed
from louder.prompts import Prompts
from louder.scenarios import BASE, Scenario, load_group, load_scenario
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


def run_arms(config: ExperimentConfig, scenario: Scenario, one: Callable[[str, Scenario, dict], CaseFrames],
             label: bool, shared: tuple[str, ...] = ()) -> CaseFrames:
    """Every arm of one case in turn (``louder.dimensions.arms``): ``one(variant, scenario as the arm says
    it, the arm's levels)`` for each level of the own-agents dimensions (signal), each policy variant and
    each combination of the crossed dimensions' levels (wordings, reasoning levels).

    An agent's persona prompt is the same under every variant and every crossed level, so after the
    first arm of its agents each persona comes from the cache and the agent keeps it: the persona rows
    are the first arm's of each own-agents level (those levels write different personas, and carry their
    level in a column when the run varies them). With ``label`` the decisions and every extra table get
    a ``variant`` column, except the ``shared`` tables (the same in every arm, e.g. a graph's edges),
    which are kept once; every other extra table gets a column per dimension the run varies, holding the
    arm's level. With the default dimensions and variants this is one call of ``one``: the run without
    any of them."""
    own_columns = dimensions.labelled(config, OWN)
    varied = dimensions.labelled(config)
    parts, personas, seen = [], [], set()
    for own, variant, levels in dimensions.arms(config, scenario, config.simulation.variants):
        frames = one(variant, dimensions.say(scenario, variant, levels), levels)
        # the other tables (twins) say their arm's levels, as the decisions do, so no two arms' rows meet
        frames.extra = {name: df if name in shared else df.assign(**{c: levels[c] for c in varied if c in levels})
                        for name, df in frames.extra.items()}
        parts.append((variant, frames))
        if tuple(own.items()) not in seen:
            seen.add(tuple(own.items()))
            personas += [{**p, **{c: own[c] for c in own_columns}} for p in frames.personas]
    first = parts[0][1]

    def stack(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
        return pd.concat([df.assign(variant=v) if label else df for v, df in frames], ignore_index=True)

    extra = {name: first.extra[name] if name in shared else stack([(v, f.extra[name]) for v, f in parts])
             for name in first.extra}
    return CaseFrames(stack([(v, f.decisions) for v, f in parts]), personas, extra)


def arms(config: ExperimentConfig, scenario_id: str) -> int:
    """How many arms a case of ``scenario_id`` runs (``louder.dimensions.arms``): variants × the levels of
    every crossed and own-agents dimension — how often each agent, or its double of another signal, decides."""
    return len(list(dimensions.arms(config, load_scenario(scenario_id, config.simulation.scenarios),
                                    config.simulation.variants)))


# --- the plan: the calls of a case -------------------------------------------------------------

def _per(config: ExperimentConfig, model: str) -> int:
    """Calls per step: the completion path adds a chat extraction call to each non-name step."""
    return 2 if next(m for m in config.models if m.label == model).api == "completion" else 1


def named(levels: dict[str, str]) -> bool:
    """Whether a persona under ``levels`` is written for a name (a dimension with a ``persona`` hook at a
    level other than its default: signal names)."""
    return any(d.persona is not None and levels.get(d.id, d.default) != d.default for d in dimensions.registered())


def persona_calls(config: ExperimentConfig, model: str, condition: str, scenario: Scenario, demographic: str,
                  n: int, prompts: Prompts, levels: dict[str, str] | None = None) -> Calls:
    """``n`` agents writing their persona (no_persona: only a name, one chat call each). Under the
    `names` signal the persona is written for a drawn name (one chat call; none under no_persona)."""
    sim = config.simulation
    if named(levels or {}):
        if condition == "no_persona":
            return Calls(model, 0, "", "name", sim.persona.max_tokens)
        return Calls(model, n, prompts.persona_named(STAND_IN_NAME, condition, scenario, config.paper_faithful),
                     "persona", sim.persona.max_tokens)
    name_only = condition == "no_persona"
    prompt = prompts.persona(demographic, condition, scenario, config.paper_faithful, "chat")
    per = 1 if name_only else _per(config, model)
    return Calls(model, n * per, prompt, "name" if name_only else "persona", sim.persona.max_tokens)


def decision_calls(config: ExperimentConfig, model: str, condition: str, scenario: Scenario, demographic: str,
                   n: int, prompts: Prompts, neighbours: str | None = None,
                   levels: dict[str, str] | None = None) -> Calls:
    """``n`` decisions of agents under ``scenario`` (a stand-in persona, or the demographic itself
    under no_persona), with a neighbour message in rounds of influence, asked as the dimensions'
    ``levels`` shape the call (``PersonaAgent.decide``)."""
    persona = demographic if condition == "no_persona" else stand_in_persona()
    ask = dimensions.shape(levels or {}, config)
    text = "\n".join(t for t in (neighbours, ask.before_choices) if t) or None
    prompt = prompts.action(STAND_IN_NAME, persona, scenario, "chat", text)
    if ask.system:
        prompt = f"{ask.system}\n{prompt}"
    return Calls(model, n * _per(config, model), prompt, "decision", config.simulation.decision.max_tokens,
                 reasoning=ask.reasoning or "default")


def seed_case_calls(config: ExperimentConfig, case_key: tuple[str, str, str, str], prompts: Prompts,
                    rounds: int = 0, neighbours: str | None = None, arm: bool = False) -> tuple[Calls, ...]:
    """A seed case's calls: per own-agents level (signal) and attribute, ``agents`` personas (shared by
    the variants and crossed levels) and ``agents`` decisions per variant × crossed levels (wordings ×
    reasoning levels) and per round 0..``rounds`` (and, with the no-influence ``arm``, round 0's prompt
    again in every round r ≥ 1). A split dimension (choice order) changes no count: each agent sees one
    level."""
    model, condition, scenario_id, group_id = case_key
    s = load_scenario(scenario_id, config.simulation.scenarios)
    # a human study's paired agents (louder.humans): per attribute, its respondents in this case;
    # grounded agents (simulation.ground) apart, each kind's persona prompt shown by its first profile
    study = humans.paired(config, scenario_id, group_id)
    paired = Counter(p.attribute for p in study if not p.profile)
    grounded: dict[str, list] = {}
    for p in study:
        if p.profile:
            grounded.setdefault(p.attribute, []).append(p)
    out = []
    for own in dimensions.combos(config, s, OWN):
        for a in load_group(group_id, config.simulation.groups).attributes:
            agents = [(a, config.simulation.agents + paired[a])]
            agents += [(humans.description(ps[0].profile, prompts), len(ps)) for ps in [grounded.get(a, [])] if ps]
            for demographic, n in agents:
                out.append(persona_calls(config, model, condition, s, demographic, n, prompts, own))
                for v in config.simulation.variants:
                    for crossed in dimensions.combos(config, s, CROSSED):
                        levels = {**own, **crossed}
                        text = dimensions.say(s, v, levels)
                        out.append(decision_calls(config, model, condition, text, demographic, n, prompts,
                                                  levels=levels))
                        if rounds:
                            out.append(decision_calls(config, model, condition, text, demographic, n * rounds, prompts,
                                                      neighbours, levels))
                        if rounds and arm:
                            out.append(decision_calls(config, model, condition, text, demographic, n * rounds, prompts,
                                                      levels=levels))
    return tuple(out)


# --- the seed simulation's case -------------------------------------------------------------------

def case_model(config: ExperimentConfig, session, case_key: tuple[str, str, str, str], scenario: Scenario,
               levels: dict[str, str] | None = None, replicates: range | None = None) -> BiasModel:
    """The Mesa model of a seed case under ``scenario`` (the case's scenario under one variant, as the
    arm's ``levels`` say it; its agents write and decide under those levels); ``replicates``: only those
    of each attribute (a wave of a sequential run)."""
    model_label, condition, scenario_id, group_id = case_key
    case = Case(model_label, condition, scenario, load_group(group_id, config.simulation.groups), config.seed,
                dict(levels or {}))
    paired = humans.paired(config, scenario_id, group_id) if config.simulation.humans is not None else None
    return BiasModel(case, session, config.simulation.agents,
                     seed=stable_seed(config.seed, model_label, condition, scenario_id, group_id),
                     replicates=replicates, paired=paired)


def case_columns(run_id: str, case_key: tuple[str, str, str, str]) -> dict:
    return dict(run_id=run_id, **dict(zip(("model", "condition", "scenario", "group"), case_key)))


def simulate_case(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                  tick: Tick = None, replicates: range | None = None) -> CaseFrames:
    """One case as a Mesa model per arm (policy variant × dimension levels, ``run_arms``): its agents'
    decision rows (DataCollector) and persona rows. With the default variants and dimensions the rows
    are exactly the single-attribute pipeline's (no variant column). ``replicates``: only those agents
    of each attribute (a wave)."""
    keys = case_columns(run_id, case_key)

    def one(variant: str, scenario: Scenario, levels: dict[str, str]) -> CaseFrames:
        abm = case_model(config, session, case_key, scenario, levels, replicates)
        abm.on_done = tick
        abm.step()
        df = abm.datacollector.get_agent_vars_dataframe().reset_index(drop=True).assign(**keys)
        study = config.simulation.humans is not None  # a human study: personas carry `respondent`
        grounded = bool(config.simulation.ground)  # … and, grounded, what each agent's persona is written from
        return CaseFrames(df, [{**keys, **a.persona_row(), **({"respondent": a.respondent} if study else {}),
                                **({"grounding": a.grounding} if grounded else {})} for a in abm.agents])

    return run_arms(config, load_scenario(case_key[2], config.simulation.scenarios), one,
                    labelled(config.simulation.variants))
