"""Several endpoints for one model: spread by calls in flight, rest a failing replica, lose nothing."""

from __future__ import annotations

import threading
import time

from fake_openai import FakeOpenAIServer

from louder.config import build_config
from louder.llm.base import Reply, Request
from louder.llm.pool import EndpointPool
from louder.llm.spec import build_backend
from louder.simulation import run_experiment


class Stub:
    json_mode = "json_schema"
    model = "m"

    def __init__(self, url, fail=False):
        self.base_url, self.fail, self.calls = url, fail, 0

    def identity(self):
        return {"backend": "openai", "model": "m", "base_url": self.base_url}

    def generate(self, request):
        self.calls += 1
        if self.fail:
            return Reply(error="connection: transport failure after retries: down", error_cause="connection")
        return Reply(text=self.base_url)


def test_failing_replica_rests_and_others_carry_on():
    now = [0.0]
    a, b = Stub("http://a", fail=True), Stub("http://b")
    pool = EndpointPool([a, b], max_attempts=3, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    req = Request(prompt="x")
    assert pool.generate(req).text == "http://b"  # a failed once (ties go to a first), then b answered
    assert (a.calls, b.calls) == (1, 1)
    for _ in range(5):  # a rests: every call goes straight to b
        assert pool.generate(req).text == "http://b"
    assert a.calls == 1
    now[0] += 10  # rest over: a is tried again, fails, rests twice as long
    pool.generate(req)
    assert a.calls == 2 and pool.replicas[0].rest_until == now[0] + 1.0


def test_all_replicas_failing_is_an_error_after_max_attempts():
    now = [0.0]
    pool = EndpointPool([Stub("http://a", True), Stub("http://b", True)], max_attempts=4,
                        clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    r = pool.generate(Request(prompt="x"))
    assert r.error and r.attempts == 4


def test_identity_is_the_first_url():
    one = build_backend("openai:m@http://127.0.0.1:1/v1", None)
    two = build_backend("openai:m@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1", None)
    assert one.identity() == two.identity()


def test_two_endpoints_one_killed_mid_run(tmp_path):
    a, b = FakeOpenAIServer(), FakeOpenAIServer()
    for s in (a, b):
        s.delay_s = 0.01
        s.start()
    config = build_config(dict(models=[{"spec": f"openai:fake@{a.url},{b.url}", "timeout_s": 2, "max_attempts": 6}],
                               scenarios=["emergency_response"], groups=["gender_identity"], agents=10,
                               concurrency=8))

    def kill_b():
        while len(b.requests) < 10:
            time.sleep(0.005)
        b.stop()

    killer = threading.Thread(target=kill_b)
    killer.start()
    try:
        result = run_experiment(config, tmp_path)
    finally:
        killer.join()
        a.stop()
    d = result.decisions
    assert len(d) == 30 and not d.duplicated(["attribute", "replicate"]).any()
    assert (d["status"] == "valid").all()  # every call b dropped was answered by a
    assert len(b.requests) >= 10 and len(a.requests) > 0
    assert result.manifest["model_calls"] == 60
