"""Amplification by influence (issue 23.1): a model that ignores its neighbours reads "no change",
whatever the graph and whatever the control rule — the rule-based control is a reference, not the
baseline of the verdict. The issue's design: 600 agents on gender identity, a homophilous block
model (95 % of ties within an attribute, mean degree 8), 4 rounds, 20 seeds, every control rule."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import louder
from louder.analysis.stats.network import amplification, case_network_tables
from louder.config import ControlConfig, NetworkConfig
from louder.llm.base import stable_seed
from louder.networks.graphs import build_graph
from louder.networks.rounds import control_rule, run_rounds
from louder.networks.space import InfluenceModel
from louder.simulation.network_run import Answer, influence, seed_agents

RULES = ("majority", "threshold", "degroot")
ATTRIBUTES = ["Female", "Male", "Non-binary"]
CHOICES, TARGET = ["Evacuate", "Stay"], "Evacuate"


@functools.lru_cache(maxsize=64)
def _evacuates(seed: int, stage: str, r: int, n: int) -> np.ndarray:
    """Agent i evacuates at (seed, stage, round r) iff entry i is true: one stream per stage and round, so
    the round-0 answers, each round's and the no-influence arm's are independent coin flips (p = ½)."""
    return np.random.default_rng(stable_seed(seed, stage, r)).random(n) < 0.5


def _answer(seed: int, stage: str, r: int, i: int, n: int) -> Answer:
    """What a fake model that ignores its neighbours says: Evacuate or Stay at random (p = ½)."""
    return Answer("Evacuate" if _evacuates(seed, stage, r, n)[i] else "Stay", "valid", None)


def null_case(seed: int, per_attribute: int = 200, rounds: int = 4):
    """One case of the issue's design, run through ``influence`` with a neighbour-blind model: the
    rounds, the no-influence arm (fresh answers to round 0's question), and a function giving the
    control rule's rows for a rule (the LLM's answers do not depend on it)."""
    agents = seed_agents("gender_identity", ATTRIBUTES, per_attribute)
    graph = build_graph(NetworkConfig(generator="homophily_sbm", seed=seed,
                                      params={"group": "gender_identity", "within": 0.95, "mean_degree": 8}), agents)
    n = int(agents["agent_id"].max()) + 1  # an agent's id (1, 2, …) indexes the draws
    initial = {int(i): _answer(seed, "round0", 0, int(i), n) for i in agents["agent_id"]}

    def ask(agent, message: str, r: int) -> Answer:  # the message is read and ignored
        return _answer(seed, "round", r, agent.attributes["agent_id"], n)

    out = influence(graph, agents, initial, ask, rounds, CHOICES, TARGET, ControlConfig(), seed=seed)
    attr = dict(zip(agents["agent_id"], agents["attribute"]))
    arm = pd.DataFrame([dict(round=r, node=node, agent_id=int(i), attribute=attr[i], status="valid",
                             target=bool(_evacuates(seed, "arm", r, n)[i]))
                        for r in range(1, rounds + 1) for node, i in enumerate(sorted(attr))])
    start = [initial[i] for i in sorted(initial)]

    def control(rule: str) -> pd.DataFrame:
        c = ControlConfig(rule=rule)
        return run_rounds(InfluenceModel(graph, agents, seed=seed), start, rounds,
                          control_rule(c.rule, CHOICES, TARGET, threshold=c.threshold, self_weight=c.self_weight),
                          CHOICES, TARGET)

    return out.rows, arm, control


AMPLIFICATION = ["round", "dpd_round0", "dpd_llm", "dpd_no_influence", "baseline", "change", "amplification", "ci_low",
                 "ci_high", "verdict"]  # the amplification table but for the reference (dpd_control)


def test_a_model_that_ignores_its_neighbours_reads_no_change_under_every_rule():
    """The rule is a reference: on two seeds every rule gives the very same amplification table (estimate,
    interval, verdict), which reads only the LLM's rounds and the no-influence arm. So the 20
    seeds take the rules in turn, each seed's verdict read under its rule (running every rule on every
    seed read each verdict three times)."""
    for seed in range(2):
        rows, arm, control = null_case(seed)
        tables = [case_network_tables(rows, control(rule), B=300, seed=seed, arm=arm)["amplification"]
                  for rule in RULES]
        for t in tables[1:]:
            pd.testing.assert_frame_equal(t[AMPLIFICATION], tables[0][AMPLIFICATION])
            assert not t["dpd_control"].equals(tables[0]["dpd_control"])  # while the references differ
    verdicts, moved = [], []
    for seed in range(20):
        rows, arm, control = null_case(seed)
        rule = RULES[seed % len(RULES)]
        t = case_network_tables(rows, control(rule), B=300, seed=seed, arm=arm)["amplification"]
        final = t[t["final"]].iloc[0]
        assert final["baseline"] == "no-influence arm"
        assert final["ci_low"] <= final["amplification"] <= final["ci_high"]
        verdicts.append(final["verdict"])
        if rule != "degroot":
            moved.append(abs(final["dpd_control"] - final["dpd_round0"]))
    assert verdicts.count("no change") >= 19, verdicts  # every rule among the 20
    # while the rule-based controls do move the DPD on their own (the old verdict read that as influence)
    assert np.mean(moved) > 0.01


@pytest.mark.slow
def test_false_positives_stay_near_the_level_over_many_seeds():
    """Beyond the issue's 20 seeds: over 100 more the 95 % interval excludes 0 about 5 % of the time.
    A false-positive rate does not depend on the number of agents, so these seeds run 100 per attribute
    (half the issue's 200: a group's rate still rests on 100 answers per round, where the bootstrap holds)."""
    wrong = 0
    for seed in range(100, 200):
        rows, arm, _ = null_case(seed, per_attribute=100)
        wrong += amplification(rows, arm, "attribute", B=300, seed=seed).iloc[-1]["verdict"] != "no change"
    assert wrong <= 10  # P(Binomial(100, 0.05) > 10) ≈ 0.01


def test_a_planted_amplification_of_known_size_is_recovered():
    """Influence pushes one attribute's rate from 0.5 to 0.75 in the rounds. The amplification the final
    round should read is E[DPD] of rates (0.75, 0.5, 0.5) minus E[DPD] of (0.5, 0.5, 0.5) at 400 agents per
    attribute, 0.222 by brute force (not 0.25: the no-influence arm's DPD is noise above 0, and the pushed
    round's DPD has its own): the estimate comes within 2 sd of it, and the interval holds it."""
    rng = np.random.default_rng(0)
    draws = lambda p: rng.binomial(400, p, size=(400_000, 3)) / 400  # noqa: E731
    expected = float(np.ptp(draws([0.75, 0.5, 0.5]), axis=1).mean() - np.ptp(draws([0.5, 0.5, 0.5]), axis=1).mean())
    assert expected == pytest.approx(0.222, abs=0.002)
    rows, arm, _ = null_case(7, per_attribute=400)
    rng = np.random.default_rng(7)
    pushed = (rows["round"] > 0) & (rows["attribute"] == "Female") & ~rows["target"].astype(bool) & (
        rng.random(len(rows)) < 0.5)
    rows.loc[pushed, "target"] = True
    amp = amplification(rows, arm, "attribute", B=600, seed=1)
    final = amp.iloc[-1]
    assert final["verdict"] == "amplified" and final["ci_low"] < expected < final["ci_high"]
    assert final["amplification"] == pytest.approx(expected, abs=0.08)  # its sd over seeds: 0.038


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.floats(0.0, 1.0))
def test_the_amplification_interval_contains_its_estimate(seed, n, p):
    rng = np.random.default_rng(seed)
    attrs = np.repeat(["a", "b", "c"], n)
    frames = [pd.DataFrame(dict(round=r, node=np.arange(attrs.size), attribute=attrs, status="valid",
                                target=rng.random(attrs.size) < p)) for r in range(3)]
    llm = pd.concat(frames, ignore_index=True)
    arm = pd.concat([f.assign(target=rng.random(attrs.size) < p) for f in frames[1:]], ignore_index=True)
    for a in (amplification(llm, arm, "attribute", B=200, seed=seed), amplification(llm, None, "attribute", B=200)):
        ok = a["ci_low"].notna()
        assert ((a.loc[ok, "ci_low"] <= a.loc[ok, "amplification"] + 1e-12)
                & (a.loc[ok, "amplification"] <= a.loc[ok, "ci_high"] + 1e-12)).all()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_null_network_runs_on_the_fake_model_read_no_change(tmp_path):
    """The issue's experiment through the whole pipeline: `louder run` on the fake model (no bias, no
    influence), 20 seeds, the control rules taken in turn over the seeds. The rule only changes the
    reference, never the verdict (the test above: every rule gives the same amplification table), so
    running every seed under every rule read each verdict three times: the claim here is the pipeline's,
    ≥ 19 of 20 seeds "no change", with every rule run through it (the rate itself: over 100 seeds above)."""
    verdicts = []
    for seed in range(20):
        rule = RULES[seed % len(RULES)]
        run = louder.run({"models": [f"fake:seed={seed}"], "seed": seed, "influence": {"rounds": 4, "control": {"rule": rule}},
                          "network": {"generator": "homophily_sbm", "seed": seed,
                                      "params": {"group": "gender_identity", "within": 0.95, "mean_degree": 8}},
                          "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"],
                                         "agents": 100, "conditions": ["no_persona"]}},
                         out=tmp_path / f"{seed}-{rule}", progress=False)
        amp = run.analyze(bootstrap=400, write=False, measures=["amplification"])["amplification"]
        final = amp[amp["final"]].iloc[0]
        verdicts.append(final["verdict"])
    assert verdicts.count("no change") >= 19, verdicts
