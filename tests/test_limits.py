"""The global cap on calls in flight, cases running side by side, and per-minute budgets."""

import time

import pytest
from fake_openai import FakeOpenAIServer

from louder.config import build_config
from louder.llm.limits import RateLimiter, TokenBucket
from louder.simulation import run_experiment


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_request_bucket_paces_to_the_budget():
    clock = FakeClock()
    bucket = TokenBucket(60, clock=clock, sleep=clock.sleep)  # 1 per second, burst of 1
    for _ in range(30):
        bucket.take(1)
    assert clock.t == pytest.approx(29, abs=0.01)


def test_token_bucket_lets_a_large_request_through_and_pays_later():
    clock = FakeClock()
    limiter = RateLimiter(None, 6000, clock=clock, sleep=clock.sleep)  # 100 tokens a second
    limiter.acquire(1000)  # bigger than the bucket: goes when full, leaves a deficit
    assert clock.t == 0
    limiter.acquire(50)  # waits for the 900-token deficit and its own 50 to refill
    assert clock.t == pytest.approx(9.5, abs=0.01)


@pytest.fixture
def two_slow_servers():
    servers = [FakeOpenAIServer(), FakeOpenAIServer()]
    for s in servers:
        s.delay_s = 0.05
        s.start()
    yield servers
    for s in servers:
        s.stop()


def test_in_flight_cap_is_global_across_models_and_cases(two_slow_servers, tmp_path):
    a, b = two_slow_servers
    cfg = build_config(dict(models=[f"openai:fake@{a.url}", f"openai:fake@{b.url}"],
                            scenarios=["emergency_response", "career_path_selection"],
                            groups=["gender_identity"], agents=2, concurrency=5))
    run_experiment(cfg, tmp_path)
    # 4 cases of 6 agents per model run side by side, yet never more than 5 calls at once in all.
    assert a.max_active + b.max_active >= 5
    assert a.max_active <= 5 and b.max_active <= 5
    assert len(a.requests) == len(b.requests) == 24


def test_small_cases_fill_the_slots(two_slow_servers, tmp_path):
    a, _ = two_slow_servers
    cfg = build_config(dict(models=[f"openai:fake@{a.url}"], agents=1, concurrency=16,
                            groups=["gender_identity"]))  # 4 cases of 3 agents
    run_experiment(cfg, tmp_path)
    assert a.max_active > 3  # more than one case's agents were in flight together


def test_requests_per_minute_budget_holds(fake_server, tmp_path):
    cfg = build_config(dict(models=[{"spec": f"openai:fake@{fake_server.url}", "requests_per_minute": 600}],
                            scenarios=["emergency_response"], groups=["gender_identity"], agents=5,
                            concurrency=8))
    start = time.perf_counter()
    res = run_experiment(cfg, tmp_path)
    elapsed = time.perf_counter() - start
    # 30 calls at 10 a second with a burst of 10: at least 2 s.
    assert elapsed >= 1.9 and res.manifest["rate_limit_wait_s"] > 0


def test_rate_limit_wraps_any_backend_and_keeps_cache_keys():
    """The budget is a wrapper: the fake backend (no HTTP at all) obeys it, and the wrapped backend
    answers under the same identity, so a cached run does not miss when a budget is added."""
    from louder.llm.base import Request
    from louder.llm.cache import cache_key
    from louder.llm.limits import RateLimited, rate_limited
    from louder.llm.spec import build_backend

    class Clock:
        t = 0.0

        def __call__(self):
            return self.t

        def sleep(self, s):
            self.t += s

    clock = Clock()
    plain = build_backend("fake:seed=1")
    assert rate_limited(plain, None, None) is plain
    wrapped = RateLimited(plain, RateLimiter(60, None, clock=clock, sleep=clock.sleep))  # one a second
    req = Request(messages=(("user", "hello"),), temperature=0.0, max_tokens=8, seed=1)
    assert cache_key(wrapped.identity(), req) == cache_key(plain.identity(), req)
    for _ in range(4):
        assert wrapped.generate(req).text == plain.generate(req).text
    assert wrapped.waited_s == pytest.approx(3.0)  # the first goes at once, then one a second
    assert wrapped.bias == plain.bias  # attributes of the backend pass through


def test_errors_are_redacted_whatever_the_backend(tmp_path, monkeypatch):
    """Key redaction sits at the client, in front of every backend: an error text echoing the key is
    stored redacted even from a backend that does not redact."""
    from louder.llm.base import Reply, Request
    from louder.llm.cache import ResponseCache
    from louder.llm.client import Client

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-verysecretkey123")

    class Leaky:
        def identity(self):
            return {"backend": "leaky"}

        def generate(self, request):
            return Reply(text="", error="401 bad key sk-test-verysecretkey123")

    cache = ResponseCache(tmp_path / "c.sqlite")
    reply = Client(Leaky(), cache).call(Request(messages=(("user", "x"),), temperature=0.0, max_tokens=4, seed=0))
    assert "verysecret" not in reply.error
    assert "verysecret" not in (tmp_path / "c.sqlite").read_bytes().decode("latin-1")
