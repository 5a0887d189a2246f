"""The one builder of the JSON answer schemas louder asks models for: a choice field (one of a
closed set of labels, or free text) and, optionally, a free-text rationale."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, create_model


@cache  # building a pydantic model costs ~0.5 ms: once per label set, not once per call
def choice_schema(name: str, field: str, labels: tuple[str, ...], constrained: bool = True,
                  rationale: bool = False) -> type[BaseModel]:
    """``{field[, rationale]}``; with ``constrained`` the ``field`` must be one of ``labels``."""
    kind = Literal[labels] if constrained else str  # type: ignore[valid-type]
    fields: dict = {field: (kind, ...)}
    if rationale:
        fields["rationale"] = (str, ...)
    return create_model(name, **fields)
