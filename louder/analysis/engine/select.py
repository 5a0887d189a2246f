"""Which rows of a run's table a measure reads: the run's dimensions as the analysis sees them, and
the one function that selects the rows of every input a measure declares (``rows``).

A run varies how a case is put to its agents along **dimensions**. The presentation dimensions are
``louder.dimensions``' (wording, reasoning level, choice order, signal, intervention, and any
registered later); the analysis adds three that the runs record by their own machinery: the
**round** of a network run, the policy **variant** and a human study's paired **respondent** agents.
A measure's ``Input`` (``louder.analysis.engine.declarations``) says, per dimension, which rows it reads:

* ``reference`` — the rows of the reference level only: each agent answers once per level of a
  crossed dimension (every wording, reasoning level, intervention) and once per round, so pooling
  levels would count one agent's answers as several people. The reference is the dimension's own
  (``Dimension.reference``: the file's own text, the least thinking, ``none``), round 0 (the
  independent decisions), the ``base`` variant, the usual agents (not a respondent's pair);
* ``whole`` — every level, the dimension's column as written (robustness reads every wording,
  reasoning.csv every level, the network tables every round);
* ``keyed`` — every level, each read as a case of its own: a signal other than ``stated`` as its own
  condition ("contextualized [names]": each signal has agents of its own, never pooled), a variant
  other than ``base`` as its own scenario ("scenario [variant]").

Each dimension has a default — the per-case selection of cases.csv: crossed dimensions, rounds and
respondents at their reference, choice orders whole (each agent sees one: nothing to pool), signals
and variants keyed. A new dimension of ``louder.dimensions`` gets its default from its design
(crossed: reference, split: whole, own agents: keyed) and changes no measure that does not name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

WHOLE, REFERENCE, KEYED = "whole", "reference", "keyed"  # what an input does with one dimension
ALL = "*"  # ``Input(whole=ALL)``: every dimension kept whole (unless named as reference or keyed)


@dataclass(frozen=True)
class Axis:
    """A dimension as the analysis reads it: its ``column``, its default mode, the level a missing
    value stands for (``fill``), how the reference level is chosen among the levels present (in order
    of appearance), the case column a keyed level joins (``key``; None: it cannot be keyed) and, for a
    dimension whose reference is not a level (rounds, respondents), its own ``cut``."""

    id: str
    default: str
    doc: str
    fill: str | None = None
    reference: Callable[[Sequence[str]], str] = lambda levels: levels[0]
    key: str | None = None
    cut: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    column: str = ""

    def __post_init__(self):
        object.__setattr__(self, "column", self.column or self.id)

    @property
    def modes(self) -> tuple[str, ...]:
        return (WHOLE, REFERENCE, KEYED) if self.key else (WHOLE, REFERENCE)

    def levels(self, frame: pd.DataFrame) -> pd.Series:
        col = frame[self.column]
        return (col.fillna(self.fill) if self.fill is not None else col).astype(str)

    def apply(self, frame: pd.DataFrame, mode: str) -> pd.DataFrame:
        """``frame`` with this dimension read as ``mode`` (a frame without its column is unchanged)."""
        if self.column not in frame.columns or mode == WHOLE:
            return frame
        if mode == KEYED:
            levels = self.levels(frame)
            other = levels != self.fill
            if not other.any():
                return frame
            return frame.assign(**{self.key: frame[self.key].where(~other, frame[self.key] + " [" + levels + "]")})
        if self.cut is not None:
            return self.cut(frame)
        levels = self.levels(frame)
        present = list(pd.unique(levels))  # in order of appearance (dict.fromkeys: slow on arrow strings)
        if len(present) < 2:
            return frame
        return frame[levels == self.reference(present)].reset_index(drop=True)


def _rounds(frame: pd.DataFrame) -> pd.DataFrame:
    first = frame["round"] == 0
    if first.all() and isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1:
        return frame  # already round 0 only (read so: ``Analysis.rows``): the same rows, not a copy of them
    return frame[first].reset_index(drop=True)


def _usual(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["respondent"].isna()].reset_index(drop=True)


# the analysis' own dimensions (the runs record them; ``louder.dimensions`` does not shape a call with them)
ROUND = Axis("round", REFERENCE, "a network run's round (reference: round 0, the independent decisions)", cut=_rounds)
VARIANT = Axis("variant", KEYED, "a policy variant (keyed: a variant other than base as its own scenario)",
               fill="base", reference=lambda levels: "base" if "base" in levels else levels[0], key="scenario")
RESPONDENT = Axis("respondent", REFERENCE, "a human study's paired agents (reference: the usual agents only)",
                  cut=_usual)


def _from_dimension(d) -> Axis:
    from louder.dimensions import CROSSED, OWN

    default = REFERENCE if d.design == CROSSED else KEYED if d.design == OWN else WHOLE
    doc = f"{d.noun or d.id} ({d.design}: {default} unless a measure says otherwise)"
    return Axis(d.id, default, doc, fill=d.default, reference=d.reference,
                key="condition" if d.design == OWN else None)


def axes() -> list[Axis]:
    """Every dimension, in the order ``rows`` reads them: rounds first; then ``louder.dimensions``'
    dimensions, the last registered first (each was added around the ones before it, as
    interventions around reasoning levels around wordings); then variants and respondents."""
    from louder.dimensions import registered

    return [ROUND, *(_from_dimension(d) for d in reversed(registered())), VARIANT, RESPONDENT]


def check(name: str, whole: Sequence[str], reference: Sequence[str], keyed: Sequence[str]) -> str | None:
    """What is wrong with a selection (``name``: the input), or None."""
    by = {a.id: a for a in axes()}
    for mode, dims in ((WHOLE, whole), (REFERENCE, reference), (KEYED, keyed)):
        for d in dims:
            if d == ALL and mode == WHOLE:
                continue
            if d not in by:
                from louder.errors import did_you_mean

                return (f"input {name} selects dimension {d!r}, which no run has{did_you_mean(d, list(by))}; "
                        f"dimensions: {', '.join(by)}")
            if mode not in by[d].modes:
                return f"input {name}: dimension {d} cannot be {mode} (it can be {' or '.join(by[d].modes)})"
    named = [d for d in (*whole, *reference, *keyed) if d != ALL]
    twice = next((d for d in named if named.count(d) > 1), None)
    return f"input {name} names dimension {twice} twice" if twice else None


def rows(frame: pd.DataFrame | None, selection) -> pd.DataFrame | None:
    """The rows of ``frame`` that ``selection`` (an ``Input``) reads: each dimension in the order of
    ``axes`` read as the selection says, else as its default; a raw selection reads the file as written."""
    if frame is None or not set(selection.columns) <= set(frame.columns):
        return None
    if selection.raw:
        return frame
    for axis in axes():
        frame = axis.apply(frame, selection.mode(axis.id, axis.default))
    return frame


def view(frame: pd.DataFrame | None, selection) -> pd.DataFrame | None:
    import warnings

    warnings.warn("louder.analysis.engine.select.view is now select.rows (the old name goes in a later release)",
                  FutureWarning, stacklevel=2)
    return rows(frame, selection)


def keyed(frame: pd.DataFrame | None, *dimensions: str) -> pd.DataFrame | None:
    """``frame`` with each of ``dimensions`` keyed (a table a run wrote beside its decisions, e.g. a
    sequential run's cases, read as the case tables key them)."""
    if frame is None:
        return frame
    for axis in axes():
        if axis.id in dimensions:
            frame = axis.apply(frame, KEYED)
    return frame


def varying(frame: pd.DataFrame | None, designs: Sequence[str] = ("own agents", "crossed")) -> list[str]:
    """The run dimensions of ``designs`` that ``frame`` has more than one level of (own agents first,
    then crossed, each in registration order): the columns that tell its answers apart."""
    from louder.dimensions import registered

    if frame is None:
        return []
    return [d.id for design in designs for d in registered(design)
            if d.id in frame.columns and frame[d.id].nunique() > 1]
