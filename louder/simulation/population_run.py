"""A population run: N agents drawn from a population file, each with one attribute of every group,
write a persona naming all of them and decide; optionally under policy variants and with
counterfactual twins. One ``Task`` on the one run skeleton (``louder/task.py``).

Items are model × condition × scenario; each item runs its arms in turn — policy variants × the levels
of the experiment dimensions (``louder.dimensions``: wordings, reasoning levels, signals; choice orders
are per agent) — the persona prompt is the same under every variant and crossed level, so an agent
writes its persona once per signal and keeps it; a case of the data is model × condition × scenario ×
variant (× signal).

Outputs: ``population.parquet`` (the drawn agents: agent_id, one column per group, cell_id,
weight), ``decisions.parquet`` (``DECISION_COLUMNS`` + variant, one ``attr_<group>`` column per
group, cell_id, weight; ``group`` holds the population id and ``attribute`` the agent's joint label
"Female | Liberal", so the single-attribute analysis reads a population case as one group whose
attributes are the intersections), ``personas.parquet``, with twins ``twins.parquet``, and the
manifest's ``population`` block (fit diagnostics).

Agent identity is (population, cell, replicate), the replicate counting the agents of a cell in
agent order: every per-call seed and cache key derives from it, so a resumed run repeats nothing
and a larger N reuses the agents a smaller one had in each cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import mesa
import pandas as pd

from louder import dimensions, kinds
from louder.agents import PersonaAgent
from louder.config import ExperimentConfig
from louder.dimensions import CROSSED, OWN
from louder.errors import LouderError
from louder.llm.base import stable_seed
from louder.personas import Persona, generate_persona, rewrite_persona
from louder.populations import agent_description, draw_agents, fit_diagnostics, fit_population, load_population
from louder.populations.fit import fit_line
from louder.populations.schema import Population
from louder.populations.twins import (TwinCheck, fitting_name, group_lexicon, mentions, name_problem, re_express,
                                      rewrite_check, rewrite_cues, twin_calls_per_agent, twin_check)
from louder.populations.persona import persona_phrases
from louder.scenarios import Scenario, load_scenario, scenario_ids
from louder.presentation import load_names
from louder.prompts import Prompts
from louder.session import ModelSession
from louder.cost import stand_in_persona
from louder.simulation.case import CaseFrames, arms, decision_calls, persona_calls, run_arms
from louder.simulation.model import reporters
from louder.status import status_block
from louder.task import Calls, Item, Task
from louder.types import DECISION_COLUMNS, PERSONA_COLUMNS, TWIN_COLUMNS, typed

JOINT_SEPARATOR = " | "  # the joint label of an agent: its attributes in the population's group order


def attr_column(group_id: str) -> str:
    return f"attr_{group_id}"


def joint_label(attributes: dict[str, str]) -> str:
    return JOINT_SEPARATOR.join(attributes.values())


@dataclass(frozen=True)
class PopulationCase:
    """model × condition × scenario (under one variant) × population."""

    model: str
    condition: str
    scenario: Scenario  # with the variant applied; its id is the base scenario's
    variant: str
    population: Population
    root_seed: int
    levels: dict[str, str] = field(default_factory=dict)  # the arm's dimension levels (louder.dimensions)


class PopulationAgent(PersonaAgent):
    """A drawn agent: one attribute of every group. Persona and decision are ``PersonaAgent``'s; only
    the identity (seed, cache key) and the persona's demographic differ."""

    def __init__(self, model: PopulationModel, agent_id: int, attributes: dict[str, str], cell_id: int,
                 weight: float, replicate: int):
        mesa.Agent.__init__(self, model)
        c = model.case
        self.agent_id, self.attributes, self.cell_id, self.weight = agent_id, attributes, cell_id, weight
        self.attribute, self.replicate = joint_label(attributes), replicate
        self.seed = stable_seed(c.root_seed, c.model, c.scenario.id, "population", c.population.id, c.condition,
                                self.attribute, replicate)
        self._blank()

    @property
    def key(self) -> str:
        c = self.model.case
        return f"{c.scenario.id}|population:{c.population.id}|{c.condition}|{self.attribute}|{self.replicate}"

    @property
    def demographic(self) -> str:
        return agent_description(self.attributes, self.model.case.population.phrases, self.model.session.prompts)

    def groups(self) -> dict[str, str]:
        return dict(self.attributes)

    def persona_row(self) -> dict:
        return {**super().persona_row(), "cell_id": self.cell_id,
                **{attr_column(g): v for g, v in self.attributes.items()}}

    def signalled_attributes(self, names) -> list[str]:
        """The names signal: the agent's attributes in the groups a name can carry (those whose every
        attribute has a name list); the name is drawn from the names on all their lists at once."""
        from louder.presentation import covered_groups

        return [self.attributes[g.id] for g in covered_groups(names, self.model.case.population.groups)]


class TwinAgent(PersonaAgent):
    """The counterfactual twin of ``source`` with ``attribute`` in ``group``: the source's persona with
    only the attribute changed (``populations.twins``), checked before it decides."""

    def __init__(self, model: PopulationModel, source: PopulationAgent, group: str, attribute: str):
        mesa.Agent.__init__(self, model)
        self.source, self.group_id, self.attribute, self.replicate = source, group, attribute, source.replicate
        self.attributes = {**source.attributes, group: attribute}
        # The twin decides with its source's seed (common random numbers): with a seeded model the
        # only difference between the two decision calls is the re-expressed text.
        self.seed = source.seed
        self.twin_status: str | None = None
        self.twin_reason: str | None = None  # why the twin failed its check or its call
        self.twin_similarity: float | None = None
        self.written_name: str | None = None  # the model's name for the twin, where it did not fit and was replaced
        self._blank()

    @property
    def key(self) -> str:
        return f"{self.source.key}|twin:{self.group_id}={self.attribute}"

    @property
    def score_tag(self) -> str:
        """The twin's score call is its own question even where its text and name are its source's or a
        sibling twin's (an unchanged twin; a persona naming no attribute under a name that coincides): it
        shares their seed, and without the tag the cache would answer it from theirs, so a cold run made
        fewer calls than its plan, by what the model happened to write (issue 41). Chat decisions are keyed
        by the agent already."""
        return f"|twin:{self.group_id}={self.attribute}"

    demographic = PopulationAgent.demographic  # all of its attributes, the changed one included
    groups = PopulationAgent.groups  # calibrated agents: the twin's offsets are those of its own attributes

    def _failed(self, persona: Persona, status: str | None = None) -> None:
        self.twin_status, self.twin_reason, self.persona = status or persona.status, persona.reason, persona

    def write_persona(self) -> None:
        """The twin's text: from the group's word list (with a new name — a name-only call — when the
        group renames), else a model rewrite (none when the persona never names the attribute); then
        the twin check. A twin whose call failed carries that status and decides nothing."""
        src, case, session = self.source, self.model.case, self.model.session
        if src.persona is None or src.persona.status != "valid":
            status = src.persona.status if src.persona else "error"
            self._failed(Persona(None, None, status, src.persona.outcome if src.persona else None, ""), "no_persona")
            return
        group = case.population.group(self.group_id)
        old, new = src.attributes[self.group_id], self.attribute
        lex = group_lexicon(group)
        name, outcome, prompt = src.name, src.persona.outcome, src.persona.prompt
        if lex is not None and lex.rename:
            named = generate_persona(session, case.scenario, "no_persona", self.demographic,
                                     stable_seed(self.seed, "twin", self.group_id, self.attribute),
                                     "twin-name|" + self.key)
            if named.status != "valid":
                return self._failed(named)
            name, outcome, prompt = self._fitting(named.name, group), named.outcome, named.prompt
        if case.condition == "no_persona":  # the "persona" is the description itself
            text = session.prompts.no_persona_text(self.demographic)
            problem = name_problem(name, src.name, lex.all_words(old) | lex.all_words(new)) if (
                lex is not None and lex.rename) else None
            verdict = TwinCheck("failed_check", problem) if problem else TwinCheck("ok", None, 1.0)
        elif lex is not None:
            text = re_express(src.persona_text, lex, old, new, src.name, name)
            verdict = twin_check(src.persona_text, text, lex, old, new, src.name, name)
        else:
            phrases = persona_phrases(case.population.phrases, session.prompts).get(group.id, {})
            cues_old = rewrite_cues(old, phrases.get(old), new, phrases.get(new))
            cues_new = rewrite_cues(new, phrases.get(new), old, phrases.get(old))
            if not mentions(src.persona_text, cues_old):  # nothing names the attribute: the same text, no call
                text, verdict = src.persona_text, TwinCheck("unchanged", None, 1.0)
            else:
                ask = session.prompts.twin_rewrite(group.name.lower(), phrases.get(old, old), phrases.get(new, new),
                                                   src.persona_text)
                seed = stable_seed(self.seed, "twin-rewrite", self.group_id, self.attribute)
                rewritten = rewrite_persona(session, ask, name, seed, "twin-rewrite|" + self.key)
                if rewritten.status != "valid":
                    return self._failed(rewritten)
                text, outcome, prompt = rewritten.persona, rewritten.outcome, rewritten.prompt
                verdict = rewrite_check(src.persona_text, text, cues_old, cues_new, src.name)
        self.twin_status, self.twin_reason, self.twin_similarity = verdict.status, verdict.reason, verdict.similarity
        self.persona = Persona(name, text, "valid", outcome, prompt)
        self.name, self.persona_text = name, text

    def _fitting(self, name: str | None, group) -> str | None:
        """The name the model wrote for the twin, or — when the curated name lists give its first name to
        another attribute of the group and not to the new one — one from the new attribute's list, the
        rest of the name kept (``twins.fitting_name``; the written name is kept in ``written_name``)."""
        lists = self.model.name_lists
        first = {p.casefold() for p in (name or "").split()[:1]}
        in_population = {a for g in self.model.case.population.groups for a in g.attributes}
        # prefer names that keep what else the twin is: its other attributes' lists, then the written
        # name's standing on lists of attributes the population does not have (White, say, in a gender-only one)
        prefer = [lists[a] for g, a in self.attributes.items() if g != self.group_id and a in lists]
        prefer += [v for a, v in lists.items() if a not in in_population and first & {n.casefold() for n in v}]
        source = (self.source.name or "").split()
        fitted, why = fitting_name(name, self.attribute, group.attributes, lists, prefer, source[0] if source else None,
                                   stable_seed(self.seed, "twin-name-fit", self.group_id, self.attribute))
        if why:
            self.written_name = name
        return fitted

    def step(self) -> None:
        if self.persona is None:
            self.write_persona()
        if self.persona.status != "valid":
            self.status = self.persona.status
            raw = self.persona.outcome.raw if self.persona.outcome else ""
            why = f"{self.twin_status}: {self.twin_reason}" if self.twin_reason else self.twin_status
            self.raw_response = f"[twin {why}] {raw}"
            return
        self.take(self.decide())


class PopulationModel(mesa.Model):
    """The drawn agents facing one scenario (one variant); ``step`` = every agent writes its persona and
    decides, then (with twins) every twin is made and decides."""

    def __init__(self, case: PopulationCase, session: ModelSession, agents: pd.DataFrame, seed: int,
                 twins: bool = False, twin_groups: list[str] | None = None):
        super().__init__(rng=int(seed))  # an int rng seeds model.random and model.rng as seed= did
        self.case, self.session, self.twins = case, session, twins
        # the curated first-name lists a twin's new name must fit (the names signal's file; docs/populations.md)
        names = load_names(session.config.simulation.names) if twins else None
        self.name_lists = {a: s.first for a, s in names.attributes.items()} if twins else {}
        self.on_done: Callable[[], None] | None = None  # called as each agent finishes; set before step
        self.twin_groups = [g for g in case.population.groups if twin_groups is None or g.id in twin_groups]
        # a wave of a sequential run carries the replicates its agents have in the whole draw
        replicate = agents["replicate"] if "replicate" in agents else agents.groupby("cell_id").cumcount()
        # The drawn agents column by column: each is made when the step reaches it (a million agents
        # cost their columns, not a million Mesa agents, before the first call).
        self._ids, self._cells = agents["agent_id"].to_numpy(), agents["cell_id"].to_numpy()
        self._weights, self._replicates = agents["weight"].to_numpy(), replicate.to_numpy()
        self._groups = {g: agents[g].to_numpy(object) for g in case.population.group_ids}
        self.size = len(agents)
        self.datacollector = mesa.DataCollector(agenttype_reporters={
            PopulationAgent: {**reporters(), "agent_id": "agent_id", "cell_id": "cell_id", "weight": "weight",
                              "attributes": "attributes"},
            TwinAgent: {**reporters(), "attributes": "attributes", "group": "group_id",
                        "twin_status": "twin_status", "twin_reason": "twin_reason",
                        "twin_similarity": "twin_similarity", "written_name": "written_name",
                        "source": lambda t: t.source.agent_id,
                        "source_attribute": lambda t: t.source.attributes[t.group_id]}})

    def person(self, i: int) -> PopulationAgent:
        """The ``i``-th drawn agent, made now (in the calling thread: Mesa's registry is not thread-safe)."""
        return PopulationAgent(self, int(self._ids[i]), {g: col[i] for g, col in self._groups.items()},
                               int(self._cells[i]), float(self._weights[i]), int(self._replicates[i]))

    def step(self) -> None:
        order = self.rng.permutation(self.size)  # the agents decide in a seeded random order
        self.session.client.map(lambda a: a.step(), (self.person(int(i)) for i in order), self.on_done)
        people = self.agents_by_type[PopulationAgent]
        if self.twins:
            # made here (not in the worker threads): Mesa's agent registry is not thread-safe
            made = [TwinAgent(self, a, g.id, b) for a in sorted(people, key=lambda a: a.agent_id)
                    for g in self.twin_groups for b in g.attributes if b != a.attributes[g.id]]
            self.session.client.map(lambda t: t.step(), made, self.on_done)
        self.datacollector.collect(self)


def twins_per_agent(population: Population, twin_groups: list[str] | None = None) -> int:
    return sum(len(g.attributes) - 1 for g in population.groups if twin_groups is None or g.id in twin_groups)


def twin_calls(population: Population, twin_groups: list[str] | None, condition: str) -> dict[str, int]:
    """Per agent under ``condition``: twins, their name calls and their rewrite calls (``twin_calls_per_agent``)."""
    return twin_calls_per_agent([g for g in population.groups if twin_groups is None or g.id in twin_groups],
                                condition)


def count_calls(config: ExperimentConfig) -> int:
    """Model calls a cold run makes; a sequential run's at its budget (the registry builds it in waves)."""
    return kinds.count_calls(config, "population")


def _case_frames(pm: PopulationModel, keys: dict) -> CaseFrames:
    """The decision rows (one ``attr_<group>`` column per group) and persona rows of one stepped
    model, and its twins (each twin set with its source agent's own row) as ``twins.parquet``."""
    case = pm.case
    gids = case.population.group_ids
    d = pm.datacollector.get_agenttype_vars_dataframe(PopulationAgent).reset_index(drop=True)
    for g in gids:
        d[attr_column(g)] = d["attributes"].map(lambda a, g=g: a[g])
    d = d.drop(columns="attributes").assign(group=case.population.id, **keys)
    personas = [{**keys, "group": case.population.id, **a.persona_row()} for a in pm.agents_by_type[PopulationAgent]]
    if not pm.twins:
        return CaseFrames(d, personas)
    t = pm.datacollector.get_agenttype_vars_dataframe(TwinAgent).reset_index(drop=True)
    for g in gids:
        t[attr_column(g)] = t["attributes"].map(lambda a, g=g: a[g])
    t = t.drop(columns="attributes").rename(columns={"source": "agent_id"}).assign(original=False, **keys)
    # each twin set also holds the source agent itself (its own decision, no further call)
    own = pd.concat([d.assign(group=g.id, source_attribute=d[attr_column(g.id)], attribute=d[attr_column(g.id)],
                              twin_status="ok", twin_reason=None, twin_similarity=None, written_name=None,
                              original=True)
                     for g in pm.twin_groups], ignore_index=True)
    t = pd.concat([own, t], ignore_index=True)
    t["twin_set"] = t["agent_id"].astype(str) + ":" + t["group"]
    return CaseFrames(d, personas, {"twins.parquet": t})


def run_population_case(config: ExperimentConfig, session: ModelSession, run_id: str, population: Population,
                        agents: pd.DataFrame, item: tuple[str, str, str], tick=None) -> CaseFrames:
    """One item (model × condition × scenario), each arm in turn (``run_arms``: policy variants ×
    dimension levels)."""
    model_label, condition, scenario_id = item
    keys = dict(run_id=run_id, model=model_label, condition=condition, scenario=scenario_id)
    pop = config.population

    def one(variant: str, scenario: Scenario, levels: dict[str, str]) -> CaseFrames:
        case = PopulationCase(model_label, condition, scenario, variant, population, config.seed, dict(levels))
        pm = PopulationModel(case, session, agents, stable_seed(config.seed, model_label, condition, scenario_id,
                                                                 "population", population.id), pop.twins,
                             pop.twin_groups)
        pm.on_done = tick
        pm.step()
        return _case_frames(pm, keys)

    # population runs always carry the variant column: their analysis keys on it
    return run_arms(config, load_scenario(scenario_id, config.simulation.scenarios), one, label=True)


def population_calls(config: ExperimentConfig, population: Population, agents: pd.DataFrame, model: str,
                     condition: str, scenario_id: str, prompts: Prompts) -> tuple[Calls, ...]:
    """The calls of one item: per own-agents level (signal) and population cell, one persona per drawn
    agent (shared by the variants and crossed levels) and one decision per agent, variant and crossed
    levels (wordings × reasoning levels); with twins, per agent and every other
    attribute of every twin group a name call (groups that rename), a rewrite call (groups without a
    word list, a chat call whatever the model's API; ``twins.twin_calls_per_agent``) and a decision
    per variant. Counts assume every persona is valid and names its attributes (a failed one skips
    its calls, an unnamed attribute its rewrite)."""
    s = load_scenario(scenario_id, config.simulation.scenarios)
    pop = config.population
    calls = twin_calls(population, pop.twin_groups, condition) if pop.twins else {}
    out = []
    for own in dimensions.combos(config, s, OWN):
        for combo, n in agents.groupby(population.group_ids).size().items():
            attrs = dict(zip(population.group_ids, combo if isinstance(combo, tuple) else (combo,)))
            desc = agent_description(attrs, population.phrases, prompts)
            out.append(persona_calls(config, model, condition, s, desc, int(n), prompts, own))
            if calls.get("names"):
                out.append(persona_calls(config, model, "no_persona", s, desc, int(n) * calls["names"], prompts))
            if calls.get("rewrites"):
                ask = prompts.twin_rewrite("group", desc, desc, stand_in_persona())
                out.append(Calls(model, int(n) * calls["rewrites"], ask, "persona",
                                 config.simulation.extraction.max_tokens))
            for v in config.simulation.variants:
                for crossed in dimensions.combos(config, s, CROSSED):
                    levels = {**own, **crossed}
                    out.append(decision_calls(config, model, condition, dimensions.say(s, v, levels), desc,
                                              int(n) * (1 + calls.get("twins", 0)), prompts, levels=levels))
    return tuple(out)


def population_task(config: ExperimentConfig) -> Task:
    """The population run as a ``Task``: one item per model × condition × scenario."""
    if config.population is None:
        raise LouderError("population_task needs `population:` in the config (or --population FILE)")
    if config.executor == "ray":
        raise LouderError("executor: ray runs single-attribute simulations only; use executor: local for a "
                          "population run")
    pop, sim = config.population, config.simulation
    population = load_population(pop.file)
    fitted = fit_population(population)
    agents = draw_agents(fitted, sim.agents, config.seed)
    diag = fit_diagnostics(fitted, agents)
    gids = population.group_ids
    per_agent = 1 + (twins_per_agent(population, pop.twin_groups) if pop.twins else 0)
    prompts = Prompts()
    items = [Item((m.label, c, s), sim.agents * arms(config, s) * per_agent,
                  population_calls(config, population, agents, m.label, c, s, prompts))
             for m in config.models for c in sim.conditions for s in scenario_ids(sim.scenarios)]

    def run_item(ctx, item, tick):
        return run_population_case(config, ctx.sessions[item[0]], ctx.run_id, population, agents, item, tick)

    def tables(ctx, results):
        attrs = [attr_column(g) for g in gids]
        own = dimensions.labelled(config, OWN)
        keys = ["model", "condition", "scenario", "variant", *own, *dimensions.labelled(config, CROSSED), "agent_id"]
        decisions = pd.concat([r.decisions for r in results], ignore_index=True)
        wave = ["wave"] if "wave" in decisions else []  # a sequential run's (issue 20)
        decisions = typed(decisions[DECISION_COLUMNS + dimensions.extra_columns()
                                    + ["variant", *attrs, "cell_id", "weight", *wave]])
        decisions = decisions.sort_values(keys, ignore_index=True)
        personas = pd.DataFrame([p for r in results for p in r.personas],
                                columns=PERSONA_COLUMNS + ["cell_id", *attrs, *own])
        personas = personas.sort_values(["model", "condition", "scenario", *own, "agent_id"], ignore_index=True)
        out = {"decisions.parquet": decisions, "personas.parquet": personas, "population.parquet": agents}
        counted = {"decisions": decisions, "personas": personas}
        twin_info = None
        if pop.twins:
            twins = pd.concat([r.extra["twins.parquet"] for r in results], ignore_index=True)
            arm = [c for c in dimensions.labelled(config) if c in twins]  # the arm's levels (run_arms)
            twins = typed(twins[TWIN_COLUMNS + arm + attrs]).sort_values(
                ["model", "condition", "scenario", "variant", *arm, "group", "agent_id", "original", "attribute"],
                ascending=[True] * (6 + len(arm)) + [False, True], ignore_index=True)
            out["twins.parquet"] = twins
            made = twins[~twins["original"]]  # the source rows repeat decisions already counted
            counted["twins"] = made
            twin_info = {"groups": pop.twin_groups or gids,
                         "per_agent": twins_per_agent(population, pop.twin_groups),
                         "twin_status": {s: int(n) for s, n in made["twin_status"].value_counts().items()},
                         # issue 32: names the model wrote for a twin that did not fit its new attribute
                         "names_replaced": int(made["written_name"].notna().sum())}
        fields = status_block(counted, ["model", "condition", "scenario", "variant", *own, "attribute"])
        if pop.twins:
            fields["rows"]["twins"] = len(out["twins.parquet"])
        fields["population"] = dict(fit, variants=list(sim.variants), twins=twin_info)
        return out, fields

    fit = dict(id=population.id, path=population.path, n=len(agents), groups=gids,
               max_marginal_error=diag.max_marginal_error, max_share_error=diag.max_share_error,
               max_table_error=diag.max_table_error, max_table_share_error=diag.max_table_share_error,
               chi2=diag.chi_square, df=diag.df, p_value=diag.p_value, ipf_converged=diag.ipf_converged,
               ipf_iterations=diag.ipf_iterations, ipf_max_error=diag.ipf_max_error,
               cells_drawn=int(agents["cell_id"].nunique()))
    return Task("population", items, run_item, tables, "manifest.json", notes=(fit_line(fit),))
