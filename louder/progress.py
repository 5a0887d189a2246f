"""The progress bar every long run shows (the CLI on stderr, the Python API in a terminal or notebook).

The runners report through one callback, ``on_progress(total, phase)``: ``(total, "start")`` once,
``(total, "total")`` for a new total, ``(0, text)`` for a status line (sequential runs: cases decided
/ running) and ``(0, "")`` per finished item.
"""

from __future__ import annotations

from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def progress_bar(label: str, console: Console | None = None,
                 remaining: bool = False) -> tuple[Callable[[int, str], None], Callable[..., None]]:
    """A started rich progress bar: ``(on_progress, close)``; ``remaining`` adds the time-left column.
    ``close(failed=True)`` takes the bar off the screen, so a failure's one line stands alone."""
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    bar = Progress(*columns, *([TimeRemainingColumn()] if remaining else []), console=console, transient=False)
    task = bar.add_task(label, total=None)
    bar.start()

    def on_progress(total: int, phase: str) -> None:
        if phase in ("start", "total"):
            bar.update(task, total=total)
        elif phase:
            bar.update(task, description=f"{label} · {phase}")
        else:
            bar.advance(task)

    def close(failed: bool = False) -> None:
        if failed:
            bar.live.transient = True
        bar.stop()

    return on_progress, close
