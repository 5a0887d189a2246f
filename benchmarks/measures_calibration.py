"""Simulated calibration of the measures of issues 33, 34 and 37 (docs/statistics.md, "Measures from
the literature"): how often each flags on data with no effect, and how often it finds (and covers) a
planted effect of known size. The designs are those of the tests (tests/test_discrimination.py,
test_conditional.py, test_persona_audit.py, test_anchoring.py, test_adjustment.py), each repeated
``--sims`` times with fresh seeds.

    python benchmarks/measures_calibration.py [--sims 200] [--B 500] [--only anchoring,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))  # the tests' simulators, one definition each

from test_adjustment import intervened, policy_run, score_run  # noqa: E402
from test_anchoring import TRUTH, _covariate_study, study  # noqa: E402
from test_conditional import population  # noqa: E402
from test_discrimination import BIAS, simulated  # noqa: E402
from test_persona_audit import personas  # noqa: E402

from louder.analysis.stats.anchoring import ppi_rate, ppi_table  # noqa: E402
from louder.analysis.stats.calibration import calibration_offsets  # noqa: E402
from louder.analysis.stats.conditional import conditional_tables  # noqa: E402
from louder.analysis.stats.discrimination import discrimination_table  # noqa: E402
from louder.analysis.stats.interventions import intervention_changes  # noqa: E402
from louder.analysis.stats.persona_audit import persona_audit  # noqa: E402
from louder.analysis.stats.prob_dpd import prob_dpd  # noqa: E402
from louder.analysis.stats.sensitivity import sensitivity_table  # noqa: E402
from louder.calibration import calibrated_probability  # noqa: E402


def share(xs) -> str:
    xs = list(xs)
    return f"{np.mean(xs):.3f} ({sum(xs)}/{len(xs)})"


def discrimination(S, B):
    rows = []
    for mode in ("score", "sample"):
        n = 60 if mode == "score" else 80
        null = [discrimination_table(simulated(10_000 + s, mode=mode, n=n))["significant"].any() for s in range(S)]
        found, covered = [], []
        for s in range(S):
            t = discrimination_table(simulated(20_000 + s, bias=BIAS, mode=mode, n=n)).set_index("attribute")
            found.append(bool(t.loc["Female", "significant"]))
            covered.append(bool(t.loc["Female", "ci_low"] <= BIAS <= t.loc["Female", "ci_high"]))
        rows += [(f"discrimination, {mode}: any coefficient flagged, no bias", share(null)),
                 (f"discrimination, {mode}: Female flagged, bias {BIAS:.2f} logits", share(found)),
                 (f"discrimination, {mode}: Female interval covers {BIAS:.2f}", share(covered))]
    return rows


def conditional(S, B):
    null = [set(conditional_tables(population(30_000 + s, n=1500, model_reads="none"),
                                   ["political_ideology", "age_group"], B=B)[0]["verdict"]) != {"no disparity"}
            for s in range(S)]

    def verdict(seed, reads):
        t = conditional_tables(population(seed, model_reads=reads), ["political_ideology"], B=B)[0]
        return t.set_index("group").loc["gender_identity", "verdict"]

    explained = [verdict(40_000 + s, "ideology") == "explained by political_ideology" for s in range(S)]
    persists = [verdict(50_000 + s, "gender") == "persists" for s in range(S)]
    return [("conditional: anything flagged (2 controls × 2 groups), no bias", share(null)),
            ("conditional: ideology-biased model → explained by political_ideology", share(explained)),
            ("conditional: gender-biased model → persists", share(persists))]


def persona(S, B):
    null = [persona_audit(personas(60_000 + s), B=B)["personas_audit_gaps"]["significant"].any() for s in range(S)]
    tone, same = [], []
    for s in range(S):
        g = persona_audit(personas(70_000 + s, tone="Female"), B=B)["personas_audit_gaps"].set_index("measure")
        tone.append(bool(g.loc["sentiment", "significant"] and g.loc["sentiment", "lowest"] == "Female"))
        g = persona_audit(personas(80_000 + s, same="Male"), B=B)["personas_audit_gaps"].set_index("measure")
        same.append(bool(g.loc["diversity", "significant"] and g.loc["diversity", "lowest"] == "Male"))
    return [("persona audit: any gap flagged (5 measures), neutral personas", share(null)),
            ("persona audit: negative tone → Female sentiment flagged lowest", share(tone)),
            ("persona audit: identical personas → Male diversity flagged lowest", share(same))]


def anchoring(S, B):
    cover, dcover = [], []
    for s in range(S):
        t = ppi_table(*study(90_000 + s), B=B, seed=s)
        truth = t["attribute"].map(TRUTH)
        cover += list((t["ci_low_ppi"] <= truth) & (truth <= t["ci_high_ppi"]))
        dcover.append(bool(t["dpd_ci_low_ppi"].iloc[0] <= 0.25 <= t["dpd_ci_high_ppi"].iloc[0]))
    rows = [("anchoring: PPI interval covers the attribute's true rate (female-biased agents)", share(cover)),
            ("anchoring: PPI DPD interval covers 0.25", share(dcover))]
    rng = np.random.default_rng(5)
    for informative in (True, False):
        c, ratio = [], []
        for _ in range(S):
            Y, Yh, Yu = _covariate_study(rng, 80, 800, informative)
            r = ppi_rate(Y, Yh, Yu)
            c.append(bool(r["ci_low_ppi"] <= 0.5 <= r["ci_high_ppi"]))
            ratio.append((r["ci_high_ppi"] - r["ci_low_ppi"]) / (r["ci_high_humans"] - r["ci_low_humans"]))
        what = "informative" if informative else "uninformative"
        rows += [(f"anchoring: {what} agents, coverage", share(c)),
                 (f"anchoring: {what} agents, PPI ÷ humans-only width (median)", f"{np.median(ratio):.3f}")]
    return rows


def adjustment(S, B):
    null = [intervention_changes(intervened(100_000 + s, bias=0.5), B=B, seed=s)["verdict"].iloc[0] == "no change"
            for s in range(S)]
    kept = [intervention_changes(intervened(110_000 + s, vanishes=False), B=B, seed=s)["verdict"].iloc[0] == "no change"
            for s in range(S)]
    red, cov = [], []
    for s in range(S):
        r = intervention_changes(intervened(120_000 + s), B=B, seed=s).iloc[0]
        red.append(r["verdict"] == "reduces")
        cov.append(bool(r["ci_low"] <= -0.4 <= r["ci_high"]))
    rows = [("interventions: no change, no bias (100 agents per attribute)", share(null)),
            ("interventions: no change, a bias the intervention leaves alone", share(kept)),
            ("interventions: reduces, a bias of 0.4 that vanishes", share(red)),
            ("interventions: interval of the DPD change covers −0.4", share(cov))]
    for factor in (1, 10, 100):
        flagged = []
        for s in range(S):
            o = calibration_offsets(score_run(130_000 + s, n=200 * factor)).set_index("attribute")["offset"]
            again = score_run(140_000 + s)
            again["p_target"] = calibrated_probability(again["p_target"], again["attribute"].map(o))
            flagged.append(prob_dpd([g["p_target"].to_numpy() for _, g in again.groupby("attribute")], B=B).p_value
                           < 0.05)
        rows.append((f"calibration: re-run of 200 agents per attribute flagged, offsets from {200 * factor}",
                     share(flagged)))
    flips = [set(sensitivity_table(policy_run(150_000 + s), B=B // 2).query("group == '(all)'")["verdict"])
             == {"depends on the model's bias"} for s in range(max(S // 4, 1))]
    holds = [(sensitivity_table(policy_run(160_000 + s, flip=False), B=B // 2)["verdict"] == "holds").all()
             for s in range(max(S // 4, 1))]
    return rows + [("sensitivity: a bias that flips the policy effect → depends", share(flips)),
                   ("sensitivity: an unbiased model → every effect holds", share(holds))]


PARTS = dict(discrimination=discrimination, conditional=conditional, persona=persona, anchoring=anchoring,
             adjustment=adjustment)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--B", type=int, default=500)
    ap.add_argument("--only", default=",".join(PARTS))
    a = ap.parse_args()
    print("| measure and design | share |\n|---|---|")
    for name in a.only.split(","):
        start = time.perf_counter()
        for what, value in PARTS[name](a.sims, a.B):
            print(f"| {what} | {value} |", flush=True)
        print(f"<!-- {name}: {time.perf_counter() - start:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
