"""A human study of the run's scenarios (``simulation.humans``, ``louder run --humans FILE``; issue 34,
docs/how-to/anchor-to-humans.md): its respondents, read and checked, and the paired agents they get;
with ``simulation.ground`` (``--ground COL,COL|all``; issue 44, docs/how-to/check-agents-against-humans.md)
also each respondent's agent grounded in their profile, and with ``simulation.unlabelled`` the agents
grounded in profiles without a human answer.

The file is a CSV with one row per respondent and scenario: ``respondent`` (an id), ``scenario`` (a
scenario id of the run), one column per group id of the run holding the respondent's attribute in that
group (empty: not asked), ``decision`` (a choice label of the scenario), an optional ``weight`` (a
survey weight, > 0), an optional ``retest`` (the respondent's choice when asked the same scenario
again; empty: not asked again) and any number of **profile columns** (age, household, past behaviour,
any survey answer); lines starting with ``#`` before the header are notes. A bad file is refused in
one line naming its row and column, before any model is called. A column that looks like a misspelt
group or fixed column ("gender" beside the group gender_identity) is refused unless ``ground`` names it.

In each case (model × condition × scenario × group) a respondent with an attribute in the case's group
gets a **paired agent**: an agent of that attribute like the case's other agents — its persona written
and its decision asked with the same prompts — whose answer is the respondent's paired prediction in
the anchoring. Its identity (seed, cache key) is the respondent's id, so a resumed run, a larger
``agents`` or a reordered file asks nothing twice.

With ``ground`` the respondent also gets a **grounded agent**: its persona is written from the
respondent's profile — every group attribute the respondent has and the named profile columns, in the
order of the file — put into the persona prompt's demographic slot through the template ``grounded``
of ``louder/data/prompts.yaml`` (a profile value left empty is left out of that respondent's profile).
The persona is checked like every persona and the decision asked like every decision; only what the
persona is written from differs. The attribute-only paired agent stays, so the two kinds of agent are
compared on the same respondents.

With ``unlabelled`` (a CSV of profiles without a human answer: a population register or the larger
sample the respondents were drawn from — ``respondent``, the group columns, the ground columns, an
optional ``scenario`` and ``weight``; other columns are not read) every profile gets a grounded agent
in each case of its scenario (every scenario of the run without a ``scenario`` column) and group:
prediction-powered inference's unlabelled set for the grounded agents. A profile that is a respondent
of the study in that scenario is left out there (it is labelled).
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

FIXED = ("respondent", "scenario", "decision", "weight", "retest")
# humans.parquet (written beside decisions.parquet): one row per respondent × scenario × group it has an
# attribute in
COLUMNS = ["respondent", "scenario", "group", "attribute", "decision", "target", "weight", "retest"]
# unlabelled.parquet: one row per unlabelled profile × scenario × group it has an attribute in
UNLABELLED_COLUMNS = ["respondent", "scenario", "group", "attribute", "weight"]
ALL = "all"  # ``ground: [all]``: every profile column of the file
# the kinds of agent a human study adds (decisions.parquet's ``grounding`` column, in runs with ``ground``)
ATTRIBUTE, GROUNDED, UNLABELLED = "attribute", "grounded", "unlabelled"


@dataclass(frozen=True)
class Paired:
    """An agent that stands for a person of the study in one case: the person's id and attribute in
    the case's group; ``grounding``: None (a run without ``ground``: the attribute-only paired agent),
    ``attribute``, ``grounded`` (the respondent's grounded agent) or ``unlabelled`` (a profile without
    a human answer); ``profile``: what a grounded persona is written from, (field, value) in order."""

    respondent: str
    attribute: str
    grounding: str | None = None
    profile: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Study:
    """A read study: its respondents in long form (``COLUMNS``) and each respondent's profile."""

    table: pd.DataFrame
    profiles: dict[str, tuple[tuple[str, str], ...]]
    ground: tuple[str, ...]  # the profile columns grounded on (``all`` resolved)


@dataclass(frozen=True)
class Profiles:
    """A read file of unlabelled profiles: long form (``UNLABELLED_COLUMNS``) and each id's profile."""

    table: pd.DataFrame
    profiles: dict[str, tuple[tuple[str, str], ...]]


def _hint(value: str, options) -> str:
    options = list(options)
    hits = difflib.get_close_matches(value, options, n=1, cutoff=0.5)
    if not hits:  # a different case ("female") is the likeliest slip
        hits = [o for o in options if o.lower() == value.lower()]
    return f"; did you mean {hits[0]}?" if hits else f" (one of {', '.join(options)})"


def _misspelt(column: str, names) -> str | None:
    """The group or fixed column that ``column`` most likely misspells ("gender" → gender_identity,
    "Weight", "decison"), or None: close by difflib (≥ 0.7), equal but for case, or a prefix of at
    least three letters one of the other."""
    c = column.lower()
    for n in names:
        if c == n.lower() or (len(c) >= 3 and len(n) >= 3 and (n.lower().startswith(c) or c.startswith(n.lower()))):
            return n
    hits = difflib.get_close_matches(column, list(names), n=1, cutoff=0.7)
    return hits[0] if hits else None


def _read_csv(path: str, where: str) -> tuple[pd.DataFrame, int]:
    """The CSV as strings (``#`` lines before the header skipped) and how many lines were skipped."""
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
    return raw, skip


def _weight(r: dict, bad) -> float:
    if "weight" not in r:
        return 1.0
    try:
        weight = float(r["weight"])
    except ValueError:
        raise bad("weight", f"{r['weight']!r} is not a number") from None
    if not (math.isfinite(weight) and weight > 0):
        raise bad("weight", f"{r['weight']!r}: a weight must be a positive number")
    return weight


def _attributes(r: dict, group_columns: list[str], by_group: dict, bad, who: str = "respondent") -> dict[str, str]:
    attrs = {}
    for g in group_columns:
        value = str(r[g]).strip()
        if not value:
            continue  # not asked in this group: the person stands only in the others
        if value not in by_group[g].attributes:
            raise bad(g, f"{value!r} is not an attribute of group {g}{_hint(value, by_group[g].attributes)}")
        attrs[g] = value
    if not attrs:
        raise bad(", ".join(group_columns), f"empty; a {who} needs an attribute in at least one group")
    return attrs


def _never_empty(raw: pd.DataFrame, columns, where: str, skip: int) -> None:
    """A profile column grounded on must say something of someone: one empty in every row is refused."""
    for c in columns:
        if not raw[c].astype(str).str.strip().any():
            raise LouderError(f"{where}: rows 1–{len(raw)} (lines {skip + 2}–{len(raw) + skip + 1}), column {c}: "
                              "empty in every row; fill it in or leave it out of simulation.ground (--ground)")


def _profile(r: dict, attrs: dict[str, str], ground: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The person's profile: the group attributes, then the ground columns that are not empty."""
    values = [(c, str(r[c]).strip()) for c in ground]
    return tuple(attrs.items()) + tuple((c, v) for c, v in values if v)


def load(path: str | Path, scenarios: list[str], groups: list[str], ground: list[str] | tuple[str, ...] = ()
         ) -> pd.DataFrame:
    """The respondents of ``path`` in long form (``COLUMNS``, scenarios and groups by id), checked
    against the run's ``scenarios`` and ``groups`` (ids or paths, as the config gives them) and the
    profile columns ``ground`` (``["all"]``: every other column). Raises LouderError in one line naming
    the row and column of the first problem."""
    return study(path, scenarios, groups, ground).table.copy()


def study(path: str | Path, scenarios: list[str], groups: list[str], ground: list[str] | tuple[str, ...] = ()
          ) -> Study:
    """``load``'s study with each respondent's profile (cached per file version)."""
    p = Path(path)
    stamp = p.stat().st_mtime_ns if p.is_file() else None
    return _load(str(p), stamp, tuple(scenarios), tuple(groups), tuple(ground or ()))


def _groups(groups: tuple[str, ...]) -> dict:
    return {load_group(g, groups).id: load_group(g, groups) for g in groups}


@lru_cache(maxsize=8)
def _load(path: str, stamp, scenarios: tuple[str, ...], groups: tuple[str, ...], ground: tuple[str, ...]) -> Study:
    where = f"humans file {path}"
    if stamp is None:
        raise LouderError(f"{where}: no such file; give the CSV of the human study (docs/how-to/anchor-to-humans.md)")
    raw, skip = _read_csv(path, where)
    # (the tables key cases on the ids, whether the config names a scenario or group by id or by path)
    by_scenario = {load_scenario(s, scenarios).id: load_scenario(s, scenarios) for s in scenarios}
    by_group = _groups(groups)
    for need in ("respondent", "scenario", "decision"):
        if need not in raw.columns:
            raise LouderError(f"{where}: no column {need!r}; the columns are respondent, scenario, one per group id "
                              f"({', '.join(by_group)}), decision and optionally weight, retest and profile columns")
    named = [c for c in ground if c != ALL]
    for c in named:
        if c in FIXED:
            raise LouderError(f"{where}: header (line {skip + 1}), column {c}: simulation.ground (--ground) names it, "
                              f"but it is the study's own ({', '.join(FIXED)}), not a profile; leave it out of --ground")
        if c not in raw.columns:
            raise LouderError(f"{where}: header (line {skip + 1}), column {c}: no such column, but simulation.ground "
                              f"(--ground) names it{_hint(c, [x for x in raw.columns if x not in FIXED])}")
    group_columns, profile_columns = [], []
    for c in raw.columns:
        if c in FIXED:
            continue
        if c in by_group:
            group_columns.append(c)
            continue
        slip = None if c in named else _misspelt(c, [*by_group, *FIXED])
        if slip is not None:
            raise LouderError(f"{where}: column {c!r} is not a group of the run{_hint(c, [*by_group, *FIXED])}; "
                              "rename it to a group id, add the group to the run, name it in simulation.ground "
                              "(--ground) if it is a profile column, or drop the column")
        profile_columns.append(c)
    if not group_columns:
        raise LouderError(f"{where}: no group column; add one column per group id of the run "
                          f"({', '.join(by_group)}) holding each respondent's attribute")
    if raw.empty:
        raise LouderError(f"{where}: has no respondents (only a header)")
    if ALL in ground and not profile_columns:
        raise LouderError(f"{where}: simulation.ground is `all`, but the file has no profile column besides "
                          f"respondent, scenario, the groups ({', '.join(group_columns)}), decision, weight and retest")
    resolved = tuple(profile_columns) if ALL in ground else tuple(c for c in dict.fromkeys(named) if c not in by_group)
    _never_empty(raw, resolved, where, skip)
    rows, seen, profiles, first = [], set(), {}, {}
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
        if not choice:
            raise bad("decision", f"empty: respondent {rid!r} gave no answer; leave out respondents who gave none "
                      "(and say how many in your write-up)")
        if choice not in s.labels:
            raise bad("decision", f"{choice!r} is not a choice of {sid}{_hint(choice, s.labels)}; map the survey's "
                      "answer codes to the choice labels, and leave out respondents who gave none")
        retest = str(r.get("retest", "")).strip() or None
        if retest is not None and retest not in s.labels:
            raise bad("retest", f"{retest!r} is not a choice of {sid}{_hint(retest, s.labels)}; leave it empty for "
                      "respondents who were not asked again")
        weight = _weight(r, bad)
        attrs = _attributes(r, group_columns, by_group, bad)
        profile = _profile(r, attrs, resolved)
        if rid in profiles and profiles[rid] != profile:  # one person, one profile, whatever the scenario
            other = dict(profiles[rid])
            mine = dict(profile)
            column = next(c for c in [*mine, *other] if mine.get(c) != other.get(c))
            raise bad(column, f"respondent {rid!r} has another profile in row {first[rid]}; a respondent's attributes "
                      "and profile are the same in every row")
        profiles.setdefault(rid, profile)
        first.setdefault(rid, i)
        rows += [dict(respondent=rid, scenario=sid, group=g, attribute=a, decision=choice,
                      target=choice == s.target, weight=weight, retest=retest) for g, a in attrs.items()]
    table = pd.DataFrame(rows, columns=COLUMNS).astype({"target": "bool", "weight": "float64", "retest": "string"})
    return Study(table, profiles, resolved)


def load_unlabelled(path: str | Path, scenarios: list[str], groups: list[str], ground: tuple[str, ...],
                    labelled: pd.DataFrame | None = None) -> Profiles:
    """The unlabelled profiles of ``path`` (module docstring) in long form (``UNLABELLED_COLUMNS``) with
    each id's profile, checked like the study: ``ground`` the study's profile columns (resolved), which
    the file must have. ``labelled``: the study (``COLUMNS``); a profile that is one of its respondents
    in a scenario is left out of that scenario."""
    p = Path(path)
    stamp = p.stat().st_mtime_ns if p.is_file() else None
    out = _load_unlabelled(str(p), stamp, tuple(scenarios), tuple(groups), tuple(ground))
    if labelled is None or out.table.empty:
        return out
    pairs = set(zip(labelled["respondent"], labelled["scenario"]))
    keep = [(r, s) not in pairs for r, s in zip(out.table["respondent"], out.table["scenario"])]
    return Profiles(out.table[keep].reset_index(drop=True), out.profiles)


@lru_cache(maxsize=8)
def _load_unlabelled(path: str, stamp, scenarios: tuple[str, ...], groups: tuple[str, ...],
                     ground: tuple[str, ...]) -> Profiles:
    where = f"unlabelled file {path}"
    if stamp is None:
        raise LouderError(f"{where}: no such file; give a CSV of profiles without a human answer "
                          "(docs/how-to/check-agents-against-humans.md)")
    raw, skip = _read_csv(path, where)
    by_scenario = {load_scenario(s, scenarios).id: load_scenario(s, scenarios) for s in scenarios}
    by_group = _groups(groups)
    if "respondent" not in raw.columns:
        raise LouderError(f"{where}: no column 'respondent'; give every profile an id in a column respondent")
    for c in ground:
        if c not in raw.columns:
            raise LouderError(f"{where}: header (line {skip + 1}), column {c}: no such column, but the study's "
                              f"agents are grounded on it (simulation.ground){_hint(c, list(raw.columns))}")
    group_columns = [c for c in raw.columns if c in by_group]
    if not group_columns:
        raise LouderError(f"{where}: no group column; add one column per group id of the run "
                          f"({', '.join(by_group)}) holding each person's attribute")
    if raw.empty:
        raise LouderError(f"{where}: has no profiles (only a header)")
    _never_empty(raw, ground, where, skip)
    rows, profiles = [], {}
    for i, r in enumerate(raw.to_dict("records"), start=1):
        def bad(column: str, what: str) -> LouderError:
            return LouderError(f"{where}: row {i} (line {i + 1 + skip}), column {column}: {what}")

        rid = str(r["respondent"]).strip()
        if not rid:
            raise bad("respondent", "empty; give every profile an id")
        if rid in profiles:
            raise bad("respondent", f"{rid!r} is listed twice; keep one row per person")
        sid = str(r.get("scenario", "")).strip()
        if sid and sid not in by_scenario:
            raise bad("scenario", f"{sid!r} is not a scenario of the run{_hint(sid, by_scenario)}; leave it empty "
                      "for a person of every scenario")
        weight = _weight(r, bad)
        attrs = _attributes(r, group_columns, by_group, bad, "profile")
        profiles[rid] = _profile(r, attrs, ground)
        rows += [dict(respondent=rid, scenario=s, group=g, attribute=a, weight=weight)
                 for s in ([sid] if sid else by_scenario) for g, a in attrs.items()]
    return Profiles(pd.DataFrame(rows, columns=UNLABELLED_COLUMNS).astype({"weight": "float64"}), profiles)


def table(config) -> pd.DataFrame | None:
    """The run's respondents in long form (``COLUMNS``), or None without ``simulation.humans``."""
    sim = config.simulation
    return None if sim.humans is None else study(sim.humans, sim.scenarios, sim.groups, sim.ground or ()).table


def unlabelled_table(config) -> pd.DataFrame | None:
    """The run's unlabelled profiles in long form (``UNLABELLED_COLUMNS``), or None without them."""
    sim = config.simulation
    if sim.humans is None or sim.unlabelled is None:
        return None
    s = study(sim.humans, sim.scenarios, sim.groups, sim.ground or ())
    return load_unlabelled(sim.unlabelled, sim.scenarios, sim.groups, s.ground, s.table).table


def paired(config, scenario_id: str, group_id: str) -> list[Paired]:
    """The agents of a case of ``scenario_id`` × ``group_id`` that stand for people of the study, by
    id (the file's order changes no agent: not its place, so not its balanced choice order either):
    the respondents' attribute-only paired agents; with ``ground`` then their grounded agents; with
    ``unlabelled`` then the unlabelled profiles' grounded agents."""
    sim = config.simulation
    if sim.humans is None:
        return []
    s = study(sim.humans, sim.scenarios, sim.groups, sim.ground or ())
    t = s.table
    rows = t[(t["scenario"] == scenario_id) & (t["group"] == group_id)].sort_values("respondent", kind="stable")
    grounded = bool(sim.ground)
    out = [Paired(r, a, ATTRIBUTE if grounded else None) for r, a in zip(rows["respondent"], rows["attribute"])]
    if not grounded:
        return out
    out += [Paired(r, a, GROUNDED, s.profiles[r]) for r, a in zip(rows["respondent"], rows["attribute"])]
    if sim.unlabelled is not None:
        u = load_unlabelled(sim.unlabelled, sim.scenarios, sim.groups, s.ground, t)
        ut = u.table
        ut = ut[(ut["scenario"] == scenario_id) & (ut["group"] == group_id)].sort_values("respondent", kind="stable")
        out += [Paired(r, a, UNLABELLED, u.profiles[r]) for r, a in zip(ut["respondent"], ut["attribute"])]
    return out


def description(profile: tuple[tuple[str, str], ...], prompts) -> str:
    """A profile in words, through the template ``grounded`` of prompts.yaml: what a grounded agent's
    persona prompt names in its demographic slot (a group by its id, a column by its name, each with
    underscores read as spaces)."""
    from louder.prompts import render

    doc = prompts.doc["grounded"]
    fields = [render(doc["field"], name=name.replace("_", " "), value=value) for name, value in profile]
    return render(doc["template"], profile=doc["separator"].join(fields))
