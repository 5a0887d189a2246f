"""Network runs (``network:`` in the config, ``mode: agents``): the agents of each case on a social
network, deciding again in rounds of influence, beside a no-LLM control (docs/networks.md).

Per case (model × condition × scenario × group, as the seed simulation):

* round 0 is the seed simulation itself — the same ``BiasModel`` and ``PersonaAgent``s, so the same
  prompts, seeds and cache keys: round 0 equals the seed run's decisions exactly;
* the agents are placed on the case's graph (node i = the i-th agent by ``agent_id``) on Mesa's
  ``Network`` space, and in rounds 1..R every agent reads the counts of its neighbours' round r−1
  choices (``neighbour_message``) in its decision prompt and decides again — synchronously
  (``run_rounds``), each round's calls side by side through the session's client;
* a control starts from the same round-0 decisions on the same graph and updates by
  ``config.control``'s rule.

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

from louder import estimate
from louder.agents import DECISION_FIELDS, Decision
from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.base import stable_hash, stable_seed
from louder.networks.graphs import build_graph
from louder.networks.rounds import NeighbourCounts, Outcome, control_rule, influence_templates, neighbour_message, \
    run_rounds
from louder.networks.space import InfluenceModel, NetworkAgent
from louder.scenarios import load_group, load_scenario
from louder.simulation.model import BiasModel, Case
from louder.simulation.runner import _typed_decisions, plan_cases
from louder.status import status_by, status_counts
from louder.task import Task
from louder.types import DECISION_COLUMNS, PERSONA_COLUMNS

CASE_KEYS = ["model", "condition", "scenario", "group"]
# decisions.parquet of a network run: the seed columns, then these (COMMON schema).
NETWORK_COLUMNS = ["round", "node", "neighbours", "neighbours_valid", "neighbour_share", "changed"]
CONTROL_COLUMNS = CASE_KEYS + ["node", "agent_id", "round", "attribute", "decision", "target", "status", "p_target",
                               "neighbours", "neighbour_share", "changed"]
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
    g = load_group(group_id)
    return build_graph(net, seed_agents(g.id, g.attributes, config.agents))


def network_case(config: ExperimentConfig, session, run_id: str, case_key: tuple[str, str, str, str],
                 graph: nx.Graph, tick: Callable[[], None] | None = None,
                 order: Iterable[int] | None = None) -> tuple[pd.DataFrame, list[dict], pd.DataFrame, pd.DataFrame]:
    """One case: (decisions rows of every round, persona rows, control rows, edges)."""
    model_label, condition, scenario_id, group_id = case_key
    case = Case(model_label, condition, load_scenario(scenario_id), load_group(group_id), config.seed)
    # Round 0: exactly the seed simulation of the case (same agents, seeds and cache keys).
    abm = BiasModel(case, session, config.agents,
                    seed=stable_seed(config.seed, model_label, condition, scenario_id, group_id))
    abm.step(tick)
    by_id = {a.unique_id: a for a in abm.agents}
    agents = pd.DataFrame([dict(agent_id=a.unique_id, attribute=a.attribute, replicate=a.replicate)
                           for a in abm.agents])
    agents = agents.assign(**{case.group.id: agents["attribute"]})
    initial = {i: as_answer(Decision(**{f: getattr(a, f) for f in DECISION_FIELDS})) for i, a in by_id.items()}

    def ask(agent: NetworkAgent, message: str, r: int) -> Answer:
        return as_answer(by_id[agent.attributes["agent_id"]].decide(message, r))

    def mapper(fn, items):
        return session.client.map(fn, items, tick)

    scenario = case.scenario
    out = influence(graph, agents, initial, ask, config.rounds, scenario.labels, scenario.target, config.control,
                    seed=stable_seed(config.seed, "network", *case_key), mapper=mapper, order=order)
    names = {a.unique_id: (a.name, a.persona_text) for a in abm.agents}
    rows = out.rows.assign(run_id=run_id, model=model_label, condition=condition, scenario=scenario.id,
                           group=case.group.id, name=[names[i][0] for i in out.rows["agent_id"]],
                           persona=[names[i][1] for i in out.rows["agent_id"]])
    rows = rows[DECISION_COLUMNS + NETWORK_COLUMNS]
    key = dict(model=model_label, condition=condition, scenario=scenario.id, group=case.group.id)
    control = out.control.assign(**key)[CONTROL_COLUMNS]
    edges = out.edges.assign(**key)[EDGE_COLUMNS]
    personas = []
    for a in sorted(abm.agents, key=lambda a: a.unique_id):
        p = a.persona
        personas.append(dict(
            run_id=run_id, **key, attribute=a.attribute, agent_id=a.unique_id, replicate=a.replicate,
            name=p.name, persona=p.persona, status=p.status, prompt=p.prompt, raw_response=p.outcome.raw,
            reason=p.reason, attempts=p.outcome.attempts, latency_s=p.outcome.latency_s,
            input_tokens=p.outcome.input_tokens, output_tokens=p.outcome.output_tokens))
    return rows, personas, control, edges


def typed_network_decisions(df: pd.DataFrame) -> pd.DataFrame:
    """The seed dtypes plus the network columns' (the Parquet schema of every network run)."""
    return _typed_decisions(df).astype({"round": "int64", "node": "int64", "neighbours": "int64",
                                        "neighbours_valid": "Int64", "neighbour_share": "Float64",
                                        "changed": "boolean"})


def typed_control(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({"node": "int64", "agent_id": "int64", "round": "int64", "decision": "string",
                      "target": "boolean", "status": "string", "p_target": "Float64", "neighbours": "int64",
                      "neighbour_share": "Float64", "changed": "boolean"})


def network_manifest(config: ExperimentConfig, graphs: Mapping[str, nx.Graph]) -> dict:
    """The manifest's ``network`` field: the config and, per group, the graph's size and homophily
    (share of ties joining agents of the same attribute)."""
    net = config.network
    per_group = {}
    for gid, g in graphs.items():
        attrs = seed_agents(gid, load_group(gid).attributes, config.agents)["attribute"].to_numpy()
        within = float(np.mean([attrs[u] == attrs[v] for u, v in g.edges])) if g.number_of_edges() else None
        per_group[gid] = dict(nodes=g.number_of_nodes(), edges=g.number_of_edges(),
                              mean_degree=round(2 * g.number_of_edges() / max(1, g.number_of_nodes()), 3),
                              within_share=None if within is None else round(within, 4))
    return dict(generator=net.generator, params=dict(net.params), seed=net.seed,
                nodes=sum(v["nodes"] for v in per_group.values()),
                edges=sum(v["edges"] for v in per_group.values()), graphs=per_group, rounds=config.rounds,
                control=config.control.model_dump(mode="json"), mode=config.mode, replicates=None, buckets=None,
                influence_template_sha256=stable_hash(influence_templates())[:16])


def check_network_config(config: ExperimentConfig) -> None:
    """What an agents-mode network run cannot do, as one LouderError naming the field."""
    if config.network is None:
        raise LouderError("network: not set; a network run needs `network:` (see docs/networks.md)")
    if config.mode != "agents":
        raise LouderError("mode: archetype is run by the archetype runner, not the agents-mode network run")
    if config.population is not None:
        raise LouderError("population: a population on a network runs through the population run; "
                          "drop `population:` for single-attribute agents")
    if config.executor != "local":
        raise LouderError("executor: ray does not run network runs (rounds need every answer of the previous "
                          "round); use executor: local")


def network_task(config: ExperimentConfig, order: Callable[[int], Iterable[int]] | None = None) -> Task:
    """The network run as a ``Task``: one item per case; round 0 is the case's seed simulation.
    ``order(n)`` (tests) gives the order the n agents are placed on the graph in."""
    check_network_config(config)
    graphs = {g: case_graph(config, g) for g in config.groups}

    def run_case(ctx, case_key, tick):
        g = graphs[case_key[3]]
        return network_case(config, ctx.sessions[case_key[0]], ctx.run_id, case_key, g, tick,
                            order(g.number_of_nodes()) if order else None)

    def tables(ctx, results):
        keys = CASE_KEYS + ["round", "agent_id"]
        decisions = typed_network_decisions(pd.concat([r[0] for r in results], ignore_index=True))
        decisions = decisions.sort_values(keys, ignore_index=True)
        personas = pd.DataFrame([p for r in results for p in r[1]], columns=PERSONA_COLUMNS)
        personas = personas.sort_values(CASE_KEYS + ["agent_id"], ignore_index=True)
        control = typed_control(pd.concat([r[2] for r in results], ignore_index=True)).sort_values(
            CASE_KEYS + ["round", "node"], ignore_index=True)
        edges = pd.concat([r[3] for r in results], ignore_index=True)
        fields = dict(
            rows={"decisions": len(decisions), "personas": len(personas), "control": len(control),
                  "network": len(edges)},
            status_counts={"decisions": status_counts(decisions), "personas": status_counts(personas),
                           "control": status_counts(control)},
            low_mass_rows=int((decisions["choice_mass"] < 0.99).sum()),
            status_by_attribute=[{**r, "round": int(r["round"])}
                                 for r in status_by(decisions, CASE_KEYS + ["attribute", "round"])],
            network=network_manifest(config, graphs),
        )
        return {"decisions.parquet": decisions, "personas.parquet": personas, "network.parquet": edges,
                "control.parquet": control}, fields

    size = lambda c: graphs[c[3]].number_of_nodes() * (config.rounds + 1)  # noqa: E731
    return Task("network", plan_cases(config), size, run_case, tables, "manifest.json",
                planned_calls=estimate.count_calls(config, "network"))
