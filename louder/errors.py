"""One error type for bad input, so the CLI can print a single clear line instead of a traceback."""

from __future__ import annotations

import json
import re

from pydantic import ValidationError


class LouderError(Exception):
    """Bad input (config, CLI flag, data file) or an unusable environment; the message says the fix."""


class LouderWarning(UserWarning):
    """Something a run folder lacks for a measure (e.g. no explicit probes to contrast), or a setting
    that was not used: the analysis goes on without it, and the message says how to add it. The
    Python API raises these with ``warnings.warn``; the command line prints them as ``missing:``."""


def _part(p) -> str:
    """A location part as printed: plain names as they are, anything odd quoted with escapes."""
    s = str(p)
    return s if re.fullmatch(r"[\w\-]+", s, re.ASCII) else json.dumps(s)


def describe_validation_error(err: ValidationError, where: str) -> str:
    """Render a pydantic error as one line per problem: `where: field.path: problem`."""
    lines = []
    for e in err.errors():
        loc = ".".join(_part(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e.get("type") == "extra_forbidden":
            msg = "unknown field (check the spelling; see the README for the allowed fields)"
        lines.append(f"{where}: {loc}: {msg}")
    return "\n".join(lines)
