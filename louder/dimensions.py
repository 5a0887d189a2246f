"""Experiment dimensions (issue 31.3): what a run varies about how a case is put to its agents, the
same way in every agent run — seed simulation, population, network and sequential.

A ``Dimension`` declares everything the runs, the planner and the tables need to know of it:

* ``id`` — the column it writes in decisions.parquet (and the agent's level of it: ``agent.level(id)``);
* ``field`` — its key under ``simulation:`` in the config;
* ``design`` — how agents meet its levels:
  ``crossed``: every agent answers under every level, its persona shared (wordings, reasoning levels);
  ``split``: each agent sees one level, drawn from its identity, and no call is added (choice order);
  ``own agents``: each level has agents of its own, because the level changes the persona (the names
  signal);
* ``levels(config, scenario)`` — the levels a case runs (split: the configured value);
* what a level changes, as small hooks on plain values: ``text`` (the scenario text of a case),
  ``show`` (the scenario one agent sees), ``persona`` (the name a persona is written for, instead of
  the stated attribute), ``ask`` (the decision call: a text before the choices, a system message, the
  reasoning level sent; it gets the run's config, to read what a level stands for);
* ``check(config)`` — what a config may not combine it with (a ValueError naming the field).

A dimension at its ``default`` changes nothing: the same prompts, seeds and cache keys as a run
without it (tests/test_default_exact.py). A new dimension is one ``register(Dimension(...))`` and its
field under ``simulation:``; the runs, the plan (``--dry-run``), the decision columns and the
network arms follow. Prompt interventions (issue 33, ``louder.interventions``) are one more::

    register(Dimension("intervention", "interventions", CROSSED, "none", _interventions, "intervention",
                       ask=_intervene, check=_check_interventions))

**Network runs.** Each combination of the crossed and own-agents levels is its own network arm: the
agents play every round under that level, hear what their neighbours chose under it, and have their
own control and no-influence arm. An agent's round-r prompt then differs from its round-0 prompt by
the neighbour message alone — what the influence analysis compares — so amplification can be read
per level and compared between them (docs/networks.md).

**Sequential runs.** A case is decided on its reference levels (``reference``: the file's own text,
the least thinking) — the rows cases.csv reads — and each own-agents level (signal) is a case of
its own; the other crossed levels ride along with the same agents (docs/sequential.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Any, Callable, Iterator, Sequence

from louder.errors import did_you_mean
from louder.registry import Registry
from louder.scenarios import AS_WRITTEN, Scenario, load_group, load_scenario

CROSSED = "crossed"
SPLIT = "split"
OWN = "own agents"


@dataclass(frozen=True)
class Ask:
    """A decision call as the dimensions shape it: ``before_choices`` is put after the situation and
    before the choices (beside a neighbour message), ``system`` is a system message before the prompt,
    ``reasoning`` the level sent (None: no control, the model's own default). All None: the paper's call."""

    before_choices: str | None = None
    system: str | None = None
    reasoning: str | None = None


@dataclass(frozen=True)
class Dimension:
    """One experiment dimension (the module's docstring says what each field does). Hooks take plain
    values and return new ones; a hook left None means the dimension does not touch that part."""

    id: str  # the decisions column, and ``agent.level(id)``
    field: str  # its key under ``simulation:``
    design: str  # CROSSED | SPLIT | OWN
    default: str  # the level that changes nothing
    levels: Callable[[Any, Scenario], list[str]]  # (config, scenario) → the levels a case runs
    noun: str = ""  # how the dry run names a level ("wording"; default: the id)
    reference: Callable[[Sequence[str]], str] = lambda levels: levels[0]
    text: Callable[[Scenario, str, str], Scenario] | None = None  # (scenario, variant, level) → the case's text
    show: Callable[[Scenario, str], Scenario] | None = None  # (scenario, level) → what one agent sees
    # split: (config, scenario, replicate, seed) → the agent's level
    assign: Callable[[Any, Scenario, int, int], str] | None = None
    persona: Callable[[str, Any], str | None] | None = None  # (level, agent) → the name a persona is written for
    ask: Callable[[Ask, str, Any], Ask] | None = None  # (call, level, config) → the call under this level
    check: Callable[[Any], None] | None = None  # (config) → ValueError naming the field
    value: Callable[[Any], Any] | None = None  # (config) → its setting; default: ``simulation.<field>``

    def given(self, config) -> list:
        """The config's value for this dimension, as a list."""
        value = self.value(config) if self.value is not None else getattr(config.simulation, self.field)
        return list(value) if isinstance(value, (list, tuple)) else [value]

    def varies(self, config) -> bool:
        """Whether ``config`` runs anything but the default."""
        return self.given(config) != [self.default]


DIMENSIONS: Registry[Dimension] = Registry("dimension", Dimension, key=lambda d: d.id)


def register(d: Dimension) -> None:
    """Make ``d`` known to every agent run (replacing a dimension of the same id)."""
    DIMENSIONS.register(d)


def unregister(dim_id: str) -> None:
    DIMENSIONS.unregister(dim_id)


def registered(design: str | None = None) -> list[Dimension]:
    """The dimensions (of one ``design``), in registry order."""
    return [d for d in DIMENSIONS.values() if design is None or d.design == design]


def get(dim_id: str) -> Dimension:
    return DIMENSIONS.get(dim_id)


def combos(config, scenario: Scenario, design: str) -> list[dict[str, str]]:
    """Every combination of the levels of the dimensions of ``design`` for a case of ``scenario``."""
    dims = registered(design)
    return [dict(zip((d.id for d in dims), c)) for c in product(*(d.levels(config, scenario) for d in dims))]


def arms(config, scenario: Scenario, variants: Sequence[str]) -> Iterator[tuple[dict[str, str], str, dict[str, str]]]:
    """(own-agents levels, variant, all levels) of every arm of a case, own-agents levels outermost,
    then the variants, then the crossed levels: the order the runs make them in."""
    for own in combos(config, scenario, OWN):
        for v in variants:
            for crossed in combos(config, scenario, CROSSED):
                yield own, v, {**own, **crossed}


def say(scenario: Scenario, variant: str, levels: dict[str, str]) -> Scenario:
    """The case's scenario under ``variant`` as its ``levels`` say it (a wording's text)."""
    for d in registered():
        if d.text is not None and d.id in levels:
            return d.text(scenario, variant, levels[d.id])
    return scenario.variant(variant)


def shape(levels: dict[str, str], config) -> Ask:
    """The decision call under ``levels`` in a run of ``config``."""
    ask = Ask()
    for d in registered():
        if d.ask is not None and d.id in levels:
            ask = d.ask(ask, levels[d.id], config)
    return ask


def labelled(config, design: str | None = None) -> list[str]:
    """The columns that tell a run's arms apart — the crossed and own-agents dimensions it varies (own
    first) — or those of one ``design``: its sort keys, and what personas.parquet adds."""
    designs = (design,) if design else (OWN, CROSSED)
    return [d.id for ds in designs for d in registered(ds) if d.varies(config)]


def extra_columns() -> list[str]:
    """Decision columns of registered dimensions that louder.types.DECISION_COLUMNS does not list."""
    from louder.types import DECISION_COLUMNS

    return [d.id for d in registered() if d.id not in DECISION_COLUMNS]


def references(config, scenario: Scenario) -> dict[str, str]:
    """The reference level of every crossed dimension for a case: the rows the per-case tables read."""
    return {d.id: d.reference(d.levels(config, scenario)) for d in registered(CROSSED)}


def check(config) -> None:
    """Every dimension's own check, and what archetype mode cannot vary."""
    archetype = config.population is not None and config.population.mode == "archetype"
    for d in registered():
        if archetype and d.varies(config):
            raise ValueError(f"simulation.{d.field}: archetype mode scores one shared prompt per population cell, "
                             f"with the choices listed as written and the attribute stated; use {d.field}: "
                             f"{d.default} (or an agents-mode run, which takes every dimension)")
        if d.check is not None:
            d.check(config)


def plan_line(config) -> str | None:
    """One line for ``--dry-run``: what the dimensions a run varies multiply (None when none varies)."""
    varied = [d for d in registered() if d.varies(config)]
    if not varied:
        return None
    parts = []
    for d in varied:
        if d.design == SPLIT:
            parts.append(f"{d.noun or d.id} {'/'.join(map(str, d.given(config)))}")
            continue
        n = "/".join(map(str, sorted({len(d.levels(config, load_scenario(s))) for s in config.simulation.scenarios})))
        parts.append(f"{n} {d.noun or d.id}(s)" + (f" ({', '.join(map(str, d.given(config)))})" if d.design == OWN
                                                  else ""))
    says = {CROSSED: "every agent decides once per {}", OWN: "each {} has its own agents",
            SPLIT: "a {} changes no count"}
    tail = "; ".join(says[design].format(", ".join(d.noun or d.id for d in varied if d.design == design))
                     for design in (CROSSED, OWN, SPLIT) if any(d.design == design for d in varied))
    return f"dimensions: {' × '.join(parts)} — {tail}"


# --- louder's own dimensions ------------------------------------------------------------------------

def _wordings(config, scenario: Scenario) -> list[str]:
    from louder.presentation import wordings_for

    return wordings_for(config.simulation, scenario)


def _reference_wording(levels: Sequence[str]) -> str:
    """The file's own text when the run has it, else the first wording id in sort order
    (the rows the per-case tables read: ``louder.analysis.engine.select``)."""
    return AS_WRITTEN if AS_WRITTEN in levels else sorted(levels)[0]


def _check_wordings(config) -> None:
    from louder.presentation import ALL

    sim = config.simulation
    if ALL in sim.wordings and len(sim.wordings) > 1:
        raise ValueError("simulation.wordings: `all` already includes every wording; give [all] alone or a list of ids")
    for ref in sim.scenarios:
        s = load_scenario(ref)
        for w in sim.wordings:
            if w != ALL and w not in s.wording_ids:
                raise ValueError(f"simulation.wordings: scenario {s.id} has no wording {w!r}"
                                 f"{did_you_mean(w, s.wording_ids)}; its wordings are "
                                 f"{', '.join(s.wording_ids)} (add it under `wordings:` in the scenario file, write "
                                 "some with `louder scenario paraphrase`, or use wordings: [all])")
        for v in sim.variants:
            for w in _wordings(config, s):
                try:
                    s.text(v, w)  # names the variant and wording that cannot be combined
                except Exception as e:
                    raise ValueError(f"simulation.wordings: {e}") from None


def _order(config, scenario: Scenario, replicate: int, seed: int) -> str:
    from louder.presentation import joined, shown_order

    return joined(shown_order(scenario.labels, config.simulation.choice_order, replicate, seed))


def _shown(scenario: Scenario, order: str) -> Scenario:
    from louder.presentation import ordered

    return ordered(scenario, order.split("|"))


def _reference_level(levels: Sequence[str]) -> str:
    """The least thinking (``analysis.reasoning.levels_of``): the order of ``louder.llm.thinking.LEVELS``."""
    from louder.llm.thinking import LEVELS

    return min(levels, key=lambda x: LEVELS.index(x) if x in LEVELS else 99)


def _check_reasoning(config) -> None:
    sim = config.simulation
    if sim.decision_mode == "score" and set(sim.reasoning) - {"default", "off"}:
        level = next(x for x in sim.reasoning if x not in ("default", "off"))
        raise ValueError(f"simulation.reasoning: level {level!r} with decision_mode: score — score mode reads the "
                         "log-probs of the choices at the answer's first token, so it cannot follow a model that "
                         "thinks first; use decision_mode: sample for reasoning levels (or reasoning: [off])")


def _named(level: str, agent) -> str | None:
    """signal names: the agent's name, drawn from the name list of its attribute(s); stated: None."""
    if level != "names":
        return None
    from louder.presentation import draw_name, load_names, name_set

    names = load_names(agent.model.session.config.simulation.names)
    return draw_name(name_set(names, agent.signalled_attributes(names)), agent.seed)


def _check_signal(config) -> None:
    from louder.presentation import check_names, covered_groups, load_names, name_set

    sim = config.simulation
    if "names" not in sim.signal:
        if sim.names is not None:
            raise ValueError("simulation.names: a names file is read by signal: names only; add `signal: names` or "
                             "drop `names:`")
        return
    if any(m.api == "completion" for m in config.models):
        raise ValueError("simulation.signal: names writes personas from a name with chat prompts; completion: models "
                         "are not supported — use a chat model spec or signal: stated")
    names = load_names(sim.names)
    if config.population is None:
        for ref in sim.groups:
            g = load_group(ref)
            check_names(names, g.id, g.attributes, sim.names)
        return
    if config.population.twins:
        raise ValueError("population.twins: a twin changes the attribute its persona states, and under signal: names "
                         "no attribute is stated; run twins with signal: stated")
    from louder.populations import load_population

    pop = load_population(config.population.file)
    covered = covered_groups(names, pop.groups)
    if not covered:
        missing = "; ".join(f"{g.id}: {', '.join(names.missing(g.attributes))}" for g in pop.groups)
        raise ValueError(f"simulation.signal: names: no group of population {pop.id} has a name list for every "
                         f"attribute in names file {sim.names or 'bertrand_mullainathan_2004'} ({missing}); give "
                         "`simulation.names: FILE` (format in docs/robustness.md) or use signal: stated")
    for combo in product(*(g.attributes for g in covered)):
        if not name_set(names, list(combo)).first:
            raise ValueError(f"simulation.signal: names: no name in names file {sim.names or 'the default'} is on "
                             f"the lists of {' and '.join(combo)} at once; an agent with those attributes could not "
                             "be named — give a names file whose lists overlap, or use signal: stated")


def _interventions(config, scenario: Scenario) -> list[str]:
    from louder.interventions import by_id

    return list(by_id(config))


def _reference_intervention(levels: Sequence[str]) -> str:
    """``none`` (the paper's prompt) when the run has it: every intervention is compared with it."""
    from louder.interventions import NONE

    return NONE if NONE in levels else levels[0]


def _intervene(ask: Ask, level: str, config) -> Ask:
    """The call under an intervention: its text as a system message, or before the choices."""
    from louder.interventions import by_id

    iv = by_id(config).get(level)
    if iv is None:  # none: the paper's call
        return ask
    return replace(ask, system=iv.text) if iv.where == "system" else replace(ask, before_choices=iv.text)


def _check_interventions(config) -> None:
    from louder.interventions import check

    check(config)


register(Dimension("wording", "wordings", CROSSED, AS_WRITTEN, _wordings, "wording", _reference_wording,
                   text=lambda s, variant, w: s.text(variant, w), check=_check_wordings))
register(Dimension("reasoning", "reasoning", CROSSED, "default", lambda config, s: list(config.simulation.reasoning),
                   "reasoning level", _reference_level,
                   ask=lambda ask, level, config: replace(ask, reasoning=None if level == "default" else level),
                   check=_check_reasoning))
register(Dimension("choice_order", "choice_order", SPLIT, "as_written",
                   lambda config, s: [config.simulation.choice_order], "choice order", assign=_order, show=_shown))
register(Dimension("signal", "signal", OWN, "stated", lambda config, s: list(config.simulation.signal), "signal",
                   lambda levels: "stated" if "stated" in levels else levels[0], persona=_named, check=_check_signal))
register(Dimension("intervention", "interventions", CROSSED, "none", _interventions, "intervention",
                   _reference_intervention, ask=_intervene, check=_check_interventions))
