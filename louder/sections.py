"""What every config section is made of (issue 31.4): the ``Section`` base of the small pydantic
models that live beside the code they configure (``louder/simulation/config.py``,
``louder/populations/config.py``, ``louder/networks/config.py``, ``louder/probes/config.py``) and
that ``louder.config.ExperimentConfig`` composes, and the generation parameters several of them use.

A section declares the flat top-level keys of earlier versions that now live in it (``FLAT``: old
key → its field), so ``louder.config`` reads old configs without a hand-kept map of its own.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Section(BaseModel):
    """A config section: unknown keys are errors, values do not change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    FLAT: ClassVar[dict[str, str]] = {}  # flat key of louder < 0.31 → the field of this section it set
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
