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

from louder.analysis.engine.declarations import Input, Measure
from louder.analysis.engine.registry import register
from louder.analysis.report.html import note, section
from louder.analysis.stats.network import archetype_note


def report_section(a) -> str:
    n = archetype_note(a.decisions)
    return "" if n is None else section("Archetype mode: clusters, not agents", note(html.escape(n.text)))


register(Measure("archetype", "why an archetype run's intervals resample archetype × replicate clusters",
                 tables=(), build=lambda a: {}, inputs=(Input("decisions"),), needs=("decisions",), section=report_section, position=10))
