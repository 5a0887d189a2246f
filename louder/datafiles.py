"""Reading louder's YAML data files (built-in or a user's): any problem becomes one LouderError
naming the file and, for a wrong field, the field."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from louder.errors import LouderError, describe_validation_error

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Any, what: str) -> dict:
    """The mapping in the YAML file at ``path`` (a Path or a package resource)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LouderError(f"{what} file {path}: cannot be read ({e.strerror}); check the path") from None
    except UnicodeDecodeError as e:
        raise LouderError(f"{what} file {path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at position "
                          f"{e.start}); save it as UTF-8") from None
    try:
        doc = copy.deepcopy(_parse(text))  # a copy: the caller may change what it gets
    except yaml.YAMLError as e:
        raise LouderError(f"{what} file {path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise LouderError(f"{what} file {path}: must be a YAML mapping of fields, got {type(doc).__name__}")
    return doc


# libyaml's loader where PyYAML was built with it (the wheels are): the same safe subset of YAML, parsed in C
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=128)
def _parse(text: str) -> Any:
    """The YAML document in ``text``, parsed once per process: an analysis reads the same data files
    (predictions, stereotype patterns) every time it runs."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)


def load_yaml_model(cls: type[M], path: Any, what: str) -> M:
    """``read_yaml`` validated as ``cls``."""
    doc = read_yaml(path, what)
    try:
        return cls.model_validate(doc)
    except ValidationError as e:
        raise LouderError(describe_validation_error(e, f"{what} file {path}")) from None
