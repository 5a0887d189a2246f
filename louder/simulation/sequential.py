"""Sequential runs (issue 20): every case runs in waves until an anytime-valid test decides it.

``louder run … --until decided`` (config ``sequential: {budget, wave, precision, alpha}``) runs each
item of a simulation or population run in waves; after each wave the case's test
(``louder.analysis.stats.sequential``: betting confidence sequences for the attribute differences,
Bonferroni over every pair of the run) says `disparity`, `parity within D`, or go on, up to the
budget (`undecided`). Cases run side by side; a decided case stops asking while the others go on.

**Identities.** A wave is a range of the same agents a fixed run has, so a sequential run asks
exactly the calls (seeds, cache keys) of a fixed run of its total and can be extended or turned
into a fixed run without repeating a call:

- simulation: wave w is replicates [wW, (w+1)W) of every attribute — an agent is (case, attribute,
  replicate) whatever N. At the end agent_id is renumbered to what a fixed run of the case's
  total N writes (attribute-major from 1: 1 + i·N + replicate).
- population: the budget's draw ``draw_agents(budget)`` (a quota sample in a seeded random order)
  is run in that order, W drawn agents per wave; an agent keeps the (cell, replicate) and agent_id
  it has in that draw. A run that goes to its budget is exactly a fixed run of N = budget. One
  stopped earlier ran the first n agents of the budget's draw, and the quota draw of n agents
  (``louder run --agents n``) has its own composition, so a fixed run of n (or a larger budget's
  draw) shares only the (cell, replicate) identities both draws hold — most, not all (measured in
  docs/sequential.md). The weights of a stopped case are the post-stratification weights of its
  own n agents.

**The plan.** The plan (``Task.items``) of a sequential run is its budget — the most it can cost —
so the manifest's ``planned_calls`` is the budget's calls and ``model_calls`` what it used:
planned ≥ model_calls, equal when every case runs to its budget.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from louder import dimensions
from louder.analysis.stats import sequential as S
from louder.config import ExperimentConfig
from louder.dimensions import OWN
from louder.errors import LouderError
from louder.llm.client import run_all
from louder.scenarios import load_scenario
from louder.simulation.case import CaseFrames
from louder.task import Task

SEQUENTIAL_COLUMNS = ["waves", "agents_per_attribute", "stop_reason", "dpd", "cs_low", "cs_high", "e_value",
                      "p_value", "p_adjusted", "n_valid_min"]


def budget(config: ExperimentConfig) -> int:
    """The most agents per attribute (population runs: agents drawn) a case may use."""
    return config.sequential.budget or config.simulation.agents


def at_budget(config: ExperimentConfig) -> ExperimentConfig:
    """The fixed run of the budget, whose plan and agents the sequential run walks through."""
    simulation = config.simulation.model_copy(update={"agents": budget(config)})
    return config.model_copy(update={"simulation": simulation, "sequential": None})


def tested(config: ExperimentConfig, scenario_id: str, variant: str | None) -> list[tuple[dict, dict]]:
    """(keys, rows) of the tests of one item under ``variant`` (None: a run without variants): one per
    own-agents level (signal: agents of their own, a case of its own in the analysis, its level in the
    keys when the run varies it), each reading the rows of the crossed dimensions' reference levels —
    the file's own text, the least thinking: the rows cases.csv reads (``louder.dimensions``). The
    other crossed levels are asked of the same agents as they go; robustness.csv and reasoning.csv
    analyse them afterwards."""
    scenario = load_scenario(scenario_id, config.simulation.scenarios)
    ref = dimensions.references(config, scenario)
    shown = dimensions.labelled(config, OWN)
    out = []
    for own in dimensions.combos(config, scenario, OWN):
        keys = {c: own[c] for c in shown}
        rows = {**({"variant": variant} if variant is not None else {}), **own, **ref}
        out.append((keys, rows))
    return out


def settings(config: ExperimentConfig) -> dict:
    s = config.sequential
    return dict(budget=budget(config), wave=s.wave, precision=s.precision, alpha=s.alpha)


@dataclass
class Unit:
    """One test of an item: a case of the analysis (the item under one policy variant; population
    runs: and one group). ``column`` holds the attribute in the decision rows."""

    keys: dict
    column: str
    attributes: list[str]
    where: dict  # only the rows with these values (column → value): its variant and dimension levels
    test: S.PairedStreams | None = None
    stop: str = ""
    row: dict | None = None  # its state at the stop


@dataclass(frozen=True)
class Design:
    """How one kind runs its items in waves."""

    waves: int                                           # waves to reach the budget
    run_wave: Callable[[object, object, int, Callable | None], CaseFrames]  # (ctx, item key, wave, tick)
    units: Callable[[object], list[Unit]]                # the tests of an item
    order: str                                           # column giving the answers' order in a wave
    per_attribute: Callable[[int], int]                  # agents per attribute after w waves (for the table)
    finish: Callable[[object, CaseFrames, int], CaseFrames]  # (item key, its frames, waves run) → final frames


def value_column(config: ExperimentConfig) -> str:
    """What enters an attribute's mean: the target decision, or in score mode p_target (the probability DPD)."""
    return "p_target" if config.simulation.decision_mode == "score" else "target"


def observations(rows: pd.DataFrame, column: str, attributes: list[str], value: str, order: str) -> list[list[float]]:
    """The valid answers of each attribute among ``rows``, in ``order``: what the test takes."""
    valid = rows[rows["status"] == "valid"].sort_values(order)
    return [valid.loc[valid[column] == a, value].astype(float).tolist() for a in attributes]


def matching(rows: pd.DataFrame, where: dict) -> np.ndarray:
    """The rows whose columns hold ``where``'s values."""
    mask = np.ones(len(rows), dtype=bool)
    for column, value in where.items():
        mask &= rows[column].astype(str).to_numpy() == str(value)
    return mask


def check(config: ExperimentConfig, ctx) -> None:
    if config.executor == "ray":
        raise LouderError("sequential: a sequential run (--until decided) runs its waves here; use executor: local "
                          "with it")
    if ctx.recorder is not None:
        raise LouderError("sequential: a sequential run decides after each wave, so it cannot be exported as one "
                          "batch; batch-export a fixed run (drop `sequential:` / --until) instead")


def pairs_of(units: list[Unit]) -> int:
    return sum(len(u.attributes) * (len(u.attributes) - 1) // 2 for u in units)


def run_waves(design: Design, config: ExperimentConfig, ctx, keys: list, sizes: list[int], tick) -> list[CaseFrames]:
    """Every item in waves, side by side; each stops when all its tests have a verdict, or at the
    budget. ``sizes``: each item's progress units at the budget (its share of the bar)."""
    check(config, ctx)
    seq = config.sequential
    B = budget(config)
    units = {i: design.units(key) for i, key in enumerate(keys)}
    pairs = pairs_of([u for us in units.values() for u in us])
    level = S.pair_alpha(seq.alpha, pairs)
    for us in units.values():
        for u in us:
            u.test = S.PairedStreams(len(u.attributes), level)
    value = value_column(config)
    progress = getattr(ctx, "progress", None)
    lock = threading.Lock()
    state = {"total": sum(sizes), "decided": 0, "done": 0}

    def report(skipped_units: int = 0, decided: bool | None = None) -> None:
        if progress is None:
            return
        with lock:
            state["total"] -= skipped_units
            if decided is not None:
                state["done"] += 1
                state["decided"] += int(decided)
            progress(state["total"], "total")
            progress(0, f"cases decided {state['decided']} · undecided {state['done'] - state['decided']} · "
                        f"running {len(keys) - state['done']}")

    def one(i: int, key) -> CaseFrames:
        frames, history = [], []
        w = 0
        for w in range(design.waves):
            f = design.run_wave(ctx, key, w, tick)
            f = CaseFrames(f.decisions.assign(wave=w), f.personas, f.extra)
            frames.append(f)
            for u in units[i]:
                rows = f.decisions[matching(f.decisions, u.where)]
                u.test.add(observations(rows, u.column, u.attributes, value, design.order))
                st = u.test.state()
                reason = str(S.verdict(st.low, st.high, seq.precision))
                row = dict(**u.keys, wave=w, agents_per_attribute=design.per_attribute(w + 1),
                           dpd=float(st.dpd), cs_low=round(float(st.low), 6), cs_high=round(float(st.high), 6),
                           e_value=float(st.e_value), p_value=u.test.p_value,
                           p_adjusted=min(1.0, u.test.p_value * pairs / max(1, u.test.ia.size)),
                           n_valid_min=min(len(v) for v in u.test.values), verdict=reason)
                history.append(row)
                if not u.stop:  # a decided test keeps the state it was decided at
                    u.row, u.stop = row, reason
            if all(u.stop for u in units[i]):
                break
        for u in units[i]:
            u.stop = u.stop or S.UNDECIDED
        ran = design.per_attribute(w + 1)
        report(sizes[i] * (B - ran) // B, all(u.stop != S.UNDECIDED for u in units[i]))
        extra_names = frames[0].extra.keys()
        merged = CaseFrames(pd.concat([f.decisions for f in frames], ignore_index=True),
                            [p for f in frames for p in f.personas],
                            {n: pd.concat([f.extra[n] for f in frames], ignore_index=True) for n in extra_names})
        merged = design.finish(key, merged, w + 1)
        final = pd.DataFrame([{**{k: v for k, v in u.row.items() if k not in ("wave", "verdict")},
                               "waves": u.row["wave"] + 1, "stop_reason": u.stop} for u in units[i]])
        merged.extra["sequential.csv"] = final
        merged.extra["sequential_waves.csv"] = pd.DataFrame(history)
        return merged

    report()
    # cases side by side: enough at once that their waves fill the call slots
    return run_all([lambda i=i, k=k: one(i, k) for i, k in enumerate(keys)], ctx.concurrency,
                   max(1, sum(sizes) * seq.wave // B))


def sequential_task(task: Task, config: ExperimentConfig, design: Design,
                    finish_tables: Callable[[dict, dict, list], None] | None = None) -> Task:
    """``task`` (the fixed run of the budget: its items are the plan) run in waves by ``design``;
    its tables gain ``wave``, ``sequential.csv`` (one row per case) and ``sequential_waves.csv``
    (one row per case and wave), and the manifest a ``sequential`` block."""

    sizes = {repr(item.key): item.size for item in task.items}
    pairs = pairs_of([u for item in task.items for u in design.units(item.key)])

    def run_items(ctx, keys, tick):
        return run_waves(design, config, ctx, keys, [sizes[repr(k)] for k in keys], tick)

    def tables(ctx, results):
        seq = {n: pd.concat([r.extra.pop(n) for r in results], ignore_index=True)
               for n in ("sequential.csv", "sequential_waves.csv")}
        out, fields = task.tables(ctx, results)
        if finish_tables is not None:
            finish_tables(out, fields, results)
        keys = [c for c in seq["sequential.csv"].columns if c not in SEQUENTIAL_COLUMNS]
        final = seq["sequential.csv"][keys + SEQUENTIAL_COLUMNS]
        out["sequential.csv"] = final
        waves = seq["sequential_waves.csv"]
        out["sequential_waves.csv"] = waves[keys + ["wave"] + [c for c in waves.columns if c not in keys + ["wave"]]]
        fields["sequential"] = {**settings(config), "pairs": pairs,
                                "pair_level": S.pair_alpha(config.sequential.alpha, pairs),
                                "method": "betting confidence sequences (Waudby-Smith & Ramdas 2023, hedged "
                                          "capital, predictable plug-in bets) for every pair of attributes, "
                                          "Bonferroni over the run's pairs",
                                "stop_reasons": {str(k): int(v) for k, v in final["stop_reason"].value_counts().items()},
                                "model_calls_at_budget": task.planned_calls}
        return out, fields

    return dataclasses.replace(task, run_items=run_items, tables=tables)


# --- the two kinds that run in waves ------------------------------------------------------------

def simulation(config: ExperimentConfig) -> Task:
    """A seed simulation in waves: wave w = replicates [wW, (w+1)W) of every attribute of a case."""
    from louder.scenarios import load_group
    from louder.simulation.case import labelled, simulate_case
    from louder.simulation.runner import simulation_task

    full = at_budget(config)
    B, W = full.simulation.agents, config.sequential.wave
    label = labelled(config.simulation.variants)

    def run_wave(ctx, key, w, tick):
        return simulate_case(full, ctx.sessions[key[0]], ctx.run_id, key, tick, range(w * W, min((w + 1) * W, B)))

    def units(key):
        attrs = list(load_group(key[3], config.simulation.groups).attributes)
        case = dict(zip(("model", "condition", "scenario", "group"), key))
        return [Unit({**case, **({"variant": v} if label else {}), **levels}, "attribute", attrs, where)
                for v in config.simulation.variants
                for levels, where in tested(config, key[2], v if label else None)]

    def finish(key, frames: CaseFrames, waves: int) -> CaseFrames:
        """agent_id as a fixed run of the case's total N writes it: 1 + i·N + replicate."""
        n = min(waves * W, B)
        index = {a: i for i, a in enumerate(load_group(key[3], config.simulation.groups).attributes)}

        def renumber(df: pd.DataFrame) -> pd.DataFrame:
            return df.assign(agent_id=1 + df["attribute"].map(index).astype("int64") * n + df["replicate"])

        personas = renumber(pd.DataFrame(frames.personas)).to_dict("records") if frames.personas else []
        return CaseFrames(renumber(frames.decisions), personas, frames.extra)

    design = Design(-(-B // W), run_wave, units, "replicate", lambda w: min(w * W, B), finish)
    return sequential_task(simulation_task(full), config, design)


def population(config: ExperimentConfig) -> Task:
    """A population run in waves of W drawn agents, in the order of the budget's draw."""
    from louder.populations import draw_agents, fit_diagnostics, fit_population, load_population
    from louder.simulation.population_run import attr_column, population_task, run_population_case

    full = at_budget(config)
    B, W = full.simulation.agents, config.sequential.wave
    pop = load_population(config.population.file)
    fitted = fit_population(pop)
    drawn = draw_agents(fitted, B, config.seed)
    drawn = drawn.assign(replicate=drawn.groupby("cell_id").cumcount())  # identity in the whole draw

    def run_wave(ctx, key, w, tick):
        part = drawn.iloc[w * W:min((w + 1) * W, B)]
        return run_population_case(full, ctx.sessions[key[0]], ctx.run_id, pop, part, key, tick)

    def units(key):
        return [Unit(dict(model=key[0], condition=key[1], scenario=key[2], variant=v, group=g.id, **levels),
                     attr_column(g.id), list(g.attributes), where)
                for v in config.simulation.variants for levels, where in tested(config, key[2], v)
                for g in pop.groups]

    def finish(key, frames: CaseFrames, waves: int) -> CaseFrames:
        """The weights of the item's own n agents (post-stratification to the fitted joint)."""
        n = min(waves * W, B)
        weights = reweighted(drawn.iloc[:n]).set_index("agent_id")["weight"]
        d = frames.decisions.assign(weight=frames.decisions["agent_id"].map(weights).astype(float))
        return CaseFrames(d, frames.personas, frames.extra)

    def reweighted(agents: pd.DataFrame) -> pd.DataFrame:
        """w_c = n·p_c / m_c for the m_c agents of cell c, rescaled to sum to n (as ``draw_agents``)."""
        n = len(agents)
        m = agents["cell_id"].map(agents["cell_id"].value_counts())
        w = n * fitted.joint.ravel()[agents["cell_id"].to_numpy()] / m.to_numpy()
        return agents.assign(weight=w * n / w.sum())

    def finish_tables(out: dict, fields: dict, results: list) -> None:
        n = int(max(r.decisions["agent_id"].max() for r in results)) + 1
        used = reweighted(drawn.iloc[:n]).drop(columns="replicate")
        out["population.parquet"] = used
        diag = fit_diagnostics(fitted, used)
        fields["population"].update(n=n, max_marginal_error=diag.max_marginal_error,
                                    max_share_error=diag.max_share_error, max_table_error=diag.max_table_error,
                                    max_table_share_error=diag.max_table_share_error,
                                    chi2=diag.chi_square, df=diag.df, p_value=diag.p_value,
                                    cells_drawn=int(used["cell_id"].nunique()), budget=B)

    design = Design(-(-B // W), run_wave, units, "agent_id", lambda w: min(w * W, B), finish)
    return sequential_task(population_task(full), config, design, finish_tables)
