"""The one builder of the JSON answer schemas louder asks models for: a choice field (one of a
closed set of labels, or free text) and, optionally, a free-text rationale.

Every schema forbids extra keys and bounds its free text: a constrained decoder (llguidance on the
embedded model) then makes the model close the JSON instead of inventing keys or running on until
``max_tokens`` cuts it off.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

# 200 decision tokens ≈ 800 characters: a rationale must end well before that.
RATIONALE_MAX = 500
FREE_CHOICE_MAX = 60
STRICT = ConfigDict(extra="forbid")


@cache  # building a pydantic model costs ~0.5 ms: once per label set, not once per call
def choice_schema(name: str, field: str, labels: tuple[str, ...], constrained: bool = True,
                  rationale: bool = False) -> type[BaseModel]:
    """``{field[, rationale]}``; with ``constrained`` the ``field`` must be one of ``labels``."""
    kind = (Literal[labels], ...) if constrained else (str, Field(max_length=FREE_CHOICE_MAX))  # type: ignore[valid-type]
    fields: dict = {field: kind}
    if rationale:
        fields["rationale"] = (str, Field(max_length=RATIONALE_MAX))
    return create_model(name, __config__=STRICT, **fields)


@cache
def count_schema(name: str, field: str, low: int, high: int, constrained: bool = True) -> type[BaseModel]:
    """``{field}``: one integer; with ``constrained`` the schema bounds it to [low, high] (JSON-schema
    minimum/maximum, which llguidance compiles into the allowed digits). Out-of-range answers of an
    unconstrained model are still counted, as invalid."""
    kind = (int, Field(ge=low, le=high)) if constrained else (int, ...)
    return create_model(name, __config__=STRICT, **{field: kind})
