"""The archetype run's rows as the whole-table code made them before issue 49 (louder 0.x, archetype_run.py:
``simulate``, ``agent_rows``, ``control_rows``), kept verbatim as the reference the streamed rows must equal
value for value (tests/test_archetype_run.py). It holds every row at once, Mesa agents and a networkx
graph: use it on small designs only."""

from __future__ import annotations

import numpy as np
import pandas as pd

from louder.llm.base import stable_seed
from louder.networks.archetype import ROUND0, assign_replicates, bucket_of, uniform_draws
from louder.networks.graphs import build_graph
from louder.networks.rounds import Outcome, control_rule, run_rounds
from louder.networks.space import InfluenceModel
from louder.populations import draw_agents
from louder.scenarios import group_ids, load_scenario, scenario_ids
from louder.types import DECISION_COLUMNS, STATUSES

CONDITION = "no_persona"
CONTROL_COLUMNS = ["model", "condition", "scenario", "group", "node", "round", "attribute", "decision", "target",
                   "status"]


class Plan:
    """The pieces of the old Plan the reference reads: the agents table, the graph, the calls' cells."""

    def __init__(self, plan):
        self.config, self.buckets, self.population = plan.config, plan.buckets, plan.population
        self.call_buckets, self.descriptions = plan.call_buckets, plan.descriptions
        drawn = draw_agents(self.population, self.config.simulation.agents, self.config.seed)
        self.agents = drawn.assign(replicate=assign_replicates(drawn, self.config.population.replicates))
        self.cells = np.unique(drawn["cell_id"].to_numpy())
        self.graph = build_graph(self.config.network, self.agents) if self.config.network else None


def simulate(plan: Plan, calls: pd.DataFrame, scenario, case_seed: int, adjacency=None) -> pd.DataFrame:
    """Rounds 0..R for every agent, vectorised: one row per agent per round (node = row of the agents
    table), with decision, target, status, p_target, choice_mass, raw_response, neighbours,
    neighbour_share, changed, bucket. Pure given the calls table."""
    config = plan.config
    agents = plan.agents
    n, K = len(agents), config.population.replicates
    order = [scenario.target] + [c for c in scenario.labels if c != scenario.target]
    cell_index = pd.Index(plan.cells)
    bpos = {b: i for i, b in enumerate(plan.call_buckets)}  # bucket index → axis position
    lut = np.array([bpos.get(x, -1) for x in range(ROUND0, len(plan.buckets))])  # indexed by bucket + 1
    shape = (len(plan.cells), len(bpos), K)
    # Dense lookup tables: cumulative probability (target first), status code, raw text, mass.
    cum = np.full(shape + (len(order),), np.nan)
    status = np.full(shape, STATUSES.index("error"), dtype=np.int8)  # a call with no row counts as error
    raw = np.full(shape, "[no answer]", dtype=object)
    mass = np.full(shape, np.nan)
    ci, bi = cell_index.get_indexer(calls["cell_id"]), calls["bucket"].map(bpos).to_numpy()
    ki = calls["replicate"].to_numpy()
    cum[ci, bi, ki] = np.cumsum(calls[[f"p_{c}" for c in order]].to_numpy(dtype=float), axis=1)
    status[ci, bi, ki] = calls["status"].map(STATUSES.index).to_numpy()
    raw[ci, bi, ki] = calls["raw_response"].to_numpy(dtype=object)
    mass[ci, bi, ki] = calls["choice_mass"].to_numpy(dtype=float)
    cell = cell_index.get_indexer(agents["cell_id"])
    rep = agents["replicate"].to_numpy()
    degree = np.zeros(n, dtype=np.int64) if adjacency is None else np.asarray(adjacency.sum(axis=1)).ravel().astype(np.int64)
    labels = np.array(order + [None], dtype=object)
    valid_code = STATUSES.index("valid")
    frames = []
    prev_valid = prev_choice = None
    rounds = config.influence.rounds if adjacency is not None else 0
    for r in range(rounds + 1):
        if r == 0:
            share = np.full(n, np.nan)
            b = np.full(n, ROUND0)
        else:
            v = prev_valid.astype(float)
            t = (prev_valid & (prev_choice == 0)).astype(float)
            valid_n = adjacency @ v
            with np.errstate(invalid="ignore", divide="ignore"):
                share = np.where(valid_n > 0, (adjacency @ t) / valid_n, np.nan)
            b = bucket_of(share, plan.buckets)
        pos = lut[b + 1]
        st = status[cell, pos, rep]
        valid = st == valid_code
        c = cum[cell, pos, rep]
        u = uniform_draws(case_seed, r, n)
        choice = np.where(valid, np.minimum((u[:, None] >= c).sum(axis=1), len(order) - 1), len(order))
        changed = pd.array(np.zeros(n, dtype=bool), dtype="boolean")
        if r == 0:
            changed[:] = pd.NA
        else:
            changed = pd.array(choice != prev_choice, dtype="boolean")
            changed[~(valid & prev_valid)] = pd.NA
        target = pd.array(choice == 0, dtype="boolean")
        target[~valid] = pd.NA
        p_t = pd.array(np.where(valid, c[:, 0], np.nan), dtype="Float64")
        bucket = pd.array(np.where(b == ROUND0, np.nan, plan.buckets[np.maximum(b, 0)]), dtype="Float64")
        frames.append(pd.DataFrame({
            "round": np.full(n, r, dtype=np.int64), "node": np.arange(n, dtype=np.int64),
            "decision": pd.array(labels[choice], dtype="string"), "target": target,
            "status": pd.array(np.array(STATUSES, dtype=object)[st], dtype="string"), "p_target": p_t,
            "choice_mass": pd.array(np.where(valid, mass[cell, pos, rep], np.nan), dtype="Float64"),
            "raw_response": pd.array(raw[cell, pos, rep], dtype="string"),
            "neighbours": degree, "neighbour_share": pd.array(share, dtype="Float64"), "changed": changed,
            "bucket": bucket}))
        prev_valid, prev_choice = valid, choice
    return pd.concat(frames, ignore_index=True)


def agent_rows(plan: Plan, sim: pd.DataFrame, run_id: str, model: str, scenario_id: str, group: str,
               descriptions: dict) -> pd.DataFrame:
    """decisions.parquet rows of one case (model × scenario × analysed group)."""
    agents = plan.agents
    node = sim["node"].to_numpy()
    gids = plan.population.group_ids
    desc = np.array([descriptions[int(c), int(k)] for c, k in zip(agents["cell_id"], agents["replicate"])],
                    dtype=object)
    df = pd.DataFrame({
        "run_id": run_id, "model": model, "condition": CONDITION, "scenario": scenario_id, "group": group,
        "attribute": pd.array(agents[group].to_numpy(dtype=object)[node], dtype="string"),
        "agent_id": agents["agent_id"].to_numpy(dtype=np.int64)[node],
        "replicate": agents["replicate"].to_numpy(dtype=np.int64)[node],
        "name": pd.array([None] * len(sim), dtype="string"),
        "persona": pd.array(desc[node], dtype="string"),
        "decision": sim["decision"], "target": sim["target"], "p_target": sim["p_target"],
        "rationale": pd.array([None] * len(sim), dtype="string"), "status": sim["status"],
        "raw_response": sim["raw_response"],
        # the agent makes no call of its own: its archetype's call is in archetypes.parquet
        "attempts": np.zeros(len(sim), dtype=np.int64), "latency_s": np.zeros(len(sim)),
        "input_tokens": pd.array([None] * len(sim), dtype="Int64"),
        "output_tokens": pd.array([None] * len(sim), dtype="Int64"), "choice_mass": sim["choice_mass"],
        "thinking": pd.array([None] * len(sim), dtype="string"),
        "reasoning_tokens": pd.array([None] * len(sim), dtype="Int64"), "reasoning": "default",
        "intervention": "none",  # archetype mode takes no experiment dimension (louder.dimensions.check)
        # one shared prompt per cell, its choices listed as written (choice_order: as_written only)
        "choice_order": "|".join(load_scenario(scenario_id, plan.config.simulation.scenarios).labels),
        "wording": "as_written", "signal": "stated",
    })[DECISION_COLUMNS]
    extra = {"variant": "base", "cell_id": agents["cell_id"].to_numpy(dtype=np.int64)[node],
             "weight": agents["weight"].to_numpy()[node],
             **{f"attr_{g}": pd.array(agents[g].to_numpy(dtype=object)[node], dtype="string") for g in gids},
             **{c: sim[c] for c in ("round", "node", "neighbours", "neighbour_share", "changed", "bucket")}}
    return df.assign(**extra)


def control_rows(plan: Plan, model_abm, sim: pd.DataFrame, scenario, model: str) -> pd.DataFrame:
    """The no-LLM control (``control.rule``) from the same round-0 decisions on the same graph."""
    config = plan.config
    r0 = sim[sim["round"] == 0]
    initial = [Outcome(d if s == "valid" else None, s, None if pd.isna(p) else float(p))
               for d, s, p in zip(r0["decision"].to_numpy(object), r0["status"].to_numpy(object),
                                  r0["p_target"].to_numpy(dtype=float, na_value=np.nan))]
    control = config.influence.control
    rule = control_rule(control.rule, scenario.labels, scenario.target, threshold=control.threshold,
                        self_weight=control.self_weight)
    rows = run_rounds(model_abm, initial, config.influence.rounds, rule, scenario.labels, scenario.target)
    return rows[["node", "round", "decision", "target", "status"]].assign(model=model, condition=CONDITION,
                                                                         scenario=scenario.id)



def tables(new_plan, calls_by_case: dict, run_id: str) -> dict[str, pd.DataFrame]:
    """decisions.parquet and control.parquet of a run whose calls are ``calls_by_case[(model, scenario)]``,
    made the old way (the old task's ``tables``)."""
    plan = Plan(new_plan)
    config = plan.config
    groups = group_ids(config.simulation.groups)
    adjacency = abm = None
    if plan.graph is not None:
        abm = InfluenceModel(plan.graph, plan.agents, seed=config.seed)
        adjacency = abm.adjacency().astype(np.float64)
    decisions, controls = [], []
    for m in config.models:
        for scenario_id in scenario_ids(config.simulation.scenarios):
            model, calls = m.label, calls_by_case[(m.label, scenario_id)]
            scenario = load_scenario(scenario_id, config.simulation.scenarios)
            sim = simulate(plan, calls, scenario, stable_seed(config.seed, "archetype-draws", model, scenario_id),
                           adjacency)
            for g in groups:
                decisions.append(agent_rows(plan, sim, run_id, model, scenario.id, g, plan.descriptions))
            if abm is not None and config.influence.rounds:
                ctl = control_rows(plan, abm, sim, scenario, model)
                for g in groups:
                    controls.append(ctl.assign(group=g, attribute=plan.agents[g].to_numpy(object)[ctl["node"]]))
    out = {"decisions.parquet": pd.concat(decisions, ignore_index=True)}
    if controls:
        out["control.parquet"] = pd.concat(controls, ignore_index=True)[CONTROL_COLUMNS]
    return out
