"""`louder scenario paraphrase`: new wordings of a scenario from a generator model, checked and kept with
provenance (issue 25, docs/robustness.md).

One seeded call per candidate asks for the situation and every choice's description in new words
(louder/data/paraphrase.yaml). A candidate is kept when it passes ``check``: every label keeps a
description of its own (its meaning slot) that names no other choice its original did not, the
situation's length stays within bounds, and no identity word (gender, race, politics, … and every
built-in group's attribute words) appears that the original does not have. Every rejected candidate
is listed with its reason. The calls are outside any run's plan: they are cached in their own file.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ConfigDict, Field, create_model

from louder.datafiles import read_yaml
from louder.errors import LouderError
from louder.llm.answers import parse_json_object
from louder.llm.base import Request, stable_seed
from louder.prompts import render
from louder.scenarios import Scenario, Wording, _builtin_ids, load_group

PERSONA_SLOT = re.compile(r"%[a-z_]+%|<[^<>]*>")


@cache
def settings() -> dict:
    return yaml.safe_load((resources.files("louder") / "data" / "paraphrase.yaml").read_text("utf-8"))


def _words(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[^\W\d_]+", text)}


@cache
def identity_words() -> frozenset[str]:
    """The words a paraphrase may not bring in: the data file's list and every built-in attribute's words."""
    out = set(w.casefold() for w in settings()["checks"]["identity_words"])
    for gid in _builtin_ids("groups"):
        for a in load_group(gid).attributes:
            out |= _words(a) - {"very", "non"}  # "Very Conservative", "Non-binary": not words about a person alone
    return frozenset(out)


def prompt_for(scenario: Scenario) -> str:
    s = settings()
    choices = "\n".join(f"{c.label}: {c.description}" if c.description else c.label for c in scenario.choices)
    slots = ",\n".join(render(s["choice_slot"], label=c.label) for c in scenario.choices)
    return render(s["prompt"], situation=scenario.situation, choices=choices, choice_slots=slots)


def schema_for(scenario: Scenario):
    """{situation, <label>: description …}: free text, bounded so a constrained decoder closes the JSON."""
    limit = int(len(scenario.situation) * settings()["checks"]["max_length_ratio"]) + 200
    fields = {"situation": (str, Field(min_length=1, max_length=limit))}
    for i, c in enumerate(scenario.choices):
        fields[f"choice_{i}"] = (str, Field(alias=c.label, min_length=1, max_length=300))
    return create_model("Paraphrase", __config__=ConfigDict(extra="forbid", populate_by_name=True), **fields)


def check(scenario: Scenario, situation, descriptions: dict) -> str | None:
    """Why a candidate cannot be a wording of ``scenario``, or None (module docstring)."""
    c = settings()["checks"]
    if not isinstance(situation, str) or not situation.strip():
        return "no situation"
    if PERSONA_SLOT.search(situation):
        return "the situation echoes the prompt's placeholder"
    ratio = len(situation.strip()) / len(scenario.situation)
    if not c["min_length_ratio"] <= ratio <= c["max_length_ratio"]:
        return (f"situation length {len(situation.strip())} characters is {ratio:.0%} of the original's "
                f"{len(scenario.situation)} (allowed {c['min_length_ratio']:.0%}–{c['max_length_ratio']:.0%})")
    original = _words(scenario.situation + " " + " ".join(x.description for x in scenario.choices))
    for ch in scenario.choices:
        d = descriptions.get(ch.label)
        if not isinstance(d, str) or not d.strip() or PERSONA_SLOT.search(d):
            return f"choice {ch.label}: no description of its own (its meaning slot is empty or a placeholder)"
        for other in scenario.choices:
            if other.label != ch.label and other.label.casefold() in _words(d) and \
                    other.label.casefold() not in _words(ch.description):
                return f"choice {ch.label}: its description names choice {other.label}"
    new = (_words(situation + " " + " ".join(str(descriptions.get(x.label, "")) for x in scenario.choices))
           - original) & identity_words()
    if new:
        return f"introduces identity words the original does not have: {', '.join(sorted(new))}"
    if situation.strip() == scenario.situation.strip() and all(
            descriptions.get(x.label, "").strip() == x.description.strip() for x in scenario.choices):
        return "identical to the original"
    return None


def generate(session, scenario: Scenario, n: int, seed: int) -> dict:
    """Ask ``session``'s model for ``n`` candidates (one call each); returns {kept, rejected, raw}."""
    s, prompt, schema = settings(), prompt_for(scenario), schema_for(scenario)
    requests = [Request(messages=(("user", prompt),), schema=schema, temperature=s["temperature"],
                        max_tokens=s["max_tokens"], seed=stable_seed(seed, "paraphrase", scenario.id, i),
                        replicate=f"paraphrase|{scenario.id}|{i}") for i in range(n)]
    replies = session.client.map(session.client.call, requests)
    kept, rejected, seen = [], [], set()
    for i, r in enumerate(replies):
        if r.error:
            rejected.append(dict(candidate=i, status="error", reason=r.error[:200]))
            continue
        obj = parse_json_object(r.text or "")
        if obj is None:
            rejected.append(dict(candidate=i, status="refused" if r.refusal else "invalid",
                                 reason="no JSON object in the answer", raw=(r.text or "")[:300]))
            continue
        situation = obj.get("situation")
        descriptions = {c.label: obj.get(c.label) for c in scenario.choices}
        why = check(scenario, situation, descriptions)
        if why is None and situation.strip() in seen:
            why = "the same as an earlier candidate"
        if why:
            rejected.append(dict(candidate=i, status="invalid", reason=why, raw=(r.text or "")[:300]))
            continue
        seen.add(situation.strip())
        kept.append(dict(candidate=i, situation=situation.strip(),
                         choices={k: v.strip() for k, v in descriptions.items()}))
    return dict(kept=kept, rejected=rejected, prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest())


def write(scenario: Scenario, source_path, result: dict, generator: str, seed: int, out: Path) -> Path:
    """The scenario file with the kept candidates as wordings (provenance in each one's ``source``) and
    the rejected ones listed, with their reasons, in the header."""
    doc = read_yaml(source_path, "scenario") if source_path is not None else scenario.model_dump(
        mode="json", by_alias=True, exclude_defaults=True)
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    taken = {w.id for w in scenario.wordings}
    wordings = list(doc.get("wordings") or [])
    k = 0
    for cand in result["kept"]:
        k += 1
        while f"gen{k}" in taken:
            k += 1
        wordings.append(dict(
            id=f"gen{k}", name=f"Generated paraphrase {k}",
            source=(f"generated by {generator} with `louder scenario paraphrase` (candidate {cand['candidate']}, "
                    f"seed {seed}, prompt sha256 {result['prompt_sha256'][:16]}, {created}); not the paper's"),
            situation=cand["situation"], choices=cand["choices"]))
    doc["wordings"] = wordings
    Scenario.model_validate(doc)  # what is written must load
    head = [f"# Wordings generated by `louder scenario paraphrase` from scenario {scenario.id}",
            f"# generator: {generator}; seed: {seed}; prompt sha256: {result['prompt_sha256']}; created: {created}",
            f"# kept {len(result['kept'])}, rejected {len(result['rejected'])}:"]
    head += [f"#   candidate {r['candidate']}: {r['status']}: {r['reason']}" for r in result["rejected"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
    out.write_text("\n".join(head) + "\n" + body, "utf-8")
    return out


def scenario_path(ref: str):
    """The file a scenario reference loads from (a path, or the built-in file of an id)."""
    from louder.scenarios import DATA

    if ref.endswith((".yaml", ".yml")) or "/" in ref:
        return Path(ref)
    if ref in _builtin_ids("scenarios"):
        return DATA / "scenarios" / f"{ref}.yaml"
    raise LouderError(f"unknown scenario {ref!r}; built-in scenarios: {', '.join(_builtin_ids('scenarios'))} "
                      "(or give the path of a .yaml file)")


__all__ = ["check", "generate", "write", "prompt_for", "schema_for", "Wording"]
