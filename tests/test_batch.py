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
    """The embedded model served by llama_cpp.server: batch answers (the real server's response bodies, read
    back by import) equal live ones. The names signal without personas makes the run one stage of two
    decision calls: the stages a persona run goes through are test_round_trip_equals_live_run's."""
    config = build_config({"models": [{"spec": f"openai:smollm2@{llama_server}", "client": "http",
                                       "json_mode": "json_object_schema"}],
                           "decision": {"temperature": 0.0, "max_tokens": 120},
                           "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_female_male"],
                                          "conditions": ["no_persona"], "signal": ["names"], "agents": 1}})
    stages = round_trip(config, llama_server, tmp_path / "batch")
    done = run_experiment(config, tmp_path / "batch")
    assert stages == [2] and done.manifest["model_calls"] == 0
    assert (done.decisions["attempts"] > 0).all() and (done.decisions["status"] != "error").all()
    live = run_experiment(config, tmp_path / "live")
    assert live.manifest["model_calls"] == 2
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


def _ids(path: Path) -> list[str]:
    return [json.loads(x)["custom_id"] for x in path.read_text().splitlines()]


def test_a_line_cut_in_half_is_exported_again(fake_server, tmp_path):
    """issue 23.6: a result file with a line cut in half leaves a request that got no answer; status
    names `--unanswered` (not "awaiting results" forever) and export writes exactly that request."""
    config = cfg(fake_server.url)
    runner = CliRunner()
    common = ["--model", f"openai:fake@{fake_server.url}", "--agents", "2", "--scenario", "emergency_response",
              "--group", "gender_identity", "--out", str(tmp_path)]
    for stage in (1, 2):
        _, files, _ = export(config, tmp_path, ["simulation"])
        res = play_batch(files[0], fake_server.url, tmp_path / f"results-{stage}.jsonl")
        lines = res.read_text().splitlines()
        if stage == 2:  # the decisions' results come back with the last line cut in half
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
            res.write_text("\n".join(lines) + "\n")
        s = import_file(res, tmp_path, config)
        assert (s.stored, s.malformed) == ((6, 0) if stage == 1 else (5, 1))
    cut = _ids(tmp_path / "batch" / "requests-2.jsonl")[-1]
    st = status(config, tmp_path, ["simulation"])
    assert (st.needed, st.new, st.unanswered, st.exported) == (1, 0, 1, 0)
    assert "--unanswered" in st.next_step and "requests-2.jsonl" in st.next_step
    r = runner.invoke(app, ["batch", "status", *common])
    assert "louder batch export --unanswered" in r.output and "awaiting results: 0" in r.output, r.output
    r = runner.invoke(app, ["batch", "export", *common])  # a plain export writes nothing, and says why
    assert r.exit_code == 0 and "--unanswered" in r.output and not (tmp_path / "batch" / "requests-3.jsonl").exists()
    r = runner.invoke(app, ["batch", "export", *common, "--unanswered"])
    assert r.exit_code == 0 and "stage 3: 1 requests" in r.output, r.output
    assert _ids(tmp_path / "batch" / "requests-3.jsonl") == [cut]
    st = status(config, tmp_path, ["simulation"])  # stage 3 is out: awaited, never exported twice
    assert (st.exported, st.unanswered) == (1, 0) and "import the results of requests-3.jsonl" in st.next_step
    assert export(config, tmp_path, ["simulation"], unanswered=True)[1] == []
    import_file(play_batch(tmp_path / "batch" / "requests-3.jsonl", fake_server.url, tmp_path / "r3.jsonl"),
                tmp_path, config)
    assert "complete" in status(config, tmp_path, ["simulation"]).next_step
    done = run_experiment(config, tmp_path)
    assert done.manifest["model_calls"] == 0 and (done.decisions["status"] == "valid").all()


def test_a_stage_with_new_and_unanswered_requests_exports_both_when_asked(fake_server, tmp_path):
    """A persona cut from stage 1's results: stage 2 holds the decisions of the five answered
    personas, and with `--unanswered` the lost persona too; without it, only the decisions."""
    config = cfg(fake_server.url)
    for flag in (False, True):
        run = tmp_path / str(flag)
        _, files, _ = export(config, run, ["simulation"])
        res = play_batch(files[0], fake_server.url, run / "r1.jsonl")
        lines = res.read_text().splitlines()
        res.write_text("\n".join(lines[:-1] + [lines[-1][:40]]) + "\n")
        import_file(res, run, config)
        st = status(config, run, ["simulation"])
        assert (st.new, st.unanswered) == (5, 1) and "--unanswered" in st.next_step
        first, cut = _ids(files[0]), _ids(files[0])[-1]
        stage, files, n = export(config, run, ["simulation"], unanswered=flag)
        second = _ids(files[0])
        assert (stage, n) == (2, 6 if flag else 5) and (cut in second) == flag
        assert len(set(second) - set(first)) == 5  # the decisions of the answered personas


def test_retry_errors_exports_exactly_the_error_answers(tmp_path):
    """issue 23.6: lines that came back as 429/500 errors are re-batched by `export --retry-errors`,
    exactly those, until none is left; the run then completes from the cache like a live run."""
    from fault_server import FaultServer

    server = FaultServer({"429": 0.2, "500": 0.2}, seed=2)
    server.start()
    try:
        config = cfg(server.url, agents=10)
        from louder.llm.cache import ResponseCache

        def error_keys() -> set[str]:
            cache = ResponseCache(tmp_path / "cache.sqlite")
            try:
                flags = cache.error_flags([json.loads(x)["custom_id"] for x in
                                           (tmp_path / "batch" / "index.jsonl").read_text().splitlines()])
            finally:
                cache.close()
            return {k for k, e in flags.items() if e}

        asked, retried = 0, 0
        for _ in range(40):  # each retry stage fails again about 40 % of the time: allow a long tail
            st = status(config, tmp_path, ["simulation"])
            if "complete" in st.next_step and st.errors == 0:
                break
            if st.new:
                stage, files, n = export(config, tmp_path, ["simulation"])
                assert not (set(_ids(files[0])) & error_keys())  # a plain export never re-asks an error
            else:
                assert "--retry-errors" in st.next_step and st.errors == len(error_keys()) > 0
                errors = error_keys()
                stage, files, n = export(config, tmp_path, ["simulation"], retry_errors=True)
                assert set(_ids(files[0])) == errors and n == len(errors)  # exactly the error answers
                assert export(config, tmp_path, ["simulation"], retry_errors=True)[1] == []  # out: not twice
                retried += 1
            asked += n
            s = import_file(play_batch(files[0], server.url, tmp_path / f"r{stage}.jsonl"), tmp_path, config)
            assert s.stored == n
        else:
            raise AssertionError("batch stages did not finish")
        assert retried >= 1 and server.injected["429"] + server.injected["500"] > 0
        done = run_experiment(config, tmp_path)
        assert done.manifest["model_calls"] == 0 and (done.decisions["status"] == "valid").all()
        assert asked == 60 + server.injected["429"] + server.injected["500"]  # every error asked once more
    finally:
        server.stop()


def test_cli_export_retry_errors(fake_server, tmp_path):
    config = cfg(fake_server.url)
    _, files, _ = export(config, tmp_path, ["simulation"])
    lines = play_batch(files[0], fake_server.url, tmp_path / "r1.jsonl").read_text().splitlines()
    bad = json.loads(lines[0]) | {"response": {"status_code": 500, "body": {"error": {"message": "boom"}}}}
    (tmp_path / "r1.jsonl").write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    assert import_file(tmp_path / "r1.jsonl", tmp_path, config).errors == 1
    common = ["--model", f"openai:fake@{fake_server.url}", "--agents", "2", "--scenario", "emergency_response",
              "--group", "gender_identity", "--out", str(tmp_path)]
    r = CliRunner().invoke(app, ["batch", "export", *common, "--retry-errors"])
    assert r.exit_code == 0 and "stage 2: 6 requests" in r.output, r.output  # 5 decisions + the failed persona
    assert json.loads(lines[0])["custom_id"] in _ids(tmp_path / "batch" / "requests-2.jsonl")


def test_poll_of_an_expired_batch_lets_its_requests_be_exported_again(fake_server, tmp_path):
    config = cfg(fake_server.url)
    export(config, tmp_path, ["simulation"])
    submit(config, tmp_path)
    fake_server.batch_outcome = "expired"
    report = poll(config, tmp_path)
    assert report[-1][1] == "expired" and report[-1][2] is None
    st = status(config, tmp_path, ["simulation"])
    assert (st.exported, st.unanswered) == (0, 6) and "--unanswered" in st.next_step
    stage, files, n = export(config, tmp_path, ["simulation"], unanswered=True)
    assert (stage, n) == (2, 6)
    assert sorted(_ids(files[0])) == sorted(_ids(tmp_path / "batch" / "requests-1.jsonl"))


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
