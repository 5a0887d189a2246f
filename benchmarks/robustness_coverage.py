"""Simulated calibration of robustness.csv's pooled interval and heterogeneity test (issue 25), and of
its verdicts and of cases.csv's ``significant`` (issue 31; docs/robustness.md).

Coverage (default): two attributes × ``n`` agents answer in each of W wordings (crossed, as in a run:
every agent answers in every wording). On the logit scale: base rate, an agent's own shift (SD
``agent``), a wording × attribute interaction with mean 0 and SD τ (so the population DPD is 0 unless
an effect is planted), and a planted attribute effect. For each setting the share of runs whose pooled
interval (``robustness.pooled_dpd``) excludes 0 and whose heterogeneity test
(``robustness.heterogeneity_p``) is below 0.05.

Verdicts (``--verdicts``): how often each verdict is given, on runs of ``--cases`` simulated cases
(three attributes, three wordings, two orders, agent SD 0.5; no bias / the same bias in every wording,
two attributes tied / a bias under one wording) and on the fake model (``--fake-seeds`` seeds; three
wordings, balanced order), with the rules of issue 25 beside them on the same data
(``old_verdict``) — and per null fake run whether a case reads significant, by Holm (now) and by
``dpd > threshold`` (before).

    python benchmarks/robustness_coverage.py [--sims 300] [--B 400] [--n 40]
    python benchmarks/robustness_coverage.py --verdicts [--sims 200] [--B 300] [--n 40] [--cases 4] [--fake-seeds 40]
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time

import numpy as np
import pandas as pd

from louder.analysis.stats import robustness as R

SETTINGS = [  # W, τ, agent SD, planted logit effect
    (1, 0, 0, 0), (3, 0, 0, 0), (3, 0, 1.0, 0), (3, 0.5, 0, 0), (3, 1.0, 0, 0), (5, 0.5, 0, 0), (8, 0.5, 0, 0),
    (3, 0, 0, 0.5), (3, 0, 0, 1.0), (5, 0, 0, 1.0), (3, 0.5, 0, 1.0)]


def draw(W: int, n: int, base: float, tau: float, agent_sd: float, seed: int, effect: float = 0.0):
    """Agents × wordings matrices (Y target, V valid), attribute and order stratum of one simulated case."""
    rng = np.random.default_rng(seed)
    k = 2
    inter = rng.normal(0, tau, size=(W, k))
    attr = np.repeat(np.arange(k), n)
    u = rng.normal(0, agent_sd, size=k * n)
    Y, V = np.zeros((k * n, W)), np.ones((k * n, W))
    for w in range(W):
        eta = np.log(base / (1 - base)) + inter[w, attr] + u + effect * (attr == 1)
        Y[:, w] = rng.random(k * n) < 1 / (1 + np.exp(-eta))
    return Y, V, attr, np.tile(np.arange(n) % 2, k)


# --- verdicts (issue 31) ---------------------------------------------------------------------------

def old_verdict(row: pd.Series) -> str:
    """The rules before issue 31, on the same row: heterogeneity first and unadjusted, the unadjusted
    interval, and sign stability asking every wording to agree on the highest and the lowest attribute."""
    if row["p_heterogeneity"] < 0.05:
        return "wording-dependent"
    if row["pooled_ci_low"] > 0:
        stab = row["old_stability"]
        return "robust" if np.isnan(stab) or stab >= 2 / 3 else "wording-dependent"
    return "underpowered" if not row["mdd"] <= 0.3 else "no disparity"


def old_stability(decisions: pd.DataFrame, row: pd.Series) -> float:
    """Share of wordings whose highest- and lowest-rate attributes are the pooled ones (ties agree)."""
    pooled = pd.Series(json.loads(row["pooled_rates"]), dtype=float)
    case = (decisions[["model", "condition", "scenario", "group"]] == row[["model", "condition", "scenario",
                                                                            "group"]].to_numpy()).all(axis=1)
    v = decisions[case & (decisions["status"] == "valid")]
    units = v.assign(t=v["target"].astype(float)).groupby(["wording", "attribute"])["t"].mean().unstack()
    units = units.reindex(columns=pooled.index)
    if len(units) < 2:
        return float("nan")
    hi, lo = pooled.idxmax(), pooled.idxmin()
    return float(np.mean([np.isclose(u[hi], u.max()) and np.isclose(u[lo], u.min()) for _, u in units.iterrows()]))


def simulated_run(effects, n: int, cases: int, seed: int) -> pd.DataFrame:
    """Decisions of one run: ``cases`` cases, three attributes × n agents, each agent answering in three
    wordings (overall logits −0.4, 0, 0.4) under one of two orders; attribute a0 gets effects[w] on the
    logit scale in wording w, a1 and a2 none (tied); an agent's own logit shift of SD 0.5."""
    rng = np.random.default_rng(seed)
    base = np.array([-0.4, 0.0, 0.4])
    frames = []
    for c in range(cases):
        attr = np.repeat(np.arange(3), n)
        u = rng.normal(0, 0.5, attr.size)
        for w in range(3):
            eta = base[w] + u + np.where(attr == 0, effects[w], 0.0)
            y = rng.random(attr.size) < 1 / (1 + np.exp(-eta))
            frames.append(pd.DataFrame(dict(
                model="m", condition="c", scenario=f"s{c}", group="g", attribute=[f"a{a}" for a in attr],
                agent_id=np.arange(attr.size) + 1, wording=f"w{w + 1}", choice_order=np.where(
                    np.arange(attr.size) % 2, "A|B", "B|A"), signal="stated", status="valid", target=y)))
    return pd.concat(frames, ignore_index=True)


def tally(decisions: pd.DataFrame, B: int, seed: int, counts: dict) -> None:
    """Add one run's verdicts (now and before) to ``counts``: per case, and whether the run has any."""
    t = R.robustness_table(decisions, B=B, seed=seed)
    t["old_stability"] = [old_stability(decisions, r) for _, r in t.iterrows()]
    for rule, verdicts in (("now", t["verdict"]), ("before", t.apply(old_verdict, axis=1))):
        counts[rule, "cases"].update(verdicts)
        counts[rule, "runs"].update(set(verdicts))
    counts["n", "cases"][0] += len(t)
    counts["n", "runs"][0] += 1


def print_tally(label: str, counts: dict) -> None:
    for what in ("runs", "cases"):
        n = counts["n", what][0]
        cells = []
        for v in R.VERDICTS:
            cells.append(f"{counts['now', what][v] / n:.3f} ({counts['before', what][v] / n:.3f})")
        print(f"| {label} | {what} ({n}) | " + " | ".join(cells) + " |", flush=True)


def fake_runs(setting: str, seeds: range, agents: int) -> list[pd.DataFrame]:
    """One fake-model run per seed (three wordings, balanced order, emergency_response × gender_identity):
    made as one run with a model per seed — each model's rows are exactly its own run's."""
    import louder

    spec = {"no bias, 4 scenarios": "fake:seed={s}", "equal bias": "fake:seed={s},bias=female:0.9,pick=Evacuate",
            "one wording": "fake:seed={s},bias=female:0.9,pick=Evacuate,only=forecasters"}[setting]
    four = setting.startswith("no bias")  # the four paper scenarios, in three wordings each has
    cfg = {"models": [spec.format(s=s) for s in seeds], "simulation": {
        "scenarios": ["emergency_response", "authority_compliance", "negative_information_sharing",
                      "career_path_selection"] if four else ["emergency_response"],
        "groups": ["gender_identity"], "agents": agents, "choice_order": "balanced",
        "wordings": ["as_written", "plain", "formal"] if four else ["plain", "formal", "tradeoff_first"]}}
    with tempfile.TemporaryDirectory() as d:
        decisions = louder.run(cfg, out=f"{d}/run", progress=False).decisions
    return [g for _, g in decisions.groupby("model", sort=False)]


def verdicts(a) -> None:
    from louder.analysis.engine import select
    from louder.analysis.engine.declarations import Input
    from louder.analysis.stats import cases as C
    from louder.analysis.stats import rates as A

    print(f"Simulated runs of {a.cases} cases, {a.n} agents per attribute, B = {a.B}: share of runs with a case "
          "given each verdict, and share of cases; now (before)\n")
    print("| setting | share of | " + " | ".join(R.VERDICTS) + " |")
    print("|---|---|" + "---|" * len(R.VERDICTS))
    for label, effects in (("no bias", (0, 0, 0)), ("equal bias, logit 2", (2, 2, 2)),
                           ("one wording, logit 2.2", (2.2, 0, 0))):
        counts = collections.defaultdict(collections.Counter, {("n", "cases"): [0], ("n", "runs"): [0]})
        for s in range(a.sims):
            tally(simulated_run(effects, a.n, a.cases, 5000 + s), a.B, s, counts)
        print_tally(label, counts)
    if not a.fake_seeds:
        return
    print(f"\nFake model, {a.fake_seeds} seeds, {a.fake_agents} agents per attribute, three wordings, balanced "
          "order; one case per run (emergency_response × gender_identity) with a bias, four without\n")
    print("| setting | share of | " + " | ".join(R.VERDICTS) + " |")
    print("|---|---|" + "---|" * len(R.VERDICTS))
    for setting in ("no bias, 4 scenarios", "equal bias", "one wording"):
        start = time.perf_counter()
        counts = collections.defaultdict(collections.Counter, {("n", "cases"): [0], ("n", "runs"): [0]})
        significant = collections.Counter()
        for d in fake_runs(setting, range(a.fake_seeds), a.fake_agents):
            tally(d, a.B, 0, counts)
            cases = C.with_holm(C.implicit_cases(A.attribute_table(select.rows(d, Input("decisions"))), B=a.B))
            significant["holm"] += bool(cases["significant"].any())
            significant["threshold"] += bool((cases["dpd"] > cases["threshold"]).any())
            significant["holm ≥ 0.05"] += int((cases["significant"] & (cases["p_holm"] >= 0.05)).sum())
        print_tally(setting, counts)
        print(f"|   | runs with a significant case: {significant['holm']} (dpd > threshold: "
              f"{significant['threshold']}); significant with Holm p ≥ 0.05: {significant['holm ≥ 0.05']} "
              f"({time.perf_counter() - start:.0f} s) |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--B", type=int, default=400)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--verdicts", action="store_true", help="verdict frequencies instead of the coverage table")
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--fake-seeds", type=int, default=40)
    ap.add_argument("--fake-agents", type=int, default=40)
    a = ap.parse_args()
    if a.verdicts:
        verdicts(a)
        return
    print("| wordings W | τ | agent SD | planted logit effect | P(interval excludes 0) | P(p_het < 0.05) |")
    print("|---|---|---|---|---|---|")
    for W, tau, asd, eff in SETTINGS:
        lows = het = 0
        for s in range(a.sims):
            Y, V, attr, stratum = draw(W, a.n, 0.5, tau, asd, 1000 + s, effect=eff)
            lows += R.pooled_dpd(Y, V, attr, stratum, B=a.B, seed=s).low > 0
            if W > 1:
                x = np.array([[Y[attr == j, w].sum() for j in range(2)] for w in range(W)])
                n = np.array([[V[attr == j, w].sum() for j in range(2)] for w in range(W)])
                het += R.heterogeneity_p(x, n) < 0.05
        print(f"| {W} | {tau} | {asd} | {eff} | {lows / a.sims:.3f} | {'–' if W == 1 else f'{het / a.sims:.3f}'} |",
              flush=True)


if __name__ == "__main__":
    main()
