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
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_experiment(build_config({**base, "executor": "ray"}), tmp_path / "ray")
        assert remote.manifest["model_calls"] == local.manifest["model_calls"] == 36
        pd.testing.assert_frame_equal(remote.decisions[COLS], local.decisions[COLS])
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
