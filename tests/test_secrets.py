"""API keys come from the environment and appear in no output file, cache entry, manifest or log."""

import json
import os
import subprocess
import sys

KEY = "sk-louder-FAKE-0123456789abcdefSECRET"


def test_key_is_used_but_never_written(fake_server, tmp_path):
    def behaviour(n, prompt, body):
        if n % 5 == 0:  # like a real API rejecting a key: the error echoes part of it back
            return 401, {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}, {}
        return None

    fake_server.behaviour = behaviour
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    cli = [sys.executable, "-m", "louder.cli"]
    logs = []
    for args in (["run", "--agents", "3", "-s", "emergency_response", "-g", "gender_identity"],
                 ["probe", "explicit", "--trials", "6", "-s", "emergency_response", "-g", "gender_identity"],
                 ["run", "--agents", "3", "-s", "emergency_response", "-g", "gender_identity", "--dry-run"]):
        r = subprocess.run(cli + args + ["--model", f"openai:fake@{fake_server.url}", "--out", str(out)],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        logs += [r.stdout, r.stderr]
    for args in (["analyze", str(out), "-B", "200"], ["report", str(out), "-B", "200"]):
        r = subprocess.run(cli + args, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        logs += [r.stdout, r.stderr]

    # The key reached the server (so it was really in use) ...
    assert any({k.lower(): v for k, v in req["headers"].items()}.get("authorization") == f"Bearer {KEY}" for req in fake_server.requests)
    # ... and some rows failed with the key in the server's error message.
    d = __import__("pandas").read_parquet(out / "decisions.parquet")
    assert (d["status"] == "error").any() and d["raw_response"].str.contains("redacted").any()
    # Nowhere in what louder wrote or printed. Binary files (SQLite, Parquet) are searched as bytes.
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"decisions.parquet", "probes.parquet", "manifest.json", "cache.sqlite", "index.html"} <= {
        p.name for p in files}
    for p in files:
        data = p.read_bytes()
        assert KEY.encode() not in data and KEY[3:20].encode() not in data, p
    for text in logs:
        assert KEY not in text and KEY[3:20] not in text
    assert "OPENAI_API_KEY" not in json.dumps(json.loads((out / "manifest.json").read_text()))
