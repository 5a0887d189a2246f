"""Does a prompt intervention change the disparity? (issue 33; docs/how-to/test-a-mitigation.md)

``interventions.csv``: per case and intervention, the DPD under ``none`` and under the intervention,
the change with its paired-bootstrap interval and the paired permutation test, the side effects (the
overall target-rate shift, the share of agents whose decision changed) and a ``verdict`` —
``reduces``, ``increases``, ``no change`` or ``underpowered``. The statistics are
``louder.analysis.adjustment.intervention_table``'s (docs/statistics.md); this module picks the
rows it reads, and draws the report's section, figure and console table.

Every other table of the analysis reads the decisions under ``none`` only (``reference_view``): each
agent answers once per intervention, so pooling them would count one agent's answers as several
people."""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd

from louder.analysis.adjustment import INTERVENTION_COLUMNS, intervention_table
from louder.analysis.html import note, png, section, table

COLUMN = "intervention"
NONE = "none"
KEYS = ["model", "condition", "scenario", "group"]
VERDICT_COLORS = {"reduces": "#2980b9", "increases": "#c0392b", "no change": "#2c3e50", "underpowered": "#7f8c8d"}


def levels_of(decisions: pd.DataFrame | None) -> list[str]:
    """The interventions of a run, ``none`` first (the reference), then in order of appearance."""
    if decisions is None or COLUMN not in decisions or decisions.empty:
        return []
    seen = list(dict.fromkeys(decisions[COLUMN].fillna(NONE).astype(str)))
    return ([NONE] if NONE in seen else []) + [x for x in seen if x != NONE]


def varies(decisions: pd.DataFrame | None) -> bool:
    """Whether the run decided under more than one intervention."""
    return len(levels_of(decisions)) > 1


def reference_view(decisions: pd.DataFrame | None) -> pd.DataFrame | None:
    """The decisions the other tables read: those under ``none`` (else the run's first intervention)."""
    if not varies(decisions):
        return decisions
    ref = levels_of(decisions)[0]
    return decisions[decisions[COLUMN].fillna(NONE).astype(str) == ref].reset_index(drop=True)


# interventions.csv: the statistics' columns, then the explicit side effect, then the verdict
COLUMNS = [*INTERVENTION_COLUMNS[:-1], "explicit_dpd_none", "explicit_dpd", "verdict"]


def explicit_dpds(probes: pd.DataFrame | None, attributes: dict[str, list[str]]) -> pd.DataFrame:
    """The explicit DPD (largest − smallest share of valid answers naming an attribute, cases.csv's
    explicit ``dpd``) per model × scenario × group × intervention of the explicit probes."""
    from louder.analysis.cases import explicit_attribute_table

    cols = ["model", "scenario", "group", COLUMN, "explicit_dpd"]
    if probes is None or probes.empty:
        return pd.DataFrame(columns=cols)
    p = probes.assign(**{COLUMN: probes[COLUMN].fillna(NONE).astype(str) if COLUMN in probes else NONE})
    rows = []
    for iv, g in p.groupby(COLUMN, sort=True):
        a = explicit_attribute_table(g, attributes)
        for key, r in a.groupby(["model", "scenario", "group"]):
            rates = r["rate"].dropna()
            rows.append(dict(zip(cols, (*key, iv, float(rates.max() - rates.min()) if len(rates) else np.nan))))
    return pd.DataFrame(rows, columns=cols)


def interventions_table(decisions: pd.DataFrame, B: int = 2000, seed: int = 0, probes: pd.DataFrame | None = None,
                        attributes: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """``interventions.csv`` of a run's decisions (every intervention; one wording, one reasoning level and
    round 0 already chosen by the caller, population runs once per group of the population), with the
    explicit DPD under none and under the intervention where the explicit probes ran under it. A run
    without ``none`` has no baseline: no rows."""
    d = decisions.assign(**{COLUMN: decisions[COLUMN].fillna(NONE).astype(str)})
    if NONE not in set(d[COLUMN]):
        return pd.DataFrame(columns=COLUMNS)
    t = intervention_table(d, none=NONE, B=B, seed=seed)
    ex = explicit_dpds(probes, attributes or {})
    keys = ["model", "scenario", "group"]
    none = ex[ex[COLUMN] == NONE].drop(columns=COLUMN).rename(columns={"explicit_dpd": "explicit_dpd_none"})
    t = t.merge(none, on=keys, how="left").merge(ex, on=[*keys, COLUMN], how="left")
    return t[COLUMNS]


# --- the report and the console --------------------------------------------------------------------

def sentence(r) -> str:
    """What one row says, in words."""
    if pd.isna(r["dpd_change"]):
        return f"{r['intervention']}: too few paired agents to compare with none ({r['verdict']})."
    says = {"reduces": "reduces the disparity", "increases": "increases the disparity",
            "no change": "leaves the disparity where it was (no change detected)",
            "underpowered": "may have changed the disparity, but the run is too small to tell"}[r["verdict"]]
    return (f"{r['intervention']} {says}: DPD {r['dpd_none']:.2f} under none, {r['dpd']:.2f} under it, a change of "
            f"{r['dpd_change']:+.2f} [{r['ci_low']:+.2f}, {r['ci_high']:+.2f}] (p = {r['p_value']:.3g}); the overall "
            f"target rate moved by {r['rate_shift']:+.2f} [{r['rate_shift_ci_low']:+.2f}, "
            f"{r['rate_shift_ci_high']:+.2f}] and {r['changed']:.0%} of the agents changed their decision.")


def figure(case: pd.DataFrame):
    """One case: left, the DPD under none and under each intervention; right, the change from none with
    its 95 % interval and the overall rate shift with its interval (dashed line at 0; dotted: −DPD under
    none, where the whole disparity would be gone)."""
    from matplotlib.figure import Figure

    case = case.dropna(subset=["dpd_change"]).reset_index(drop=True)
    if case.empty:
        return None
    fig = Figure(figsize=(7.5, 0.45 * len(case) + 1.6), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(case), 0, -1)
    for yi, (_, r) in zip(y, case.iterrows()):
        color = VERDICT_COLORS.get(r["verdict"], "black")
        left.plot([r["dpd_none"], r["dpd"]], [yi, yi], color="lightgrey", lw=2, zorder=1)
        left.scatter([r["dpd_none"]], [yi], marker="o", facecolors="none", edgecolors="grey", zorder=2)
        left.scatter([r["dpd"]], [yi], marker="s", color=color, zorder=3)
        right.errorbar(r["dpd_change"], yi + 0.12,
                       xerr=[[r["dpd_change"] - r["ci_low"]], [r["ci_high"] - r["dpd_change"]]], fmt="D", color=color, ecolor=color, capsize=3, ms=6)
        right.errorbar(r["rate_shift"], yi - 0.18, xerr=[[r["rate_shift"] - r["rate_shift_ci_low"]],
                                                          [r["rate_shift_ci_high"] - r["rate_shift"]]],
                       fmt="^", color="#8e44ad", ecolor="#8e44ad", capsize=2, ms=4, alpha=0.8)
    left.set_yticks(y, [f"{r['intervention']} ({r['verdict']})" for _, r in case.iterrows()], fontsize=8)
    left.set_xlim(-0.02, 1.02)
    left.set_xlabel("DPD: ○ under none, ■ under the intervention", fontsize=8)
    right.axvline(0, color="grey", ls="--", lw=1)
    right.axvline(-case["dpd_none"].iloc[0], color="grey", ls=":", lw=1)
    right.set_xlim(-1.02, 1.02)
    right.set_xlabel("◆ DPD change from none, ▲ rate shift (95 % intervals)", fontsize=8)
    r0 = case.iloc[0]
    fig.suptitle(textwrap.fill(f"{r0['scenario']} × {r0['group']} — {r0['model']}, {r0['condition']}", 90), fontsize=8)
    return fig


def described(config: dict | None) -> pd.DataFrame:
    """The run's interventions as its manifest recorded them: id, where, text, source."""
    from louder.config import recorded
    from louder.errors import LouderError
    from louder.interventions import load_intervention

    rows = []
    for ref in recorded(config, "simulation.interventions", []) or []:
        try:
            iv = load_intervention(ref)
        except LouderError:  # a file that has moved since the run
            rows.append(dict(intervention=ref, where="", text="(file not found)", source=""))
            continue
        if iv is not None:
            rows.append(dict(intervention=iv.id, where=iv.where, text=iv.text, source=iv.source or ref))
    return pd.DataFrame(rows, columns=["intervention", "where", "text", "source"])


def report_section(tables: dict[str, pd.DataFrame], manifests: dict | None = None) -> str:
    """The report's "Prompt interventions" section, or "" when the run has no interventions.csv."""
    t = tables.get("interventions")
    if t is None:
        return ""
    parts = [note(
        "Does a prompt intervention change the disparity? The same agents, with the same personas, decided once "
        "under <b>none</b> (the paper's prompt) and once under each intervention. <b>dpd_change</b> = DPD under the "
        "intervention − DPD under none, over the agents valid under both, with an interval from a paired bootstrap "
        "of agents that contains the change and stays valid when either DPD is 0 (conservative); <b>p_value</b>: "
        "paired sign-flip permutation test (each agent's two answers are exchangeable when the intervention changes "
        "nothing). <b>verdict</b>: <i>reduces</i> / <i>increases</i> when p &lt; 0.05; <i>underpowered</i> when an "
        "attribute has fewer than 10 paired agents, or when the disparity under none is real and the change's "
        "interval still reaches −DPD (the whole disparity could be gone unseen); else <i>no change</i>. Side "
        "effects: <b>rate_shift</b>, the overall target rate under the intervention − under none (a mitigation that "
        "moves every agent's decision is not neutral), and <b>changed</b>, the share of agents whose decision "
        "changed. <b>explicit_dpd</b>: where the explicit probes ran under the same intervention (<code>louder probe "
        "explicit --intervention …</code>), the explicit DPD under it (<b>explicit_dpd_none</b>: under none) — does "
        "the model also <i>say</i> something else? The other tables of this report read the decisions and answers "
        "under none only.")]
    if manifests:
        d = described((manifests.get("simulation") or {}).get("config"))
        if len(d):
            parts.append(table(d))
    for _, case in t.groupby(KEYS, sort=True):
        r0 = case.iloc[0]
        parts.append(f"<h3>{html.escape(str(r0['scenario']))} × {html.escape(str(r0['group']))} — "
                     f"{html.escape(str(r0['condition']))}, {html.escape(str(r0['model']))}</h3>")
        parts += [note(html.escape(sentence(r))) for _, r in case.iterrows()]
        parts.append(png(figure(case)))
    parts += ["<h3>Per case and intervention</h3>", table(t, scroll=True)]
    return section("Prompt interventions", *parts)


def console_table(t: pd.DataFrame):
    """``louder analyze``'s table of interventions.csv."""
    from rich.table import Table

    f = lambda v, d=2: "–" if pd.isna(v) else f"{v:+.{d}f}"  # noqa: E731
    out = Table(title="Prompt interventions: DPD under none → under the intervention, change [95 % CI], p; side "
                      "effects: overall rate shift [95 % CI], agents whose decision changed — "
                      "docs/how-to/test-a-mitigation.md")
    for col in ("model", "condition", "scenario", "group", "intervention", "DPD none → it", "change [95 % CI]", "p",
                "rate shift [95 % CI]", "changed", "explicit DPD none → it", "verdict"):
        out.add_column(col)
    for _, r in t.iterrows():
        none = "–" if pd.isna(r["dpd_none"]) else f"{r['dpd_none']:.2f} → {r['dpd']:.2f}"
        out.add_row(str(r["model"]), str(r["condition"]), str(r["scenario"]), str(r["group"]), str(r["intervention"]),
                    none, f"{f(r['dpd_change'])} [{f(r['ci_low'])}, {f(r['ci_high'])}]",
                    "–" if pd.isna(r["p_value"]) else f"{r['p_value']:.4f}",
                    f"{f(r['rate_shift'])} [{f(r['rate_shift_ci_low'])}, {f(r['rate_shift_ci_high'])}]",
                    "–" if pd.isna(r["changed"]) else f"{r['changed']:.0%}",
                    "–" if pd.isna(r["explicit_dpd"]) else f"{r['explicit_dpd_none']:.2f} → {r['explicit_dpd']:.2f}",
                    str(r["verdict"]))
    return out
