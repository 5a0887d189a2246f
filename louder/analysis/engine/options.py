"""The options of the measures, as the user gives them: ``louder analyze RUN --set MEASURE.OPTION=VALUE``
(repeatable), ``Run.analyze(options={"MEASURE": {"OPTION": value}})``, or a shorthand flag an option
declares (``--control GROUP`` is ``--set conditional.control=GROUP``; from Python its keyword form,
``control=["GROUP"]``). An option's ``flag`` is the only place a shorthand is declared: ``louder
analyze`` grows its options from ``flags()``. Every option is a measure's own
(``louder.analysis.engine.declarations.Option``); this module is the one parser of what was given
against the declarations: an unknown measure or option is one line with "did you mean", a value is
parsed and checked as its option declares (``value``).

An analysis records its options (``analysis.json``) as the values that differ from the defaults, so
that giving a default explicitly is the same analysis as not giving it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from louder.analysis.engine import registry
from louder.analysis.engine.declarations import Measure, Option
from louder.errors import LouderError, did_you_mean

Options = dict[str, dict[str, Any]]  # measure → option → value


_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def parse(o: Option, text: str, where: str) -> Any:
    """One value of ``o`` from text (``--set``, a flag; ``where``: how the message names the option)."""
    if o.type is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise LouderError(f"{where}={text}: not a yes/no value; write true or false")
    if o.type in (int, float):
        try:
            return o.type(text)
        except ValueError:
            raise LouderError(f"{where}={text}: not a number ({o.type.__name__}); write e.g. "
                              f"{where}={o.type(1)}") from None
    return text


def one(o: Option, value: Any, where: str) -> Any:
    """One value of ``o`` from Python or from text, checked (a file as its absolute path)."""
    if isinstance(value, str) and o.type is not str:
        value = parse(o, value, where)
    if o.type is Path:
        value = str(Path(value).resolve())
    elif o.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    elif not isinstance(value, o.type) or (o.type is int and isinstance(value, bool)):
        raise LouderError(f"{where}={value!r}: expected {o.type_name}")
    if o.choices and value not in o.choices:
        raise LouderError(f"{where}={value}: use one of {', '.join(map(str, o.choices))}"
                          f"{did_you_mean(str(value), [str(c) for c in o.choices])}")
    if o.check is not None and (problem := o.check(value)):
        raise LouderError(f"{where}={value}: {problem}")
    return value


def value(o: Option, given: Any, where: str) -> Any:
    """The value of ``o`` from what was given (a list for ``multiple``, without repeats)."""
    if o.multiple:
        values = [given] if isinstance(given, (str, Path)) or not hasattr(given, "__iter__") else list(given)
        return tuple(dict.fromkeys(one(o, v, where) for v in values))
    return one(o, given, where)


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
        m = registry.get(measure, f"--set {item}")
        o = m.option(option.strip(), f"--set {item}")
        values = out.setdefault(m.name, {})
        if o.multiple:
            values.setdefault(o.name, []).append(value)
        else:
            values[o.name] = value
    return out


def flags() -> dict[str, list[tuple[Measure, Option]]]:
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
    for flag, given_value in given.items():
        if given_value is None or given_value is False or (isinstance(given_value, (list, tuple)) and not given_value):
            continue
        if flag not in known:
            raise LouderError(f"{flag}: no option has this flag{did_you_mean(flag, list(known))}")
        for m, o in known[flag]:
            out.setdefault(m.name, {})[o.name] = value(o, given_value, flag)  # named as it was typed
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
        registry.get(name, f"options[{name!r}]")
    for m in registry.measures():
        values = dict(given.get(m.name) or {})
        for name in values:
            m.option(name, f"options[{m.name!r}]")
        chosen = {}
        for o in m.options:
            if o.name in values:
                v = value(o, values[o.name], f"{m.name}.{o.name}")
                if v != o.default:
                    chosen[o.name] = v
        if m.check is not None and (problem := m.check(effective(m, chosen))):
            raise LouderError(f"measure {m.name}: {problem}")
        if chosen:
            out[m.name] = chosen
    return out


def effective(m: Measure, chosen: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every option of ``m``: the chosen values over the defaults."""
    return {o.name: (chosen or {}).get(o.name, o.default) for o in m.options}


def recorded(options: Options) -> dict:
    """As analysis.json records them (JSON: lists for multiple values)."""
    return {m: {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()} for m, values in options.items()}


def files(options: Options) -> list[tuple[str, str]]:
    """(``measure.option``, path) of every file option given: their content is part of the data state."""
    out = []
    for m in registry.measures():
        for o in m.options:
            if o.type is Path and o.name in options.get(m.name, {}):
                v = options[m.name][o.name]
                out += [(f"{m.name}.{o.name}", p) for p in (v if o.multiple else [v])]
    return out
