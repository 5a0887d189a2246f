"""Calibrated agents (issue 33.2; docs/how-to/test-a-mitigation.md#calibrate-the-agents): logit offsets
that move each attribute's agents to parity or to observed rates, written by ``louder calibrate`` as
``calibration.yaml`` and applied by ``louder run --calibration FILE`` (``simulation.calibration``).

An agent of attribute a (in a population run: of attributes a_g, one per group g) whose model gives
the scenario's target choice probability p_t decides with

    p'_t = expit(logit p_t + δ),   δ = Σ_g δ_{g, a_g}

and the other choices share 1 − p'_t in their old proportions (``apply_offsets``). The offsets are
fitted by ``louder.analysis.stats.calibration.calibration_offsets`` (the equations are in its docstring and
docs/statistics.md). They need the choice probabilities, which only score mode has: a sample-mode
run's JSON answer is a label, with nothing to shift (``check``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import expit, logit

from louder.datafiles import load_cached
from louder.errors import LouderError

P_CLIP = 1e-6


def calibrated_probability(p, offset) -> np.ndarray:
    """p' = expit(logit p + δ) (p clipped to [1e-6, 1 − 1e-6] first)."""
    p = np.clip(np.asarray(p, dtype=float), P_CLIP, 1 - P_CLIP)
    return expit(logit(p) + np.asarray(offset, dtype=float))


def apply_offsets(probabilities, target: int, offset) -> np.ndarray:
    """A choice distribution after the offset: the target choice's probability becomes
    p'_t = expit(logit p_t + δ); the other choices share 1 − p'_t in their old proportions
    (p'_j = p_j (1 − p'_t)/(1 − p_t); equally when p_t was 1). ``probabilities``: (…, C) rows summing
    to 1; ``offset``: a number or one per row."""
    p = np.asarray(probabilities, dtype=float)
    pt = p[..., target]
    new_t = calibrated_probability(pt, offset)
    rest = 1 - pt
    others = np.delete(p, target, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(rest[..., None] > 0, others * ((1 - new_t) / np.where(rest > 0, rest, 1))[..., None],
                          ((1 - new_t) / max(p.shape[-1] - 1, 1))[..., None])
    return np.insert(scaled, target, new_t, axis=-1)


# --- calibration.yaml ---------------------------------------------------------------------------------

class Offset(BaseModel):
    """One attribute's offset in one case (``louder calibrate``'s rows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    condition: str
    scenario: str
    group: str
    attribute: str
    offset: float = Field(description="δ, added to the logit of the target choice's probability")
    se: float | None = Field(None, description="its standard error")
    n: int | None = Field(None, description="agents it was fitted on")
    rate: float | None = Field(None, description="the attribute's mean before")
    target: float | None = Field(None, description="the rate it was fitted to reach")
    rate_adjusted: float | None = Field(None, description="the attribute's mean after, on the fitted run")


class Calibration(BaseModel):
    """``calibration.yaml``: what the offsets calibrate to, where from, and the offsets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: Literal["parity", "observed"]
    source: Literal["score", "sample"] = Field(description="score: fitted on the agents' probabilities; sample: on "
                                               "rates of sampled decisions (they calibrate rates, not agents)")
    run: str | None = Field(None, description="the run folder they were fitted on")
    observed: str | None = Field(None, description="the observed-rates file (to: observed)")
    offsets: list[Offset] = Field(min_length=1)

    def lookup(self) -> dict[tuple[str, str, str, str, str], float]:
        return {(o.model, o.condition, o.scenario, o.group, o.attribute): o.offset for o in self.offsets}


def load_calibration(path: str | Path) -> Calibration:
    """The calibration file at ``path`` (read again when it changes); LouderError naming the problem."""
    return load_cached(Calibration, Path(path), "calibration")


def offset_for(calibration: Calibration, model: str, condition: str, scenario: str,
               attributes: dict[str, str]) -> float:
    """δ of an agent: the sum over its groups of its attribute's offset (0 for a group the file does not
    calibrate; ``check`` makes sure every group of the run is there)."""
    table = calibration.lookup()
    return float(sum(table.get((model, condition, scenario, g, a), 0.0) for g, a in attributes.items()))


def check(config) -> None:
    """``simulation.calibration``: the file loads, the run decides in score mode, agents mode, and the file
    has an offset for every model × condition × scenario × group × attribute of the run (a ValueError
    naming the field and the fix)."""
    sim = config.simulation
    if sim.calibration is None:
        return
    where = f"simulation.calibration: {sim.calibration}"
    try:
        adj = load_calibration(sim.calibration)
    except LouderError as e:
        raise ValueError(f"simulation.calibration: {e} (write one with `louder calibrate RUN --to parity`)") from None
    if sim.decision_mode != "score":
        raise ValueError(f"{where}: offsets shift the agents' choice probabilities, which only score mode has — a "
                         "sampled answer is a label with nothing to shift; use decision_mode: score (or read what "
                         "calibrated agents would conclude from a finished run: `louder analyze RUN --adjust parity`)")
    if config.population is not None and config.population.mode == "archetype":
        raise ValueError(f"{where}: archetype mode scores one shared prompt per population cell, not agents; "
                         "use population.mode: agents")
    from louder.scenarios import load_group, load_scenario

    if config.population is not None:
        from louder.populations import load_population

        groups = [(g.id, list(g.attributes)) for g in load_population(config.population.file).groups]
    else:
        groups = [(g.id, list(g.attributes)) for g in map(load_group, sim.groups)]
    have = adj.lookup()
    for m in config.models:
        for c in sim.conditions:
            for ref in sim.scenarios:
                s = load_scenario(ref).id
                for g, attrs in groups:
                    missing = [a for a in attrs if (m.label, c, s, g, a) not in have]
                    if missing:
                        raise ValueError(f"{where}: no offset for {m.label} × {c} × {s} × {g} = {', '.join(missing)}; "
                                         "fit them with `louder calibrate` on a run of that model, condition, scenario "
                                         "and group")
