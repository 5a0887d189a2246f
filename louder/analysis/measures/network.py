"""Networks and influence: the tables `louder analyze` adds for a network run (decisions with a
``round`` column), its report section and figures:

* ``network_rounds`` — per case × source (LLM, no influence, control) × round × attribute: the
  target rate over valid decisions with every status count, and the round's DPD with its bootstrap
  interval;
* ``network_flips`` — per case × source × round ≥ 1 × attribute: flips / agents valid in both rounds;
* ``amplification`` — per case × round: DPD_r(LLM) − DPD_r(no influence) (the no-influence arm, or
  round 0 where there is none), its paired bootstrap interval and the verdict (amplified / damped /
  no change); the control rule's DPD beside it as a reference only; ``final`` marks the last round,
  whose verdict is the case's.

The statistics are ``louder.analysis.stats.network``'s. Agents mode bootstraps agents (``cluster=None``);
archetype runs (``bucket`` column or ``mode: archetype`` in the manifest) resample archetype ×
replicate clusters (``with_archetype_clusters``), since the agents of one call share its randomness.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine import select
from louder.analysis.engine.columnar import ByNode, columns_of, read, tally
from louder.analysis.engine.declarations import Column, Figure, Input, Measure, Table
from louder.analysis.engine.registry import register
from louder.analysis.engine.select import ALL
from louder.analysis.report import palette as P
from louder.analysis.report.html import note, section, table
from louder.analysis.stats.keys import CASE_KEYS
from louder.analysis.stats.network import (ARM, case_keys, case_verdicts, is_archetype, network_tables,
                                           with_archetype_clusters)

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

# every round, every level of every dimension (each level of a crossed or own-agents dimension plays its
# own rounds, control and no-influence arm: the network tables key on them), a variant as its own scenario
INPUTS = (Input("rounds", "decisions.parquet", whole=ALL, keyed=("variant",), columns=("round",),
                doc="a network run's decisions, every round"),
          Input("control", whole=ALL, keyed=("variant",), doc="the rule-based control's decisions"),
          Input("no_influence", whole=ALL, keyed=("variant",), doc="the no-influence arm's decisions"))

# --- figures ---------------------------------------------------------------------------------------------

RUN_STYLES = {"LLM": "-", "no influence": ":", "control": "--"}


def rounds_rates_figure(rates: dict[str, pd.DataFrame], title: str = "") -> MplFigure | None:
    """Target rate per attribute over rounds, one line per attribute: solid for the LLM run, dotted for
    the no-influence arm, dashed for the control rule. ``rates`` maps a run name (LLM, no influence,
    control) to ``rates_by_round`` output."""
    from matplotlib.figure import Figure as MplFigure

    rates = {k: v for k, v in rates.items() if v is not None and not v.empty}
    if not rates:
        return None
    attributes = sorted(set().union(*(set(v["attribute"]) for v in rates.values())))
    colors = dict(zip(attributes, [P.series(i) for i in range(len(attributes))]))
    fig = MplFigure(figsize=(6.5, 3.6), layout="constrained")
    ax = fig.subplots()
    for run, df in rates.items():
        for a in attributes:
            sub = df[df["attribute"] == a].sort_values("round")
            ax.plot(sub["round"], sub["rate"], RUN_STYLES.get(run, ":"), marker="o", ms=3, color=colors[a],
                    label=f"{a} ({run})")
    rounds = sorted(set().union(*(set(v["round"]) for v in rates.values())))
    ax.set_xticks(rounds)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("round (0 = independent decision)")
    ax.set_ylabel("target rate")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(title or "Target rate per attribute over rounds (solid: LLM, dotted: no influence, dashed: control)",
                 fontsize=9)
    return fig


def amplification_figure(amp: pd.DataFrame, title: str = "") -> MplFigure | None:
    """DPD_r(LLM) − DPD_r(no influence) per round with its interval; 0 dashed."""
    from matplotlib.figure import Figure as MplFigure

    if amp is None or amp.empty:
        return None
    fig = MplFigure(figsize=(5, 3), layout="constrained")
    ax = fig.subplots()
    err = np.vstack([amp["amplification"] - amp["ci_low"], amp["ci_high"] - amp["amplification"]]).clip(min=0)
    ax.errorbar(amp["round"], amp["amplification"], yerr=np.nan_to_num(err), fmt="o-", capsize=3, color=P.VERMILLION)
    ax.axhline(0, color=P.BLACK, ls="--", lw=0.8)
    ax.set_xticks(amp["round"])
    ax.set_xlabel("round")
    ax.set_ylabel("DPD(influence) − DPD(no influence)")
    ax.set_title(title or "Amplification per round (95 % interval)", fontsize=9)
    return fig


# --- the report section ------------------------------------------------------------------------------

RULES = {"majority": "majority (adopt the choice most valid neighbours made; keep one's own on a tie)",
         "threshold": "threshold θ = {threshold} (adopt the target once a share ≥ θ of valid neighbours chose it)",
         "degroot": "DeGroot averaging (p ← {self_weight}·own p + (1 − {self_weight})·neighbours' mean p; target "
                    "iff p ≥ 0.5)"}


def _fmt(x, sign: str = "") -> str:
    return "–" if x is None or pd.isna(x) else f"{x:{sign}.2f}"


def case_sentence(label: str, amp_final: pd.Series, first_dpd: float, underpowered: bool = False) -> str:
    """One sentence: what influence did to the case's disparity, against the same agents without
    influence; then the control rule's movement as a reference."""
    r, v = int(amp_final["round"]), amp_final["verdict"]
    a, lo, hi = amp_final["amplification"], amp_final["ci_low"], amp_final["ci_high"]
    base = ("asked round 0's question again without neighbours" if amp_final.get("baseline") == "no-influence arm"
            else "in round 0")
    what = {"amplified": f"<b>amplified</b> the disparity beyond the same agents {base}",
            "damped": f"<b>damped</b> the disparity below the same agents {base}",
            "no change": "made <b>no change</b> to the disparity that the interval can see (it covers 0)",
            "cannot be judged": "<b>cannot be judged</b>: no interval (fewer than two attributes with valid "
                                "decisions)"}[v]
    text = (f"<b>{html.escape(label)}</b>: influence {what}. DPD {_fmt(first_dpd)} in round 0 → "
            f"{_fmt(amp_final['dpd_llm'])} with influence and {_fmt(amp_final['dpd_no_influence'])} without in "
            f"round {r}; amplification {_fmt(a, '+')} (95 % interval {_fmt(lo, '+')} to {_fmt(hi, '+')}).")
    if pd.notna(amp_final.get("dpd_control")):
        text += (f" For reference, a textbook contagion (the control rule) on this graph would move the DPD from "
                 f"{_fmt(first_dpd)} to {_fmt(amp_final['dpd_control'])}.")
    if underpowered:
        text += (' <span class="warn">Underpowered: too few agents per attribute to see a moderate disparity'
                 + (", so \"no change\" here is not evidence of no effect." if v == "no change" else
                    "; a verdict from so few agents is fragile.") + "</span>")
    return text


def _graph_note(manifest: dict) -> str:
    net = (manifest or {}).get("network") or {}
    if not net:
        return ""
    graphs = "; ".join(f"{html.escape(str(g))}: {v['nodes']} nodes, {v['edges']} ties, mean degree "
                       f"{v['mean_degree']}, {100 * v['within_share']:.0f} % of ties within an attribute"
                       for g, v in (net.get("graphs") or {}).items() if v.get("within_share") is not None)
    ctl = net.get("control") or {}
    rule = RULES.get(ctl.get("rule"), str(ctl.get("rule"))).format(**ctl) if ctl else "–"
    params = ", ".join(f"{k}={v}" for k, v in (net.get("params") or {}).items())
    return note(f"Graph: <b>{html.escape(net.get('generator', '?'))}</b> ({html.escape(params)}, seed "
                f"{net.get('seed')}), {net.get('rounds')} rounds of influence. {graphs}. Control rule: {rule}.")


def report_section(a) -> str:
    """Rates per attribute over rounds (LLM, no influence, control), amplification and its verdict per case."""
    t = a.tables
    if "network_rounds" not in t:  # built only for a run with rounds (``needs``)
        return ""
    manifest = a.manifests.get("simulation", {})
    rounds, amp = t["network_rounds"], t["amplification"]
    keys = case_keys(rounds)
    parts = [
        note("Round 0 is every agent's independent decision (the sections above read round 0 only). In each round "
             "r ≥ 1 every agent is told how many of its neighbours chose each option in round r − 1 and decides "
             "again; all agents read the same snapshot, so their order does not matter. Neighbours without a valid "
             "answer are told as \"gave no clear answer\" and left out of the share."),
        note("<b>What influence did.</b> <b>Amplification</b> = DPD_r(with influence) − DPD_r(no influence): the "
             "same agents' disparity after r rounds of hearing their neighbours, against their disparity when asked "
             "round 0's question again in round r without neighbours (the no-influence arm, a fresh answer with a "
             "new seed; in score mode with argmax, where asking again repeats round 0, round 0 itself). A model that "
             "ignores its neighbours gives an amplification around 0 whatever the graph. The verdict reads the 95 % "
             "paired bootstrap interval of the last round: amplified (above 0), damped (below 0), otherwise no "
             "change."),
        note("<b>The control rule is a reference, not the baseline.</b> On a homophilous graph agents mostly hear "
             "from their own group, and a rule-based contagion (the control: the same round-0 decisions on the same "
             "graph, updated by a fixed rule that knows nothing of the attributes) moves towards local consensus on "
             "its own — it says what a textbook contagion would do on this graph, not what the model would do "
             "without influence."),
        note("Intervals resample " + ("archetype × replicate clusters (the agents of one model call share its "
                                      "randomness; resampling agents would make them far too narrow)."
                                      if archetype_run(a) else
                                      "agents. After round 0 neighbours' decisions depend on each other, so these "
                                      "intervals are optimistic; trust an amplification only when it is clear.")),
        _graph_note(manifest),
    ]
    cases = t.get("cases")
    finals = case_verdicts(amp)
    sentences, figs = [], []
    for key, r in rounds.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = " × ".join(map(str, key))
        sel = lambda df: df[(df[keys] == pd.Series(dict(zip(keys, key)))).all(axis=1)]  # noqa: E731
        llm, ctl, arm = r[r["source"] == "LLM"], r[r["source"] == "control"], r[r["source"] == "no influence"]
        f = sel(finals) if len(finals) else finals
        if len(f):
            d0 = llm.loc[llm["round"] == 0, "dpd"]
            under = False
            if cases is not None and len(cases) and "underpowered" in cases:
                c = sel(cases[cases["kind"] == "implicit"]) if set(keys) <= set(cases.columns) else cases.iloc[:0]
                under = bool(len(c) and c["underpowered"].astype(bool).any())
            sentences.append(f"<li>{case_sentence(label, f.iloc[0], float(d0.iloc[0]) if len(d0) else None, under)}"
                             "</li>")
        else:
            sentences.append(f"<li><b>{html.escape(label)}</b>: no rounds of influence, so no verdict.</li>")
        figs.append(f"<h3>{html.escape(label)}</h3>")
        figs.append(a.figure("rounds", {"LLM": llm, "no influence": arm, "control": ctl}, label))
        figs.append(a.figure("amplification", sel(amp).reset_index(drop=True) if len(amp) else None, label))
    parts += ["<ul>" + "".join(sentences) + "</ul>", *figs,
              "<h3>Rates, answers and DPD per round</h3>",
              note("Every answer of every round is counted: n_valid, n_invalid, n_refused, n_error per attribute "
                   "(the control keeps an agent's invalid status: it has no model to ask). dpd with its bootstrap "
                   "interval is the round's."),
              table(rounds, scroll=True),
              "<h3>Amplification per round</h3>", table(amp, scroll=True),
              "<h3>Flip rate per attribute</h3>",
              note("flips / agents with a valid decision in both round r − 1 and round r."),
              table(t.get("network_flips"), scroll=True)]
    return section("Networks and influence", *parts)


def archetype_run(a) -> bool:
    """An archetype run (its manifest's network mode, or a ``bucket`` column), told without reading its rows."""
    path = a.run_dir / "decisions.parquet"
    return is_archetype(pd.DataFrame(columns=columns_of(path) if path.exists() else []), a.manifests.get("simulation"))


def archetype_tallies(a) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """An archetype run's decisions and control as counts per case × dimension level × round × cluster ×
    attribute × status × target × changed (``columnar.tally``: 6·10^6 rows of a 10^6-agent run are a few
    thousand), read as the rows would be (the same selection of INPUTS: ``select.rows``), each control row given its node's
    archetype × replicate cluster."""
    path = a.run_dir / "decisions.parquet"
    cols = columns_of(path)
    dims = [x.column for x in select.axes() if x.column in cols and x.column != "round"]
    keys = [c for c in CASE_KEYS if c in cols] + dims
    rows = tally(path, keys + ["round", "cell_id", "replicate", "attribute", "status", "target", "changed"])
    rows = select.rows(rows, INPUTS[0])
    cpath = a.run_dir / "control.parquet"
    if not cpath.exists():
        return rows, None
    first = read(path, ["node", "cell_id", "replicate"], round0=True)
    nodes, at = np.unique(first["node"].to_numpy(), return_index=True)  # each node's first row (as _clustered)
    size = int(nodes.max()) + 1 if nodes.size else 0
    per_node = {c: np.zeros(size, dtype=np.int64) for c in ("cell_id", "replicate")}
    for c in per_node:
        per_node[c][nodes] = first[c].to_numpy()[at]
    del first
    ccols = columns_of(cpath)
    ckeys = [c for c in CASE_KEYS if c in ccols] + [x.column for x in select.axes()
                                                      if x.column in ccols and x.column != "round"]
    control = tally(cpath, ckeys + ["round", "cell_id", "replicate", "attribute", "status", "target"], ByNode(per_node))
    control = with_archetype_clusters(select.rows(control, INPUTS[1])).drop(columns=["cell_id", "replicate"])
    return rows, control


def build(a) -> dict[str, pd.DataFrame]:
    if archetype_run(a):
        rows, control = archetype_tallies(a)
    else:
        rows, control = a.rounds, a.control
    if control is None:
        a.missing.append("network: no control.parquet — the rule-based reference cannot be drawn; re-run the "
                         "same `louder run` command to write it")
    return network_tables(rows, control, a.manifests.get("simulation"), B=a.bootstrap, seed=a.seed,
                          arm=a.no_influence)


register(Measure(
    "network", "rounds of influence: the DPD per round, flips, and what influence did to the disparity",
    tables=(
        Table("network_rounds", "Network runs: one row per case × source × round × attribute.", (
            Column(("model", "condition", "scenario", "group"), "the case"),
            Column("variant", "archetype mode: the policy variant"),
            Column(ARM, "the network arm, in runs that vary these dimensions (each level plays its own rounds)"),
            Column("source", "`LLM` (with influence), `no influence` (the no-influence arm) or `control` (the rule)"),
            Column(("round", "attribute"), "the round and attribute"),
            Column(("n_valid", "n_target", "rate", "n_invalid", "n_refused", "n_error"), "as in `attributes.csv`"),
            Column(("dpd", "dpd_ci_low", "dpd_ci_high"), "the round's DPD with its bootstrap interval (what "
                                                         "`louder view` draws)"))),
        Table("network_flips", "Network runs: one row per case × source × round ≥ 1 × attribute.", (
            Column(("model", "condition", "scenario", "group", "variant", *ARM, "source", "round", "attribute"),
                   "as in `network_rounds.csv` (round ≥ 1)"),
            Column("n_both_valid", "agents valid in this round and the previous one"),
            Column(("flips", "flip_rate"), "how many changed their decision, and the share"))),
        Table("amplification", "One row per case × round.", (
            Column(("model", "condition", "scenario", "group", "variant"), "the case (`variant`: archetype mode)"),
            Column(ARM, "the network arm, in runs that vary these dimensions"),
            Column("round", "the round"),
            Column("dpd_round0", "the DPD of the independent decisions (round 0)"),
            Column("dpd_llm", "the DPD in this round, with influence"),
            Column("dpd_no_influence", "the DPD of the same agents without influence in this round: the no-influence "
                                       "arm, or round 0 (see `baseline`)"),
            Column("baseline", "`no-influence arm`, or `round 0` where asking again repeats round 0 (score mode with "
                               "argmax; archetype mode)"),
            Column("change", "`dpd_llm` − `dpd_round0` (the raw movement, noise of a second asking included)"),
            Column("amplification", "`dpd_llm` − `dpd_no_influence`"),
            Column(("ci_low", "ci_high"), "its paired bootstrap interval (one set of agent/cluster weights for both "
                                          "terms)"),
            Column("verdict", "`amplified` (interval above 0), `damped` (below), `no change` (covers 0) or `cannot be "
                              "judged`"),
            Column("dpd_control", "the control rule's DPD in this round: a reference (what a textbook contagion does "
                                  "on the graph), not the baseline"),
            Column("final", "the case's last round (its verdict is the case's)")))),
    build=build, inputs=INPUTS, needs=("rounds",), section=report_section, position=100,
    figures=(Figure("rounds", lambda a, rates, label: rounds_rates_figure(
        rates, title=f"{label}\ntarget rate per attribute (solid: with influence, dotted: no influence, dashed: "
                     "control rule)"), lambda a, rates, label: (
        f"{label}: the target rate of each attribute over the rounds, with influence (solid), without (dotted) and "
        "under the control rule (dashed).")),
             Figure("amplification", lambda a, amp, label: amplification_figure(amp), lambda a, amp, label: (
        f"{label}: the amplification of the DPD in each round against the same agents without influence, with its "
        "95 % interval; 0 dashed.")))))
