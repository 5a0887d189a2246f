"""Cache keys and the cache itself."""

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from louder.llm.base import Reply, Request
from louder.llm.cache import ResponseCache, cache_key
from louder.llm.client import Client

ID = {"backend": "embedded", "model": "m.gguf", "sha256": "abc"}


def req(**kw):
    base = dict(messages=(("user", "hello"),), temperature=0.2, max_tokens=10, seed=1, replicate="r0")
    base.update(kw)
    return Request(**base)


def test_key_depends_on_everything_that_shapes_the_answer():
    k = cache_key(ID, req())
    assert k == cache_key(ID, req())
    for change in [dict(replicate="r1"), dict(seed=2), dict(temperature=0.7), dict(max_tokens=11),
                   dict(messages=(("user", "hello!"),))]:
        assert cache_key(ID, req(**change)) != k, change
    assert cache_key({**ID, "sha256": "def"}, req()) != k
    assert cache_key(ID, Request(prompt="hello", replicate="r0", seed=1, temperature=0.2, max_tokens=10)) != k


def test_roundtrip_and_errors(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    c.put("a", Reply(text="x", input_tokens=3))
    c.put("b", Reply(error="boom"))
    got = c.get("a")
    assert got.text == "x" and got.input_tokens == 3 and got.cached
    assert c.get("b").error == "boom"
    assert c.get("b", retry_errors=True) is None  # --retry-errors asks again
    assert c.get("missing") is None and len(c) == 2
    c.close()
    assert ResponseCache(tmp_path / "c.sqlite").get("a").text == "x"  # durable


class Counting:
    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    def identity(self):
        return ID

    def generate(self, request):
        with self.lock:
            self.calls += 1
        return Reply(text=f"{request.replicate}")

    def score(self, *a):
        raise AssertionError


def test_client_counts_calls_and_hits(tmp_path):
    backend = Counting()
    client = Client(backend, ResponseCache(tmp_path / "c.sqlite"), concurrency=4)
    out = client.map(client.call, [req(replicate=f"r{i}") for i in range(20)])
    assert [r.text for r in out] == [f"r{i}" for i in range(20)]  # input order kept
    assert client.model_calls == 20 and client.cache_hits == 0
    client.map(client.call, [req(replicate=f"r{i}") for i in range(20)])
    assert backend.calls == 20 and client.cache_hits == 20


def test_map_streams_the_first_call_comes_after_the_first_items(tmp_path):
    """Issue 36.8: items are drawn from the iterable as the pool has room, so a long plan makes its
    first call after a handful of items, not after all of them."""
    drawn = []
    first: dict = {}

    class Recording(Counting):
        def generate(self, request):
            first.setdefault("drawn", len(drawn))
            return super().generate(request)

    client = Client(Recording(), ResponseCache(tmp_path / "c.sqlite"), concurrency=4)

    def items():
        for i in range(400):
            drawn.append(i)
            yield req(replicate=f"r{i}")

    out = client.map(client.call, items())
    assert first["drawn"] <= 2 * 4 + 1  # the first call: after at most the pool's room of items
    assert [r.text for r in out] == [f"r{i}" for i in range(400)]  # results in input order


def test_map_stops_at_the_first_failure_and_keeps_what_arrived(tmp_path):
    from louder.llm.client import FailFastError

    class Failing(Counting):
        def generate(self, request):
            if request.replicate == "r30":
                raise FailFastError("stopped")
            return super().generate(request)

    client = Client(Failing(), ResponseCache(tmp_path / "c.sqlite"), concurrency=4)
    with pytest.raises(FailFastError):
        client.map(client.call, (req(replicate=f"r{i}") for i in range(10_000)))
    assert client.model_calls < 100  # it did not go on through the rest of the plan
    assert len(client.cache) == client.model_calls  # every answer that arrived is cached


def test_a_cache_key_is_the_hash_of_the_whole_key_as_before():
    """``cache_key`` splices the request's rendering (made once, ``Request.key_json``) into the key's JSON:
    the key must stay the hash of the whole rendering, or every cache written before would miss. The fake
    model's draws are spliced the same way and must stay the draws of the whole rendering."""
    import random

    from pydantic import BaseModel

    from louder.llm.base import stable_hash
    from louder.llm.fake import FakeModel

    class Answer(BaseModel):
        decision: str
        why: str

    identity = {"model": "m", "seed": 1, "options": {"b": [1, 2.5, None], "a": "é"}}
    for r in (Request(messages=(("system", 'Sé ✓ "q"'), ("user", "x\ny")), schema=Answer, seed=3, replicate="a",
                      reasoning="high"),
              Request(prompt="p", temperature=0.7), Request(messages=(("user", "hi"),))):
        assert cache_key(identity, r) == stable_hash({"model": identity, "request": r.key_material()})
        score = {"prefix": '{"decision": "', "choices": ["Évacuer", "Stay"]}
        assert cache_key(identity, r, score) == stable_hash({"model": identity, "request": r.key_material(),
                                                             "score": score})
        draw = FakeModel("seed=5")._rng(r, "noise", "prefix", "c1").random()
        assert draw == random.Random(stable_hash([5, r.key_material(), "noise", "prefix", "c1"])).random()


class _Choice(BaseModel):
    decision: str
    rationale: str = ""


@settings(max_examples=300, deadline=None)
@given(messages=st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), st.text()),
                                              min_size=1, max_size=3).map(tuple)),
       prompt=st.text(), schema=st.sampled_from([None, _Choice]),
       temperature=st.floats(0, 2), max_tokens=st.integers(1, 32768), seed=st.integers(0, 2**31),
       replicate=st.text(max_size=8), reasoning=st.one_of(st.none(), st.sampled_from(["low", "high", "off"])))
def test_the_spliced_rendering_is_json_dumps_of_the_key_material(messages, prompt, schema, temperature, max_tokens,
                                                                seed, replicate, reasoning):
    """``Request.key_json`` is spliced from its parts (the schema's rendering made once per class): it must be,
    character for character, what ``json.dumps(key_material(), sort_keys=True, ensure_ascii=False)`` writes —
    any text (quotes, backslashes, control characters, any script), chat or completion, with or without a
    schema or a reasoning level."""
    r = Request(messages=messages, prompt=None if messages else prompt, schema=schema, temperature=temperature,
                max_tokens=max_tokens, seed=seed, replicate=replicate, reasoning=reasoning)
    assert r.key_json == json.dumps(r.key_material(), sort_keys=True, ensure_ascii=False)
