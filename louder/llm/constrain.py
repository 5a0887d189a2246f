"""JSON-schema-constrained decoding for llama.cpp through llguidance.

llama.cpp's GBNF grammar sampler checks the whole vocabulary at every step (~1.7× the time per
token of free decoding on SmolLM2); llguidance computes the allowed-token mask in ~0.3 ms. It plugs
into llama-cpp-python as a logits processor: on every step it consumes the token sampled last,
then sets every token the schema does not allow next to -inf.

llama-cpp-python calls logits processors from a C callback, where an exception is printed and
ignored and decoding goes on *unconstrained*; ``SchemaProcessor`` therefore records its first
exception in ``error`` and the caller must turn the reply into an error.
"""

from __future__ import annotations

import json
import threading
import warnings

import numpy as np

# Whitespace between JSON tokens: at most a newline-and-indent's worth. llguidance's default allows
# any run of whitespace, which a small model can fill until max_tokens.
JSON_OPTIONS = {"whitespace_pattern": r"[\x20\x0A\x0D\x09]{0,12}"}


class Constrainer:
    """One per model: the llguidance tokenizer (built once from the GGUF vocabulary, ~0.3 s) and
    a compiled matcher per schema, copied for each request."""

    def __init__(self, llm):
        import llama_cpp
        from llguidance.llamacpp import lltokenizer_from_vocab

        self.n_vocab = llm.n_vocab()
        with warnings.catch_warnings():  # llguidance calls a deprecated llama.cpp alias once per token
            warnings.simplefilter("ignore", DeprecationWarning)
            self.tokenizer = lltokenizer_from_vocab(llama_cpp.llama_model_get_vocab(llm.model))
        self._compiled: dict[str, object] = {}
        self._lock = threading.Lock()

    def processor(self, schema: dict) -> SchemaProcessor:
        """A fresh processor (and matcher) for one request."""
        from llguidance import LLMatcher

        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            base = self._compiled.get(key)
            if base is None:
                grammar = LLMatcher.grammar_from_json_schema(schema, defaults=JSON_OPTIONS)
                base = LLMatcher(self.tokenizer, grammar, log_level=0)
                if base.is_error():
                    raise ValueError(f"llguidance cannot compile the schema: {base.get_error()}")
                self._compiled[key] = base
        return SchemaProcessor(base.deep_copy(), self.n_vocab)


class SchemaProcessor:
    """A llama-cpp-python logits processor enforcing one matcher; use one per request.

    ``input_ids`` holds the prompt and every token generated so far. The first call sees the
    prompt alone, which fixes where the answer starts; later calls consume the new tokens.
    """

    def __init__(self, matcher, n_vocab: int):
        self.matcher = matcher
        self.n_vocab = n_vocab
        self.prompt_len: int | None = None
        self.consumed = 0
        self.error: str | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        try:
            return self._mask(input_ids, scores)
        except BaseException as e:  # llama-cpp-python would swallow it: keep it for the caller
            if self.error is None:
                self.error = f"{type(e).__name__}: {e}"
            raise

    def _mask(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self.error is not None:
            raise RuntimeError("constraint already failed")
        n = len(input_ids)
        if self.prompt_len is None:
            self.prompt_len = n
        for tok in input_ids[self.prompt_len + self.consumed : n]:
            if not self.matcher.consume_token(int(tok)):
                raise RuntimeError(f"token {int(tok)} rejected: {self.matcher.get_error()}")
            self.consumed += 1
        if self.matcher.is_error():
            raise RuntimeError(self.matcher.get_error())
        # One byte per token: 0 = not allowed next (EOS is allowed once the JSON is complete).
        allowed = np.frombuffer(self.matcher.compute_logit_bias(), dtype=np.uint8)
        k = min(len(allowed), len(scores))
        scores[:k][allowed[:k] == 0] = -np.inf
        scores[k:] = -np.inf
        return scores

    def check(self) -> str | None:
        """Why the finished answer cannot be trusted as constrained, or None."""
        if self.error is not None:
            return f"constrained decoding failed ({self.error}); the answer was not kept"
        if self.prompt_len is None:
            return "constrained decoding failed: the logits processor was never called"
        return None
