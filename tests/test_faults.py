"""Runs against a fault-injecting server on 127.0.0.1: every agent accounted for, nothing lost."""

import json

import pandas as pd
import pytest
from fault_server import FaultServer

from louder.config import build_config
from louder.simulation import run_experiment

ALL_FAULTS = {"429": 0.04, "500": 0.03, "503": 0.03, "hang": 0.01, "close": 0.02, "truncated_body": 0.02,
              "malformed": 0.03, "truncated": 0.02, "refusal": 0.03, "off_list": 0.03}
KEYS = ["model", "condition", "scenario", "group", "attribute", "replicate"]


@pytest.fixture
def faulty():
    server = FaultServer(ALL_FAULTS, seed=1, hang_s=1.2)
    server.start()
    yield server
    server.stop()


def cfg(url, **kw):
    base = dict(models=[{"spec": f"openai:fake@{url}", "max_attempts": 3, "timeout_s": 0.6}],
                scenarios=["emergency_response", "career_path_selection"],
                groups=["gender_identity", "race_ethnicity", "political_ideology"], agents=36, concurrency=48)
    base.update(kw)
    return build_config(base)


def test_thousand_agents_under_every_fault(faulty, tmp_path):
    c = cfg(faulty.url)
    first = run_experiment(c, tmp_path)
    d = first.decisions
    # 2 scenarios × 14 attributes × 36 agents: every expected row exactly once, each with a status.
    assert len(d) == 1008 and not d.duplicated(KEYS).any()
    expected = {(s, a, r) for s in c.simulation.scenarios
                for g in ("gender_identity", "race_ethnicity", "political_ideology")
                for a in __import__("louder.scenarios", fromlist=["x"]).load_group(g).attributes for r in range(36)}
    assert set(zip(d["scenario"], d["attribute"], d["replicate"])) == expected
    assert d["status"].isin(["valid", "invalid", "refused", "error"]).all()
    counts = d["status"].value_counts().to_dict()
    assert all(counts.get(s, 0) > 0 for s in ("valid", "invalid", "refused", "error")), counts
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["status_counts"]["decisions"] == {s: counts.get(s, 0) for s in ("valid", "invalid", "refused", "error")}
    assert sum(m["status_counts"]["decisions"].values()) == 1008
    per_attr = pd.DataFrame(m["status_by_attribute"])
    assert per_attr[["valid", "invalid", "refused", "error"]].sum().sum() == 1008
    # Nothing defaulted: non-valid rows have no decision and keep their raw text or error.
    bad = d[d["status"] != "valid"]
    assert bad["decision"].isna().all() and bad["target"].isna().all()
    assert (bad["raw_response"].str.len() > 0).all()
    assert (d.loc[d["status"] == "error", "raw_response"].str.contains("transport failure|persona error")).all()
    asked = ~d["raw_response"].str.startswith("[persona")  # an agent whose persona failed made no decision call
    assert (d.loc[asked, "attempts"] >= 1).all() and (d.loc[~asked, "attempts"] == 0).all()
    assert d["attempts"].max() > 1  # retries were recorded
    faulty_total = sum(faulty.injected.values())
    assert all(faulty.injected[f] > 0 for f in ALL_FAULTS), faulty.injected

    # A plain re-run changes nothing and calls nothing.
    n_requests = len(faulty.requests)
    second = run_experiment(c, tmp_path)
    assert len(faulty.requests) == n_requests and second.manifest["model_calls"] == 0
    pd.testing.assert_frame_equal(d.drop(columns="latency_s"), second.decisions.drop(columns="latency_s"))

    # --retry-errors asks again for exactly the error rows; every other row stays as it was.
    third = run_experiment(c, tmp_path, retry_errors=True)
    errors = d["status"] == "error"
    assert 0 < third.manifest["model_calls"] <= 2 * errors.sum() + (d["raw_response"].str.startswith("[persona")).sum()
    merged = d.merge(third.decisions, on=KEYS, suffixes=("", "_new"))
    kept = merged[merged["status"] != "error"]
    assert (kept["status"] == kept["status_new"]).all()
    assert (kept["decision"].fillna("-") == kept["decision_new"].fillna("-")).all()
    assert len(third.decisions) == 1008
    print(f"fault mix {ALL_FAULTS}; injected {dict(faulty.injected)} of {n_requests} requests "
          f"({faulty_total} faults); first run statuses {counts}; "
          f"after --retry-errors {third.decisions['status'].value_counts().to_dict()}")


def test_reask_bounds_content_faults(tmp_path):
    server = FaultServer({"refusal": 0.5, "off_list": 0.3}, seed=3)
    server.start()
    # content faults only: a timeout long enough that a loaded machine adds no transport errors
    model = [{"spec": f"openai:fake@{server.url}", "max_attempts": 3, "timeout_s": 30}]
    try:
        base = run_experiment(cfg(server.url, models=model, scenarios=["emergency_response"],
                                  groups=["gender_identity"], agents=10), tmp_path / "none")
        server.seen.clear()
        reasked = run_experiment(cfg(server.url, models=model, scenarios=["emergency_response"],
                                     groups=["gender_identity"], agents=10, reask=3), tmp_path / "reask")
    finally:
        server.stop()
    n_bad = lambda df: int((df["status"] != "valid").sum())  # noqa: E731
    assert n_bad(reasked.decisions) < n_bad(base.decisions)
    assert reasked.decisions["attempts"].max() <= 4 + 3  # 1 + 3 re-asks, plus transport retries of each
    assert (reasked.decisions["attempts"] > 1).any()
