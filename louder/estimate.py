"""``--dry-run``: what a run will cost before any model is called, and the one call counter.

Calls are counted exactly for every kind of run (simulation, explicit probes, both Bai tests).
Tokens are estimated: prompts are rendered and counted at ``chars_per_token``; outputs are assumed
to be a typical length capped by ``max_tokens``, with ``max_tokens`` itself as the upper bound.
The numbers live in ``louder/data/estimates.yaml``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import pandas as pd
import yaml

from louder.config import ExperimentConfig, part
from louder.llm.registry import backend_info
from louder.llm.spec import parse_spec
from louder.prompts import Prompts
from louder.scenarios import load_group, load_scenario

KINDS = ("simulation", "explicit", "association", "decision", "network", "population")


@cache
def _numbers() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "estimates.yaml").read_text("utf-8"))


def _tokens(text: str) -> int:
    return max(1, len(text) // _numbers()["chars_per_token"])


def prices() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "prices.yaml").read_text("utf-8"))


Part = tuple[int, int, int, int]  # (calls, input tokens, typical output tokens, max output tokens)


def _part(n: int, prompt_tokens: int, typical: int, max_tokens: int, per: int = 1) -> Part:
    """``n`` calls (× ``per``, the completion path's extraction call) of one prompt size."""
    return n * per, n * prompt_tokens * per, n * min(typical, max_tokens) * per, n * max_tokens * per


def _simulation(config: ExperimentConfig, per: int) -> list[Part]:
    prompts, typical, out = Prompts(), _numbers()["typical_output_tokens"], []
    persona_text = "x" * (typical["persona"] * _numbers()["chars_per_token"])
    for sid in config.scenarios:
        s = load_scenario(sid)
        for gid in config.groups:
            g = load_group(gid)
            for c in config.conditions:
                for a in g.attributes:
                    first = prompts.persona(a, c, s, config.paper_faithful, "chat")
                    kind = "name" if c == "no_persona" else "persona"
                    out.append(_part(config.agents, _tokens(first), typical[kind], config.persona.max_tokens,
                                     1 if c == "no_persona" else per))
                    # one decision per policy variant; the persona is written once and shared by them
                    for v in config.variants:
                        act = prompts.action("Alex Morgan", persona_text if c != "no_persona" else a, s.variant(v),
                                             "chat")
                        out.append(_part(config.agents, _tokens(act), typical["decision"],
                                         config.decision.max_tokens, per))
    return out


def _archetype(config: ExperimentConfig, per: int) -> list[Part]:
    """``mode: archetype``: the exact plan of louder.simulation.archetype_run (cells × K × (1 + B)
    per model × scenario), one scored call each; output ≈ the short JSON decision, at most 16 tokens."""
    from louder.simulation.archetype_run import Plan, archetype_prompt, check_config

    plan = Plan(config, check_config(config))
    prompts, per_case = Prompts(), plan.calls_per_case()
    desc = "a person who is 30 to 44 years old, a woman, Hispanic or Latino and politically moderate"
    out = []
    for sid in config.scenarios:
        s = load_scenario(sid)
        share = None if len(plan.call_buckets) == 1 else 0.5
        text = "".join(t for _, t in archetype_prompt(prompts, desc, s, share))
        out.append(_part(per_case, _tokens(text), 8, 16, per))
    return out


def _network(config: ExperimentConfig, per: int) -> list[Part]:
    """A network run (agents mode): round 0 is the simulation; each round r ≥ 1 asks every agent
    again, its decision prompt lengthened by the neighbour message (one per agent × round)."""
    from louder.networks.rounds import NeighbourCounts, neighbour_message

    out = _simulation(config, per)
    prompts, typical = Prompts(), _numbers()["typical_output_tokens"]
    persona_text = "x" * (typical["persona"] * _numbers()["chars_per_token"])
    for sid in config.scenarios:
        s = load_scenario(sid)
        # a typical message: 8 neighbours split between the target and another choice
        counts = {c: 0 for c in s.labels} | {s.target: 4, next(c for c in s.labels if c != s.target): 4}
        message = neighbour_message(NeighbourCounts(8, counts, 0, 0, 0, 0.5), s.labels, s.target)
        for gid in config.groups:
            g = load_group(gid)
            for c in config.conditions:
                for a in g.attributes:
                    act = prompts.action("Alex Morgan", persona_text if c != "no_persona" else a, s, "chat", message)
                    out.append(_part(config.agents * config.rounds, _tokens(act), typical["decision"],
                                     config.decision.max_tokens, per))
    return out


def _explicit(config: ExperimentConfig, per: int) -> list[Part]:
    from louder.probes.explicit import trials_for

    prompts, typical = Prompts(), _numbers()["typical_output_tokens"]
    return [_part(trials_for(config, load_group(g)),
                  _tokens(prompts.explicit(load_scenario(s), load_group(g), config.paper_faithful, "chat")),
                  typical["explicit"], part(config, "explicit").params.max_tokens, per)
            for s in config.scenarios for g in config.groups]


def _association(config: ExperimentConfig, per: int) -> list[Part]:
    from louder.probes.association import make_trial
    from louder.probes.bai_runner import selected

    typical, own = _numbers()["typical_output_tokens"]["association"], part(config, "association")
    return [_part(own.trials, _tokens(make_trial(st, v, 0, own.seed).prompt), typical, own.params.max_tokens)
            for st in selected(config) for v in own.variations]


def _decision(config: ExperimentConfig, per: int) -> list[Part]:
    from louder.probes.decision_test import make_decision_trial
    from louder.probes.bai_runner import selected

    typical, out, own = _numbers()["typical_output_tokens"], [], part(config, "decision_test")
    for st in selected(config):
        dt = make_decision_trial(st, 0, own.seed, own.variant, own.egalitarian)
        first = sum(_tokens(text) for _, text in dt.messages)
        out.append(_part(own.trials, first, typical["decision_test"], own.profiles.max_tokens))
        # the follow-up (or judge) call re-reads the conversation and the first answer
        again = first + typical["decision_test"] + _numbers()["followup_prompt_tokens"]
        out.append(_part(own.trials, again, typical["followup"], own.followup.max_tokens))
    return out


def _population(config: ExperimentConfig, per: int) -> list[Part]:
    """A population run (louder/simulation/population_run.py): per model × condition × scenario, one
    persona per drawn agent (shared by the variants), one decision per agent and variant; with twins,
    per agent and every other attribute of every group a name call (groups that rename), a rewrite
    call (groups without a word list; ``twins.twin_calls_per_agent``) and a decision per variant.
    Counts assume every persona is valid and names its attributes (a failed one skips its calls, an
    unnamed attribute its rewrite)."""
    from louder.populations import agent_description, draw_agents, load_population
    from louder.simulation.population_run import twin_calls

    prompts, typical, out = Prompts(), _numbers()["typical_output_tokens"], []
    pop = load_population(config.population)
    agents = draw_agents(pop, config.agents, config.seed)
    cells = agents.groupby(pop.group_ids).size()
    persona_text = "x" * (typical["persona"] * _numbers()["chars_per_token"])
    for sid in config.scenarios:
        s = load_scenario(sid)
        for c in config.conditions:
            for combo, n in cells.items():
                attrs = dict(zip(pop.group_ids, combo if isinstance(combo, tuple) else (combo,)))
                desc = agent_description(attrs, pop.phrases, prompts)
                first = prompts.persona(desc, c, s, config.paper_faithful, "chat")
                kind = "name" if c == "no_persona" else "persona"
                out.append(_part(n, _tokens(first), typical[kind], config.persona.max_tokens,
                                 1 if c == "no_persona" else per))
                calls = twin_calls(pop, config.twin_groups, c) if config.twins else {}
                n_twins = calls.get("twins", 0)
                if calls.get("names"):
                    named = prompts.persona(desc, "no_persona", s, config.paper_faithful, "chat")
                    out.append(_part(n * calls["names"], _tokens(named), typical["name"], config.persona.max_tokens))
                if calls.get("rewrites"):  # a chat call (the rewriter), whatever the model's API
                    ask = prompts.twin_rewrite("group", desc, desc, persona_text)
                    out.append(_part(n * calls["rewrites"], _tokens(ask), typical["persona"],
                                     config.extraction.max_tokens))
                for v in config.variants:
                    act = prompts.action("Alex Morgan", persona_text if c != "no_persona" else desc, s.variant(v),
                                         "chat")
                    out.append(_part(n * (1 + n_twins), _tokens(act), typical["decision"],
                                     config.decision.max_tokens, per))
    return out


_PARTS = {"simulation": _simulation, "explicit": _explicit, "association": _association, "decision": _decision,
          "network": _network, "population": _population}


def _parts(config: ExperimentConfig, api: str, kind: str) -> list[Part]:
    if kind not in _PARTS:
        raise ValueError(f"unknown kind of run {kind!r}; one of {', '.join(KINDS)}")
    # The completion path adds an extraction call (the Bai tests always use the chat API).
    if kind == "simulation" and config.mode == "archetype":
        return _archetype(config, 1)  # score mode: chat models only, no extraction call
    return _PARTS[kind](config, 2 if api == "completion" else 1)


def count_calls(config: ExperimentConfig, kind: str = "simulation") -> int:
    """Model calls a cold run of ``kind`` makes (cached answers are not subtracted)."""
    return sum(p[0] for m in config.models for p in _parts(config, m.api, kind))


def estimate(config: ExperimentConfig, probes: bool = False, kind: str | None = None) -> pd.DataFrame:
    """One row per model: calls, estimated tokens and, where priced, estimated cost in USD.
    ``kind`` is one of ``KINDS`` (``probes=True`` is the older spelling of ``kind="explicit"``)."""
    kind = kind or ("explicit" if probes else "simulation")
    table, rows = prices(), []
    for m in config.models:
        api, backend, model, url = parse_spec(m.spec)
        parts = _parts(config, api, kind)
        calls, tin, tout, tmax = (sum(p[i] for p in parts) for i in range(4))
        info = backend_info(backend)
        price = table["models"].get(model) if info.priced and not url else None
        local = info.local or url is not None
        cost = lambda o: round((tin * price["input"] + o * price["output"]) / 1e6, 2) if price else (  # noqa: E731
            0.0 if local else None)
        rows.append(dict(model=m.label, calls=calls, input_tokens=tin, output_tokens=tout, output_tokens_max=tmax,
                         cost_usd=cost(tout), cost_usd_max=cost(tmax),
                         price=("local: free" if local else f"{price['input']}/{price['output']} USD per 1M tokens "
                                f"({table['as_of']})" if price else "not in louder/data/prices.yaml")))
    return pd.DataFrame(rows)
