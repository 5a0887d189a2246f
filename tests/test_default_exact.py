"""Issue 25: with the default presentation (choices as written, the file's own text, the attribute
stated) every prompt, seed and cache key is main's. The fingerprints in tests/data/default_run_golden.json
were taken from main (3d6d30f) before the presentation dimensions existed: the decisions (main's columns; wall
time left out), personas, probes and the sorted cache keys of small fake-model runs of every kind. Issue 32
regenerated them once, for one deliberate change: the fake model's names come from the curated name lists
(louder/llm/fake.py), which changes every fake run whose prompts carry a name (explicit and archetype runs did
not change); the runs matched the earlier file exactly before that change.

If a deliberate change to the default prompts or seeds breaks this, regenerate the file with
``python tests/test_default_exact.py > tests/data/default_run_golden.json`` — and say so in the commit."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest

import louder

GOLDEN = Path(__file__).parent / "data" / "default_run_golden.json"
CONFIGS = {
    "simulation": (None, {"models": ["fake:seed=1,bias=female:0.9"], "run_id": "g", "simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "non_contextualized", "no_persona"]}}),
    "score": (None, {"models": ["fake:seed=1,bias=black:0.8"], "run_id": "g", "simulation": {
        "scenarios": ["negative_information_sharing"], "groups": ["race_ethnicity"], "agents": 2,
        "decision_mode": "score"}}),
    "completion": (None, {"models": ["completion:fake:seed=2"], "run_id": "g", "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "no_persona"]}}),
    "variants": (None, {"models": ["fake:seed=1"], "run_id": "g", "simulation": {
        "scenarios": ["emergency_response_policy"], "groups": ["political_ideology"], "agents": 2,
        "variants": ["base", "mandatory"]}}),
    "network": (None, {"models": ["fake:seed=1"], "run_id": "g", "network": {"generator": "watts_strogatz",
                                                                            "params": {"k": 4, "p": 0.1}},
                       "influence": {"rounds": 2}, "simulation": {"scenarios": ["emergency_response"],
                                                                  "groups": ["gender_identity"], "agents": 5}}),
    "population": (None, {"models": ["fake:seed=1"], "run_id": "g", "population": "us_gender_ideology",
                          "simulation": {"scenarios": ["emergency_response"], "agents": 12}}),
    "explicit": ("explicit", {"models": ["fake:seed=1"], "run_id": "g", "explicit": {"trials": 3}, "simulation": {
        "scenarios": ["emergency_response", "authority_compliance"], "groups": ["gender_identity"]}}),
    "archetype": (None, {"models": ["fake:seed=1"], "run_id": "g", "population": {
                             "file": "us_gender_ideology", "mode": "archetype", "replicates": 2, "buckets": 3},
                         "influence": {"rounds": 1},
                         "network": {"generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}},
                         "simulation": {"scenarios": ["emergency_response"], "agents": 60, "decision_mode": "score",
                                        "groups": ["gender_identity", "political_ideology"]}}),
}
# decisions.parquet's columns on main (latency_s, wall time, left out); later columns are new
MAIN_DECISION_COLUMNS = ["run_id", "model", "condition", "scenario", "group", "attribute", "agent_id", "replicate",
                         "name", "persona", "decision", "target", "p_target", "rationale", "status", "raw_response",
                         "attempts", "input_tokens", "output_tokens", "choice_mass"]
NEW = ["latency_s", "choice_order", "wording", "signal", "thinking", "reasoning_tokens",  # issue 30: thinking
       "reasoning", "intervention"]  # issue 33: intervention


def _digest(df, cols) -> str:
    return hashlib.sha256(df[cols].to_json(orient="records", force_ascii=False).encode()).hexdigest()


def fingerprint(name: str, out: Path) -> dict:
    kind, cfg = CONFIGS[name]
    run = louder.run(cfg, out=out, kind=kind, progress=False)
    res = {}
    for t in run.tables:
        df = getattr(run, t)
        if t == "decisions":
            extra = [c for c in df.columns if c not in MAIN_DECISION_COLUMNS + NEW]  # kind-specific, as on main
            res[t] = _digest(df, MAIN_DECISION_COLUMNS + extra)
        elif t in ("personas", "probes"):
            res[t] = _digest(df, [c for c in df.columns if c not in ("latency_s", "choice_order", "thinking",
                                                                   "reasoning_tokens", "intervention")])
    with sqlite3.connect(Path(out) / "cache.sqlite") as db:
        keys = sorted(k for (k,) in db.execute("SELECT key FROM replies"))
    res["cache_keys"] = hashlib.sha256("\n".join(keys).encode()).hexdigest()
    res["n_keys"] = len(keys)
    return res


@pytest.mark.parametrize("name", CONFIGS)
def test_a_default_run_is_mains_byte_for_byte(tmp_path, name):
    assert fingerprint(name, tmp_path / name) == json.loads(GOLDEN.read_text("utf-8"))[name]


def test_the_new_columns_say_the_default_presentation(tmp_path):
    run = louder.run(CONFIGS["simulation"][1], out=tmp_path / "r", progress=False)
    d = run.decisions
    assert list(d.columns[-3:]) == ["choice_order", "wording", "signal"]
    assert set(d["choice_order"]) == {"Evacuate|Stay", "Astronaut|Plumber"}
    assert set(d["wording"]) == {"as_written"} and set(d["signal"]) == {"stated"}


if __name__ == "__main__":  # regenerate the golden file (see the module docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        json.dump({n: fingerprint(n, Path(d) / n) for n in CONFIGS}, sys.stdout, indent=1)
