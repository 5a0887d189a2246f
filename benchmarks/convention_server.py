"""The P12 benchmark's model served over HTTP (docs/benchmarks.md): the tests' OpenAI-compatible server
(tests/fake_openai.py) on 127.0.0.1, in a process of its own, whose answers to the convention game's picks
follow louder's fake model's rule (``FakeModel.game_probabilities``, louder/llm/fake.py: the memory the
prompt shows, a prior over the options) and whose other answers are the tests' server's own.

    python benchmarks/convention_server.py "fake:seed=1,follow=0.9,bias=Q:0.6"   # prints the base URL
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_openai import FakeOpenAIServer  # noqa: E402

from louder.llm.base import Request  # noqa: E402
from louder.llm.fake import GAME_FIELD, FakeModel  # noqa: E402


def _enum(schema, field: str) -> list[str] | None:
    """The options of ``field`` anywhere in a request's response_format (each JSON mode nests it differently)."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict) and isinstance(props.get(field), dict) and props[field].get("enum"):
            return list(props[field]["enum"])
        for v in schema.values():
            if (hit := _enum(v, field)) is not None:
                return hit
    if isinstance(schema, list):
        for v in schema:
            if (hit := _enum(v, field)) is not None:
                return hit
    return None


def game(spec: str):
    """The server's ``behaviour``: a pick drawn from the fake model's game probabilities (seeded by the
    prompt and the request's seed, so the same request gets the same answer), other requests as they are."""
    model = FakeModel(spec.removeprefix("fake:").removeprefix("fake"))

    def behaviour(n, prompt, body):
        options = _enum(body.get("response_format"), GAME_FIELD)
        if not options:
            return None
        messages = tuple((m["role"], m["content"]) for m in body.get("messages", []))
        weights = model.game_probabilities(Request(messages=messages), options)
        rng = random.Random(hashlib.sha256(f"{prompt}|{body.get('seed', 0)}".encode()).hexdigest())
        pick = rng.choices(options, weights=weights)[0]
        return json.dumps({GAME_FIELD: pick, "rationale": f"I pick {pick}."})

    return behaviour


def main() -> None:
    server = FakeOpenAIServer(game(sys.argv[1] if len(sys.argv) > 1 else "fake:seed=1,follow=0.9"))
    server.start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
