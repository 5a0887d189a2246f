"""The ``simulation:`` and ``sequential:`` sections of the config (issue 31.4): what every agent run
(seed, population, network, archetype) reads — the design (scenarios, groups, conditions, agents,
variants), the generation of personas and decisions, and the experiment dimensions
(``louder.dimensions``: wordings, choice order, signal, reasoning levels, interventions)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from louder.errors import LouderError, did_you_mean
from louder.scenarios import builtin_groups, builtin_scenarios, check_distinct, load_group, load_scenario
from louder.sections import GenerationParams, Section

CONDITIONS = ("contextualized", "non_contextualized", "no_persona")
# the conditions in which the model writes the persona (under no_persona it writes a name only, and the
# attribute stands in for the persona)
WRITTEN = ("contextualized", "non_contextualized")
Condition = Literal["contextualized", "non_contextualized", "no_persona"]


class SimulationConfig(Section):
    RENAMED: ClassVar[dict[str, str]] = {"adjustment": "calibration"}  # its name before issue 41
    """``simulation:`` — the agents' runs (``louder run``): what is asked, of how many agents, how."""


    agents: int = Field(100, ge=1, le=1_000_000_000, description="agents per attribute per case (paper: 100); "
                        "population runs: the number of agents drawn (at most 1,000,000 but in archetype mode)")
    scenarios: list[str] = Field(default_factory=builtin_scenarios, min_length=1,
                                 description="scenario ids or YAML paths (default: the paper's four)")
    groups: list[str] = Field(default_factory=builtin_groups, min_length=1,
                              description="group ids or YAML paths (default: the paper's three)")
    conditions: list[Condition] = Field(default_factory=lambda: ["contextualized"], min_length=1,
                                        description="persona conditions (section 4.3 ablation)")
    variants: list[str] = Field(default_factory=lambda: ["base"], min_length=1,
                                description="policy variants of the scenarios to run ('base' = the text as written)")
    persona: GenerationParams = Field(GenerationParams(temperature=0.7, max_tokens=400),
                                      description="generation of the persona (appendix B)")
    decision: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=200),
                                       description="generation of the decision (appendix C)")
    completion_persona: GenerationParams = Field(GenerationParams(temperature=0.5, max_tokens=150),
                                                 description="completion models: the persona prompt")
    completion_decision: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=50),
                                                  description="completion models: the decision prompt")
    extraction: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=400),
                                         description="completion models: the chat call that extracts JSON")
    constrain_choices: bool = Field(
        True, description="JSON schema restricts 'decision' to the offered labels (off-list answers still counted)")
    decision_mode: Literal["sample", "score"] = Field(
        "sample", description="sample: the paper's JSON decision at temperature 0.2; score: the probability of "
        "each choice from token log-probs (embedded: full sequence; OpenAI-compatible: first token)")
    score_pick: Literal["argmax", "draw"] = Field(
        "argmax", description="score mode: the decision is the most probable choice, or a seeded draw")
    reask: int = Field(0, ge=0, le=10, description="re-ask an invalid or refused decision/probe answer up to "
                       "this many more times (fresh seed); every try counts in `attempts`, the last answer is kept")
    # --- experiment dimensions (louder/dimensions.py; docs/robustness.md): every agent run takes them ---
    choice_order: Literal["as_written", "reversed", "balanced", "shuffled"] = Field(
        "as_written", description="the order the choices are listed in: as written (the paper's), reversed, "
        "balanced (each label in each position for an equal share of each attribute's agents; recommended) or "
        "shuffled (a permutation per agent)")
    wordings: list[str] = Field(default_factory=lambda: ["as_written"], min_length=1,
                                description="wordings of the scenarios to run: as_written (the file's own text), ids "
                                "of the file's `wordings:`, or all")
    signal: list[Literal["stated", "names"]] = Field(
        default_factory=lambda: ["stated"], min_length=1,
        description="how the attribute reaches the persona: stated (the paper's) or names (only a first and last "
        "name drawn from the attribute's name list; the audit-study design); one or both")
    names: str | None = Field(None, description="signal names: the names file (YAML path or built-in id); default "
                              "bertrand_mullainathan_2004")
    reasoning: list[Literal["default", "off", "on", "low", "medium", "high"]] = Field(
        default_factory=lambda: ["default"], min_length=1,
        description="reasoning levels of the decisions, an experiment dimension like wordings (every agent decides "
        "once per level, its persona shared): default (send no control: the model's own behaviour), off, on, low, "
        "medium, high — sent as each model's `reasoning_control`; reasoning.csv compares the DPD between levels")
    interventions: list[str] = Field(
        default_factory=lambda: ["none"], min_length=1,
        description="prompt interventions, an experiment dimension (every agent decides once per intervention, its "
        "persona shared): none (the paper's prompt), ids of the built-ins (louder/data/interventions.yaml: "
        "really_dont_discriminate, illegal, ignore_demographics, …) or paths of intervention files (id, text, where: "
        "system | before_decision); interventions.csv compares each with none (docs/how-to/test-a-mitigation.md)")
    calibration: str | None = Field(
        None, description="calibrated agents: a calibration file of logit offsets (`louder calibrate RUN --to parity "
        "| observed` writes RUN/calibration.yaml); each agent's target-choice probability is shifted by its "
        "attribute's offset before it decides (score mode; network rounds hear the calibrated decisions) — "
        "docs/how-to/test-a-mitigation.md")
    ground: list[str] | None = Field(
        None, description="grounded agents (with `humans`, below): the human study's profile columns (or [all]: every "
        "column that is not respondent, scenario, a group, decision, weight or retest) that each respondent's "
        "grounded agent's persona is written from, with the respondent's group attributes (template `grounded` of "
        "louder/data/prompts.yaml); the attribute-only paired agents stay, and fidelity.csv scores both kinds "
        "(docs/how-to/check-agents-against-humans.md)")
    humans: str | None = Field(
        None, description="a human study of the run's scenarios (CSV: respondent, scenario, one column per group id "
        "holding the respondent's attribute, decision, optional weight): each respondent gets a paired agent of its "
        "attribute beside the usual agents, and anchored.csv aligns the agents' rates with the humans' by "
        "prediction-powered inference (docs/how-to/anchor-to-humans.md)")
    unlabelled: str | None = Field(
        None, description="with `ground`: a CSV of profiles without a human answer (a population register or the "
        "larger sample the respondents came from: respondent, the group columns, the ground columns, optional "
        "scenario and weight); each gets a grounded agent, prediction-powered inference's unlabelled set, so that "
        "anchoring.csv's grounded rows can narrow the humans' interval (docs/how-to/check-agents-against-humans.md)")

    @field_validator("scenarios", "groups")
    @classmethod
    def _known_files(cls, v: list[str], info) -> list[str]:
        """Every scenario (group) exists, and each has its own id: cases are keyed by id, whether named
        by id or by path."""
        load = load_scenario if info.field_name == "scenarios" else load_group
        try:
            for ref in v:
                load(ref)
            check_distinct(info.field_name, v)
        except LouderError as e:  # as a ValueError, pydantic names the field and keeps other errors
            raise ValueError(str(e)) from None
        return v

    @field_validator("humans")
    @classmethod
    def _readable_humans(cls, v: str | None, info: ValidationInfo) -> str | None:
        """Every row of the human study names a scenario, attributes and a choice of the run (its profile
        columns are checked with ``ground``, below)."""
        if v is None or "scenarios" not in info.data or "groups" not in info.data:
            return v  # (a bad scenario or group is reported on its own)
        from louder.humans import load

        try:  # (``ground`` comes first: a profile column it names is not taken for a misspelt group)
            load(v, info.data["scenarios"], info.data["groups"], info.data.get("ground") or ())
        except LouderError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("ground", mode="before")
    @classmethod
    def _comma_separated(cls, v):
        """``--ground age,household`` (one string, commas between columns) as a list."""
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            v = [c.strip() for x in v for c in (x.split(",") if isinstance(x, str) else [x])]
            v = [c for c in v if c != ""]
        return v

    @field_validator("ground")
    @classmethod
    def _ground_columns(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        if not v:
            raise ValueError("name at least one profile column of the human study, or `all`")
        if "all" in v and len(v) > 1:
            raise ValueError("`all` already names every profile column: give `all` alone or the columns")
        return v

    @model_validator(mode="after")
    def _grounded_study(self) -> SimulationConfig:
        """``ground`` and ``unlabelled`` need a human study; the study's profile columns and the unlabelled
        profiles are read and checked here, before any call (``louder.humans``)."""
        if self.ground is None and self.unlabelled is None:
            return self
        if self.humans is None:
            field = "ground" if self.ground is not None else "unlabelled"
            raise ValueError(f"{field}: grounded agents stand for the respondents of a human study; add "
                             "simulation.humans (--humans FILE)")
        if self.ground is None:
            raise ValueError("unlabelled: the unlabelled profiles get grounded agents; name the profile "
                             "columns they are grounded on in simulation.ground (--ground COL,COL or all)")
        if "names" in self.signal:  # a names persona is written for a name alone: the profile would be lost
            raise ValueError("ground: a grounded persona is written from the profile, which states the "
                             "attributes; the names signal writes personas for a name alone — drop --signal names or "
                             "--ground")
        from louder.humans import load_unlabelled, study

        try:
            s = study(self.humans, self.scenarios, self.groups, self.ground)
            if self.unlabelled is not None:
                load_unlabelled(self.unlabelled, self.scenarios, self.groups, s.ground)
        except LouderError as e:
            raise ValueError(str(e)) from None
        return self

    @field_validator("signal", "reasoning", "interventions", mode="before")
    @classmethod
    def _one_level_is_a_list(cls, v):
        return [v] if isinstance(v, str) else v

    @field_validator("conditions", "variants", "wordings", "signal", "reasoning", "interventions")
    @classmethod
    def _distinct(cls, v):
        if len(set(v)) != len(v):
            raise ValueError("listed more than once")
        return v

    @model_validator(mode="after")
    def _variants_of_every_scenario(self) -> SimulationConfig:
        """Every variant of the run must exist in every scenario (a variant is a case dimension)."""
        for ref in self.scenarios:
            s = load_scenario(ref)
            for v in self.variants:
                if v not in s.variant_ids:
                    raise ValueError(f"variants: scenario {s.id} has no variant {v!r}{did_you_mean(v, s.variant_ids)}; "
                                     "its variants are "
                                     f"{', '.join(s.variant_ids)} (add it under `variants:` in the scenario file "
                                     f"or drop it from the run)")
        return self


class SequentialConfig(Section):
    """``sequential:`` (``louder run --until decided``) — run each case in waves until an anytime-valid
    test decides it (louder.simulation.sequential; statistics in louder.analysis.stats.sequential)."""

    budget: int | None = Field(None, ge=1, le=1_000_000, description="the most agents per attribute per case "
                               "(population runs: agents drawn); default: `agents`")
    wave: int = Field(10, ge=1, le=100_000, description="agents per attribute per wave (population runs: agents "
                      "drawn per wave); the test looks after each wave")
    precision: float = Field(0.1, gt=0, le=1, description="D: the smallest DPD of interest; a case stops at "
                             "`parity within D` when its DPD confidence sequence lies below D")
    alpha: float = Field(0.05, gt=0, lt=1, description="error level of every verdict of the run together "
                         "(Bonferroni over the pairs of attributes of all its cases)")
