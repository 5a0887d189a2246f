"""Fitting a population's joint distribution and drawing agents from it (humanleague).

- ``fit_population``: the joint distribution p over all groups' attribute combinations — the joint
  table as given, or iterative proportional fitting (``humanleague.ipf``) of a uniform seed to the
  one-way marginals and two-way tables.
- ``draw_agents``: N agents. Each one-way marginal is scaled to N and rounded to integers that sum
  to N (``humanleague.integerise``); quasi-random integer sampling (``humanleague.qisi``) then fills
  the joint table with those exact marginals, following p. So every one-way marginal is within one
  agent of N·share. The composition is a quota sample (deterministic for a given N); the seed fixes
  the order of the agents (and so which agent gets which persona seed downstream).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from louder.errors import LouderError
from louder.populations.schema import Population


@dataclass(frozen=True)
class FittedPopulation:
    """``joint``: shares over the groups' attributes (axis i = ``population.groups[i]``), summing to 1."""

    population: Population
    joint: np.ndarray
    converged: bool
    iterations: int

    def constraints(self) -> list[tuple[tuple[int, ...], np.ndarray]]:
        """The targets as (axes, shares): every group's one-way marginal (given, implied by a table, or
        for a joint table its margin) and every two-way table."""
        ids = self.population.group_ids
        ones, tables = _targets(self.population)
        out = [((i,), ones.get(gid, _margin(self.joint, (i,)))) for i, gid in enumerate(ids)]
        out += [((ids.index(ga), ids.index(gb)), arr) for (ga, gb), arr in tables]
        return out


@dataclass(frozen=True)
class FitDiagnostics:
    """How well N drawn agents reproduce the population.

    max_marginal_error: max over every one-way marginal cell k (each group's attributes) of
    |m_k − N·s_k| (agents), where m_k counts drawn agents and s_k is the target share; the draw keeps
    it below one agent. max_share_error = max_marginal_error / N.
    max_table_error: the same over every cell of every two-way table (None without tables). The
    draw does not fix these cells (it follows the fitted joint), so at small N they miss by several
    agents while every one-way marginal is exact: the two figures are reported apart.
    max_table_share_error = max_table_error / N.
    chi_square: Pearson X² = Σ_c (m_c − N·p_c)² / (N·p_c) over joint cells c with p_c > 0, against the
    fitted joint p; df = #{c: p_c > 0} − 1; p_value = P(χ²_df ≥ X²).
    ipf_max_error: max |fitted margin − target share| of the fitted joint (shares; 0 for a joint table).
    """

    n: int
    max_marginal_error: float
    max_share_error: float
    max_table_error: float | None
    max_table_share_error: float | None
    chi_square: float
    df: int
    p_value: float
    ipf_converged: bool
    ipf_iterations: int
    ipf_max_error: float


def _margin(joint: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    other = tuple(i for i in range(joint.ndim) if i not in axes)
    m = joint.sum(axis=other)
    return m if list(axes) == sorted(axes) else m.T


def _targets(pop: Population) -> tuple[dict[str, np.ndarray], list]:
    """One-way targets per group (the given marginal, else the first table's margin) and the two-way
    tables fitted (IPF) to them: sources agree only to the file's tolerance, and IPF over
    constraints that disagree never converges."""
    ones: dict[str, np.ndarray] = dict(pop.marginals)
    for (ga, gb), arr in pop.tables:
        ones.setdefault(ga, arr.sum(axis=1))
        ones.setdefault(gb, arr.sum(axis=0))
    import humanleague  # here: reading a run's population block (``fit_errors``) needs no fitting library

    tables = []
    for pair, arr in pop.tables:
        fitted, _ = humanleague.ipf(arr * 1e6, [np.array([0]), np.array([1])], [ones[pair[0]] * 1e6, ones[pair[1]] * 1e6])
        tables.append((pair, fitted / fitted.sum()))
    return ones, tables


def fit_population(pop: Population) -> FittedPopulation:
    """The joint distribution of ``pop`` (see the module docstring)."""
    import humanleague

    shape = tuple(len(g.attributes) for g in pop.groups)
    if pop.joint is not None:
        return FittedPopulation(pop, pop.joint["share"].to_numpy().reshape(shape), True, 0)
    ids = pop.group_ids
    ones, tables = _targets(pop)
    # humanleague wants marginals of lower dimension than the joint: a lone marginal or table is the joint.
    if len(ids) == 1:
        return FittedPopulation(pop, ones[ids[0]], True, 0)
    if len(ids) == 2 and tables:
        (ga, _), arr = tables[0]
        return FittedPopulation(pop, arr if ga == ids[0] else arr.T, True, 0)
    indices = [np.array([ids.index(ga), ids.index(gb)]) for (ga, gb), _ in tables]
    targets = [arr * 1e6 for _, arr in tables]
    in_table = {gid for pair, _ in tables for gid in pair}
    for gid, m in ones.items():
        if gid not in in_table:
            indices.append(np.array([ids.index(gid)]))
            targets.append(m * 1e6)
    # Scaled to 1e6 so IPF's absolute convergence tolerance is tight relative to a share.
    fitted, stats = humanleague.ipf(np.ones(shape), indices, targets)
    joint = fitted / fitted.sum()
    return FittedPopulation(pop, joint, bool(stats["conv"]), int(stats["iterations"]))


def _fitted(population) -> FittedPopulation:
    return population if isinstance(population, FittedPopulation) else fit_population(population)


@dataclass(frozen=True)
class DrawnCells:
    """N drawn agents as arrays (``draw_cells``): agent i is in joint cell ``cells[i]`` (flat C-order
    index, int32) and carries the weight ``weights[cells[i]]`` — a cell's weight, the same for all its
    agents. ``shape``: the joint table's shape (one axis per group)."""

    cells: np.ndarray
    weights: np.ndarray
    shape: tuple[int, ...]

    def codes(self, axis: int) -> np.ndarray:
        """Each cell's attribute index on ``axis`` (one entry per joint cell, not per agent)."""
        return np.unravel_index(np.arange(int(np.prod(self.shape))), self.shape)[axis]


def draw_cells(population: Population | FittedPopulation, n: int, seed: int = 0) -> DrawnCells:
    """The draw of ``draw_agents`` without a row per agent: 4 bytes per agent (archetype runs of
    10^7 agents; every attribute and the weight of an agent follow from its cell)."""
    import humanleague

    if n < 1:
        raise LouderError(f"agents: {n} is too few; draw at least 1 agent from a population")
    fitted = _fitted(population)
    # a writable float64 copy: humanleague 2.4.5 refuses a read-only array (pandas 3 hands those out)
    joint = np.array(fitted.joint, dtype=np.float64)
    indices, marginals = [], []
    for i in range(joint.ndim):
        counts, _ = humanleague.integerise(_margin(joint, (i,)), n)
        indices.append(np.array([i]))
        marginals.append(np.asarray(counts, dtype=np.int64))
    if joint.ndim == 1:
        counts, stats = marginals[0], {"conv": True}
    else:
        counts, stats = humanleague.qisi(joint, indices, marginals)
    counts = np.asarray(counts, dtype=np.int64)
    if not stats["conv"] or counts.sum() != n:
        raise LouderError(f"population file {fitted.population.path}: cannot draw {n} agents that match the "
                          f"marginals (humanleague.qisi did not converge); check for attributes with a zero share "
                          f"in one table but not another")
    cells = np.repeat(np.arange(counts.size, dtype=np.int32 if counts.size < 2 ** 31 else np.int64), counts.ravel())
    rng = np.random.default_rng(seed)
    cells = cells[rng.permutation(cells.size)]
    flat_p, flat_m = joint.ravel(), counts.ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        per_cell = n * flat_p / flat_m  # w_c = N·p_c / m_c (NaN for an empty cell, which no agent has)
    # rescaled so Σ w = N over the agents, summed agent by agent as draw_agents always has
    total = per_cell[cells].sum()
    return DrawnCells(cells, per_cell * n / total, joint.shape)


def draw_agents(population: Population | FittedPopulation, n: int, seed: int = 0) -> pd.DataFrame:
    """N agents: agent_id, one column per group (attribute label), cell_id, weight.

    cell_id is the flat (C-order) index of the agent's combination in the joint table. weight is the
    post-stratification weight to the fitted joint, w_c = N·p_c / m_c for the m_c agents of cell c,
    rescaled so Σ w = N (the integer rounding is what it corrects, so weights are close to 1).
    Identical for the same (population, n, seed).
    """
    fitted = _fitted(population)
    drawn = draw_cells(fitted, n, seed)
    cells = drawn.cells.astype(np.int64)
    coords = np.unravel_index(cells, drawn.shape)
    df = pd.DataFrame({"agent_id": np.arange(n)})
    for gid, g, axis in zip(fitted.population.group_ids, fitted.population.groups, coords):
        df[gid] = np.asarray(g.attributes, dtype=object)[axis]
    df["cell_id"] = cells
    df["weight"] = drawn.weights[cells]
    return df


def fit_diagnostics(population: Population | FittedPopulation, agents: pd.DataFrame) -> FitDiagnostics:
    """Compare drawn ``agents`` with the population's targets (formulas in ``FitDiagnostics``)."""
    fitted = _fitted(population)
    joint = fitted.joint
    n = len(agents)
    counts = np.bincount(agents["cell_id"].to_numpy(), minlength=joint.size).reshape(joint.shape).astype(float)
    err = {1: 0.0, 2: None}  # by the number of groups a constraint spans
    ipf_err = 0.0
    for axes, target in fitted.constraints():
        e = float(np.abs(_margin(counts, axes) - n * target).max())
        err[len(axes)] = max(err[len(axes)] or 0.0, e)
        ipf_err = max(ipf_err, float(np.abs(_margin(joint, axes) - target).max()))
    share = (lambda e: e / n if n else float("nan"))  # noqa: E731
    pos = joint.ravel() > 0
    expected = n * joint.ravel()[pos]
    from scipy.stats import chi2  # here: scipy.stats costs a second to import, and every run imports this module

    x2 = float(((counts.ravel()[pos] - expected) ** 2 / expected).sum())
    df = int(pos.sum()) - 1
    return FitDiagnostics(n=n, max_marginal_error=err[1], max_share_error=share(err[1]), max_table_error=err[2],
                          max_table_share_error=None if err[2] is None else share(err[2]), chi_square=x2,
                          df=df, p_value=float(chi2.sf(x2, df)) if df > 0 else float("nan"),
                          ipf_converged=fitted.converged, ipf_iterations=fitted.iterations,
                          ipf_max_error=ipf_err if fitted.population.joint is None else 0.0)


def fit_line(block: dict) -> str:
    """A manifest's ``population`` block as the one line the console prints (after a run and in a dry run)."""
    return (f"population {block['id']}: {block['n']} agents in {block['cells_drawn']} cells, {fit_errors(block)}, "
            f"chi-square {block['chi2']:.2f} (df {block['df']})")


def fit_errors(block: dict) -> str:
    """The one-way and two-way errors of a manifest's ``population`` block, as one phrase."""
    table = block.get("max_table_error")
    return (f"largest one-way marginal error {block.get('max_marginal_error', float('nan')):.2f} agents, "
            + ("no two-way tables" if table is None else f"largest two-way table cell error {table:.2f} agents"))
