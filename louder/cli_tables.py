"""The rich tables the command line prints: one renderer (``frame_table``) for every table, fitted to
the terminal, and what each kind of run prints after it runs.

A table is a frame and its ``Show`` columns (``louder.analysis.engine.registry``): the analysis tables are
declared by their measures (``View``), the run tables below. The renderer shows the key columns at
the terminal's width — a column every row shares (one model, one condition) is said once under the
table instead, a column that is empty in every row is left out, and columns of priority 2 are
dropped from the right until the table fits; priority 3 only with ``--wide`` or ``--columns``.
Numbers are right-aligned; cell text is never read as rich markup (a scenario "x [mandatory]" keeps
its brackets).
"""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console
from rich.table import Table
from rich.text import Text

from louder.analysis.engine.registry import Show, View, key, number
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS, arm_keys, valid
from louder.analysis.stats.rates import rates
from louder.errors import LouderError
from louder.status import status_table
from louder.types import STATUSES

EMPTY = ("", "–")
HINT = "louder analyze --wide, or --columns NAME,…"


def _cell(show: Show, row) -> str:
    if isinstance(show.value, str):
        v = row[show.value]
        if isinstance(v, float):
            return "–" if pd.isna(v) else f"{v:.3f}"
        return "–" if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v)
    return show.value(row)


MIN_TEXT = 12  # a text column squeezed to fit still keeps this many characters (then it folds)


def _build(title, shows: list[Show], cells: dict, styles: dict, n: int, caption: str | None) -> Table:
    table = Table(title=title, caption=caption, caption_justify="left")
    for s in shows:
        widest = max([len(s.header), *map(len, cells[s])])
        table.add_column(s.header, justify="right" if s.number else "left", no_wrap=s.number, overflow="fold",
                         min_width=None if s.number else min(widest, MIN_TEXT))
    for i in range(n):
        table.add_row(*[Text(cells[s][i], style=styles[s][i] or "") for s in shows])
    return table


def _fits(table: Table, width: int) -> bool:
    """The table's natural width (measured without a limit) is within ``width``."""
    return Console(width=100_000, file=io.StringIO()).measure(table).maximum <= width


def pick(shows: list[Show], names: list[str]) -> list[Show]:
    """The ``shows`` that ``--columns`` names (by name or header), in the order named."""
    by = {}
    for s in shows:
        by.setdefault(s.key.lower(), s)
        by.setdefault(s.header.lower(), s)
    return list(dict.fromkeys(by[n.lower()] for n in names if n.lower() in by))


def frame_table(df: pd.DataFrame, title, shows: tuple[Show, ...] | list[Show], width: int | None = None,
                wide: bool = False, columns: list[str] | None = None, hint: str | None = HINT) -> Table:
    """``df`` as a rich table of ``shows`` at ``width`` (module docstring); ``columns`` names the columns
    to show instead (``--columns``), ``wide`` shows every column."""
    rows = [r for _, r in df.iterrows()]
    shows = [s for s in shows if not isinstance(s.value, str) or s.value in df.columns]
    cells = {s: [_cell(s, r) for r in rows] for s in shows}
    styles = {s: [s.style(r) if s.style else None for r in rows] for s in shows}
    named = pick(shows, columns) if columns else []
    # a key column every row shares is said once, under the table; a column empty in every row is left out
    shared = [s for s in shows if s.identity and rows and not named and len(set(cells[s])) == 1]
    blank = [s for s in shows if set(cells[s]) <= set(EMPTY)]
    said = [f"{s.header} {cells[s][0]}" for s in shared]
    if named:
        chosen = named
    else:
        chosen = [s for s in shows if s not in shared and s not in blank and (wide or s.priority < 3)]
    hidden = [s for s in shows if s not in chosen and s not in shared and s not in blank]

    def caption(hide: list[Show]) -> str | None:
        parts = []
        if said:
            parts.append("all rows: " + " · ".join(said))
        if hide and hint:
            hide = [s for s in shows if s in hide]  # in the table's order
            parts.append(f"{len(hide)} more column(s): {', '.join(s.key for s in hide)} ({hint})")
        return "\n".join(parts) or None

    table = _build(title, chosen, cells, styles, len(rows), caption(hidden))
    if width and not (wide or named):
        optional = [s for s in chosen if s.priority == 2]
        while not _fits(table, width) and optional:
            drop = optional.pop()  # the rightmost optional column first
            chosen.remove(drop)
            hidden.append(drop)
            table = _build(title, chosen, cells, styles, len(rows), caption(hidden))
    return table


def view_table(view: View, ctx, width: int | None = None, wide: bool = False,
               columns: list[str] | None = None) -> Table | None:
    """A measure's console view, of the measure's context ``ctx`` (None when it has no rows)."""
    df = view.frame(ctx)
    if df is None or df.empty:
        return None
    title = view.title(ctx) if callable(view.title) else view.title
    return frame_table(df, title, view.columns, width, wide, columns)


def analysis_views(a) -> list[tuple[View, object]]:
    """Every measure's console views that apply to the analysis ``a``, in their order, each with its
    measure's context."""
    from louder.analysis.engine import registry

    return sorted(((v, a.context(m)) for m in registry.measures() if a.applies(m) for v in m.views),
                  key=lambda vc: vc[0].position)


def analysis_tables(a, width: int | None = None, wide: bool = False, columns: list[str] | None = None) -> list[Table]:
    """What `louder analyze` prints, in order (a population run leads with its per-group DPDs and its
    regression; its cases table, the joint label, comes after them, titled as the intersections it is)."""
    pairs = analysis_views(a)
    views = [v for v, _ in pairs]
    if columns:
        known = {k for v in views for s in v.columns for k in (s.key.lower(), s.header.lower())}
        unknown = [c for c in columns if c.lower() not in known]
        if unknown:
            names = sorted({s.key for v in views for s in v.columns})
            raise LouderError(f"--columns {','.join(unknown)}: no such column in these tables; use some of "
                              f"{', '.join(names)}")
    return [t for v, ctx in pairs if (t := view_table(v, ctx, width, wide, columns)) is not None]


# --- the tables of a run ----------------------------------------------------------------------------

def _counts(*statuses: str) -> tuple[Show, ...]:
    return tuple(Show(s, lambda r, s=s: str(int(r[f"n_{s}"])), number=True, priority=1, name=f"n_{s}")
                 for s in statuses)


RATE = Show("rate", lambda r: "–" if pd.isna(r["rate"]) else f"{r['rate']:.2f}", number=True, priority=1)


def rates_table(decisions: pd.DataFrame, title: str = "Target-decision rate per attribute",
                width: int | None = None) -> Table:
    """One row per case × attribute: the target rate over valid answers and every status count."""
    t = rates(decisions, ATTRIBUTE_KEYS)
    order = decisions[ATTRIBUTE_KEYS].dropna().drop_duplicates()  # the run's own order
    t = order.merge(t, on=ATTRIBUTE_KEYS, how="left")
    return frame_table(t, title, (*map(key, CASE_KEYS), Show("attribute", "attribute", priority=1), RATE,
                                  *_counts(*STATUSES)), width, hint=None)


def dry_run_table(est: pd.DataFrame) -> Table:
    table = Table(title="Dry run: nothing was sent to any model")
    thinking = "reasoning_tokens" in est and bool((est["reasoning_tokens"] > 0).any())
    for col in ("model", "calls", "input tokens", "output tokens (typical / max)",
                *(("of which thinking",) if thinking else ()), "cost USD (typical / max)", "price"):
        table.add_column(col)
    for _, r in est.iterrows():
        cost = "unknown" if pd.isna(r["cost_usd"]) else f"{r['cost_usd']:,.2f} / {r['cost_usd_max']:,.2f}"
        table.add_row(Text(r["model"]), f"{r['calls']:,}", f"~{r['input_tokens']:,}",
                      f"~{r['output_tokens']:,} / {r['output_tokens_max']:,}",
                      *((f"~{r['reasoning_tokens']:,}",) if thinking else ()), cost, Text(r["price"]))
    return table


def test_table(df: pd.DataFrame, test: str, width: int | None = None) -> Table:
    """A Bai test: mean score over valid answers per model × stereotype, and every status."""
    keys = ["model", "stereotype"]
    t = status_table(df, keys)
    means = valid(df).groupby(keys)["score"].apply(lambda s: s.astype(float).mean())
    t = t.merge(means.rename("mean").reset_index(), on=keys, how="left")
    return frame_table(t, f"{test} test: mean score over valid answers, and every status", (
        key("model"), Show("stereotype", "stereotype", priority=1),
        Show("mean", lambda r: number(r["mean"]), number=True, priority=1), *_counts(*STATUSES)), width, hint=None)


def explicit_table(probes: pd.DataFrame, width: int | None = None) -> Table:
    """One row per probe case: how often each answer was given, and every status count."""
    keys = ["model", "scenario", "group"]
    t = status_table(probes, keys)
    answers = {k: ", ".join(f"{a}: {n}" for a, n in g["answer"].value_counts().items())
               for k, g in valid(probes).groupby(keys)}
    t["answers"] = [answers.get(tuple(r), "–") for r in t[keys].itertuples(index=False)]
    order = probes[keys].dropna().drop_duplicates()
    return frame_table(order.merge(t, on=keys, how="left"), "Explicit answers per case", (
        *map(key, keys), Show("answers (valid)", "answers", priority=1), *_counts(*STATUSES)), width, hint=None)


def rounds_table(decisions: pd.DataFrame, control: pd.DataFrame | None = None, width: int | None = None) -> Table:
    """A network run: per case × round, the target rate per attribute and its DPD for the LLM and for
    the no-LLM control, and every status of the round's answers."""
    from louder.analysis.stats.rates import difference

    case = [*CASE_KEYS, *arm_keys(decisions)]  # each arm of a network run plays its own rounds
    by = [*case, "round"]

    def summary(rows: pd.DataFrame) -> pd.DataFrame:
        r = rates(rows, [*by, "attribute"])
        text = {k: ", ".join(f"{a} {v:.2f}" for a, v in zip(g["attribute"], g["rate"]))
                for k, g in r.dropna(subset=["rate"]).groupby(by)}
        d = difference(r, by)
        d["rates"] = [text.get(tuple(k), "–") for k in d[by].itertuples(index=False)]
        return d[[*by, "dpd", "rates"]]

    t = status_table(decisions, by).merge(summary(decisions), on=by, how="left")
    if control is not None:
        t = t.merge(summary(control).rename(columns={"dpd": "dpd_ctl", "rates": "rates_ctl"}), on=by, how="left")
    t = decisions[by].dropna().drop_duplicates().merge(t, on=by, how="left")
    return frame_table(t, "Rounds of influence: target rate per attribute (LLM | control)", (
        *map(key, case), Show("round", lambda r: str(r["round"]), number=True, priority=1),
        Show("LLM rates", lambda r: r["rates"] if isinstance(r["rates"], str) else "–", priority=1),
        Show("DPD", lambda r: number(r["dpd"], 2), number=True, priority=1),
        Show("control rates", lambda r: r.get("rates_ctl") if isinstance(r.get("rates_ctl"), str) else "–",
             priority=1),
        Show("DPD ctl", lambda r: number(r.get("dpd_ctl"), 2), number=True, priority=1),
        *_counts(*STATUSES)), width, hint=None)


def population_rates_table(decisions: pd.DataFrame, title: str = "Target-decision rate per group attribute "
                           "(population run, unweighted)", width: int | None = None) -> Table:
    """Population runs: one row per case × variant × group × attribute (the ``attr_<group>`` columns)."""
    keys = ["model", "condition", "scenario", "variant"]
    frames = []
    for col in [c for c in decisions.columns if c.startswith("attr_")]:
        t = rates(decisions, [*keys, col]).rename(columns={col: "attribute"})
        order = decisions[[*keys, col]].dropna().drop_duplicates().rename(columns={col: "attribute"})
        frames.append(order.merge(t, on=[*keys, "attribute"], how="left").assign(group=col.removeprefix("attr_")))
    t = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*keys, "group", "attribute"])
    return frame_table(t, title, (*map(key, keys), Show("group", "group", priority=1),
                                  Show("attribute", "attribute", priority=1), RATE, *_counts(*STATUSES)),
                       width, hint=None)


# --- what `louder run` / `louder probe …` print after a run (each kind names its own, louder/kinds.py) ---

def _footer(result, main: str = "decisions") -> list[str]:
    m = result.manifest
    files = ", ".join(f"{name} ({len(df):,} rows)" for name, df in result.tables.items())
    return [f"wrote {result.out}/: {files}, {result.manifest_file}",
            f"model_calls: {m['model_calls']} ({'at the budget' if 'sequential' in m else 'planned for a cold run'}: "
            f"{m['planned_calls']})  cache_hits: "
            f"{m['cache_hits']}  wall_time_s: {m['wall_time_s']}",
            f"status counts: {m['status_counts'].get(main, m['status_counts'])}"]


def sequential_table(result) -> list:
    """Sequential runs (issue 20): per case, how it stopped, after how many agents, and its DPD CS."""
    if "sequential.csv" not in result.tables:
        return []
    return [sequential_cases_table(result.tables["sequential.csv"], result.manifest["sequential"])]


def sequential_cases_table(seq: pd.DataFrame, s: dict, width: int | None = None) -> Table:
    """One row per tested case of a sequential run (``sequential.csv``); ``s``: the manifest's settings."""
    from louder.analysis.measures.sequential import COLUMNS, console_title

    return frame_table(seq, console_title(s), COLUMNS, width, hint=None)


def simulation_console(result) -> list:
    d = result.tables["decisions.parquet"]
    if "respondent" not in d.columns:
        return [rates_table(d), *sequential_table(result), *_footer(result)]
    # a human study (issue 34): the usual agents, then the respondents' paired agents apart
    paired = d["respondent"].notna()
    title = ("Paired agents of the human study's respondents: target rate and statuses (`louder analyze` anchors the "
             "agents to the humans)")
    if "grounding" not in d.columns:
        return [rates_table(d[~paired]), rates_table(d[paired], title), *sequential_table(result), *_footer(result)]
    # grounded agents (issue 44): each kind apart (the attribute-only pairs, the grounded ones, the unlabelled)
    kinds = {"attribute": title, "grounded": "Grounded agents of the respondents (persona written from the profile): "
             "target rate and statuses", "unlabelled": "Grounded agents of the unlabelled profiles: target rate and "
             "statuses"}
    return [rates_table(d[~paired]), *(rates_table(d[d["grounding"] == k], t) for k, t in kinds.items()
                                       if (d["grounding"] == k).any()), *sequential_table(result), *_footer(result)]


def network_console(result) -> list:
    return [rounds_table(result.tables["decisions.parquet"], result.tables["control.parquet"]), *_footer(result)]


def population_console(result) -> list:
    from louder.populations.fit import fit_line

    return [population_rates_table(result.tables["decisions.parquet"]), fit_line(result.manifest["population"]),
            *sequential_table(result), *_footer(result)]


def archetype_console(result) -> list:
    m = result.manifest
    return [f"{m['population']['n']:,} agents × {m['network']['rounds'] + 1} rounds from "
            f"{m['rows']['archetype_calls']:,} archetype calls (status {m['status_counts']['archetype_calls']})",
            *_footer(result)]


def explicit_console(result) -> list:
    return [explicit_table(result.tables["probes.parquet"]), *_footer(result, "probes")]


def beliefs_table(beliefs: pd.DataFrame, width: int | None = None) -> Table:
    """The beliefs probe per scenario × attribute: mean valid answer / 100 and the status counts."""
    keys = ["model", "scenario", "group", "attribute"]
    t = status_table(beliefs, keys)
    means = valid(beliefs).groupby(keys)["answer"].apply(lambda s: s.astype(float).mean() / 100)
    t = beliefs[keys].dropna().drop_duplicates().merge(t.merge(means.rename("belief").reset_index(), on=keys, how="left"),
                                              on=keys, how="left")
    return frame_table(t, "Beliefs: out of 100 such people, how many would choose the target (mean of valid answers)", (
        *map(key, keys[:3]), Show("attribute", "attribute", priority=1),
        Show("belief rate", lambda r: number(r["belief"]), number=True, priority=1), *_counts(*STATUSES)), width,
        hint=None)


def beliefs_console(result) -> list:
    return [beliefs_table(result.tables["beliefs.parquet"]), *_footer(result, "beliefs")]


def association_console(result) -> list:
    return [test_table(result.tables["association.parquet"], "association"), *_footer(result, "association")]


def decision_console(result) -> list:
    return [test_table(result.tables["decision_test.parquet"], "decision"), *_footer(result, "decision_test")]


__all__ = ["COUNT_COLUMNS", "analysis_tables", "frame_table", "view_table"]
