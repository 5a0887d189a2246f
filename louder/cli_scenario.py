"""``louder scenario``: work on scenario files — new wordings from a generator model (issue 25)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from louder.errors import LouderError

scenario_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                           help="Scenario files: paraphrase a scenario into checked wordings (docs/robustness.md).")
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


@scenario_app.command("paraphrase")
def paraphrase_cmd(
    scenario: str = typer.Argument(..., help="scenario id or YAML path"),
    out: Path = typer.Option(..., "--out", "-o", help="the scenario file to write (the scenario with the kept "
                             "paraphrases added under `wordings:`)"),
    n: int = typer.Option(5, "--n", help="paraphrases to ask for (one call each); those that pass the checks are kept"),
    generator: str = typer.Option("embedded", "--generator", help="model spec of the generator"),
    seed: int = typer.Option(0, "--seed", help="seed of the calls"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="SQLite cache of the calls (default: OUT with "
                                         ".cache.sqlite); a re-run with the same options calls no model"),
) -> None:
    """Ask a model for N paraphrases of SCENARIO, keep those that pass the checks (every label keeps its own
    description, no identity words brought in, length within bounds), list the rejected ones with the
    reason, and write the scenario with the kept ones as wordings (provenance: generator, prompt hash, time)."""
    from louder import paraphrase as P
    from louder.config import build_config
    from louder.llm.cache import ResponseCache
    from louder.prompts import Prompts
    from louder.records import open_session
    from louder.scenarios import load_scenario

    try:
        if n < 1:
            raise LouderError(f"--n {n}: ask for at least 1 paraphrase")
        s = load_scenario(scenario)
        cfg = build_config(dict(models=[generator], seed=seed, scenarios=[scenario]), where="scenario paraphrase")
        if cfg.models[0].api == "completion":
            raise LouderError(f"--generator {generator}: a completion model cannot answer the JSON format; use a "
                              "chat model spec")
        store = ResponseCache(cache or out.with_suffix(".cache.sqlite"))
        try:
            session = open_session(cfg, cfg.models[0], store, Prompts(), False,
                                   preflight_path=(cache or out).parent / "preflight.json")
            result = P.generate(session, s, n, seed)
        finally:
            store.close()
        path = P.write(s, P.scenario_path(scenario), result, cfg.models[0].label, seed, out)
    except LouderError as e:
        _fail(str(e))
    console.print(f"{s.id}: {len(result['kept'])} of {n} paraphrases kept, {len(result['rejected'])} rejected",
                  highlight=False)
    for r in result["rejected"]:
        console.print(f"  rejected candidate {r['candidate']} ({r['status']}): {r['reason']}", highlight=False)
    console.print(f"wrote {path} — run its wordings with `--scenario {path} --wording all` (docs/robustness.md)",
                  highlight=False)
