"""What every config section is made of (issue 31.4): the ``Section`` base of the small pydantic
models that ``louder.config.ExperimentConfig`` composes, the generation parameters several of them
use, the flat top-level keys of earlier versions and where each lives now (``FLAT``), and ``recorded``,
which reads a field of a config as a run's manifest recorded it (in either shape).

A section lives beside the code it configures (``louder/populations/config.py``,
``louder/networks/config.py``) — unless that code reads the whole config, as the agent runs and the
probes do (``louder.config`` → their packages → ``louder.config`` would go round): their sections are
here, ``louder.sections.simulation`` and ``louder.sections.probes``, below the config that composes
them. Nothing here imports the runs, so the analysis reads a manifest with this module alone.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Section(BaseModel):
    """A config section: unknown keys are errors, values do not change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    SHORT: ClassVar[str | None] = None  # a plain value given for the whole section sets this field
    RENAMED: ClassVar[dict[str, str]] = {}  # a field's name in an earlier louder → its name now (accepted, warned)

    @model_validator(mode="before")
    @classmethod
    def _partial_settings(cls, data):
        """A mapping given for a field whose default is a settings object (``persona``, ``control``, …)
        changes only the keys it names: ``persona: {temperature: 0.5}`` keeps the default max_tokens."""
        return partial_settings(cls, data)


def partial_settings(cls: type[BaseModel], data):
    """``data`` with every mapping given for a settings-object field merged over that field's default
    (sections themselves are left to pydantic: a missing key of a section takes its own default)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, value in data.items():
        field = cls.model_fields.get(name)
        default = getattr(field, "default", None)
        if isinstance(value, dict) and isinstance(default, BaseModel) and not isinstance(default, Section):
            out[name] = {**default.model_dump(), **value}
    return out


class GenerationParams(BaseModel):
    """``{temperature, max_tokens}`` of one kind of model call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(ge=0, le=2, description="sampling temperature (0 = greedy)")
    max_tokens: int = Field(ge=1, le=32768, description="longest answer in tokens; an answer cut here is `invalid`")


# The flat top-level keys of louder < 0.31 and where each lives now: flat key → (section, field). Old
# configs read through it (``louder.config.nest``) and so do old manifests (``recorded``).
FLAT: dict[str, tuple[str, str]] = {
    **{name: ("simulation", name) for name in (
        "agents", "scenarios", "groups", "conditions", "persona", "decision", "completion_persona",
        "completion_decision", "extraction", "decision_mode", "score_pick", "constrain_choices", "reask", "variants",
        "choice_order", "wordings", "signal", "names", "reasoning")},
    "population": ("population", "file"), **{name: ("population", name) for name in (
        "twins", "twin_groups", "twin_rewriter", "mode", "replicates", "buckets")},
    **{name: ("influence", name) for name in ("rounds", "control", "no_influence")},
    "probe_trials": ("explicit", "trials"), "explicit": ("explicit", "params"),
    "completion_explicit": ("explicit", "completion_params"),
    "association_trials": ("association", "trials"), "association_variations": ("association", "variations"),
    "association": ("association", "params"),
    "decision_trials": ("decision_test", "trials"), "decision_variant": ("decision_test", "variant"),
    "decision_extraction": ("decision_test", "extraction"), "profiles": ("decision_test", "profiles"),
    "followup": ("decision_test", "followup"),
    "belief_trials": ("beliefs", "trials"), "beliefs": ("beliefs", "params"),
    "completion_beliefs": ("beliefs", "completion_params"),
}
PARAMS = {"temperature", "max_tokens"}  # the keys of the old flat generation parameters (``explicit: {…}``)


def flat_params(key: str, value) -> bool:
    """``explicit: {temperature, max_tokens}`` (also association, beliefs): the old flat generation
    parameters, not the section of the same name."""
    return key in FLAT and isinstance(value, dict) and bool(value) and set(value) <= PARAMS


def recorded(config: dict | None, path: str, default=None):
    """The field ``path`` ("simulation.groups", "seed") of a config as a manifest recorded it: in the
    nested shape of this version, or the flat shape of louder before sections ("groups")."""
    if not isinstance(config, dict):
        return default
    section, _, key = path.partition(".")
    if not key:
        return config.get(section, default)
    inner = config.get(section)
    if isinstance(inner, dict) and key in inner:
        return inner[key]
    flat = next((f for f, (s, k) in FLAT.items() if s == section and k == key), None)
    if flat is not None and flat in config and not (flat == section and isinstance(config[flat], dict)
                                                    and not flat_params(flat, config[flat])):
        return config[flat]
    return default
