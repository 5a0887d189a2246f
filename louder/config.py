"""The one experiment config object. Built from YAML and/or CLI flags, passed explicitly."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from louder.errors import LouderError, describe_validation_error, did_you_mean
from louder.llm.spec import ModelConfig
from louder.networks.graphs import NetworkConfig
from louder.scenarios import builtin_groups, builtin_scenarios, check_distinct, load_group, load_scenario

CONDITIONS = ("contextualized", "non_contextualized", "no_persona")
Condition = Literal["contextualized", "non_contextualized", "no_persona"]


class GenerationParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(ge=0, le=2, description="sampling temperature (0 = greedy)")
    max_tokens: int = Field(ge=1, le=32768, description="longest answer in tokens; an answer cut here is `invalid`")


# Config sections → the flat fields they set. ``explicit`` and ``association`` were (and still are)
# also the names of flat generation-parameter fields: a mapping of only temperature/max_tokens
# under those keys is read as the old flat field.
SECTIONS: dict[str, dict[str, str]] = {
    "simulation": {k: k for k in (
        "agents", "scenarios", "groups", "conditions", "persona", "decision", "completion_persona",
        "completion_decision", "extraction", "decision_mode", "score_pick", "constrain_choices", "reask",
        "choice_order", "wordings", "signal", "names", "reasoning")},
    "explicit": {"trials": "probe_trials", "params": "explicit", "completion_params": "completion_explicit"},
    "association": {"trials": "association_trials", "variations": "association_variations", "params": "association"},
    "decision_test": {"trials": "decision_trials", "variant": "decision_variant", "extraction": "decision_extraction",
                      "profiles": "profiles", "followup": "followup"},
    "beliefs": {"trials": "belief_trials", "params": "beliefs", "completion_params": "completion_beliefs"},
}
# Flat keys that now belong in a section (the shared ones — models, seed, concurrency, cache,
# run_id, paper_faithful, stereotypes, egalitarian — stay at the top).
MOVED = {flat: f"{section}.{key}" for section, keys in SECTIONS.items() for key, flat in keys.items()}
_PARAMS = {"temperature", "max_tokens"}


def _is_section(key: str, value) -> bool:
    return key in SECTIONS and isinstance(value, dict) and not (value and set(value) <= _PARAMS)


def flatten_sections(data: dict, where: str = "config") -> tuple[dict, list[str]]:
    """Nested sections → flat fields; also returns the deprecated flat keys ``data`` used."""
    out, old = {}, []
    for key, value in data.items():
        if _is_section(key, value):
            for sub, v in value.items():
                if sub not in SECTIONS[key]:
                    name = sub if str(sub).isidentifier() else repr(sub)  # a key with a line break stays one line
                    raise LouderError(f"{where}: {key}.{name} is not a field of {key}: (fields: "
                                      f"{', '.join(SECTIONS[key])})")
                out[SECTIONS[key][sub]] = v
        else:
            if key in MOVED:
                old.append(key)
            out[key] = value
    return out, old


class ControlConfig(BaseModel):
    """``control:`` — the no-LLM update rule of a network run (louder.networks.rounds.control_rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rule: Literal["majority", "threshold", "degroot"] = Field(
        "majority", description="majority: follow most neighbours; threshold: flip when at least `threshold` of "
        "the neighbours chose otherwise; degroot: average the neighbours' probabilities")
    threshold: float = Field(0.5, ge=0, le=1, description="threshold rule: share of neighbours that flips an agent")
    self_weight: float = Field(0.5, ge=0, le=1, description="degroot rule: weight of the agent's own probability")


class SequentialConfig(BaseModel):
    """``sequential:`` (``louder run --until decided``) — run each case in waves until an anytime-valid
    test decides it (louder.simulation.sequential; statistics in louder.analysis.sequential)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    budget: int | None = Field(None, ge=1, le=1_000_000, description="the most agents per attribute per case "
                               "(population runs: agents drawn); default: `agents`")
    wave: int = Field(10, ge=1, le=100_000, description="agents per attribute per wave (population runs: agents "
                      "drawn per wave); the test looks after each wave")
    precision: float = Field(0.1, gt=0, le=1, description="D: the smallest DPD of interest; a case stops at "
                             "`parity within D` when its DPD confidence sequence lies below D")
    alpha: float = Field(0.05, gt=0, lt=1, description="error level of every verdict of the run together "
                         "(Bonferroni over the pairs of attributes of all its cases)")


class ExperimentConfig(BaseModel):
    """Everything that defines an experiment. Unknown fields are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(None, description="name of the run; default: the output folder's name")
    models: list[ModelConfig] = Field(default_factory=lambda: [ModelConfig(spec="embedded")], min_length=1,
                                      description="models under test: a spec string or a mapping with `spec:` "
                                      "and per-model settings")
    scenarios: list[str] = Field(default_factory=builtin_scenarios, min_length=1,
                                 description="scenario ids or YAML paths (default: the paper's four)")
    groups: list[str] = Field(default_factory=builtin_groups, min_length=1,
                              description="group ids or YAML paths (default: the paper's three)")
    conditions: list[Condition] = Field(default_factory=lambda: ["contextualized"], min_length=1,
                                        description="persona conditions (section 4.3 ablation)")
    agents: int = Field(100, ge=1, le=1_000_000, description="agents per attribute per case (paper: 100)")
    seed: int = Field(0, ge=0, description="root seed; every per-call seed derives from it")
    paper_faithful: bool = Field(False, description="reproduce the paper's printed inconsistencies")
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
    probe_trials: int | None = Field(
        None, ge=1, le=10_000_000,
        description="explicit-probe trials per scenario × group; default 100 × the group's attributes (paper)")
    explicit: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=200),
                                       description="generation of an explicit-probe answer (appendix D)")
    completion_explicit: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=50),
                                                  description="completion models: the explicit probe")
    constrain_choices: bool = Field(
        True, description="JSON schema restricts 'decision' to the offered labels (off-list answers still counted)"
    )
    # --- LLM Word Association / Relative Decision Tests (Bai et al.) ---
    stereotypes: list[str] | None = Field(None, description="stereotypes of the association/decision tests; "
                                          "default: all 21")
    association_trials: int = Field(50, ge=1, le=1_000_000, description="trials per stereotype × variation")
    association_variations: list[Literal["replication", "instruction1", "instruction2", "synonym"]] = Field(
        default_factory=lambda: ["replication", "instruction1", "instruction2", "synonym"], min_length=1,
        description="prompt variations of the word association test")
    decision_trials: int = Field(50, ge=1, le=1_000_000, description="decision-test trials per stereotype")
    decision_variant: Literal["relative", "absolute", "chained"] = Field(
        "relative", description="relative (appendix J), absolute yes/no (appendix P), or chained (association, "
        "profiles and decision in one conversation, appendices M/O)")
    decision_extraction: Literal["followup", "judge"] = Field(
        "followup", description="who got which option: a structured follow-up turn, or the authors' judge call")
    egalitarian: bool = Field(False, description="add appendix Q's egalitarian system prompt")
    association: GenerationParams = Field(GenerationParams(temperature=1.0, max_tokens=400),
                                          description="generation of a word-association answer")
    profiles: GenerationParams = Field(GenerationParams(temperature=1.0, max_tokens=700),
                                       description="decision test: the two profiles and the decision")
    followup: GenerationParams = Field(GenerationParams(temperature=0.0, max_tokens=60),
                                       description="decision test: the follow-up (or judge) that reads the answer")
    decision_mode: Literal["sample", "score"] = Field(
        "sample", description="sample: the paper's JSON decision at temperature 0.2; score: the probability of "
        "each choice from token log-probs (embedded: full sequence; OpenAI-compatible: first token)")
    score_pick: Literal["argmax", "draw"] = Field(
        "argmax", description="score mode: the decision is the most probable choice, or a seeded draw")
    reask: int = Field(0, ge=0, le=10, description="re-ask an invalid or refused decision/probe answer up to "
                       "this many more times (fresh seed); every try counts in `attempts`, the last answer is kept")
    concurrency: int = Field(4, ge=1, le=1024, description="model calls in flight at once (embedded: 1 runs)")
    stop_after_errors: int = Field(20, ge=1, le=1_000_000, description="stop the run when this many calls in a row "
                                   "to one model fail with the same error that retrying cannot fix (a refused key, "
                                   "401/403, or a spent quota: after 5); cached answers stay, the same command "
                                   "resumes")
    cache: str | None = Field(None, description="SQLite cache path; default OUT/cache.sqlite")
    executor: Literal["local", "ray"] = Field(
        "local", description="local: cases run in this process; ray: cases run as Ray tasks (pip install louder[ray])")
    ray_address: str | None = Field(None, description="executor ray: ray.init(address=…) of an existing cluster; "
                                    "default: start a local Ray")
    # --- the beliefs probe (docs/voices.md): "out of 100 <people>, how many would choose to <target>?" ---
    belief_trials: int = Field(100, ge=1, le=1_000_000, description="beliefs-probe answers per scenario × attribute")
    beliefs: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=30),
                                      description="beliefs-probe generation (chat): one JSON integer 0–100")
    completion_beliefs: GenerationParams = Field(GenerationParams(temperature=0.2, max_tokens=20),
                                                 description="beliefs probe on the completion path: the completion "
                                                 "call (a chat model then extracts the integer)")
    # --- populations (docs/populations.md) ---
    population: str | None = Field(None, description="population file (or built-in id): agents carry one "
                                   "attribute of every group; `agents` is then the number of agents drawn")
    variants: list[str] = Field(default_factory=lambda: ["base"], min_length=1,
                                description="policy variants of the scenarios to run ('base' = the text as written)")
    twins: bool = Field(False, description="counterfactual twins: each persona re-expressed for every other "
                        "attribute of its group, only the attribute changed")
    twin_groups: list[str] | None = Field(None, description="twins: the population's groups whose attributes get "
                                          "twins (default: every group); each twin is a name call (groups that "
                                          "rename) and a decision per variant")
    twin_rewriter: str | None = Field(None, description="twins of groups without a word list in twins.yaml: the "
                                      "chat model spec that rewrites the persona (default: the model under test)")
    # --- networks and influence (docs/networks.md) ---
    network: NetworkConfig | None = Field(None, description="social network of the agents (networkx generator "
                                          "or edge list); none: agents decide alone")
    rounds: int = Field(0, ge=0, le=100, description="rounds of influence after the independent round 0")
    control: ControlConfig = Field(ControlConfig(), description="the no-LLM control of a network run: a reference "
                                   "(what a textbook contagion does on the graph), not the amplification's baseline")
    no_influence: bool = Field(True, description="network runs: every round, each agent is also asked its round-0 "
                               "prompt again with a new seed (the no-influence arm); the amplification verdict "
                               "compares the rounds of influence with it. Score mode with score_pick: argmax "
                               "repeats round 0 exactly, so there the arm is round 0 itself and costs no call")
    mode: Literal["agents", "archetype"] = Field(
        "agents", description="agents: one persona and decision per agent; archetype: one scored call per "
        "population cell × neighbour-share bucket × replicate, agents draw from its probability")
    replicates: int = Field(5, ge=1, le=1000, description="archetype mode: replicates per archetype (K)")
    buckets: int | list[float] = Field(8, description="archetype mode: neighbour-share buckets — a count "
                                       "(0, 1/n, …, 1) or the list of bucket centres")
    # --- robustness: how a scenario is presented (issue 25, docs/robustness.md) ---
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
    # --- reasoning models (issue 30, docs/how-to/reasoning-models.md) ---
    reasoning: list[Literal["default", "off", "on", "low", "medium", "high"]] = Field(
        default_factory=lambda: ["default"], min_length=1,
        description="reasoning levels of the decisions, an experiment dimension like wordings (every agent decides "
        "once per level, its persona shared): default (send no control: the model's own behaviour), off, on, low, "
        "medium, high — sent as each model's `reasoning_control`; reasoning.csv compares the DPD between levels")

    # --- sequential runs (docs/sequential.md) ---
    sequential: SequentialConfig | None = Field(None, description="run each case in waves until it is decided "
                                                "(`louder run --until decided`); none: a fixed number of agents")
    @model_validator(mode="before")
    @classmethod
    def _partial_sections(cls, data):
        """A mapping given for a field whose default is a settings object (``persona``, ``control``, …)
        changes only the keys it names: ``persona: {temperature: 0.5}`` keeps the default max_tokens."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, value in data.items():
            field = cls.model_fields.get(name)
            default = getattr(field, "default", None)
            if isinstance(value, dict) and isinstance(default, BaseModel):
                out[name] = {**default.model_dump(), **value}
        return out

    @field_validator("models", mode="before")
    @classmethod
    def _strings_are_specs(cls, v):
        if isinstance(v, list):
            return [{"spec": x} if isinstance(x, str) else x for x in v]
        return v

    @field_validator("twin_rewriter")
    @classmethod
    def _rewriter_spec(cls, v):
        if v is None:
            return v
        from louder.llm.spec import parse_spec

        if parse_spec(v)[0] != "chat":  # ValueError: pydantic names the field
            raise ValueError(f"{v!r} is a completion model; a rewrite needs a chat model spec (drop completion:)")
        return v

    @field_validator("scenarios")
    @classmethod
    def _known_scenarios(cls, v: list[str]) -> list[str]:
        for ref in v:
            try:
                load_scenario(ref)
            except LouderError as e:  # as a ValueError, pydantic names the field and keeps other errors
                raise ValueError(str(e)) from None
        try:  # one id per scenario: cases are keyed by id, whether named by id or by path
            check_distinct("scenarios", v)
        except LouderError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("groups")
    @classmethod
    def _known_groups(cls, v: list[str]) -> list[str]:
        for ref in v:
            try:
                load_group(ref)
            except LouderError as e:
                raise ValueError(str(e)) from None
        try:  # one id per group: cases are keyed by id, whether named by id or by path
            check_distinct("groups", v)
        except LouderError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("stereotypes")
    @classmethod
    def _known_stereotypes(cls, v):
        if v is None:
            return v
        from louder.probes.stimuli import get_stereotype

        out = []
        for name in v:
            try:
                out.append(get_stereotype(name).name)
            except LouderError as e:
                raise ValueError(str(e)) from None
        if len(set(out)) != len(out):
            raise ValueError("stereotypes are listed more than once")
        return out

    @field_validator("population")
    @classmethod
    def _known_population(cls, v):
        if v is None:
            return v
        from louder.populations import load_population

        try:
            load_population(v)
        except LouderError as e:
            raise ValueError(str(e)) from None
        return v

    @field_validator("variants")
    @classmethod
    def _distinct_variants(cls, v):
        if len(set(v)) != len(v):
            raise ValueError("variants are listed more than once")
        return v

    @field_validator("signal", mode="before")
    @classmethod
    def _one_signal_is_a_list(cls, v):
        return [v] if isinstance(v, str) else v

    @field_validator("reasoning", mode="before")
    @classmethod
    def _one_level_is_a_list(cls, v):
        return [v] if isinstance(v, str) else v

    @field_validator("wordings", "signal", "reasoning")
    @classmethod
    def _distinct_wordings(cls, v):
        if len(set(v)) != len(v):
            raise ValueError("listed more than once")
        return v

    @field_validator("conditions")
    @classmethod
    def _distinct_conditions(cls, v):
        if len(set(v)) != len(v):
            raise ValueError("conditions are listed more than once")
        return v

    @model_validator(mode="after")
    def _rounds_need_a_network(self):
        if self.rounds and self.network is None:
            raise ValueError(f"rounds: {self.rounds} rounds of influence need a social network; add `network:` "
                             "(e.g. {generator: watts_strogatz, params: {k: 8, p: 0.1}}) or set rounds: 0")
        return self

    @model_validator(mode="after")
    def _variants_of_every_scenario(self) -> ExperimentConfig:
        """Every variant of the run must exist in every scenario (a variant is a case dimension)."""
        for ref in self.scenarios:
            s = load_scenario(ref)
            for v in self.variants:
                if v not in s.variant_ids:
                    raise ValueError(f"variants: scenario {s.id} has no variant {v!r}{did_you_mean(v, s.variant_ids)}; "
                                     "its variants are "
                                     f"{', '.join(s.variant_ids)} (add it under `variants:` in the scenario file "
                                     f"or drop it from the run)")
        if self.twin_groups is not None and self.population is not None:
            from louder.populations import load_population

            ids = load_population(self.population).group_ids
            unknown = [g for g in self.twin_groups if g not in ids]
            if unknown or not self.twin_groups:
                raise ValueError(f"twin_groups: {', '.join(unknown) or '(empty)'} not a group of population "
                                 f"{self.population}{did_you_mean(unknown[0], ids) if unknown else ''}; its groups are "
                                 f"{', '.join(ids)}")
        if self.twins and self.population is None:
            raise ValueError("twins: counterfactual twins need a population run; give `population:` (or "
                             "--population FILE) — a population of one group works")
        return self

    @model_validator(mode="after")
    def _presentation(self) -> ExperimentConfig:
        """Wordings, choice orders and signals (docs/robustness.md): what exists, and what each kind runs."""
        from louder.presentation import ALL, check_names, load_names

        seed_only = self.population is not None or self.network is not None or self.mode != "agents"
        kind = "mode: archetype" if self.mode != "agents" else "population:" if self.population else "network:"
        if seed_only and self.reasoning != ["default"]:
            raise ValueError(f"reasoning: reasoning levels run in the seed simulation only (for now), not with {kind}; "
                             f"drop `reasoning:` (or run the same scenarios without {kind})")
        if self.decision_mode == "score" and set(self.reasoning) - {"default", "off"}:
            level = next(x for x in self.reasoning if x not in ("default", "off"))
            raise ValueError(f"reasoning: level {level!r} with decision_mode: score — score mode reads the "
                             "log-probs of the choices at the answer's first token, so it cannot follow a model that "
                             "thinks first; use decision_mode: sample for reasoning levels (or reasoning: [off])")
        if seed_only and (self.wordings != ["as_written"] or self.signal != ["stated"]):
            field = "wordings" if self.wordings != ["as_written"] else "signal"
            raise ValueError(f"{field}: wordings and the names signal run in the seed simulation only, not with "
                             f"{kind}; drop `{field}:` (or run the same scenarios without {kind})")
        if self.mode != "agents" and self.choice_order != "as_written":
            raise ValueError("choice_order: archetype mode scores one shared prompt per population cell, listed as "
                             "written; use choice_order: as_written (or an agents-mode run for other orders)")
        if ALL in self.wordings and len(self.wordings) > 1:
            raise ValueError("wordings: `all` already includes every wording; give [all] alone or a list of ids")
        for ref in self.scenarios:
            s = load_scenario(ref)
            for w in self.wordings:
                if w != ALL and w not in s.wording_ids:
                    raise ValueError(f"wordings: scenario {s.id} has no wording {w!r}{did_you_mean(w, s.wording_ids)}; "
                                     "its wordings are "
                                     f"{', '.join(s.wording_ids)} (add it under `wordings:` in the scenario file, "
                                     "write some with `louder scenario paraphrase`, or use wordings: [all])")
            for v in self.variants:
                for w in (s.wording_ids if ALL in self.wordings else self.wordings):
                    s.text(v, w)  # a LouderError names the variant and wording that cannot be combined
        if "names" in self.signal:
            if any(m.api == "completion" for m in self.models):
                raise ValueError("signal: names writes personas from a name with chat prompts; completion: models "
                                 "are not supported — use a chat model spec or signal: stated")
            names = load_names(self.names)
            for ref in self.groups:
                g = load_group(ref)
                check_names(names, g.id, g.attributes, self.names)
        elif self.names is not None:
            raise ValueError("names: a names file is read by signal: names only; add `signal: names` or drop `names:`")
        return self


def part(config: ExperimentConfig, section: str) -> SimpleNamespace:
    """One section of ``config`` under its nested names (``part(cfg, "association").trials``) plus the
    shared fields (``models``, ``seed``, ``concurrency``, …): what a component of that section may read."""
    own = {key: getattr(config, flat) for key, flat in SECTIONS[section].items()}
    shared = {k: getattr(config, k) for k in ("models", "seed", "concurrency", "paper_faithful", "stereotypes",
                                              "egalitarian", "decision_mode")}
    return SimpleNamespace(**shared, **own)


def build_config(data: dict, where: str = "config") -> ExperimentConfig:
    """Validate ``data`` (flat fields or nested sections); any problem becomes one LouderError
    naming the field and the fix."""
    data, _ = flatten_sections(data, where)
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as e:
        raise LouderError(describe_validation_error(e, where)) from None
    except LouderError as e:  # a scenario/group reference that does not resolve
        raise LouderError(f"{where}: {e}") from None


def load_config(path: str | Path | dict | ExperimentConfig | None, overrides: dict | None = None) -> ExperimentConfig:
    """Read a YAML config (or none: defaults) and apply CLI ``overrides`` on top. ``path`` may also be
    a dict in the YAML's shape (sections or flat fields) or an ``ExperimentConfig``, as the Python API
    takes them."""
    data: dict = {}
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    if isinstance(path, ExperimentConfig):  # validated already: only the overrides are new
        return build_config({**path.model_dump(exclude_unset=True), **overrides}) if overrides else path
    if isinstance(path, dict):
        data, path = dict(path), None
    elif path is not None:
        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except OSError as e:
            raise LouderError(f"config file {p}: cannot be read ({e.strerror})") from None
        except UnicodeDecodeError as e:
            raise LouderError(f"config file {p}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at position {e.start}); "
                              "save it as UTF-8") from None
        except yaml.YAMLError as e:
            raise LouderError(f"config file {p}: not valid YAML ({str(e).splitlines()[0]})") from None
        if data is None:  # an empty file is a mistake, not "run the defaults" (on the embedded model)
            raise LouderError(f"config file {p}: is empty; write the fields to set (e.g. `models: [fake]`), or give no "
                              "config file to run the defaults")
        if not isinstance(data, dict):
            raise LouderError(f"config file {p}: must be a mapping of fields, got {type(data).__name__}")
    where = f"config {path}" if path else "config"
    data, old = flatten_sections(data, where)
    if old:
        warnings.warn(f"{where}: flat keys are deprecated and will stop working in the next release; move "
                      + ", ".join(f"{k} → {MOVED[k]}" for k in old), FutureWarning, stacklevel=2)
    data.update(overrides)
    return build_config(data, where=where)
