"""``louder report RUN_DIR``: one self-contained HTML page (figures embedded as PNG data URIs) of the
analysis ``louder analyze`` wrote: the head, every measure's section in its position
(``louder.analysis.registry``), the answer accounting, the environment the run recorded and the
manifests."""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from louder.analysis import registry, select
from louder.analysis.html import note as _p, section as _section, table as _table
from louder.analysis.inputs import Analysis
from louder.analysis.keys import ATTRIBUTE_KEYS
from louder.analysis.registry import ALL, Input
from louder.io import write_text
from louder.status import status_by

# what the answer accounting counts: every answer of round 0 (the rounds have their own section) in every
# level of every dimension, each dimension that varies a column of its own; the paired agents of a human
# study are counted by their own measure
ACCOUNTED = {"decisions": Input("decisions", whole=ALL, reference=("round", "respondent"), keyed=("variant",)),
             "thinking": Input("decisions", whole=("wording", "reasoning", "signal")),
             "personas": Input("personas", whole=ALL, reference=("respondent",)),
             "probes": Input("probes", whole=("intervention",)),
             "beliefs": Input("beliefs", raw=True), "association": Input("association", raw=True),
             "decision_test": Input("decision_test", raw=True)}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{margin-bottom:0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:12px;margin:.6em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:13px}
.missing{background:#fff6e0;border-left:4px solid #f0ad4e;padding:.5em 1em}.warn{color:#b35c00}
img{max-width:100%;border:1px solid #eee}pre{background:#f8f8f8;padding:1em;overflow:auto;font-size:11px}
.sig{font-weight:bold;color:#c0392b}.scroll{max-height:480px;overflow:auto}.wide{overflow-x:auto}
h1,h2,h3{overflow-wrap:anywhere}
"""


def _accounting(a: Analysis) -> str:
    parts = [_p("Every model answer has one status: <b>valid</b> (one of the offered choices), <b>invalid</b> "
                "(off-list or unparseable; raw text kept in the Parquet files), <b>refused</b> (the model declined) "
                "or <b>error</b> (the call failed after retries). Rates and DPDs use valid answers only.")]
    d = a.view(ACCOUNTED["decisions"])
    if d is not None:
        # every wording (issue 25), every reasoning level (issue 30) and every prompt intervention (issue 33)
        t = pd.DataFrame(status_by(d, [*ATTRIBUTE_KEYS, *select.varying(d)]))
        parts += ["<h3>Decisions (per attribute)</h3>", _table(t, scroll=True)]
    personas = a.view(ACCOUNTED["personas"])
    if personas is not None and len(personas):
        t = pd.DataFrame(status_by(personas, ATTRIBUTE_KEYS))
        bad = t[(t["invalid"] + t["refused"] + t["error"]) > 0]
        parts += ["<h3>Personas</h3>", _p("A decision row whose persona failed carries the persona's status. "
                                           f"{len(bad)} of {len(t)} case × attribute cells had a persona that was "
                                           "not valid" + (":" if len(bad) else ".")), _table(bad, scroll=True)]
    p = a.view(ACCOUNTED["probes"])
    if p is not None:
        by = ["model", "scenario", "group"] + (["intervention"] if "intervention" in select.varying(p) else [])
        t = pd.DataFrame(status_by(p, by))
        parts += ["<h3>Explicit probes (per case)</h3>", _table(t, scroll=True)]
    beliefs = a.view(ACCOUNTED["beliefs"])
    if beliefs is not None:
        t = pd.DataFrame(status_by(beliefs, ["model", "scenario", "group", "attribute"]))
        parts += ["<h3>Beliefs probe (per attribute)</h3>", _table(t, scroll=True)]
    for title, df, keys in (("Word association test", a.view(ACCOUNTED["association"]),
                             ["model", "stereotype", "variation"]),
                            ("Relative decision test", a.view(ACCOUNTED["decision_test"]),
                             ["model", "stereotype", "variant"])):
        if df is not None:
            parts += [f"<h3>{title}</h3>", _table(pd.DataFrame(status_by(df, keys)), scroll=True)]
    parts.append(_thinking_accounting(a))
    return _section("Answer accounting", *parts)


def _thinking_accounting(a: Analysis) -> str:
    """Issue 30: per table, the answers that came with thinking, those whose thinking never closed
    (invalid, reason thinking_truncated) and the reasoning tokens reported; "" without any thinking."""
    rows = []
    for name, df in (("decisions", a.view(ACCOUNTED["thinking"])), ("personas", a.view(ACCOUNTED["personas"])),
                     ("probes", a.view(Input("probes"))), ("beliefs", a.view(ACCOUNTED["beliefs"]))):
        if df is None or "thinking" not in df:
            continue
        thinking = df["thinking"].fillna("").astype(str).str.strip() != ""
        cut = df["raw_response"].fillna("").astype(str).str.contains("[thinking_truncated", regex=False)
        tokens = df["reasoning_tokens"].dropna() if "reasoning_tokens" in df else pd.Series(dtype=float)
        if thinking.any() or cut.any() or len(tokens):
            rows.append(dict(table=name, rows=len(df), with_thinking=int(thinking.sum()),
                             thinking_truncated=int(cut.sum()), reasoning_tokens=int(tokens.sum()) if len(tokens)
                             else None))
    if not rows:
        return ""
    return ("<h3>Thinking (reasoning models)</h3>" + _p(
        "The thinking of a reasoning model is kept apart from its answer (the <code>thinking</code> column) and "
        "never parsed for a decision. <b>thinking_truncated</b>: answers whose thinking never closed before "
        "max_tokens; they have no answer and are counted invalid (raise max_tokens for reasoning models). "
        "<b>reasoning_tokens</b>: the thinking tokens the server reported (part of the output tokens).")
            + _table(pd.DataFrame(rows)))


def sections(a: Analysis) -> list[str]:
    """Every measure's section that applies to the run, in report order."""
    out = []
    for m in sorted(registry.measures(), key=lambda m: m.position):
        if m.section is None or not a.applies(m) or (m.tables and not any(t.name in a.tables for t in m.tables)):
            continue  # a measure that built nothing here has nothing to show
        out.append(m.section(a.context(m)))
    return [s for s in out if s]
def environment_table(manifests: dict[str, dict]) -> pd.DataFrame:
    """One row per package (Python first), one column per manifest that recorded versions: what each
    part of the run ran on. Two parts of one run may differ (the probes run later, elsewhere)."""
    versions = {k: m["package_versions"] for k, m in manifests.items() if m.get("package_versions")}
    names = list(dict.fromkeys(n for v in versions.values() for n in v))
    return pd.DataFrame([{"package": n, **{k: v.get(n) or "not installed" for k, v in versions.items()}}
                         for n in names])


def _environment(a: Analysis) -> str:
    env = environment_table(a.manifests)
    if env.empty:
        return ""
    differ = ", ".join(env["package"][env.drop(columns="package").nunique(axis=1).gt(1)])
    return _section("Environment",
                    _p("The Python and package versions each part of the run recorded in its manifest (the "
                       "packages whose versions can move a result)." +
                       (f" <b>Parts of this run ran on different versions</b>: {html.escape(differ)}." if differ
                        else "")),
                    _table(env))


def render(a: Analysis) -> str:
    t = a.tables
    sim = a.manifests.get("simulation", {})
    title = f"louder report — {html.escape(str(sim.get('run_id') or a.run_dir.name))}"
    models = sorted(set(t["cases"]["model"])) if "cases" in t and len(t["cases"]) else []
    head = [f"<h1>{title}</h1>",
            _p(f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from <code>{html.escape(str(a.run_dir))}"
               f"</code>. Models: {html.escape(', '.join(models) or '–')}.")]
    if any("embedded" in m for m in models):
        head.append(_p('<span class="warn">The embedded SmolLM2-135M model shows that the pipeline runs for real; '
                       "its answers are not evidence about bias in capable models.</span>"))
    if a.missing:
        head.append('<div class="missing"><b>Not in this run folder:</b><ul>' +
                    "".join(f"<li>{html.escape(m)}</li>" for m in a.missing) + "</ul></div>")
    body = [
        *sections(a),
        _accounting(a),
        _environment(a),
        _section("Manifests", *[f"<h3>{html.escape(k)}</h3><pre>{html.escape(json.dumps(m, indent=2, default=str))}"
                                f"</pre>" for k, m in a.manifests.items()] or [_p("No manifest found.")]),
    ]
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + title + "</title><style>" + CSS +
            "</style></head><body>" + "\n".join(head + body) + "</body></html>")


def write_report(a: Analysis) -> Path:
    path = a.run_dir / "report" / "index.html"
    write_text(render(a), path)
    return path
