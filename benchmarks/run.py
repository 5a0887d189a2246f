"""louder's benchmark suite: `python benchmarks/run.py [--quick] [--only P1,P2]`.

Each benchmark prints one line starting with its id and containing ``ratio=<number>`` (P6:
``seconds=<number>``). Ratios are measured within one run, so they compare like with like on
whatever machine runs them; record results in docs/benchmarks.md.

- P1 overhead: wall time of a small embedded-model experiment ÷ the sum of its raw model-call
  times (goal ≤ 1.10).
- P2 concurrency: 1,008 decisions at concurrency 64 against a local OpenAI-compatible server that
  answers decisions after 200 ms (personas instantly): measured ÷ ideal (1,008 × 0.2 s / 64)
  (goal ≤ 1.25); the sequential time is measured on a slice and scaled.
- P3 cache: identical re-run time ÷ cold time of the P2 experiment, and its model calls (goal ≤ 0.05, 0).
- P4 scoring: decisions per second in `score` mode ÷ in `sample` mode on the embedded model, from
  the raw call times of the same agents' decisions (goal ≥ 1.3).
- P7 constrained decoding: ms per generated token (after the first) of llguidance-constrained ÷
  unconstrained decoding on the embedded model, the project's persona and decision prompts, same
  prompts and seeds (goal ≤ 1.20); the same ratio for llama.cpp's GBNF sampler for comparison.
- P6 analysis: `louder analyze` on 100,000 synthetic decisions with B = 10,000, in seconds.
- P5 archetype mode: 100,000 agents drawn from a four-group population (180 cells), 5 rounds on a
  100,000-node Watts–Strogatz graph, K = 5, embedded model, buckets 0.25 and 0.75 (so 180 × 5 ×
  (1 + 2) = 2,700 calls): wall seconds, model calls and peak memory (`--quick`: 10,000 agents).
  Goal < 10 min and < 4 GB. ``LOUDER_P5_MODEL=fake`` checks the plumbing without the model;
  ``LOUDER_P5_THREADS=1`` (llama.cpp threads; one is faster on a machine busy with other work);
  ``LOUDER_P5_DIR=DIR`` keeps the run folder so an interrupted P5 resumes from its cache. A second
  P5 line runs the same design against a local OpenAI-compatible server answering after 200 ms
  with 64 calls in flight (a stand-in for vLLM replicas).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the local OpenAI-compatible test server
sys.path.insert(0, str(HERE))

from louder.config import build_config  # noqa: E402
from louder.simulation import run_experiment  # noqa: E402


def p1_overhead(tmp: Path, quick: bool) -> list[str]:
    cfg = build_config(dict(scenarios=["emergency_response"], groups=["gender_identity"], agents=2 if quick else 5))
    start = time.perf_counter()
    res = run_experiment(cfg, tmp / "p1")
    wall = time.perf_counter() - start
    model_s = res.manifest["model_seconds"]
    start = time.perf_counter()
    again = run_experiment(cfg, tmp / "p1")
    rerun = time.perf_counter() - start
    return [f"P1 overhead ratio={wall / model_s:.3f} wall_s={wall:.1f} model_call_s={model_s:.1f} "
            f"calls={res.manifest['model_calls']} (embedded; wall includes loading the model)",
            f"P3 cache (embedded) ratio={rerun / wall:.4f} rerun_s={rerun:.2f} cold_s={wall:.1f} "
            f"rerun_model_calls={again.manifest['model_calls']}"]


class _ServerProcess:
    """The tests' OpenAI-compatible server in a process of its own (so it never competes with the
    client for Python's GIL), on 127.0.0.1; decisions are answered after ``delay`` seconds."""

    def __init__(self, delay: float, *args: str):
        self.proc = subprocess.Popen([sys.executable, str(HERE.parent / "tests" / "fake_openai.py"),
                                      "--decision-delay", str(delay), *args], stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def p2_p3_concurrency_and_cache(tmp: Path, quick: bool, client: str = "http") -> list[str]:
    """1,008 agents (4 scenarios × 3 attributes × 84). Their personas come first from a server that
    fails every decision (so the decisions are cached as errors); then, on the same port, a server
    answering decisions after 200 ms meets `--retry-errors`: exactly the 1,008 decisions are timed."""
    delay, conc = 0.2, 64
    first = _ServerProcess(0.0, "--fail-decisions")
    port = first.url.rsplit(":", 1)[1].split("/")[0]
    base = dict(models=[{"spec": f"openai:fake@{first.url}", "timeout_s": 30, "client": client, "max_attempts": 1}],
                groups=["gender_identity"], concurrency=conc)
    cfg = build_config(dict(base, agents=84))
    try:
        start = time.perf_counter()
        run_experiment(cfg, tmp / "p2")
        personas_s = time.perf_counter() - start
    finally:
        first.stop()
    server = _ServerProcess(delay, "--port", port)
    try:
        start = time.perf_counter()
        cold = run_experiment(cfg, tmp / "p2", retry_errors=True)
        cold_s = time.perf_counter() - start
        n = int((cold.decisions["attempts"] > 0).sum())
        ideal = n * delay / conc
        start = time.perf_counter()
        warm = run_experiment(cfg, tmp / "p2")
        warm_s = time.perf_counter() - start
        # Sequential: a slice at concurrency 1 (personas and decisions), scaled to the same number of decisions.
        k = 10 if quick else 30
        seq_cfg = build_config(dict(base, agents=1, concurrency=1, scenarios=["emergency_response"]))
        start = time.perf_counter()
        seq_n = 0
        for i in range(k // 3):
            seq_n += len(run_experiment(seq_cfg.model_copy(update={"seed": 100 + i}), tmp / f"seq{i}").decisions)
        seq_s = (time.perf_counter() - start) / seq_n * n
    finally:
        server.stop()
    return [f"P2 concurrency ratio={cold_s / ideal:.3f} measured_s={cold_s:.2f} ideal_s={ideal:.2f} "
            f"sequential_s≈{seq_s:.0f} decisions={n} concurrency={conc} client={client} "
            f"(personas before: {personas_s:.1f} s)",
            f"P3 cache ratio={warm_s / cold_s:.4f} rerun_s={warm_s:.2f} cold_s={cold_s:.2f} "
            f"rerun_model_calls={warm.manifest['model_calls']}"]


def p4_scoring(tmp: Path, quick: bool) -> str:
    agents = 2 if quick else 5
    base = dict(scenarios=["emergency_response"], groups=["gender_identity"], agents=agents)
    sample = run_experiment(build_config(base), tmp / "p4s")
    # The same agents (personas come from the copied cache), decided by scoring instead.
    (tmp / "p4c").mkdir()
    shutil.copy(tmp / "p4s" / "cache.sqlite", tmp / "p4c" / "cache.sqlite")
    scored = run_experiment(build_config(dict(base, decision_mode="score")), tmp / "p4c")
    s_t = sample.decisions.loc[sample.decisions["status"] != "error", "latency_s"]
    c_t = scored.decisions.loc[scored.decisions["attempts"] > 0, "latency_s"]
    ratio = (len(c_t) / c_t.sum()) / (len(s_t) / s_t.sum())
    return (f"P4 scoring ratio={ratio:.2f} score_decisions_per_s={len(c_t) / c_t.sum():.2f} "
            f"sample_decisions_per_s={len(s_t) / s_t.sum():.2f} decisions={len(c_t)} (embedded)")


def p7_constrained(tmp: Path, quick: bool) -> str:
    """Per request, streamed: (time of the last token - time of the first) / (tokens - 1), so prompt
    evaluation, the same for every method, is left out. Medians over the prompts × seeds."""
    import statistics

    from louder.agents import decision_schema
    from louder.llm.base import Request
    from louder.llm.embedded import EmbeddedModel
    from louder.personas import PersonaOut
    from louder.prompts import Prompts
    from louder.scenarios import load_scenario

    prompts, sc = Prompts(), load_scenario("emergency_response")
    persona = prompts.persona("Female", "contextualized", sc, False, "chat")
    action = prompts.action("Maria Lopez", "A 34-year-old nurse who lives alone near the forest.", sc, "chat")
    jobs = [(persona, PersonaOut, 0.7, 160), (action, decision_schema(sc.labels, True), 0.2, 120)]
    seeds = range(2 if quick else 4)
    # One thread: the per-token ratio then suffers least from other processes on a shared machine.
    models = {m: EmbeddedModel(constraint=m, n_threads=1) for m in ("llguidance", "gbnf")}
    for m in models.values():  # one llama.cpp context for all three methods
        m._llm = models["llguidance"]._model()

    def ms_per_token(method: str) -> float:
        model = models["gbnf" if method == "gbnf" else "llguidance"]
        per = []
        for text, schema, temp, n in jobs:
            for seed in seeds:
                req = Request(messages=(("user", text),), schema=None if method == "free" else schema,
                              temperature=temp, max_tokens=n, seed=seed)
                # The backend's own call, streamed: time from the first token to the last.
                llm = model._model()
                llm.reset()
                processor = model._processor(llm, req)
                fmt = {"type": "json_object", "schema": req.schema_json()} if method == "gbnf" else None
                stamps = []
                for chunk in llm.create_chat_completion(
                        messages=[{"role": "user", "content": text}], temperature=temp, max_tokens=n, seed=seed,
                        response_format=fmt, logits_processor=[processor] if processor else None,
                        repeat_penalty=model.repeat_penalty, stream=True):
                    if chunk["choices"][0]["delta"].get("content"):
                        stamps.append(time.perf_counter())
                if len(stamps) > 1:
                    per.append((stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1000)
        return statistics.median(per)

    # Interleaved passes so that load from other processes hits every method alike.
    ms = {"free": [], "llguidance": [], "gbnf": []}
    for _ in range(1 if quick else 2):
        for method in ms:
            ms[method].append(ms_per_token(method))
    free, ll, gb = (statistics.median(ms[k]) for k in ("free", "llguidance", "gbnf"))
    return (f"P7 constrained decoding ratio={ll / free:.2f} (llguidance ÷ free) gbnf_ratio={gb / free:.2f} "
            f"ms_per_token free={free:.1f} llguidance={ll:.1f} gbnf={gb:.1f} (embedded)")


def p5_archetype(tmp: Path, quick: bool, served: float | None = None) -> str:
    """``served``: instead of the embedded model, the tests' OpenAI-compatible server in its own
    process answering each call after ``served`` seconds, 64 calls in flight (a stand-in for vLLM)."""
    import os
    import resource

    from louder.simulation.archetype_run import run_archetype

    n = 10_000 if quick else 100_000
    server = _ServerProcess(served) if served is not None else None
    model = ({"spec": f"openai:fake@{server.url}", "client": "http", "timeout_s": 60} if server else
             {"spec": os.environ.get("LOUDER_P5_MODEL", "embedded"),
              **({"n_threads": int(os.environ["LOUDER_P5_THREADS"])} if os.environ.get("LOUDER_P5_THREADS") else {})})
    cfg = build_config(dict(
        models=[model], concurrency=64 if server else 4, population="us_adults_regions", agents=n,
        mode="archetype", decision_mode="score", scenarios=["emergency_response"], groups=["political_ideology"],
        replicates=5, buckets=[0.25, 0.75], rounds=5,
        network={"generator": "watts_strogatz", "params": {"k": 8, "p": 0.1}, "seed": 0}))
    # LOUDER_P5_DIR keeps the run folder (and its cache) so an interrupted P5 resumes
    out = Path(os.environ["LOUDER_P5_DIR"]) if os.environ.get("LOUDER_P5_DIR") else tmp / "p5"
    start = time.perf_counter()
    try:
        r = run_archetype(cfg, out)
    finally:
        if server:
            server.stop()
    wall = time.perf_counter() - start
    m = r.manifest
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    label = f"P5 archetype (served, {served * 1000:.0f} ms per call, concurrency 64)" if server else "P5 archetype"
    return (f"{label} seconds={wall:.0f} agents={n} calls={m['model_calls']} peak_mb={peak:.0f} "
            f"cells={m['population']['cells']} replicates=5 buckets=2 rounds=5 model_call_s={m['model_seconds']:.0f} "
            f"cache_hits={m['cache_hits']} "
            f"rows={m['rows']['decisions']} status={m['status_counts']['archetype_calls']} ({cfg.models[0].spec})")


def p6_analysis(tmp: Path, quick: bool) -> str:
    from analyze_100k import synthetic_run

    from louder.analysis import analyze

    n = synthetic_run(tmp)
    start = time.perf_counter()
    a = analyze(tmp, bootstrap=10_000)
    secs = time.perf_counter() - start
    return f"P6 analysis seconds={secs:.2f} decisions={n} cases={len(a.tables['cases'])} B=10000"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes (under 10 minutes here)")
    ap.add_argument("--only", default="", help="comma-separated ids, e.g. P2,P3")
    args = ap.parse_args()
    only = {x.strip().upper() for x in args.only.split(",") if x.strip()}
    benches = [("P1", p1_overhead), ("P2", p2_p3_concurrency_and_cache),
               ("P2", lambda tmp, quick: p2_p3_concurrency_and_cache(tmp, quick, "langchain")[:1]),
               ("P4", p4_scoring), ("P5", p5_archetype),
               ("P5", lambda tmp, quick: p5_archetype(tmp, quick, served=0.2)), ("P6", p6_analysis), ("P7", p7_constrained)]
    for bid, fn in benches:
        if only and bid not in only and not (bid == "P2" and "P3" in only):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = fn(Path(tmp), args.quick)
        for line in [out] if isinstance(out, str) else out:
            print(line, flush=True)


if __name__ == "__main__":
    main()
