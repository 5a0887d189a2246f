"""Time `louder analyze` on a synthetic 100,000-decision run with B = 10,000 bootstrap draws (and, with
``--report``, its report: the size of index.html, the seconds to write it, and the seconds Debian's Chromium
takes to load and lay it out at 1280 × 800, with any console error).

The run: 1 model × 3 conditions × 4 scenarios × 3 groups (36 cases, 14 attributes per scenario ×
condition) with 595 agents per attribute = 99,960 decisions, ~3 % of them invalid/refused/error,
rationales drawn from a small vocabulary so the rationale analysis has real work. ``score``: a
score-mode run — each valid agent has p_target ~ Beta(8 r_a, 8 (1 − r_a)) and chose the target
when a uniform draw fell below it — so the probability DPD (bootstrap and permutation test) runs too.
``personas``: each agent gets a persona of ~70 words (a real persona's length) instead of "p", so that
the report's sample of the agents' own words weighs what it would.
Usage: python benchmarks/analyze_100k.py [--bootstrap 10000] [--score] [--report] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from louder.analysis import analyze
from louder.scenarios import load_group, load_scenario
from louder.types import DECISION_COLUMNS

WORDS = ("safety family community knowledge environment adventure risk children stand up authority "
         "stability career dream immediate threat home neighbours respect duty explore").split()


PERSONA_WORDS = ("lives works nurse teacher farmer retired mother father daughter son neighbour city village coast "
                 "mountain church library savings debt garden dog car bus shift night early late careful bold quiet "
                 "friendly proud tired hopeful worried").split()


SCENARIOS = ("emergency_response", "authority_compliance", "negative_information_sharing", "career_path_selection")


def synthetic_run(out: Path, agents: int = 595, seed: int = 0, score: bool = False, personas: bool = False,
                  scenarios: tuple[str, ...] = SCENARIOS) -> int:
    """``scenarios``: fewer make a smaller run of the same shape (the tests of the figures' plumbing)."""
    rng = np.random.default_rng(seed)
    frames = []
    for condition in ("contextualized", "non_contextualized", "no_persona"):
        for sid in scenarios:
            s = load_scenario(sid)
            other = next(label for label in s.labels if label != s.target)
            for gid in ("gender_identity", "race_ethnicity", "political_ideology"):
                for attribute in load_group(gid).attributes:
                    p = rng.uniform(0.1, 0.9)
                    p_target = rng.beta(8 * p, 8 * (1 - p), agents) if score else np.full(agents, np.nan)
                    target = rng.random(agents) < (p_target if score else p)
                    status = rng.choice(["valid", "invalid", "refused", "error"], agents, p=[0.97, 0.015, 0.01, 0.005])
                    valid = status == "valid"
                    words = rng.choice(WORDS, size=(agents, 12))
                    persona = ([" ".join(w) + "." for w in rng.choice(PERSONA_WORDS, size=(agents, 70))] if personas
                               else "p")
                    frames.append(pd.DataFrame({
                        "run_id": "bench", "model": "synthetic", "condition": condition, "scenario": sid,
                        "group": gid, "attribute": attribute, "agent_id": np.arange(agents), "replicate": np.arange(agents),
                        "name": "A", "persona": persona,
                        "decision": np.where(valid, np.where(target, s.target, other), None),
                        "target": pd.array(np.where(valid, target, None), dtype="boolean"),
                        "p_target": np.where(valid, p_target, np.nan) if score else None,
                        "rationale": np.where(valid, [" ".join(w) for w in words], None),
                        "status": status, "raw_response": "{}", "attempts": 1, "latency_s": 0.1,
                        "input_tokens": 100, "output_tokens": 30, "choice_mass": None,
                        "thinking": None, "reasoning_tokens": None, "reasoning": "default", "intervention": "none",
                        "choice_order": "|".join(s.labels), "wording": "as_written", "signal": "stated"}))
    df = pd.concat(frames, ignore_index=True)[DECISION_COLUMNS]
    df.to_parquet(out / "decisions.parquet", index=False)
    return len(df)


def report(run: Path) -> dict:
    """Write the report of the analysed run folder: its size (MB), the seconds to write it, and — where
    Debian's Chromium is installed — the seconds from navigation to the load event at 1280 × 800 (every SVG
    decoded, the page laid out) and the console errors."""
    import shutil

    from louder.analysis import for_report
    from louder.analysis.report.page import write_report

    t0 = time.perf_counter()
    path = write_report(for_report(run))
    out = dict(mb=path.stat().st_size / 1e6, write_s=time.perf_counter() - t0,
               figures=path.read_text("utf-8").count('<figure class="fig"'))
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return out
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri(), wait_until="load", timeout=120_000)
        timing = page.evaluate("(() => { const t = performance.getEntriesByType('navigation')[0]; "
                               "return {load: t.loadEventEnd, dom: t.domContentLoadedEventEnd}; })()")
        page.evaluate("document.body.scrollHeight")  # forces the full layout
        browser.close()
    return {**out, "load_s": timing["load"] / 1000, "dom_s": timing["dom"] / 1000, "console_errors": len(errors)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", type=int, default=10_000)
    ap.add_argument("--score", action="store_true", help="score mode: a p_target per agent")
    ap.add_argument("--report", action="store_true", help="also write the report, and time it in Chromium")
    ap.add_argument("--out", type=Path, help="build the run folder here and keep it (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.out or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        n = synthetic_run(Path(tmp), score=args.score, personas=args.report)
        t0 = time.perf_counter()
        a = analyze(tmp, bootstrap=args.bootstrap)
        secs = time.perf_counter() - t0
        print(f"analyze: {n} decisions, {len(a.tables['cases'])} cases, B={args.bootstrap}: {secs:.1f} s")
        if args.report:
            r = report(Path(tmp))
            print("report: " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
