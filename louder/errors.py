"""One error type for bad input, so the CLI can print a single clear line instead of a traceback."""

from __future__ import annotations

import json
import re

from pydantic import ValidationError


class LouderError(Exception):
    """Bad input (config, CLI flag, data file) or an unusable environment; the message says the fix."""


def closest(word, candidates) -> str | None:
    """The one of ``candidates`` closest to ``word`` (difflib's ratio ≥ 0.6, case ignored), or None —
    also when that is ``word`` itself."""
    import difflib

    names = {str(c).lower(): str(c) for c in candidates}
    close = difflib.get_close_matches(str(word).lower(), list(names), n=1, cutoff=0.6)
    return names[close[0]] if close and names[close[0]] != str(word) else None


def did_you_mean(word, candidates) -> str:
    """`` (did you mean 'x'?)`` with the ``closest`` candidate, else ``""`` — for the one-line error
    about an unknown id, value or flag."""
    close = closest(word, candidates)
    return f" (did you mean {close!r}?)" if close else ""


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
                "unknown field (check the spelling; docs/reference/config.md lists every field with its default)"
        elif e.get("type") == "literal_error":  # a misspelt choice: name the one meant
            msg += did_you_mean(e.get("input"), re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", ""))))
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
