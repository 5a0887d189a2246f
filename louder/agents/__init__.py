"""Language agents: a Mesa agent that carries a persona and makes one decision."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields, replace
from functools import cached_property

import mesa
import numpy as np
from pydantic import BaseModel

from louder import dimensions
from louder.dimensions import SPLIT
from louder.llm.answers import choice_probabilities
from louder.llm.base import Request, stable_seed
from louder.personas import Persona, generate_named_persona, generate_persona
from louder.scenarios import Scenario
from louder.schemas import choice_schema


# Score mode: each choice label is scored as the continuation of the JSON answer in the layout the
# action prompt (Appendix C) shows (``score_prefix`` in prompts.yaml). A weak model spreads
# probability beyond the offered labels; that shortfall is kept in `choice_mass`.


@dataclass(frozen=True)
class Decision:
    """One decision of an agent and what it cost (the decision columns of decisions.parquet)."""

    status: str
    decision: str | None = None
    target: bool | None = None
    rationale: str | None = None
    raw_response: str | None = None
    attempts: int = 0
    latency_s: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    p_target: float | None = None
    choice_mass: float | None = None
    thinking: str | None = None  # a reasoning model's thinking, apart from its answer
    reasoning_tokens: int | None = None


DECISION_FIELDS = tuple(f.name for f in fields(Decision))


def decision_schema(labels: list[str], constrained: bool, rationale: bool = True) -> type[BaseModel]:
    """``{decision, rationale}``; with ``constrained`` the decision must be one of ``labels``."""
    return choice_schema("Decision", "decision", tuple(labels), constrained, rationale)


class PersonaAgent(mesa.Agent):
    """One agent: its attribute, its persona (written by the model), and its decision."""

    def __init__(self, model: mesa.Model, attribute: str, replicate: int, agent_id: int | None = None,
                 respondent: str | None = None, grounding: str | None = None, description: str | None = None):
        super().__init__(model)
        self.attribute = attribute
        self.replicate = replicate
        # a respondent's paired agent (simulation.humans): its identity is the respondent's, not a replicate's;
        # a grounded one (simulation.ground) has the respondent's (or an unlabelled profile's) profile in words
        self.respondent = respondent
        self.grounding = grounding
        self.description = description
        case = model.case
        # Per-call seeds derive from the agent's identity, not its creation order, so changing N or
        # the case list never changes (or cache-misses) an existing agent's answers.
        who = (replicate,) if respondent is None else (self._kind, respondent)
        self.seed = stable_seed(case.root_seed, case.model, case.scenario.id, case.group.id, case.condition,
                                attribute, *who)
        self.agent_id = self.unique_id if agent_id is None else agent_id
        self._blank()

    def _blank(self) -> None:
        """The agent before it has written or decided anything."""
        self.persona: Persona | None = None
        self.name: str | None = None
        self.persona_text: str | None = None
        for f in fields(Decision):  # nothing decided yet: every decision column at its default, status None
            setattr(self, f.name, None if f.default is MISSING else f.default)

    @property
    def session(self):
        """The model session the agent asks: its own in a mixed-model population (``mix:``, issue 48: each agent
        has its model, set by its run as ``own_session``), else its case's."""
        return self.__dict__.get("own_session") or self.model.session

    # What tells this agent's score call apart from another agent's with the same prompt and seed: nothing
    # here (an agent's seed is its own); a twin, which decides with its source's seed, adds its own tag.
    score_tag = ""

    @property
    def _kind(self) -> str:
        """What the agent's identity is made of besides the person's id: the attribute-only paired agent
        keeps the identity it had before grounded agents existed (``respondent``), so its answers stay cached."""
        return "respondent" if self.grounding in (None, "attribute") else self.grounding

    @property
    def key(self) -> str:
        c = self.model.case
        who = self.replicate if self.respondent is None else f"{self._kind}={self.respondent}"
        return f"{c.scenario.id}|{c.group.id}|{c.condition}|{self.attribute}|{who}"

    @property
    def demographic(self) -> str:
        """What the persona prompt names (its %demographic_attribute% slot): here the one attribute, or a
        grounded agent's profile in words; population agents name all of their attributes."""
        return self.description or self.attribute

    # --- the experiment dimensions (louder.dimensions; docs/robustness.md): how the agent meets its case ---
    def level(self, dim_id: str) -> str:
        """The agent's level of a dimension: a split dimension's from the agent's identity (so resume and a
        larger N keep it), the others its case's (the arm it runs in)."""
        d = dimensions.get(dim_id)
        if d.design == SPLIT:
            return self._split[dim_id]
        return self.model.case.levels.get(dim_id, d.default)

    @cached_property
    def _split(self) -> dict[str, str]:
        config, scenario = self.model.session.config, self.model.case.scenario
        return {d.id: d.assign(config, scenario, self.replicate, self.seed) for d in dimensions.registered(SPLIT)}

    @property
    def scenario(self) -> Scenario:
        """The case's scenario as this agent sees it (its choices in its own order): what the decision
        prompt shows."""
        s = self.model.case.scenario
        for d in dimensions.registered(SPLIT):
            if d.show is not None:
                s = d.show(s, self._split[d.id])
        return s

    @property
    def levels(self) -> dict[str, str]:
        """The agent's level of every dimension."""
        return {d.id: self.level(d.id) for d in dimensions.registered()}

    @property
    def choice_order(self) -> str:
        return self.level("choice_order")

    @property
    def wording(self) -> str:
        return self.level("wording")

    @property
    def signal(self) -> str:
        return self.level("signal")

    @property
    def reasoning(self) -> str:
        """The reasoning level the agent decides at (``simulation.reasoning``; its persona is written at
        the model's default, shared by every level)."""
        return self.level("reasoning")

    def signalled_attributes(self, names) -> list[str]:
        """The attributes a name signals for this agent (the names signal): its one attribute."""
        return [self.attribute]

    def write_persona(self) -> None:
        c = self.model.case
        # a dimension may have the persona written for a name instead of the stated attribute (signal: names,
        # the audit-study design: the prompt names the person, never the attribute)
        name = next((n for d in dimensions.registered() if d.persona is not None
                     for n in [d.persona(self.level(d.id), self)] if n is not None), None)
        if name is not None:
            self.persona = generate_named_persona(self.session, c.scenario, c.condition, name, self.seed,
                                                  "persona|" + self.key)
        else:
            self.persona = generate_persona(self.session, c.scenario, c.condition, self.demographic, self.seed,
                                            "persona|" + self.key)
        self.name, self.persona_text = self.persona.name, self.persona.persona

    def persona_row(self) -> dict:
        """The agent's row of personas.parquet (without the run and case columns): its persona with
        the persona's own status, prompt, raw answer and cost."""
        p = self.persona
        return dict(attribute=self.attribute, agent_id=self.agent_id, replicate=self.replicate, name=p.name,
                    persona=p.persona, status=p.status, prompt=p.prompt, raw_response=p.outcome.raw,
                    reason=p.reason, attempts=p.outcome.attempts, latency_s=p.outcome.latency_s,
                    input_tokens=p.outcome.input_tokens, output_tokens=p.outcome.output_tokens,
                    thinking=p.outcome.thinking, reasoning_tokens=p.outcome.reasoning_tokens)

    def step(self) -> None:
        """Decide (Appendix C). An agent whose persona failed is accounted with that status."""
        if self.persona is None:
            self.write_persona()
        self.take(self.decide())

    def take(self, d: Decision) -> None:
        """Make ``d`` the agent's own decision (the fields the DataCollector records)."""
        for name in DECISION_FIELDS:
            setattr(self, name, getattr(d, name))

    def decide(self, neighbours: str | None = None, round_: int = 0, arm: str = "round") -> Decision:
        """The agent's decision, as a value (the agent's own fields are left alone). Round 0 is the
        independent decision of the seed pipeline (same prompt, seed and cache key). In a round
        r ≥ 1 of influence, ``neighbours`` (what its neighbours chose) is added to the scenario text,
        and the seed and cache key carry r, so each round's call is cached on its own. The
        no-influence arm (``arm="no_influence"``) asks round 0's prompt again in round r with a seed
        and cache key of its own: the same question, a fresh answer."""
        if self.persona.status != "valid":  # not asked: the agent carries its persona's status
            p = self.persona
            why = f"{p.status}: {p.reason}" if p.reason else p.status
            return Decision(status=p.status, raw_response=f"[persona {why}] {p.outcome.raw if p.outcome else ''}")
        session, scenario = self.session, self.scenario  # the choices in this agent's order
        sim = session.config.simulation
        seed = self.seed if round_ == 0 else stable_seed(self.seed, arm, round_)
        tag = "" if round_ == 0 else f"|{arm}{round_}"
        labels = scenario.labels
        # the call under the agent's levels; at every default: no control, no system message, the paper's prompt
        ask = dimensions.shape(self.levels, session.config)
        text = "\n".join(t for t in (neighbours, ask.before_choices) if t) or None
        prompt = session.prompts.action(self.name, self.persona_text, scenario, "chat", text)
        if sim.decision_mode == "score":
            return self._score(prompt, labels, seed, "score" + self.score_tag + tag, ask.reasoning, ask.system)
        completion_prompt = (session.prompts.action(self.name, self.persona_text, scenario, "completion", text)
                             if session.api == "completion" else None)
        schema = decision_schema(labels, sim.constrain_choices)
        out, verdict = session.ask_choice(
            prompt, schema, sim.decision, seed, "decision|" + self.key + tag, labels, "decision",
            completion_prompt=completion_prompt, completion_params=sim.completion_decision,
            extraction_prompt=lambda text: session.prompts.action_extraction(text, scenario), reasoning=ask.reasoning,
            system=ask.system)
        raw = out.raw if out.raw else (out.reply.error or "")
        if session.api == "completion" and verdict.status != "error":
            raw = f"{out.raw}\n[extracted] {out.text}"
        return Decision(status=verdict.status, decision=verdict.choice, rationale=verdict.rationale,
                        target=(verdict.choice == scenario.target) if verdict.status == "valid" else None,
                        raw_response=raw, attempts=out.attempts, latency_s=out.latency_s,
                        input_tokens=out.input_tokens, output_tokens=out.output_tokens, thinking=out.thinking,
                        reasoning_tokens=out.reasoning_tokens)

    def _score(self, prompt: str, labels: list[str], seed: int, replicate: str, level: str | None = None,
               system: str | None = None) -> Decision:
        """Score mode: the probability of each choice as the start of the JSON answer, then the
        argmax or a seeded draw. No rationale is generated."""
        session, scenario = self.session, self.model.case.scenario
        messages = ((("system", system),) if system else ()) + (("user", prompt),)
        request = Request(messages=messages, schema=decision_schema(labels, True, rationale=False),
                          temperature=0.0, max_tokens=16, seed=seed, replicate=replicate, reasoning=level)
        reply = session.client.score(request, session.prompts.score_prefix, labels)
        scored = choice_probabilities(reply, labels)
        d = Decision(status=scored.status, raw_response=reply.error or reply.text, attempts=reply.attempts,
                     latency_s=reply.latency_s, input_tokens=reply.input_tokens, choice_mass=scored.mass)
        if scored.status != "valid":
            return d
        probs = self.calibrated(scored.probs, labels, scenario.target)
        if session.config.simulation.score_pick == "argmax":
            decision = max(labels, key=lambda c: probs[c])
        else:
            rng = np.random.default_rng(stable_seed(seed, "draw"))
            decision = str(rng.choice(labels, p=[probs[c] for c in labels]))
        return replace(d, decision=decision, target=decision == scenario.target, p_target=probs[scenario.target])

    def groups(self) -> dict[str, str]:
        """The agent's attribute in each group: here its case's group (population agents: every group)."""
        return {self.model.case.group.id: self.attribute}

    def calibrated(self, probs: dict[str, float], labels: list[str], target: str) -> dict[str, float]:
        """The choice probabilities the agent decides with: the model's, or under ``simulation.calibration``
        (calibrated agents, louder.calibration) the target's shifted by the agent's logit offset and the
        other choices rescaled. Without a calibration: ``probs`` as they are."""
        session = self.model.session
        path = session.config.simulation.calibration
        if path is None:
            return probs
        from louder.calibration import apply_offsets, load_calibration, offset_for

        c = self.model.case
        delta = offset_for(load_calibration(path), c.model, c.condition, c.scenario.id, self.groups())
        shifted = apply_offsets([probs[x] for x in labels], labels.index(target), delta)
        return dict(zip(labels, map(float, shifted)))
