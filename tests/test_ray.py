"""``executor: ray`` gives the rows of the local executor, and resumes from the same cache."""

from __future__ import annotations

import pandas as pd
import pytest

from louder.config import build_config
from louder.simulation import run_experiment

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'louder[ray]')")

COLS = ["model", "condition", "scenario", "group", "attribute", "replicate", "name", "persona", "decision",
        "rationale", "status"]


def test_ray_rows_equal_local_rows(fake_server, tmp_path):
    base = dict(models=[f"openai:fake@{fake_server.url}"], scenarios=["emergency_response", "career_path_selection"],
                groups=["gender_identity"], agents=3, concurrency=4, seed=7)
    local = run_experiment(build_config(base), tmp_path / "local")
    assert (local.manifest["model_calls"], local.manifest["cache_hits"]) == (36, 0)
    asked = len(fake_server.requests)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_experiment(build_config({**base, "executor": "ray"}), tmp_path / "ray")
        # The rows first: a call that failed, or was answered for another agent, shows in its row.
        pd.testing.assert_frame_equal(remote.decisions[COLS], local.decisions[COLS])
        # Every answer asked once, in a worker (on failure: what the server received, beside the counts).
        m = remote.manifest
        assert (m["model_calls"], m["cache_hits"]) == (36, 0), len(fake_server.requests) - asked
        assert not list((tmp_path / "ray" / "cache-shards").glob("*.sqlite"))  # every shard merged
        again = run_experiment(build_config({**base, "executor": "ray"}), tmp_path / "ray")
        assert again.manifest["model_calls"] == 0
    finally:
        ray.shutdown()
    # The merged cache serves the local executor too.
    assert run_experiment(build_config(base), tmp_path / "ray").manifest["model_calls"] == 0


def test_shard_reads_through_and_leftover_shards_merge(tmp_path):
    from louder.llm.base import Reply
    from louder.llm.cache import ResponseCache
    from louder.simulation.ray_executor import ShardCache, merge_shard

    main = ResponseCache(tmp_path / "cache.sqlite")
    main.put("old", Reply(text="from the run"))
    shard = ShardCache(tmp_path / "shard.sqlite", tmp_path / "cache.sqlite")
    assert shard.get("old").text == "from the run"  # read through to the run's cache
    shard.put("new", Reply(text="from a worker"))
    assert main.get("new") is None  # workers never write the run's cache
    shard.close()
    assert merge_shard(main, tmp_path / "shard.sqlite") == 1  # what an interrupted run left behind
    assert main.get("new").text == "from a worker" and not (tmp_path / "shard.sqlite").exists()
    main.close()


def test_archetype_run_sharded_by_cell_on_two_workers_equals_one_process(tmp_path):
    """Issue 49: an archetype run's agents split by population cell over 2 Ray workers (a local cluster)
    write the files one process writes — every row, value and order — and each worker reports its peak."""
    from louder.simulation.archetype_run import run_archetype

    population = {"file": "us_adults", "mode": "archetype", "replicates": 2, "buckets": 4}
    base = dict(models=["fake:seed=1,bias=woman:0.8"], population=population, agents=6000, decision_mode="score",
                scenarios=["emergency_response"], groups=["gender_identity", "race_ethnicity"],
                network={"generator": "watts_strogatz", "params": {"k": 6, "p": 0.1}, "seed": 3}, rounds=3, seed=5)
    local = run_archetype(build_config(base), tmp_path / "local")
    remote = run_archetype(build_config({**base, "executor": "ray", "population": {**population, "shards": 2}}),
                           tmp_path / "ray")
    assert not ray.is_initialized()  # the run started Ray and stopped it
    for name in ("decisions.parquet", "control.parquet", "network.parquet", "archetypes.parquet"):
        a, b = pd.read_parquet(tmp_path / "local" / name), pd.read_parquet(tmp_path / "ray" / name)
        if "run_id" in a:
            b["run_id"] = a["run_id"]
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    shards = remote.manifest["archetype"]["shards"]
    assert len(shards) == 2 and sum(s["agents"] for s in shards) == 6000 and all(s["peak_mb"] > 0 for s in shards)
    assert remote.manifest["status_by_attribute"] == local.manifest["status_by_attribute"]
