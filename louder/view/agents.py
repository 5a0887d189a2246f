"""``louder view RUN`` for any run folder: every agent's persona, decision, rationale and thinking side by
side, filtered by case, attribute, status and decision — what the paper reads to explain a disparity, and
what the report shows a seeded sample of. A small HTTP server on 127.0.0.1 (the standard library's) serves
one page and the agents as JSON, a page at a time; nothing is fetched from elsewhere and no model is called.

``agents_table`` reads the folder, ``query`` filters it (the page's filters), ``serve`` runs the server."""

from __future__ import annotations

import json
import math
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd

from louder.analysis.stats.keys import CASE_KEYS, arm_keys
from louder.errors import LouderError
from louder.view.serve import JSONHandler

TEXT = ["persona", "decision", "rationale", "thinking"]
# what a row shows beside its words, where the run has it
EXTRA = ["agent_id", "name", "attribute", "status", "target", "p_target", "round", "wording", "reasoning",
         "intervention", "signal", "choice_order", "variant", "raw_response"]
PAGE_SIZE = 50


def agents_table(run_dir: str | Path) -> pd.DataFrame:
    """Every decision of the run folder (every round, wording, level, …) with its case label (``case``:
    model | condition | scenario | group, then the levels the run varies) and its words; the persona from
    personas.parquet where decisions.parquet does not carry it."""
    run = Path(run_dir)
    path = run / "decisions.parquet"
    if not path.exists():
        raise LouderError(f"{run} has no decisions.parquet: `louder view` reads the agents of a run folder (run "
                          "`louder run --out RUN_DIR` first)")
    d = pd.read_parquet(path)
    if "persona" not in d.columns and (run / "personas.parquet").exists():
        p = pd.read_parquet(run / "personas.parquet")
        on = [c for c in [*CASE_KEYS, "attribute", "agent_id"] if c in p.columns and c in d.columns]
        d = d.merge(p[[*on, "persona"]].drop_duplicates(on), on=on, how="left")
    varying = [c for c in ["variant", *arm_keys(d)] if c in d.columns and d[c].nunique(dropna=False) > 1]
    keys = [c for c in CASE_KEYS if c in d.columns] + varying
    d = d.assign(case=d[keys].astype(str).agg(" | ".join, axis=1))
    for c in TEXT:
        if c not in d.columns:
            d[c] = None
    cols = ["case", *[c for c in EXTRA if c in d.columns and c not in ("attribute",)], "attribute", *TEXT]
    return d[list(dict.fromkeys(cols))].reset_index(drop=True)


def facets(t: pd.DataFrame) -> dict:
    """What the filters offer: the cases, and per case its attributes, statuses and decisions."""
    out = {"cases": sorted(t["case"].unique()), "by_case": {}}
    for case, g in t.groupby("case", sort=True):
        out["by_case"][case] = {
            "attributes": sorted(g["attribute"].dropna().astype(str).unique()),
            "statuses": sorted(g["status"].dropna().astype(str).unique()),
            "decisions": sorted(g["decision"].dropna().astype(str).unique()),
            "agents": int(len(g))}
    return out


def query(t: pd.DataFrame, case: str = "", attribute: str = "", status: str = "", decision: str = "",
          text: str = "", offset: int = 0, limit: int = PAGE_SIZE) -> dict:
    """The agents that pass every filter given (empty: any), ``limit`` of them from ``offset``, and how many
    pass in all. ``text``: a word in the persona, rationale or thinking (any case)."""
    mask = pd.Series(True, index=t.index)
    for column, value in (("case", case), ("attribute", attribute), ("status", status), ("decision", decision)):
        if value:
            mask &= t[column].astype(str) == value
    if text:
        words = t["persona"].fillna("") + " " + t["rationale"].fillna("") + " " + t["thinking"].fillna("")
        mask &= words.str.contains(text, case=False, regex=False)
    rows = t[mask]
    page = rows.iloc[max(0, offset): max(0, offset) + max(1, min(limit, 500))]
    return {"total": int(len(rows)), "offset": int(offset), "rows": [_clean(r) for r in page.to_dict("records")]}


def _clean(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out[k] = None
        elif hasattr(v, "item"):  # numpy scalars
            out[k] = v.item()
        else:
            out[k] = v if isinstance(v, (str, int, float, bool)) else str(v)
    return out


class _Handler(JSONHandler):
    table: pd.DataFrame
    run: str

    def do_GET(self):  # noqa: N802 (the standard library's name)
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/":
            self._send(page(self.run).encode("utf-8"), "text/html; charset=utf-8")
        elif url.path == "/api/facets":
            self._json(facets(self.table))
        elif url.path == "/api/agents":
            try:
                offset, limit = int(q.get("offset", 0)), int(q.get("limit", PAGE_SIZE))
            except ValueError:
                return self.send_error(400, "offset and limit are numbers")
            self._json(query(self.table, q.get("case", ""), q.get("attribute", ""), q.get("status", ""),
                             q.get("decision", ""), q.get("text", ""), offset, limit))
        elif url.path == "/favicon.ico":
            self._send(b"", "image/x-icon", 204)
        else:
            self.send_error(404)


def server(run_dir: str | Path, port: int = 8765) -> ThreadingHTTPServer:
    """The server of ``run_dir``'s agents on 127.0.0.1:``port`` (0: any free port), not yet serving."""
    table = agents_table(run_dir)
    handler = type("Handler", (_Handler,), {"table": table, "run": str(run_dir)})
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


def page(run: str) -> str:
    """The one page: filters above, the agents below (persona, decision, rationale, thinking side by side)."""
    return PAGE.replace("__RUN__", json.dumps(run)[1:-1].replace("<", "&lt;"))


# Every change of a filter asks the server again; the answers can come back in another order than the questions
# (a case's every agent is slower to read than one attribute's), so ``load`` shows an answer only when no
# question was asked after it (``asked``): otherwise the agents of a filter already left would replace the rows.
PAGE = r"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>louder view — the agents' words</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;font-size:14px}
header{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #e4e4e4;padding:.6em 1.2em;z-index:1}
h1{font-size:1.15em;margin:0 0 .4em}label{font-size:12px;color:#555;margin-right:.8em}
select,input{font-size:13px;margin-left:.3em;max-width:420px}#count{font-size:12px;color:#555;margin-left:.5em}
main{padding:.4em 1.2em 3em}table{border-collapse:collapse;width:100%;table-layout:fixed}
td,th{border-bottom:1px solid #eee;padding:.45em .5em;vertical-align:top;text-align:left;font-size:13px}
th{font-size:12px;color:#555;background:#fff}.who{width:13%}.persona{width:34%}.decision{width:12%}.rationale{width:22%}
.thinking{width:19%}td.persona{color:#444}td.rationale{font-style:italic}td.thinking{color:#555;font-size:12px}
.status{font-size:11px;color:#a04a00}.dim{font-size:11px;color:#777}nav{margin-top:.8em}
button{font-size:13px;padding:.2em .8em;margin-right:.5em}
</style></head><body>
<header><h1>louder view — every agent of <code>__RUN__</code></h1>
<label>case<select id="case"></select></label><label>attribute<select id="attribute"></select></label>
<label>status<select id="status"></select></label><label>decision<select id="decision"></select></label>
<label>text<input id="text" type="search" placeholder="a word in persona, rationale, thinking"></label>
<span id="count" role="status"></span></header>
<main><table><thead><tr><th class="who">agent</th><th class="persona">persona</th><th class="decision">decision</th>
<th class="rationale">rationale</th><th class="thinking">thinking</th></tr></thead>
<tbody id="agents"></tbody></table><nav><button id="prev">previous</button><button id="next">next</button></nav></main>
<script>
(function(){
const $=id=>document.getElementById(id);let facets={by_case:{}},offset=0,asked=0;const size=50;
const fill=(sel,values,all)=>{const keep=sel.value;sel.innerHTML='';if(all){sel.add(new Option(all,''));}
values.forEach(v=>sel.add(new Option(v,v)));if([...sel.options].some(o=>o.value===keep)){sel.value=keep;}};
const text=(tag,cls,s)=>{const e=document.createElement(tag);if(cls){e.className=cls;}e.textContent=s==null?'':String(s);return e;};
function caseChanged(){const f=facets.by_case[$('case').value]||{attributes:[],statuses:[],decisions:[]};
fill($('attribute'),f.attributes,'every attribute');fill($('status'),f.statuses,'every status');
fill($('decision'),f.decisions,'every decision');offset=0;load();}
async function load(){const mine=++asked;const q=new URLSearchParams({case:$('case').value,attribute:$('attribute').value,
status:$('status').value,decision:$('decision').value,text:$('text').value,offset:offset,limit:size});
const r=await fetch('/api/agents?'+q);const data=await r.json();if(mine!==asked){return;}const body=$('agents');body.innerHTML='';
data.rows.forEach(a=>{const tr=document.createElement('tr');tr.className='agent';
const who=document.createElement('td');who.className='who';who.appendChild(text('b','',a.attribute));
who.appendChild(document.createElement('br'));who.appendChild(text('span','dim',(a.name||'agent')+' #'+a.agent_id+
(a.round!=null?' · round '+a.round:'')+(a.wording&&a.wording!=='as_written'?' · '+a.wording:'')+(a.reasoning&&a.reasoning!=='default'?' · '+a.reasoning:'')+
(a.intervention&&a.intervention!=='none'?' · '+a.intervention:'')));tr.appendChild(who);
tr.appendChild(text('td','persona',a.persona));const dec=document.createElement('td');dec.className='decision';
dec.appendChild(text('b','',a.decision||'no decision'));if(a.status!=='valid'){dec.appendChild(document.createElement('br'));
dec.appendChild(text('span','status',a.status));}if(a.p_target!=null){dec.appendChild(document.createElement('br'));
dec.appendChild(text('span','dim','p(target) '+Number(a.p_target).toFixed(2)));}tr.appendChild(dec);
tr.appendChild(text('td','rationale',a.rationale));tr.appendChild(text('td','thinking',a.thinking));body.appendChild(tr);});
$('count').textContent=data.total?(data.offset+1)+'–'+(data.offset+data.rows.length)+' of '+data.total+' agents':'no agent passes these filters';
$('prev').disabled=offset<=0;$('next').disabled=offset+size>=data.total;}
['attribute','status','decision'].forEach(id=>$(id).addEventListener('change',()=>{offset=0;load();}));
$('case').addEventListener('change',caseChanged);let timer;$('text').addEventListener('input',()=>{clearTimeout(timer);
timer=setTimeout(()=>{offset=0;load();},250);});$('prev').addEventListener('click',()=>{offset=Math.max(0,offset-size);load();});
$('next').addEventListener('click',()=>{offset+=size;load();});
fetch('/api/facets').then(r=>r.json()).then(f=>{facets=f;fill($('case'),f.cases,null);caseChanged();});
})();
</script></body></html>"""
