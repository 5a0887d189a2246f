"""``louder analyze RUN_DIR``: read what the run folder holds, compute every table, write CSVs."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from louder.analysis import anchored as A
from louder.analysis import cases as C
from louder.analysis import sequential_tables as ST
from louder.analysis import reasoning as RS
from louder.analysis import robustness as R
from louder.analysis.bai_stats import association_decision_link, association_stats, decision_stats
from louder.analysis.choices import choice_rates, independence_table
from louder.analysis.network_tables import NETWORK_TABLES, network_tables
from louder.analysis.prob_dpd import prob_dpd_table
from louder.analysis.weat import correlation as weat_correlation
from louder.analysis.compare import ablation, contrast, contrast_cases, directions, load_predictions
from louder.analysis.rationales import distinctive_words, load_patterns, pattern_counts, thinking_mentions
from louder.config import recorded
from louder.errors import LouderError
from louder.io import write_csv, write_json
from louder.runfolder import check_generations, check_unchanged
from louder.scenarios import load_group
from louder.status import no_valid_notes

TABLES = ("cases", "attributes", "choices", "contrast", "contrast_cases", "ablation", "directions", "rationales")
SIBLING_TABLES = ("association_stats", "decision_stats", "association_decision_link", "weat",
                  "weat_association_correlation")


@dataclass
class Analysis:
    run_dir: Path
    tables: dict[str, pd.DataFrame]
    missing: list[str] = field(default_factory=list)
    manifests: dict[str, dict] = field(default_factory=dict)
    decisions: pd.DataFrame | None = None
    probes: pd.DataFrame | None = None
    personas: pd.DataFrame | None = None
    association: pd.DataFrame | None = None
    decision_test: pd.DataFrame | None = None
    seconds: float = 0.0
    rounds: pd.DataFrame | None = None   # network run: decisions of every round (``decisions`` is round 0)
    control: pd.DataFrame | None = None  # network run: the no-LLM control's rows
    no_influence: pd.DataFrame | None = None  # network run: the no-influence arm's rows
    # population runs (issue 11): the drawn agents and the counterfactual twins
    population: pd.DataFrame | None = None
    twins: pd.DataFrame | None = None
    # sequential runs (issue 20): (sequential.csv, sequential_waves.csv)
    sequential: tuple[pd.DataFrame, pd.DataFrame] | None = None
    presented: pd.DataFrame | None = None  # issue 25: every wording, order and signal (``decisions``: the case view)
    beliefs: pd.DataFrame | None = None  # issue 21: `louder probe beliefs`
    levels: pd.DataFrame | None = None  # issue 30: every reasoning level (``presented``: the reference level)
    humans: pd.DataFrame | None = None  # issue 34: humans.parquet, the respondents of a human study


def _read_json(path: Path) -> dict | None:
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


def _group_attributes(manifests: dict[str, dict], frames: list[pd.DataFrame]) -> dict[str, list[str]]:
    """group id → attributes: from the group files the run used, else from the data itself."""
    out: dict[str, list[str]] = {}
    for m in manifests.values():
        for ref in recorded(m.get("config"), "simulation.groups", []):  # manifests of any version
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


def load_run(run_dir: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None, dict, list[str]]:
    if not run_dir.is_dir():
        raise LouderError(f"run folder {run_dir} does not exist; give the --out folder of `louder run`")
    decisions = _read_parquet(run_dir / "decisions.parquet")
    probes = _read_parquet(run_dir / "probes.parquet")
    personas = _read_parquet(run_dir / "personas.parquet")
    manifests = {k: m for k, m in (("simulation", _read_json(run_dir / "manifest.json")),
                                   ("explicit_probes", _read_json(run_dir / "probes_manifest.json"))) if m}
    missing = []
    if decisions is None:
        # a cache and no probe's manifest: only an agent run can have started it (a probe's cache is not one)
        started = (run_dir / "cache.sqlite").exists() and not any(
            (run_dir / f).exists() for f in ("probes_manifest.json", "beliefs_manifest.json",
                                             "association_manifest.json", "decision_manifest.json",
                                             "weat_manifest.json"))
        missing.append("simulation: no decisions.parquet" + (
            " — a run was started here but has not finished; run the same `louder run` command again to complete it"
            if started else " — run `louder run --out RUN_DIR` to add implicit-bias results"))
    if probes is None:
        missing.append("explicit probes: no probes.parquet — run `louder probe explicit --out RUN_DIR` "
                       "to add the explicit (question-answer) contrast")
    siblings = any((run_dir / f).exists() for f in ("association.parquet", "decision_test.parquet", "weat.parquet",
                                                    "beliefs.parquet"))
    if decisions is None and probes is None and not siblings:
        raise LouderError(f"run folder {run_dir} has neither decisions.parquet nor probes.parquet; "
                          "run `louder run --out DIR` and/or `louder probe explicit --out DIR` first")
    return decisions, probes, personas, manifests, missing


def _network_split(run: Path, decisions: pd.DataFrame, missing: list[str]):
    """A network run: (every round, round 0, control, no-influence arm). The case tables above read
    round 0 — the independent decisions, comparable with a run without a network; the rounds get
    their own tables."""
    control = _read_parquet(run / "control.parquet")
    if control is None:
        missing.append("network: no control.parquet — the rule-based reference cannot be drawn; re-run the same "
                       "`louder run` command to write it")
    arm = _read_parquet(run / "no_influence.parquet")
    # a policy variant reads as its own scenario in the control and arm too, so each variant meets its own
    return (decisions, decisions[decisions["round"] == 0].reset_index(drop=True), _variants_as_scenarios(control),
            _variants_as_scenarios(arm))


def analyze(run_dir: str | Path, bootstrap: int = 10_000, seed: int = 0, predictions: str | Path | None = None,
            patterns: str | Path | None = None, write: bool = True, observed: str | Path | None = None) -> Analysis:
    """Compute every table of the run folder (and, with ``write``, save them as CSV there). ``observed``:
    a file of observed rates (docs/voices.md; default: the one the predictions file names, if any)."""
    start = time.perf_counter()
    if bootstrap < 100:
        raise LouderError(f"--bootstrap {bootstrap}: use at least 100 resamples (default 10000)")
    run = Path(run_dir)
    # one write's files only: decisions of one run beside the personas of another are refused (issue 36)
    generations = check_generations(run)
    decisions, probes, personas, manifests, missing = load_run(run)
    sequential = ST.read(run, manifests.get("simulation"))
    score = recorded((manifests.get("simulation") or {}).get("config"), "simulation.decision_mode") == "score"
    decisions = _variants_as_scenarios(decisions)
    beliefs = _read_parquet(run / "beliefs.parquet")  # issue 21: `louder probe beliefs`
    if m := _read_json(run / "beliefs_manifest.json"):
        manifests["beliefs"] = m
    attrs = _group_attributes(manifests, [f for f in (decisions, probes, beliefs) if f is not None])
    rounds, control, arm = None, None, None
    if decisions is not None and "round" in decisions.columns:
        rounds, decisions, control, arm = _network_split(run, decisions, missing)
    # issue 25: robustness.csv reads every wording, order and signal; the per-case tables one wording
    # (each agent answers once per wording) with the names signal as its own condition (docs/robustness.md)
    # issue 30: reasoning.csv reads every reasoning level (of the reference wording); every other table the
    # reference level (each agent answers once per level, as per wording)
    levels = decisions
    decisions = RS.level_view(decisions)
    presented = decisions
    decisions = R.case_view(decisions)
    # issue 34: a human study's paired agents are read by anchored.csv only; every other table reads the usual agents
    paired_view = decisions
    levels, presented, decisions, personas = (A.split(f) for f in (levels, presented, decisions, personas))
    humans = _read_parquet(run / "humans.parquet")

    attr_frames, case_frames = [], []
    if decisions is not None:
        a = C.attribute_table(decisions, attrs)
        rates = choice_rates(decisions)
        attr_frames.append(C.with_choice_rates(a, rates))
        case_frames.append(C.with_independence(
            C.with_prob_dpd(C.implicit_cases(a, B=bootstrap, seed=seed),
                            prob_dpd_table(decisions, B=bootstrap, seed=seed)),
            independence_table(decisions, B=bootstrap, seed=seed)))
    if probes is not None:
        a = C.explicit_attribute_table(probes, attrs)
        attr_frames.append(a)
        case_frames.append(C.explicit_cases(a, B=bootstrap, seed=seed))
    attributes = pd.concat([f for f in attr_frames if len(f)], ignore_index=True) if any(
        len(f) for f in attr_frames) else pd.DataFrame(columns=C.ATTRIBUTE_COLUMNS)
    cases = C.with_holm(ST.with_sequential(pd.concat([f for f in case_frames if len(f)], ignore_index=True),
                                           sequential, score)) if any(
        len(f) for f in case_frames) else pd.DataFrame(columns=C.CASE_COLUMNS)

    voice_tables = _voices(run, attributes, cases, beliefs, attrs, predictions, observed, missing, bootstrap, seed)
    tables = {"cases": cases, "attributes": attributes,
              "contrast": contrast(cases, beliefs=voice_tables.get("voices")),
              "contrast_cases": contrast_cases(cases, attributes, B=bootstrap, seed=seed),  # issue 32
              "choices": rates if decisions is not None else choice_rates(None), **voice_tables}
    imp_attr = attributes[attributes["kind"] == "implicit"]
    tables["ablation"] = ablation(cases, imp_attr, B=bootstrap, seed=seed)
    tables["directions"] = directions(imp_attr, load_predictions(predictions), B=bootstrap, seed=seed)
    if decisions is not None:
        tables["rationales"] = pd.concat([pattern_counts(decisions, load_patterns(patterns)),
                                          distinctive_words(decisions),
                                          thinking_mentions(R.case_view(levels))],  # every reasoning level
                                         ignore_index=True)
    else:
        tables["rationales"] = pd.DataFrame(columns=["analysis"])
    if decisions is not None and decisions["condition"].nunique() < 2:
        missing.append("ablation: the run has one persona condition only — add `--condition non_contextualized "
                       "--condition no_persona` to compare conditions (section 5.4)")
    if decisions is not None and probes is not None:
        sim = set(map(tuple, decisions[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        exp = set(map(tuple, probes[["model", "scenario", "group"]].drop_duplicates().to_numpy()))
        for m, s, g in sorted(sim - exp):
            missing.append(f"explicit probes: none for {m} × {s} × {g}, which the simulation has")
    association = _read_parquet(run / "association.parquet")
    decision_test = _read_parquet(run / "decision_test.parquet")
    if association is not None:
        tables["association_stats"] = association_stats(association, B=bootstrap, seed=seed)
    if decision_test is not None:
        tables["decision_stats"] = decision_stats(decision_test, B=bootstrap, seed=seed)
        if (decision_test["variant"] == "chained").any():
            tables["association_decision_link"] = association_decision_link(
                decision_test[decision_test["variant"] == "chained"])
    weat_rows = _read_parquet(run / "weat.parquet")  # issue 14: `louder probe weat`
    if weat_rows is not None:
        tables["weat"] = weat_rows
        if "association_stats" in tables:
            tables["weat_association_correlation"] = weat_correlation(weat_rows, tables["association_stats"])
    for name, m in (("association_test", _read_json(run / "association_manifest.json")),
                    ("decision_test", _read_json(run / "decision_manifest.json"))):
        if m:
            manifests[name] = m
    missing.extend(no_valid_notes(manifests))  # issue 32: a kind of run with no valid answer says why
    if rounds is not None:
        tables.update(network_tables(rounds, control, manifests.get("simulation"), B=bootstrap, seed=seed, arm=arm))
    if R.varies(presented):
        tables["robustness"] = R.robustness_table(_by_population_group(presented), attrs, B=bootstrap, seed=seed)
        tables["position_bias"] = R.position_bias_table(presented)
    if humans is not None and paired_view is not None:
        tables["anchored"] = A.anchored(paired_view, humans, B=bootstrap, seed=seed)
    if RS.varies(levels):
        tables["reasoning"] = RS.reasoning_table(_by_population_group(RS.wording_view(levels)), attrs, B=bootstrap,
                                                 seed=seed)
    result = Analysis(run, tables, missing, manifests, decisions, probes, personas, association, decision_test,
                      rounds=rounds, control=control, no_influence=arm, sequential=sequential)
    result.presented = presented
    result.beliefs = beliefs
    result.levels = levels
    result.humans = humans
    if sequential is not None:
        tables["sequential"], tables["sequential_waves"] = sequential
    _add_population(result, bootstrap, seed)
    check_unchanged(run, generations)  # no run rewrote a file while it was read
    result.seconds = time.perf_counter() - start
    written = (TABLES + SIBLING_TABLES + NETWORK_TABLES + POPULATION_TABLES + ROBUSTNESS_TABLES + VOICES_TABLES
               + ANCHORED_TABLES)
    if write:
        for name in written:
            if name in tables:
                write_csv(tables[name], run / f"{name}.csv")
        # the settings, so that `louder report` renders this analysis and never one with other settings
        write_json({"bootstrap": bootstrap, "seed": seed, **_paths(predictions=predictions, patterns=patterns,
                                                                  observed=observed),
                    "missing": missing, "seconds": round(result.seconds, 3),
                    "tables": {n: f"{n}.csv" for n in written if n in tables}},
                   run / "analysis.json")
    return result


SETTINGS = ("bootstrap", "seed", "predictions", "patterns", "observed")  # what analysis.json records


def _paths(**files) -> dict[str, str | None]:
    return {k: None if v is None else str(Path(v).resolve()) for k, v in files.items()}


def for_report(run_dir: str | Path, bootstrap: int | None = None, seed: int | None = None,
               observed: str | Path | None = None) -> Analysis:
    """The analysis ``louder report`` renders: the one ``louder analyze`` wrote, recomputed with the
    settings its analysis.json records (bootstrap, seed, predictions, patterns, observed file: the same
    tables, the bootstrap being seeded) and never written again, so the report cannot overwrite what
    analyze wrote. A setting given here that differs from the recorded one is not used, and the report
    says so (run ``louder analyze`` with it to change the analysis). A run folder without an analysis
    is analysed here with the given settings (default 10,000 draws, seed 0) and its tables written, as
    ``louder analyze`` would."""
    run = Path(run_dir)
    done = _read_json(run / "analysis.json")
    if done is None or done.get("bootstrap") is None or done.get("seed") is None:
        return analyze(run, bootstrap=10_000 if bootstrap is None else bootstrap, seed=0 if seed is None else seed,
                       observed=observed)
    recorded = {k: done.get(k) for k in SETTINGS}
    asked = {"bootstrap": bootstrap, "seed": seed, **_paths(observed=observed)}
    ignored = [f"--{k} {v}" for k, v in asked.items() if v is not None and v != recorded[k]]
    a = analyze(run, write=False, **recorded)
    if ignored:
        was = ", ".join(f"--{k} {recorded[k]}" for k in ("bootstrap", "seed", "observed") if recorded[k] is not None)
        a.missing.append(f"report: shows the analysis `louder analyze` wrote ({was}), not {' '.join(ignored)}; run "
                         f"`louder analyze {run} {' '.join(ignored)}` to change it, then `louder report` again")
    inputs = [run / f for f in ("decisions.parquet", "probes.parquet", "beliefs.parquet")]
    if any(f.exists() and f.stat().st_mtime > (run / "analysis.json").stat().st_mtime for f in inputs):
        a.missing.append("analysis: the run's data changed after `louder analyze` wrote its tables; this report "
                         "shows the data as it is now — run `louder analyze` again to update the CSVs")
    return a


ROBUSTNESS_TABLES = ("robustness", "position_bias", "reasoning")  # issue 25; reasoning levels: issue 30
ANCHORED_TABLES = ("anchored",)  # issue 34: a human study (louder.analysis.anchored)

# --- population runs, policy variants and counterfactual twins (issue 11) ---
POPULATION_TABLES = ("population_groups", "population_rates", "population_intersections", "population_regression",
                     "population_overall", "variant_rates", "variant_effects", "variant_dpd", "twin_flips", "twin_dpd",
                     "twin_accounting")


def _by_population_group(decisions: pd.DataFrame | None) -> pd.DataFrame | None:
    """Population runs (issue 31.3): the rows once per group of the population, ``group`` the group and
    ``attribute`` the agent's attribute in it — the marginal view population_groups.csv takes, where a
    case of joint labels would spread the agents over every intersection. Other runs: as they are."""
    cols = [c for c in (decisions.columns if decisions is not None else []) if c.startswith("attr_")]
    if not cols:
        return decisions
    return pd.concat([decisions.assign(group=c.removeprefix("attr_"), attribute=decisions[c]) for c in cols],
                     ignore_index=True)


def _variants_as_scenarios(decisions: pd.DataFrame | None) -> pd.DataFrame | None:
    """For the per-case tables (which key on model × condition × scenario × group), a policy variant
    other than ``base`` reads as its own scenario, "scenario [variant]", so variants are never pooled."""
    if decisions is None or "variant" not in decisions or (decisions["variant"] == "base").all():
        return decisions
    v = decisions["variant"].astype(str)
    return decisions.assign(scenario=decisions["scenario"].where(v == "base", decisions["scenario"] + " [" + v + "]"))


def _add_population(a: Analysis, bootstrap: int, seed: int) -> None:
    """The population, variant and twin tables, when the run folder has what they need."""
    from louder.analysis.population_tables import population_tables

    a.population = _read_parquet(a.run_dir / "population.parquet")
    a.twins = _read_parquet(a.run_dir / "twins.parquet")
    if a.decisions is None:
        return
    d = a.decisions
    if "variant" in d:  # the population/variant tables key on the variant, not on "scenario [variant]"
        base_scenario = d["scenario"].str.replace(r" \[[^\]]*\]$", "", regex=True)
        d = d.assign(scenario=base_scenario)
    a.tables.update(population_tables(d, a.twins, B=bootstrap, seed=seed))
    if "population_groups" in a.tables:
        a.tables["population_groups"] = ST.with_sequential_groups(a.tables["population_groups"], a.sequential)


# --- actions, words, beliefs and the world (issue 21) ---
VOICES_TABLES = ("voices", "voice_rates")


def _voices(run: Path, attributes: pd.DataFrame, cases: pd.DataFrame, beliefs: pd.DataFrame | None,
            groups: dict[str, list[str]], predictions, observed, missing: list[str], bootstrap: int,
            seed: int) -> dict[str, pd.DataFrame]:
    """voices / voice_rates (``analysis.voices``) when the run has beliefs or observed rates are given
    (``--observed``, else the predictions file's ``observed:``)."""
    from louder.analysis import voices as V
    from louder.analysis.compare import predictions_observed

    path = observed or predictions_observed(predictions)
    entries = None
    if path is not None:
        scenarios = set(attributes["scenario"]) | (set(beliefs["scenario"]) if beliefs is not None else set())
        entries, notes = V.check_observed(V.load_observed(path), groups, scenarios, f"observed file {path}")
        missing.extend(notes)
    if beliefs is None and entries is None:
        return {}
    if beliefs is None:
        missing.append("beliefs: no beliefs.parquet — run `louder probe beliefs --out RUN_DIR` to add what the model "
                       "believes people do beside what its agents do")
    voices, rates = V.voices(attributes, cases, beliefs, entries, groups, B=bootstrap, seed=seed)
    return {"voices": voices, "voice_rates": rates}
