"""The ``louder`` command line (typer + rich)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Optional

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from louder.cli_tables import dry_run_table
from louder.errors import LouderError
from louder.progress import progress_bar

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                  help="louder: find implicit bias in LLMs by what persona agents do, beside what the model says.")
# Wide enough for the tables when output goes to a file or CI log (COLUMNS, when set, decides).
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160)
err_console = Console(stderr=True)


# Options shared by several commands, declared once.
ModelOpt = Annotated[Optional[list[str]], typer.Option("--model", "-m", help="model spec, repeatable")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="root seed")]
ConcurrencyOpt = Annotated[Optional[int], typer.Option("--concurrency", help="model calls in flight")]
RetryOpt = Annotated[bool, typer.Option("--retry-errors", help="ask the model again for answers that ended in error")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="print calls, estimated tokens and cost; call no model")]


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _with_progress(label: str, work):
    """Run ``work(on_progress)`` under a progress bar: the runners call ``on_progress(total, "start")``
    once, then ``on_progress(0, "")`` per finished item (and may set a new total with
    ``(total, "total")`` or a status line with ``(0, text)``)."""
    on_progress, close = progress_bar(label, console=err_console, remaining=True)
    try:
        result = work(on_progress)
    except BaseException:
        close(failed=True)
        raise
    close()
    return result


def _dry_run(config, kind) -> None:
    """Price ``kind``'s plan for ``config`` (louder/cost.py); no model is called."""
    from louder.cost import price

    task = kind.build(config)
    console.print(dry_run_table(price(task.calls, config)))
    for line in task.notes:  # what building the plan found (a population's fit)
        console.print(line, highlight=False)
    from louder.dimensions import plan_line

    if line := plan_line(config):  # issue 31.3: what the experiment dimensions multiply
        console.print(line, highlight=False)
    levels = config.simulation.reasoning
    if list(levels) != ["default"]:  # issue 30
        console.print(f"reasoning: {len(levels)} level(s) ({', '.join(levels)}) — every agent "
                      "decides once per level; thinking tokens are billed as output and must fit in max_tokens",
                      highlight=False)
    console.print("[dim]Cached answers are not counted: a resumed run costs less. Tokens are estimated at 4 characters "
                  "per token.[/]")


def _execute(kind, config, out: Path, retry_errors: bool, **options):
    """Run ``kind`` with ``config`` into ``out`` under a progress bar (louder.api.run), then print what
    the kind shows of its result. Returns the ``Run``."""
    from louder.api import Run
    from louder.runfolder import out_folder
    from louder.task import execute

    task = kind.build(config, **options)
    out_folder(out)  # a file named like the folder: one line before any progress bar
    try:
        result = _with_progress(kind.label, lambda on_progress: execute(task, config, out, retry_errors, on_progress))
    except KeyboardInterrupt as e:
        _interrupted(getattr(e, "kept", None), config, out)
    for part in kind.show(result):
        console.print(part, highlight=False)
    from louder.status import no_valid_notes

    for note in no_valid_notes({kind.name: result.manifest}):  # issue 32: why none is valid, what to change
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False, soft_wrap=True)
    return Run(out, result)


def _interrupted(kept: int | None, config, out: Path) -> None:
    """Ctrl-C in a run: one line, what is kept and the command that resumes; exit 130."""
    from louder.runfolder import cache_path, command_line

    held = f"{kept} answers are kept in {cache_path(out, config.cache)}" if kept is not None else \
        "every finished answer is cached"
    err_console.print(f"interrupted: {escape(held)}; resume with: {escape(command_line())}", highlight=False,
                      soft_wrap=True)
    raise typer.Exit(130)


@app.command()
def run(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional)"),
    out: Path = typer.Option(..., "--out", "-o", help="output folder (created; re-running resumes)"),
    model: Optional[list[str]] = typer.Option(None, "--model", "-m",
                                              help="model spec, repeatable: embedded | openai:MODEL[@URL] | fake | … (`louder backends` lists all)"),
    agents: Optional[int] = typer.Option(None, "--agents", "-n", help="agents per attribute per case "
                                         "(population runs: agents drawn from the population)"),
    scenario: Optional[list[str]] = typer.Option(None, "--scenario", "-s", help="scenario id or YAML path, repeatable"),
    group: Optional[list[str]] = typer.Option(None, "--group", "-g", help="group id or YAML path, repeatable "
                                              "(population runs take their groups from the population file)"),
    condition: Optional[list[str]] = typer.Option(None, "--condition", "-c",
                                                  help="contextualized | non_contextualized | no_persona, repeatable"),
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = None,
    paper_faithful: Optional[bool] = typer.Option(None, "--paper-faithful/--no-paper-faithful",
                                                  help="reproduce the paper's printed inconsistencies"),
    retry_errors: RetryOpt = False,
    dry_run: DryRunOpt = False,
    rounds: Optional[int] = typer.Option(None, "--rounds", help="rounds of influence after round 0 (needs "
                                         "`network:` in the config; docs/networks.md)"),
    population: Optional[str] = typer.Option(None, "--population", help="population file or built-in id: agents "
                                             "drawn from it carry one attribute of every group (--agents = how many)"),
    variant: Optional[list[str]] = typer.Option(None, "--variant", help="policy variant of the scenarios "
                                                "(base = as written), repeatable"),
    twins: Optional[bool] = typer.Option(None, "--twins/--no-twins", help="population runs: counterfactual "
                                         "twins of every persona for every other attribute of each group"),
    twin_group: Optional[list[str]] = typer.Option(None, "--twin-group", help="with --twins: only this group of "
                                                   "the population gets twins, repeatable"),
    until: Optional[str] = typer.Option(None, "--until", help="decided: run each case in waves until an "
                                        "anytime-valid test decides it (docs/sequential.md)"),
    budget: Optional[int] = typer.Option(None, "--budget", help="with --until decided: the most agents per "
                                         "attribute per case (population runs: drawn); default --agents"),
    wave: Optional[int] = typer.Option(None, "--wave", help="with --until decided: agents per attribute per wave "
                                       "(default 10)"),
    precision: Optional[float] = typer.Option(None, "--precision", help="with --until decided: D, the smallest "
                                              "DPD of interest; parity is declared within D (default 0.1)"),
    choice_order: Optional[str] = typer.Option(None, "--choice-order", help="as_written | reversed | balanced | "
                                               "shuffled: the order the choices are listed in (docs/robustness.md)"),
    wording: Optional[list[str]] = typer.Option(None, "--wording", help="wording of the scenarios: as_written, "
                                                "an id of the file's `wordings:`, or all; repeatable"),
    signal: Optional[list[str]] = typer.Option(None, "--signal", help="stated | names: how the attribute reaches "
                                               "the persona; repeatable"),
    names: Optional[str] = typer.Option(None, "--names", help="signal names: the names file (YAML path or "
                                        "built-in id)"),
    reasoning: Optional[list[str]] = typer.Option(None, "--reasoning", help="reasoning level of the decisions: "
                                                  "default | off | on | low | medium | high; repeatable (each agent "
                                                  "decides once per level; docs/how-to/reasoning-models.md)"),
    intervention: Optional[list[str]] = typer.Option(None, "--intervention", help="prompt intervention: none, a "
                                                     "built-in id (illegal, ignore_demographics, …) or an intervention "
                                                     "file; repeatable (each agent decides once per intervention; "
                                                     "docs/how-to/test-a-mitigation.md)"),
    calibration: Optional[Path] = typer.Option(None, "--calibration", "--adjustment",
                                               help="calibrated agents: a calibration file (`louder calibrate` writes "
                                               "it); each agent's choice probabilities are shifted by its offsets "
                                               "before it decides (score mode). --adjustment: its earlier name"),
    humans: Optional[Path] = typer.Option(None, "--humans", help="a human study of the run's scenarios (CSV): each "
                                          "respondent gets a paired agent, and anchored.csv aligns the agents with "
                                          "the humans (docs/how-to/anchor-to-humans.md)"),
    ground: Optional[str] = typer.Option(None, "--ground", help="with --humans: COL,COL or all — each respondent "
                                         "also gets an agent whose persona is written from their profile (the group "
                                         "attributes and these columns); fidelity.csv scores it beside the "
                                         "attribute-only agent (docs/how-to/check-agents-against-humans.md)"),
    unlabelled: Optional[Path] = typer.Option(None, "--unlabelled", help="with --ground: a CSV of profiles without "
                                              "a human answer; each gets a grounded agent, PPI's unlabelled set "
                                              "(anchoring.csv's grounded rows)"),
) -> None:
    """Run (or resume) an experiment: a simulation, a population run with --population, on a social network
    when the config has `network:`, archetype mode with `mode: archetype` (`louder kinds` lists them)."""
    from louder import kinds
    from louder.config import load_config

    overrides = dict(models=model or None, agents=agents, scenarios=scenario or None, groups=group or None,
                     conditions=condition or None, seed=seed, concurrency=concurrency, paper_faithful=paper_faithful,
                     rounds=rounds, population=population, variants=variant or None, twins=twins,
                     twin_groups=twin_group or None, choice_order=choice_order, wordings=wording or None,
                     signal=signal or None, names=names, reasoning=reasoning or None,
                     simulation={**({"interventions": intervention} if intervention else {}),
                                 **({"calibration": str(calibration)} if calibration else {}),
                                 **({"humans": str(humans)} if humans else {}),
                                 **({"ground": ground} if ground else {}),
                                 **({"unlabelled": str(unlabelled)} if unlabelled else {})} or None)
    try:
        cfg = _sequential(load_config(config, overrides), until, budget=budget, wave=wave, precision=precision)
        kind = kinds.for_config(cfg)
        if dry_run:
            return _dry_run(cfg, kind)
        _execute(kind, cfg, out, retry_errors)
    except LouderError as e:
        fail(str(e))


def _sequential(cfg, until: Optional[str], **flags):
    """``--until decided`` and its --budget/--wave/--precision on top of the config's ``sequential:``."""
    from louder.config import load_config

    flags = {k: v for k, v in flags.items() if v is not None}
    if until is not None and until != "decided":
        raise LouderError(f"--until {until}: the one stopping rule is `decided` (--until decided)")
    if until is None and cfg.sequential is None:
        if flags:
            raise LouderError(f"--{next(iter(flags))}: needs --until decided (or `sequential:` in the config)")
        return cfg
    base = cfg.sequential.model_dump(exclude_unset=True) if cfg.sequential is not None else {}
    return load_config(cfg, {"sequential": {**base, **flags}})


@app.command()
def demo(
    out: Path = typer.Option(Path("louder-demo"), "--out", "-o", help="output folder"),
    agents: int = typer.Option(4, "--agents", "-n", help="agents per attribute"),
) -> None:
    """A small real experiment on the embedded model, with explicit probes, analysis and report
    (about two minutes on 2 CPU cores)."""
    from louder import kinds
    from louder.analysis import analyze as run_analysis
    from louder.analysis.report.page import write_report
    from louder.config import build_config

    console.print("[bold]louder demo[/]: SmolLM2-135M-Instruct (embedded), emergency_response and "
                  f"career_path_selection × gender_identity, {agents} agents per attribute, then "
                  "6 explicit probes per case.\n"
                  "[dim]A 135M model proves the pipeline runs for real; its answers prove nothing about bias.[/]")
    try:
        cfg = build_config(dict(models=["embedded"], explicit=dict(trials=6), simulation=dict(
            scenarios=["emergency_response", "career_path_selection"], groups=["gender_identity"], agents=agents)),
            where="demo")
        _execute(kinds.get("simulation"), cfg, out, retry_errors=False)
        _execute(kinds.get("explicit"), cfg, out, retry_errors=False)
        a = run_analysis(out)
        _print_analysis(a)
        path = write_report(a)
    except LouderError as e:
        fail(str(e))
    console.print(f"report: {path}  (open it in a browser)")


from louder.cli_batch import batch_app  # noqa: E402

app.add_typer(batch_app, name="batch")

from louder.cli_scenario import scenario_app  # noqa: E402

app.add_typer(scenario_app, name="scenario")


@app.command()
def plan(
    effect: float = typer.Option(..., "--effect", help="the DPD to detect, e.g. 0.10"),
    attributes: int = typer.Option(..., "--attributes", help="attributes in the group, e.g. 3"),
    base_rate: float = typer.Option(..., "--base-rate", help="typical target-decision rate, e.g. 0.6"),
    power: float = typer.Option(0.8, "--power", help="wanted power"),
    alpha: float = typer.Option(0.05, "--alpha", help="significance level of the parity-bootstrap test"),
    cases: int = typer.Option(12, "--cases", help="cases in the design (scenarios × groups × conditions × models)"),
    spread: str = typer.Option("even", "--spread", help="how the gap is spread: even (rates evenly spaced) | "
                               "one (one attribute apart from the rest)"),
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML: adds calls and cost of the design"),
    model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="model spec: adds calls and cost"),
    seed: int = typer.Option(0, "--seed", help="seed of the simulation"),
) -> None:
    """Agents per attribute needed to detect a DPD with the test `louder analyze` runs (seeded simulation)."""
    from louder.analysis.stats.power import plan as make_plan

    try:
        for name, v, ok in (("--effect", effect, 0 < effect <= 1), ("--base-rate", base_rate, 0 <= base_rate <= 1),
                            ("--power", power, 0 < power < 1), ("--alpha", alpha, 0 < alpha < 1),
                            ("--attributes", attributes, attributes >= 2), ("--cases", cases, cases >= 1),
                            ("--spread", spread, spread in ("even", "one"))):
            if not ok:
                raise LouderError(f"{name} {v}: out of range; use effect in (0, 1], base rate in [0, 1], power and "
                                  "alpha in (0, 1), at least 2 attributes and 1 case, spread even or one")
        p = make_plan(effect, attributes, base_rate, target=power, alpha=alpha, spread=spread, seed=seed)
        rates = ", ".join(f"{r:.3f}" for r in p.rates)
        if p.agents_per_attribute is None:
            raise LouderError(f"--effect {effect}: not detectable with power {power} below 20,000 agents per attribute")
        n = p.agents_per_attribute
        console.print(f"true rates {rates} (DPD {effect}), alpha {alpha}, parity-bootstrap test as in `louder analyze`")
        console.print(f"agents per attribute: {n}  (simulated power {p.power:.3f})")
        console.print(f"{cases} cases × {attributes} attributes × {n} agents = {cases * attributes * n:,} agents "
                      f"(~{2 * cases * attributes * n:,} model calls: persona + decision)")
        if config is not None or model:
            from louder import kinds
            from louder.config import load_config

            console.print(f"the config's own design (its scenarios, groups, conditions) at {n} agents per attribute:")
            cfg = load_config(config, dict(models=model or None, agents=n))
            _dry_run(cfg, kinds.for_config(cfg))
    except LouderError as e:
        fail(str(e))


probe_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                        help="Prompt-based probes: explicit question answering (appendix D), beliefs "
                             "(docs/voices.md), the word association and relative decision tests.")
app.add_typer(probe_app, name="probe")


@probe_app.command("explicit")
def probe_explicit(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional; same file as `louder run`)"),
    out: Path = typer.Option(..., "--out", "-o", help="run folder (the simulation's, so one report covers both)"),
    model: ModelOpt = None,
    scenario: Optional[list[str]] = typer.Option(None, "--scenario", "-s", help="scenario id or YAML path, repeatable"),
    group: Optional[list[str]] = typer.Option(None, "--group", "-g", help="group id or YAML path, repeatable"),
    trials: Optional[int] = typer.Option(None, "--trials", "-n",
                                         help="trials per scenario × group (default 100 × #attributes)"),
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = None,
    paper_faithful: Optional[bool] = typer.Option(None, "--paper-faithful/--no-paper-faithful",
                                                  help="keep appendix D's stray protest lines"),
    retry_errors: RetryOpt = False,
    dry_run: DryRunOpt = False,
    intervention: Optional[list[str]] = typer.Option(None, "--intervention", help="prompt intervention (none, a "
                                                     "built-in id or a file), repeatable: every trial is asked once "
                                                     "per intervention (docs/how-to/test-a-mitigation.md)"),
) -> None:
    """Ask the model directly (appendix D) and write probes.parquet into the run folder."""
    overrides = dict(models=model or None, scenarios=scenario or None, groups=group or None, probe_trials=trials,
                     seed=seed, concurrency=concurrency, paper_faithful=paper_faithful,
                     simulation={"interventions": intervention} if intervention else None)
    try:
        _probe("explicit", config, out, overrides, retry_errors, dry_run)
    except LouderError as e:
        fail(str(e))


@probe_app.command("beliefs")
def probe_beliefs(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional; same file as `louder run`)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run folder (the simulation's, so one report covers "
                                       "both)"),
    model: ModelOpt = None,
    scenario: Optional[list[str]] = typer.Option(None, "--scenario", "-s", help="scenario id or YAML path, repeatable"),
    group: Optional[list[str]] = typer.Option(None, "--group", "-g", help="group id or YAML path, repeatable"),
    trials: Optional[int] = typer.Option(None, "--trials", "-n", help="answers per scenario × attribute (default 100)"),
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: RetryOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Ask the model how many out of 100 people of each attribute would choose the target (docs/voices.md);
    writes beliefs.parquet into the run folder."""
    overrides = dict(models=model or None, scenarios=scenario or None, groups=group or None, belief_trials=trials,
                     seed=seed, concurrency=concurrency)
    try:
        _probe("beliefs", config, out, overrides, retry_errors, dry_run)
    except LouderError as e:
        fail(str(e))


def _probe(name: str, config, out: Optional[Path], overrides: dict, retry_errors: bool, dry_run: bool,
           generate: int = 0, generator: Optional[str] = None) -> None:
    """`louder probe NAME`: the probe kind ``name`` (louder/kinds.py) with the config and flags."""
    from louder import kinds
    from louder.config import load_config

    cfg = load_config(config, overrides)
    kind = kinds.get(name)
    if dry_run:
        return _dry_run(cfg, kind)
    if out is None:
        fail("--out is required (the run folder to write to)")
    from louder.runfolder import hold

    with hold(out):  # the new scenarios and the probe's run: one writer throughout
        options = {"generated": _generate(cfg, config, overrides, out, generate, generator)} if generate else {}
        _execute(kind, cfg, out, retry_errors, **options)


def _generate(cfg, config, overrides: dict, out: Path, n: int, generator: Optional[str]) -> dict:
    """`--generate N`: new decision scenarios per stereotype from the seeds, stored with provenance."""
    from louder.config import load_config
    from louder.probes import generate as G
    from louder.probes.bai_runner import selected
    from louder.records import RunContext

    if n < 1:
        raise LouderError(f"--generate {n}: ask for at least 1 new scenario per stereotype")
    gen_cfg = load_config(config, {**overrides, "models": [generator]}) if generator else cfg
    with RunContext(gen_cfg, out) as ctx:
        session = ctx.sessions[gen_cfg.models[0].label]
        records = [G.generate(session, st, n, cfg.seed) for st in selected(cfg)]
    path = G.write(records, gen_cfg.models[0].label, cfg.seed, out)
    for r in records:
        console.print(f"generated {r['stereotype']}: {len(r['scenarios'])} kept, {len(r['rejected'])} rejected "
                      f"({r['status']})", highlight=False)
    console.print(f"wrote {path}")
    return G.load(path)


@probe_app.command("association")
def probe_association(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run folder"),
    model: ModelOpt = None,
    stereotype: Optional[list[str]] = typer.Option(None, "--stereotype", help="stereotype, repeatable (default: all 21)"),
    trials: Optional[int] = typer.Option(None, "--trials", "-n", help="trials per stereotype × variation (default 50)"),
    variation: Optional[list[str]] = typer.Option(None, "--variation",
                                                  help="replication | instruction1 | instruction2 | synonym, repeatable"),
    egalitarian: Optional[bool] = typer.Option(None, "--egalitarian/--no-egalitarian",
                                               help="add appendix Q's egalitarian system prompt"),
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = None,
    rescore: Optional[Path] = typer.Option(None, "--rescore", help="score saved answers (CSV/Parquet) instead"),
    text_column: str = typer.Option("0", "--text-column", help="with --rescore: the column holding the answers"),
    retry_errors: RetryOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """LLM Word Association Test (Bai et al.): writes association.parquet; or --rescore saved answers."""
    try:
        if rescore is not None:
            return _rescore(rescore, stereotype, text_column, variation)
        _probe("association", config, out, dict(
            models=model or None, stereotypes=stereotype or None, association_trials=trials,
            association_variations=variation or None, egalitarian=egalitarian, seed=seed, concurrency=concurrency),
            retry_errors, dry_run)
    except LouderError as e:
        fail(str(e))


def _rescore(path: Path, stereotype: Optional[list[str]], text_column: str, variation: Optional[list[str]]) -> None:
    from louder.probes.association import rescore as score_table
    from louder.stimuli import get_stereotype

    if not stereotype or len(stereotype) != 1:
        fail("--rescore needs exactly one --stereotype NAME (the stereotype the answers are about)")
    st = get_stereotype(stereotype[0])
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as e:
        fail(f"--rescore {path}: cannot be read as CSV or Parquet ({e})")
    if text_column not in df.columns:
        fail(f"--text-column {text_column!r} is not a column of {path}; columns: {', '.join(map(str, df.columns))}")
    from louder.analysis.stats.keys import is_valid

    r = score_table(df, st, text_column, (variation or ["replication"])[0])
    valid = is_valid(r)
    console.print(f"{st.name}: mean score {r['score_authors'].mean():.4f} (authors' convention, n={len(r)}), "
                  f"{r.loc[valid, 'score'].mean():.4f} (strict, n={int(valid.sum())}); "
                  f"parsed {int(valid.sum())}, unparsed {int((~valid).sum())}, "
                  f"one-sided {int(r['one_sided'].sum())} (valid, no strict score)")


@probe_app.command("weat")
def probe_weat(
    out: Path = typer.Option(..., "--out", "-o", help="run folder (beside association.parquet for the comparison)"),
    stereotype: Optional[list[str]] = typer.Option(None, "--stereotype", help="stereotype, repeatable (default: all 21)"),
    embeddings: str = typer.Option("minilm", "--embeddings", help="minilm (offline, louder[weat]) | "
                                   "openai:MODEL[@URL], e.g. openai:text-embedding-3-small"),
    permutations: int = typer.Option(10_000, "--permutations", help="random partitions when the exact test is too big"),
    seed: int = typer.Option(0, "--seed", help="seed of the permutation test"),
) -> None:
    """WEAT effect sizes and permutation p-values on the 21 stereotypes' stimuli (weat.parquet)."""
    import time

    from louder.analysis.stats.weat import weat_table
    from louder.io import write_json
    from louder.llm.embeddings import embedder
    from louder.runfolder import hold
    from louder.stimuli import get_stereotype, stereotypes

    try:
        sts = [get_stereotype(n) for n in stereotype] if stereotype else list(stereotypes().values())
        start = time.perf_counter()
        table = weat_table(sts, embedder(embeddings), permutations=permutations, seed=seed)
        with hold(out):  # one writer per run folder
            table.assign(embeddings=embeddings).to_parquet(out / "weat.parquet", index=False)
            write_json({"embeddings": embeddings, "permutations": permutations, "seed": seed,
                        "stereotypes": [s.name for s in sts], "seconds": round(time.perf_counter() - start, 3)},
                       out / "weat_manifest.json")
    except LouderError as e:
        fail(str(e))
    t = Table(title=f"WEAT ({embeddings}): d > 0 = stigma tokens closer to stigma words")
    for col in ("stereotype", "category", "d", "p", "test"):
        t.add_column(col)
    for _, r in table.iterrows():
        t.add_row(r["stereotype"], r["category"], f"{r['effect_size']:.3f}", f"{r['p_value']:.4f}",
                  "exact" if r["exact"] else "monte-carlo")
    console.print(t)
    console.print(f"wrote {out}/weat.parquet ({len(table)} rows), weat_manifest.json")


@probe_app.command("decision")
def probe_decision(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run folder"),
    model: ModelOpt = None,
    stereotype: Optional[list[str]] = typer.Option(None, "--stereotype", help="stereotype, repeatable (default: all 21)"),
    trials: Optional[int] = typer.Option(None, "--trials", "-n", help="trials per stereotype (default 50)"),
    variation: Optional[str] = typer.Option(None, "--variation", help="relative | absolute | chained"),
    extraction: Optional[str] = typer.Option(None, "--extraction", help="followup (default) | judge"),
    egalitarian: Optional[bool] = typer.Option(None, "--egalitarian/--no-egalitarian",
                                               help="add appendix Q's egalitarian system prompt"),
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = None,
    retry_errors: RetryOpt = False,
    dry_run: DryRunOpt = False,
    generate: int = typer.Option(0, "--generate", help="also generate N new scenarios per stereotype from the seeds "
                                 "(stored in generated_decisions.yaml) and run them like the seed ones"),
    generator: Optional[str] = typer.Option(None, "--generator", help="model spec that writes the new scenarios "
                                            "(default: the model under test)"),
) -> None:
    """LLM Relative Decision Test (Bai et al.): writes decision_test.parquet."""
    try:
        _probe("decision", config, out, dict(
            models=model or None, stereotypes=stereotype or None, decision_trials=trials, decision_variant=variation,
            decision_extraction=extraction, egalitarian=egalitarian, seed=seed, concurrency=concurrency),
            retry_errors, dry_run, generate, generator)
    except LouderError as e:
        fail(str(e))


def _width() -> int:
    """The terminal's width: COLUMNS when set (as the command runs), else the console's."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else console.width


def _print_analysis(a, wide: bool = False, columns: list[str] | None = None) -> None:
    """The analysis' console tables at the terminal's width, then its findings (what the report's top
    says), what it leads to, and what is missing."""
    width = _width()
    from louder.analysis.report.console import analysis_tables

    for table in analysis_tables(a, width, wide, columns):
        console.print(table, width=width)
    from louder.analysis.engine.run import leads
    from louder.analysis.report.findings import findings

    found = findings(a)
    if found.by_model:
        console.print(Text("Findings", style="bold"), width=width)
        for line in found.lines(where=False, missing=False):
            console.print(Text("- " + line), width=width)
    for line in leads(a):
        console.print(Text(line, style="yellow"), width=width)
    for m in a.missing:
        console.print(Text.assemble(("missing:", "yellow"), " ", m), width=width)


# --- the options the measures declare ---------------------------------------------------------------

FLAGS_PANEL = "Shorthands of --set (the measures' options)"


def _flag_options(taken: dict[str, str]) -> list:
    """One option per shorthand flag a measure's option declares (``Option(flag=…)``: louder's and an
    installed package's), with its help text, built by typer from a signature made of them; ``taken``:
    the command's own options (flag → parameter name), which no measure may take."""
    import inspect

    from louder.analysis.engine import options as O

    kinds = {bool: bool, int: int, float: float, Path: Path}
    params = []
    for flag, declared in O.flags().items():
        m, o = declared[0]
        name = O.keyword(flag)
        if flag in taken or name in taken.values():
            raise LouderError(f"measure {m.name}: option {o.name}'s flag {flag} is an option of the command itself; "
                              "give it another flag")
        sets = ", ".join(f"{m.name}.{o.name}" for m, o in declared)
        said = all(str(c) in o.doc for c in o.choices)  # its doc may name its values already
        choices = f" ({' | '.join(map(str, o.choices))})" if o.choices and not said else ""
        text = f"{o.doc}{choices} (--set {sets}{'; repeatable' if o.multiple else ''})"
        kind = kinds.get(o.type, str)
        if kind is bool and not o.multiple:
            annotation, default = Annotated[bool, typer.Option(flag, help=text, rich_help_panel=FLAGS_PANEL)], False
        else:
            annotation = Annotated[Optional[list[kind]] if o.multiple else Optional[kind],
                                   typer.Option(flag, help=text, rich_help_panel=FLAGS_PANEL)]
            default = None
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))

    def flags(**values):  # only its signature is read
        pass

    flags.__signature__ = inspect.Signature(params)
    flags.__annotations__ = {p.name: p.annotation for p in params}
    grown = typer.Typer(add_completion=False)
    grown.command()(flags)
    return list(typer.main.get_command(grown).params)


class _WithMeasureFlags(typer.core.TyperCommand):
    """A command whose options include every flag the measures' options declare, grown from the registry
    when the command's options are first read (its help, or running it): ``louder --help`` and the other
    commands import no measure. Their values reach the command as ``_flags(ctx)`` (keyword → value)."""

    @property
    def params(self) -> list:
        if self._grown is None:
            try:
                self._grown = _flag_options({o: p.name for p in self._params for o in p.opts})
            except LouderError as e:
                fail(str(e))
            self._params.extend(self._grown)  # one list: click appends and pops its help option on it
        return self._params

    @params.setter
    def params(self, value) -> None:
        self._params, self._grown = list(value), None

    def invoke(self, ctx):
        ctx.meta["louder.flags"] = {p.name: ctx.params.pop(p.name) for p in self._grown or () if p.name in ctx.params}
        return super().invoke(ctx)


def _flags(ctx: typer.Context) -> dict:
    """The measures' flags given to a ``_WithMeasureFlags`` command, by keyword (``random_slopes``)."""
    return ctx.meta.get("louder.flags", {})


@app.command(cls=_WithMeasureFlags)
def analyze(
    ctx: typer.Context,
    run_dir: Path = typer.Argument(..., help="run folder (the --out of `louder run` / `louder probe explicit`)"),
    bootstrap: int = typer.Option(10_000, "--bootstrap", "-B", help="bootstrap resamples per case"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap"),
    wide: bool = typer.Option(False, "--wide", help="print every column of the tables (default: the key columns "
                                                     "that fit the terminal)"),
    columns: Optional[str] = typer.Option(None, "--columns", help="print these columns of the tables, comma-separated "
                                          "(e.g. scenario,dpd,p_holm,power)"),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="MEASURE.OPTION=VALUE: an option of a measure "
                                             "(`louder measures` lists them); repeatable. The flags below are "
                                             "shorthands of it (--control G is --set conditional.control=G)"),
) -> None:
    """Compute DPDs, significance, contrasts, directions and rationale tables; write CSVs (once per data
    state and settings: the same analysis again is read back, not recomputed)."""
    from louder.analysis import analyze as run_analysis
    from louder.analysis.engine.options import parse_set

    try:
        a = run_analysis(run_dir, bootstrap=bootstrap, seed=seed, options=parse_set(set_ or ()), **_flags(ctx))
        _print_analysis(a, wide, [c.strip() for c in columns.split(",") if c.strip()] if columns else None)
    except LouderError as e:
        fail(str(e))
    names = ", ".join(f"{n}.csv" for n in a.tables)
    if a.cached:
        console.print(f"up to date: {names} in {run_dir} (the same data and settings as the analysis they hold; "
                      f"read in {a.seconds:.1f} s)", highlight=False, width=_width())
    else:
        console.print(f"wrote {names} in {run_dir} ({a.seconds:.1f} s)", highlight=False, width=_width())


def calibrate(
    run_dir: Path = typer.Argument(..., help="a finished run folder (score mode fits agents; sample mode fits rates)"),
    to: str = typer.Option(..., "--to", help="parity: every attribute at the case's pooled rate; observed: the "
                           "rates of --observed FILE"),
    observed: Optional[Path] = typer.Option(None, "--observed", help="observed rates YAML (docs/voices.md), for "
                                            "--to observed"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="where to write the offsets (default: "
                                       "RUN_DIR/calibration.yaml)"),
) -> None:
    """Fit logit offsets per model × condition × scenario × attribute that calibrate the run's agents to
    parity or to observed rates; write calibration.yaml for `louder run --calibration FILE` and print them."""
    from louder.analysis.stats import calibration

    try:
        table = calibration.fit(run_dir, to, observed)
        path = calibration.write(table, out or run_dir / "calibration.yaml", to, run_dir, observed)
    except LouderError as e:
        fail(str(e))
    console.print(calibration.console_table(table))
    if (table["source"] == "sample").any():
        console.print("[yellow]sample mode: these offsets move each attribute's rate exactly on this run, but the run "
                      "stored no probabilities — applied to agents (a score-mode run, --calibration) they shift each "
                      "agent's probability by its attribute's offset, which moves the attribute's rate by a different "
                      "amount wherever agents differ. They calibrate rates, not agents.[/]", highlight=False)
    console.print(f"wrote {path} — apply it with `louder run --calibration {path}` (score mode); fit on a run several "
                  "times larger than the one you test (each offset's se is the residual you should expect)",
                  highlight=False)


app.command("calibrate")(calibrate)
app.command("adjust", hidden=True, help="The earlier name of `louder calibrate`.")(calibrate)


@app.command(cls=_WithMeasureFlags)
def report(
    ctx: typer.Context,
    run_dir: Path = typer.Argument(..., help="run folder"),
    bootstrap: Optional[int] = typer.Option(None, "--bootstrap", "-B", help="bootstrap resamples per case, for a "
                                            "folder not yet analysed (default 10000; else analyze's)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="seed of the bootstrap, for a folder not yet analysed "
                                       "(default 0; else analyze's)"),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="MEASURE.OPTION=VALUE, for a folder not yet "
                                             "analysed (else analyze's); repeatable. The flags below are shorthands "
                                             "of it"),
) -> None:
    """Write RUN_DIR/report/index.html (self-contained, figures embedded) from the analysis `louder analyze`
    wrote (its settings; the folder's CSVs are not rewritten); a folder not yet analysed is analysed first."""
    from louder.analysis import for_report
    from louder.analysis.engine.options import parse_set
    from louder.analysis.report.page import write_report

    try:
        a = for_report(run_dir, bootstrap=bootstrap, seed=seed, options=parse_set(set_ or ()), **_flags(ctx))
        path = write_report(a)
    except LouderError as e:
        fail(str(e))
    for m in a.missing:
        console.print(Text.assemble(("missing:", "yellow"), " ", m))
    console.print(f"wrote {path}", highlight=False)


@app.command()
def compare(
    runs: list[str] = typer.Argument(..., help="run folders, each FOLDER or LABEL=FOLDER (a label names the folder's "
                                     "model; default: the model's name); one folder of several models compares them"),
    order: Optional[str] = typer.Option(None, "--order", help="A,B,C: the entries in order (e.g. model generations): "
                                        "the pairs follow it, the figure joins them and model_trend.csv tests a trend"),
    margin: float = typer.Option(0.3, "--margin", help="a verdict reads `no difference` only when the ΔDPD interval "
                                 "lies within ± this margin (else `underpowered`)"),
    fail_if: Optional[str] = typer.Option(None, "--fail-if", help="worse[:MARGIN]: exit 1 when an entry is more biased "
                                          "than the first (significant after Holm; with MARGIN: shown to exceed it) in "
                                          "any case, one line per case; the verdict goes into comparison.json"),
    out: Path = typer.Option(Path("comparison"), "--out", "-o", help="where to write the tables (CSV), "
                             "comparison.json and report/index.html"),
    bootstrap: int = typer.Option(10_000, "--bootstrap", "-B", help="bootstrap resamples per case"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap"),
    wide: bool = typer.Option(False, "--wide", help="print every column of the tables"),
) -> None:
    """Model against model: the paper's summary per model, ΔDPD per pair of models and case for actions and
    words with intervals and verdicts, per pair, a trend along --order, and a release gate (--fail-if)."""
    from louder.analysis.engine import registry
    from louder.analysis.report.console import frame_table
    from louder.api import compare as compare_models

    try:
        c = compare_models(*runs, order=order, margin=margin, bootstrap=bootstrap, seed=seed)
        gate = c.verdict(fail_if)
        paths = c.write(out, gate=gate)
    except LouderError as e:
        fail(str(e))
    for name, df in c.tables.items():  # each table as the measure that declares it prints it in `louder analyze`
        owner = registry.owner(name)
        if owner is None or df is None or not len(df):
            continue
        for shown in (v for v in owner.console if v.table == name):
            console.print(frame_table(df, shown.title, shown.columns, _width(), wide, hint="louder compare --wide"),
                          width=_width())
    for note in c.assembled.notes:
        console.print(Text.assemble(("note:", "yellow"), " ", note), width=_width())
    console.print(f"wrote {', '.join(p.relative_to(out).as_posix() for p in paths)} in {out}", highlight=False,
                  width=_width())
    if gate is not None:
        for f in gate["failing"]:
            console.print(Text(f["line"], style="bold red"), width=_width(), soft_wrap=True)
        if not gate["passed"]:
            raise typer.Exit(1)
        console.print(Text(f"gate passed: no entry is worse than {gate['base']} ({fail_if})", style="green"),
                      width=_width())


@app.command()
def repair(
    run_dir: Path = typer.Argument(..., help="run folder whose cache is damaged"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="the cache file (default: the one the run's config "
                                         "names, else RUN_DIR/cache.sqlite)"),
) -> None:
    """Keep every readable answer of a damaged cache in a new cache, move the damaged file aside
    (cache.sqlite.damaged-…) and say how many calls remain; then run the same command again."""
    from louder.runfolder import repair as repair_cache

    try:
        r = repair_cache(run_dir, cache)
    except LouderError as e:
        fail(str(e))
    console.print(r.line(), highlight=False, soft_wrap=True)


@app.command()
def view(
    run_dir: Path = typer.Argument(..., help="run folder (the --out of any run)"),
    port: int = typer.Option(8765, "--port", help="port on 127.0.0.1"),
    agents: bool = typer.Option(False, "--agents", help="a network run: read its agents' words instead of replaying "
                                                        "its rounds"),
    max_nodes: int = typer.Option(2000, "--max-nodes", help="network replay: draw at most this many nodes (a seeded "
                                                            "sample)"),
) -> None:
    """Read every agent of a run in the browser — persona, decision, rationale and thinking side by side, filtered
    by case, attribute, status and decision; a network run is replayed round by round (Mesa SolaraViz; --agents for
    its agents' words). Serves on 127.0.0.1 and calls no model."""
    import os

    from louder.view.agents import server

    network = (run_dir / "network.parquet").exists() and not agents
    if not network:
        try:
            httpd = server(run_dir, port)
        except LouderError as e:
            fail(str(e))
        except OSError as e:
            fail(f"--port {port}: cannot serve on 127.0.0.1:{port} ({e.strerror}); choose another with --port")
        n = len(httpd.RequestHandlerClass.table)
        console.print(f"louder view: the {n:,} decisions of {run_dir} on http://127.0.0.1:{httpd.server_port} "
                      "(Ctrl-C stops)", highlight=False)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
        return
    from louder.view.data import load_view_data
    from louder.view.serve import serve_child

    try:
        data = load_view_data(run_dir)
    except LouderError as e:
        fail(str(e))
    console.print(f"louder view: {len(data.cases)} case(s) of {run_dir} on http://127.0.0.1:{port} (Ctrl-C stops; "
                  "--agents reads its agents' words)")
    env = {**os.environ, "LOUDER_VIEW_RUN": str(run_dir.resolve()), "LOUDER_VIEW_MAX_NODES": str(max_nodes)}
    cmd = [sys.executable, "-m", "solara", "run", "louder.view.app", "--host", "127.0.0.1", "--port", str(port),
           "--production", "--no-open", "--log-level", "warning"]
    raise typer.Exit(serve_child(cmd, env))  # stops the server when louder view is stopped


@app.command()
def check(
    config: Optional[Path] = typer.Argument(None, help="experiment config YAML (optional; its models are checked)"),
    model: Optional[list[str]] = typer.Option(None, "--model", "-m", help="model spec, repeatable"),
) -> None:
    """Preflight a remote model: reachable? model name served? which JSON modes and log-probs work?
    Prints one tab-separated row per capability, then the config line to use."""
    from louder.config import load_config
    from louder.llm.preflight import run_preflight
    from louder.llm.registry import backend_info
    from louder.llm.spec import parse_spec

    try:
        cfg = load_config(config, dict(models=model or None))
        remote = [m for m in cfg.models if backend_info(parse_spec(m.spec)[1]).preflight]
        if not remote:
            fail("louder check probes OpenAI-compatible and Ollama endpoints (openai:, ollama: specs); "
                 "the other backends need no check")
        usable = True
        typer.echo("model\tcapability\tstatus\tdetail")
        lines = []
        for m in remote:
            pf = run_preflight(m)
            for c in pf.capabilities:
                typer.echo(f"{m.spec}\t{c.name}\t{c.status}\t{c.detail}")
            usable = usable and pf.json_mode is not None
            lines.append(f"config: {pf.config_line()}" if pf.json_mode else
                         f"config: none — {m.spec} accepts no JSON mode")
        for line in lines:
            typer.echo(line)
    except LouderError as e:
        fail(str(e))
    if not usable:
        raise typer.Exit(1)


@app.command()
def backends() -> None:
    """The model backends louder knows (the registry): spec forms and what each can do."""
    from rich.table import Table

    from louder.llm.registry import backend_info, outside, prefixes

    table = Table(title="Model backends")
    for col in ("prefix", "spec forms", "score mode", "runs", "calls in flight", "API key", "reasoning control",
                "package"):
        table.add_column(col)
    packages = outside()
    for p in prefixes():
        try:
            info = backend_info(p)
        except LouderError as e:  # an outside package that fails to load: listed with the reason
            table.add_row(p, "–", "–", "–", "–", "–", "–", f"{packages.get(p, '?')} (cannot load: {e})")
            continue
        table.add_row(p, " | ".join(info.forms), "yes" if info.can_score else "no",
                      "here" if info.local else "remote", str(info.concurrency or "config"),
                      f"${info.needs_key}" if info.needs_key else "–",
                      ", ".join(info.reasoning_controls) or "–", packages.get(p, "louder"))
    console.print(table)


@app.command("kinds")
def kinds_cmd() -> None:
    """The kinds of run louder knows (the registry, louder/kinds.py): how each starts and what it writes."""
    from louder import kinds

    table = Table(title="Kinds of run")
    for col in ("kind", "started by", "writes", "what it does"):
        table.add_column(col)
    for name in kinds.names():
        k = kinds.get(name)
        start = "louder run (" + ("the default" if k.recognise is None else "recognised from the config") + ")" \
            if k.command == "run" else f"louder {k.command}"
        table.add_row(k.name, start, ", ".join(k.files), k.summary)
    console.print(table)


@app.command("measures")
def measures_cmd() -> None:
    """The measures `louder analyze` runs (the registry, louder/analysis/engine/registry.py): what each reads and
    writes, and its options with their defaults (`louder analyze RUN --set MEASURE.OPTION=VALUE`); an
    installed package adds its own (entry points `louder.measures`)."""
    from louder.analysis.engine import registry

    try:
        table = Table(title="Measures of the analysis (in the order they run)")
        for col in ("measure", "reads", "after", "writes", "what it measures", "package"):
            table.add_column(col)
        options = Table(title="Their options: louder analyze RUN --set MEASURE.OPTION=VALUE")
        for col in ("option", "type", "default", "shorthand", "what it sets"):
            options.add_column(col)
        for m in registry.measures():
            table.add_row(m.name, ", ".join(sorted({i.file for i in m.inputs})) or "–", ", ".join(m.after) or "–",
                          ", ".join(f"{t.name}.csv" for t in m.tables) or "(report only)", m.summary,
                          m.module.split(".")[0] if registry.outside(m) else "louder")
            for o in m.options:
                default = "–" if o.default in (None, ()) else str(o.default).lower() if o.type is bool else str(o.default)
                options.add_row(f"{m.name}.{o.name}", o.type_name, default, o.flag or "–", o.doc)
    except LouderError as e:
        fail(str(e))
    console.print(table, width=_width())
    console.print(options, width=_width())


def main() -> None:
    # Deprecation notices (old flat config keys) as one line, not Python's two-line warning format.
    warnings.formatwarning = lambda message, category, *_, **__: f"warning: {message}\n"
    # Ctrl-C: typer turns KeyboardInterrupt into exit 130 before it could reach here, so a run says
    # what it kept where it is stopped (``_execute``); elsewhere (reading a config) 130 says it all.
    app()


if __name__ == "__main__":
    main()
