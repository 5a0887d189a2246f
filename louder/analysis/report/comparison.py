"""The page of ``louder compare`` (issues 42, 47), drawn by the run report's machinery
(``louder.analysis.report.page.page``: the same stylesheet, table of contents and findings-first layout).

On top, the comparison's design card — its entries, how many cases each side compares, the resampling,
the margin, the release gate — and its findings in sentences: the gate's verdict, then what each measure
that shows the comparison's tables says (``registry.Measure.findings``). Then those measures' sections
(their figures and tables: the same as in a run folder's report), the gate's failing cases and where each
entry comes from. This module names no measure: the caller gives the measures and their context."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Sequence

import pandas as pd

from louder.analysis.engine.inputs import Analysis
from louder.analysis.engine.declarations import Finding, Measure
from louder.analysis.report.findings import ANCHOR, Findings
from louder.analysis.report.findings import TITLE as FINDINGS
from louder.analysis.report.html import note, section, table
from louder.analysis.report.page import SectionContext, page
from louder.analysis.stats import comparison as C
from louder.version import __version__

GATE, ENTRIES = "Release gate", "Entries"
GATE_KEY = ("reference", "model", "side", "condition", "scenario", "group", "delta", "ci_low", "ci_high", "p_holm")


def _where(f: dict) -> str:
    cond = f" ({f['condition']})" if isinstance(f.get("condition"), str) and f["condition"] else ""
    return f"{f['scenario']} × {f['group']}{cond}"


def gate_findings(gate: dict | None) -> list[Finding]:
    """The release gate's verdict in a sentence (none without ``--fail-if``): passed, or which entries failed
    it in which cases (their ΔDPD and intervals are in the sentences after it, and in its section)."""
    if gate is None:
        return []
    rule = f"Release gate (--fail-if {gate['rule']})"
    by = f" by more than {gate['margin']:g}" if gate.get("margin") is not None else ""
    if gate["passed"]:
        return [Finding(f"{rule}: passed — no entry is more biased than {gate['base']}{by} in any case.", GATE)]
    failing = gate["failing"]
    models = list(dict.fromkeys(str(f["model"]) for f in failing))
    who = f"{', '.join(models)} {'is' if len(models) == 1 else 'are'}"
    sides = []
    for side in dict.fromkeys(f["side"] for f in failing):
        cases = [_where(f) for f in failing if f["side"] == side]
        more = f" and {len(cases) - 3} more" if len(cases) > 3 else ""
        sides.append(f"{side} in {', '.join(cases[:3])}{more}")
    n = len(failing)
    return [Finding(f"{rule}: failed in {n} case{'s' if n > 1 else ''} — {who} more biased than {gate['base']}{by}: "
                    f"{'; '.join(sides)}.", GATE)]


def compared(pairs: pd.DataFrame | None) -> str:
    """What the pair table compares: "N pair(s): A case(s) of actions, W of words"."""
    if pairs is None or pairs.empty:
        return "no case both entries have"
    n = len(pairs[["reference", "model"]].drop_duplicates())
    actions = int(pairs["actions_verdict"].map(lambda v: isinstance(v, str)).sum())
    words = len(pairs[pairs["words_verdict"].map(lambda v: isinstance(v, str))].drop_duplicates(
        ["reference", "model", "scenario", "group"]))
    return f"{n} pair{'s' if n > 1 else ''}: {actions} case(s) of actions, {words} of words"


def card(labels: Sequence[str], sources: pd.DataFrame, tables: dict[str, pd.DataFrame], settings: dict,
         gate: dict | None) -> list[tuple[str, str]]:
    """The comparison's design, label → value: each entry (its model and folder), what is compared, the
    resampling, the margin, the gate, when and with which louder."""
    rows = []
    by_label = {str(r["label"]): r for _, r in sources.iterrows()}
    for label in labels:
        r = by_label.get(label)
        if r is None:
            continue
        rows.append((label, r["folder"] if str(r["model"]) == label else f"{r['model']} · {r['folder']}"))
    rows.append(("Compared", compared(tables.get(C.PAIRS))))
    rows.append(("Resampling", f"B = {int(settings['bootstrap']):,}, seed {settings['seed']}"))
    rows.append(("Margin", f"± {settings['margin']:g}"))
    if settings.get("order"):
        rows.append(("Order", " → ".join(map(str, settings["order"]))))
    if gate is not None:
        rows.append(("Release gate", f"--fail-if {gate['rule']}: " + (
            "passed" if gate["passed"] else f"failed in {len(gate['failing'])} case(s)")))
    rows.append(("Date", f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"))
    rows.append(("louder", __version__))
    return rows


def _notes(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return ('<details class="missing" open><summary><b>Notes</b> (' + f"{len(notes)})</summary><ul>" +
            "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul></details>")


def _gate_section(gate: dict | None) -> str:
    if gate is None:
        return ""
    rule = f"<code>--fail-if {html.escape(gate['rule'])}</code>"
    how = (f"shown to exceed {gate['margin']:g} (the test of ΔDPD ≤ {gate['margin']:g}, Holm across every "
           f"comparison against {html.escape(gate['base'])})" if gate.get("margin") is not None else
           "more biased after Holm (p_holm &lt; 0.05)")
    if gate["passed"]:
        return section(GATE, note(f"{rule}: <b>passed</b> — no entry's ΔDPD against {html.escape(gate['base'])} is "
                                  f"{how} in any case; <code>louder compare</code> exits 0."))
    failing = pd.DataFrame(gate["failing"])
    return section(GATE, note(f"{rule}: <span class='sig'>failed</span> in {len(failing)} case(s) — each one whose "
                              f"ΔDPD against {html.escape(gate['base'])} is {how}; <code>louder compare</code> exits "
                              "1. <code>comparison.json</code> records the verdict (<code>gate</code>)."),
                   table(failing, key=GATE_KEY))


def render(labels: Sequence[str], sources: pd.DataFrame, notes: Sequence[str], a: Analysis,
           measures: Sequence[Measure], settings: dict, gate: dict | None = None) -> str:
    """The comparison's page: ``a`` holds the comparison's tables and the options of ``measures`` (those
    that show them: their findings and sections, each in its context of ``a``)."""
    title = "louder comparison — " + " vs ".join(labels)
    items: list[Finding] = gate_findings(gate)
    sections: list[str] = []
    for m in measures:
        ctx = a.context(m)
        if m.findings is not None:
            items += m.findings(ctx)
        if m.section is not None:
            sections.append(m.section(SectionContext(a, m)))
    found = Findings(card=card(labels, sources, a.tables, settings, gate), by_model={None: items} if items else {})
    head = [f"<h1>{html.escape(title)}</h1>", found.card_html()]
    body = [section(FINDINGS, found.html(), _notes(notes), anchor=ANCHOR),
            *sections,
            _gate_section(gate),
            section(ENTRIES, note("The folders' designs match (scenario texts, groups and their attributes, persona "
                                  "conditions, wordings, choice order, identity signal, reasoning levels, prompt "
                                  "interventions, decision mode, prompt templates); the number of agents, the seeds "
                                  "and the models may differ. Each entry:"), table(sources))]
    return page(html.escape(title), head, body, brand="louder comparison")
