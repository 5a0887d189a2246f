"""Statistics of rounds of influence: rates, flips, amplification, cluster bootstrap."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from louder.analysis.measures.network import amplification_figure, rounds_rates_figure
from louder.analysis.stats.network import amplification, dpd_by_round, flip_rates, gap_interval, rates_by_round, verdict

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from network_null import false_positive_rate  # noqa: E402


def rows_from(decisions: dict[int, list], attrs: list[str]) -> pd.DataFrame:
    """decisions[round] = per node 1 (target) / 0 / None (error)."""
    out = []
    for r, ds in decisions.items():
        for node, d in enumerate(ds):
            prev = decisions.get(r - 1, [None] * len(ds))[node] if r > 0 else None
            out.append({"node": node, "attribute": attrs[node], "round": r,
                        "status": "valid" if d is not None else "error",
                        "target": pd.NA if d is None else bool(d),
                        "changed": pd.NA if r == 0 or d is None or prev is None else d != prev})
    return pd.DataFrame(out)


def test_rates_and_flips_by_hand():
    attrs = ["A", "A", "A", "B", "B", "B"]
    rows = rows_from({0: [1, 0, 0, 0, 0, None], 1: [1, 1, 0, 0, 1, 0]}, attrs)
    rates = rates_by_round(rows, "attribute").set_index(["round", "attribute"])
    assert rates.loc[(0, "A"), "rate"] == pytest.approx(1 / 3) and rates.loc[(0, "B"), "n_valid"] == 2
    assert rates.loc[(0, "B"), "n_error"] == 1 and rates.loc[(1, "B"), "rate"] == pytest.approx(1 / 3)
    flips = flip_rates(rows, "attribute").set_index("attribute")
    assert flips.loc["A", "flip_rate"] == pytest.approx(1 / 3)
    assert flips.loc["B", "n_both_valid"] == 2 and flips.loc["B", "flip_rate"] == pytest.approx(1 / 2)
    d = dpd_by_round(rows, "attribute", B=200).set_index("round")
    assert d.loc[0, "dpd"] == pytest.approx(1 / 3) and d.loc[1, "dpd"] == pytest.approx(1 / 3)
    assert d.loc[0, "ci_low"] <= d.loc[0, "dpd"] <= d.loc[0, "ci_high"]


def test_amplification_verdicts():
    rng = np.random.default_rng(0)
    n = 4000
    attrs = np.where(np.arange(n) < n // 2, "A", "B")
    base = (rng.random(n) < 0.5).astype(int)
    control = rows_from({0: list(base), 1: list(base)}, list(attrs))
    amp = amplification(control, control, "attribute", B=300).set_index("round")
    assert (amp["amplification"] == 0).all() and (amp["verdict"] == "no change").all()
    # the LLM pushes A towards the target in round 1: the gap grows far beyond noise
    pushed = np.where((attrs == "A") & (rng.random(n) < 0.4), 1, base)
    llm = rows_from({0: list(base), 1: list(pushed)}, list(attrs))
    amp = amplification(llm, control, "attribute", B=300).set_index("round")
    assert amp.loc[1, "verdict"] == "amplified" and amp.loc[1, "ci_low"] > 0.1
    assert amplification(control, llm, "attribute", B=300).set_index("round").loc[1, "verdict"] == "damped"
    assert verdict(-0.1, 0.2) == "no change" and verdict(float("nan"), 1) == "cannot be judged"
    assert rounds_rates_figure({"LLM": rates_by_round(llm, "attribute"),
                                "control": rates_by_round(control, "attribute")}) is not None
    assert amplification_figure(amp.reset_index()) is not None and rounds_rates_figure({}) is None


def test_cluster_bootstrap_holds_its_level_under_no_bias_and_agent_level_does_not():
    """No-bias fake in archetype mode (benchmarks/network_null.py): 200 seeds; the cluster bootstrap's
    95 % interval of r_a − r_b excludes 0 about 5 % of the time; the agent-level one far more often."""
    fp = false_positive_rate(200, "cluster", B=300)
    assert 0.015 <= fp <= 0.095, fp
    assert false_positive_rate(30, None, B=200) > 0.25


def test_gap_interval_detects_a_real_gap_with_clusters():
    rows = pd.DataFrame({"node": range(2000), "attribute": ["a"] * 1000 + ["b"] * 1000,
                         "cluster": np.repeat(np.arange(40), 50), "status": "valid",
                         "target": np.r_[np.arange(1000) % 10 < 7, np.arange(1000) % 10 < 3]})
    g, lo, hi = gap_interval(rows, "attribute", "a", "b", cluster="cluster", B=300)
    assert g == pytest.approx(0.4) and lo > 0.3 and hi < 0.5
    # a third attribute in the rows is no part of the gap between a and b (it was once counted as b's)
    third = pd.DataFrame({"node": range(2000, 2500), "attribute": "c", "cluster": 40 + np.arange(500) // 50,
                          "status": "valid", "target": True})
    assert gap_interval(pd.concat([rows, third]), "attribute", "a", "b", cluster="cluster", B=300)[0] == g
