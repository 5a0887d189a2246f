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


def describe_validation_error(err: ValidationError, where: str, suggest=None) -> str:
    """Render a pydantic error as one line per problem: `where: field.path: problem`. ``suggest(loc)``
    may name the key an unknown one was probably meant to be ("did you mean"). A check of the whole
    document whose message starts with the field it is about (``influence.rounds: …``) is put under
    that field, not under "(top level)"."""
    lines = []
    for e in err.errors():
        loc = ".".join(_part(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        if e.get("type") == "extra_forbidden":
            hit = suggest(tuple(e["loc"])) if suggest and e["loc"] else None
            msg = f"unknown field; did you mean {hit}?" if hit else \
                "unknown field (check the spelling; see docs/reference/config.md for the allowed fields)"
        if not e["loc"] and re.match(r"[a-z_]+(\.[a-z_]+)*: ", msg):
            lines.append(f"{where}: {msg}")
            continue
        lines.append(f"{where}: {loc}: {msg}")
    return "\n".join(lines)


def load_entry_point(ep, what: str):
    """What an entry point of another package names (its module imported: its import may register
    it), for the registries of backends and measures; a package that fails to import is one line."""
    try:
        return ep.load()
    except Exception as e:  # noqa: BLE001 - any import failure of someone else's package
        raise LouderError(f"{what} {ep.name!r} (entry point {ep.value} of package "
                          f"{ep.dist.name if ep.dist else '?'}) cannot be loaded: {type(e).__name__}: {e}") from None
