"""``louder batch``: run an experiment through batch engines (OpenAI Batch API, vLLM run_batch)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from louder.errors import LouderError

batch_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                        help="Batch files for the OpenAI Batch API and vLLM run_batch: export, import, status, "
                             "submit, poll.")
console = Console()
err_console = Console(stderr=True)

ConfigArg = Annotated[Optional[Path], typer.Argument(help="experiment config YAML (the same file as `louder run`)")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="run folder")]
ModelOpt = Annotated[Optional[list[str]], typer.Option("--model", "-m", help="model spec, repeatable (openai:…)")]
AgentsOpt = Annotated[Optional[int], typer.Option("--agents", "-n", help="agents per attribute per case")]
ScenarioOpt = Annotated[Optional[list[str]], typer.Option("--scenario", "-s", help="scenario id or YAML, repeatable")]
GroupOpt = Annotated[Optional[list[str]], typer.Option("--group", "-g", help="group id or YAML, repeatable")]
SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="root seed")]
KindOpt = Annotated[Optional[list[str]], typer.Option(
    "--kind", "-k", help="simulation (default: what `louder run` runs with the config) or a probe kind "
    "(`louder kinds` lists them), repeatable")]


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _config(config, model, agents, scenario, group, seed):
    from louder.config import load_config

    return load_config(config, dict(models=model or None, agents=agents, scenarios=scenario or None,
                                    groups=group or None, seed=seed))


@batch_app.command("export")
def export_cmd(config: ConfigArg = None, out: OutOpt = ..., model: ModelOpt = None, agents: AgentsOpt = None,
               scenario: ScenarioOpt = None, group: GroupOpt = None, seed: SeedOpt = None,
               kind: KindOpt = None,
               unanswered: Annotated[bool, typer.Option(
                   "--unanswered", help="also export again the requests whose file's results came back without "
                                        "them (a cut line, an expired batch)")] = False,
               retry_errors: Annotated[bool, typer.Option(
                   "--retry-errors", help="also export again the requests whose answer came back as an error "
                                          "(as `louder run --retry-errors` asks them live)")] = False) -> None:
    """Write RUN_DIR/batch/requests-<stage>.jsonl: every request the experiment needs now (cache misses)."""
    from louder.batching import export, status

    try:
        cfg = _config(config, model, agents, scenario, group, seed)
        stage, files, n = export(cfg, out, kind or ["simulation"], unanswered=unanswered, retry_errors=retry_errors)
        if not files:
            st = status(cfg, out, kind or ["simulation"])
    except LouderError as e:
        _fail(str(e))
    if not files:
        console.print(f"nothing to export; next: {st.next_step}", highlight=False, soft_wrap=True)
        return
    for f in files:
        console.print(f"wrote {f}")
    console.print(f"stage {stage}: {n} requests")


@batch_app.command("import")
def import_cmd(files: Annotated[list[Path], typer.Argument(help="batch result file(s) (.jsonl)")],
               out: OutOpt = ..., config: Annotated[Optional[Path], typer.Option(
                   "--config", help="experiment config (only for a cache path set in it)")] = None) -> None:
    """Store the answers of batch result files in the run's cache; count every other line."""
    from louder.batching import import_file
    from louder.config import load_config

    table = Table(title="batch import")
    cols = ("file", "lines", "stored", "errors", "duplicates", "already_cached", "unknown", "malformed")
    for c in cols:
        table.add_column(c)
    try:
        cfg = load_config(config, {})
        for f in files:
            s = import_file(f, out, cfg)
            table.add_row(f.name, *[str(getattr(s, c)) for c in cols[1:]])
            for kind, lines in s.examples.items():
                if kind not in ("stored",):
                    console.print(f"[yellow]{f.name}: {kind}[/] at lines {', '.join(lines)}"
                                  f"{' …' if getattr(s, kind) > len(lines) else ''}", highlight=False)
    except LouderError as e:
        _fail(str(e))
    console.print(table)


@batch_app.command("status")
def status_cmd(config: ConfigArg = None, out: OutOpt = ..., model: ModelOpt = None, agents: AgentsOpt = None,
               scenario: ScenarioOpt = None, group: GroupOpt = None, seed: SeedOpt = None,
               kind: KindOpt = None) -> None:
    """Which stage is next and how many requests remain (calls no model)."""
    from louder.batching import status

    try:
        st = status(_config(config, model, agents, scenario, group, seed), out, kind or ["simulation"])
    except LouderError as e:
        _fail(str(e))
    console.print(f"stages exported: {st.stage} ({', '.join(f'{k}: {v}' for k, v in sorted(st.stages.items())) or '–'})")
    for line in (f"requests needed now: {st.needed} (never exported: {st.new}; no answer in their file's "
                 f"results: {st.unanswered})",
                 f"exported, awaiting results: {st.exported}; answered with an error: {st.errors}",
                 f"next: {st.next_step}"):
        console.print(line, highlight=False, soft_wrap=True)


@batch_app.command("submit")
def submit_cmd(config: ConfigArg = None, out: OutOpt = ..., model: ModelOpt = None) -> None:
    """Upload exported request files to the OpenAI Batch API (openai SDK) and create their batches."""
    from louder.batching import submit
    from louder.config import load_config

    try:
        made = submit(load_config(config, dict(models=model or None)), out)
    except LouderError as e:
        _fail(str(e))
    for name, bid in made:
        console.print(f"submitted {name}: batch {bid}")
    if not made:
        console.print("nothing to submit")


@batch_app.command("poll")
def poll_cmd(config: ConfigArg = None, out: OutOpt = ..., model: ModelOpt = None) -> None:
    """Check submitted batches; download and import the results of those that ended."""
    from louder.batching import poll
    from louder.config import load_config

    try:
        report = poll(load_config(config, dict(models=model or None)), out)
    except LouderError as e:
        _fail(str(e))
    for name, state, summary in report:
        extra = "" if summary is None else (f": {summary.stored} stored ({summary.errors} errors), "
                                            f"{summary.malformed} malformed, {summary.unknown} unknown")
        console.print(f"{name}: {state}{extra}")
