"""Issue 30.2–3 and 30.6: reasoning effort as an experiment dimension — config, plan, runs, the
analysis of the DPD per level and of its change (null on many seeds, a planted change recovered), the
thinking in the rationale analysis, the dry run and the report."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import louder
from louder.analysis.engine import select
from louder.analysis.engine.declarations import Input
from louder.analysis.stats.reasoning import change_verdict, level_changes, reasoning_table
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError

CASE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}
ALPHA = 0.05


# --- config ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra, match", [
    ({"decision_mode": "score", "reasoning": ["off", "high"]}, r"reasoning: level 'high' with decision_mode: score"),
    ({"reasoning": ["off", "off"]}, "listed more than once"),
    ({"reasoning": ["loud"]}, "reasoning"),
])
def test_bad_reasoning_config_is_one_line(extra, match):
    with pytest.raises(LouderError, match=match) as e:
        build_config({"models": ["fake"], "simulation": {**CASE, **extra}})
    assert "\n" not in str(e.value)


def test_score_mode_takes_off_and_default_and_archetype_mode_refuses_levels():
    assert build_config({"models": ["fake"], "simulation": {**CASE, "decision_mode": "score",
                                                            "reasoning": ["off"]}}).simulation.reasoning == ["off"]
    # issue 31.3: population runs take reasoning levels (as every agent run); archetype mode cannot
    assert build_config({"models": ["fake"], "population": "us_gender_ideology", "simulation": {
        "scenarios": ["emergency_response"], "reasoning": ["high"]}}).simulation.reasoning == ["high"]
    with pytest.raises(LouderError, match="reasoning: archetype mode"):
        build_config({"models": ["fake"], "population": {"file": "us_gender_ideology", "mode": "archetype"},
                      "simulation": {"scenarios": ["emergency_response"], "reasoning": ["off", "default"],
                                     "decision_mode": "score"}})


def test_a_backend_that_cannot_honour_a_level_is_one_line(tmp_path):
    r = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "e"), "-m", "embedded", "-n", "1", "-s",
                                 "emergency_response", "-g", "gender_identity", "--reasoning", "high"])
    assert r.exit_code == 2 and "model embedded cannot honour reasoning level 'high'" in r.output
    assert "Traceback" not in r.output


# --- the statistics, on simulated tables -----------------------------------------------------------

def _simulate(rates_low, rates_high, n, seed, same=0.0):
    """agents × 2 levels; ``same``: the chance an agent answers at the high level as it did at the low one
    (answers of one agent are correlated, as in a real run)."""
    rng = np.random.default_rng(seed)
    k = len(rates_low)
    attr = np.repeat(np.arange(k), n)
    u = rng.random(k * n)
    low = u < np.asarray(rates_low)[attr]
    u2 = np.where(rng.random(k * n) < same, u, rng.random(k * n))
    high = u2 < np.asarray(rates_high)[attr]
    Y = np.column_stack([low, high]).astype(float)
    return Y, np.ones_like(Y), attr


@pytest.mark.parametrize("rates, n, same", [((0.5, 0.5, 0.5), 200, 0.6), ((0.8, 0.5, 0.5), 150, 0.3)])
def test_no_change_reads_no_change_on_many_seeds(rates, n, same):
    """No change between levels (no bias, or the same bias at both): 100 seeds, at most α of them read
    a change, and the change interval contains its own estimate every time."""
    verdicts = []
    for seed in range(100):
        r = level_changes(*_simulate(rates, rates, n, seed, same), B=400, seed=seed)[1]
        assert r["change_ci_low"] <= r["change"] <= r["change_ci_high"]
        verdicts.append(r["verdict"])
    flagged = sum(v in ("raises", "lowers") for v in verdicts)
    assert flagged <= ALPHA * len(verdicts), verdicts
    assert verdicts.count("no change") >= 0.9 * len(verdicts) or rates[0] != 0.5


def test_a_planted_change_is_recovered_within_its_interval():
    """Low: no bias; high: one attribute at 0.9 (a change of DPD 0.4). The interval contains the
    planted change on (nearly) every seed and excludes 0 on most."""
    covered, raised = 0, 0
    for seed in range(60):
        r = level_changes(*_simulate((0.5, 0.5, 0.5), (0.9, 0.5, 0.5), 200, seed), B=400, seed=seed)[1]
        covered += r["change_ci_low"] <= 0.4 <= r["change_ci_high"]
        raised += r["verdict"] == "raises"
    assert covered >= 0.95 * 60 and raised >= 0.8 * 60, (covered, raised)


def test_change_verdicts():
    assert change_verdict(0.05, 0.5) == "raises" and change_verdict(-0.5, -0.1) == "lowers"
    assert change_verdict(-0.2, 0.25) == "no change" and change_verdict(-0.2, 0.45) == "underpowered"


# --- end to end on the fake model ------------------------------------------------------------------

def _levels_run(tmp_path, spec, agents=60):
    cfg = {"models": [spec], "simulation": {**CASE, "agents": agents, "reasoning": ["off", "high"]}}
    return louder.run(cfg, out=tmp_path, progress=False)


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_run_at_two_levels_finds_a_planted_change_and_no_change_without_one(tmp_path):
    """The pipeline end to end: a bias the fake model has at `high` only is found as a change at
    `high`; a bias it has at both levels reads as no change (3 seeds each)."""
    for seed in range(3):
        planted = _levels_run(tmp_path / f"p{seed}", f"fake:seed={seed},think=inline,level=high:female:0.95", 150)
        t = planted.analyze(bootstrap=500, write=False, measures=["reasoning"])["reasoning"]
        high = t[t["level"] == "high"].iloc[0]
        assert high["reference"] == "off" and high["change_ci_low"] <= high["change"] <= high["change_ci_high"]
        # planted: high has Female at 0.95 and the others at 0.5, off none: a change of about 0.45
        assert high["verdict"] == "raises" and high["change_ci_low"] <= 0.45 <= high["change_ci_high"]
        assert high["thinking_share"] == 1.0 and t[t["level"] == "off"].iloc[0]["thinking_share"] == 0.0
        same = _levels_run(tmp_path / f"s{seed}", f"fake:seed={seed},bias=female:0.9", 150)
        t = same.analyze(bootstrap=500, write=False, measures=["reasoning"])["reasoning"]
        assert t[t["level"] == "high"].iloc[0]["verdict"] in ("no change", "underpowered")


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_levels_share_personas_and_the_case_tables_read_the_reference_level(tmp_path):
    run = _levels_run(tmp_path, "fake:seed=3,think=field,level=high:female:0.9", agents=5)
    d = run.decisions
    assert len(d) == 2 * len(run.personas) and set(d["reasoning"]) == {"off", "high"}
    assert d.groupby("agent_id")["persona"].nunique().max() == 1  # one persona per agent, both levels
    assert (d.loc[d["reasoning"] == "high", "thinking"].notna()).all() and d.loc[d["reasoning"] == "off",
                                                                                 "thinking"].isna().all()
    tables = run.analyze(bootstrap=200)
    assert tables["cases"]["n_valid"].iloc[0] == len(d) // 2 == len(select.rows(d, Input("decisions")))
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["planned_calls"] == m["model_calls"] == 45  # 15 personas, 30 decisions
    assert m["thinking"]["decisions"]["with_thinking"] == 15
    thinking = tables["rationales"].query("analysis == 'thinking'")
    female = thinking.query("attribute == 'Female' and pattern == 'attribute_words'").iloc[0]
    male = thinking.query("attribute == 'Male' and pattern == 'attribute_words'").iloc[0]
    assert (female["share"], male["share"], female["reasoning"]) == (1.0, 0.0, "high")  # the fake names its bias word
    assert "Reasoning levels" in run.report(bootstrap=200).read_text("utf-8")
    assert reasoning_table(d.iloc[0:0]).empty


def test_dry_run_counts_the_levels_and_their_thinking_tokens(tmp_path):
    est = louder.estimate({"models": ["openai:gpt-5", "openai:gpt-4o", "embedded"],
                           "simulation": {**CASE, "agents": 10, "reasoning": ["off", "high"]}})
    by = est.set_index("model")
    assert (by["calls"] == 90).all()  # 30 personas + 2 × 30 decisions
    assert by.loc["openai:gpt-5", "reasoning_tokens"] > by.loc["openai:gpt-4o", "reasoning_tokens"] > 0
    assert by.loc["embedded", "reasoning_tokens"] == 0
    r = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "d"), "--dry-run", "-m", "openai:gpt-5", "-n", "3",
                                 "-s", "emergency_response", "-g", "gender_identity", "--reasoning", "off",
                                 "--reasoning", "high"])
    assert r.exit_code == 0 and "of which thinking" in r.output and "2 level(s) (off, high)" in r.output


def test_a_sequential_run_decides_on_the_reference_level():
    """Issue 31.3: a sequential run takes several levels; each case is tested on the least thinking (the
    level cases.csv reads), the other levels are asked of the same agents as the waves go."""
    cfg = build_config({"models": ["fake"], "simulation": {**CASE, "reasoning": ["high", "off"]},
                        "sequential": {"budget": 20}})
    from louder.simulation.sequential import tested

    assert tested(cfg, "emergency_response", None) == [({}, {"signal": "stated", "wording": "as_written",
                                                             "reasoning": "off", "intervention": "none"})]
