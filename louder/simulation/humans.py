"""A human study of the run's scenarios (``simulation.humans``, ``louder run --humans FILE``; issue 34,
docs/how-to/anchor-to-humans.md): its respondents, read and checked, and the paired agents they get.

The file is a CSV with one row per respondent and scenario: ``respondent`` (an id), ``scenario`` (a
scenario id of the run), one column per group id of the run holding the respondent's attribute in that
group (empty: not asked), ``decision`` (a choice label of the scenario) and an optional ``weight``
(a survey weight, > 0); lines starting with ``#`` before the header are notes. A bad file is refused
in one line naming its row and column.

In each case (model × condition × scenario × group) a respondent with an attribute in the case's group
gets a **paired agent**: an agent of that attribute like the case's other agents — its persona written
and its decision asked with the same prompts — whose answer is the respondent's paired prediction in
the anchored analysis (``louder.analysis.anchored``). Its identity (seed, cache key) is the
respondent's id, so a resumed run, a larger ``agents`` or a reordered file asks nothing twice.
"""

from __future__ import annotations

import difflib
import io
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from louder.errors import LouderError
from louder.scenarios import load_group, load_scenario

FIXED = ("respondent", "scenario", "decision", "weight")
# humans.parquet (written beside decisions.parquet): one row per respondent × scenario × group it has an
# attribute in
COLUMNS = ["respondent", "scenario", "group", "attribute", "decision", "target", "weight"]


@dataclass(frozen=True)
class Paired:
    """A respondent's paired agent in one case: the respondent's id and attribute in the case's group."""

    respondent: str
    attribute: str


def _hint(value: str, options) -> str:
    options = list(options)
    hits = difflib.get_close_matches(value, options, n=1, cutoff=0.5)
    if not hits:  # a different case ("female") is the likeliest slip
        hits = [o for o in options if o.lower() == value.lower()]
    return f"; did you mean {hits[0]}?" if hits else f" (one of {', '.join(options)})"


def load(path: str | Path, scenarios: list[str], groups: list[str]) -> pd.DataFrame:
    """The respondents of ``path`` in long form (``COLUMNS``, scenarios and groups by id), checked
    against the run's ``scenarios`` and ``groups`` (ids or paths, as the config gives them). Raises
    LouderError in one line naming the row and column of the first problem."""
    p = Path(path)
    stamp = p.stat().st_mtime_ns if p.is_file() else None
    return _load(str(p), stamp, tuple(scenarios), tuple(groups)).copy()


@lru_cache(maxsize=8)
def _load(path: str, stamp, scenarios: tuple[str, ...], groups: tuple[str, ...]) -> pd.DataFrame:
    where = f"humans file {path}"
    if stamp is None:
        raise LouderError(f"{where}: no such file; give the CSV of the human study (docs/how-to/anchor-to-humans.md)")
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines(keepends=True)
        # whole lines starting with # before the header are notes (the example says there that it is synthetic)
        skip = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        raw = pd.read_csv(io.StringIO("".join(lines[skip:])), dtype=str, keep_default_na=False)
    except UnicodeDecodeError:
        raise LouderError(f"{where}: not UTF-8 text; save it as UTF-8 CSV") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as e:
        raise LouderError(f"{where}: not a readable CSV ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
                          ) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    # (the tables key cases on the ids, whether the config names a scenario or group by id or by path)
    by_scenario = {load_scenario(s, scenarios).id: load_scenario(s, scenarios) for s in scenarios}
    by_group = {load_group(g, groups).id: load_group(g, groups) for g in groups}
    for need in ("respondent", "scenario", "decision"):
        if need not in raw.columns:
            raise LouderError(f"{where}: no column {need!r}; the columns are respondent, scenario, one per group id "
                              f"({', '.join(by_group)}), decision and optionally weight")
    group_columns = []
    for c in raw.columns:
        if c in FIXED:
            continue
        if c not in by_group:
            raise LouderError(f"{where}: column {c!r} is not a group of the run{_hint(c, [*by_group, *FIXED])}; "
                              "rename it to a group id, add the group to the run, or drop the column")
        group_columns.append(c)
    if not group_columns:
        raise LouderError(f"{where}: no group column; add one column per group id of the run "
                          f"({', '.join(by_group)}) holding each respondent's attribute")
    if raw.empty:
        raise LouderError(f"{where}: has no respondents (only a header)")
    rows, seen = [], set()
    for i, r in enumerate(raw.to_dict("records"), start=1):
        def bad(column: str, what: str) -> LouderError:
            return LouderError(f"{where}: row {i} (line {i + 1 + skip}), column {column}: {what}")

        rid, sid, choice = (str(r[c]).strip() for c in ("respondent", "scenario", "decision"))
        if not rid:
            raise bad("respondent", "empty; give every respondent an id")
        if sid not in by_scenario:
            raise bad("scenario", f"{sid!r} is not a scenario of the run{_hint(sid, by_scenario)}")
        if (rid, sid) in seen:
            raise bad("respondent", f"{rid!r} answers scenario {sid} twice; keep one row per respondent and scenario")
        seen.add((rid, sid))
        s = by_scenario[sid]
        if choice not in s.labels:
            raise bad("decision", f"{choice!r} is not a choice of {sid}{_hint(choice, s.labels)}; map the survey's "
                      "answer codes to the choice labels, and leave out respondents who gave none")
        weight = 1.0
        if "weight" in raw.columns:
            try:
                weight = float(r["weight"])
            except ValueError:
                raise bad("weight", f"{r['weight']!r} is not a number") from None
            if not (math.isfinite(weight) and weight > 0):
                raise bad("weight", f"{r['weight']!r}: a weight must be a positive number")
        attrs = {}
        for g in group_columns:
            value = str(r[g]).strip()
            if not value:
                continue  # not asked in this group: the respondent is paired only in the others
            if value not in by_group[g].attributes:
                raise bad(g, f"{value!r} is not an attribute of group {g}{_hint(value, by_group[g].attributes)}")
            attrs[g] = value
        if not attrs:
            raise bad(", ".join(group_columns), "empty; a respondent needs an attribute in at least one group")
        rows += [dict(respondent=rid, scenario=sid, group=g, attribute=a, decision=choice,
                      target=choice == s.target, weight=weight) for g, a in attrs.items()]
    return pd.DataFrame(rows, columns=COLUMNS).astype({"target": "bool", "weight": "float64"})


def table(config) -> pd.DataFrame | None:
    """The run's respondents in long form (``COLUMNS``), or None without ``simulation.humans``."""
    sim = config.simulation
    return None if sim.humans is None else load(sim.humans, sim.scenarios, sim.groups)


def paired(config, scenario_id: str, group_id: str) -> list[Paired]:
    """The paired agents of a case of ``scenario_id`` × ``group_id``, by respondent id (the file's
    order changes no agent: not its place, so not its balanced choice order either)."""
    t = table(config)
    if t is None:
        return []
    rows = t[(t["scenario"] == scenario_id) & (t["group"] == group_id)].sort_values("respondent", kind="stable")
    return [Paired(r, a) for r, a in zip(rows["respondent"], rows["attribute"])]
