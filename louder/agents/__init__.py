"""Language agents: a Mesa agent that carries a persona and makes one decision."""

from __future__ import annotations


import mesa
import numpy as np
from pydantic import BaseModel

from louder.llm.answers import choice_probabilities
from louder.llm.base import Request, stable_seed
from louder.personas import Persona, generate_persona
from louder.schemas import choice_schema


# Score mode: each choice label is scored as the continuation of the JSON answer in the layout the
# action prompt (Appendix C) shows (``score_prefix`` in prompts.yaml). A weak model spreads
# probability beyond the offered labels; that shortfall is kept in `choice_mass`.


def decision_schema(labels: list[str], constrained: bool, rationale: bool = True) -> type[BaseModel]:
    """``{decision, rationale}``; with ``constrained`` the decision must be one of ``labels``."""
    return choice_schema("Decision", "decision", tuple(labels), constrained, rationale)


class PersonaAgent(mesa.Agent):
    """One agent: its attribute, its persona (written by the model), and its decision."""

    def __init__(self, model: mesa.Model, attribute: str, replicate: int):
        super().__init__(model)
        self.attribute = attribute
        self.replicate = replicate
        case = model.case
        # Per-call seeds derive from the agent's identity, not its creation order, so changing N or
        # the case list never changes (or cache-misses) an existing agent's answers.
        self.seed = stable_seed(case.root_seed, case.model, case.scenario.id, case.group.id, case.condition,
                                attribute, replicate)
        self._blank()

    def _blank(self) -> None:
        """The agent before it has written or decided anything."""
        self.persona: Persona | None = None
        self.name: str | None = None
        self.persona_text: str | None = None
        self.decision: str | None = None
        self.target: bool | None = None
        self.rationale: str | None = None
        self.status: str | None = None
        self.raw_response: str | None = None
        self.attempts = 0
        self.latency_s = 0.0
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.p_target: float | None = None
        self.choice_mass: float | None = None

    @property
    def key(self) -> str:
        c = self.model.case
        return f"{c.scenario.id}|{c.group.id}|{c.condition}|{self.attribute}|{self.replicate}"

    @property
    def demographic(self) -> str:
        """What the persona prompt names (its %demographic_attribute% slot): here the one attribute;
        population agents name all of theirs."""
        return self.attribute

    def write_persona(self) -> None:
        c = self.model.case
        self.persona = generate_persona(self.model.session, c.scenario, c.condition, self.demographic, self.seed,
                                        "persona|" + self.key)
        self.name, self.persona_text = self.persona.name, self.persona.persona

    def step(self) -> None:
        """Decide (Appendix C). An agent whose persona failed is accounted with that status."""
        if self.persona is None:
            self.write_persona()
        if self.persona.status != "valid":
            self.status = self.persona.status
            self.raw_response = f"[persona {self.persona.status}] {self.persona.outcome.raw}"
            return
        self.decide()

    def decide(self) -> None:
        """The decision call(s) on the agent's valid persona (sample or score mode)."""
        session, scenario = self.model.session, self.model.case.scenario
        labels = scenario.labels
        prompt = session.prompts.action(self.name, self.persona_text, scenario, "chat")
        if session.config.decision_mode == "score":
            return self._score(prompt, labels)
        completion_prompt = (session.prompts.action(self.name, self.persona_text, scenario, "completion")
                             if session.api == "completion" else None)
        schema = decision_schema(labels, session.config.constrain_choices)
        out, verdict = session.ask_choice(
            prompt, schema, session.config.decision, self.seed, "decision|" + self.key, labels, "decision",
            completion_prompt=completion_prompt, completion_params=session.config.completion_decision,
            extraction_prompt=lambda text: session.prompts.action_extraction(text, scenario))
        self.status, self.decision, self.rationale = verdict.status, verdict.choice, verdict.rationale
        self.target = (verdict.choice == scenario.target) if verdict.status == "valid" else None
        self.raw_response = out.raw if out.raw else (out.reply.error or "")
        if session.api == "completion" and verdict.status != "error":
            self.raw_response = f"{out.raw}\n[extracted] {out.text}"
        self.attempts, self.latency_s = out.attempts, out.latency_s
        self.input_tokens, self.output_tokens = out.input_tokens, out.output_tokens

    def _score(self, prompt: str, labels: list[str]) -> None:
        """Score mode: the probability of each choice as the start of the JSON answer, then the
        argmax or a seeded draw. No rationale is generated."""
        session, scenario = self.model.session, self.model.case.scenario
        request = Request(messages=(("user", prompt),), schema=decision_schema(labels, True, rationale=False),
                          temperature=0.0, max_tokens=16, seed=self.seed, replicate="score")
        reply = session.client.score(request, session.prompts.score_prefix, labels)
        scored = choice_probabilities(reply, labels)
        self.status, self.raw_response = scored.status, reply.error or reply.text
        self.attempts, self.latency_s, self.input_tokens = reply.attempts, reply.latency_s, reply.input_tokens
        self.choice_mass = scored.mass
        if scored.status != "valid":
            return
        if session.config.score_pick == "argmax":
            self.decision = max(labels, key=lambda c: scored.probs[c])
        else:
            rng = np.random.default_rng(stable_seed(self.seed, "draw"))
            self.decision = str(rng.choice(labels, p=[scored.probs[c] for c in labels]))
        self.target = self.decision == scenario.target
        self.p_target = scored.probs[scenario.target]
