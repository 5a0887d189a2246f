"""The one experiment config object. Built from YAML and/or CLI flags, passed explicitly.

``ExperimentConfig`` is a few keys every kind of run shares (models, seed, concurrency, cache …)
and the sections users write (docs/reference/config.md), each a small pydantic model beside the code
it configures (issue 31.4) — or, where that code reads the whole config, in ``louder/sections/``
(issue 47: the config composes them, and imports nothing that imports it):

=================  ==================================================  ======================================
section            what it sets                                        model
=================  ==================================================  ======================================
``simulation:``    the agents' runs: design, generation, dimensions    ``louder/sections/simulation.py``
``sequential:``    waves until decided (``--until decided``)           ``louder/sections/simulation.py``
``population:``    agents drawn from a population, twins, archetypes   ``louder/populations/config.py``
``network:``       the social network (a graph generator)              ``louder/networks/graphs.py``
``influence:``     rounds of influence, control rule, no-influence arm ``louder/networks/config.py``
``explicit:`` …    the probes (explicit, association, decision_test,   ``louder/sections/probes.py``
                   beliefs)
``convention:``    populations playing a coordination game (issue 48)  ``louder/convention.py``
=================  ==================================================  ======================================

Configs of earlier versions wrote most of these as flat top-level keys (``agents: 5``); where each now
lives is ``louder.sections.FLAT``. ``nest`` reads them into their sections, and ``load_config`` says
once, in one line, where to move them. Manifests record the config in the nested shape;
``louder.sections.recorded`` reads a field of a manifest's config in either shape.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from louder.convention import ConventionConfig
from louder.errors import LouderError, closest, describe_validation_error
from louder.llm.spec import ModelConfig
from louder.networks.config import ControlConfig, InfluenceConfig
from louder.networks.graphs import NetworkConfig
from louder.populations.config import PopulationConfig
from louder.sections import FLAT, GenerationParams, Section, flat_params, recorded
from louder.sections.probes import AssociationConfig, BeliefsConfig, DecisionTestConfig, ExplicitConfig
from louder.sections.simulation import CONDITIONS, Condition, SequentialConfig, SimulationConfig

__all__ = ["CONDITIONS", "Condition", "ControlConfig", "ExperimentConfig", "GenerationParams", "MOVED",
           "NetworkConfig", "SECTIONS", "SequentialConfig", "build_config", "load_config", "nest", "part", "recorded"]


AGENTS_MAX = 1_000_000  # agents of a run that makes calls per agent; archetype mode draws up to 10^9


class ExperimentConfig(BaseModel):
    """Everything that defines an experiment. Unknown fields are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")

    # --- shared by every kind of run ---
    run_id: str | None = Field(None, description="name of the run; default: the output folder's name")
    models: list[ModelConfig] = Field(default_factory=lambda: [ModelConfig(spec="embedded")], min_length=1,
                                      description="models under test: a spec string or a mapping with `spec:` "
                                      "and per-model settings; or a mapping of specs to shares ({A: 0.8, B: 0.2}): "
                                      "the models and their `mix`")
    mix: dict[str, float] | None = Field(None, description="mixed-model populations (convention and network runs): "
                                         "the share of each model of `models` among one population's agents (e.g. "
                                         "{A: 0.8, B: 0.2}); none: each model runs on its own")
    seed: int = Field(0, ge=0, description="root seed; every per-call seed derives from it")
    paper_faithful: bool = Field(False, description="reproduce the paper's printed inconsistencies")
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
    stereotypes: list[str] | None = Field(None, description="stereotypes of the association/decision tests; "
                                          "default: all 21")
    egalitarian: bool = Field(False, description="association/decision tests: add appendix Q's egalitarian "
                              "system prompt")

    # --- the sections ---
    simulation: SimulationConfig = Field(default_factory=SimulationConfig,
                                         description="the agents' runs (`louder run`)")
    population: PopulationConfig | None = Field(None, description="a population run (a plain value: the "
                                                "population file); none: agents of one attribute per case")
    network: NetworkConfig | None = Field(None, description="social network of the agents (networkx generator "
                                          "or edge list); none: agents decide alone")
    influence: InfluenceConfig = Field(default_factory=InfluenceConfig,
                                       description="rounds of influence on the network")
    sequential: SequentialConfig | None = Field(None, description="run each case in waves until it is decided "
                                                "(`louder run --until decided`); none: a fixed number of agents")
    explicit: ExplicitConfig = Field(default_factory=ExplicitConfig, description="`louder probe explicit`")
    association: AssociationConfig = Field(default_factory=AssociationConfig,
                                           description="`louder probe association`")
    decision_test: DecisionTestConfig = Field(default_factory=DecisionTestConfig,
                                              description="`louder probe decision`")
    beliefs: BeliefsConfig = Field(default_factory=BeliefsConfig, description="`louder probe beliefs`")
    convention: ConventionConfig | None = Field(None, description="populations playing a coordination game "
                                                "(`louder run` runs the config as a convention run); none: no game")

    @model_validator(mode="before")
    @classmethod
    def _nested(cls, data):
        """Flat keys of earlier versions into their sections (``build_config`` does it first, with the
        warning; this keeps ``model_validate`` of an old-shaped dict working too)."""
        if not isinstance(data, dict):
            return data
        try:
            return nest(data)[0]
        except LouderError as e:
            raise ValueError(str(e).removeprefix("config: ")) from None

    @model_validator(mode="before")
    @classmethod
    def _shares_are_a_mix(cls, data):
        """``models: {A: 0.8, B: 0.2}``: the models A and B, mixed in one population at those shares."""
        if isinstance(data, dict) and isinstance(data.get("models"), dict):
            shares = data["models"]
            if data.get("mix") is not None:
                raise ValueError("mix: the shares are given twice (as models: {MODEL: SHARE} and as mix:); keep one")
            data = {**data, "models": list(shares), "mix": shares}
        return data

    @field_validator("models", mode="before")
    @classmethod
    def _strings_are_specs(cls, v):
        if isinstance(v, list):
            return [{"spec": x} if isinstance(x, str) else x for x in v]
        return v

    @model_validator(mode="after")
    def _mix(self) -> ExperimentConfig:
        """Every share names a model of the run, every model has one, and they add up to 1."""
        if self.mix is None:
            return self
        labels = [m.label for m in self.models]
        for name, share in self.mix.items():
            if name not in labels:
                raise ValueError(f"mix: {name!r} is not a model of the run{_did_you_mean(name, labels)}; give a share "
                                 f"to each of models: {', '.join(labels)} (or add {name!r} to models)")
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise ValueError(f"mix: {name!r}: {share!r} is not a share; give a number above 0 and at most 1")
        left = [m for m in labels if m not in self.mix]
        if left:
            raise ValueError(f"mix: model {left[0]} has no share; give every model of `models` a share (adding up "
                             "to 1), or drop it from models")
        if abs(sum(self.mix.values()) - 1) > 1e-6:
            raise ValueError(f"mix: the shares add up to {sum(self.mix.values()):g}; make them add up to 1")
        return self

    @field_validator("stereotypes")
    @classmethod
    def _known_stereotypes(cls, v):
        if v is None:
            return v
        from louder.stimuli import get_stereotype

        out = []
        for name in v:
            try:
                out.append(get_stereotype(name).name)
            except LouderError as e:
                raise ValueError(str(e)) from None
        if len(set(out)) != len(out):
            raise ValueError("stereotypes are listed more than once")
        return out

    @model_validator(mode="after")
    def _sections_agree(self) -> ExperimentConfig:
        """What one section asks of another."""
        if self.influence.rounds and self.network is None:
            raise ValueError(f"influence.rounds: {self.influence.rounds} rounds of influence need a social network; "
                             "add `network:` (e.g. {generator: watts_strogatz, params: {k: 8, p: 0.1}}) or set "
                             "influence.rounds: 0")
        archetype = self.population is not None and self.population.mode == "archetype"
        if self.simulation.agents > AGENTS_MAX and not archetype:
            raise ValueError(f"simulation.agents: {self.simulation.agents:,} is more than {AGENTS_MAX:,}; only "
                             "archetype mode (population.mode: archetype) draws more agents than that")
        if self.simulation.humans is not None:
            flag = {"population": "--population", "network": "network:", "sequential": "--until decided"}
            other = next((k for k in flag if getattr(self, k) is not None), None)
            if other:  # paired agents are the seed simulation's: one attribute per case, a fixed number of agents
                raise ValueError(f"simulation.humans: a human study pairs its respondents with agents of the seed "
                                 f"simulation; drop {flag[other]} or run the human study without it")
        return self

    @model_validator(mode="after")
    def _dimensions(self) -> ExperimentConfig:
        """The experiment dimensions (wordings, choice order, signal, reasoning): what exists, and what
        each kind of run and model can take (``louder.dimensions``)."""
        from louder.dimensions import check

        check(self)
        return self

    @model_validator(mode="after")
    def _calibration(self) -> ExperimentConfig:
        """Calibrated agents (``simulation.calibration``): score mode, agents mode, an offset for every case."""
        from louder.calibration import check

        check(self)
        return self


# --- the sections and the flat keys of earlier versions -------------------------------------------

def _sections() -> dict[str, type[Section]]:
    """Section name → its model, in the config's order."""
    out = {}
    for name, field in ExperimentConfig.model_fields.items():
        for t in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(t, type) and issubclass(t, Section):
                out[name] = t
    return out


SECTION_MODELS = _sections()
SECTIONS: dict[str, tuple[str, ...]] = {name: tuple(m.model_fields) for name, m in SECTION_MODELS.items()}
# (``population: FILE`` is the section's own short form, not a deprecated key)
MOVED: dict[str, str] = {flat: f"{s}.{f}" for flat, (s, f) in FLAT.items() if SECTION_MODELS[s].SHORT != f}
TOP = tuple(n for n in ExperimentConfig.model_fields if n not in SECTION_MODELS)


def _name(key) -> str:
    return key if isinstance(key, str) and key.isidentifier() else repr(key)  # a key with a line break stays one line


def _did_you_mean(key, choices, prefix: str = "") -> str:
    """``; did you mean simulation.agents?`` — a config key's ``closest`` match at its full path, else ``""``."""
    hit = closest(key, choices)
    return f"; did you mean {prefix}{hit}?" if hit else ""


def nest(data: dict, where: str = "config", unknown: list[str] | None = None,
         partial: bool = False) -> tuple[dict, list[str]]:
    """``data`` (a config in the nested shape, the flat shape of earlier versions, or a mix) in the
    nested shape, and the flat keys it used. A flat key and its section's key for the same field is an
    error, as is a key no section knows (with a "did you mean"); with an ``unknown`` list such keys are
    left out and their one-line messages added to it, so they can be reported with the other problems."""
    out: dict = {}
    old: list[str] = []
    placed: dict[str, str] = {}  # "simulation.agents" → how it was given

    def refuse(message: str) -> None:
        if unknown is None:
            raise LouderError(message)
        unknown.append(message)

    def put(section: str, key: str, value, given: str) -> None:
        path = f"{section}.{key}"
        if path in placed:
            raise LouderError(f"{where}: {path} is given twice (as {placed[path]} and as {given}); keep one")
        placed[path] = given
        out[section][key] = value

    for key, value in data.items():
        if key in SECTION_MODELS and not flat_params(key, value):
            model = SECTION_MODELS[key]
            if isinstance(value, BaseModel):
                value = value.model_dump(exclude_unset=True)
            if value is not None and not isinstance(value, dict) and model.SHORT:
                value = {model.SHORT: value}  # population: us_adults
            if not isinstance(value, dict):
                if value is None and isinstance(out.get(key), dict):
                    continue  # flat keys of this section came first: they are checked below
                if isinstance(out.get(key), dict):
                    raise LouderError(f"{where}: {key} is given twice (as flat keys and as {key}:); keep one")
                out[key] = value  # None, or a wrong type that pydantic names
                continue
            if not isinstance(out.get(key), dict):
                out[key] = {}
            for sub, v in value.items():
                if sub in model.RENAMED and sub not in model.model_fields:
                    warnings.warn(f"{where}: {key}.{sub} is now {key}.{model.RENAMED[sub]}; the old name is read "
                                  "for now", FutureWarning, stacklevel=3)
                    sub = model.RENAMED[sub]
                if sub not in model.model_fields:
                    fields = model.model_fields
                    refuse(f"{where}: {key}.{_name(sub)} is not a field of {key}"
                           f"{_did_you_mean(sub, fields, key + '.')} (fields: {', '.join(fields)})")
                    continue
                put(key, sub, v, f"{key}.{sub}")
        elif key in FLAT:
            section, sub = FLAT[key]
            old.append(key)
            if not isinstance(out.get(section), dict):
                if out.get(section) is not None:
                    raise LouderError(f"{where}: {key} is given twice (as {section}: and as the flat key {key}); "
                                      "keep one")
                out[section] = {}
            put(section, sub, value, f"the flat key {key}")
        elif key in TOP:
            out[key] = value
        else:
            # a misspelt flat key is suggested at its new place
            hit = closest(key, [*TOP, *SECTION_MODELS, *MOVED])
            hint = f"; did you mean {MOVED.get(hit, hit)}?" if hit else (
                f" (top-level keys: {', '.join([*TOP, *SECTION_MODELS])})")
            refuse(f"{where}: {_name(key)}: unknown field{hint} — docs/reference/config.md lists every field "
                   "with its default")
    pop = out.get("population")
    # settings without a file mean "no population", unless they are flags laid over a config (``partial``)
    # that may name the file: `--no-twins` on a population config keeps its population
    if isinstance(pop, dict) and "file" not in pop and not partial:
        _no_population(pop, where)
        out["population"] = None
    return out, old


def _no_population(given: dict, where: str) -> None:
    """Settings of population runs without a population: harmless at their defaults (an old flat
    ``mode: agents``), else one line naming the first that needs one."""
    defaults = PopulationConfig.model_fields
    for key, value in given.items():
        if value != defaults[key].get_default(call_default_factory=True):
            why = {"twins": "counterfactual twins need a population run",
                   "mode": "archetype mode needs `population:` — archetypes are cells of a population"}.get(
                key, "is a setting of population runs")
            raise LouderError(f"{where}: population.{key}: {why}; give `population.file` (a population file or "
                              "built-in id, or --population FILE) — a population of one group works")


def _suggest(loc: tuple) -> str | None:
    """A close match for the unknown key at ``loc`` (a pydantic error location), among the fields of the
    model that holds it."""
    model: type[BaseModel] | None = ExperimentConfig
    for part in loc[:-1]:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        model = next((t for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
                      if isinstance(t, type) and issubclass(t, BaseModel)), None)
        if model is None:  # list[ModelConfig]: the list's own argument
            args = getattr(field.annotation, "__args__", ())
            model = next((t for t in args if isinstance(t, type) and issubclass(t, BaseModel)), None)
    if model is None:
        return None
    hit = closest(loc[-1], model.model_fields)
    return ".".join(str(p) for p in (*loc[:-1], hit)) if hit else None


def part(config: ExperimentConfig, section: str) -> SimpleNamespace:
    """One section of ``config`` (``part(cfg, "association").trials``) plus the shared fields
    (``models``, ``seed``, ``concurrency``, …): what a component of that section may read."""
    own = {key: getattr(getattr(config, section), key) for key in SECTIONS[section]}
    shared = {k: getattr(config, k) for k in ("models", "seed", "concurrency", "paper_faithful", "stereotypes",
                                              "egalitarian")}
    return SimpleNamespace(**shared, decision_mode=config.simulation.decision_mode, **own)


def build_config(data: dict, where: str = "config", unknown: list[str] | None = None) -> ExperimentConfig:
    """Validate ``data`` (nested sections or the old flat fields); every problem becomes one line of a
    LouderError naming the field (its nested path) and the fix. ``unknown``: lines of keys already left
    out of ``data`` (``nest``), reported with the rest."""
    unknown = list(unknown or [])
    data, _ = nest(data, where, unknown)
    try:
        config = ExperimentConfig.model_validate(data)
    except ValidationError as e:
        raise LouderError("\n".join([*unknown, describe_validation_error(e, where, _suggest)])) from None
    except LouderError as e:  # a scenario/group reference that does not resolve
        raise LouderError("\n".join([*unknown, f"{where}: {e}"])) from None
    if unknown:
        raise LouderError("\n".join(unknown))
    return config


def _merge(base: dict, top: dict) -> dict:
    """``top`` over ``base``, section by section (a section given in both keeps the keys of each)."""
    out = dict(base)
    for k, v in top.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) and k in SECTION_MODELS \
            else v
    return out


def load_config(path: str | Path | dict | ExperimentConfig | None, overrides: dict | None = None) -> ExperimentConfig:
    """Read a YAML config (or none: defaults) and apply CLI ``overrides`` on top. ``path`` may also be
    a dict in the YAML's shape (sections, or the old flat fields) or an ``ExperimentConfig``, as the
    Python API takes them. ``overrides`` are named as the flags are (``agents``, ``rounds``,
    ``population``, …, or sections): flat names there are no deprecation."""
    data: dict = {}
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    if isinstance(path, ExperimentConfig):  # validated already: only the overrides are new
        if not overrides:
            return path
        return build_config(_merge(path.model_dump(exclude_unset=True), nest(overrides, "flags", partial=True)[0]))
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
    unknown: list[str] = []
    data, old = nest(data, where, unknown)
    if old:
        warnings.warn(f"{where}: flat keys are deprecated and will stop working in the next release; move "
                      + ", ".join(f"{k} → {MOVED[k]}" for k in old), FutureWarning, stacklevel=2)
    return build_config(_merge(data, nest(overrides, "flags", partial=True)[0]), where=where, unknown=unknown)
