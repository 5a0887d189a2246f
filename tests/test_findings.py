"""Issue 43: findings first. The run's design in one card and its findings in sentences — per model, cases
significant of N with the largest disparity and its interval, implicit against explicit, what is
underpowered and what `louder plan` says it would take, what is missing — are the same text at the top of
the report, in ``Run.summary()`` and at the end of ``louder analyze``. In score mode with argmax picks the
findings and the console's ``sig`` rest on the probability DPD (the test that can see the effect), the
sampled DPD beside it: a planted propensity gap reads significant, no gap reads null."""

from __future__ import annotations

import html
import json
import re
import warnings

import pandas as pd
import pytest
from typer.testing import CliRunner

import louder
from louder.analysis import analyze
from louder.analysis.report.findings import findings
from louder.analysis.stats.cases import PROBABILITY, headline
from louder.cli import app
from louder.errors import LouderWarning

pytestmark = pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")
ONE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}
PLANTED = "fake:seed=1,bias=female:0.9"


def _run(out, model: str, **simulation):
    return louder.run({"models": [model], "simulation": {**ONE, **simulation}}, out=out, progress=False)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Agents and explicit probes on the fake model with a bias planted for "female" (0.9 against 0.5)."""
    out = tmp_path_factory.mktemp("findings") / "run"
    cfg = {"models": [PLANTED], "simulation": {**ONE, "agents": 40}, "explicit": {"trials": 6}}
    louder.run(cfg, out=out, progress=False)
    louder.run(cfg, out=out, kind="explicit", progress=False)
    return out


def test_the_planted_case_is_named_with_its_interval(planted):
    a = analyze(planted, bootstrap=1000, write=False)
    found = findings(a)
    cases = a.tables["cases"]
    imp = cases[cases["kind"] == "implicit"].iloc[0]
    assert bool(imp["significant"])  # the planted gap is found …
    (agents,) = [f for f in found.by_model[PLANTED] if f.text.startswith("What the agents do")]
    # … and said with the DPD, its interval and the attributes at either end, as cases.csv has them
    assert "1 of 1 case differs significantly" in agents.text
    assert f"emergency_response × gender_identity (contextualized), DPD {imp['dpd']:.2f} " \
           f"[{imp['ci_low']:.2f}, {imp['ci_high']:.2f}]: Female " in agents.text
    assert agents.section == "Demographic parity difference per case (cf. Fig. 3)"
    text = " ".join(found.lines())
    assert "What the model says when asked" in text and "Implicit against explicit" in text
    card = dict(found.card)
    assert card["Models"] == PLANTED and card["Scenarios"] == "emergency_response"
    assert card["Agents"].startswith("120 (40 per attribute")
    assert card["Model calls"].replace(",", "") == str(sum(
        json.loads(p.read_text())["model_calls"] for p in planted.glob("*manifest.json")))
    assert card["Cost"] == "free (local models)" and card["louder"].startswith(louder.__version__)


def test_summary_report_and_console_say_the_same(planted, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(planted, run)
    r = CliRunner().invoke(app, ["analyze", str(run), "-B", "500"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    a = analyze(run, bootstrap=500)  # read back: the same analysis
    found = findings(a)
    printed = " ".join(r.output.split())
    tail = printed[printed.index("Findings"):]
    for line in found.lines(where=False, missing=False):  # at the end of louder analyze, in order
        assert " ".join(line.split()) in tail
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LouderWarning)
        summary = dict(louder.open(run).summary().blocks)
    assert summary["Findings"] == found.lines(missing=False)
    assert summary["Design"] == found.card_lines()
    assert CliRunner().invoke(app, ["report", str(run)]).exit_code == 0
    page = (run / "report" / "index.html").read_text("utf-8")
    top = page[page.index("<main>"):page.index('<section class="sec" id="demographic')]
    for f in found.by_model[PLANTED]:  # the report's top, each linked to its section
        assert html.escape(f.text) in top
        assert f'href="#{"demographic-parity-difference-per-case-cf-fig-3"}"' in top
    assert '<dl class="card">' in top


def test_underpowered_cases_say_what_louder_plan_says_it_takes(tmp_path):
    from louder.analysis.stats.power import UNDERPOWERED, plan

    a = analyze(_run(tmp_path / "small", "fake:seed=1", agents=5).path, bootstrap=500, write=False)
    (weak,) = [f for f in findings(a).by_model["fake:seed=1"] if "underpowered" in f.text]
    m = re.search(r"--attributes (\d+) --base-rate ([\d.]+)", weak.text)
    need = plan(UNDERPOWERED, int(m.group(1)), float(m.group(2))).agents_per_attribute
    assert f"takes about {need:,} valid answers per attribute" in weak.text
    assert weak.text.startswith("1 of 1 implicit case is underpowered")


def _first_table(output: str) -> list[dict[str, str]]:
    """The rows of the first console table (the cases), by header."""
    lines = output.splitlines()
    h = next(i for i, line in enumerate(lines) if line.startswith("┃"))
    names = [c.strip() for c in lines[h].strip("┃").split("┃")]
    rows = []
    for line in lines[h + 2:]:
        if not line.startswith("│"):
            break
        rows.append(dict(zip(names, [c.strip() for c in line.strip("│").split("│")])))
    return rows


def test_score_mode_argmax_rests_on_the_probability_dpd(tmp_path):
    """P(target) 0.9 for "female", 0.5 for the others: every agent's argmax is the first-listed choice (the
    ties go to it), so the picks' DPD is 0 while the probability DPD is 0.4. The console's sig and the
    findings read the probability test; the sampled DPD stands beside it."""
    run = _run(tmp_path / "score", PLANTED, agents=30, decision_mode="score", score_pick="argmax").path
    r = CliRunner().invoke(app, ["analyze", str(run), "-B", "1000"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    cases = pd.read_csv(run / "cases.csv")  # cases.csv keeps both tests as written
    assert cases["dpd"].iloc[0] == 0 and not cases["significant"].iloc[0]
    assert cases["dpd_p"].iloc[0] == pytest.approx(0.4) and cases["p_value_p"].iloc[0] < 0.01
    (row,) = _first_table(r.output)
    assert row["sig"] == "yes" and row["test"] == "probability" and row["dpd"] == "0.400"
    assert row["sampled dpd (p)"].startswith("0.000")  # the other test, beside it
    text = " ".join(" ".join(findings(analyze(run, bootstrap=1000)).lines()).split())
    assert "1 of 1 case differs significantly" in text and "probability DPD 0.40 [0.40, 0.40]" in text
    assert "the sampled DPD of the picks reads 0.00 beside it" in text


def test_score_mode_draws_rest_on_the_sampled_dpd(tmp_path):
    """With drawn picks the sampled DPD is a test of the model's probabilities itself: it stays the headline."""
    run = _run(tmp_path / "draw", PLANTED, agents=10, decision_mode="score", score_pick="draw").path
    a = analyze(run, bootstrap=500, write=False)
    assert not (headline(a.tables["cases"], probability=False)["test"] == PROBABILITY).any()
    assert "Score mode with argmax picks" not in " ".join(findings(a).lines())


@pytest.mark.slow
def test_score_mode_without_a_gap_reads_null(tmp_path):
    """No gap (the fake model's probabilities perturbed per agent, noise=0.3: the permutation test has real
    variation to see): null in at least 19 of 20 seeds, in the findings and the headline."""
    flagged = []
    for seed in range(20):
        run = _run(tmp_path / f"null{seed}", f"fake:seed={seed},noise=0.3", agents=20, decision_mode="score",
                   score_pick="argmax").path
        a = analyze(run, bootstrap=500, write=False)
        h = headline(a.tables["cases"], probability=True)
        assert (h["test"] == PROBABILITY).all()
        text = " ".join(findings(a).lines())
        assert ("none of 1 case differs significantly" in text) == (not h["h_significant"].any())
        flagged += [seed] if h["h_significant"].any() else []
    assert len(flagged) <= 1, flagged
