"""Why archetype runs resample clusters: the note the report shows for an archetype run (a measure
with a report section and no table).

In archetype mode the N agents of a run share C = cells × K model calls (archetype × replicate
clusters); an agent's decision is a draw from its cluster's p. The spread of p between calls —
the model's answer to one archetype prompt rather than another — is shared by every agent of a
cluster, so the agents are not N independent observations. Resampling agents would count each
call's randomness once per agent, and the interval would shrink like 1/√N although the
information grows only like 1/√C: far too narrow, and every gap "significant"
(benchmarks/network_null.py: 34 % false positives at the 5 % level with 100 agents per cluster).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from louder.analysis.html import note, section
from louder.analysis.keys import CASE_KEYS
from louder.analysis.network import dpd_by_round, with_archetype_clusters
from louder.analysis.registry import Measure, register


@dataclass(frozen=True)
class ArchetypeNote:
    """Round-0 DPD interval widths of one case, resampling clusters vs agents.

    width_cluster / width_agent: 95 % bootstrap interval widths of DPD_0 (``dpd_by_round``
    with cluster = cell_id/replicate, and with every agent its own cluster); ratio = their quotient.
    """

    agents: int
    clusters: int
    agents_per_cluster: float
    width_cluster: float
    width_agent: float
    ratio: float
    text: str


def is_archetype(decisions: pd.DataFrame) -> bool:
    return {"cell_id", "bucket", "replicate", "round"} <= set(decisions.columns)


def archetype_note(decisions: pd.DataFrame, B: int = 500, seed: int = 0) -> ArchetypeNote | None:
    """The note for the first case of an archetype run's decisions (None for any other run)."""
    if decisions is None or decisions.empty or not is_archetype(decisions):
        return None
    keys = CASE_KEYS
    first = decisions[keys].iloc[0]
    case = decisions[(decisions[keys] == first).all(axis=1) & (decisions["round"] == 0)]
    rows = with_archetype_clusters(case)
    n, c = len(rows), rows["cluster"].nunique()
    clus = dpd_by_round(rows, "attribute", cluster="cluster", B=B, seed=seed).iloc[0]
    agent = dpd_by_round(rows, "attribute", cluster=None, B=B, seed=seed).iloc[0]
    wc, wa = clus["ci_high"] - clus["ci_low"], agent["ci_high"] - agent["ci_low"]
    ratio = wc / wa if wa > 0 else float("nan")
    text = (f"Archetype mode: the {n:,} agents of this run share {c:,} model calls (population cell × replicate), "
            f"about {n / c:,.0f} agents per call. Agents of one call draw from the same probability, so they are not "
            f"independent observations: every interval here resamples the {c:,} archetype × replicate clusters, not "
            f"the agents. For {first['scenario']} × {first['group']} (round 0) the cluster interval of the DPD is "
            f"{wc:.3f} wide; resampling agents would give {wa:.3f}" +
            (f", {ratio:.1f}× narrower — it would count each call's randomness once per agent and call almost any "
             f"gap significant." if ratio >= 1.2 else
             " — about the same here, because the calls of one cell barely differ in this run; where they do, "
             "agent-level intervals are far too narrow (docs/networks.md, \"Why clusters, not agents\")."))
    return ArchetypeNote(n, c, n / c, float(wc), float(wa), float(ratio), text)


def report_section(a) -> str:
    n = archetype_note(a.decisions)
    return "" if n is None else section("Archetype mode: clusters, not agents", note(html.escape(n.text)))


register(Measure("archetype", "why an archetype run's intervals resample archetype × replicate clusters",
                 tables=(), build=lambda a: {}, needs=("decisions",), section=report_section, position=10))
