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
from louder.networks.archetype import ROUND0, share_buckets
from louder.networks.rounds import share_message
from louder.populations import agent_description, fit_diagnostics, load_population
from louder.prompts import Prompts, or_list, render
from louder.scenarios import group_ids, load_scenario, scenario_ids
from louder.simulation.archetype_sim import CONTROL_COLUMNS  # noqa: F401  (the control table's columns)
from louder.task import Calls, Item, Task

CALL_COLUMNS = ["run_id", "model", "scenario", "cell_id", "bucket", "share", "replicate", "status", "p_target",
                "choice_mass", "prompt", "raw_response", "attempts", "latency_s", "input_tokens"]
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
    for field, bad, why in (("simulation.variants", list(sim.variants) != ["base"], "archetype prompts use the base "
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
    """Everything of an archetype run that does not depend on the model's answers. The agents are
    arrays (node i = agent i = the i-th drawn agent): ``cells`` (joint population cell, int32) and
    ``reps`` (replicate, int16); every attribute, weight and description follows from the cell."""

    config: ExperimentConfig
    buckets: np.ndarray

    @cached_property
    def population(self):
        return load_population(self.config.population.file)

    @cached_property
    def drawn(self):
        # humanleague.qisi dominates (~7 s for 1,000,000 agents); no graph is built for counting
        from louder.populations.fit import draw_cells

        return draw_cells(self.population, self.config.simulation.agents, self.config.seed)

    @property
    def n(self) -> int:
        return int(self.drawn.cells.size)

    @property
    def group_ids(self) -> list[str]:
        return self.population.group_ids

    @property
    def weights(self) -> np.ndarray:
        """The post-stratification weight of each joint cell (``draw_cells``)."""
        return self.drawn.weights

    @property
    def agent_cells(self) -> np.ndarray:
        """Each agent's joint population cell (int32; node i = agent i)."""
        return self.drawn.cells

    @cached_property
    def reps(self) -> np.ndarray:
        """Replicate of each agent: round-robin within its cell over agent_id (``assign_replicates``)."""
        cells = self.drawn.cells
        order = np.argsort(cells, kind="stable")  # by cell, then agent_id
        counts = np.bincount(cells, minlength=int(np.prod(self.drawn.shape)))
        starts = np.cumsum(counts) - counts
        rank = np.empty(cells.size, dtype=np.int64)
        rank[order] = np.arange(cells.size) - starts[cells[order]]
        del order
        return (rank % self.config.population.replicates).astype(np.int16)

    @cached_property
    def cells(self) -> np.ndarray:
        """Population cells with at least one agent (only those are archetypes)."""
        return np.flatnonzero(np.bincount(self.drawn.cells, minlength=int(np.prod(self.drawn.shape))))

    @cached_property
    def codes(self) -> dict[str, np.ndarray]:
        """group → each joint cell's attribute index in that group."""
        return {g: self.drawn.codes(i) for i, g in enumerate(self.group_ids)}

    def labels(self, group: str) -> list[str]:
        return list(self.population.groups[self.group_ids.index(group)].attributes)

    @cached_property
    def _label_arrays(self) -> dict:
        import pyarrow as pa

        return {g: pa.array(self.labels(g), type=pa.large_string()) for g in self.group_ids}

    def attribute(self, group: str, cells: np.ndarray):
        """The attribute of ``group`` of agents in ``cells``, as an arrow string array."""
        import pyarrow.compute as pc

        return pc.take(self._label_arrays[group], self.codes[group][cells])

    @cached_property
    def _personas(self):
        import pyarrow as pa

        texts, index = [], np.zeros((int(np.prod(self.drawn.shape)), self.config.population.replicates), np.int32)
        for (c, k), d in self.descriptions.items():
            index[c, k] = len(texts)
            texts.append(d)
        return pa.array(texts, type=pa.large_string()), index

    def persona(self, cells: np.ndarray, reps: np.ndarray):
        """The description (the archetype's persona) of agents of ``cells`` × ``reps``."""
        import pyarrow.compute as pc

        texts, index = self._personas
        return pc.take(texts, index[cells, reps])

    @property
    def call_buckets(self) -> list[int]:
        """Bucket indices called: ROUND0, then every bucket when there are rounds of influence."""
        networked = self.config.influence.rounds and self.config.network
        return [ROUND0] + (list(range(len(self.buckets))) if networked else [])

    @cached_property
    def lut(self) -> np.ndarray:
        """bucket index + 1 → its position on the calls' bucket axis."""
        bpos = {b: i for i, b in enumerate(self.call_buckets)}
        return np.array([bpos.get(x, -1) for x in range(ROUND0, len(self.buckets))], dtype=np.int8)

    def calls_per_case(self) -> int:
        return len(self.cells) * len(self.call_buckets) * self.config.population.replicates

    @cached_property
    def descriptions(self) -> dict[tuple[int, int], str]:
        """(cell, replicate) → the archetype's description, attributes in the replicate's order."""
        ids = self.group_ids
        prompts = Prompts()
        out = {}
        perms = list(itertools.permutations(ids))  # perms[0] is the file's order
        for c in self.cells:
            attrs = {g: self.labels(g)[self.codes[g][c]] for g in ids}
            # distinct orders for the first G! replicates (then they repeat), shuffled per cell
            rest = np.random.default_rng(stable_seed(self.config.seed, "archetype-order", int(c))).permutation(
                len(perms) - 1) + 1
            orders = [perms[0]] + [perms[i] for i in rest]
            for k in range(self.config.population.replicates):
                order = orders[k % len(orders)]
                out[int(c), k] = agent_description({g: attrs[g] for g in order}, self.population.phrases, prompts)
        return out

    @cached_property
    def graph(self):
        """The network as a CSR ``louder.networks.sparse.Graph`` (None without one)."""
        from louder.networks.graphs import sparse_graph

        if not self.config.network:
            return None
        return sparse_graph(self.config.network, self.n, lambda: self.agents_frame(
            self.config.network.params.get("group")))

    def agents_frame(self, group: str | None = None) -> pd.DataFrame:
        """agent_id (and one group's attribute) as a table, for the generators that read the agents."""
        df = pd.DataFrame({"agent_id": np.arange(self.n)})
        if group in self.group_ids:
            df[group] = np.asarray(self.labels(group), dtype=object)[self.codes[group][self.drawn.cells]]
        return df


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


def _streams(ctx, plan: Plan, names: list[str]) -> dict:
    """The run's Parquet files written as they are made, stamped with its generation."""
    from louder.io import ParquetStream
    from louder.runfolder import GENERATION_KEY
    from louder.simulation import archetype_sim as S

    meta = {GENERATION_KEY: ctx.generation.encode()}
    first = load_scenario(scenario_ids(plan.config.simulation.scenarios)[0], plan.config.simulation.scenarios)
    g = group_ids(plan.config.simulation.groups)[0]
    samples = {"decisions.parquet": lambda: S.decision_sample(plan, first, g),
               "control.parquet": S.control_sample,
               "network.parquet": lambda: pd.DataFrame({"model": "m", "condition": "c", "scenario": "s", "group": "g",
                                                        "source": np.zeros(1, np.int64),
                                                        "target": np.zeros(1, np.int64)})}
    out = {}
    for name in names:
        # row-group statistics of what readers filter on (round: the analysis reads round 0 alone)
        out[name] = ParquetStream(ctx.out / name, S.schema_of(samples[name](), meta),
                                  statistics=["round", "node", "model", "scenario", "group", "source"])
        ctx.streams.append(out[name])
    return out


def simulation(plan: Plan, executor=None):
    """The rounds over the agents: one in-process shard, or ``executor``'s (Ray: one actor per set of
    population cells, louder.simulation.ray_executor)."""
    from louder.simulation.archetype_sim import Shard, Simulation

    rounds = plan.config.influence.rounds if plan.graph is not None else 0
    if executor is not None:
        return Simulation(plan.n, executor.shards(plan), rounds)
    adjacency = plan.graph.adjacency() if plan.graph is not None else None
    return Simulation(plan.n, [Shard(plan.n, plan.agent_cells, plan.reps, adjacency, plan.buckets, plan.call_buckets)],
                      rounds)


def write_tables(ctx, plan: Plan, keys: list[tuple[str, str]], results: list[pd.DataFrame], progress=None,
                 executor=None) -> tuple[dict, dict]:
    """Every file of the run, each written row group by row group as the rounds are made: decisions (per
    model × scenario, analysed group, round), the control rule from the same round 0, the network's
    edges, and the calls. Returns ({file: Streamed or table}, the manifest fields)."""
    from louder.simulation import archetype_sim as S
    from louder.task import Streamed

    config = plan.config
    groups = group_ids(config.simulation.groups)
    networked = config.network is not None
    control = networked and config.influence.rounds > 0
    names = ["decisions.parquet"] + (["control.parquet"] if control else []) + (
        ["network.parquet"] if networked else [])
    streams = _streams(ctx, plan, names)
    if progress and config.network is not None:
        progress(0, f"drawing the network ({config.network.generator}, {plan.n:,} agents)")
    graph = plan.graph
    if progress and executor is not None:
        progress(0, "placing the agents on the Ray workers, by population cell")
    sim = simulation(plan, executor)
    degree = graph.indptr if graph is not None else None  # each chunk's degrees from the offsets
    counts: dict = {}
    rule = config.influence.control
    steps = len(keys) * len(groups) * (sim.rounds + 1) * (2 if control else 1)
    done = 0

    def tick(what: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(0, f"{what} ({done}/{steps})")

    for (model, scenario_id), calls in zip(keys, results):
        scenario = load_scenario(scenario_id, config.simulation.scenarios)
        lookup = S.Lookup.of(calls, scenario, int(np.prod(plan.drawn.shape)), plan.call_buckets,
                             config.population.replicates)
        sim.set_case(lookup)
        seed = stable_seed(config.seed, "archetype-draws", model, scenario_id)
        for g in groups:
            rows = S.DecisionRows(plan, lookup, ctx.run_id, model, scenario, g, CONDITION,
                                  streams["decisions.parquet"].schema, degree)
            code = plan.codes[g].astype(np.int64) * len(S.STATUSES)  # per cell: attribute × status, for the manifest
            shape = (len(plan.labels(g)), len(S.STATUSES))
            prev = first = None
            for r, state in enumerate(sim.run(seed)):
                for batch in rows.batches(r, state, prev):
                    streams["decisions.parquet"].write(batch)
                c = np.zeros(shape[0] * shape[1], dtype=np.int64)
                for a in range(0, plan.n, S.CHUNK):
                    c += np.bincount(code[plan.agent_cells[a:a + S.CHUNK]] + state.status[a:a + S.CHUNK],
                                     minlength=c.size)
                counts[(model, CONDITION, scenario.id, g, r)] = c.reshape(shape)
                first = state if r == 0 else first
                prev = state
                tick(f"{scenario.id} × {g}: round {r} of {sim.rounds}")
            if control:
                ctl = S.ControlRows(plan, model, scenario, g, CONDITION, streams["control.parquet"].schema)
                initial = S.initial_control(lookup, first, plan, list(scenario.labels))
                for r, state in enumerate(sim.control(initial, rule.rule, scenario.labels, scenario.target,
                                                      rule.threshold, rule.self_weight)):
                    for batch in ctl.batches(r, state):
                        streams["control.parquet"].write(batch)
                    tick(f"{scenario.id} × {g}: control round {r}")
            if graph is not None:
                consts = dict(model=model, condition=CONDITION, scenario=scenario.id, group=g)
                for batch in S.edge_batches(graph, consts, streams["network.parquet"].schema):
                    streams["network.parquet"].write(batch)
    calls = pd.concat(results, ignore_index=True)
    fields = manifest_fields(plan, counts, calls)
    if executor is not None:
        fields["archetype"]["shards"] = executor.report()
    out = {"decisions.parquet": Streamed(streams.pop("decisions.parquet")),
           "archetypes.parquet": calls[CALL_COLUMNS + [c for c in calls.columns if c.startswith("p_")
                                                       and c != "p_target"]],
           **{name: Streamed(s) for name, s in streams.items()}}
    return out, fields


def shards_of(config: ExperimentConfig) -> int:
    """Ray workers the agents are split over (0: the run is local)."""
    if config.executor != "ray":
        return 0
    import os

    return config.population.shards or os.cpu_count() or 1


def archetype_task(config: ExperimentConfig, executor=None) -> Task:
    """The archetype run as a ``Task``: one item per model × scenario (its whole call plan). Its size
    (rows, disk, peak memory: ``archetype_size``) is known before any agent is drawn, and a run that
    cannot fit the machine is refused here, in one line. ``executor``: shards the rounds (default: Ray's
    with ``executor: ray``, else one shard here)."""
    from louder.simulation import archetype_size

    buckets = check_config(config)
    shards = shards_of(config)
    size = archetype_size.size(config, shards)
    archetype_size.check(size, config)
    if executor is None and shards:
        from louder.simulation.ray_executor import ArchetypeShards

        executor = ArchetypeShards(config, shards)
    plan = Plan(config, buckets)
    per_case = plan.calls_per_case()
    keys = [(m.label, s) for m in config.models for s in scenario_ids(config.simulation.scenarios)]
    items = [Item(k, per_case, (archetype_calls(plan, *k),)) for k in keys]

    def run_case(ctx, item, tick):
        model, scenario_id = item
        return ask_archetypes(config, plan, ctx.sessions[model], ctx.run_id, model, scenario_id, tick)

    def tables(ctx, results):
        return write_tables(ctx, plan, keys, results, getattr(ctx, "progress", None), executor)

    return Task("archetype", items, run_case, tables, "manifest.json", notes=tuple(size.lines()))


def manifest_fields(plan: Plan, counts: dict, calls: pd.DataFrame) -> dict:
    from louder.simulation.archetype_sim import status_rows
    from louder.status import status_counts

    config = plan.config
    d = fit_diagnostics(plan.population, pd.DataFrame({"cell_id": plan.agent_cells}))
    g = plan.graph
    totals, by_attribute, rows = status_rows(counts, plan)
    return dict(
        rows={"decisions": rows, "archetype_calls": len(calls)},
        status_counts={"decisions": totals, "archetype_calls": status_counts(calls)},
        low_mass_rows=int((calls["choice_mass"] < 0.99).sum()),
        status_by_attribute=by_attribute,
        population={"id": plan.population.id, "path": plan.population.path, "n": plan.n,
                    "cells": int(len(plan.cells)), "max_marginal_error": d.max_marginal_error,
                    "max_table_error": d.max_table_error, "chi2": d.chi_square,
                    "chi2_df": d.df, "chi2_p": d.p_value},
        network={"generator": config.network.generator if config.network else None,
                 "params": dict(config.network.params) if config.network else None,
                 "seed": config.network.seed if config.network else None,
                 "nodes": g.number_of_nodes() if g is not None else plan.n,
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
