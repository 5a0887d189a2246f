"""The rich tables the command line prints after a run: what each kind of run prints (its console,
``louder.kinds``), the dry run's costs, and the rounds of a network run. A table is a frame and its
``Cell`` columns (``louder.analysis.engine.declarations``), drawn by the one renderer the analysis'
console tables use (``louder.analysis.report.console.frame_table``: fitted to the terminal)."""

from __future__ import annotations

import pandas as pd
from rich.table import Table
from rich.text import Text

from louder.analysis.engine.declarations import Cell
from louder.analysis.report.console import analysis_tables, frame_table, key, number
from louder.analysis.stats.keys import ATTRIBUTE_KEYS, CASE_KEYS, COUNT_COLUMNS, arm_keys, valid
from louder.analysis.stats.rates import rates
from louder.status import status_table
from louder.types import STATUSES

# --- the tables of a run ----------------------------------------------------------------------------

def _counts(*statuses: str) -> tuple[Cell, ...]:
    return tuple(Cell(s, lambda r, s=s: str(int(r[f"n_{s}"])), number=True, priority=1, name=f"n_{s}")
                 for s in statuses)


RATE = Cell("rate", lambda r: "–" if pd.isna(r["rate"]) else f"{r['rate']:.2f}", number=True, priority=1)


def rates_table(decisions: pd.DataFrame, title: str = "Target-decision rate per attribute",
                width: int | None = None) -> Table:
    """One row per case × attribute: the target rate over valid answers and every status count."""
    t = rates(decisions, ATTRIBUTE_KEYS)
    order = decisions[ATTRIBUTE_KEYS].dropna().drop_duplicates()  # the run's own order
    t = order.merge(t, on=ATTRIBUTE_KEYS, how="left")
    return frame_table(t, title, (*map(key, CASE_KEYS), Cell("attribute", "attribute", priority=1), RATE,
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
        key("model"), Cell("stereotype", "stereotype", priority=1),
        Cell("mean", lambda r: number(r["mean"]), number=True, priority=1), *_counts(*STATUSES)), width, hint=None)


def explicit_table(probes: pd.DataFrame, width: int | None = None) -> Table:
    """One row per probe case: how often each answer was given, and every status count."""
    keys = ["model", "scenario", "group"]
    t = status_table(probes, keys)
    answers = {k: ", ".join(f"{a}: {n}" for a, n in g["answer"].value_counts().items())
               for k, g in valid(probes).groupby(keys)}
    t["answers"] = [answers.get(tuple(r), "–") for r in t[keys].itertuples(index=False)]
    order = probes[keys].dropna().drop_duplicates()
    return frame_table(order.merge(t, on=keys, how="left"), "Explicit answers per case", (
        *map(key, keys), Cell("answers (valid)", "answers", priority=1), *_counts(*STATUSES)), width, hint=None)


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
        *map(key, case), Cell("round", lambda r: str(r["round"]), number=True, priority=1),
        Cell("LLM rates", lambda r: r["rates"] if isinstance(r["rates"], str) else "–", priority=1),
        Cell("DPD", lambda r: number(r["dpd"], 2), number=True, priority=1),
        Cell("control rates", lambda r: r.get("rates_ctl") if isinstance(r.get("rates_ctl"), str) else "–",
             priority=1),
        Cell("DPD ctl", lambda r: number(r.get("dpd_ctl"), 2), number=True, priority=1),
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
    return frame_table(t, title, (*map(key, keys), Cell("group", "group", priority=1),
                                  Cell("attribute", "attribute", priority=1), RATE, *_counts(*STATUSES)),
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
        *map(key, keys[:3]), Cell("attribute", "attribute", priority=1),
        Cell("belief rate", lambda r: number(r["belief"]), number=True, priority=1), *_counts(*STATUSES)), width,
        hint=None)


def beliefs_console(result) -> list:
    return [beliefs_table(result.tables["beliefs.parquet"]), *_footer(result, "beliefs")]


def association_console(result) -> list:
    return [test_table(result.tables["association.parquet"], "association"), *_footer(result, "association")]


def decision_console(result) -> list:
    return [test_table(result.tables["decision_test.parquet"], "decision"), *_footer(result, "decision_test")]


__all__ = ["COUNT_COLUMNS", "analysis_tables", "frame_table"]
