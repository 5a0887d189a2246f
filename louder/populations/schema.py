"""The population file: pydantic models for its YAML, and the checks that pydantic cannot express
(weights, attributes of groups, agreeing totals), each failing with one line naming the file, the
group and the value."""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from louder.datafiles import load_yaml_model
from louder.errors import LouderError, describe_validation_error, did_you_mean
from louder.scenarios import Group, load_group

DATA = resources.files("louder") / "data" / "populations"
WEIGHT_COLUMNS = ("count", "weight")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TwoWayTable(_Strict):
    """A CSV with one column per group of ``groups`` and one ``count`` or ``weight`` column."""

    groups: list[str] = Field(min_length=2, max_length=2)
    file: str = Field(min_length=1)


class Distribution(_Strict):
    # Weights are checked by hand (not typed as float) so a bad one is reported with its group and value.
    joint: str | None = None
    marginals: dict[str, dict[str, Any]] = {}
    tables: list[TwoWayTable] = []

    @model_validator(mode="after")
    def _one_kind(self) -> Distribution:
        if self.joint and (self.marginals or self.tables):
            raise ValueError("give either `joint` (a CSV) or `marginals`/`tables`, not both")
        if not self.joint and not self.marginals and not self.tables:
            raise ValueError("give `joint` (a CSV of combinations) or `marginals` (per group)")
        return self


class PopulationFile(_Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    name: str
    source: str = ""
    notes: list[str] = []
    # Each entry: a built-in group id, a group file path (relative to this file), or a group inline.
    groups: list[Any] = Field(min_length=1)  # checked in _load_groups, for a one-line error
    distribution: Distribution
    # Persona wording per group and attribute, overriding louder/data/prompts.yaml `intersectional.phrases`.
    phrases: dict[str, dict[str, str]] = {}
    # Largest allowed disagreement between two sources of the same total or share, as a fraction.
    tolerance: float = Field(default=0.01, ge=0, le=0.5)


@dataclass(frozen=True)
class Population:
    """A validated population: its groups and normalised distribution inputs.

    ``joint`` (when given) is a tidy table: one column per group id plus ``share`` (summing to 1).
    ``marginals`` maps group id → shares over ``group.attributes`` (summing to 1); ``tables`` is a
    list of ((group_a, group_b), 2-D share array) in attribute order.
    """

    path: str
    id: str
    name: str
    source: str
    groups: tuple[Group, ...]
    phrases: dict
    joint: pd.DataFrame | None
    marginals: dict
    tables: tuple

    @property
    def group_ids(self) -> list[str]:
        return [g.id for g in self.groups]

    def group(self, gid: str) -> Group:
        return next(g for g in self.groups if g.id == gid)


def builtin_populations() -> list[str]:
    return sorted(p.name[:-5] for p in DATA.iterdir() if p.name.endswith(".yaml"))


def _resolve(ref: str, base: Path) -> str:
    """Group or CSV reference: paths are relative to the population file's folder."""
    if ref.endswith((".yaml", ".yml", ".csv")) or "/" in ref:
        p = Path(ref)
        return str(p if p.is_absolute() else base / p)
    return ref


def _weight(where: str, group: str, attribute: str, value: Any) -> float:
    """A weight as a float; non-numbers, NaN and negatives are one-line errors."""
    bad = isinstance(value, bool) or value is None
    try:
        w = float(value) if not bad else math.nan
    except (TypeError, ValueError):
        w = math.nan
    if bad or not math.isfinite(w):
        raise LouderError(f"{where}: group {group!r}, attribute {attribute!r}: weight {value!r} is not a number; "
                          f"give a count or share ≥ 0")
    if w < 0:
        raise LouderError(f"{where}: group {group!r}, attribute {attribute!r}: weight {value!r} is negative; "
                          f"give a count or share ≥ 0")
    return w


def _check_attribute(where: str, group: Group, attribute: str) -> None:
    if attribute not in group.attributes:
        raise LouderError(f"{where}: group {group.id!r} has no attribute {attribute!r}; "
                          f"its attributes are {', '.join(group.attributes)}")


def _read_table(where_file: str, path: str, groups: list[Group]) -> tuple[np.ndarray, float]:
    """A CSV of combinations → an array of weights over ``groups`` (attribute order) and its total.

    Combinations not listed weigh 0; a combination listed twice is an error (which one counts?).
    """
    where = f"{where_file}: table {path}"
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise LouderError(f"{where}: file not found; check the path (relative to the population file)") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise LouderError(f"{where}: cannot be read as CSV ({str(e).splitlines()[0]})") from None
    ids = [g.id for g in groups]
    missing = [g for g in ids if g not in df.columns]
    if missing:
        raise LouderError(f"{where}: missing column for group(s) {', '.join(missing)}; "
                          f"give one column per group ({', '.join(ids)}) and a count or weight column")
    wcols = [c for c in WEIGHT_COLUMNS if c in df.columns]
    if len(wcols) != 1:
        raise LouderError(f"{where}: needs exactly one weight column, `count` or `weight`; "
                          f"found columns {', '.join(df.columns)}")
    extra = [c for c in df.columns if c not in ids and c != wcols[0]]
    if extra:
        raise LouderError(f"{where}: unknown column(s) {', '.join(extra)}; columns are the groups "
                          f"{', '.join(ids)} and {wcols[0]}")
    out = np.zeros([len(g.attributes) for g in groups])
    seen: set[tuple] = set()
    for _, row in df.iterrows():
        key = tuple(row[g] for g in ids)
        for g, a in zip(groups, key):
            _check_attribute(where, g, a)
        if key in seen:
            raise LouderError(f"{where}: combination {', '.join(key)} is listed twice; give each combination once")
        seen.add(key)
        w = _weight(where, ids[-1] if len(ids) == 1 else "/".join(ids), ", ".join(key), row[wcols[0]])
        out[tuple(g.attributes.index(a) for g, a in zip(groups, key))] = w
    total = float(out.sum())
    if total <= 0:
        raise LouderError(f"{where}: all weights are 0; give positive counts or weights")
    return out, total


def _load_groups(where: str, refs: list, base: Path) -> tuple[Group, ...]:
    groups: list[Group] = []
    for i, ref in enumerate(refs):
        if isinstance(ref, dict):
            try:
                g = Group.model_validate(ref)
            except ValidationError as e:
                raise LouderError(describe_validation_error(e, f"{where}: groups.{i}")) from None
        elif isinstance(ref, str) and ref:
            g = load_group(_resolve(ref, base))
        else:
            raise LouderError(f"{where}: groups.{i}: {ref!r} is not a group; give a built-in group id, the path of "
                              f"a group file, or a group inline (id, name, attributes)")
        if g.id in [x.id for x in groups]:
            raise LouderError(f"{where}: group {g.id!r} is listed twice in `groups`; list each group once")
        groups.append(g)
    return tuple(groups)


def _group(where: str, groups: tuple[Group, ...], gid: str, field: str) -> Group:
    for g in groups:
        if g.id == gid:
            return g
    raise LouderError(f"{where}: {field} names group {gid!r}{did_you_mean(gid, [g.id for g in groups])}, which is "
                      f"not in `groups` ({', '.join(g.id for g in groups)}); add it there or fix the spelling")


def _check_totals(where: str, totals: dict[str, float], tol: float) -> None:
    """All marginals and tables describe one population, so their totals must agree (to ``tol``)."""
    items = list(totals.items())
    ref_name, ref = items[0]
    for name, t in items[1:]:
        if abs(t - ref) > tol * max(ref, t):
            raise LouderError(f"{where}: totals disagree: {name} sums to {t:g} but {ref_name} sums to {ref:g}; "
                              f"give all marginals as counts of the same population or as shares of 100")


def _validate_phrases(where: str, phrases: dict, groups: tuple[Group, ...]) -> None:
    for gid, table in phrases.items():
        g = _group(where, groups, gid, "`phrases`")
        for a in table:
            _check_attribute(f"{where}: phrases", g, a)


def load_population(ref: str) -> Population:
    """A built-in population by id, or a population file by path, validated."""
    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        path: Any = Path(ref)
        base = path.parent
    elif ref in builtin_populations():
        path = DATA / f"{ref}.yaml"
        base = Path(str(DATA))
    else:
        raise LouderError(f"unknown population {ref!r}{did_you_mean(ref, builtin_populations())}; built-in "
                          f"populations: {', '.join(builtin_populations())} "
                          f"(or give the path of a .yaml file)")
    doc = load_yaml_model(PopulationFile, path, "population")
    where = f"population file {path}"
    groups = _load_groups(where, doc.groups, base)
    _validate_phrases(where, doc.phrases, groups)
    dist = doc.distribution
    joint, marginals, tables = None, {}, []
    if dist.joint:
        arr, _ = _read_table(where, _resolve(dist.joint, base), list(groups))
        arr = arr / arr.sum()
        idx = pd.MultiIndex.from_product([g.attributes for g in groups], names=[g.id for g in groups])
        joint = pd.Series(arr.ravel(), index=idx, name="share").reset_index()
    else:
        totals: dict[str, float] = {}
        for gid, weights in dist.marginals.items():
            g = _group(where, groups, gid, "distribution.marginals")
            for a in weights:
                _check_attribute(f"{where}: distribution.marginals", g, a)
            absent = [a for a in g.attributes if a not in weights]
            if absent:
                raise LouderError(f"{where}: group {gid!r}: marginal lacks attribute(s) {', '.join(absent)}; "
                                  f"give each attribute a weight (0 to leave it out)")
            w = np.array([_weight(where, gid, a, weights[a]) for a in g.attributes])
            if w.sum() <= 0:
                raise LouderError(f"{where}: group {gid!r}: all marginal weights are 0; give positive weights")
            totals[f"marginal of {gid}"] = float(w.sum())
            marginals[gid] = w / w.sum()
        for t in dist.tables:
            pair = [_group(where, groups, gid, "distribution.tables") for gid in t.groups]
            if pair[0].id == pair[1].id:
                raise LouderError(f"{where}: table {t.file} pairs group {pair[0].id!r} with itself; name two groups")
            arr, total = _read_table(where, _resolve(t.file, base), pair)
            totals[f"table {t.file}"] = total
            tables.append(((pair[0].id, pair[1].id), arr / total))
        _check_totals(where, totals, doc.tolerance)
        _check_shares(where, marginals, tables, doc.tolerance, {g.id: g for g in groups})
        covered = set(marginals) | {gid for pair, _ in tables for gid in pair}
        uncovered = [g.id for g in groups if g.id not in covered]
        if uncovered:
            raise LouderError(f"{where}: group(s) {', '.join(uncovered)} have no marginal or table; "
                              f"give each group a distribution")
    return Population(str(path), doc.id, doc.name, doc.source, groups, doc.phrases, joint, marginals, tuple(tables))


def _check_shares(where: str, marginals: dict, tables: list, tol: float, groups: dict[str, Group]) -> None:
    """A group's shares implied by a two-way table must agree with its marginal (and other tables)."""
    seen = {gid: (f"marginal of {gid}", m) for gid, m in marginals.items()}
    for (ga, gb), arr in tables:
        for axis, gid in ((1, ga), (0, gb)):
            shares = arr.sum(axis=axis)
            if gid in seen:
                name, ref = seen[gid]
                i = int(np.argmax(np.abs(shares - ref)))
                if abs(shares[i] - ref[i]) > tol:
                    raise LouderError(f"{where}: totals disagree for group {gid!r}: the table of {ga} × {gb} gives "
                                      f"attribute {groups[gid].attributes[i]!r} a share of {shares[i]:.4f} but {name} gives {ref[i]:.4f}; "
                                      f"make the sources agree (tolerance {tol:g})")
            else:
                seen[gid] = (f"the table of {ga} × {gb}", shares)
