"""The rich tables the command line prints: status and rate summaries of each kind of run."""

from __future__ import annotations

import json

import pandas as pd
from rich.table import Table

from louder.types import CASE_KEYS, STATUSES


def _status_cells(g: pd.DataFrame) -> list[str]:
    """The count of every status in ``g``, zeros included, in STATUSES order."""
    counts = g["status"].value_counts()
    return [str(int(counts.get(s, 0))) for s in STATUSES]


def _rate_cell(g: pd.DataFrame) -> str:
    """The target rate over ``g``'s valid answers, or – when none is valid."""
    valid = g[g["status"] == "valid"]
    return f"{valid['target'].astype(bool).mean():.2f}" if len(valid) else "–"


def rates_table(decisions: pd.DataFrame, title: str = "Target-decision rate per attribute") -> Table:
    """One row per case × attribute: the target rate over valid answers and every status count."""
    table = Table(title=title)
    for col in ("model", "condition", "scenario", "group", "attribute", "rate", *STATUSES):
        table.add_column(col, justify="right" if col in ("rate", *STATUSES) else "left")
    keys = CASE_KEYS + ["attribute"]
    for idx, g in decisions.groupby(keys, sort=False):
        table.add_row(*[str(x) for x in idx], _rate_cell(g), *_status_cells(g))
    return table


def dry_run_table(est: pd.DataFrame) -> Table:
    table = Table(title="Dry run: nothing was sent to any model")
    thinking = "reasoning_tokens" in est and bool((est["reasoning_tokens"] > 0).any())
    for col in ("model", "calls", "input tokens", "output tokens (typical / max)",
                *(("of which thinking",) if thinking else ()), "cost USD (typical / max)", "price"):
        table.add_column(col)
    for _, r in est.iterrows():
        cost = "unknown" if pd.isna(r["cost_usd"]) else f"{r['cost_usd']:,.2f} / {r['cost_usd_max']:,.2f}"
        table.add_row(r["model"], f"{r['calls']:,}", f"~{r['input_tokens']:,}",
                      f"~{r['output_tokens']:,} / {r['output_tokens_max']:,}",
                      *((f"~{r['reasoning_tokens']:,}",) if thinking else ()), cost, r["price"])
    return table


def test_table(df: pd.DataFrame, test: str) -> Table:
    """A Bai test: mean score over valid answers per model × stereotype, and every status."""
    keys = ["model", "stereotype"]
    table = Table(title=f"{test} test: mean score over valid answers, and every status")
    for col in ("model", "stereotype", "mean", "valid", "invalid", "refused", "error"):
        table.add_column(col)
    for idx, g in df.groupby(keys, sort=False):
        mean = g.loc[g["status"] == "valid", "score"].astype(float).mean()
        table.add_row(*idx, "–" if pd.isna(mean) else f"{mean:.3f}", *_status_cells(g))
    return table


def explicit_table(probes: pd.DataFrame) -> Table:
    """One row per probe case: how often each answer was given, and every status count."""
    table = Table(title="Explicit answers per case")
    for col in ("model", "scenario", "group", "answers (valid)", "valid", "invalid", "refused", "error"):
        table.add_column(col)
    for idx, g in probes.groupby(["model", "scenario", "group"], sort=False):
        answers = g.loc[g["status"] == "valid", "answer"].value_counts()
        table.add_row(*idx, ", ".join(f"{a}: {n}" for a, n in answers.items()) or "–", *_status_cells(g))
    return table


def cases_table(cases: pd.DataFrame, title: str | None = None) -> Table:
    table = Table(title=title or "DPD per case (significant = p_holm < 0.05, Holm across the run's cases; "
                  "threshold = the paper's parity threshold, 95th percentile of DPD under parity; "
                  "dpd_p = DPD of mean p_target in score mode; mdd = minimum detectable DPD at 80 % power)")
    for col in ("kind", "model", "condition", "scenario", "group", "dpd", "threshold", "p", "p_holm", "sig",
                "dpd_p [95 % CI]", "p_p", "mdd", "valid", "invalid", "refused", "error"):
        table.add_column(col)
    f = lambda v, d=3: "–" if pd.isna(v) else f"{v:.{d}f}"  # noqa: E731
    for _, r in cases.iterrows():
        mdd = ("" if r["kind"] == "explicit" else (">1" if pd.isna(r["mdd"]) else f(r["mdd"], 2)) +
               (" [yellow]underpowered[/]" if r["underpowered"] else ""))
        if r.get("interval_method", "bootstrap") != "bootstrap":  # a sequential run's case: no fixed-N power
            mdd = "–"
        table.add_row(r["kind"], r["model"], r["condition"], r["scenario"], r["group"], f"{r['dpd']:.3f}",
                      f(r["threshold"]), f(r["p_value"], 4), f(r["p_holm"], 4),
                      "[bold red]yes[/]" if r["significant"] else "no",
                      "–" if pd.isna(r["dpd_p"]) else f"{r['dpd_p']:.3f} [{r['ci_low_p']:.3f}, {r['ci_high_p']:.3f}]",
                      f(r["p_value_p"], 4), mdd,
                      *[str(int(r[f"n_{s}"])) for s in ("valid", "invalid", "refused", "error")])
    return table


def power_note(cases: pd.DataFrame) -> str | None:
    """One sentence in words for the cases whose test could not have seen a large DPD."""
    imp = cases[cases["kind"] == "implicit"]
    weak = imp[imp["underpowered"].astype(bool)]
    if weak.empty:
        return None
    return (f"{len(weak)} of {len(imp)} implicit cases are underpowered: with so few agents per attribute even a "
            "DPD of 0.3 would be missed more often than 1 time in 5, so a DPD near 0 or p = 1.0 there is "
            "not evidence of no bias. `louder plan` gives the agents per attribute a finding needs.")


def rounds_table(decisions: pd.DataFrame, control: pd.DataFrame | None = None) -> Table:
    """A network run: per case × round, the target rate per attribute and its DPD for the LLM and for
    the no-LLM control, and every status of the round's answers."""
    from louder.analysis.stats import dpd

    table = Table(title="Rounds of influence: target rate per attribute (LLM | control)")
    for col in ("case", "round", "LLM rates", "DPD", "control rates", "DPD ctl", *STATUSES):
        table.add_column(col, justify="left" if col in ("case", "LLM rates", "control rates") else "right")
    keys = CASE_KEYS

    def rates(g: pd.DataFrame) -> tuple[str, str]:
        valid = g[g["status"] == "valid"]
        r = valid.assign(t=valid["target"].astype(bool)).groupby("attribute")["t"].mean()
        return ", ".join(f"{a} {v:.2f}" for a, v in r.items()) or "–", (f"{dpd(r.to_numpy()):.2f}" if len(r) > 1
                                                                          else "–")

    ctl = control.groupby(keys + ["round"]) if control is not None else None
    for idx, g in decisions.groupby(keys + ["round"], sort=False):
        llm, d = rates(g)
        c, dc = rates(ctl.get_group(idx)) if ctl is not None and idx in ctl.groups else ("–", "–")
        table.add_row(" | ".join(map(str, idx[:4])), str(idx[4]), llm, d, c, dc, *_status_cells(g))
    return table


def population_rates_table(decisions: pd.DataFrame, title: str = "Target-decision rate per group attribute "
                           "(population run, unweighted)") -> Table:
    """Population runs: one row per case × variant × group × attribute (the ``attr_<group>`` columns)."""
    table = Table(title=title)
    for col in ("model", "condition", "scenario", "variant", "group", "attribute", "rate", *STATUSES):
        table.add_column(col, justify="right" if col in ("rate", *STATUSES) else "left")
    for col in [c for c in decisions.columns if c.startswith("attr_")]:
        for idx, g in decisions.groupby(["model", "condition", "scenario", "variant", col], sort=False):
            table.add_row(*[str(x) for x in idx[:4]], col.removeprefix("attr_"), str(idx[4]), _rate_cell(g),
                          *_status_cells(g))
    return table


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


def sequential_cases_table(seq: pd.DataFrame, s: dict) -> Table:
    """One row per tested case of a sequential run (``sequential.csv``); ``s``: the manifest's settings."""
    table = Table(title=f"Sequential: waves of {s['wave']} up to {s['budget']}, α = {s['alpha']} for every verdict "
                  f"of the run (Bonferroni over {s['pairs']} pairs of attributes); p = run-wide sequential p-value")
    keys = [c for c in seq.columns if c in ("model", "condition", "scenario", "variant", "group")]
    for col in (*keys, "stop", "waves", "agents", "DPD", "CS", "p"):
        table.add_column(col, justify="left" if col in keys or col == "stop" else "right")
    for _, r in seq.iterrows():
        table.add_row(*[str(r[k]) for k in keys], str(r["stop_reason"]), str(r["waves"]),
                      str(r["agents_per_attribute"]), f"{r['dpd']:.3f}", f"[{r['cs_low']:.3f}, {r['cs_high']:.3f}]",
                      f"{r['p_adjusted']:.3g}")
    return table


def simulation_console(result) -> list:
    d = result.tables["decisions.parquet"]
    if "respondent" not in d.columns:
        return [rates_table(d), *sequential_table(result), *_footer(result)]
    # a human study (issue 34): the usual agents, then the respondents' paired agents apart
    paired = d["respondent"].notna()
    title = ("Paired agents of the human study's respondents: target rate and statuses (`louder analyze` anchors the "
             "agents to the humans)")
    return [rates_table(d[~paired]), rates_table(d[paired], title),
            *sequential_table(result), *_footer(result)]


def network_console(result) -> list:
    return [rounds_table(result.tables["decisions.parquet"], result.tables["control.parquet"]), *_footer(result)]


def population_console(result) -> list:
    from louder.populations.fit import fit_errors

    p = result.manifest["population"]
    return [population_rates_table(result.tables["decisions.parquet"]),
            f"population {p['id']}: {p['n']} agents in {p['cells_drawn']} cells, {fit_errors(p)}, chi-square "
            f"{p['chi2']:.2f} (df {p['df']})", *sequential_table(result), *_footer(result)]


def archetype_console(result) -> list:
    m = result.manifest
    return [f"{m['population']['n']:,} agents × {m['network']['rounds'] + 1} rounds from "
            f"{m['rows']['archetype_calls']:,} archetype calls (status {m['status_counts']['archetype_calls']})",
            *_footer(result)]


def explicit_console(result) -> list:
    return [explicit_table(result.tables["probes.parquet"]), *_footer(result, "probes")]


def beliefs_table(beliefs: pd.DataFrame) -> Table:
    """The beliefs probe per scenario × attribute: mean valid answer / 100 and the status counts."""
    table = Table(title="Beliefs: out of 100 such people, how many would choose the target (mean of valid answers)")
    for col in ("model", "scenario", "group", "attribute", "belief rate", *STATUSES):
        table.add_column(col, justify="right" if col in ("belief rate", *STATUSES) else "left")
    for idx, g in beliefs.groupby(["model", "scenario", "group", "attribute"], sort=False):
        valid = g.loc[g["status"] == "valid", "answer"].astype(float)
        table.add_row(*map(str, idx), _f(valid.mean() / 100) if len(valid) else "–", *_status_cells(g))
    return table


def beliefs_console(result) -> list:
    return [beliefs_table(result.tables["beliefs.parquet"]), *_footer(result, "beliefs")]


def association_console(result) -> list:
    return [test_table(result.tables["association.parquet"], "association"), *_footer(result, "association")]


def decision_console(result) -> list:
    return [test_table(result.tables["decision_test.parquet"], "decision"), *_footer(result, "decision_test")]


def _f(v, d: int = 3) -> str:
    return "–" if pd.isna(v) else f"{v:.{d}f}"


def population_groups_table(groups: pd.DataFrame) -> Table:
    """A population run's answer, per case × group: the population-weighted DPD across the group's
    attributes with its interval, against the parity bootstrap (``population_groups.csv``)."""
    table = Table(title="Population: DPD per group (each rate population-weighted over the other groups; "
                        "significant = p_holm < 0.05, Holm across the table's rows)")
    for col in ("model", "condition", "scenario", "variant", "group", "valid", "dpd [95 % CI]", "threshold", "p",
                "p_holm", "sig"):
        table.add_column(col, justify="right" if col in ("valid", "threshold", "p", "p_holm") else "left")
    for _, r in groups.iterrows():
        table.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["variant"]), str(r["group"]),
                      str(int(r["n_valid"])), f"{_f(r['dpd'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}]",
                      _f(r["threshold"]), _f(r["p_value"], 4), _f(r.get("p_holm"), 4),
                      "[bold red]yes[/]" if r["significant"] else "no")
    return table


def regression_table(reg: pd.DataFrame) -> Table:
    """Per case: the logistic regression's odds ratios (each attribute against its group's reference,
    the other groups held fixed), or the status saying why there are none (``population_regression.csv``)."""
    table = Table(title="Population: logistic regression of the target decision on every group "
                        "(odds ratio against the group's most frequent attribute, other groups held fixed)")
    for col in ("model", "condition", "scenario", "variant", "status", "group", "attribute (vs reference)",
                "odds ratio [95 % CI]", "p", "left out"):
        table.add_column(col, justify="right" if col == "p" else "left")
    for _, r in reg.iterrows():
        ok = r["status"] == "ok"
        table.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["variant"]), str(r["status"]),
                      str(r["group"]) if ok else "", f"{r['attribute']} (vs {r['reference']})" if ok else "",
                      f"{_f(r['odds_ratio'], 2)} [{_f(r['lo'], 2)}, {_f(r['hi'], 2)}]" if ok else "",
                      _f(r["p_value"], 4) if ok else "", str(r["dropped"] or ""))
    return table


JOINT_LABEL_TITLE = ("Intersections as one group (joint label: every combination of the population's groups is "
                     "one attribute, so its DPD is the gap between the extreme cells — large and underpowered by "
                     "construction; the answer is in the two tables above)")


def analysis_tables(tables: dict[str, pd.DataFrame]) -> list[Table]:
    """What `louder analyze` prints, in order. A population run leads with its per-group DPDs and the
    regression; its cases table (the joint label) comes after them, titled as the intersections it is."""
    voices = [voices_table(tables["voices"])] if "voices" in tables else []
    if "anchored" in tables and len(tables["anchored"]):  # issue 34
        voices.append(anchored_table(tables["anchored"]))
    if "reasoning" in tables and len(tables["reasoning"]):  # issue 30
        voices.append(reasoning_levels_table(tables["reasoning"]))
    if "population_groups" not in tables:
        return [cases_table(tables["cases"]), *robustness_tables(tables), *voices]
    return [population_groups_table(tables["population_groups"]),
            regression_table(tables["population_regression"]),
            cases_table(tables["cases"], title=JOINT_LABEL_TITLE), *robustness_tables(tables), *voices]


def robustness_tables(tables: dict[str, pd.DataFrame]) -> list[Table]:
    """Issue 25: the pooled DPD over wordings (or orders) with its verdict, and the position bias."""
    out = []
    f = lambda v, d=3: "–" if pd.isna(v) else f"{v:.{d}f}"  # noqa: E731
    if "robustness" in tables and len(tables["robustness"]):
        t = Table(title="Robustness: DPD pooled over wordings (two-way interval); p and p_het Holm-adjusted across "
                        "the run's cases — docs/robustness.md")
        for col in ("model", "condition", "scenario", "group", "signal", "wordings × orders", "DPD per wording",
                    "pooled DPD [95 % CI]", "p", "p_het", "stability", "verdict"):
            t.add_column(col)
        for _, r in tables["robustness"].iterrows():
            per = ", ".join(f"{k} {f(v, 2)}" for k, v in json.loads(r["dpd_by_wording"]).items())
            t.add_row(r["model"], r["condition"], r["scenario"], r["group"], r["signal"],
                      f"{r['n_wordings']} × {r['n_orders']}", per,
                      f"{f(r['pooled_dpd'])} [{f(r['pooled_ci_low'])}, {f(r['pooled_ci_high'])}]",
                      f(r["p_disparity_holm"], 4), f(r["p_heterogeneity_holm"], 4), f(r["sign_stability"], 2),
                      r["verdict"])
        out.append(t)
    if "position_bias" in tables and len(tables["position_bias"]):
        t = Table(title="Position bias: rate of choosing the first-listed option (Wilson 95 % CI) against 1/k")
        for col in ("model", "scenario", "first-listed rate [95 % CI]", "expected", "n", "p", "mean p(first)"):
            t.add_column(col)
        for _, r in tables["position_bias"].iterrows():
            t.add_row(r["model"], r["scenario"], f"{f(r['rate_first_listed'])} [{f(r['ci_low'])}, {f(r['ci_high'])}]",
                      f(r["expected"]), str(r["n"]), f(r["p_value"], 4), f(r["mean_p_first_listed"]))
        out.append(t)
    return out


def reasoning_levels_table(reasoning: pd.DataFrame) -> Table:
    """Issue 30: the DPD per reasoning level and its change from the reference level (``reasoning.csv``)."""
    table = Table(title="Reasoning levels: does thinking change the bias? DPD [95 % CI] per level, change from the "
                        "reference level [95 % CI] — docs/how-to/reasoning-models.md")
    for col in ("model", "condition", "scenario", "group", "level", "DPD [95 % CI]", "change [95 % CI]", "verdict",
                "thinking", "reasoning tokens"):
        table.add_column(col)
    for _, r in reasoning.iterrows():
        change = "–" if r["verdict"] == "reference" else (
            f"{r['change']:+.2f} [{r['change_ci_low']:+.2f}, {r['change_ci_high']:+.2f}]")
        table.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["group"]), str(r["level"]),
                      f"{_f(r['dpd'], 2)} [{_f(r['ci_low'], 2)}, {_f(r['ci_high'], 2)}]", change, str(r["verdict"]),
                      "–" if pd.isna(r["thinking_share"]) else f"{r['thinking_share']:.0%}",
                      "–" if pd.isna(r["reasoning_tokens_mean"]) else f"{r['reasoning_tokens_mean']:.0f}")
    return table


def voices_table(voices: pd.DataFrame) -> Table:
    """Actions, words, beliefs and the world per case (``voices.csv``, docs/voices.md)."""
    table = Table(title="Actions, words, beliefs and the world: DPDs [95 % CI] (explicit* = share of answers, other "
                        "units); gaps higher − lower observed attribute; amplification = action gap / observed gap")
    for col in ("model", "scenario", "group", "action", "belief", "explicit*", "observed gap", "action gap",
                "amplification"):
        table.add_column(col)

    def ci(r, est, lo, hi):
        return "–" if pd.isna(r[est]) else f"{_f(r[est], 2)} [{_f(r[lo], 2)}, {_f(r[hi], 2)}]"

    for _, r in voices.iterrows():
        obs = "–" if pd.isna(r["observed_gap"]) else (f"{r['observed_higher']}−{r['observed_lower']} "
                                                      + ci(r, "observed_gap", "observed_ci_low", "observed_ci_high"))
        amp = "–" if pd.isna(r["amplification"]) else (ci(r, "amplification", "amp_ci_low", "amp_ci_high")
                                                       if not pd.isna(r["amp_ci_low"]) else
                                                       f"{_f(r['amplification'], 2)} (no interval: see note)")
        table.add_row(str(r["model"]), str(r["scenario"]), str(r["group"]),
                      ci(r, "action_dpd", "action_ci_low", "action_ci_high"),
                      ci(r, "belief_dpd", "belief_ci_low", "belief_ci_high"),
                      ci(r, "explicit_dpd", "explicit_ci_low", "explicit_ci_high"), obs,
                      ci(r, "action_gap", "action_gap_ci_low", "action_gap_ci_high"), amp)
    return table


def anchored_table(anchored: pd.DataFrame) -> Table:
    """Issue 34: per attribute the humans', agents' and PPI rates [95 % CI] (``anchored.csv``)."""
    table = Table(title="Anchored to a human study: target rate [95 % CI] of the humans, the agents and both by "
                        "prediction-powered inference; DPD of the PPI rates — docs/how-to/anchor-to-humans.md")
    for col in ("model", "condition", "scenario", "group", "attribute", "n humans", "humans", "agents", "PPI",
                "ess gained", "agreement", "DPD PPI [95 % CI]", "ratio agents ÷ humans"):
        table.add_column(col)

    def ci(r, est, lo, hi):
        return "–" if pd.isna(r[est]) else f"{_f(r[est], 2)} [{_f(r[lo], 2)}, {_f(r[hi], 2)}]"

    for _, r in anchored.iterrows():
        gained = "–" if pd.isna(r["ess_gained"]) else f"{round(r['ess_gained']) + 0.0:.0f}"  # never "-0"
        table.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["group"]), str(r["attribute"]),
                      str(r["n_humans"]), ci(r, "rate_humans", "ci_low_humans", "ci_high_humans"),
                      ci(r, "rate_agents", "ci_low_agents", "ci_high_agents"),
                      ci(r, "rate_ppi", "ci_low_ppi", "ci_high_ppi"), gained, _f(r["agreement"], 2),
                      ci(r, "dpd_ppi", "dpd_ci_low_ppi", "dpd_ci_high_ppi"),
                      ci(r, "ratio", "ratio_ci_low", "ratio_ci_high"))
    return table
