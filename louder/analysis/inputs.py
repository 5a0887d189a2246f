"""The run folder as the measures read it: its inputs (``Analysis``, the names of
``registry.INPUTS``), what is missing from it, and the settings of an analysis. ``load`` reads a
folder once; the measures (``louder.analysis.registry``) then add their tables to the same object."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from louder.analysis import keys
from louder.config import recorded
from louder.errors import LouderError
from louder.scenarios import load_group
from louder.status import no_valid_notes

DEFAULT_BOOTSTRAP = 10_000
SETTINGS = ("bootstrap", "seed", "predictions", "patterns", "observed", "adjust", "random_slopes",
            "reference", "control")  # what analysis.json records


@dataclass(frozen=True)
class Settings:
    """What an analysis depends on beside the data: bootstrap draws, seed, the files given with
    ``--predictions``, ``--patterns`` and ``--observed`` (absolute paths; None: louder's own),
    ``--adjust`` (parity | observed: the policy sensitivity of calibrated agents; None: none),
    ``--random-slopes`` and ``--reference GROUP=ATTRIBUTE`` (discrimination.csv: discrim-eval's random
    attribute slopes per scenario; the attribute a group's coefficients are against) and ``--control``
    (conditional.csv: the groups each other group's DPD is read within, in order)."""

    bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = 0
    predictions: str | None = None
    patterns: str | None = None
    observed: str | None = None
    adjust: str | None = None
    random_slopes: bool = False
    reference: tuple[str, ...] = ()  # "group=attribute"
    control: tuple[str, ...] = ()

    @classmethod
    def of(cls, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, predictions=None, patterns=None,
           observed=None, adjust=None, random_slopes: bool = False, reference=(), control=()) -> Settings:
        def path(v):
            return None if v is None else str(Path(v).resolve())

        for r in reference or ():
            if not re.fullmatch(r"[^=]+=[^=]+", r):
                raise LouderError(f"--reference {r}: write GROUP=ATTRIBUTE, e.g. --reference gender_identity=Female")
        return cls(int(bootstrap), int(seed), path(predictions), path(patterns), path(observed), adjust,
                   random_slopes=bool(random_slopes), reference=tuple(dict.fromkeys(reference or ())),
                   control=tuple(dict.fromkeys(control or ())))

    def recorded(self) -> dict:
        """The settings as analysis.json records them (JSON: the controls as a list)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass
class Analysis:
    """The run folder's inputs as the measures read them, and the tables they built (by CSV stem)."""

    run_dir: Path
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    manifests: dict[str, dict] = field(default_factory=dict)
    decisions: pd.DataFrame | None = None  # the case view (``registry.INPUTS``)
    probes: pd.DataFrame | None = None
    personas: pd.DataFrame | None = None
    association: pd.DataFrame | None = None
    decision_test: pd.DataFrame | None = None
    seconds: float = 0.0
    rounds: pd.DataFrame | None = None  # network run: decisions of every round (``decisions`` is round 0)
    control: pd.DataFrame | None = None  # network run: the no-LLM control's rows
    no_influence: pd.DataFrame | None = None  # network run: the no-influence arm's rows
    population: pd.DataFrame | None = None  # population runs (issue 11): the drawn agents
    twins: pd.DataFrame | None = None  # … and the counterfactual twins
    sequential: tuple[pd.DataFrame, pd.DataFrame] | None = None  # issue 20: (sequential.csv, sequential_waves.csv)
    presented: pd.DataFrame | None = None  # issue 25: every wording, order and signal
    beliefs: pd.DataFrame | None = None  # issue 21: `louder probe beliefs`
    levels: pd.DataFrame | None = None  # issue 30: every reasoning level
    interventions: pd.DataFrame | None = None  # issue 33: every prompt intervention (one wording, one level)
    intervention_probes: pd.DataFrame | None = None  # issue 33: the explicit answers under every intervention
    every_intervention: pd.DataFrame | None = None  # every intervention, wording and level: the report's accounting
    weat: pd.DataFrame | None = None  # issue 14: `louder probe weat`
    humans: pd.DataFrame | None = None  # issue 34: a human study's respondents (humans.parquet)
    paired: pd.DataFrame | None = None  # … and the case view with their paired agents (the other inputs leave them out)
    groups: dict[str, list[str]] = field(default_factory=dict)  # group id → its attributes
    score: bool = False  # decision_mode: score
    settings: Settings = field(default_factory=Settings)
    cached: bool = False  # the tables were read from the CSVs an earlier analysis of this data state wrote
    state: dict[str, str] = field(default_factory=dict)  # the data state it is of (``data_state``)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise LouderError(f"{path}: cannot be read as JSON ({e}); re-run the command that wrote it") from None


def _read_parquet(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as e:  # pyarrow raises several types for damaged files
        raise LouderError(f"{path}: not a readable Parquet file ({e}); re-run the command that wrote it") from None


def group_refs(manifest: dict | None) -> list[str]:
    """The group files a manifest's config names (``simulation.groups``; manifests of any version)."""
    return list(recorded((manifest or {}).get("config"), "simulation.groups", None) or [])


def _group_attributes(manifests: dict[str, dict], frames: list[pd.DataFrame]) -> dict[str, list[str]]:
    """group id → attributes: from the group files the run used, else from the data itself."""
    out: dict[str, list[str]] = {}
    for m in manifests.values():
        for ref in group_refs(m):
            try:
                g = load_group(ref)
            except LouderError:
                continue  # a user group file that has moved: fall back to the attributes seen
            out[g.id] = list(g.attributes)
    for f in frames:
        for gid, g in f[["group", "attribute"]].drop_duplicates().groupby("group"):  # not the whole frame per group
            if gid not in out:
                out[gid] = sorted(g["attribute"].dropna().unique())
    return out


MANIFESTS = (("simulation", "manifest.json"), ("explicit_probes", "probes_manifest.json"),
             ("beliefs", "beliefs_manifest.json"), ("association_test", "association_manifest.json"),
             ("decision_test", "decision_manifest.json"))
SIBLINGS = ("association.parquet", "decision_test.parquet", "weat.parquet", "beliefs.parquet")


def _sequential(run_dir: Path, manifest: dict | None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(sequential.csv, sequential_waves.csv) when the run folder's manifest says it was a sequential
    run (a later fixed run in the same folder leaves the old files behind; the manifest decides)."""
    if not manifest or "sequential" not in manifest:
        return None
    try:
        return pd.read_csv(run_dir / "sequential.csv"), pd.read_csv(run_dir / "sequential_waves.csv")
    except FileNotFoundError:
        return None


def _usual(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """``frame`` (decisions or personas) without a human study's paired agents (rows with a ``respondent``)."""
    if frame is None or "respondent" not in frame.columns:
        return frame
    return frame[frame["respondent"].isna()].reset_index(drop=True)


def load(run_dir: str | Path, settings: Settings | None = None) -> Analysis:
    """The run folder's inputs (``registry.INPUTS``) and what is missing from it; no table yet."""
    run = Path(run_dir)
    if not run.is_dir():
        raise LouderError(f"run folder {run} does not exist; give the --out folder of `louder run`")
    from louder.analysis import reasoning as RS  # the statistics (scipy) only when a folder is read
    from louder.analysis import robustness as R

    a = Analysis(run, settings=settings or Settings())
    decisions = _read_parquet(run / "decisions.parquet")
    a.probes = _read_parquet(run / "probes.parquet")
    a.personas = _read_parquet(run / "personas.parquet")
    a.manifests = {k: m for k, f in MANIFESTS if (m := read_json(run / f))}
    if decisions is None:
        # a cache and no probe's manifest: only an agent run can have started it (a probe's cache is not one)
        started = (run / "cache.sqlite").exists() and not any(
            (run / f).exists() for k, f in MANIFESTS if k != "simulation")
        a.missing.append("simulation: no decisions.parquet" + (
            " — a run was started here but has not finished; run the same `louder run` command again to complete it"
            if started else " — run `louder run --out RUN_DIR` to add implicit-bias results"))
    if a.probes is None:
        a.missing.append("explicit probes: no probes.parquet — run `louder probe explicit --out RUN_DIR` "
                         "to add the explicit (question-answer) contrast")
    if decisions is None and a.probes is None and not any((run / f).exists() for f in SIBLINGS):
        raise LouderError(f"run folder {run} has neither decisions.parquet nor probes.parquet; "
                          "run `louder run --out DIR` and/or `louder probe explicit --out DIR` first")
    simulation = a.manifests.get("simulation")
    a.sequential = _sequential(run, simulation)
    a.score = recorded((simulation or {}).get("config"), "simulation.decision_mode") == "score"
    decisions = keys.variants_as_scenarios(decisions)
    a.beliefs = _read_parquet(run / "beliefs.parquet")
    a.groups = _group_attributes(a.manifests, [f for f in (decisions, a.probes, a.beliefs) if f is not None])
    if decisions is not None and "round" in decisions.columns:
        # a network run: the case tables read round 0 — the independent decisions, comparable with a run
        # without a network; the rounds get their own tables
        a.rounds, decisions = decisions, decisions[decisions["round"] == 0].reset_index(drop=True)
        a.control = _read_parquet(run / "control.parquet")
        if a.control is None:
            a.missing.append("network: no control.parquet — the rule-based reference cannot be drawn; re-run the "
                             "same `louder run` command to write it")
        # a policy variant reads as its own scenario in the control and arm too, so each variant meets its own
        a.control = keys.variants_as_scenarios(a.control)
        a.no_influence = keys.variants_as_scenarios(_read_parquet(run / "no_influence.parquet"))
    # issue 33: interventions.csv reads every prompt intervention (one wording, the reference reasoning level);
    # every other table the decisions and explicit answers under none
    from louder.analysis import interventions as IV

    if IV.varies(decisions):
        a.every_intervention, a.interventions = decisions, R.case_view(RS.level_view(decisions))
    if IV.varies(a.probes):
        a.intervention_probes = a.probes
    decisions, a.probes = IV.reference_view(decisions), IV.reference_view(a.probes)
    # issue 30: reasoning.csv reads every reasoning level (of the reference wording); every other table the
    # reference level. Issue 25: robustness.csv reads every wording, order and signal; the per-case tables
    # one wording, with the names signal as its own condition (docs/robustness.md)
    a.levels = decisions
    a.presented = RS.level_view(decisions)
    a.decisions = R.case_view(a.presented)
    # issue 34: a human study's paired agents are read by the anchored measure only (``paired``); every other
    # input is the usual agents'
    a.humans = _read_parquet(run / "humans.parquet")
    if a.humans is not None:
        a.paired = a.decisions
    a.levels, a.presented, a.decisions, a.personas = (_usual(f) for f in (a.levels, a.presented, a.decisions,
                                                                           a.personas))
    a.association = _read_parquet(run / "association.parquet")
    a.decision_test = _read_parquet(run / "decision_test.parquet")
    a.weat = _read_parquet(run / "weat.parquet")
    a.population = _read_parquet(run / "population.parquet")
    # twins decide in every arm, as their agents do: the tables read the same wording and level
    a.twins = R.case_view(RS.level_view(IV.reference_view(_read_parquet(run / "twins.parquet"))))
    a.missing.extend(no_valid_notes(a.manifests))  # issue 32: a kind of run with no valid answer says why
    return a
