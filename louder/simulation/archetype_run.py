"""``mode: archetype``: population agents that share a cell share an archetype, and the model is
called per archetype, not per agent (docs/networks.md, "Archetype mode").

The calls (``decision_mode: score``):

- round 0: one call per cell × replicate (K = ``replicates``);
- with a network and ``rounds`` ≥ 1: one call per cell × share bucket × replicate, its prompt
  carrying the bucket's share ("Of the people you know best, 75 % decided to evacuate."). A bucket's
  prompt is the same in every round, so the *whole* plan is asked once, up front:

      calls = scenarios × models × cells × K × (1 + B·[rounds ≥ 1])

  exactly (cells = population cells with at least one agent; B = number of buckets), whatever
  the number of agents and rounds. Every prompt is known before any answer arrives, so a batch
  export is one stage. (Asking only the buckets some agent lands in would save calls only where
  the network leaves a bucket empty, and would turn the run into one batch stage per round.)

The prompt (``archetype`` in prompts.yaml) is the Appendix C action prompt with the cell's
intersectional description in place of a generated persona — no persona is written, which keeps
calls at the count above — and the situation first, as a system message shared by every call of
the scenario (the embedded model keeps it evaluated; vLLM's prefix cache reuses it). Score mode reads log-probs, which are deterministic for a prompt, so
identical prompts would make K identical replicates: replicate k therefore names the cell's
attributes in its own order (k = 0: the population file's order; the next G! − 1 replicates of a
cell take the other orders of its G groups, shuffled per cell, then they repeat). Each replicate has its own
request seed and ``replicate`` string, hence its own cache key.

Agents: ``draw_agents(population, agents, seed)``; agent i of cell c gets replicate k
(``assign_replicates``) and in round r decides target ⇔ u_{i,r} < p[c, b, k] (multi-choice:
the first choice whose cumulative probability exceeds u, target first), u_{i,r} from
``uniform_draws(case seed, r, n)``. A call that failed or could not be scored gives its agents
that call's status (error / invalid) and no decision — never p = 0. In rounds ≥ 1 the share counts
valid neighbours only; an agent with no valid neighbour is asked without a message (the round-0
call), as in ``louder.networks.archetype``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.answers import choice_probabilities
from louder.llm.base import Request, stable_seed
from louder.networks.archetype import ROUND0, assign_replicates, bucket_of, share_buckets, uniform_draws
from louder.networks.rounds import Outcome, control_rule, run_rounds, share_message
from louder.populations import agent_description, draw_agents, fit_diagnostics, load_population
from louder.prompts import Prompts, or_list, render
from louder.scenarios import group_ids, load_scenario, scenario_ids
from louder.status import status_block
from louder.task import Calls, Item, Task
from louder.types import DECISION_COLUMNS, STATUSES

CALL_COLUMNS = ["run_id", "model", "scenario", "cell_id", "bucket", "share", "replicate", "status", "p_target",
                "choice_mass", "prompt", "raw_response", "attempts", "latency_s", "input_tokens"]
CONTROL_COLUMNS = ["model", "condition", "scenario", "group", "node", "round", "attribute", "decision", "target",
                   "status"]
# Archetype prompts carry the demographic and no generated persona: the paper's no-persona condition.
CONDITION = "no_persona"


def check_config(config: ExperimentConfig) -> np.ndarray:
    """One-line errors for configs archetype mode cannot run; returns the bucket values."""
    if config.population is None:
        raise LouderError("mode: archetype needs `population:` (a built-in id such as us_adults, or a population "
                          "file): an archetype is a population cell")
    sim, pop_cfg = config.simulation, config.population
    if sim.decision_mode != "score":
        raise LouderError(f"population.mode: archetype reads each archetype's probability, so it needs decision_mode: "
                          f"score (it is {sim.decision_mode}); add `decision_mode: score` under `simulation:`")
    for field, bad, why in (("executor", config.executor != "local", "archetype mode runs here; its calls go to "
                             "the model servers (use openai:MODEL@URL1,URL2,… replicas to spread them)"),
                            ("simulation.variants", list(sim.variants) != ["base"], "archetype prompts use the base "
                             "scenario text; run each variant as its own config"),
                            ("population.twins", pop_cfg.twins, "archetypes have no persona to re-express")):
        if bad:
            raise LouderError(f"{field}: not available in mode: archetype — {why}")
    rounds = config.influence.rounds
    if rounds and config.network is None:
        raise LouderError(f"influence.rounds: {rounds} needs a `network:` (who influences whom); drop rounds or "
                          "add one")
    try:
        buckets = share_buckets(pop_cfg.buckets)
    except ValueError as e:
        raise LouderError(f"population.buckets: {e}; give a count such as 4 or a list such as [0, 0.5, 1]") from None
    pop = load_population(pop_cfg.file)
    missing = [g for g in group_ids(sim.groups) if g not in pop.group_ids]
    if missing:
        raise LouderError(f"groups: {', '.join(missing)} is not a group of population {pop.id} "
                          f"({', '.join(pop.group_ids)}); list the population's groups to analyse under `groups:`")
    return buckets


@dataclass
class Plan:
    """Everything of an archetype run that does not depend on the model's answers."""

    config: ExperimentConfig
    buckets: np.ndarray

    @cached_property
    def population(self):
        return load_population(self.config.population.file)

    @cached_property
    def drawn(self) -> pd.DataFrame:
        # humanleague.qisi dominates (~7 s for 1,000,000 agents); no graph is built for counting
        return draw_agents(self.population, self.config.simulation.agents, self.config.seed)

    @cached_property
    def agents(self) -> pd.DataFrame:
        return self.drawn.assign(replicate=assign_replicates(self.drawn, self.config.population.replicates))

    @cached_property
    def cells(self) -> np.ndarray:
        """Population cells with at least one agent (only those are archetypes)."""
        return np.unique(self.drawn["cell_id"].to_numpy())

    @property
    def call_buckets(self) -> list[int]:
        """Bucket indices called: ROUND0, then every bucket when there are rounds of influence."""
        networked = self.config.influence.rounds and self.config.network
        return [ROUND0] + (list(range(len(self.buckets))) if networked else [])

    def calls_per_case(self) -> int:
        return len(self.cells) * len(self.call_buckets) * self.config.population.replicates

    @cached_property
    def descriptions(self) -> dict[tuple[int, int], str]:
        """(cell, replicate) → the archetype's description, attributes in the replicate's order."""
        ids = self.population.group_ids
        first = self.agents.drop_duplicates("cell_id").set_index("cell_id")
        out = {}
        perms = list(itertools.permutations(ids))  # perms[0] is the file's order
        for c in self.cells:
            attrs = {g: first.at[c, g] for g in ids}
            # distinct orders for the first G! replicates (then they repeat), shuffled per cell
            rest = np.random.default_rng(stable_seed(self.config.seed, "archetype-order", int(c))).permutation(
                len(perms) - 1) + 1
            orders = [perms[0]] + [perms[i] for i in rest]
            for k in range(self.config.population.replicates):
                order = orders[k % len(orders)]
                out[int(c), k] = agent_description({g: attrs[g] for g in order}, self.population.phrases)
        return out

    @cached_property
    def graph(self):
        from louder.networks.graphs import build_graph

        return build_graph(self.config.network, self.agents) if self.config.network else None


def archetype_prompt(prompts, description: str, scenario, share: float | None) -> tuple[tuple[str, str], ...]:
    """The archetype's decision conversation (system: the situation, shared by every archetype of
    the scenario; user: who the agent is and, from round 1, its neighbours' bucketed share)."""
    t = prompts.doc["archetype"]
    neighbours = "" if share is None else t["neighbours_separator"] + share_message(share, scenario.target)
    return (("system", render(t["system"], scenario=scenario.prompt_text())),
            ("user", render(t["user"], persona=description, neighbours=neighbours,
                            choice_list=or_list(scenario.labels))))


def _request(config, model: str, scenario_id: str, cell: int, b: int, k: int, messages, labels) -> Request:
    from louder.agents import decision_schema

    return Request(messages=messages, schema=decision_schema(labels, True, rationale=False),
                   temperature=0.0, max_tokens=16, seed=stable_seed(config.seed, model, scenario_id, cell, b, k),
                   replicate=f"archetype|{scenario_id}|{cell}|{b}|{k}")


def ask_archetypes(config, plan: Plan, session, run_id: str, model: str, scenario_id: str, tick=None) -> pd.DataFrame:
    """Every call of the plan for one model × scenario, concurrently through the session's client:
    one row per call (CALL_COLUMNS) plus one ``p_<label>`` column per choice (NaN unless valid)."""
    scenario = load_scenario(scenario_id, config.simulation.scenarios)
    labels = scenario.labels
    desc = plan.descriptions
    jobs = [(int(c), b, k) for c in plan.cells for b in plan.call_buckets for k in range(config.population.replicates)]
    client, prompts = session.client, session.prompts

    def one(job):
        c, b, k = job
        share = None if b == ROUND0 else float(plan.buckets[b])
        messages = archetype_prompt(prompts, desc[c, k], scenario, share)
        reply = client.score(_request(config, model, scenario_id, c, b, k, messages, labels), prompts.score_prefix,
                             labels)
        prompt = "\n\n".join(text for _, text in messages)
        s = choice_probabilities(reply, labels)
        probs = s.probs or {}
        return dict(run_id=run_id, model=model, scenario=scenario.id, cell_id=c, bucket=b,
                    share=np.nan if share is None else share, replicate=k, status=s.status,
                    p_target=probs.get(scenario.target, np.nan), choice_mass=s.mass, prompt=prompt,
                    raw_response=reply.error or reply.text, attempts=reply.attempts, latency_s=reply.latency_s,
                    input_tokens=reply.input_tokens, **{f"p_{lab}": probs.get(lab, np.nan) for lab in labels})

    return pd.DataFrame(client.map(one, jobs, tick))


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


def archetype_task(config: ExperimentConfig) -> Task:
    """The archetype run as a ``Task``: one item per model × scenario (its whole call plan)."""
    plan = Plan(config, check_config(config))
    per_case = plan.calls_per_case()
    keys = [(m.label, s) for m in config.models for s in scenario_ids(config.simulation.scenarios)]
    groups = group_ids(config.simulation.groups)
    items = [Item(k, per_case, (archetype_calls(plan, *k),)) for k in keys]

    def run_case(ctx, item, tick):
        model, scenario_id = item
        return ask_archetypes(config, plan, ctx.sessions[model], ctx.run_id, model, scenario_id, tick)

    def tables(ctx, results):
        from louder.networks.space import InfluenceModel

        adjacency = abm = None
        if plan.graph is not None:
            abm = InfluenceModel(plan.graph, plan.agents, seed=config.seed)
            adjacency = abm.adjacency().astype(np.float64)
        descriptions = plan.descriptions
        decisions, controls, calls_all = [], [], []
        for (model, scenario_id), calls in zip(keys, results):
            scenario = load_scenario(scenario_id, config.simulation.scenarios)
            sim = simulate(plan, calls, scenario, stable_seed(config.seed, "archetype-draws", model, scenario_id),
                           adjacency)
            for g in groups:
                decisions.append(agent_rows(plan, sim, ctx.run_id, model, scenario.id, g, descriptions))
            if abm is not None and config.influence.rounds:
                ctl = control_rows(plan, abm, sim, scenario, model)
                for g in groups:
                    controls.append(ctl.assign(group=g, attribute=plan.agents[g].to_numpy(object)[ctl["node"]]))
            calls_all.append(calls)
        decisions = pd.concat(decisions, ignore_index=True)
        calls = pd.concat(calls_all, ignore_index=True)
        out = {"decisions.parquet": decisions, "archetypes.parquet": calls[CALL_COLUMNS + [
            c for c in calls.columns if c.startswith("p_") and c != "p_target"]]}
        if controls:
            out["control.parquet"] = pd.concat(controls, ignore_index=True)[CONTROL_COLUMNS]
        if plan.graph is not None:
            edges = np.array(plan.graph.edges(), dtype=np.int64).reshape(-1, 2)
            out["network.parquet"] = pd.concat(
                [pd.DataFrame({"model": m, "condition": CONDITION, "scenario": s, "group": g,
                               "source": edges[:, 0], "target": edges[:, 1]})
                 for m, s in keys for g in groups], ignore_index=True)
        return out, manifest_fields(plan, decisions, calls)

    return Task("archetype", items, run_case, tables, "manifest.json")


def manifest_fields(plan: Plan, decisions: pd.DataFrame, calls: pd.DataFrame) -> dict:
    config = plan.config
    d = fit_diagnostics(plan.population, plan.agents)
    g = plan.graph
    keys = ["model", "condition", "scenario", "group", "attribute"]
    return dict(
        **status_block({"decisions": decisions, "archetype_calls": calls}, keys + ["round"], mass="archetype_calls"),
        population={"id": plan.population.id, "path": plan.population.path, "n": len(plan.agents),
                    "cells": int(len(plan.cells)), "max_marginal_error": d.max_marginal_error,
                    "max_table_error": d.max_table_error, "chi2": d.chi_square,
                    "chi2_df": d.df, "chi2_p": d.p_value},
        network={"generator": config.network.generator if config.network else None,
                 "params": dict(config.network.params) if config.network else None,
                 "seed": config.network.seed if config.network else None,
                 "nodes": g.number_of_nodes() if g is not None else len(plan.agents),
                 "edges": g.number_of_edges() if g is not None else 0,
                 "rounds": config.influence.rounds if g is not None else 0,
                 "control": config.influence.control.model_dump(), "mode": "archetype",
                 "replicates": config.population.replicates,
                 "buckets": plan.buckets.tolist()},
        archetype={"cells": int(len(plan.cells)), "call_buckets": len(plan.call_buckets),
                   "calls_planned": plan.calls_per_case() * len(calls.groupby(["model", "scenario"])),
                   "condition": CONDITION,
                   "cluster": "cell_id × replicate: bootstrap these clusters, not agents (docs/networks.md)"},
    )


def archetype_calls(plan: Plan, model: str, scenario_id: str) -> Calls:
    """The calls of one model × scenario: cells × K × (1 + B·[rounds ≥ 1]), one scored call each
    (a short JSON decision, at most 16 tokens)."""
    s = load_scenario(scenario_id, plan.config.simulation.scenarios)
    share = None if len(plan.call_buckets) == 1 else 0.5
    first = int(plan.cells[0])
    text = "".join(t for _, t in archetype_prompt(Prompts(), plan.descriptions[first, 0], s, share))
    return Calls(model, plan.calls_per_case(), text, "score", 16)


def count_calls(config: ExperimentConfig) -> int:
    """Model calls of a cold archetype run: models × scenarios × cells × K × (1 + B·[rounds ≥ 1]).
    Draws the agents (fast even for 1,000,000) but builds no graph."""
    return archetype_task(config).planned_calls


def run_archetype(config: ExperimentConfig, out_dir, retry_errors: bool = False, on_progress=None, recorder=None):
    """Run (or resume) an archetype experiment; returns the ``TaskResult`` (None while a batch export waits)."""
    from louder.task import execute

    return execute(archetype_task(config), config, out_dir, retry_errors, on_progress, recorder)
