"""``louder report RUN_DIR``: one self-contained HTML page of the analysis ``louder analyze`` wrote: the
run's design in one card and its findings first (``louder.analysis.report.findings``), then every measure's
section in its position (``louder.analysis.engine.registry``), the answer accounting, the environment the run
recorded and the manifests; a table of contents that follows the reader. Figures are SVG (embedded as
data URIs), the page's few behaviours inline JavaScript: nothing is fetched, it opens offline."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from louder.analysis.engine import registry, select
from louder.analysis.engine.declarations import Input
from louder.analysis.engine.inputs import Analysis, Context
from louder.analysis.engine.select import ALL
from louder.analysis.report import html as html_
from louder.analysis.report.findings import ANCHOR, TITLE, findings
from louder.analysis.report.html import note as _p
from louder.analysis.report.html import section as _section
from louder.analysis.report.html import table as _table
from louder.analysis.stats.keys import ATTRIBUTE_KEYS
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
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;line-height:1.45;font-size:15px}
#toc{position:fixed;top:0;left:0;width:230px;height:100vh;overflow-y:auto;padding:1em .8em;border-right:1px solid #e4e4e4;
background:#fafafa;font-size:13px}
#toc ol{list-style:none;padding:0;margin:.4em 0}#toc li{margin:.15em 0}
#toc a{color:#333;text-decoration:none;display:block;padding:.1em .4em;border-radius:3px}
#toc a.here{background:#0072B2;color:#fff}#toc .brand{font-weight:600}
main{margin-left:230px;padding:0 1.6em 3em;max-width:1060px}
h1{font-size:1.35em;margin:.7em 0 .3em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em;font-size:1.25em}
h3{font-size:1.05em}h1,h2,h3{overflow-wrap:anywhere}section.sec{scroll-margin-top:.5em}
.card{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:.2em 1.2em;margin:.3em 0 .6em;
padding:.5em .8em;border:1px solid #e4e4e4;border-radius:6px;background:#fcfcfc;font-size:13px}
.card div{display:flex;gap:.5em;min-width:0}.card dt{color:#666;flex:none}.card dd{margin:0;overflow-wrap:anywhere}
#findings h2{margin-top:.6em}#findings ul{margin:.2em 0 .5em;padding-left:1.3em}#findings li{margin:.25em 0}
#findings .model{margin:.4em 0 0}#findings a.go{font-size:12px;color:#0072B2;text-decoration:none}
table{border-collapse:collapse;font-size:12px;margin:.3em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f4f4f4;cursor:pointer;user-select:none;position:sticky;top:0}th[aria-sort=ascending]::after{content:" ▲"}
th[aria-sort=descending]::after{content:" ▼"}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.t .x{display:none}.tbl.all .t .x{display:table-cell}.tbl{margin:.6em 0}
button.cols{font-size:12px;margin:.2em 0;padding:.15em .6em;border:1px solid #bbb;border-radius:4px;background:#fff;cursor:pointer}
.shared{font-size:12px;color:#555;margin:.2em 0}.note{color:#555;font-size:13px}
.missing{background:#fff6e0;border-left:4px solid #E69F00;padding:.3em 1em;margin:.5em 0;font-size:13px}
.warn{color:#a04a00}figure.fig{margin:.8em 0}figure.fig img{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555}pre{background:#f8f8f8;padding:1em;overflow:auto;font-size:11px}
.sig{font-weight:bold;color:#D55E00}.scroll{max-height:480px;overflow:auto}.wide{overflow-x:auto}
details.words{margin:.4em 0;border:1px solid #e4e4e4;border-radius:6px;padding:.3em .7em}
details.words summary{cursor:pointer;font-size:13px}.agents{display:flex;gap:1em;overflow-x:auto}
.attr{flex:1 1 0;min-width:220px}.attr h4{margin:.5em 0 .2em}.agent{border-top:1px solid #eee;padding:.3em 0;font-size:12px}
.agent p{margin:.15em 0}.persona{color:#444}.rationale{font-style:italic}
@media (max-width:900px){#toc{position:static;width:auto;height:auto;border:0}main{margin-left:0}}
@media print{#toc{display:none}main{margin-left:0}.t .x{display:table-cell}}
"""

# the page's behaviour, inline (the report is one file and works offline): the table of contents marks the
# section being read, a table's toggle shows its other columns, a heading sorts its column, a figure's
# link downloads it
JS = r"""
(function(){
const links=[...document.querySelectorAll('#toc a')];const byId={};links.forEach(a=>byId[a.hash.slice(1)]=a);
const seen=new Map();const obs=new IntersectionObserver(es=>{es.forEach(e=>seen.set(e.target.id,e.isIntersecting));
const first=[...document.querySelectorAll('main section.sec')].find(s=>seen.get(s.id));
links.forEach(a=>a.classList.remove('here'));if(first&&byId[first.id]){byId[first.id].classList.add('here');}},
{rootMargin:'0px 0px -70% 0px'});document.querySelectorAll('main section.sec').forEach(s=>obs.observe(s));
document.querySelectorAll('button.cols').forEach(b=>{const label=b.textContent;b.addEventListener('click',()=>{
const box=b.closest('.tbl');const all=box.classList.toggle('all');b.setAttribute('aria-expanded',all);
b.textContent=all?'key columns only':label;});});
const key=t=>{const v=parseFloat(t.replace(/[^0-9eE+.\-]/g,' ').trim().split(' ')[0]);return isNaN(v)?null:v;};
document.querySelectorAll('table.t th').forEach((th,i)=>th.addEventListener('click',()=>{
const table=th.closest('table');const body=table.tBodies[0];const col=[...th.parentNode.children].indexOf(th);
const up=th.getAttribute('aria-sort')!=='ascending';table.querySelectorAll('th').forEach(h=>h.removeAttribute('aria-sort'));
th.setAttribute('aria-sort',up?'ascending':'descending');const rows=[...body.rows];
const num=rows.every(r=>{const t=r.cells[col].textContent.trim();return t==='–'||t===''||key(t)!==null;});
rows.sort((a,b)=>{const x=a.cells[col].textContent.trim(),y=b.cells[col].textContent.trim();let c;
if(num){const p=key(x),q=key(y);c=(p===null)-(q===null)||(p===null?0:p-q);}else{c=x.localeCompare(y);}
return up?c:-c;});rows.forEach(r=>body.appendChild(r));}));
document.querySelectorAll('figure.fig a.dl').forEach(a=>a.addEventListener('click',()=>{
a.href=a.closest('figure').querySelector('img').src;}));
})();
"""


def _accounting(a: Analysis) -> str:
    parts = [_p("Every model answer has one status: <b>valid</b> (one of the offered choices), <b>invalid</b> "
                "(off-list or unparseable; raw text kept in the Parquet files), <b>refused</b> (the model declined) "
                "or <b>error</b> (the call failed after retries). Rates and DPDs use valid answers only.")]
    d = a.rows(ACCOUNTED["decisions"])
    if d is not None:
        # every wording (issue 25), every reasoning level (issue 30) and every prompt intervention (issue 33)
        t = pd.DataFrame(status_by(d, [*ATTRIBUTE_KEYS, *select.varying(d)]))
        parts += ["<h3>Decisions (per attribute)</h3>", _table(t, scroll=True)]
    personas = a.rows(ACCOUNTED["personas"])
    if personas is not None and len(personas):
        t = pd.DataFrame(status_by(personas, ATTRIBUTE_KEYS))
        bad = t[(t["invalid"] + t["refused"] + t["error"]) > 0]
        parts += ["<h3>Personas</h3>", _p("A decision row whose persona failed carries the persona's status. "
                                           f"{len(bad)} of {len(t)} case × attribute cells had a persona that was "
                                           "not valid" + (":" if len(bad) else ".")), _table(bad, scroll=True)]
    p = a.rows(ACCOUNTED["probes"])
    if p is not None:
        by = ["model", "scenario", "group"] + (["intervention"] if "intervention" in select.varying(p) else [])
        t = pd.DataFrame(status_by(p, by))
        parts += ["<h3>Explicit probes (per case)</h3>", _table(t, scroll=True)]
    beliefs = a.rows(ACCOUNTED["beliefs"])
    if beliefs is not None:
        t = pd.DataFrame(status_by(beliefs, ["model", "scenario", "group", "attribute"]))
        parts += ["<h3>Beliefs probe (per attribute)</h3>", _table(t, scroll=True)]
    for title, df, keys in (("Word association test", a.rows(ACCOUNTED["association"]),
                             ["model", "stereotype", "variation"]),
                            ("Relative decision test", a.rows(ACCOUNTED["decision_test"]),
                             ["model", "stereotype", "variant"])):
        if df is not None:
            parts += [f"<h3>{title}</h3>", _table(pd.DataFrame(status_by(df, keys)), scroll=True)]
    parts.append(_thinking_accounting(a))
    return _section("Answer accounting", *parts)


def _thinking_accounting(a: Analysis) -> str:
    """Issue 30: per table, the answers that came with thinking, those whose thinking never closed
    (invalid, reason thinking_truncated) and the reasoning tokens reported; "" without any thinking."""
    rows = []
    for name, df in (("decisions", a.rows(ACCOUNTED["thinking"])), ("personas", a.rows(ACCOUNTED["personas"])),
                     ("probes", a.rows(Input("probes"))), ("beliefs", a.rows(ACCOUNTED["beliefs"]))):
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


class SectionContext(Context):
    """A measure's context while its report section is written: ``figure`` places the figures it
    declares."""

    def figure(self, name: str, *args) -> str:
        """The measure's figure ``name`` (declared on it: ``declarations.Figure``) drawn for ``args`` and
        rendered for its section: SVG with its alt text and a download link; a line saying why when there
        is nothing to draw."""
        import matplotlib

        declared = self.measure.figure(name)
        with matplotlib.rc_context(html_.FIGURE_RC):
            fig = declared.draw(self, *args)
        if fig is None:
            return html_.no_figure(f"{self.measure.name}/{name}", declared.empty)
        self._drawn = getattr(self, "_drawn", 0) + 1  # one download name per figure of the section
        download = f"{self.measure.name}-{name}" + (f"-{self._drawn}" if self._drawn > 1 else "")
        return html_.figure(fig, declared.alt_text(self, *args), f"{self.measure.name}/{name}",
                            html_.slug(download))


def sections(a: Analysis) -> list[str]:
    """Every measure's section that applies to the run, in report order."""
    out = []
    for m in sorted(registry.measures(), key=lambda m: m.position):
        if m.section is None or not a.applies(m) or (m.tables and not any(t.name in a.tables for t in m.tables)):
            continue  # a measure that built nothing here has nothing to show
        out.append(m.section(SectionContext(a, m)))
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


def _toc(body: list[str], brand: str = "louder report") -> str:
    """The table of contents: every section's title, linked to its anchor, in order."""
    items = re.findall(r'<section class="sec" id="([^"]+)"><h2>(.*?)</h2>', "\n".join(body))
    return (f'<nav id="toc" aria-label="Contents"><div class="brand">{html.escape(brand)}</div><ol>' +
            "".join(f'<li><a href="#{i}">{t}</a></li>' for i, t in items) + "</ol></nav>")


def page(title: str, head: list[str], body: list[str], brand: str = "louder report") -> str:
    """One self-contained page of louder's reports — a run's (``render``) and a comparison's
    (``louder.analysis.report.comparison``) alike: the stylesheet, the table of contents of ``body``'s
    sections (``brand`` above it) that follows the reader, then ``head`` (the title and the design card)
    and ``body`` (the findings first, then the sections; empty parts left out), and the page's behaviours.
    ``title`` is HTML (escaped by the caller)."""
    body = [b for b in body if b]
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            "content='width=device-width, initial-scale=1'><title>" + title + "</title><style>" + CSS +
            "</style></head><body>" + _toc(body, brand) + "<main>" + "\n".join(head + body) + "</main><script>" +
            JS + "</script></body></html>")


def render(a: Analysis) -> str:
    sim = a.manifests.get("simulation", {})
    title = f"louder report — {html.escape(str(sim.get('run_id') or a.run_dir.name))}"
    found = findings(a)
    models = [v for k, v in found.card if k == "Models"]
    head = [f"<h1>{title}</h1>", found.card_html()]
    if any("embedded" in m for m in models):
        head.append(_p('<span class="warn">The embedded SmolLM2-135M model shows that the pipeline runs for real; '
                       "its answers are not evidence about bias in capable models.</span>"))
    body = [
        _section(TITLE, found.html(), _p(f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from <code>"
                                         f"{html.escape(str(a.run_dir))}</code>; every agent's words: <code>louder "
                                         f"view {html.escape(str(a.run_dir))}</code>."), anchor=ANCHOR),
        *sections(a),
        _accounting(a),
        _environment(a),
        _section("Manifests", *[f"<h3>{html.escape(k)}</h3><pre>{html.escape(json.dumps(m, indent=2, default=str))}"
                                f"</pre>" for k, m in a.manifests.items()] or [_p("No manifest found.")]),
    ]
    return page(title, head, body)


def write_report(a: Analysis) -> Path:
    path = a.run_dir / "report" / "index.html"
    write_text(render(a), path)
    return path
