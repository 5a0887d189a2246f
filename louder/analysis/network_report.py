"""The report's "Networks and influence" section (a network run: decisions with ``round``)."""

from __future__ import annotations

import html

import pandas as pd

from louder.analysis.network_figures import amplification_figure, rounds_rates_figure
from louder.analysis.network_tables import case_keys, case_verdicts, is_archetype
from louder.analysis.html import note as _p, png as _png, section as _section, table as _table
from louder.analysis.run import Analysis

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
    return _p(f"Graph: <b>{html.escape(net.get('generator', '?'))}</b> ({html.escape(params)}, seed "
              f"{net.get('seed')}), {net.get('rounds')} rounds of influence. {graphs}. Control rule: {rule}.")


def network_section(a: Analysis) -> str:
    """Rates per attribute over rounds (LLM, no influence, control), amplification and its verdict per case."""
    t = a.tables
    if a.rounds is None or "network_rounds" not in t:
        return ""
    manifest = a.manifests.get("simulation", {})
    rounds, amp = t["network_rounds"], t["amplification"]
    keys = case_keys(rounds)
    parts = [
        _p("Round 0 is every agent's independent decision (the sections above read round 0 only). In each round "
           "r ≥ 1 every agent is told how many of its neighbours chose each option in round r − 1 and decides "
           "again; all agents read the same snapshot, so their order does not matter. Neighbours without a valid "
           "answer are told as \"gave no clear answer\" and left out of the share."),
        _p("<b>What influence did.</b> <b>Amplification</b> = DPD_r(with influence) − DPD_r(no influence): the "
           "same agents' disparity after r rounds of hearing their neighbours, against their disparity when asked "
           "round 0's question again in round r without neighbours (the no-influence arm, a fresh answer with a "
           "new seed; in score mode with argmax, where asking again repeats round 0, round 0 itself). A model that "
           "ignores its neighbours gives an amplification around 0 whatever the graph. The verdict reads the 95 % "
           "paired bootstrap interval of the last round: amplified (above 0), damped (below 0), otherwise no "
           "change."),
        _p("<b>The control rule is a reference, not the baseline.</b> On a homophilous graph agents mostly hear "
           "from their own group, and a rule-based contagion (the control: the same round-0 decisions on the same "
           "graph, updated by a fixed rule that knows nothing of the attributes) moves towards local consensus on "
           "its own — it says what a textbook contagion would do on this graph, not what the model would do "
           "without influence."),
        _p("Intervals resample " + ("archetype × replicate clusters (the agents of one model call share its "
                                    "randomness; resampling agents would make them far too narrow)."
                                    if is_archetype(a.rounds, manifest) else
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
        figs.append(_png(rounds_rates_figure({"LLM": llm, "no influence": arm, "control": ctl},
                                             title=f"{label}\ntarget rate per attribute (solid: with influence, "
                                                   "dotted: no influence, dashed: control rule)")))
        figs.append(_png(amplification_figure(sel(amp).reset_index(drop=True) if len(amp) else None)))
    parts += ["<ul>" + "".join(sentences) + "</ul>", *figs,
              "<h3>Rates, answers and DPD per round</h3>",
              _p("Every answer of every round is counted: n_valid, n_invalid, n_refused, n_error per attribute "
                 "(the control keeps an agent's invalid status: it has no model to ask). dpd with its bootstrap "
                 "interval is the round's."),
              _table(rounds, scroll=True),
              "<h3>Amplification per round</h3>", _table(amp, scroll=True),
              "<h3>Flip rate per attribute</h3>",
              _p("flips / agents with a valid decision in both round r − 1 and round r."),
              _table(t.get("network_flips"), scroll=True)]
    return _section("Networks and influence", *parts)
