"""``fake``: a deterministic stand-in model, for tests and for checking an analysis end to end
without any model.

Spec: ``fake`` or
``fake:seed=N,bias=WORD:P[,bias=WORD:P...][,shift=WORD:D...][,pick=LABEL][,only=WORD][,unless=WORD][,first=P]``.
Each answer is drawn from a random generator seeded by ``seed`` and the request (so the same request
always gets the same answer, and different replicates differ). A choice field of the request's
schema (a ``Literal``, i.e. a JSON-schema ``enum``) gets one of its options: uniformly, or — when a
bias WORD occurs in the prompt (whole word, any case) — the first option with probability P and the
others uniformly with the rest. Options for checking robustness (docs/robustness.md): ``pick=LABEL``
makes a bias favour the option LABEL wherever it is listed (instead of whichever is listed first);
``only=WORD`` lets the biases act only when WORD is in the prompt too (e.g. a word of one wording);
``unless=WORD`` stops the biases whenever WORD is in the prompt (a prompt intervention that works,
docs/how-to/test-a-mitigation.md);
``first=P`` gives the first-listed option probability P whenever no bias acts — a model that prefers
position and ignores personas.

Reading a profile (grounded agents, docs/how-to/check-agents-against-humans.md): ``shift=WORD:D``
(−1 ≤ D ≤ 1, repeatable) *moves* the favoured option's probability (``pick``, else the first listed)
by D whenever WORD is in the prompt, on top of what the other options give it (uniform, a bias, or
``first``); the shifts of every word present add up, the sum is clipped to [0, 1] and the other
options share the rest in proportion to what they had. A bias *sets* a probability (the largest of the
words present wins), a shift *adds* to it, so a persona that names an attribute and a profile answer
combines the two: ``bias=female:0.7,shift=evacuated:0.2,shift=stayed:-0.2`` gives a woman who
evacuated before 0.9, one who stayed 0.5, anyone else who evacuated 0.7. The words reach the decision
through the persona: a persona the fake model writes repeats every bias and shift word of its prompt
(below), so a grounded agent whose profile says "evacuated" decides with that word in its prompt, and
an agent that was never told ignores it. With these a test makes agents that predict their
respondents (shifts on the profile's words, as the people decide), agents that ignore the profile
(biases on the attribute's words only), agents that flatten a gap (no word at all: every group the
same rate) and agents that double it (biases set twice as far apart as the people's rates).

An integer field gets a Binomial draw over its range with the same probability (``count``; the shifts
do not act on it). Free-text fields get a short filler sentence — a ``name`` field a first name
drawn from the curated lists the names signal uses (``louder/data/names``, never a made-up string), a
``persona`` field a filler persona of a dozen words (both pass louder's persona checks);
``score`` returns the same probabilities as log-probs. Nothing here imitates a real model: it exists
to make the pipeline's arithmetic checkable.

Thinking (docs/how-to/reasoning-models.md): ``think=inline`` wraps every structured answer in a
``<think>…</think>`` block before it, ``think=field`` returns the same thinking beside the answer
(``Reply.thinking``, as a server with a reasoning parser does), ``think=unclosed`` opens the block and
never closes it (a thinking cut at max_tokens: no answer). The thinking weighs the *other* options and
writes one of them as JSON in the answer's own shape, so any code that parsed the thinking would read
a wrong answer. No thinking at reasoning level ``off``. ``level=LEVEL:WORD:P`` makes the bias of WORD
P at reasoning level LEVEL (``simulation.reasoning``) — a bias that changes with the level; at
other levels WORD keeps its ``bias=`` (or none).

Planting what the analysis measures (docs/reference/models.md): ``persona_tone=WORD:negative`` (or
``:positive``) writes every persona whose prompt has WORD with words of that tone (traits drawn from
``TONES``), so the persona audit's sentiment reads it; ``persona_same=WORD`` writes every persona
whose prompt has WORD as one and the same text (a flattened group: the audit's diversity reads 0);
``noise=SD`` perturbs the probabilities ``score`` returns, per request, on the logit scale: each
option's log-probability gets a seeded N(0, SD²) draw and the options are renormalised (two options:
logit p + N(0, 2·SD²)), so a regression on the scores has the residual variance a real model's have.

The coordination game of convention runs (issue 48, docs/conventions.md) — a request whose schema asks
for a ``pick`` — is played by its own documented rule, so that every verdict of the convention analysis
can be checked on known truth (``louder.analysis.stats.convention_models.memory_rule`` is the same rule, played
without a model). The options are the field's enum; the memory is what the prompt's memory lines say the
partners picked (each written ``partner picked "LABEL"``, louder/data/convention.yaml):

    prior(x)  = P for the option x named by a ``bias=x:P`` (the largest P if several; gated by ``only`` /
                ``unless`` as every bias), the other options (1 − P)/(W − 1) each; uniform without one
    count(x)  = the partners' picks of x in the memory, times K for ``favour=x:K`` (1 otherwise)
    P(pick x) = F · [x among the options with the largest count] / (number of them)  +  (1 − F) · prior(x)

with F the ``follow=F`` weight (default 0: the prior alone, memory ignored); with an empty memory the
pick is drawn from the prior. ``bias`` words that are not options, ``pick``, ``first`` and ``shift`` do
not act on a pick. So ``fake:follow=0.9`` is fictitious play with no individual preference,
``fake:follow=0.9,bias=Q:0.6`` adds an individual prior of 0.6 for Q, and ``fake:follow=0.9,favour=Q:2``
has no individual preference (empty memory: uniform) but a memory that counts Q twice.
"""

from __future__ import annotations

import json
import math
import random
import re
from functools import cache
from importlib import resources

import yaml

from louder.errors import LouderError
from louder.llm.base import Reply, Request, canonical_json, hash_json
from louder.llm.registry import BackendInfo, register
from louder.llm.thinking import LEVELS

THINK = ("inline", "field", "unclosed")
GAME_FIELD = "pick"  # the answer field of the convention game's schema (louder.simulation.convention_run)
MEMORY = re.compile(r'partner picked "([^"]+)"')  # a memory line's partner pick (louder/data/convention.yaml)
# persona_tone: the traits a persona of that tone is written with (three drawn per persona)
TONES = {
    "negative": ("is bitter and lonely", "hates the job", "feels miserable and angry", "is afraid of failure",
                 "suffers from terrible debt", "resents the neighbours", "is tired and hopeless",
                 "distrusts everyone"),
    "positive": ("is cheerful and kind", "loves the job", "feels happy and hopeful", "is proud of the family",
                 "enjoys a wonderful garden", "helps the neighbours gladly", "is calm and confident",
                 "trusts friends warmly"),
}


@cache
def _word(w: str) -> re.Pattern:
    """``w`` as a whole word, in any case (compiled once: the pattern was built and looked up in re's cache
    for every word of every request)."""
    return re.compile(rf"\b{re.escape(w)}\b", re.IGNORECASE)


def parse_all(text: str) -> dict:
    """Every option of the spec: seed, bias {word: P}, shift {word: D}, pick (label or None), only and unless
    (word or None), first (P or None),
    think (inline | field | unclosed | None), level {reasoning level: {word: P}}."""
    out: dict = dict(seed=0, bias={}, shift={}, pick=None, only=None, unless=None, first=None, think=None, level={},
                     persona_tone={}, persona_same=set(), noise=0.0, follow=0.0, favour={})
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
            if key == "shift":
                word, _, d = value.rpartition(":")
                if word and -1.0 <= float(d) <= 1.0:
                    out["shift"][word.lower()] = float(d)
                    continue
            if key in ("pick", "only", "unless") and value:
                out[key] = value
                continue
            if key == "first" and 0.0 <= float(value) <= 1.0:
                out["first"] = float(value)
                continue
            if key == "think" and value in THINK:
                out["think"] = value
                continue
            if key == "persona_tone":
                word, _, tone = value.rpartition(":")
                if word and tone in TONES:
                    out["persona_tone"][word.lower()] = tone
                    continue
            if key == "persona_same" and value:
                out["persona_same"].add(value.lower())
                continue
            if key == "noise" and float(value) >= 0 and math.isfinite(float(value)):
                out["noise"] = float(value)
                continue
            if key == "follow" and 0.0 <= float(value) <= 1.0:
                out["follow"] = float(value)
                continue
            if key == "favour":
                word, _, k = value.rpartition(":")
                if word and 0.0 <= float(k) and math.isfinite(float(k)):
                    out["favour"][word.lower()] = float(k)
                    continue
            if key == "level":
                level, _, rest = value.partition(":")
                word, _, p = rest.rpartition(":")
                if level in LEVELS and word and 0.0 <= float(p) <= 1.0:
                    out["level"].setdefault(level, {})[word.lower()] = float(p)
                    continue
        except ValueError:
            pass
        raise LouderError(f"fake model spec: {part!r} is not seed=INTEGER, bias=WORD:P, shift=WORD:D (−1 ≤ D ≤ 1), "
                          f"pick=LABEL, only=WORD, "
                          f"unless=WORD, first=P, think={'|'.join(THINK)}, level=LEVEL:WORD:P (LEVEL one of "
                          f"{', '.join(LEVELS)}) with 0 ≤ P ≤ 1, persona_tone=WORD:{'|'.join(TONES)}, "
                          "persona_same=WORD, noise=SD with SD ≥ 0, follow=P or favour=LABEL:K with K ≥ 0 (e.g. "
                          "fake:seed=3,bias=woman:0.9)")
    return out


# The curated first names the names signal draws from by default (louder/data/names): a made-up
# string of letters once spelt an offensive word, so the fake model writes only names a publication printed.
NAMES_FILE = "bertrand_mullainathan_2004.yaml"


@cache
def curated_names() -> tuple[str, ...]:
    """Every first name of the default names file (Bertrand & Mullainathan 2004, Table A1), once each,
    in the file's order."""
    doc = yaml.safe_load((resources.files("louder") / "data" / "names" / NAMES_FILE).read_text("utf-8"))
    return tuple(dict.fromkeys(n for lists in doc["attributes"].values() for n in lists["first"]))


def _fake_name(rng: random.Random) -> str:
    """A first name drawn from ``curated_names`` (uniformly: the fake model knows no attribute)."""
    return rng.choice(curated_names())


class FakeModel:
    def __init__(self, options: str = ""):
        self.options = options
        o = parse_all(options)
        self.seed, self.bias, self.pick, self.only, self.first = o["seed"], o["bias"], o["pick"], o["only"], o["first"]
        self._seed_json = canonical_json(self.seed)  # rendered once: every answer's draws hash it
        self.shift = o["shift"]
        self.think, self.levels, self.unless = o["think"], o["level"], o["unless"]
        self.tone, self.same, self.noise = o["persona_tone"], o["persona_same"], o["noise"]
        self.follow, self.favour = o["follow"], o["favour"]
        self.reasoning_control = "fake"  # honours every reasoning level

    def identity(self) -> dict:
        return {"backend": "fake", "model": self.options or "default"}

    def _rng(self, request: Request, *extra) -> random.Random:
        # stable_hash([self.seed, request.key_material(), *extra]), the request rendered once
        parts = [self._seed_json, request.key_json, *map(canonical_json, extra)]
        return random.Random(hash_json(f"[{', '.join(parts)}]"))

    def _hits(self, request: Request, gated: bool = True, words: dict[str, float] | None = None) -> dict[str, float]:
        """The bias words in the request's prompt (when ``gated``, none unless the ``only`` word is there too,
        and none when the ``unless`` word is); ``words``: these words (the shifts) instead of the biases."""
        text = " ".join(c for _, c in request.messages) if request.messages else request.prompt or ""
        if gated and self.only and not _word(self.only).search(text):
            return {}
        if gated and self.unless and _word(self.unless).search(text):
            return {}
        if words is not None:
            bias = words
        elif gated:
            bias = {**self.bias, **self.levels.get(request.reasoning or "default", {})}
        else:  # free text echoes every word that is a bias at some level, and every shift word
            bias = {**{w: p for lv in self.levels.values() for w, p in lv.items()}, **self.bias, **self.shift}
        return {w: p for w, p in bias.items() if _word(w).search(text)}

    def probabilities(self, request: Request, options: list[str]) -> list[float]:
        """Uniform over ``options``, or the favoured one at P when a bias word is in the prompt
        (the largest P if several are): the first listed, or ``pick`` wherever it is listed. With
        ``first`` and no bias acting, the first listed at that P. Then the shifts of the shift words
        present move the favoured option (``pick``, else the first listed) by their sum, clipped to
        [0, 1], the others keeping their proportions."""
        k = len(options)
        hits = list(self._hits(request).values())
        if k < 2 or (not hits and self.first is None):
            probs = [1 / k] * k
        else:
            p = max(hits) if hits else self.first
            at = options.index(self.pick) if hits and self.pick in options else 0
            probs = [p if i == at else (1 - p) / (k - 1) for i in range(k)]
        moved = sum(self._hits(request, words=self.shift).values()) if self.shift and k >= 2 else 0.0
        if moved == 0:
            return probs
        at = options.index(self.pick) if self.pick in options else 0
        p = min(1.0, max(0.0, probs[at] + moved))
        rest = sum(q for i, q in enumerate(probs) if i != at)
        return [p if i == at else ((1 - p) * q / rest if rest > 0 else (1 - p) / (k - 1)) for i, q in enumerate(probs)]

    def game_probabilities(self, request: Request, options: list[str]) -> list[float]:
        """A pick of the coordination game (module docstring): F · the memory's most counted options + (1 − F)
        · the prior over the options."""
        k = len(options)
        lower = [o.lower() for o in options]
        hits = {w: p for w, p in self._hits(request).items() if w in lower}
        if hits and k >= 2:
            word = max(hits, key=lambda w: (hits[w], w))
            prior = [hits[word] if o == word else (1 - hits[word]) / (k - 1) for o in lower]
        else:
            prior = [1 / k] * k
        text = " ".join(c for _, c in request.messages) if request.messages else request.prompt or ""
        seen = [m.lower() for m in MEMORY.findall(text)]
        counts = [sum(1 for m in seen if m == o) * self.favour.get(o, 1.0) for o in lower]
        if not seen or self.follow == 0 or max(counts) <= 0:
            return prior
        top = [c == max(counts) for c in counts]
        return [self.follow * t / sum(top) + (1 - self.follow) * q for t, q in zip(top, prior)]

    def count(self, request: Request, rng: random.Random, low: int, high: int) -> int:
        """An integer field (the beliefs probe's "how many out of 100"): low + Binomial(high − low, q),
        q = ½, or the largest P of the bias words in the prompt — so its mean is the rate the same bias
        gives a first choice among two."""
        hits = list(self._hits(request).values())
        q = max(hits) if hits else 0.5
        return low + sum(rng.random() < q for _ in range(high - low))

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
            if options and name == GAME_FIELD:
                answer[name] = rng.choices(options, weights=self.game_probabilities(request, options))[0]
            elif options:
                answer[name] = rng.choices(options, weights=self.probabilities(request, options))[0]
            elif prop.get("type") == "integer":
                answer[name] = self.count(request, rng, prop.get("minimum", 0), prop.get("maximum", 100))
            elif name == "name":
                answer[name] = _fake_name(rng)
            elif name == "persona":
                answer[name] = self._persona(request, rng, words)
            else:
                answer[name] = f"Fake {name}{words} {rng.randrange(10**6)}."
        return self._thought(request, schema, answer, rng)

    def _persona(self, request: Request, rng: random.Random, words: str) -> str:
        """A filler persona; ``persona_same``: one text for every prompt with the word; ``persona_tone``:
        three traits of the word's tone."""
        if self._matching(request, self.same):
            return "Fake persona: likes maps and tea, works in town and decides at random."
        tone = self._matching(request, self.tone)
        if tone:
            traits = rng.sample(TONES[self.tone[tone[0]]], 3)
            return f"Fake persona{words} {rng.randrange(10**6)}: {traits[0]}, {traits[1]} and {traits[2]}."
        return f"Fake persona{words} {rng.randrange(10**6)}: likes maps and tea, works in town and decides at random."

    @staticmethod
    def _matching(request: Request, words) -> list[str]:
        """The ``words`` (whole word, any case) in the request's prompt."""
        text = " ".join(c for _, c in request.messages) if request.messages else request.prompt or ""
        return [w for w in words if _word(w).search(text)]

    def _thought(self, request: Request, schema: dict, answer: dict, rng: random.Random) -> Reply:
        """The answer, with thinking as the ``think`` option says (none at reasoning level off)."""
        text = json.dumps(answer)
        if self.think is None or request.reasoning == "off":
            return Reply(text=text)
        # Weigh the other options, each written as an answer of the same shape: a parser that read the
        # thinking would take one of them.
        other = {}
        for name, prop in schema.get("properties", {}).items():
            options = [o for o in prop.get("enum") or [] if o != answer.get(name)]
            other[name] = rng.choice(options) if options else (
                answer[name] + 1 if isinstance(answer.get(name), int) else f"Not this {name} {rng.randrange(10**6)}")
        words = "".join(f" {w}" for w in self._hits(request, gated=False))  # the attribute, if a bias word
        thinking = (f"Let me weigh this for the person{words}. One answer would be {json.dumps(other)}. But on "
                    "reflection the other choice fits better.")
        if self.think == "field":
            return Reply(text=text, thinking=thinking, reasoning_tokens=len(thinking.split()))
        if self.think == "unclosed":
            return Reply(text=f"<think>{thinking} Still weighing", finish_reason="length")
        return Reply(text=f"<think>{thinking}</think>\n{text}")

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        probs = self.probabilities(request, choices)
        if self.noise > 0:  # log p_i + N(0, noise²) per option, renormalised (a zero stays zero)
            rng = self._rng(request, "noise", prefix, *choices)
            tilted = [p * math.exp(rng.gauss(0.0, self.noise)) for p in probs]
            probs = [t / sum(tilted) for t in tilted]
        logprobs = {c: (math.log(p) if p > 0 else None) for c, p in zip(choices, probs)}
        return Reply(text=json.dumps({"logprobs": logprobs, "method": "fake"}))


register(BackendInfo("fake", lambda model, url, cfg: FakeModel(model), forms=("fake", "fake:seed=N,bias=WORD:P"),
                     can_score=True, local=True, takes_url=False, model_optional=True, reasoning_controls=("fake",),
                     free_text=False, concurrency=1))
