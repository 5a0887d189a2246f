"""New Relative Decision Test scenarios from the seed templates (issue 14, `--generate N`).

A generator model (the model under test or a named one) is shown one seed scenario per stereotype
and asked for N new ones with the same slots. A generated scenario is kept when it has exactly the
seed's slots (%first%, %second%, %option_1%, %option_2%, people with %token%); every answer and
every rejected scenario is recorded in the data file with its reason.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path

import yaml

from louder.errors import LouderError
from louder.llm.answers import parse_json_object
from louder.llm.base import Request, stable_seed
from louder.prompts import render
from louder.stimuli import Stereotype, templates

SLOTS = ("first", "second", "option_1", "option_2")
FILE = "generated_decisions.yaml"


def _check(s: dict) -> str | None:
    """Why a generated scenario cannot be run, or None."""
    t, p = s.get("template"), s.get("people")
    if not isinstance(t, str) or not isinstance(p, str):
        return "template and people must be strings"
    p = p.replace("{token}", "%token%")
    if set(re.findall(r"%([a-z0-9_]+)%", t)) != set(SLOTS):
        return "template must use exactly %first%, %second%, %option_1%, %option_2%"
    if re.findall(r"%([a-z0-9_]+)%", p) != ["token"]:
        return "people must contain {token} once"
    return None


def generate(session, st: Stereotype, n: int, seed: int) -> dict:
    """Ask for n scenarios like the stereotype's seed; returns the record kept in the data file."""
    spec, g = templates()["decision"]["seeds"][st.name], templates()["generate"]
    prompt = render(g["prompt"], seed=spec["template"], people=spec["people"].replace("%token%", "{token}"),
                    n=str(n), slots=", ".join(f"%{s}%" for s in SLOTS))
    r = session.client.call(Request(messages=(("user", prompt),), temperature=g["temperature"],
                                    max_tokens=g["max_tokens"], seed=stable_seed(seed, "generate", st.name, n),
                                    replicate=f"generate|{st.name}|{n}"))
    rec = dict(stereotype=st.name, generator=session.label, raw_response=r.text or r.error or "", scenarios=[],
               rejected=[])
    if r.error:
        return dict(rec, status="error")
    items = (parse_json_object(r.text or "") or {}).get("scenarios")
    if not isinstance(items, list):
        return dict(rec, status="refused" if r.refusal else "invalid")
    for i, s in enumerate(items):
        why = _check(s) if isinstance(s, dict) else "not an object"
        if why is None and len(rec["scenarios"]) < n:
            rec["scenarios"].append(dict(id=f"gen{len(rec['scenarios'])}", template=s["template"],
                                         people=s["people"].replace("{token}", "%token%")))
        else:
            rec["rejected"].append(dict(index=i, reason=why or "more than asked for", item=s))
    return dict(rec, status="valid" if rec["scenarios"] else "invalid")


def write(records: list[dict], generator: str, seed: int, out: Path) -> Path:
    prompt = templates()["generate"]["prompt"]
    data = dict(provenance=dict(generator=generator, seed=seed, created=datetime.now(timezone.utc).isoformat(),
                                prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest(),
                                source="seed templates of louder/data/bai/tests.yaml (Bai et al., appendix J)"),
                stereotypes=records)
    path = out / FILE
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
    return path


def load(path: Path) -> dict[str, list[dict]]:
    """stereotype → runnable scenarios of a generated data file."""
    try:
        data = yaml.safe_load(Path(path).read_text("utf-8"))
        return {r["stereotype"]: r["scenarios"] for r in data["stereotypes"]}
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise LouderError(f"{path}: not a generated-decisions file ({e}); run `louder probe decision --generate N`"
                          ) from None
