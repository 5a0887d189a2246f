"""Batch export → a batch engine (played by a helper against a real server on 127.0.0.1) → import →
``louder run`` completes from the cache; bad result files are accounted line by line."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

from louder.batching import export, import_file, poll, status, submit
from louder.cli import app
from louder.config import build_config
from louder.simulation import run_experiment

COLS = ["attribute", "replicate", "name", "persona", "decision", "rationale", "status", "p_target"]


def play_batch(requests: Path, base_url: str, out: Path, drop: int = 0) -> Path:
    """What the OpenAI Batch API or vLLM run_batch does: answer every line, write the output file
    (``drop`` leaves the last lines unanswered, like a batch that expired part-way)."""
    root = base_url.removesuffix("/v1")
    lines = [json.loads(x) for x in requests.read_text().splitlines()]
    with httpx.Client(timeout=600) as http, open(out, "w") as f:
        for i, line in enumerate(lines[: len(lines) - drop]):
            r = http.post(root + line["url"], json=line["body"])
            f.write(json.dumps({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                                "response": {"status_code": r.status_code, "request_id": f"r{i}", "body": r.json()},
                                "error": None}) + "\n")
    return out


def cfg(url, **kw):
    base = dict(models=[{"spec": f"openai:fake@{url}", "client": "http"}], scenarios=["emergency_response"],
                groups=["gender_identity"], agents=2, concurrency=4)
    base.update(kw)
    return build_config(base)


def round_trip(config, url, run: Path) -> list[int]:
    """Export/answer/import until nothing is missing; returns the requests per stage."""
    per_stage = []
    for _ in range(5):
        st = status(config, run, ["simulation"])
        if st.needed == 0:
            return per_stage
        stage, files, n = export(config, run, ["simulation"])
        per_stage.append(n)
        for f in files:
            summary = import_file(play_batch(f, url, run / f"out-{f.name}"), run, config)
            assert summary.stored == summary.lines == len(f.read_text().splitlines())
    raise AssertionError("batch stages did not finish")


@pytest.mark.parametrize("mode", ["sample", "score"])
def test_round_trip_equals_live_run(fake_server, tmp_path, mode):
    config = cfg(fake_server.url, decision_mode=mode)
    stages = round_trip(config, fake_server.url, tmp_path / "batch")
    assert stages == [6, 6]  # personas, then decisions: 3 attributes × 2 agents
    done = run_experiment(config, tmp_path / "batch")
    assert done.manifest["model_calls"] == 0
    live = run_experiment(config, tmp_path / "live")
    pd.testing.assert_frame_equal(done.decisions[COLS], live.decisions[COLS])
    if mode == "score":
        lines = (tmp_path / "batch" / "batch" / "requests-2.jsonl").read_text().splitlines()
        assert all(json.loads(x)["body"]["logprobs"] is True for x in lines)


def test_export_writes_nothing_twice_and_no_results_early(fake_server, tmp_path):
    config = cfg(fake_server.url)
    stage, files, n = export(config, tmp_path, ["simulation"])
    assert (stage, n) == (1, 6) and not (tmp_path / "decisions.parquet").exists()
    assert export(config, tmp_path, ["simulation"])[1] == []  # stage 1 still waits for its answers
    st = status(config, tmp_path, ["simulation"])
    assert (st.needed, st.exported) == (6, 6) and "import" in st.next_step
    line = json.loads(files[0].read_text().splitlines()[0])
    assert set(line) == {"custom_id", "method", "url", "body"} and line["url"] == "/v1/chat/completions"
    assert fake_server.requests == []  # export never calls a model


def test_bad_result_files_are_accounted(fake_server, tmp_path):
    config = cfg(fake_server.url)
    _, files, _ = export(config, tmp_path, ["simulation"])
    good = play_batch(files[0], fake_server.url, tmp_path / "good.jsonl").read_text().splitlines()
    other_run = json.loads(good[0]) | {"custom_id": "f" * 64}
    error_line = {"id": "x", "custom_id": json.loads(good[1])["custom_id"], "response": None,
                  "error": {"code": "server_error", "message": "boom"}}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([good[0], good[0], json.dumps(other_run), "not json", json.dumps(error_line),
                              json.dumps({"no": "custom_id"}), good[2], good[3][: len(good[3]) // 2]]))
    s = import_file(bad, tmp_path, config)
    assert (s.lines, s.stored, s.errors, s.duplicates, s.unknown, s.malformed) == (8, 3, 1, 1, 1, 3)
    assert s.stored + s.duplicates + s.unknown + s.malformed + s.already_cached == s.lines
    # Importing the complete file afterwards stores the rest and leaves what is cached.
    s2 = import_file(tmp_path / "good.jsonl", tmp_path, config)
    assert (s2.stored, s2.already_cached) == (4, 2)  # the error answer is replaced by the real one
    result = run_experiment(config, tmp_path)  # personas all cached now; decisions are live calls
    assert len(result.decisions) == 6 and (result.decisions["status"] == "valid").all()


def test_cli_round_trip_and_no_key_on_disk(fake_server, tmp_path, monkeypatch):
    key = "sk-test-SECRETSECRETSECRET1234"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    runner = CliRunner()
    common = ["--model", f"openai:fake@{fake_server.url}", "--agents", "1", "--scenario", "emergency_response",
              "--group", "gender_identity", "--out", str(tmp_path)]
    for stage in (1, 2):
        r = runner.invoke(app, ["batch", "export", *common])
        assert r.exit_code == 0, r.output
        req = tmp_path / "batch" / f"requests-{stage}.jsonl"
        res = play_batch(req, fake_server.url, tmp_path / f"results-{stage}.jsonl")
        r = runner.invoke(app, ["batch", "import", str(res), "--out", str(tmp_path)])
        assert r.exit_code == 0 and " 3 " in r.output, r.output
    r = runner.invoke(app, ["batch", "status", *common])
    assert "complete" in r.output, r.output
    r = runner.invoke(app, ["run", *common])
    assert r.exit_code == 0 and "model_calls: 0" in r.output, r.output
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f


def test_submit_and_poll_through_the_openai_sdk(fake_server, tmp_path):
    config = cfg(fake_server.url)
    for stage in (1, 2):
        export(config, tmp_path, ["simulation"])
        made = submit(config, tmp_path)
        assert [m[0] for m in made] == [f"requests-{stage}.jsonl"]
        report = poll(config, tmp_path)
        assert report[-1][1] == "completed" and report[-1][2].stored == 6
    assert status(config, tmp_path, ["simulation"]).needed == 0
    assert run_experiment(config, tmp_path).manifest["model_calls"] == 0


def test_embedded_cannot_be_batched(tmp_path):
    r = CliRunner().invoke(app, ["batch", "export", "--out", str(tmp_path), "--agents", "1"])
    assert r.exit_code == 2 and "cannot be batched" in r.output


@pytest.mark.slow
def test_round_trip_on_llama_cpp_server(llama_server, tmp_path):
    """The embedded model served by llama_cpp.server: batch answers equal live ones."""
    config = build_config(dict(models=[{"spec": f"openai:smollm2@{llama_server}", "client": "http",
                                        "json_mode": "json_object_schema"}],
                               scenarios=["emergency_response"], groups=["gender_identity"], agents=1,
                               decision={"temperature": 0.0, "max_tokens": 120},
                               persona={"temperature": 0.0, "max_tokens": 200}))
    stages = round_trip(config, llama_server, tmp_path / "batch")
    done = run_experiment(config, tmp_path / "batch")
    assert done.manifest["model_calls"] == 0
    # Stage 1: the three personas; stage 2: a decision for each persona that came back valid.
    assert stages[0] == 3 and sum(stages[1:]) == int((done.personas["status"] == "valid").sum())
    live = run_experiment(config, tmp_path / "live")
    pd.testing.assert_frame_equal(done.decisions[COLS], live.decisions[COLS])


def test_population_run_with_twins_round_trip_equals_live_run(fake_server, tmp_path):
    """issue 11: a population run goes through batch stages and completes from the cache exactly as a
    live run."""
    from louder.simulation.population_run import population_task
    from louder.task import execute

    config = cfg(fake_server.url, population="us_adults", agents=4, twins=True, twin_groups=["gender_identity"])
    stages = round_trip(config, fake_server.url, tmp_path / "batch")
    assert stages == [4, 4, 8, 8]  # personas, decisions, twin names, twin decisions
    done = execute(population_task(config), config, tmp_path / "batch")
    assert done.manifest["model_calls"] == 0
    live = execute(population_task(config), config, tmp_path / "live")
    for name in ("decisions.parquet", "twins.parquet"):
        cols = ["agent_id", "attribute", "name", "persona", "decision", "status"]
        pd.testing.assert_frame_equal(done.tables[name][cols], live.tables[name][cols])


def test_the_beliefs_probe_goes_through_a_batch(fake_server, tmp_path):
    """The beliefs kind exports its plan, and after import `louder probe beliefs` runs from the cache."""
    import louder

    config = cfg(fake_server.url, belief_trials=2)
    stage, files, n = export(config, tmp_path, ["beliefs"])
    assert (stage, n) == (1, 3 * 2)
    for f in files:
        import_file(play_batch(f, fake_server.url, tmp_path / f"out-{f.name}"), tmp_path, config)
    run = louder.run(config, out=tmp_path, kind="beliefs", progress=False)
    assert run.manifest["model_calls"] == 0 and set(run.beliefs["status"]) == {"valid"}
