"""The agents' own words: a seeded sample of a case's agents per attribute — persona, decision, status,
rationale and (a reasoning model's) thinking — for the report to show beside a case's numbers, the way
the paper reads rationales to explain a disparity. Every agent of any run is read in ``louder view RUN``.

``sample``: per case × attribute, ``k`` agents drawn without replacement with the case's own random
stream (``stats.substream(seed, i)``, the i-th case × attribute in sort order), whatever their status —
an invalid or refused answer is shown as what it is."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from louder.analysis.stats import substream
from louder.analysis.stats.keys import CASE_KEYS

COLUMNS = ["agent_id", "name", "persona", "decision", "status", "rationale", "thinking", "p_target"]
PERSONA_CHARS, THINKING_CHARS = 700, 1500  # the report shows this much of each; louder view shows all


def sample(decisions: pd.DataFrame | None, k: int = 2, seed: int = 0) -> pd.DataFrame:
    """Up to ``k`` agents per case × attribute (seeded), their words in ``COLUMNS``."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=[*CASE_KEYS, "attribute", *COLUMNS])
    keys = [*CASE_KEYS, "attribute"]
    picks = []
    for i, (_, g) in enumerate(decisions.groupby(keys, sort=True, observed=True)):
        rng = np.random.default_rng(substream(seed, i))
        picks.append(g.iloc[np.sort(rng.choice(len(g), size=min(k, len(g)), replace=False))])
    out = pd.concat(picks)
    return out.reindex(columns=[*keys, *COLUMNS]).reset_index(drop=True)


def _text(v, limit: int | None = None) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return ""
    s = str(v).strip()
    return s if limit is None or len(s) <= limit else s[:limit].rstrip() + " …"


def case_html(words: pd.DataFrame, run: str = "RUN") -> str:
    """One case's sample as a collapsed block: a column per attribute, each agent's persona, decision and
    rationale (and thinking) side by side."""
    if words.empty:
        return ""
    r0 = words.iloc[0]
    cols = []
    for attribute, g in words.groupby("attribute", sort=True):
        agents = []
        for _, r in g.iterrows():
            decision = _text(r["decision"]) or "no decision"
            p = f" · p(target) {r['p_target']:.2f}" if pd.notna(r["p_target"]) else ""
            status = "" if r["status"] == "valid" else f' <span class="warn">({html.escape(str(r["status"]))})</span>'
            thinking = _text(r["thinking"], THINKING_CHARS)
            agents.append(
                f'<div class="agent"><p class="who">{html.escape(_text(r["name"]) or "agent " + str(r["agent_id"]))}'
                f" → <b>{html.escape(decision)}</b>{status}{html.escape(p)}</p>"
                f'<p class="persona">{html.escape(_text(r["persona"], PERSONA_CHARS))}</p>'
                + (f'<p class="rationale">“{html.escape(_text(r["rationale"]))}”</p>' if _text(r["rationale"]) else "")
                + (f"<details><summary>thinking</summary><p>{html.escape(thinking)}</p></details>" if thinking else "")
                + "</div>")
        cols.append(f'<div class="attr"><h4>{html.escape(str(attribute))}</h4>{"".join(agents)}</div>')
    title = f"{r0['scenario']} × {r0['group']} — {r0['condition']}, {r0['model']}"
    return (f'<details class="words"><summary>What the agents wrote: {html.escape(title)}</summary>'
            f'<div class="agents">{"".join(cols)}</div><p class="note">A seeded sample of {words.groupby("attribute").size().max()} '
            f"agent(s) per attribute; every agent, filtered by case, attribute, status and decision: "
            f"<code>louder view {html.escape(run)}</code>.</p></details>")


def report_html(decisions: pd.DataFrame | None, k: int = 2, seed: int = 0, run: str = "RUN") -> str:
    """Every case's sample (``case_html``), in case order."""
    s = sample(decisions, k, seed)
    return "\n".join(case_html(g, run) for _, g in s.groupby(CASE_KEYS, sort=True, observed=True))
