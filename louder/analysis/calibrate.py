"""``louder adjust RUN --to parity | observed``: fit calibration offsets on a finished run and write
them as ``adjustment.yaml`` (louder.calibration), for ``louder run --adjustment FILE``.

The offsets are ``louder.analysis.adjustment.calibration_offsets``' (docs/statistics.md), per model ×
condition × scenario × group × attribute, fitted on the decisions every per-case table reads: round 0
of a network run, the decisions under ``none``, the reference wording and reasoning level, the stated
signal, the base policy variant (a population run: every group of the population at once)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from louder.analysis.adjustment import OFFSET_COLUMNS, calibration_offsets
from louder.errors import LouderError

BY = ("model", "condition", "scenario")
HEADER = """\
# Calibration offsets written by `louder adjust` (docs/how-to/test-a-mitigation.md#calibrate-the-agents).
# Apply them with `louder run --adjustment FILE` (score mode): each agent's target-choice probability p
# becomes expit(logit p + offset), the offsets of its attributes added. `se` is each offset's standard
# error: a re-run as large as the run they were fitted on keeps a residual disparity of that order, so
# fit them on a run several times larger than the one you test.
"""


def calibration_view(decisions: pd.DataFrame) -> pd.DataFrame:
    """The decisions offsets are fitted on (the module docstring)."""
    from louder.analysis import interventions as IV
    from louder.analysis import reasoning as RS

    d = decisions
    if "round" in d.columns:
        d = d[d["round"] == 0]
    d = IV.reference_view(RS.level_view(d))
    d = RS.wording_view(d) if "wording" in d.columns else d
    if "signal" in d.columns and d["signal"].nunique() > 1:
        d = d[d["signal"] == "stated"]
    return d.reset_index(drop=True)


def observed_rates(path: str | Path) -> pd.DataFrame:
    """An observed-rates file (docs/voices.md's format) as the table calibration reads: scenario, group,
    attribute, rate."""
    from louder.analysis.voices import load_observed

    return pd.DataFrame([dict(scenario=e.scenario, group=e.group, attribute=e.attribute, rate=e.rate)
                         for e in load_observed(path)])


def fit(run_dir: str | Path, to: str = "parity", observed: str | Path | None = None) -> pd.DataFrame:
    """The offsets of a run folder (columns ``model``, ``condition``, ``scenario`` and OFFSET_COLUMNS)."""
    run = Path(run_dir)
    if to not in ("parity", "observed"):
        raise LouderError(f"--to {to}: use parity (every attribute at the pooled rate) or observed (the rates of "
                          "--observed FILE)")
    if to == "observed" and observed is None:
        raise LouderError("--to observed needs --observed FILE: observed rates per scenario, group and attribute "
                          "(docs/voices.md)")
    path = run / "decisions.parquet"
    if not path.exists():
        raise LouderError(f"{run}: no decisions.parquet; run `louder run --out {run}` first (offsets are fitted on a "
                          "finished run)")
    d = calibration_view(pd.read_parquet(path))
    if "attr_" not in "".join(d.columns) and "cell_id" in d.columns:
        raise LouderError(f"{run}: archetype runs score population cells, not agents; fit offsets on an agents run")
    rates = observed_rates(observed) if to == "observed" else None
    try:
        t = calibration_offsets(d, to=to, observed=rates, by=BY)
    except LouderError as e:
        raise LouderError(f"louder adjust {run}: {e}") from None
    if t.empty:
        raise LouderError(f"{run}: no valid decisions to fit offsets on")
    return t


def write(table: pd.DataFrame, path: str | Path, to: str, run: str | Path, observed: str | Path | None = None) -> Path:
    """``table`` as an adjustment file (louder.calibration.Adjustment) at ``path``."""
    from louder.calibration import Adjustment
    from louder.io import write_text

    rows = []
    for r in table.to_dict("records"):
        row = {k: r[k] for k in (*BY, "group", "attribute")}
        row = {k: str(v) for k, v in row.items()}
        row.update(offset=float(r["offset"]), se=None if pd.isna(r["se"]) else round(float(r["se"]), 6),
                   n=int(r["n"]), rate=round(float(r["rate"]), 6), target=round(float(r["target"]), 6),
                   rate_adjusted=round(float(r["rate_adjusted"]), 6))
        rows.append(row)
    doc = dict(to=to, source=str(table["source"].iloc[0]), run=str(Path(run).resolve()),
               observed=None if observed is None else str(Path(observed).resolve()), offsets=rows)
    Adjustment.model_validate(doc)  # what `louder run --adjustment` will read
    out = Path(path)
    write_text(HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120), out)
    return out


def console_table(table: pd.DataFrame):
    """What `louder adjust` prints: one row per offset."""
    from rich.table import Table

    f = lambda v, d=3: "–" if pd.isna(v) else f"{v:.{d}f}"  # noqa: E731
    t = Table(title=f"Calibration offsets to {table['to'].iloc[0]} (logit scale; from {table['source'].iloc[0]}-mode "
                    "data): rate before → target → rate after on this run")
    for col in ("model", "condition", "scenario", "group", "attribute", "n", "rate", "target", "offset ± se",
                "rate after"):
        t.add_column(col)
    for r in table.to_dict("records"):
        t.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["group"]), str(r["attribute"]),
                  str(r["n"]), f(r["rate"]), f(r["target"]), f"{r['offset']:+.3f} ± {f(r['se'])}",
                  f(r["rate_adjusted"]))
    return t


__all__ = ["OFFSET_COLUMNS", "calibration_view", "console_table", "fit", "observed_rates", "write"]
