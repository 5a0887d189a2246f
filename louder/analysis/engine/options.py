"""The options of the measures, as the user gives them: ``louder analyze RUN --set MEASURE.OPTION=VALUE``
(repeatable), ``Run.analyze(options={"MEASURE": {"OPTION": value}})``, or a shorthand flag an option
declares (``--control GROUP`` is ``--set conditional.control=GROUP``; from Python its keyword form,
``control=["GROUP"]``). An option's ``flag`` is the only place a shorthand is declared: ``louder
analyze`` grows its options from ``flags()``. Every option is a measure's own
(``louder.analysis.engine.registry.Option``); this module only reads what was given against the declarations:
an unknown measure or option is one line with "did you mean", a value is checked by its option.

An analysis records its options (``analysis.json``) as the values that differ from the defaults, so
that giving a default explicitly is the same analysis as not giving it."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from louder.analysis.engine import registry
from louder.errors import LouderError, did_you_mean

Options = dict[str, dict[str, Any]]  # measure → option → value


def _measure(name: str, what: str) -> registry.Measure:
    known = [m.name for m in registry.measures()]
    if name not in known:
        raise LouderError(f"{what}: no measure {name!r}{did_you_mean(name, known)}; `louder measures` lists the "
                          "measures and their options")
    return registry.get(name)


def _option(m: registry.Measure, name: str, what: str) -> registry.Option:
    names = [o.name for o in m.options]
    if name not in names:
        raise LouderError(f"{what}: measure {m.name} has no option {name!r}{did_you_mean(name, names)}; its options: "
                          f"{', '.join(names) or 'none'}")
    return m.option(name)


def parse_set(items: Iterable[str]) -> Options:
    """``MEASURE.OPTION=VALUE`` texts (``--set``) as options; a repeated multiple option collects its
    values, a repeated single one keeps the last."""
    out: Options = {}
    for item in items:
        head, eq, value = item.partition("=")
        measure, dot, option = head.strip().partition(".")
        if not eq or not dot or not measure or not option:
            raise LouderError(f"--set {item}: write MEASURE.OPTION=VALUE, e.g. --set conditional.control=gender_identity "
                              "(`louder measures` lists the options)")
        m = _measure(measure, f"--set {item}")
        o = _option(m, option.strip(), f"--set {item}")
        values = out.setdefault(m.name, {})
        if o.multiple:
            values.setdefault(o.name, []).append(value)
        else:
            values[o.name] = value
    return out


def flags() -> dict[str, list[tuple[registry.Measure, registry.Option]]]:
    """Every shorthand flag an option declares → the options it sets (one flag may set the same file
    for several measures: ``--patterns`` for rationales and the persona audit)."""
    out: dict[str, list] = {}
    for m in registry.measures():
        for o in m.options:
            if o.flag:
                out.setdefault(o.flag, []).append((m, o))
    return out


def keyword(flag: str) -> str:
    """A flag's keyword form, as ``analyze`` and ``Run.analyze`` take it: ``--random-slopes`` → ``random_slopes``."""
    return flag.removeprefix("--").replace("-", "_")


def from_keywords(given: Mapping[str, Any], where: str = "analyze") -> Options:
    """Options from the keyword forms of the flags (``random_slopes=True`` is ``--random-slopes``): every
    flag any option declares — louder's and an installed package's — has one; an unknown keyword is one
    line with "did you mean"."""
    known = {keyword(f): f for f in flags()}
    unknown = [k for k in given if k not in known]
    if unknown:
        raise LouderError(f"{where}: no setting {unknown[0]!r}{did_you_mean(unknown[0], known)}; a measure's option is "
                          "options={MEASURE: {OPTION: value}}, its shorthand the keyword form of its flag (`louder "
                          f"measures` lists them: {', '.join(sorted(known)) or 'none'})")
    return from_flags({known[k]: v for k, v in given.items()})


def from_flags(given: Mapping[str, Any]) -> Options:
    """Options from shorthand flags: ``{"--control": ["gender_identity"], "--random-slopes": True}``
    (a value of None or False, or an empty list, is a flag not given)."""
    known = flags()
    out: Options = {}
    for flag, value in given.items():
        if value is None or value is False or (isinstance(value, (list, tuple)) and not value):
            continue
        if flag not in known:
            raise LouderError(f"{flag}: no option has this flag{did_you_mean(flag, list(known))}")
        for m, o in known[flag]:
            out.setdefault(m.name, {})[o.name] = o.value(value, flag)  # a bad value is named as it was typed
    return out


def merge(*layers: Mapping[str, Mapping[str, Any]] | None) -> Options:
    """Options given several ways, later layers over earlier ones."""
    out: Options = {}
    for layer in layers:
        for m, values in (layer or {}).items():
            out.setdefault(m, {}).update(values)
    return out


def resolve(given: Mapping[str, Mapping[str, Any]] | None) -> Options:
    """The checked values of ``given`` (measure → option → value, from Python or ``--set`` text) that
    differ from their defaults, measures and options in declaration order; then each measure's own
    check of its options together."""
    out: Options = {}
    given = given or {}
    for name in given:
        _measure(name, f"options[{name!r}]")
    for m in registry.measures():
        values = dict(given.get(m.name) or {})
        for name in values:
            _option(m, name, f"options[{m.name!r}]")
        chosen = {}
        for o in m.options:
            if o.name in values:
                v = o.value(values[o.name], f"{m.name}.{o.name}")
                if v != o.default:
                    chosen[o.name] = v
        if m.check is not None and (problem := m.check(effective(m, chosen))):
            raise LouderError(f"measure {m.name}: {problem}")
        if chosen:
            out[m.name] = chosen
    return out


def effective(m: registry.Measure, chosen: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every option of ``m``: the chosen values over the defaults."""
    return {o.name: (chosen or {}).get(o.name, o.default) for o in m.options}


def recorded(options: Options) -> dict:
    """As analysis.json records them (JSON: lists for multiple values)."""
    return {m: {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()} for m, values in options.items()}


def files(options: Options) -> list[tuple[str, str]]:
    """(``measure.option``, path) of every file option given: their content is part of the data state."""
    from pathlib import Path

    out = []
    for m in registry.measures():
        for o in m.options:
            if o.type is Path and o.name in options.get(m.name, {}):
                v = options[m.name][o.name]
                out += [(f"{m.name}.{o.name}", p) for p in (v if o.multiple else [v])]
    return out
