"""Network runs (``network:`` in the config, ``mode: agents``): the agents of each case on a social
network, deciding again in rounds of influence, beside a no-LLM control (docs/networks.md).

Per case (model × condition × scenario × group, as the seed simulation), and per arm of it (a policy
variant × a level of each experiment dimension the run varies, ``louder.dimensions``: each arm plays
its own rounds, control and no-influence arm on the case's graph):

* round 0 is the seed simulation itself — the same ``BiasModel`` and ``PersonaAgent``s, so the same
  prompts, seeds and cache keys: round 0 equals the seed run's decisions exactly;
* the agents are placed on the case's graph (node i = the i-th agent by ``agent_id``) on Mesa's
  ``Network`` space, and in rounds 1..R every agent reads the counts of its neighbours' round r−1
  choices (``neighbour_message``) in its decision prompt and decides again — synchronously
  (``run_rounds``), each round's calls side by side through the session's client;
* a control starts from the same round-0 decisions on the same graph and updates by
  ``influence.control``'s rule.

Each round-r call has its own cache key (r, and the neighbour counts, which are in the prompt), so a
run killed mid-round resumes exactly where it stopped. ``influence`` is the part independent of how
agents and their prompts are made: any agents table (e.g. a population's) with an ``ask`` callback
can be placed on a graph with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from louder import dimensions
from louder.agents import DECISION_FIELDS, Decision
from louder.config import ExperimentConfig
from louder.dimensions import CROSSED, OWN
from louder.errors import LouderError
from louder.llm.base import stable_hash, stable_seed
from louder.networks.graphs import build_graph
from louder.networks.rounds import NeighbourCounts, Outcome, control_rule, influence_templates, neighbour_message, \
    run_rounds
from louder.networks.space import InfluenceModel, NetworkAgent
from louder.prompts import Prompts
from louder.scenarios import Scenario, group_ids, load_group, load_scenario, scenario_ids
from louder.simulation.case import CaseFrames, arms, case_columns, case_model, labelled, run_arms, seed_case_calls
from louder.simulation.runner import plan_cases
from louder.status import status_block, status_by
from louder.task import Item, Task
from louder.types import CASE_KEYS, DECISION_COLUMNS, NETWORK_COLUMNS, PERSONA_COLUMNS, typed

CONTROL_COLUMNS = CASE_KEYS + ["node", "agent_id", "round", "attribute", "decision", "target", "status", "p_target",
                               "neighbours", "neighbour_share", "changed"]


def arm_columns() -> list[str]:
    """The columns naming a network arm's levels (every crossed and own-agents dimension), which
    control.parquet carries beside the case columns."""
    return [d.id for design in (OWN, CROSSED) for d in dimensions.registered(design)]
EDGE_COLUMNS = CASE_KEYS + ["source", "target"]
DETAIL = [f for f in DECISION_FIELDS if f not in ("decision", "target", "status", "p_target")]


@dataclass(frozen=True)
class Answer(Outcome):
    """An ``Outcome`` (what the rounds need) with the rest of the agent's decision row."""

    detail: tuple = ()  # (field, value) pairs of DETAIL


def as_answer(d: Decision) -> Answer:
    return Answer(d.decision, d.status, d.p_target, tuple((f, getattr(d, f)) for f in DETAIL))


@dataclass(frozen=True)
class CaseRounds:
    """What ``influence`` returns for one case: one row per agent × round (LLM) and for the control."""

    rows: pd.DataFrame     # run_rounds rows + the DETAIL columns
    control: pd.DataFrame  # run_rounds rows of the control rule
    edges: pd.DataFrame    # source, target


Ask = Callable[[NetworkAgent, str, int], Answer]  # (agent, neighbour message, round) → its answer


def influence(graph: nx.Graph, agents: pd.DataFrame, initial: Mapping[Any, Answer], ask: Ask, rounds: int,
              choices: Sequence[str], target: str, control: Any, seed: int = 0,
              mapper: Callable[[Callable, list], Iterable] | None = None, order: Iterable[int] | None = None,
              templates: Mapping | None = None) -> CaseRounds:
    """Rounds 0..``rounds`` of one case on ``graph`` for the LLM (``ask``) and for the control.

    ``agents`` has one row per agent with ``agent_id`` (node i = the i-th by agent_id) and any
    attributes; ``initial[agent_id]`` is its round-0 answer. In round r ≥ 1, ``ask(agent, message, r)``
    gets the neighbour message rendered from the round r−1 snapshot (``neighbour_message``).
    ``control`` is a ``ControlConfig`` (rule, threshold, self_weight). ``order`` is the order agents are
    created in, which must not (and does not) matter."""
    agents = agents.sort_values("agent_id", ignore_index=True)
    ids = agents["agent_id"].tolist()
    missing = [i for i in ids if i not in initial]
    if missing:
        raise ValueError(f"no round-0 answer for agents {missing[:5]}")
    start = [initial[i] for i in ids]
    details: dict[tuple[int, int], tuple] = {}

    def decide(agent: NetworkAgent, nb: NeighbourCounts, share: float) -> Outcome:
        r = agent.model.round
        answer = ask(agent, neighbour_message(nb, choices, target, templates), r)
        details[(r, agent.node)] = answer.detail
        return answer

    llm = InfluenceModel(graph, agents, seed=seed, order=order)
    rows = run_rounds(llm, start, rounds, decide, choices, target, mapper)
    for node, a in enumerate(start):
        details[(0, node)] = a.detail
    extra = pd.DataFrame([dict(details[(r, n)]) for r, n in zip(rows["round"], rows["node"])], columns=DETAIL)
    rows = pd.concat([rows, extra], axis=1)
    rule = control_rule(control.rule, choices, target, threshold=control.threshold, self_weight=control.self_weight)
    ctl = run_rounds(InfluenceModel(graph, agents, seed=seed, order=order),
                     [Outcome(a.decision, a.status, a.p_target) for a in start], rounds, rule, choices, target)
    edges = pd.DataFrame(sorted((min(u, v), max(u, v)) for u, v in graph.edges), columns=["source", "target"],
                         dtype="int64")
    return CaseRounds(rows, ctl, edges)


# --- single-attribute agents (the seed simulation's agents) -----------------------------------

def seed_agents(group_id: str, attributes: Sequence[str], per_attribute: int) -> pd.DataFrame:
    """The agents table of a seed case: agent_id as BiasModel numbers them (attribute-major, from 1),
    the attribute, and the same attribute under the group's id (what ``homophily_sbm``'s ``group``
    names; ``group: attribute`` works too)."""
    rows = [dict(agent_id=1 + i * per_attribute + k, attribute=a, replicate=k)
            for i, a in enumerate(attributes) for k in range(per_attribute)]
    df = pd.DataFrame(rows)
    return df.assign(**{group_id: df["attribute"]}) if group_id not in df.columns else df


def case_graph(config: ExperimentConfig, group_id: str) -> nx.Graph:
    """The graph of the cases of ``group_id`` (the same for every model, condition and scenario, so
    they can be compared); a bad ``network:`` is one LouderError before any model is called."""
    net = config.network
    if net.generator == "homophily_sbm":
        g = net.params.get("group")
        if g not in (group_id, "attribute"):
            raise LouderError(f"network.params.group: {g!r} is not a column of the agents of group {group_id}; "
                              f"single-attribute agents carry one group — use group: {group_id} (or "
                              "group: attribute, the group of each case)")
    g = load_group(group_id, config.simulation.groups)
    return build_graph(net, seed_agents(g.id, g.attributes, config.simulation.agents))


# --- mixed-model populations (``mix:``, issue 48): each agent asks its own model ---------------------------

def mixed_cases(config: ExperimentConfig) -> list[tuple[str, str, str, str]]:
    """With a mix, the cases of the one mixed population (its label in the model column); else the cases."""
    cases = plan_cases(config)
    if config.mix is None:
        return cases
    from louder.simulation.convention_run import mix_label

    return list(dict.fromkeys((mix_label(config.mix), *c[1:]) for c in cases))


def mixed_models(config: ExperimentConfig, case_key: tuple[str, str, str, str]) -> dict[tuple[str, int], str]:
    """(attribute, replicate) → the model that agent asks: each attribute's agents split by the mix's shares
    (largest remainders: the same counts for every attribute, what the plan counts), drawn at random from a
    seed of the case."""
    from louder.simulation.convention_run import apportion

    n = config.simulation.agents
    counts = apportion(n, list(config.mix.values()))
    out = {}
    for a in load_group(case_key[3], config.simulation.groups).attributes:
        order = np.random.default_rng(stable_seed(config.seed, "mix", *case_key, a)).permutation(n)
        models = np.repeat(list(config.mix), counts)
        out.update({(a, int(r)): str(m) for r, m in zip(order, models)})
    return out


def mixed_calls(config: ExperimentConfig, case_key: tuple[str, str, str, str], prompts: Prompts, rounds: int,
                message: str, arm: bool) -> tuple:
    """A case's calls (``seed_case_calls``), per model of a mix: each model's agents per attribute."""
    if config.mix is None:
        return seed_case_calls(config, case_key, prompts, rounds, message, arm)
    from louder.simulation.convention_run import apportion

    out = []
    for model, k in zip(config.mix, apportion(config.simulation.agents, list(config.mix.values()))):
        part = config.model_copy(update={"simulation": config.simulation.model_copy(update={"agents": k})})
        out += seed_case_calls(part, (model, *case_key[1:]), prompts, rounds, message, arm)
    return tuple(out)


def network_case(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                 graph: nx.Graph, tick: Callable[[], None] | None = None,
                 order: Iterable[int] | None = None, sessions: Mapping | None = None) -> CaseFrames:
    """One case, each arm in turn (``run_arms``: policy variants × dimension levels): the decision rows of
    every round, the persona rows, and ``control.parquet`` / ``network.parquet`` (the edges, shared by the
    arms). Each arm is a network of its own on the same graph: its agents decide every round under its
    levels and hear what their neighbours chose under them (``louder.dimensions``). With a mix
    (``config.mix``) each agent asks its own model of ``sessions`` (``mixed_models``), and the rows say which
    (``agent_model``)."""
    keys = case_columns(run_id, case_key)
    inf = config.influence
    mixed = mixed_models(config, case_key) if config.mix is not None else None

    def one(variant: str, scenario: Scenario, levels: dict[str, str]) -> CaseFrames:
        abm = case_model(config, session, case_key, scenario, levels)
        ordered = abm.populate()  # node i = the i-th agent by agent_id
        if mixed is not None:
            for a in ordered:
                a.own_session = sessions[mixed[(a.attribute, a.replicate)]]
        session.client.map(lambda a: a.write_persona() if a.persona is None else None, ordered)
        # Round 0 — exactly the seed simulation's calls (same agents, seeds and cache keys) — and beside
        # it the no-influence arm, which needs only the personas: one pass, so a batch export records
        # both in one stage.
        arm_rounds = range(1, inf.rounds + 1) if arm_runs(config) else range(0)
        jobs = [(a, 0) for a in ordered] + [(a, r) for r in arm_rounds for a in ordered]
        answers = session.client.map(
            lambda job: job[0].decide() if job[1] == 0 else job[0].decide(None, job[1], arm="no_influence"), jobs,
            tick)
        for a, d in zip(ordered, answers):
            a.take(d)
        by_id = {a.agent_id: a for a in abm.agents}
        agents = pd.DataFrame([dict(agent_id=a.agent_id, attribute=a.attribute, replicate=a.replicate)
                               for a in abm.agents])
        agents = agents.assign(**{case_key[3]: agents["attribute"]})
        initial = {i: as_answer(Decision(**{f: getattr(a, f) for f in DECISION_FIELDS})) for i, a in by_id.items()}

        def ask(agent: NetworkAgent, message: str, r: int) -> Answer:
            return as_answer(by_id[agent.attributes["agent_id"]].decide(message, r))

        def mapper(fn, items):
            return session.client.map(fn, items, tick)

        out = influence(graph, agents, initial, ask, inf.rounds, scenario.labels, scenario.target, inf.control,
                        seed=stable_seed(config.seed, "network", *case_key), mapper=mapper, order=order)
        rows = out.rows.assign(**keys, name=[by_id[i].name for i in out.rows["agent_id"]],
                               persona=[by_id[i].persona_text for i in out.rows["agent_id"]],
                               **{d.id: [by_id[i].level(d.id) for i in out.rows["agent_id"]]
                                  for d in dimensions.registered()})
        mix = ["agent_model"] if mixed is not None else []
        if mixed is not None:
            rows = rows.assign(agent_model=[by_id[i].session.label for i in rows["agent_id"]])
        case = {k: v for k, v in keys.items() if k != "run_id"}
        arm_levels = {c: levels.get(c, dimensions.get(c).default) for c in arm_columns()}
        extra = {"control.parquet": out.control.assign(**case, **arm_levels)[CONTROL_COLUMNS + arm_columns()],
                 "network.parquet": out.edges.assign(**case)[EDGE_COLUMNS]}
        if arm_rounds:
            nodes = {a.agent_id: node for node, a in enumerate(ordered)}
            extra["no_influence.parquet"] = no_influence_rows(jobs[len(ordered):], answers[len(ordered):], nodes, keys)
            if mixed is not None:
                arm_rows = extra["no_influence.parquet"]
                extra["no_influence.parquet"] = arm_rows.assign(
                    agent_model=[by_id[i].session.label for i in arm_rows["agent_id"]])
        return CaseFrames(rows[DECISION_COLUMNS + dimensions.extra_columns() + NETWORK_COLUMNS + mix],
                          [{**keys, **a.persona_row()} for a in ordered], extra)

    return run_arms(config, load_scenario(case_key[2], config.simulation.scenarios), one,
                    labelled(config.simulation.variants),
                    shared=("network.parquet",))


def network_manifest(config: ExperimentConfig, graphs: Mapping[str, nx.Graph]) -> dict:
    """The manifest's ``network`` field: the config and, per group, the graph's size and homophily
    (share of ties joining agents of the same attribute)."""
    net = config.network
    per_group = {}
    for gid, g in graphs.items():
        attrs = seed_agents(gid, load_group(gid, config.simulation.groups).attributes,
                            config.simulation.agents)["attribute"].to_numpy()
        within = float(np.mean([attrs[u] == attrs[v] for u, v in g.edges])) if g.number_of_edges() else None
        per_group[gid] = dict(nodes=g.number_of_nodes(), edges=g.number_of_edges(),
                              mean_degree=round(2 * g.number_of_edges() / max(1, g.number_of_nodes()), 3),
                              within_share=None if within is None else round(within, 4))
    return dict(generator=net.generator, params=dict(net.params), seed=net.seed,
                nodes=sum(v["nodes"] for v in per_group.values()),
                edges=sum(v["edges"] for v in per_group.values()), graphs=per_group, rounds=config.influence.rounds,
                control=config.influence.control.model_dump(mode="json"), mode="agents", replicates=None, buckets=None,
                influence_template_sha256=stable_hash(influence_templates())[:16])


def arm_runs(config: ExperimentConfig) -> bool:
    """Whether a network run asks the no-influence arm: rounds of influence, the arm on, and answers
    that a second asking can change (score mode with argmax reads the same probabilities again)."""
    repeats = config.simulation.decision_mode == "score" and config.simulation.score_pick == "argmax"
    return config.influence.rounds > 0 and config.influence.no_influence and not repeats


def no_influence_rows(jobs: list, answers: list, nodes: dict, keys: dict) -> pd.DataFrame:
    """The no-influence arm's table: for each job (agent, round r ≥ 1) the agent's answer to round 0's
    prompt asked again, with a seed and cache key of its own (``PersonaAgent.decide(arm="no_influence")``);
    one row per agent × round, the decision columns of decisions.parquet plus round and node."""
    rows = [dict(keys, attribute=a.attribute, agent_id=a.agent_id, replicate=a.replicate, name=a.name,
                 persona=a.persona_text, round=r, node=nodes[a.agent_id], **a.levels,
                 **{f: getattr(d, f) for f in DECISION_FIELDS})
            for (a, r), d in zip(jobs, answers)]
    return pd.DataFrame(rows, columns=DECISION_COLUMNS + dimensions.extra_columns() + ["round", "node"])


def check_network_config(config: ExperimentConfig) -> None:
    """What an agents-mode network run cannot do, as one LouderError naming the field."""
    if config.network is None:
        raise LouderError("network: not set; a network run needs `network:` (see docs/networks.md)")
    if config.population is not None and config.population.mode != "agents":
        raise LouderError("population.mode: archetype is run by the archetype runner, not the agents-mode network run")
    if config.population is not None:
        raise LouderError("population: a population on a network runs through the population run; "
                          "drop `population:` for single-attribute agents")
    if config.executor != "local":
        raise LouderError("executor: ray does not run network runs (rounds need every answer of the previous "
                          "round); use executor: local")


def network_task(config: ExperimentConfig, order: Callable[[int], Iterable[int]] | None = None) -> Task:
    """The network run as a ``Task``: one item per case (each policy variant in turn); round 0 is
    the case's seed simulation. ``order(n)`` (tests) gives the order the n agents are placed on the
    graph in."""
    check_network_config(config)
    graphs = {g: case_graph(config, g) for g in group_ids(config.simulation.groups)}
    prompts = Prompts()
    # a typical neighbour message for the estimate: 8 neighbours split between the target and another choice
    messages = {}
    for sid in scenario_ids(config.simulation.scenarios):
        s = load_scenario(sid, config.simulation.scenarios)
        counts = {c: 0 for c in s.labels} | {s.target: 4, next(c for c in s.labels if c != s.target): 4}
        messages[sid] = neighbour_message(NeighbourCounts(8, counts, 0, 0, 0, 0.5), s.labels, s.target)
    arm = arm_runs(config)
    rounds = config.influence.rounds
    answers = rounds + 1 + (rounds if arm else 0)  # per agent and arm (variant × dimension levels)
    items = [Item(c, graphs[c[3]].number_of_nodes() * answers * arms(config, c[2]),
                  mixed_calls(config, c, prompts, rounds, messages[c[2]], arm)) for c in mixed_cases(config)]

    def run_case(ctx, case_key, tick):
        g = graphs[case_key[3]]
        # a mixed population's case is run with its first model's session (its agents each ask their own)
        session = ctx.sessions[case_key[0] if config.mix is None else config.models[0].label]
        return network_case(config, session, ctx.run_id, case_key, g, tick,
                            order(g.number_of_nodes()) if order else None, ctx.sessions)

    def tables(ctx, results):
        label = labelled(config.simulation.variants)
        # an arm: the variant and the levels of the dimensions the run varies (own-agents first)
        own = dimensions.labelled(config, OWN)
        variant = (["variant"] if label else []) + own + dimensions.labelled(config, CROSSED)
        decisions = typed(pd.concat([r.decisions for r in results], ignore_index=True))
        decisions = decisions.sort_values(CASE_KEYS + variant + ["round", "agent_id"], ignore_index=True)
        personas = pd.DataFrame([p for r in results for p in r.personas], columns=PERSONA_COLUMNS + own)
        personas = personas.sort_values(CASE_KEYS + own + ["agent_id"], ignore_index=True)
        control = typed(pd.concat([r.extra["control.parquet"] for r in results], ignore_index=True)).sort_values(
            CASE_KEYS + variant + ["round", "node"], ignore_index=True)
        edges = pd.concat([r.extra["network.parquet"] for r in results], ignore_index=True)
        out = {"decisions.parquet": decisions, "personas.parquet": personas, "network.parquet": edges,
               "control.parquet": control}
        counted = {"decisions": decisions, "personas": personas, "control": control, "network": edges}
        if arm:
            arm_rows = typed(pd.concat([r.extra["no_influence.parquet"] for r in results], ignore_index=True))
            out["no_influence.parquet"] = counted["no_influence"] = arm_rows.sort_values(
                CASE_KEYS + variant + ["round", "agent_id"], ignore_index=True)
        fields = status_block(counted, CASE_KEYS + ["attribute", "round"] + (["variant"] if label else []) + own)
        if config.mix is not None:  # every answer per model of the mixed population
            fields["status_by_model"] = status_by(decisions, ["model", "agent_model", "round"])
        fields["network"] = network_manifest(config, graphs)
        return out, fields

    return Task("network", items, run_case, tables, "manifest.json")
