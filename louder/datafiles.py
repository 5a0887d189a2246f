"""Reading louder's YAML data files (built-in or a user's): any problem becomes one LouderError
naming the file and, for a wrong field, the field."""

from __future__ import annotations

import os
from functools import cache
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from louder.errors import LouderError, describe_validation_error

M = TypeVar("M", bound=BaseModel)

# libyaml's loader where PyYAML was built with it (the wheels are): the same safe subset of YAML, parsed in C
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
        doc = yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as e:
        raise LouderError(f"{what} file {path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise LouderError(f"{what} file {path}: must be a YAML mapping of fields, got {type(doc).__name__}")
    return doc


def load_yaml_model(cls: type[M], path: Any, what: str) -> M:
    """``read_yaml`` validated as ``cls``."""
    doc = read_yaml(path, what)
    try:
        return cls.model_validate(doc)
    except ValidationError as e:
        raise LouderError(describe_validation_error(e, f"{what} file {path}")) from None


def load_cached(cls: type[M], path: Any, what: str) -> M:
    """``load_yaml_model`` once per state of the file: keyed on its modification time, so a file edited while
    the process runs is read again, and the same file read by every run and analysis of a process (the
    scenarios, the predictions, the phrase patterns) is parsed once. Every caller gets the same object: read
    it, never change it."""
    try:
        mtime = os.stat(str(path)).st_mtime_ns
    except OSError:
        mtime = None  # unreadable: load_yaml_model names the file and the problem
    return _loaded(cls, path, what, mtime)


@cache
def _loaded(cls: type[M], path: Any, what: str, mtime: int | None) -> M:
    return load_yaml_model(cls, path, what)
