"""The lean httpx client (``client: http``) gives the same rows as LangChain's, and survives faults."""

import math

import pandas as pd
import pytest
from fault_server import FaultServer
from test_faults import ALL_FAULTS

from louder.config import build_config
from louder.simulation import run_experiment


def cfg(url, client, **kw):
    base = dict(models=[{"spec": f"openai:fake@{url}", "client": client, "max_attempts": 3, "timeout_s": 0.6}],
                scenarios=["emergency_response"], groups=["gender_identity"], agents=4, concurrency=8)
    base.update(kw)
    return build_config(base)


def test_same_rows_as_langchain_and_shared_cache(fake_server, tmp_path):
    a = run_experiment(cfg(fake_server.url, "langchain"), tmp_path / "lc").decisions
    b = run_experiment(cfg(fake_server.url, "http"), tmp_path / "http").decisions
    cols = ["attribute", "replicate", "name", "decision", "rationale", "status"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    bodies = [r["body"] for r in fake_server.requests]
    assert bodies[0]["response_format"]["type"] == "json_schema"
    # Same identity, same cache: switching clients re-uses every answer.
    again = run_experiment(cfg(fake_server.url, "http"), tmp_path / "lc")
    assert again.manifest["model_calls"] == 0


def test_score_mode_over_http(fake_server, tmp_path):
    d = run_experiment(cfg(fake_server.url, "http", decision_mode="score"), tmp_path).decisions
    p_top = math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.0))
    assert (d["status"] == "valid").all()
    assert d["p_target"].map(lambda p: min(abs(p - p_top), abs(p - (1 - p_top)))).max() < 1e-9


def test_faults_over_http(tmp_path):
    server = FaultServer(ALL_FAULTS, seed=5, hang_s=1.0)
    server.start()
    try:
        d = run_experiment(cfg(server.url, "http", agents=40, groups=["gender_identity", "political_ideology"],
                               concurrency=32), tmp_path).decisions
    finally:
        server.stop()
    assert len(d) == 320 and d["status"].isin(["valid", "invalid", "refused", "error"]).all()
    assert (d["status"] == "valid").mean() > 0.6
    bad = d[d["status"] == "error"]
    assert bad["raw_response"].str.contains("transport failure|persona error").all()
    assert d["attempts"].max() > 1


def test_http_client_needs_openai_spec(tmp_path):
    from louder.errors import LouderError

    c = build_config(dict(models=[{"spec": "ollama:x@http://127.0.0.1:9", "client": "http"}], agents=1,
                          scenarios=["emergency_response"], groups=["gender_identity"]))
    with pytest.raises(LouderError, match="client: http"):
        run_experiment(c, tmp_path)


def test_clients_share_one_tls_context_that_trusts_what_httpx_would():
    """Each model's client (and each preflight request) used to build a TLS context of its own, loading
    the CA bundle (~26 ms): now one per process, built as httpx builds its default — SSL_CERT_FILE when set."""
    import ssl

    import httpx

    from louder.llm import tls
    from louder.llm.http import HTTPChatModel

    a, b = HTTPChatModel("m", "http://127.0.0.1:1/v1"), HTTPChatModel("m", "http://127.0.0.1:2/v1")
    assert a._http._transport._pool._ssl_context is tls.context() is b._http._transport._pool._ssl_context
    assert tls.context().verify_mode == ssl.CERT_REQUIRED and tls.context().check_hostname
    default = httpx.create_ssl_context()
    assert tls.context().cert_store_stats() == default.cert_store_stats() and default.cert_store_stats()["x509_ca"] > 0
