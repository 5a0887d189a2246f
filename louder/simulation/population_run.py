"""A population run: N agents drawn from a population file, each with one attribute of every group,
write a persona naming all of them and decide; optionally under policy variants and with
counterfactual twins. One ``Task`` on the one run skeleton (``louder/task.py``).

Items are model × condition × scenario; each item runs its variants in turn (the persona prompt is
the same under every variant, so an agent writes its persona once and keeps it), and a case of the
data is model × condition × scenario × variant.

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

from dataclasses import dataclass
from typing import Callable

import mesa
import pandas as pd

from louder import estimate
from louder.agents import PersonaAgent
from louder.config import ExperimentConfig
from louder.errors import LouderError
from louder.llm.base import stable_seed
from louder.personas import Persona, generate_persona
from louder.populations import agent_description, draw_agents, fit_diagnostics, fit_population, load_population
from louder.populations.schema import Population
from louder.populations.twins import group_lexicon, re_express, twin_check
from louder.populations.persona import persona_phrases
from louder.scenarios import Scenario, load_scenario
from louder.session import ModelSession
from louder.simulation.model import AGENT_REPORTERS
from louder.status import status_by, status_counts
from louder.task import Task
from louder.types import DECISION_COLUMNS, PERSONA_COLUMNS, TWIN_COLUMNS

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


class TwinAgent(PersonaAgent):
    """The counterfactual twin of ``source`` with ``attribute`` in ``group``: the source's persona with
    the attribute's words (and, for groups that rename, the name) replaced (``populations.twins``)."""

    def __init__(self, model: PopulationModel, source: PopulationAgent, group: str, attribute: str):
        mesa.Agent.__init__(self, model)
        self.source, self.group_id, self.attribute, self.replicate = source, group, attribute, source.replicate
        self.attributes = {**source.attributes, group: attribute}
        # The twin decides with its source's seed (common random numbers): with a seeded model the
        # only difference between the two decision calls is the re-expressed text.
        self.seed = source.seed
        self.twin_status: str | None = None
        self._blank()

    @property
    def key(self) -> str:
        return f"{self.source.key}|twin:{self.group_id}={self.attribute}"

    demographic = PopulationAgent.demographic  # all of its attributes, the changed one included

    def write_persona(self) -> None:
        """Re-express the source's persona; a new name (model call, name-only prompt) when the group renames."""
        src, case, session = self.source, self.model.case, self.model.session
        if src.persona is None or src.persona.status != "valid":
            status = src.persona.status if src.persona else "error"
            self.twin_status = "no_persona"
            self.persona = Persona(None, None, status, src.persona.outcome if src.persona else None, "")
            return
        population = case.population
        group = population.group(self.group_id)
        lex = group_lexicon(group, persona_phrases(population.phrases, session.prompts).get(group.id))
        name, outcome, prompt = src.name, src.persona.outcome, src.persona.prompt
        if lex.rename:
            named = generate_persona(session, case.scenario, "no_persona", self.demographic,
                                     stable_seed(self.seed, "twin", self.group_id, self.attribute),
                                     "twin-name|" + self.key)
            if named.status != "valid":
                self.twin_status = named.status
                self.persona = named
                return
            name, outcome, prompt = named.name, named.outcome, named.prompt
        old = src.attributes[self.group_id]
        if case.condition == "no_persona":  # the "persona" is the description itself
            text, self.twin_status = session.prompts.no_persona_text(self.demographic), "ok"
        else:
            text = re_express(src.persona_text, lex, old, self.attribute, src.name, name)
            self.twin_status = twin_check(src.persona_text, text, lex, old, self.attribute, src.name, name)
        self.persona = Persona(name, text, "valid", outcome, prompt)
        self.name, self.persona_text = name, text

    def step(self) -> None:
        if self.persona is None:
            self.write_persona()
        if self.persona.status != "valid":
            self.status = self.persona.status
            raw = self.persona.outcome.raw if self.persona.outcome else ""
            self.raw_response = f"[twin {self.twin_status}] {raw}"
            return
        self.take(self.decide())


class PopulationModel(mesa.Model):
    """The drawn agents facing one scenario (one variant); ``step`` = every agent writes its persona and
    decides, then (with twins) every twin is made and decides."""

    def __init__(self, case: PopulationCase, session: ModelSession, agents: pd.DataFrame, seed: int,
                 twins: bool = False, twin_groups: list[str] | None = None):
        super().__init__(seed=seed)
        self.case, self.session, self.twins = case, session, twins
        self.twin_groups = [g for g in case.population.groups if twin_groups is None or g.id in twin_groups]
        gids = case.population.group_ids
        replicate = agents.groupby("cell_id").cumcount()
        for row, r in zip(agents.itertuples(index=False), replicate):
            PopulationAgent(self, int(row.agent_id), {g: getattr(row, g) for g in gids}, int(row.cell_id),
                            float(row.weight), int(r))
        self.datacollector = mesa.DataCollector(agenttype_reporters={
            PopulationAgent: {**AGENT_REPORTERS, "agent_id": "agent_id", "cell_id": "cell_id", "weight": "weight",
                              "attributes": "attributes"},
            TwinAgent: {**AGENT_REPORTERS, "attributes": "attributes", "group": "group_id",
                        "twin_status": "twin_status", "source": lambda t: t.source.agent_id,
                        "source_attribute": lambda t: t.source.attributes[t.group_id]}})

    def step(self, on_done: Callable[[], None] | None = None) -> None:
        people = self.agents_by_type[PopulationAgent]
        people.shuffle(inplace=True)
        self.session.client.map(lambda a: a.step(), list(people), on_done)
        if self.twins:
            # made here (not in the worker threads): Mesa's agent registry is not thread-safe
            made = [TwinAgent(self, a, g.id, b) for a in sorted(people, key=lambda a: a.agent_id)
                    for g in self.twin_groups for b in g.attributes if b != a.attributes[g.id]]
            self.session.client.map(lambda t: t.step(), made, on_done)
        self.datacollector.collect(self)


def twins_per_agent(population: Population, twin_groups: list[str] | None = None) -> int:
    return sum(len(g.attributes) - 1 for g in population.groups if twin_groups is None or g.id in twin_groups)


def count_calls(config: ExperimentConfig) -> int:
    return estimate.count_calls(config, "population")


def _case_frames(config: ExperimentConfig, pm: PopulationModel, run_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    case = pm.case
    keys = dict(run_id=run_id, model=case.model, condition=case.condition, scenario=case.scenario.id,
                variant=case.variant)
    gids = case.population.group_ids
    d = pm.datacollector.get_agenttype_vars_dataframe(PopulationAgent).reset_index(drop=True)
    for g in gids:
        d[attr_column(g)] = d["attributes"].map(lambda a, g=g: a[g])
    d = d.drop(columns="attributes").assign(group=case.population.id, **keys)
    if not pm.twins:
        return d, pd.DataFrame(columns=TWIN_COLUMNS)
    t = pm.datacollector.get_agenttype_vars_dataframe(TwinAgent).reset_index(drop=True)
    for g in gids:
        t[attr_column(g)] = t["attributes"].map(lambda a, g=g: a[g])
    t = t.drop(columns="attributes").rename(columns={"source": "agent_id"}).assign(original=False, **keys)
    # each twin set also holds the source agent itself (its own decision, no further call)
    own = pd.concat([d.assign(group=g.id, source_attribute=d[attr_column(g.id)], attribute=d[attr_column(g.id)],
                              twin_status="ok", original=True) for g in pm.twin_groups], ignore_index=True)
    t = pd.concat([own, t], ignore_index=True)
    t["twin_set"] = t["agent_id"].astype(str) + ":" + t["group"]
    return d, t[TWIN_COLUMNS + [attr_column(g) for g in gids]]


def run_population_case(config: ExperimentConfig, session: ModelSession, run_id: str, population: Population,
                        agents: pd.DataFrame, item: tuple[str, str, str], tick=None):
    """One item: every variant in turn. Returns (decisions, persona rows, twins)."""
    model_label, condition, scenario_id = item
    base = load_scenario(scenario_id)
    frames, twin_frames, persona_rows = [], [], []
    for i, variant in enumerate(config.variants):
        case = PopulationCase(model_label, condition, base.variant(variant), variant, population, config.seed)
        pm = PopulationModel(case, session, agents, stable_seed(config.seed, model_label, condition, base.id,
                                                                 "population", population.id), config.twins,
                             config.twin_groups)
        pm.step(tick)
        d, t = _case_frames(config, pm, run_id)
        frames.append(d)
        twin_frames.append(t)
        if i == 0:
            for a in pm.agents_by_type[PopulationAgent]:
                p = a.persona
                persona_rows.append(dict(
                    run_id=run_id, model=model_label, condition=condition, scenario=base.id, group=population.id,
                    attribute=a.attribute, agent_id=a.agent_id, replicate=a.replicate, name=p.name,
                    persona=p.persona, status=p.status, prompt=p.prompt, raw_response=p.outcome.raw,
                    attempts=p.outcome.attempts, latency_s=p.outcome.latency_s,
                    input_tokens=p.outcome.input_tokens, output_tokens=p.outcome.output_tokens,
                    cell_id=a.cell_id, **{attr_column(g): v for g, v in a.attributes.items()}))
    return pd.concat(frames, ignore_index=True), persona_rows, pd.concat(twin_frames, ignore_index=True)


def population_task(config: ExperimentConfig) -> Task:
    """The population run as a ``Task``: one item per model × condition × scenario."""
    if config.population is None:
        raise LouderError("population_task needs `population:` in the config (or --population FILE)")
    if config.executor == "ray":
        raise LouderError("executor: ray runs single-attribute simulations only; use executor: local for a "
                          "population run")
    population = load_population(config.population)
    fitted = fit_population(population)
    agents = draw_agents(fitted, config.agents, config.seed)
    diag = fit_diagnostics(fitted, agents)
    gids = population.group_ids
    items = [(m.label, c, s) for m in config.models for c in config.conditions for s in config.scenarios]
    per_agent = 1 + (twins_per_agent(population, config.twin_groups) if config.twins else 0)

    def run_item(ctx, item, tick):
        return run_population_case(config, ctx.sessions[item[0]], ctx.run_id, population, agents, item, tick)

    def tables(ctx, results):
        extra = ["variant", *(attr_column(g) for g in gids), "cell_id", "weight"]
        keys = ["model", "condition", "scenario", "variant", "agent_id"]
        decisions = pd.concat([d for d, _, _ in results], ignore_index=True)[DECISION_COLUMNS + extra]
        decisions = _typed(decisions).sort_values(keys, ignore_index=True)
        pcols = PERSONA_COLUMNS + ["cell_id", *(attr_column(g) for g in gids)]
        personas = pd.DataFrame([r for _, rows, _ in results for r in rows], columns=pcols)
        personas = personas.sort_values(["model", "condition", "scenario", "agent_id"], ignore_index=True)
        out = {"decisions.parquet": decisions, "personas.parquet": personas, "population.parquet": agents}
        counts = {"decisions": status_counts(decisions), "personas": status_counts(personas)}
        fields = dict(rows={"decisions": len(decisions), "personas": len(personas)})
        twin_info = {}
        if config.twins:
            twins = pd.concat([t for _, _, t in results], ignore_index=True)
            twins = _typed(twins).sort_values(["model", "condition", "scenario", "variant", "group", "agent_id",
                                               "original", "attribute"], ascending=[True] * 6 + [False, True],
                                              ignore_index=True)
            out["twins.parquet"] = twins
            made = twins[~twins["original"]]  # the source rows repeat decisions already counted
            counts["twins"] = status_counts(made)
            fields["rows"]["twins"] = len(twins)
            twin_info = {"groups": config.twin_groups or gids,
                         "per_agent": twins_per_agent(population, config.twin_groups),
                         "twin_status": {s: int(n) for s, n in made["twin_status"].value_counts().items()}}
        fields.update(
            status_counts=counts,
            low_mass_rows=int((decisions["choice_mass"] < 0.99).sum()),
            status_by_attribute=status_by(decisions, ["model", "condition", "scenario", "variant", "attribute"]),
            population=dict(id=population.id, path=population.path, n=len(agents), groups=gids,
                            max_marginal_error=diag.max_marginal_error, max_share_error=diag.max_share_error,
                            max_table_error=diag.max_table_error, max_table_share_error=diag.max_table_share_error,
                            chi2=diag.chi_square, df=diag.df, p_value=diag.p_value, ipf_converged=diag.ipf_converged,
                            ipf_iterations=diag.ipf_iterations, ipf_max_error=diag.ipf_max_error,
                            cells_drawn=int(agents["cell_id"].nunique()), variants=list(config.variants),
                            twins=twin_info or None))
        return out, fields

    return Task("population", items, lambda item: config.agents * len(config.variants) * per_agent, run_item,
                tables, "manifest.json", planned_calls=count_calls(config))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Fixed dtypes, so every run's Parquet schema is the same (nullable where rows can be null)."""
    types = {"agent_id": "int64", "replicate": "int64", "target": "boolean", "p_target": "Float64",
             "attempts": "int64", "latency_s": "float64", "choice_mass": "Float64", "input_tokens": "Int64",
             "output_tokens": "Int64", "name": "string", "persona": "string", "decision": "string",
             "rationale": "string", "raw_response": "string", "status": "string", "variant": "string",
             "cell_id": "int64", "weight": "float64", "twin_status": "string", "original": "bool"}
    return df.astype({c: t for c, t in types.items() if c in df.columns})
