"""``louder view RUN`` for a convention run (issue 48): a convention forming, population by population —
the share of each option among every step's valid picks (a line per option), and under it every play of
the population (step, agent, its memory, its pick, its partner's, the outcome, the answer's status and
rationale). A small HTTP server on 127.0.0.1 (the standard library's) serves one page and the data as
JSON; nothing is fetched from elsewhere and no model is called.

``shares_of`` and ``plays_of`` are what the page asks for; ``server`` runs it."""

from __future__ import annotations

import json
import math
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd

from louder.analysis.stats.convention import POP, share_table
from louder.errors import LouderError
from louder.view.serve import JSONHandler

FILE = "convention.parquet"
SHOWN = ["step", "agent", "partner", "agent_model", "attribute", "committed", "memory", "pick", "partner_pick",
         "success", "payoff", "status", "rationale"]


def population_label(key) -> str:
    model, size, fraction, population = key
    return f"{model} | N={size}" + (f" | p={fraction:g}" if fraction else "") + f" | population {population}"


class ConventionData:
    """A convention run folder as the page reads it: its plays, options and the label of each population."""

    def __init__(self, run_dir: str | Path):
        run = Path(run_dir)
        if not (run / FILE).exists():
            raise LouderError(f"{run} has no {FILE}: `louder view` replays the populations of a convention run (run "
                              "`louder run` with `convention:` first)")
        self.plays = pd.read_parquet(run / FILE)
        manifest = json.loads((run / "manifest.json").read_text("utf-8")) if (run / "manifest.json").exists() else {}
        self.options = list((manifest.get("convention") or {}).get("options") or sorted(
            self.plays["pick"].dropna().unique()))
        keys = self.plays[POP].drop_duplicates()
        self.labels = {population_label(tuple(k)): tuple(k) for k in keys.itertuples(index=False)}

    def _rows(self, label: str) -> pd.DataFrame:
        if label not in self.labels:
            raise KeyError(label)
        key = self.labels[label]
        mask = (self.plays[POP] == pd.Series(dict(zip(POP, key)))).all(axis=1)
        return self.plays[mask]

    def shares_of(self, label: str) -> dict:
        """Per option, the share of each step's valid picks (steps in order)."""
        s = share_table(self._rows(label), self.options)
        steps = sorted(s["step"].unique().tolist())
        return {"steps": steps, "options": self.options,
                "shares": {x: [float(v) for v in s[s["option"] == x].sort_values("step")["share"]]
                           for x in self.options}}

    def plays_of(self, label: str, step: int | None = None) -> list[dict]:
        rows = self._rows(label)
        if step is not None:
            rows = rows[rows["step"] == step]
        return [_clean(r) for r in rows.sort_values(["step", "agent"])[SHOWN].to_dict("records")]


def _clean(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out[k] = None
        elif hasattr(v, "item"):
            out[k] = v.item()
        else:
            out[k] = v if isinstance(v, (str, int, float, bool)) else str(v)
    return out


class _Handler(JSONHandler):
    data: ConventionData
    run: str

    def do_GET(self):  # noqa: N802 (the standard library's name)
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        try:
            if url.path == "/":
                return self._send(PAGE.replace("__RUN__", json.dumps(self.run)[1:-1].replace("<", "&lt;"))
                                  .encode("utf-8"), "text/html; charset=utf-8")
            if url.path == "/api/populations":
                return self._json(list(self.data.labels))
            if url.path == "/api/shares":
                return self._json(self.data.shares_of(q.get("population", "")))
            if url.path == "/api/plays":
                step = int(q["step"]) if q.get("step") else None
                return self._json(self.data.plays_of(q.get("population", ""), step))
        except (KeyError, ValueError):
            return self.send_error(404, "no such population or step")
        if url.path == "/favicon.ico":
            return self._send(b"", "image/x-icon", 204)
        self.send_error(404)


def server(run_dir: str | Path, port: int = 8765) -> ThreadingHTTPServer:
    """The server of ``run_dir``'s populations on 127.0.0.1:``port`` (0: any free port), not yet serving."""
    handler = type("Handler", (_Handler,), {"data": ConventionData(run_dir), "run": str(run_dir)})
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


# The page: a population selector, the shares over the steps as an inline SVG (colours: Okabe & Ito, as the
# report's), a step slider and the plays of the chosen step. Dragging the slider asks for many steps' plays, whose
# answers can come back in another order: each is shown only when no later one was asked (``askedPlays``, ``askedShares``).
PAGE = r"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>louder view — conventions</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;font-size:14px}
header{background:#fafafa;border-bottom:1px solid #e4e4e4;padding:.6em 1.2em}h1{font-size:1.15em;margin:0 0 .4em}
label{font-size:12px;color:#555;margin-right:.8em}select{font-size:13px;max-width:560px}main{padding:.6em 1.2em 3em}
svg{max-width:760px;width:100%;height:auto;border:1px solid #eee}.legend span{margin-right:1em;font-size:12px}
table{border-collapse:collapse;width:100%;margin-top:.6em}td,th{border-bottom:1px solid #eee;padding:.3em .5em;
text-align:left;font-size:12px;vertical-align:top}th{color:#555}.miss{color:#a04a00}.ok{color:#009E73}
</style></head><body>
<header><h1>louder view — conventions of <code>__RUN__</code></h1>
<label>population<select id="population"></select></label>
<label>step <input id="step" type="range" min="1" value="1"> <b id="stepno">1</b></label></header>
<main><div class="legend" id="legend"></div><svg id="chart" viewBox="0 0 760 300" role="img"
aria-label="share of each option among the valid picks of every step"></svg>
<table><thead><tr><th>agent</th><th>memory (partners' picks)</th><th>pick</th><th>partner</th><th>partner's pick</th>
<th>outcome</th><th>status</th><th>rationale</th></tr></thead><tbody id="plays"></tbody></table></main>
<script>
(function(){
const $=id=>document.getElementById(id);const COLORS=['#0072B2','#E69F00','#009E73','#D55E00','#CC79A7','#56B4E9','#F0E442','#000000'];
const NS='http://www.w3.org/2000/svg';let shares=null,askedPlays=0,askedShares=0;
const el=(tag,attrs)=>{const e=document.createElementNS(NS,tag);for(const k in attrs){e.setAttribute(k,attrs[k]);}return e;};
const text=(tag,s,cls)=>{const e=document.createElement(tag);if(cls){e.className=cls;}e.textContent=s==null?'':String(s);return e;};
function draw(){const svg=$('chart');svg.innerHTML='';if(!shares){return;}const W=760,H=300,L=40,B=30,T=10,R=10;
const n=shares.steps.length,x=i=>L+(n>1?i/(n-1):0.5)*(W-L-R),y=v=>T+(1-v)*(H-T-B);
svg.appendChild(el('line',{x1:L,y1:y(0),x2:W-R,y2:y(0),stroke:'#BBBBBB'}));svg.appendChild(el('line',{x1:L,y1:y(1),x2:W-R,y2:y(1),stroke:'#EEEEEE'}));
[0,0.5,1].forEach(v=>{const t=el('text',{x:4,y:y(v)+4,'font-size':11});t.textContent=v;svg.appendChild(t);});
const s=+$('step').value;const cx=x(shares.steps.indexOf(s));svg.appendChild(el('line',{x1:cx,y1:T,x2:cx,y2:H-B,stroke:'#7F7F7F','stroke-dasharray':'4 3'}));
$('legend').innerHTML='';shares.options.forEach((o,i)=>{const c=COLORS[i%COLORS.length];const v=shares.shares[o];
svg.appendChild(el('polyline',{points:v.map((p,j)=>x(j)+','+y(p)).join(' '),fill:'none',stroke:c,'stroke-width':2.2}));
const sp=text('span','\u25A0 "'+o+'" '+(v[shares.steps.indexOf(s)]!=null?Math.round(100*v[shares.steps.indexOf(s)])+' %':''));sp.style.color=c;$('legend').appendChild(sp);});
const t=el('text',{x:W/2,y:H-6,'font-size':11,'text-anchor':'middle'});t.textContent='step';svg.appendChild(t);}
async function plays(){const mine=++askedPlays;const q=new URLSearchParams({population:$('population').value,step:$('step').value});
const rows=await (await fetch('/api/plays?'+q)).json();if(mine!==askedPlays){return;}const body=$('plays');body.innerHTML='';
rows.forEach(r=>{const tr=document.createElement('tr');tr.appendChild(text('td','#'+r.agent+(r.committed?' (committed)':'')+(r.agent_model?' · '+r.agent_model:'')+(r.attribute?' · '+r.attribute:'')));
tr.appendChild(text('td',r.memory||'(empty)'));tr.appendChild(text('td',r.pick||'no valid option',r.pick?'':'miss'));
tr.appendChild(text('td','#'+r.partner));tr.appendChild(text('td',r.partner_pick||'no valid option'));
tr.appendChild(text('td',r.success?'matched (+'+r.payoff+')':'missed ('+r.payoff+')',r.success?'ok':'miss'));
tr.appendChild(text('td',r.status==null?'committed':r.status,r.status&&r.status!=='valid'?'miss':''));tr.appendChild(text('td',r.rationale));body.appendChild(tr);});}
async function population(){const mine=++askedShares;
const got=await (await fetch('/api/shares?'+new URLSearchParams({population:$('population').value}))).json();
if(mine!==askedShares){return;}shares=got;
$('step').max=shares.steps.length?shares.steps[shares.steps.length-1]:1;$('step').value=1;$('stepno').textContent='1';draw();plays();}
$('population').addEventListener('change',population);$('step').addEventListener('input',()=>{$('stepno').textContent=$('step').value;draw();plays();});
fetch('/api/populations').then(r=>r.json()).then(ps=>{ps.forEach(p=>$('population').add(new Option(p,p)));population();});
})();
</script></body></html>"""
