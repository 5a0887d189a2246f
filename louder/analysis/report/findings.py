"""What a run found, first: the run's design in one card and its findings in sentences — the top of the
report, ``Run.summary()`` and the end of ``louder analyze`` say the same.

The **card** is read from the run folder: its models, scenarios, groups, persona conditions, agents,
model calls, what the recorded tokens cost (louder/data/prices.yaml), when it ran and with which louder.
The **findings** are the measures' own sentences (``registry.Measure.findings``: each measure says what its
tables show, and names the report section it rests on), per model, then the run's, then what the run
lacks. This module names no measure."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from louder.analysis.engine import registry
from louder.analysis.engine.declarations import Finding, Input
from louder.analysis.engine.inputs import Analysis
from louder.analysis.report.html import slug
from louder.sections import recorded
from louder.version import __version__

ANCHOR = "findings"
TITLE = "Findings"
# every file whose rows are model answers with token counts (what the run's calls cost)
ANSWERS = ("decisions.parquet", "personas.parquet", "probes.parquet", "beliefs.parquet", "association.parquet",
           "decision_test.parquet", "twins.parquet")
AGENTS = Input("decisions")  # the per-case selection: one decision per agent (one wording, round 0, …)


@dataclass
class Findings:
    """The card (label → value), the findings per model (None: the run's) and what the run lacks."""

    card: list[tuple[str, str]] = field(default_factory=list)
    by_model: dict[str | None, list[Finding]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def lines(self, where: bool = True, missing: bool = True) -> list[str]:
        """The findings as lines of text: "MODEL: sentence (report: section)" (the model named when the run
        has several), then "missing: …"."""
        out = []
        several = len([m for m in self.by_model if m]) > 1
        for model, items in self.by_model.items():
            for f in items:
                said = f" (report: {f.section})" if where and f.section else ""
                out.append(f"{model + ': ' if model and several else ''}{f.text}{said}")
        return out + ([f"missing: {m}" for m in self.missing] if missing else [])

    def card_lines(self) -> list[str]:
        return [f"{k}: {v}" for k, v in self.card]

    def card_html(self) -> str:
        cells = "".join(f"<div><dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd></div>" for k, v in self.card)
        return f'<dl class="card">{cells}</dl>'

    def html(self) -> str:
        parts = []
        for model, items in self.by_model.items():
            if not items:
                continue
            head = (f'<p class="model"><b>{html.escape(model)}</b></p>' if model else
                    '<p class="model"><b>The run</b></p>' if len(self.by_model) > 1 else "")
            parts.append(head + "<ul>" + "".join(f"<li>{html.escape(f.text)}{_link(f)}</li>" for f in items) + "</ul>")
        if not any(self.by_model.values()):
            parts.append('<p class="note">No measure found anything to say about this run folder.</p>')
        if self.missing:
            parts.append('<details class="missing"><summary><b>Not in this run folder</b> (' +
                         f"{len(self.missing)})</summary><ul>" +
                         "".join(f"<li>{html.escape(m)}</li>" for m in self.missing) + "</ul></details>")
        return "\n".join(parts)


def _link(f: Finding) -> str:
    return f' <a class="go" href="#{slug(f.section)}">→ {html.escape(f.section)}</a>' if f.section else ""


def findings(a: Analysis) -> Findings:
    """The card and every measure's findings (in the measures' order), grouped per model."""
    out = Findings(card=card(a), missing=list(a.missing))
    items: list[Finding] = []
    for m in registry.measures():
        if m.findings is None or not a.applies(m) or (m.tables and not any(t.name in a.tables for t in m.tables)):
            continue
        items += m.findings(a.context(m))
    models = list(dict.fromkeys(f.model for f in items if f.model))
    for model in [*models, None]:
        mine = [f for f in items if f.model == model]
        if mine:
            out.by_model[model] = mine
    return out


def _unique(frames: list[pd.DataFrame | None], column: str) -> list[str]:
    values: dict[str, None] = {}
    for f in frames:
        if f is not None and column in f.columns:
            values.update(dict.fromkeys(str(v) for v in f[column].dropna().unique()))
    return sorted(values)


def _listed(values: list[str], most: int = 6) -> str:
    if not values:
        return "–"
    return ", ".join(values[:most]) + (f" and {len(values) - most} more" if len(values) > most else "")


def card(a: Analysis) -> list[tuple[str, str]]:
    """The run's design, label → value: what was run, how big, what it cost, when, with which louder."""
    named = ["model", "scenario", "group", "condition"]  # what the card names: not the whole table
    decisions, probes = a.file("decisions.parquet", named), a.file("probes.parquet", named)
    frames = [decisions, probes]
    manifests = a.manifests
    models = _unique(frames, "model") or sorted({m for man in manifests.values()
                                                 for m in (man.get("models") or {})})
    rows = [("Models", _listed(models, 4)),
            ("Scenarios", _listed(_unique(frames, "scenario"))),
            ("Groups", _listed(_unique(frames, "group")))]
    if decisions is not None:
        rows.append(("Conditions", _listed(_unique([decisions], "condition"))))
        agents = a.rows(AGENTS)
        if agents is not None and len(agents):
            cells = agents.groupby(["model", "condition", "scenario", "group", "attribute"], observed=True).size()
            each = int(cells.median()) if len(cells) else 0
            rows.append(("Agents", f"{len(agents):,} ({each:,} per attribute and case)"))
        config = (manifests.get("simulation") or {}).get("config")
        if recorded(config, "simulation.decision_mode") == "score":
            pick = recorded(config, "simulation.score_pick", "argmax")
            rows.append(("Decisions", f"score mode, {pick} picks" + (
                ": findings rest on the probability DPD" if pick == "argmax" else "")))
    if probes is not None:
        rows.append(("Explicit probes", f"{len(probes):,} answers"))
    calls = sum(int(m.get("model_calls") or 0) for m in manifests.values())
    cached = sum(int(m.get("cache_hits") or 0) for m in manifests.values())
    if manifests:
        rows.append(("Model calls", f"{calls:,}" + (f" (+ {cached:,} answered from the cache)" if cached else "")))
    rows.append(("Cost", _cost(a)))
    started = sorted(str(m["started_at"])[:10] for m in manifests.values() if m.get("started_at"))
    finished = sorted(str(m["finished_at"])[:10] for m in manifests.values() if m.get("finished_at"))
    if started:
        last = (finished or started)[-1]
        rows.append(("Date", started[0] if last == started[0] else f"{started[0]} – {last}"))
    ran = sorted({str(v) for m in manifests.values() if (v := (m.get("package_versions") or {}).get("louder"))})
    rows.append(("louder", (", ".join(ran) + " (run)" if ran else "–") +
                 ("" if ran == [__version__] else f", {__version__} (report)")))
    return rows


def _cost(a: Analysis) -> str:
    """What the recorded tokens cost, per the prices of louder/data/prices.yaml."""
    from louder.errors import LouderError
    from louder.prices import spent

    tokens: dict[str, list[int]] = {}
    for name in ANSWERS:
        df = a.file(name, ["model", "input_tokens", "output_tokens"])
        if df is None or "model" not in df.columns or "input_tokens" not in df.columns:
            continue
        sums = df.groupby("model")[["input_tokens", "output_tokens"]].sum(min_count=1).fillna(0)
        for model, r in sums.iterrows():
            t = tokens.setdefault(str(model), [0, 0])
            t[0] += int(r["input_tokens"])
            t[1] += int(r["output_tokens"])
    if not tokens:
        return "–"
    total, unpriced = 0.0, []
    for model, (tin, tout) in tokens.items():
        try:
            usd = spent(model, tin, tout)
        except (LouderError, ValueError):  # a spec this louder cannot parse: say so, count nothing
            usd = None
        if usd is None:
            unpriced.append(model)
        else:
            total += usd
    tin, tout = sum(t[0] for t in tokens.values()), sum(t[1] for t in tokens.values())
    said = f"{tin:,} input + {tout:,} output tokens" if tin + tout else "no tokens recorded"
    if unpriced:
        return f"{said}; not priced in louder/data/prices.yaml: {_listed(unpriced, 3)}"
    return ("free (local models)" if total == 0 and not tin + tout else
            f"{said}: " + ("free (local models)" if total == 0 else f"about ${total:,.2f} at listed prices"))
