"""Preflight, json_mode negotiation, error causes and failing fast, against real servers on 127.0.0.1."""
# Bounds on wall time ("in seconds") are 60 s: they tell failing fast from retrying for minutes, and hold
# on a loaded machine where the suite runs on every core.

import time
from types import SimpleNamespace

import pytest
from fake_openai import FakeOpenAIServer
from typer.testing import CliRunner

from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError
from louder.llm.cache import ResponseCache
from louder.llm.errors import classify_failure
from louder.simulation import run_experiment

SMALL = dict(scenarios=["emergency_response"], groups=["gender_identity"], agents=1)


@pytest.fixture
def server(request):
    s = FakeOpenAIServer(**getattr(request, "param", {}))
    s.start()
    yield s
    s.stop()


def cli(args, env=None):
    """``louder ARGS`` in this process (a subprocess would add a Python start-up and louder's imports, ~3 s,
    to each of these checks): the exit code, stdout and stderr apart, and the seconds it took. ``env``:
    variables set (a value None: unset) for the call."""
    start = time.perf_counter()
    r = CliRunner().invoke(app, args, env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception  # no traceback
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr), time.perf_counter() - start


@pytest.mark.parametrize("status, body, cause, transient", [
    (400, "bad", "http_400_invalid_request", False),
    (401, "", "http_401_unauthorized", False),
    (404, "", "http_404_not_found", False),
    (422, "", "http_422_validation", False),
    (429, "Rate limit", "http_429_rate_limited", True),
    (429, '{"code": "insufficient_quota"}', "http_429_quota", False),
    (500, '{"error": {"message": "server error"}}', "http_5xx", True),
    (503, "", "http_5xx", True),
    (500, "1 validation error: Input should be 'text' or 'json_object'", "http_500_validation", False),
    (408, "", "http_408_timeout", True),
])
def test_http_causes(status, body, cause, transient):
    f = classify_failure(status, body)
    assert f.cause == cause and f.transient is transient


def test_exception_causes():
    import httpx

    assert classify_failure(None, "", httpx.ReadTimeout("slow")).cause == "timeout"
    assert classify_failure(None, "", httpx.ConnectError("refused")) == classify_failure(None, "", ConnectionError())
    assert classify_failure(None, "", httpx.ConnectError("x")).transient
    assert classify_failure(None, "", ValueError("x")).cause == "other"


@pytest.mark.parametrize("server", [dict(reject_modes={"json_schema"})], indirect=True)
def test_auto_picks_the_best_accepted_mode_and_caches_it(server, tmp_path):
    res = run_experiment(build_config(dict(models=[f"openai:fake@{server.url}"], **SMALL)), tmp_path)
    assert (res.decisions["status"] == "valid").all()
    pf = res.manifest["preflight"][f"openai:fake@{server.url}"]["model"]
    assert pf["json_mode"] == "json_object_schema" and pf["json_mode_source"] == "auto"
    assert pf["capabilities"]["json_schema"] == "no" and pf["model_listed"] is True
    # Rejected once, not retried: one request per mode tried.
    assert len(server.preflight_requests) == 2
    assert {r["body"]["response_format"]["type"] for r in server.requests} == {"json_object"}
    assert all("schema" in r["body"]["response_format"] for r in server.requests)
    assert "json_object_schema" in (tmp_path / "preflight.json").read_text()
    again = run_experiment(build_config(dict(models=[f"openai:fake@{server.url}"], **SMALL)), tmp_path)
    assert len(server.preflight_requests) == 2 and again.manifest["model_calls"] == 0


@pytest.mark.parametrize("server", [dict(reject_modes={"json_schema"}, validation_500=True)], indirect=True)
def test_validation_500_is_not_retried_and_explicit_mode_is_obeyed(server, tmp_path):
    c = build_config(dict(models=[{"spec": f"openai:fake@{server.url}", "json_mode": "json_schema"}], **SMALL))
    start = time.perf_counter()
    with pytest.raises(LouderError, match=r"rejects json_mode: json_schema \(http_500_validation: Input should be"):
        run_experiment(c, tmp_path)
    assert time.perf_counter() - start < 5 and len(server.preflight_requests) == 1 and not server.requests
    c = build_config(dict(models=[{"spec": f"openai:fake@{server.url}", "json_mode": "json_object"}], **SMALL))
    run_experiment(c, tmp_path)
    assert {r["body"]["response_format"]["type"] for r in server.requests} == {"json_object"}
    assert all("schema" not in r["body"]["response_format"] for r in server.requests)


@pytest.mark.parametrize("server", [dict(reject_logprobs=True)], indirect=True)
def test_score_mode_without_logprobs_fails_at_start(server, tmp_path):
    c = build_config(dict(models=[f"openai:fake@{server.url}"], decision_mode="score", **SMALL))
    with pytest.raises(LouderError, match="decision_mode: score needs log-probs") as e:
        run_experiment(c, tmp_path)
    assert "\n" not in str(e.value) and not server.requests


@pytest.mark.parametrize("server", [dict(models=("smollm2",), require_model=True)], indirect=True)
def test_wrong_model_name_is_named_with_a_suggestion(server, tmp_path):
    r, seconds = cli(["run", "--model", f"openai:smol@{server.url}", "--agents", "1", "-s", "emergency_response",
                      "-g", "gender_identity", "--out", str(tmp_path)])
    assert r.returncode != 0 and seconds < 60 and not server.requests
    assert "model 'smol' is not served" in r.stderr and "did you mean 'smollm2'" in r.stderr
    assert "Traceback" not in r.stderr


KEY = "sk-louder-FAKE-0123456789abcdefSECRET"


@pytest.mark.parametrize("server", [dict(api_key="sk-the-right-key-0000000000")], indirect=True)
def test_401_fails_before_any_agent_in_one_line(server, tmp_path):
    r, seconds = cli(["run", "--model", f"openai:fake@{server.url}", "--agents", "1", "-s", "emergency_response",
                      "-g", "gender_identity", "--out", str(tmp_path)], env={"OPENAI_API_KEY": KEY})
    assert r.returncode != 0 and seconds < 60 and not server.requests
    assert "http_401_unauthorized" in r.stderr and "OPENAI_API_KEY" in r.stderr
    assert KEY not in r.stderr + r.stdout and KEY[3:20] not in r.stderr + r.stdout
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) <= 2  # one line (rich may wrap it)


def test_missing_key_for_hosted_openai_is_one_line(tmp_path):
    r, seconds = cli(["run", "--model", "openai:gpt-4o-mini", "--agents", "1", "--out", str(tmp_path)],
                     env={"OPENAI_API_KEY": None})
    assert r.returncode != 0 and "OPENAI_API_KEY" in r.stderr and seconds < 60


@pytest.mark.parametrize("server", [dict(reject_modes={"json_schema", "json_object_schema", "json_object", "off"})],
                         indirect=True)
def test_server_rejecting_every_request_stops_in_seconds(server, tmp_path):
    r, seconds = cli(["run", "--model", f"openai:fake@{server.url}", "--agents", "1", "-s", "emergency_response",
                      "-g", "gender_identity", "--out", str(tmp_path)])
    assert r.returncode != 0 and seconds < 60, r.stderr
    assert "rejects every JSON mode" in r.stderr and "http_400_invalid_request" in r.stderr
    assert not server.requests and len(server.preflight_requests) == 4


def test_first_calls_failing_alike_stop_the_run_and_a_rerun_resumes(server, tmp_path):
    broken = {"on": True}

    def behaviour(n, prompt, body):
        if broken["on"]:  # every call of the run is rejected (the preflight's probes pass)
            return 400, {"error": {"message": "context length exceeded", "type": "invalid_request_error"}}, {}
        return None

    server.behaviour = behaviour
    args = ["run", "--model", f"openai:fake@{server.url}", "--agents", "10", "-s", "emergency_response",
            "-g", "gender_identity", "--concurrency", "4", "--out", str(tmp_path)]
    r, seconds = cli(args)
    assert r.returncode != 0 and seconds < 30, r.stderr
    assert "stopped: the first 3 calls" in r.stderr and "http_400_invalid_request" in r.stderr
    assert "context length exceeded" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "decisions.parquet").exists()
    assert len(server.requests) < 3 + 4  # the window plus the calls already in flight
    cache = ResponseCache(tmp_path / "cache.sqlite")
    n_cached = len(cache)
    errors = cache._db.execute("SELECT COUNT(*) FROM replies WHERE is_error = 1").fetchone()[0]
    cache.close()
    assert errors == 0  # the rejected calls are not cached: the re-run asks again
    broken["on"] = False
    n_before = len(server.requests)
    r, _ = cli(args)
    assert r.returncode == 0, r.stderr
    assert len(server.requests) - n_before == 60 - n_cached  # finished answers were not asked again


@pytest.mark.parametrize("server", [dict(reject_modes={"json_schema"}, reject_logprobs=True)], indirect=True)
def test_check_prints_one_parseable_row_per_capability(server):
    r, _ = cli(["check", "--model", f"openai:fake@{server.url}"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == ["model", "capability", "status", "detail"]
    rows = {cols[1]: cols[2] for cols in (ln.split("\t") for ln in lines[1:] if "\t" in ln)}
    assert rows == {"reachable": "yes", "model_name": "yes", "json_schema": "no", "json_object_schema": "yes",
                    "json_object": "yes", "off": "yes", "logprobs": "no"}
    assert lines[-1] == f"config: models: [{{spec: 'openai:fake@{server.url}', json_mode: json_object_schema}}]"
    assert not server.requests


def test_check_unreachable_is_one_line_in_seconds():
    """Fails at once instead of retrying for minutes (60 s: a bound that holds on a loaded machine)."""
    from conftest import free_port

    r, seconds = cli(["check", "--model", f"openai:x@http://127.0.0.1:{free_port()}/v1"])
    assert r.returncode != 0 and seconds < 60 and "cannot reach" in r.stderr and "connection" in r.stderr


@pytest.mark.slow
def test_llama_cpp_server_check(llama_server):
    """`louder check` against a real llama_cpp.server finds what the fake server's ``validation_500``
    option models (json_schema refused with a 500 validation body) and picks json_object_schema. A run
    that negotiates its mode on this server by itself (no config) is tests/test_e2e_embedded.py's
    test_openai_path_against_real_llama_cpp_server."""
    r, _ = cli(["check", "--model", f"openai:smol@{llama_server}"])
    assert r.returncode == 0, r.stderr
    rows = {cols[1]: (cols[2], cols[3]) for cols in (ln.split("\t") for ln in r.stdout.splitlines()[1:]) if
            len(cols) == 4}
    assert rows["json_schema"][0] == "no" and rows["json_schema"][1].startswith("http_500_validation")
    assert rows["json_object_schema"][0] == "yes" and rows["logprobs"][0] == "yes"
    assert rows["model_name"][0] == "no" and "smollm2" in rows["model_name"][1]
    assert "json_mode: json_object_schema" in r.stdout.splitlines()[-1]
