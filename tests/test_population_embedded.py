"""A population run with variants and twins on the real embedded model, SIGKILLed mid-run and resumed:
the result equals an uninterrupted run and no answer is asked twice."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from cache_count import cached_replies

# ~60 embedded calls in all (reference, killed runs, resume): long on a shared 2-core machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def test_population_variants_twins_sigkill_then_resume_equals_uninterrupted(tmp_path):
    pop = {"id": "tiny", "name": "tiny", "groups": [
        "gender_identity", {"id": "age_group", "name": "Age group", "attributes": ["18-44", "45+"]}],
        "distribution": {"marginals": {"gender_identity": {"Male": 49, "Female": 50, "Non-binary": 1},
                                       "age_group": {"18-44": 46, "45+": 54}}}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(pop), encoding="utf-8")
    config = {"models": ["embedded"], "population": str(tmp_path / "tiny.yaml"), "variants": ["base", "mandatory"],
              "twins": True, "twin_groups": ["gender_identity"], "simulation": {"agents": 2, "scenarios": ["emergency_response_policy"],
                                            "decision_mode": "score"}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    cmd = [sys.executable, "-m", "louder.cli", "run", str(tmp_path / "c.yaml"), "--out"]
    reference = tmp_path / "ref"
    r = subprocess.run(cmd + [str(reference)], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr
    ref = json.loads((reference / "manifest.json").read_text())
    ref_calls = ref["model_calls"]
    out = tmp_path / "killed"
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    print(f"kill points seed {seed}")
    for kill_after in sorted(rng.sample(range(1, ref_calls - 1), 2)):
        proc = subprocess.Popen(cmd + [str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 900
            while cached_replies(out / "cache.sqlite") < kill_after and proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.8))
        finally:  # never leave a run behind (a timeout would orphan it, writing into the folder)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        assert not (out / "decisions.parquet").exists() and not (out / "twins.parquet").exists()
    done = subprocess.run(cmd + [str(out)], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["cache_hits"] >= kill_after and m["model_calls"] + m["cache_hits"] == ref_calls + ref["cache_hits"]
    # nothing asked twice: every distinct request is in the cache once, as many as the reference made
    assert cached_replies(out / "cache.sqlite") == cached_replies(reference / "cache.sqlite") == ref_calls
    for name, cols in (("decisions.parquet", ["variant", "agent_id", "attribute", "name", "persona", "decision",
                                               "p_target", "status", "raw_response"]),
                       ("twins.parquet", ["variant", "twin_set", "attribute", "name", "persona", "decision",
                                          "p_target", "status", "twin_status"]),
                       ("population.parquet", None)):
        a, b = pd.read_parquet(reference / name), pd.read_parquet(out / name)
        pd.testing.assert_frame_equal(a[cols] if cols else a, b[cols] if cols else b)
    d = pd.read_parquet(out / "decisions.parquet")
    assert len(d) == 4 and set(d["status"]) <= {"valid", "invalid", "refused", "error"}
    tw = pd.read_parquet(out / "twins.parquet")
    assert len(tw) == 2 * 2 * 3  # agents × variants × gender twin set
