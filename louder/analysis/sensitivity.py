"""Would the policy conclusion survive the model's bias? (issue 33.3; ``louder analyze RUN --adjust
parity | observed``; docs/tutorials/population-what-if.md)

``sensitivity.csv``: each policy variant's effect — its target rate minus the base variant's, overall
and per attribute of every group — under the raw agents (``agents = raw``), agents calibrated to
parity (``parity``) and, with ``--observed FILE``, to observed rates (``observed``), each with a
bootstrap interval, and a ``verdict``: ``holds`` when the conclusion (raises / lowers / no clear effect)
is the same under every set of agents, else ``depends on the model's bias``. The statistics are
``louder.analysis.adjustment.sensitivity_table``'s (docs/statistics.md): computed from the stored
probabilities (sample mode: decisions) with no new model call — the offsets are fitted on the base
variant and applied to every variant, refitted in every bootstrap resample.

A network run's agents hear each other, so calibrating one changes what its neighbours decide: its
sensitivity needs a run of its own (``louder adjust`` then ``louder run --adjustment``), not a
re-weighting of the stored answers."""

from __future__ import annotations

import pandas as pd

from louder.analysis.adjustment import SENSITIVITY_COLUMNS, sensitivity_table
from louder.errors import LouderError

ADJUST = ("parity", "observed")
MAX_B = 2000  # each resample refits the offsets (raking): the bootstrap is capped here


def sensitivity(decisions: pd.DataFrame, adjust: str, observed: pd.DataFrame | None = None, B: int = MAX_B,
                seed: int = 0) -> pd.DataFrame:
    """``sensitivity.csv`` of a single-round run's decisions (every variant, under ``none``, one wording and
    reasoning level; ``scenario`` without a " [variant]" suffix)."""
    if adjust not in ADJUST:
        raise LouderError(f"--adjust {adjust}: use parity (agents calibrated to the pooled rate) or observed (to the "
                          "rates of --observed FILE)")
    if adjust == "observed" and observed is None:
        raise LouderError("--adjust observed needs --observed FILE: observed rates per scenario, group and attribute "
                          "(docs/voices.md)")
    return sensitivity_table(decisions, observed=observed if adjust == "observed" else None, B=min(B, MAX_B),
                             seed=seed)


__all__ = ["ADJUST", "MAX_B", "SENSITIVITY_COLUMNS", "sensitivity"]
