"""``fake``: a deterministic stand-in model, for tests and for checking an analysis end to end
without any model.

Spec: ``fake`` or ``fake:seed=N,bias=WORD:P[,bias=WORD:P...][,pick=LABEL][,only=WORD][,first=P]``.
Each answer is drawn from a random generator seeded by ``seed`` and the request (so the same request
always gets the same answer, and different replicates differ). A choice field of the request's
schema (a ``Literal``, i.e. a JSON-schema ``enum``) gets one of its options: uniformly, or — when a
bias WORD occurs in the prompt (whole word, any case) — the first option with probability P and the
others uniformly with the rest. Options for checking robustness (docs/robustness.md): ``pick=LABEL``
makes a bias favour the option LABEL wherever it is listed (instead of whichever is listed first);
``only=WORD`` lets the biases act only when WORD is in the prompt too (e.g. a word of one wording);
``first=P`` gives the first-listed option probability P whenever no bias acts — a model that prefers
position and ignores personas. Free-text fields get a short filler sentence — a ``name`` field a made-up name of
letters, a ``persona`` field a filler persona of a dozen words (both pass louder's persona checks);
``score`` returns the same probabilities as log-probs. Nothing here imitates a real model: it exists
to make the pipeline's arithmetic checkable.
"""

from __future__ import annotations

import json
import math
import random
import re

from louder.errors import LouderError
from louder.llm.base import Reply, Request, stable_hash
from louder.llm.registry import BackendInfo, register


def parse_options(text: str) -> tuple[int, dict[str, float]]:
    """``seed=N,bias=WORD:P,...`` → (seed, {word: P}). Raises LouderError naming the bad part."""
    o = parse_all(text)
    return o["seed"], o["bias"]


def parse_all(text: str) -> dict:
    """Every option of the spec: seed, bias {word: P}, pick (label or None), only (word or None), first (P or None)."""
    out: dict = dict(seed=0, bias={}, pick=None, only=None, first=None)
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        try:
            if key == "seed":
                out["seed"] = int(value)
                continue
            if key == "bias":
                word, _, p = value.rpartition(":")
                if word and 0.0 <= float(p) <= 1.0:
                    out["bias"][word.lower()] = float(p)
                    continue
            if key in ("pick", "only") and value:
                out[key] = value
                continue
            if key == "first" and 0.0 <= float(value) <= 1.0:
                out["first"] = float(value)
                continue
        except ValueError:
            pass
        raise LouderError(f"fake model spec: {part!r} is not seed=INTEGER, bias=WORD:P, pick=LABEL, only=WORD or "
                          "first=P with 0 ≤ P ≤ 1 (e.g. fake:seed=3,bias=woman:0.9)")
    return out


SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "vo", "sa", "dor", "li", "ne", "ta", "ber", "jo", "ru", "el", "an",
             "ko", "mar", "si", "pe")


def _fake_name(rng: random.Random) -> str:
    """"Tenlo Marsaber": two made-up parts of letters (20² × 20³ names, so two draws rarely agree)."""
    first = "".join(rng.choice(SYLLABLES) for _ in range(2))
    last = "".join(rng.choice(SYLLABLES) for _ in range(3))
    return f"{first.capitalize()} {last.capitalize()}"


class FakeModel:
    def __init__(self, options: str = ""):
        self.options = options
        o = parse_all(options)
        self.seed, self.bias, self.pick, self.only, self.first = o["seed"], o["bias"], o["pick"], o["only"], o["first"]

    def identity(self) -> dict:
        return {"backend": "fake", "model": self.options or "default"}

    def _rng(self, request: Request, *extra) -> random.Random:
        return random.Random(stable_hash([self.seed, request.key_material(), *extra]))

    def _hits(self, request: Request, gated: bool = True) -> dict[str, float]:
        """The bias words in the request's prompt (when ``gated``, none unless the ``only`` word is there too)."""
        text = " ".join(c for _, c in request.messages) if request.messages else request.prompt or ""
        if gated and self.only and not re.search(rf"\b{re.escape(self.only)}\b", text, re.IGNORECASE):
            return {}
        return {w: p for w, p in self.bias.items() if re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE)}

    def probabilities(self, request: Request, options: list[str]) -> list[float]:
        """Uniform over ``options``, or the favoured one at P when a bias word is in the prompt
        (the largest P if several are): the first listed, or ``pick`` wherever it is listed. With
        ``first`` and no bias acting, the first listed at that P."""
        k = len(options)
        hits = list(self._hits(request).values())
        if k < 2 or (not hits and self.first is None):
            return [1 / k] * k
        p = max(hits) if hits else self.first
        at = options.index(self.pick) if hits and self.pick in options else 0
        return [p if i == at else (1 - p) / (k - 1) for i in range(k)]

    def generate(self, request: Request) -> Reply:
        rng = self._rng(request)
        schema = request.schema_json()
        # Free text repeats the prompt's bias words, so a persona written for a "woman" carries the
        # bias into the decision prompt that quotes it.
        words = "".join(f" {w}" for w in self._hits(request, gated=False))
        if not schema:
            return Reply(text=f"A fake answer{words} ({rng.randrange(10**6)}).")
        answer = {}
        for name, prop in schema.get("properties", {}).items():
            options = prop.get("enum")
            if options:
                answer[name] = rng.choices(options, weights=self.probabilities(request, options))[0]
            elif name == "name":
                answer[name] = _fake_name(rng)
            elif name == "persona":
                answer[name] = (f"Fake persona{words} {rng.randrange(10**6)}: likes maps and tea, works in town "
                                "and decides at random.")
            else:
                answer[name] = f"Fake {name}{words} {rng.randrange(10**6)}."
        return Reply(text=json.dumps(answer))

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        probs = self.probabilities(request, choices)
        logprobs = {c: (math.log(p) if p > 0 else None) for c, p in zip(choices, probs)}
        return Reply(text=json.dumps({"logprobs": logprobs, "method": "fake"}))


register(BackendInfo("fake", lambda model, url, cfg: FakeModel(model), forms=("fake", "fake:seed=N,bias=WORD:P"),
                     can_score=True, local=True, takes_url=False, model_optional=True))
