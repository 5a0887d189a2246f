"""Convention runs (``convention:`` in the config; issue 48, docs/conventions.md): populations of
agents play a coordination game — the naming game of Ashery, Aiello & Baronchelli, "Emergent social
conventions and collective bias in LLM populations", Science Advances 11(20) eadu9368 (2025).

A run plays, for every **arm** — a model (or a mix of models, ``mix:``) × a population size N
(``convention.sizes``) × a committed fraction p (``convention.committed.fraction``) — R independent
populations of T steps each:

* a step pairs the population's agents at random (a random perfect matching; odd N: one agent sits
  out), or along the edges of ``convention.network`` (a random maximal matching of its edges), from a
  seed of the arm, the population and the step: the schedule is known before any call, so the plan —
  what ``--dry-run`` counts — is the exact number of calls a cold run makes;
* both agents of every pair pick one of the W options at once (the pairs of a step side by side); a
  pick is one chat call whose prompt carries the game's rules (the options listed in a fresh random
  order per agent and step, ``convention.shuffle``), the agent's persona (``convention.group``) and
  its memory of its last H rounds — its own pick, its partner's pick, what it won or lost — and its
  score over them (the texts: louder/data/convention.yaml);
* a pair that picks the same valid option wins ``reward`` points each, otherwise each loses
  ``penalty`` (an answer that is not a valid option is a miss, accounted with its status);
* a committed agent (a share p of the agents, ``round(p·N)``) always plays the committed option and
  asks no model; with ``committed.start: convention`` every other agent's memory starts full of H won
  rounds of the established option (the paper's prepared populations).

Every answer gets a status (valid, invalid, refused, error) and a row of ``convention.parquet``, with
the agent's model (``agent_model``: a mixed population's agents each ask their own model, with their
own cache keys), its memory as it read it and its partner. Each pick's seed and cache key are the
agent's, the step's and the population's, and its prompt follows from the answers before it: a run
killed mid-step replays what its cache holds and asks only the rest — the same outcomes as a run that
was never stopped.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Callable

import networkx as nx
import numpy as np
import pandas as pd
import yaml

from louder.config import ExperimentConfig
from louder.cost import STAND_IN_NAME, stand_in_persona
from louder.errors import LouderError
from louder.llm.base import stable_hash, stable_seed
from louder.networks.graphs import build_graph
from louder.personas import generate_persona
from louder.prompts import render
from louder.scenarios import Scenario, builtin_scenarios, load_group, load_scenario
from louder.schemas import choice_schema
from louder.convention import ConventionConfig
from louder.status import status_block
from louder.task import Calls, Item, Task
from louder.types import DTYPES, typed

GAME_FILE = "convention.yaml"
FIELD = "pick"  # the answer's field (the fake model plays the game when its schema asks for it)
NO_PICK = ""  # a miss in a memory string (an answer that named no option)

# convention.parquet: one row per play (agent × step) of every population of every arm
KEYS = ["run_id", "model", "size", "fraction", "population"]
PLAY_COLUMNS = [
    *KEYS, "step", "agent", "partner", "agent_model", "attribute", "committed", "order", "memory", "remembered", "pick",
    "partner_pick", "success", "payoff", "status", "rationale", "raw_response", "attempts", "latency_s",
    "input_tokens", "output_tokens", "thinking", "reasoning_tokens"]
# convention_agents.parquet: one row per agent of every population (its model, attribute, persona)
AGENT_COLUMNS = [*KEYS, "agent", "agent_model", "attribute", "committed", "name", "persona", "persona_status",
                 "persona_raw", "persona_attempts", "persona_latency_s", "persona_input_tokens",
                 "persona_output_tokens"]
TYPES = {**DTYPES, "size": "int64", "fraction": "float64", "population": "int64", "step": "int64", "agent": "int64",
         "partner": "int64", "agent_model": "string", "attribute": "string", "committed": "bool", "order": "string",
         "memory": "string", "remembered": "int64", "pick": "string", "partner_pick": "string", "success": "bool", "payoff": "float64",
         "name": "string", "persona_status": "string", "persona_raw": "string", "persona_attempts": "Int64",
         "persona_latency_s": "Float64", "persona_input_tokens": "Int64", "persona_output_tokens": "Int64"}


# --- the game's texts ---------------------------------------------------------------------------------

@cache
def _templates() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / GAME_FILE).read_text("utf-8"))


@dataclass(frozen=True)
class Round:
    """One remembered round: the agent's pick, its partner's (None: no valid option) and its payoff."""

    own: str | None
    partner: str | None
    payoff: float


def _points(x: float) -> str:
    return f"{x:g}"


class GamePrompts:
    """The game's prompt (louder/data/convention.yaml), rendered for one agent and step. Its pieces (the
    rules for an order of the options, a memory line) are rendered once each and reused: a run asks
    thousands of prompts made of a few dozen distinct pieces."""

    def __init__(self, doc: dict | None = None):
        self.doc = doc or copy.deepcopy(_templates())
        self._pieces: dict[tuple, str] = {}

    def hashes(self) -> dict:
        return {f"convention.{k}": stable_hash(v)[:16] for k, v in self.doc.items() if isinstance(v, str)}

    def _piece(self, key: tuple, make: Callable[[], str]) -> str:
        if key not in self._pieces:
            self._pieces[key] = make()
        return self._pieces[key]

    def option(self, label: str | None) -> str:
        return self._piece(("option", label), lambda: render(self.doc["picked"], option=label) if label is not None
                           else self.doc["no_pick"])

    def options(self, labels: list[str]) -> str:
        return ", ".join(self.option(x) for x in labels)

    def _rules(self, game: ConventionConfig, shown: tuple[str, ...], scenario: Scenario | None) -> str:
        values = dict(options=self.options(list(shown)), reward=_points(game.reward),
                      penalty=_points(game.penalty), memory=str(game.memory))
        if scenario is not None:
            return render(self.doc["rules_scenario"], situation=scenario.situation.strip(), **values)
        return render(self.doc["rules"], **values)

    def _line(self, i: int, r: Round) -> str:
        outcome = render(self.doc["won"] if r.payoff > 0 else self.doc["lost"], points=_points(abs(r.payoff)))
        return render(self.doc["memory_line"], round=str(i), own=self.option(r.own), partner=self.option(r.partner),
                      outcome=outcome)

    def prompt(self, game: ConventionConfig, shown: list[str], rounds: list[Round], persona: tuple[str, str] | None,
               scenario: Scenario | None) -> str:
        """The whole prompt: persona, rules (options in the order ``shown``), memory, score, question."""
        d, order = self.doc, tuple(shown)
        parts = []
        if persona is not None:
            parts.append(render(d["persona"], name=persona[0], persona=persona[1]))
        parts.append(self._piece(("rules", order, scenario.id if scenario else None, game.reward, game.penalty,
                                  game.memory), lambda: self._rules(game, order, scenario)))
        if rounds:
            lines = [d["memory_header"]]
            lines += [self._piece(("line", i, r), lambda i=i, r=r: self._line(i, r)) for i, r in enumerate(rounds, 1)]
            score = sum(r.payoff for r in rounds)
            lines.append(self._piece(("score", score), lambda: render(d["score"], score=_points(score))))
            parts.append("\n".join(lines))
        else:
            parts.append(d["empty"])
        parts.append(self._piece(("question", order), lambda: render(d["question"], options=self.options(shown))))
        return "\n\n".join(parts)


# --- the design: arms, seats, pairings ------------------------------------------------------------------

@dataclass(frozen=True)
class Arm:
    """One design cell: a model (or a mix's label), a population size and a committed fraction."""

    model: str
    size: int
    fraction: float
    mix: tuple[tuple[str, float], ...]  # (model, share) of the agents; one model: ((model, 1.0),)

    @property
    def key(self) -> str:
        return f"{self.model}|N={self.size}|p={self.fraction:g}"


def mix_label(mix: dict[str, float]) -> str:
    """A mixed population's name in the ``model`` column: ``fake:a 80% + fake:b 20%``."""
    return " + ".join(f"{m} {100 * s:g}%" for m, s in mix.items())


def arms(config: ExperimentConfig) -> list[Arm]:
    game = config.convention
    if config.mix is not None:
        models = [(mix_label(config.mix), tuple(config.mix.items()))]
    else:
        models = [(m.label, ((m.label, 1.0),)) for m in config.models]
    return [Arm(label, n, p, mix) for label, mix in models for n in game.size_list for p in game.fractions]


def apportion(n: int, shares: list[float]) -> list[int]:
    """``n`` split by ``shares`` (largest remainders; ties to the earlier entry): counts adding up to n."""
    raw = [n * s for s in shares]
    counts = [int(np.floor(x)) for x in raw]
    order = sorted(range(len(shares)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


@dataclass(frozen=True)
class Seat:
    """An agent of a population: its number, model, attribute (personas) and whether it is committed."""

    agent: int
    model: str
    attribute: str | None
    committed: bool


def roster(config: ExperimentConfig, arm: Arm, population: int) -> list[Seat]:
    """The population's agents: models by their shares, attributes by theirs (``convention.shares``, else
    equal), committed agents (``round(p·N)``), each drawn at random from a seed of the arm and population."""
    game, n = config.convention, arm.size
    rng = np.random.default_rng(stable_seed(config.seed, "convention", "roster", arm.key, population))
    models = np.repeat([m for m, _ in arm.mix], apportion(n, [s for _, s in arm.mix]))
    models = models[rng.permutation(n)]
    attributes: list[str | None] = [None] * n
    if game.group is not None:
        g = load_group(game.group)
        shares = [game.shares.get(a, 0.0) for a in g.attributes] if game.shares else [1 / len(g.attributes)] * len(
            g.attributes)
        drawn = np.repeat(g.attributes, apportion(n, shares))
        attributes = list(drawn[rng.permutation(n)])
    committed = set(rng.permutation(n)[: int(round(arm.fraction * n))].tolist())
    return [Seat(i, str(models[i]), attributes[i], i in committed) for i in range(n)]


@cache
def _graph(network_json: str, size: int) -> nx.Graph:
    """The graph of a population of ``size`` agents (node i = agent i; the generator's seed is its own)."""
    from louder.networks.graphs import NetworkConfig

    net = NetworkConfig.model_validate_json(network_json)
    return build_graph(net, pd.DataFrame({"agent_id": range(1, size + 1), "attribute": ["agent"] * size}))


def graph_of(config: ExperimentConfig, size: int) -> nx.Graph | None:
    """``pairing: network``: the population's graph (the same for every population of a size); else None."""
    game = config.convention
    if game.pairing != "network":
        return None
    try:
        return _graph(game.network.model_dump_json(), size)
    except LouderError as e:
        raise LouderError(f"convention.{str(e)}") from None


def pairs(config: ExperimentConfig, arm: Arm, population: int, step: int, graph: nx.Graph | None) -> np.ndarray:
    """The pairs of one step, a (k, 2) array of agent numbers: a random perfect matching (random pairing),
    or a random maximal matching of the graph's edges (edges in a random order, each kept when both its
    agents are free)."""
    rng = np.random.default_rng(stable_seed(config.seed, "convention", "pairs", arm.key, population, step))
    if graph is None:
        order = rng.permutation(arm.size)
        k = arm.size // 2
        return order[: 2 * k].reshape(k, 2)
    edges = np.array(sorted(graph.edges), dtype=np.int64).reshape(-1, 2)
    free = np.ones(arm.size, dtype=bool)
    out = []
    for u, v in edges[rng.permutation(len(edges))]:
        if free[u] and free[v]:
            free[u] = free[v] = False
            out.append((u, v))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def shown_order(config: ExperimentConfig, arm: Arm, population: int, step: int, agent: int) -> list[str]:
    """The options in the order this agent sees them at this step: a seeded shuffle (``shuffle``), else as given."""
    labels = config.convention.labels
    if not config.convention.shuffle:
        return labels
    return random.Random(stable_seed(config.seed, "convention", "order", arm.key, population, step, agent)).sample(
        labels, len(labels))


def game_scenario(config: ExperimentConfig) -> Scenario | None:
    game = config.convention
    return load_scenario(game.scenario) if game.scenario is not None else None


def persona_scenario(config: ExperimentConfig) -> Scenario:
    """The scenario a persona prompt is rendered with: personas are written without context
    (``non_contextualized``), so its text is not used; the game's scenario, else the first built-in."""
    return game_scenario(config) or load_scenario(builtin_scenarios()[0])


PERSONA_CONDITION = "non_contextualized"


# --- the plan ----------------------------------------------------------------------------------------------

def calls_of(config: ExperimentConfig, arm: Arm, population: int, prompts: GamePrompts) -> tuple[Calls, ...]:
    """A population's calls, per model: a persona per uncommitted agent (with ``group``) and a pick per
    uncommitted agent per step it is paired in — counted from the same seeded roster and pairings the run
    plays, so a cold run makes exactly these."""
    from louder.prompts import Prompts

    game = config.convention
    seats = roster(config, arm, population)
    graph = graph_of(config, arm.size)
    picks = {m: 0 for m, _ in arm.mix}
    asking = np.array([not s.committed for s in seats])
    for step in range(1, game.steps + 1):
        for a in pairs(config, arm, population, step, graph).ravel():
            if asking[a]:
                picks[seats[a].model] += 1
    full = [Round(x, x, game.reward) for x in (game.labels * game.memory)[: game.memory]]
    persona = (STAND_IN_NAME, stand_in_persona()) if game.group is not None else None
    shown = prompts.prompt(game, game.labels, full, persona, game_scenario(config))
    out = []
    for model, _ in arm.mix:
        if game.group is not None:
            n = sum(1 for s in seats if s.model == model and not s.committed)
            attribute = next((s.attribute for s in seats if s.model == model), "") or ""
            p = Prompts().persona(attribute, PERSONA_CONDITION, persona_scenario(config), config.paper_faithful, "chat")
            out.append(Calls(model, n, p, "persona", config.simulation.persona.max_tokens))
        out.append(Calls(model, picks[model], shown, "pick", game.pick.max_tokens))
    return tuple(out)


def check(config: ExperimentConfig) -> None:
    """What a convention run cannot do, as one LouderError naming the field."""
    if config.convention is None:
        raise LouderError("convention: not set; a convention run needs `convention:` (docs/conventions.md)")
    for m in config.models:
        if m.api == "completion":
            raise LouderError(f"models: {m.spec} is a completion model; a convention run asks chat models (each pick "
                              "is one JSON answer) — use a chat model")
    if config.simulation.decision_mode == "score":
        raise LouderError("simulation.decision_mode: score reads one decision's probabilities; a convention run "
                          "samples every pick — use decision_mode: sample")
    if config.executor == "ray":
        raise LouderError("executor: ray is not available for convention runs (their steps depend on each other); "
                          "use executor: local")
    for n in config.convention.size_list:
        graph_of(config, n)  # a bad graph is one line before any call


# --- one population -------------------------------------------------------------------------------------

class Population:
    """One population of one arm, played step by step through the run's sessions."""

    def __init__(self, ctx, config: ExperimentConfig, arm: Arm, population: int, tick: Callable[[], None] | None,
                 prompts: GamePrompts):
        self.ctx, self.config, self.arm, self.population, self.tick = ctx, config, arm, population, tick
        self.prompts = prompts
        self.game = config.convention
        self.seats = roster(config, arm, population)
        self.graph = graph_of(config, arm.size)
        self.scenario = game_scenario(config)
        self.labels = self.game.labels
        self.schema = choice_schema("ConventionPick", FIELD, tuple(self.labels), config.simulation.constrain_choices,
                                    rationale=True)
        prepared = self.game.established_option
        self.memory: list[list[Round]] = [
            [Round(prepared, prepared, self.game.reward)] * self.game.memory if prepared and not s.committed else []
            for s in self.seats]
        self.personas: dict[int, object] = {}
        self.keys = dict(run_id=ctx.run_id, model=arm.model, size=arm.size, fraction=arm.fraction,
                         population=population)

    def seed(self, agent: int, *more) -> int:
        seat = self.seats[agent]
        return stable_seed(self.config.seed, seat.model, "convention", self.arm.key, self.population, agent, *more)

    def replicate(self, agent: int, what: str) -> str:
        return f"convention|{self.arm.key}|{self.population}|{agent}|{what}"

    def _by_model(self, agents: list[int], fn) -> dict[int, object]:
        """``fn(agent)`` for every agent, each model's agents through its own session's client (side by side
        within a model, at most the run's concurrency in flight)."""
        out: dict[int, object] = {}
        for model in dict.fromkeys(self.seats[a].model for a in agents):
            mine = [a for a in agents if self.seats[a].model == model]
            results = self.ctx.sessions[model].client.map(fn, mine, self.tick)
            out.update(zip(mine, results))
        return out

    def write_personas(self) -> list[dict]:
        rows = []
        asking = [s.agent for s in self.seats if not s.committed]
        if self.game.group is not None:
            scenario = persona_scenario(self.config)

            def one(agent: int):
                seat = self.seats[agent]
                return generate_persona(self.ctx.sessions[seat.model], scenario, PERSONA_CONDITION, seat.attribute,
                                        self.seed(agent, "persona"), self.replicate(agent, "persona"))

            self.personas = self._by_model(asking, one)
        for s in self.seats:
            p = self.personas.get(s.agent)
            o = p.outcome if p is not None else None
            rows.append(dict(self.keys, agent=s.agent, agent_model=s.model, attribute=s.attribute, committed=s.committed,
                             name=p.name if p else None, persona=p.persona if p else None,
                             persona_status=p.status if p else None,
                             persona_raw=(o.raw or o.reply.error or "") if p else None,
                             persona_attempts=o.attempts if p else None, persona_latency_s=o.latency_s if p else None,
                             persona_input_tokens=o.input_tokens if p else None,
                             persona_output_tokens=o.output_tokens if p else None))
        return rows

    def ask(self, agent: int, step: int) -> dict:
        """One agent's pick at ``step`` (its answer's fields for the play's row)."""
        seat = self.seats[agent]
        shown = shown_order(self.config, self.arm, self.population, step, agent)
        base = dict(order="|".join(shown))
        p = self.personas.get(agent)
        if p is not None and p.status != "valid":  # not asked: the agent carries its persona's status
            why = f"{p.status}: {p.reason}" if p.reason else p.status
            return dict(base, pick=None, status=p.status, raw_response=f"[persona {why}] {p.outcome.raw or ''}",
                        attempts=0, latency_s=0.0)
        session = self.ctx.sessions[seat.model]
        prompt = self.prompts.prompt(self.game, shown, self.memory[agent][-self.game.memory:],
                                     (p.name, p.persona) if p is not None else None, self.scenario)
        out, v = session.ask_choice(prompt, self.schema, self.game.pick, self.seed(agent, step),
                                    self.replicate(agent, f"step{step}"), self.labels, FIELD)
        return dict(base, pick=v.choice, status=v.status, rationale=v.rationale,
                    raw_response=out.raw if out.raw else (out.reply.error or ""), attempts=out.attempts,
                    latency_s=out.latency_s, input_tokens=out.input_tokens, output_tokens=out.output_tokens,
                    thinking=out.thinking, reasoning_tokens=out.reasoning_tokens)

    def play(self) -> tuple[list[dict], list[dict]]:
        agents = self.write_personas()
        plays = []
        committed = self.game.committed_option
        for step in range(1, self.game.steps + 1):
            matched = pairs(self.config, self.arm, self.population, step, self.graph)
            playing = [int(a) for a in matched.ravel()]
            asked = self._by_model([a for a in playing if not self.seats[a].committed], lambda a: self.ask(a, step))
            # a committed agent asks no model: its pick is the committed option, its status none, no attempt
            answers = {a: asked.get(a) or dict(order=None, pick=committed, status=None, attempts=0, latency_s=0.0)
                       for a in playing}
            for u, v in matched.tolist():
                pu, pv = answers[u]["pick"], answers[v]["pick"]
                success = pu is not None and pu == pv
                payoff = self.game.reward if success else -self.game.penalty
                for me, other, mine, theirs in ((u, v, pu, pv), (v, u, pv, pu)):
                    seat = self.seats[me]
                    memory = "|".join(r.partner if r.partner is not None else NO_PICK
                                      for r in self.memory[me][-self.game.memory:])
                    plays.append(dict(self.keys, step=step, agent=me, partner=other, agent_model=seat.model,
                                      attribute=seat.attribute, committed=seat.committed, memory=memory,
                                      remembered=len(self.memory[me][-self.game.memory:]),
                                      partner_pick=theirs, success=success, payoff=payoff, **answers[me]))
            for u, v in matched.tolist():  # memories change only after every pair of the step has picked
                pu, pv = answers[u]["pick"], answers[v]["pick"]
                payoff = self.game.reward if pu is not None and pu == pv else -self.game.penalty
                self.memory[u] = (self.memory[u] + [Round(pu, pv, payoff)])[-self.game.memory:]
                self.memory[v] = (self.memory[v] + [Round(pv, pu, payoff)])[-self.game.memory:]
        return plays, agents


# --- the task ----------------------------------------------------------------------------------------------

def convention_task(config: ExperimentConfig) -> Task:
    """A convention run as a ``Task``: one item per arm × population (its steps in order; the populations
    side by side)."""
    check(config)
    prompts = GamePrompts()
    items = []
    for arm in arms(config):
        for r in range(config.convention.populations):
            calls = calls_of(config, arm, r, prompts)
            items.append(Item((arm, r), sum(c.n for c in calls), calls))

    def run_item(ctx, key, tick):
        arm, r = key
        return Population(ctx, config, arm, r, tick, prompts).play()

    def run_items(ctx, keys, tick):
        """Every population side by side: a population has at most one step's picks (N) in flight, so as many
        run at once as fill the run's concurrency (the global in-flight cap still holds)."""
        from louder.llm.client import run_all

        most = max(arm.size for arm, _ in keys)
        return run_all([lambda k=k: run_item(ctx, k, tick) for k in keys], ctx.concurrency, most * len(keys),
                       ctx.stop)

    def tables(ctx, results):
        plays = typed(pd.DataFrame([row for p, _ in results for row in p], columns=PLAY_COLUMNS), **TYPES)
        agents = typed(pd.DataFrame([row for _, a in results for row in a], columns=AGENT_COLUMNS), **TYPES)
        asked = plays[~plays["committed"]]
        fields = status_block({"convention": asked}, ["model", "agent_model"], main="convention",
                              by_name="status_by_model")
        fields["rows"] = {"convention": len(plays), "convention_agents": len(agents)}
        if config.convention.group is not None:
            personas = agents[agents["persona_status"].notna()].rename(columns={"persona_status": "status"})
            fields["status_counts"]["personas"] = status_block({"personas": personas}, ["agent_model"],
                                                               main="personas")["status_counts"]["personas"]
        fields["convention"] = manifest_fields(config)
        fields["prompt_template_sha256"] = {**ctx.prompts.hashes(), **prompts.hashes()}
        return {"convention.parquet": plays, "convention_agents.parquet": agents}, fields

    return Task("convention", items, run_item, tables, "manifest.json", run_items=run_items)


def manifest_fields(config: ExperimentConfig) -> dict:
    """The manifest's ``convention`` field: the design as the analysis reads it."""
    game = config.convention
    c = game.committed
    return dict(options=game.labels, sizes=game.size_list, populations=game.populations, steps=game.steps,
                memory=game.memory, reward=game.reward, penalty=game.penalty, shuffle=game.shuffle,
                pairing=game.pairing, network=game.network.model_dump(mode="json") if game.network else None,
                scenario=game.scenario, group=game.group, shares=game.shares,
                committed=None if c is None else dict(fractions=list(c.fraction), option=game.committed_option,
                                                      start=c.start, established=game.established_option),
                mix=dict(config.mix) if config.mix else None, models=list(dict.fromkeys(a.model for a in arms(config))))


def convention_console(result) -> list:
    """What ``louder run`` prints after a convention run: per arm, the populations, the answers by status,
    and the share of each option in the last step's valid picks."""
    from rich.table import Table

    plays = result.tables["convention.parquet"]
    t = Table(title="Convention run: the last step's picks per arm (share of each option, all populations)")
    labels = result.manifest["convention"]["options"]
    for c in ("model", "N", "p", "populations", "valid / answers", *labels):
        t.add_column(c, justify="right" if c not in ("model",) else "left")
    for (model, size, fraction), g in plays.groupby(["model", "size", "fraction"], sort=False):
        asked = g[~g["committed"]]
        last = g[g["step"] == g["step"].max()]
        picks = last["pick"].dropna()
        shares = [f"{(picks == x).mean():.2f}" if len(picks) else "–" for x in labels]
        t.add_row(str(model), str(size), f"{fraction:g}", str(g["population"].nunique()),
                  f"{int((asked['status'] == 'valid').sum())} / {len(asked)}", *shares)
    m = result.manifest
    return [t, f"wrote {result.out}/: " + ", ".join(f"{k} ({len(v):,} rows)" for k, v in result.tables.items())
            + f", {result.manifest_file}",
            f"model_calls: {m['model_calls']} (planned for a cold run: {m['planned_calls']})  cache_hits: "
            f"{m['cache_hits']}  wall_time_s: {m['wall_time_s']}",
            f"status counts: {m['status_counts'].get('convention')}; `louder analyze {result.out}` reads the "
            "conventions"]
