"""``louder compare``: model against model across run folders (issue 42; docs/tutorials/compare-models.md).

Runs of different models made on different days, servers or keys live in separate folders. This
module puts them together: each folder is read as the measure that shows the comparison's tables reads
one (``presenting``: its declared inputs, the per-case selections of the decisions and the explicit probes),
each of its models becomes an **entry** named by its label — the label given (``base=runs/a``), the
model's name without one, or ``LABEL/MODEL`` for a labelled folder of several models — and the frames,
their ``model`` column relabelled, go to the same statistics as one folder's
(``louder.analysis.stats.comparison.compare``): a folder of several models and the same models in
separate folders give the same tables.

Folders combine only when their designs match (``design``): the kind of run, the scenarios and their
texts, the groups and their attributes (the manifests' ``design_sha256``; a folder written before it
was recorded: the files as louder reads them now), persona conditions, policy variants, wordings,
choice order, identity signal (and names file), reasoning levels, prompt interventions, decision
mode, paper-faithful prompts and every prompt template (``prompt_template_sha256``) — of the runs and,
where both folders have them, of the explicit probes. The first difference is one line naming it,
the two folders and the fix. The number of agents, the seeds, the models and their servers may
differ: they are what a comparison compares, or its precision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from louder.analysis.engine import registry
from louder.analysis.engine.inputs import Analysis, Settings, load
from louder.analysis.engine.declarations import Measure
from louder.analysis.stats import comparison as C
from louder.sections import recorded
from louder.errors import LouderError, did_you_mean


def presenting() -> list[Measure]:
    """The measures that declare the tables a comparison writes (``C.TABLES``), found through the registry —
    this module names no measure. Their inputs are how a folder is read; their views, findings, section
    and figures show the tables, in ``louder compare``'s report as in a run folder's."""
    found = {m.name: m for t in C.TABLES if (m := registry.owner(t)) is not None}
    if not found:
        raise LouderError(f"louder compare: no measure declares the comparison's tables ({', '.join(C.TABLES)}); "
                          "reinstall louder (its measures come with it)")
    return list(found.values())


@dataclass(frozen=True)
class Entry:
    """A run folder as given: ``LABEL=PATH`` or ``PATH`` (label None)."""

    path: Path
    label: str | None = None

    @classmethod
    def parse(cls, item: str | Path | tuple) -> Entry:
        if isinstance(item, tuple):
            return cls(Path(item[1]), str(item[0]))
        text = str(item)
        label, eq, path = text.partition("=")
        if eq and label.strip() and path and not Path(text).exists():  # a folder whose name has "=" is a folder
            return cls(Path(path), label.strip())
        return cls(Path(text))


def entries_of(items: Iterable[Any]) -> list[Entry]:
    """``LABEL=PATH`` / ``PATH`` texts, paths, (label, path) pairs or a dict label → path."""
    if isinstance(items, dict):
        items = list(items.items())
    out = [Entry.parse(i) for i in items]
    if not out:
        raise LouderError("louder compare: give at least one run folder (two to compare; one folder that holds "
                          "several models compares its models)")
    return out


# --- designs ------------------------------------------------------------------------------------

def _text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(str, v)) + "]" if v else "none"
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    return "none" if v is None else str(v)


FIX = {
    "scenario": "the scenario file changed between the runs: re-run one of them with the other's file",
    "group": "the group file changed between the runs: re-run one of them with the other's file",
    "template": "the runs were made by louder versions whose prompts differ: re-run the older folder with this louder "
                "(`louder run` with its manifest's command)",
}


def _hashes(manifest: dict, what: str) -> dict[str, str]:
    """scenario (group) id → the hash of its file: recorded in the manifest, else of the file as louder reads
    it now (a folder from before issue 42); one line when a file named there cannot be read."""
    recorded_ = (manifest.get("design_sha256") or {}).get(what)
    if recorded_ is not None:
        return dict(recorded_)
    from louder.llm.base import stable_hash
    from louder.scenarios import load_group, load_scenario

    loader = load_scenario if what == "scenarios" else load_group
    out = {}
    for ref in recorded(manifest.get("config"), f"simulation.{what}", None) or []:
        try:
            obj = loader(ref)
        except LouderError as e:
            raise LouderError(f"{manifest.get('run_id')}: its {what[:-1]} {ref} cannot be read from here ({e}); run "
                              "louder compare where the runs were made") from None
        out[obj.id] = stable_hash(obj.model_dump_json())[:16]
    return out


def design(manifest: dict, part: str) -> list[tuple[str, Any, str]]:
    """What a comparison must hold equal in one manifest (``part``: "runs" or "explicit probes"), in
    the order it is checked: (what, value, the fix when two folders differ)."""
    cfg = manifest.get("config") or {}

    def r(path: str, default=None):
        return recorded(cfg, path, default)

    same = "run both with the same {what} (each folder's manifest records its own)"
    scen, groups = _hashes(manifest, "scenarios"), _hashes(manifest, "groups")
    items: list[tuple[str, Any, str]] = [
        ("kind of run", manifest.get("louder_kind"), same),
        ("population", r("population"), same),
        ("network", r("network.generator"), same),
        ("scenarios", sorted(scen), same),
        *((f"scenario {s}'s text", h, FIX["scenario"]) for s, h in sorted(scen.items())),
        ("groups", sorted(groups), same),
        *((f"group {g}'s attributes", h, FIX["group"]) for g, h in sorted(groups.items())),
    ]
    if part == "runs":
        items += [
            ("persona conditions", sorted(r("simulation.conditions", ["contextualized"])), same),
            ("policy variants", sorted(r("simulation.variants", ["base"])), same),
            ("wordings", sorted(r("simulation.wordings", ["as_written"])), same),
            ("choice order", r("simulation.choice_order", "as_written"), same),
            ("identity signal", sorted(r("simulation.signal", ["stated"])), same),
            ("names file", r("simulation.names"), same),
            ("reasoning levels", sorted(r("simulation.reasoning", ["default"])), same),
            ("prompt interventions", sorted(r("simulation.interventions", ["none"])), same),
            ("decision mode", r("simulation.decision_mode", "sample"), same),
        ]
    items.append(("paper-faithful prompts", bool(r("paper_faithful", False)), same))
    items += [(f"prompt template {k}", v, FIX["template"])
              for k, v in sorted((manifest.get("prompt_template_sha256") or {}).items())]
    return [(f"{part}: {what}", value, fix.format(what=what.split(": ")[-1])) for what, value, fix in items]


PARTS = (("runs", "simulation"), ("explicit probes", "explicit_probes"))


def check_designs(folders: Sequence[tuple[str, Path, dict[str, dict]]]) -> list[str]:
    """Every folder's design against the first's (name, path, manifests); one ``LouderError`` line at the
    first difference. Returns notes: a part (runs, explicit probes) one folder has and another lacks."""
    notes = []
    name0, path0, m0 = folders[0]
    for name, path, m in folders[1:]:
        for part, key in PARTS:
            if not (m0.get(key) and m.get(key)):
                if m0.get(key) or m.get(key):
                    has, lacks = (name0, name) if m0.get(key) else (name, name0)
                    notes.append(f"{part}: {has} has them and {lacks} does not — its side of the comparison is empty")
                continue
            a, b = dict((w, (v, f)) for w, v, f in design(m0[key], part)), dict(
                (w, (v, f)) for w, v, f in design(m[key], part))
            for what in list(dict.fromkeys([*a, *b])):
                va, vb = a.get(what, (None, ""))[0], b.get(what, (None, ""))[0]
                if va != vb:
                    fix = (a.get(what) or b.get(what))[1]
                    part_, _, field_ = what.partition(": ")
                    raise LouderError(f"cannot compare {name} ({path}) with {name0} ({path0}): their {part_} differ in "
                                      f"{field_} — {_text(vb)} vs {_text(va)}; {fix}")
    return notes


# --- assembling the folders ---------------------------------------------------------------------

@dataclass
class Assembled:
    """The folders read as one comparison: the frames every entry contributes (``model`` = its label),
    the entries in order and where each comes from (``sources``), the groups, score mode, notes."""

    decisions: pd.DataFrame | None
    probes: pd.DataFrame | None
    labels: list[str]
    sources: pd.DataFrame
    groups: dict[str, list[str]]
    score: bool
    notes: list[str] = field(default_factory=list)


def _frames(a: Analysis) -> dict[str, pd.DataFrame | None]:
    return {i.name: a.rows(i) for m in presenting() for i in m.inputs}


def _relabel(frame: pd.DataFrame | None, model: str, label: str) -> pd.DataFrame | None:
    if frame is None:
        return None
    part = frame[frame["model"].astype(str) == model]
    return part.assign(model=label) if len(part) else None


def split_order(text: str, labels: Sequence[str]) -> list[str]:
    """``--order A,B,C`` → the labels it names: at each step the longest label the text goes on with, so
    that a model name with commas (``fake:seed=1,bias=female:0.9``) is one name; an unknown one runs to
    the next comma (and is reported as unknown)."""
    out, rest = [], text.strip()
    while rest:
        match = max((x for x in labels if rest == x or rest.startswith(x + ",")), key=len, default=None)
        match = match or rest.split(",", 1)[0]
        out.append(match.strip())
        rest = rest[len(match) + 1:].strip()
    return [x for x in out if x]


def assemble(items: Iterable[Any], order: Sequence[str] | str | None = None) -> Assembled:
    """The entries of ``items`` (``entries_of``) read, labelled, their designs checked, in ``order``
    (labels, or their text "A,B,C": ``split_order``; default: as given, a folder's models in its
    config's order)."""
    entries = entries_of(items)
    folders, rows, frames, notes = [], [], {"decisions": [], "probes": []}, []
    groups: dict[str, list[str]] = {}
    score = None
    for e in entries:
        a = load(e.path, Settings())
        views = _frames(a)
        if views.get("decisions") is not None and {"cell_id", "bucket"} <= set(views["decisions"].columns):
            raise LouderError(f"{e.path}: an archetype run's agents share model calls (clusters); louder compare reads "
                              "agents one by one — compare seed, population or network runs")
        models = C.models_of(a.manifests, views.get("decisions"), views.get("probes"))
        if not models:
            raise LouderError(f"{e.path}: no model answered here yet; run `louder run --out {e.path}` first")
        for model in models:
            label = model if e.label is None else (e.label if len(models) == 1 else f"{e.label}/{model}")
            if label in [r["label"] for r in rows]:
                raise LouderError(f"two entries are both {label!r} ({e.path} and "
                                  f"{next(r['folder'] for r in rows if r['label'] == label)}): label them, e.g. "
                                  f"base={rows[0]['folder']} new={e.path}")
            d, p = (_relabel(views.get(n), model, label) for n in ("decisions", "probes"))
            frames["decisions"].append(d)
            frames["probes"].append(p)
            rows.append(dict(label=label, model=model, folder=str(e.path),
                             decisions=0 if d is None else len(d), probes=0 if p is None else len(p)))
        folders.append((e.label or str(e.path), e.path, a.manifests))
        unchecked = [f"{n} ({f})" for n, key, f in (("decisions", "simulation", "manifest.json"),
                                                    ("probes", "explicit_probes", "probes_manifest.json"))
                     if views.get(n) is not None and not a.manifests.get(key)]
        if unchecked:
            notes.append(f"{e.path}: no manifest for its {' and '.join(unchecked)} — its design could not be checked")
        groups = {**a.groups, **groups}
        score = a.score if score is None else score
    notes += check_designs(folders)
    labels = [r["label"] for r in rows]
    if order:
        order = split_order(order, labels) if isinstance(order, str) else list(order)
        for x in order:
            if x not in labels:
                raise LouderError(f"--order: no entry is labelled {x!r}{did_you_mean(x, labels)}; the entries: "
                                  f"{', '.join(labels)}")
        if len(set(order)) < len(order):
            raise LouderError(f"--order names {next(x for x in order if order.count(x) > 1)!r} twice; name each entry "
                              "once")
        labels = order
    if len(labels) < 2:
        raise LouderError(f"louder compare: only one model ({labels[0]}) to compare; give two run folders, or one "
                          "that holds several models")

    def concat(fs: list) -> pd.DataFrame | None:
        fs = [f for f in fs if f is not None]
        return pd.concat(fs, ignore_index=True) if fs else None

    return Assembled(concat(frames["decisions"]), concat(frames["probes"]), labels, pd.DataFrame(rows), groups,
                     bool(score), notes)


def compare(items: Iterable[Any], order: Sequence[str] | str | None = None, bootstrap: int = 10_000, seed: int = 0,
            margin: float = C.MARGIN) -> tuple[Assembled, C.Comparison]:
    """The folders of ``items`` assembled and compared (``louder.analysis.stats.comparison.compare``); with
    ``order`` the trend along it too."""
    settings = Settings.of(bootstrap, seed)
    if not 0 < margin < 1:
        raise LouderError(f"--margin {margin}: the margin is a DPD difference in (0, 1), e.g. 0.1")
    x = assemble(items, order)
    c = C.compare(x.decisions, x.probes, x.groups, x.labels, score=x.score, B=settings.bootstrap, seed=settings.seed,
                  margin=margin, ordered=bool(order))
    if c.rows.empty:
        raise LouderError(f"louder compare: {', '.join(x.labels)} share no case (the same kind, condition, scenario "
                          "and group) to compare; give folders of the same design, with agents (`louder run`) or the "
                          "explicit probe (`louder probe explicit`) in each")
    return x, c


# --- what a comparison writes -------------------------------------------------------------------

def records(df: pd.DataFrame | None) -> list[dict]:
    return [] if df is None else json.loads(df.to_json(orient="records"))  # NaN → null: strict JSON


def gate_rule(text: str | None) -> tuple[str, float | None] | None:
    """``worse`` or ``worse:MARGIN`` (``--fail-if``) → (the rule as given, the margin or None)."""
    if text is None:
        return None
    head, _, m = text.partition(":")
    if head != "worse":
        raise LouderError(f"--fail-if {text}: the gate is worse or worse:MARGIN (e.g. --fail-if worse:0.05)")
    if not m:
        return text, None
    try:
        margin = float(m)
    except ValueError:
        raise LouderError(f"--fail-if {text}: {m} is not a number; write e.g. --fail-if worse:0.05") from None
    if not 0 <= margin < 1:
        raise LouderError(f"--fail-if {text}: the margin is a DPD difference in [0, 1), e.g. worse:0.05")
    return text, margin


def gate_line(r) -> str:
    """One failing case of the gate, as printed and written."""
    where = " × ".join(str(v) for v in (r["scenario"], r["group"]))
    what = "actions (what its agents do)" if r["side"] == "actions" else "words (what it says)"
    cond = f", {r['condition']}" if isinstance(r["condition"], str) and r["condition"] else ""
    return (f"worse: {r['model']} is more biased than {r['reference']} in {what}, {where}{cond}: ΔDPD "
            f"{r['delta']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}], p_holm {r['p_holm']:.4f}")


def summary(x: Assembled, c: C.Comparison, settings: dict, gate: dict | None = None) -> dict:
    """The machine-readable summary (comparison.json): the entries, the settings, each table's rows and the
    gate's verdict."""
    return {"louder_kind": "comparison", "entries": records(x.sources), "order": x.labels, "settings": settings,
            "notes": x.notes, **{name: records(t) for name, t in c.tables.items()}, "gate": gate}


def presentation(x: Assembled, c: C.Comparison, settings: dict,
                 out: str | Path = ".") -> tuple[Analysis, list[Measure]]:
    """The comparison as the measures that show its tables see it (``presenting``): an analysis whose tables
    are the comparison's and whose options are the comparison's settings of the same name (``--order``,
    ``--margin``), for the options those measures declare."""
    measures = presenting()
    given = {"order": tuple(x.labels) if settings.get("order") else (), "margin": settings["margin"]}
    options = {m.name: {o.name: given[o.name] for o in m.options if o.name in given} for m in measures}
    return Analysis(Path(out), Settings.of(settings["bootstrap"], settings["seed"], options),
                    tables=dict(c.tables)), measures


def render(x: Assembled, c: C.Comparison, settings: dict, gate: dict | None = None, out: str | Path = ".") -> str:
    """The comparison's self-contained HTML page (``louder.analysis.report.comparison``: the run report's page
    machinery, findings first)."""
    from louder.analysis.report.comparison import render as page

    a, measures = presentation(x, c, settings, out)
    return page(x.labels, x.sources, x.notes, a, measures, settings, gate)


def write(out: str | Path, x: Assembled, c: C.Comparison, settings: dict, gate: dict | None = None,
          report: bool = True) -> list[Path]:
    """Every table as CSV, comparison.json and (``report``) report/index.html into ``out``."""
    from louder.io import write_csv, write_json, write_text

    out = Path(out)
    paths = []
    for name, t in c.tables.items():
        write_csv(t, out / f"{name}.csv")
        paths.append(out / f"{name}.csv")
    write_json(summary(x, c, settings, gate), out / "comparison.json")
    paths.append(out / "comparison.json")
    if report:
        write_text(render(x, c, settings, gate, out), out / "report" / "index.html")
        paths.append(out / "report" / "index.html")
    return paths
