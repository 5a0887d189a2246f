"""Issue 32, item 1: an id is an id. A scenario or group is keyed by its id everywhere, whether a
command names it by id or by the path of its file: the how-to's own files, run and probed by path,
pair; two files with one id are one line; the contrast has a per-case view."""

from __future__ import annotations

import json
import shlex
import shutil

import numpy as np
import pandas as pd
import pytest
from test_docs import DOCS, blocks, commands
from typer.testing import CliRunner

from louder.analysis import stats
from louder.analysis.stats.contrast import CONTRAST_CASE_COLUMNS, contrast_cases
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError
from louder.scenarios import DATA, load_group, load_scenario
from louder.simulation.runner import plan_cases

runner = CliRunner()


def louder(*args) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, (args, r.output[-2000:], r.exception)
    return r.output


@pytest.mark.parametrize("page", ["add-a-scenario.md", "add-a-group.md"])
def test_the_how_tos_own_files_run_and_probed_by_path_pair(page, tmp_path, monkeypatch):
    """Exactly the how-to's commands (its files written from its own blocks): the run and the probe
    have the same keys, and `analyze` misses no explicit probe."""
    monkeypatch.chdir(tmp_path)
    ran = []
    for block in blocks((DOCS / "how-to" / page).read_text("utf-8")):
        if block.mark == "write":
            (tmp_path / block.arg).write_text(block.body, "utf-8")
        for cmd in commands(block):
            argv = shlex.split(cmd, comments=True)
            assert argv[0] == "louder", cmd
            louder(*argv[1:])
            ran.append(argv[1])
    assert ran == ["run", "probe", "analyze"], ran  # the page runs, probes and analyses its own files
    out = next(p for p in (tmp_path / "runs").iterdir())
    decisions, probes = pd.read_parquet(out / "decisions.parquet"), pd.read_parquet(out / "probes.parquet")
    keys = ["model", "scenario", "group"]
    implicit = set(map(tuple, decisions[keys].drop_duplicates().to_numpy()))
    explicit = set(map(tuple, probes[keys].drop_duplicates().to_numpy()))
    assert implicit == explicit and len(implicit) == 1
    (_, scenario, group), = implicit
    assert not scenario.endswith(".yaml") and not group.endswith(".yaml")  # ids, not file names
    missing = json.loads((out / "analysis.json").read_text())["missing"]
    assert not any(m.startswith("explicit probes") for m in missing), missing
    cases = pd.read_csv(out / "cases.csv")
    assert sorted(cases["kind"]) == ["explicit", "implicit"] and cases["scenario"].nunique() == 1
    paired = pd.read_csv(out / "contrast_cases.csv")
    assert list(paired.columns) == CONTRAST_CASE_COLUMNS and len(paired) == 1
    row = paired.iloc[0]
    assert row["note"] != row["note"]  # NaN: nothing missing
    assert row["diff_ci_low"] <= row["difference"] <= row["diff_ci_high"]
    assert row["difference"] == pytest.approx(row["implicit_dpd"] - row["explicit_dpd"])


def test_a_built_in_file_named_by_path_is_the_same_case_as_by_id(tmp_path):
    """A copy of a built-in scenario (same id, same text) named by path: the same case keys, seeds
    and cache keys as the built-in named by id, so the same decisions."""
    copy = tmp_path / "mine" / "emergency_response.yaml"
    copy.parent.mkdir()
    shutil.copy(DATA / "scenarios" / "emergency_response.yaml", copy)
    group = tmp_path / "gender.yaml"
    shutil.copy(DATA / "groups" / "gender_identity.yaml", group)
    by_id = build_config(dict(scenarios=["emergency_response"], groups=["gender_identity"], models=["fake"]))
    by_path = build_config(dict(scenarios=[str(copy)], groups=[str(group)], models=["fake"]))
    assert plan_cases(by_id) == plan_cases(by_path) == [("fake", "contextualized", "emergency_response",
                                                          "gender_identity")]
    a, b = tmp_path / "a", tmp_path / "b"
    louder("run", "--out", a, "-m", "fake", "--agents", 3, "-s", "emergency_response", "-g", "gender_identity")
    out = louder("run", "--out", b, "-m", "fake", "--agents", 3, "-s", copy, "-g", group)
    assert "cache_hits: 0" in out
    da, db = (pd.read_parquet(d / "decisions.parquet").drop(columns=["run_id", "latency_s"]) for d in (a, b))
    pd.testing.assert_frame_equal(da, db)


def test_an_id_finds_the_file_the_run_names():
    refs = [str(DATA / "scenarios" / "authority_compliance.yaml")]
    assert load_scenario("authority_compliance", refs).id == "authority_compliance"
    with pytest.raises(LouderError, match="unknown group 'my_group'"):
        load_group("my_group", ["gender_identity"])


def test_two_files_with_one_id_are_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (DATA / "scenarios" / "emergency_response.yaml").read_text("utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "mine.yaml").write_text(text.replace("name: ", "name: Mine ", 1), "utf-8")
    (tmp_path / "other" / "mine.yaml").write_text(text, "utf-8")
    with pytest.raises(LouderError) as e:
        build_config(dict(scenarios=["mine.yaml", "other/mine.yaml"]))
    msg = str(e.value)
    assert "\n" not in msg and "'mine.yaml' and 'other/mine.yaml'" in msg and "'emergency_response'" in msg
    assert "another `id:`" in msg
    # a file with the id of a built-in one, beside the built-in: the same collision
    with pytest.raises(LouderError, match="two files with the same id 'emergency_response'"):
        build_config(dict(scenarios=["emergency_response", "other/mine.yaml"]))
    # one file named twice (by two paths): listed more than once
    with pytest.raises(LouderError, match="listed more than once: 'mine.yaml' and './mine.yaml'"):
        build_config(dict(scenarios=["mine.yaml", "./mine.yaml"]))
    r = runner.invoke(app, ["run", "--out", "x", "-m", "fake", "-s", "mine.yaml", "-s", "other/mine.yaml"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output


# --- the per-case contrast ----------------------------------------------------------------------------

def _cases(kind: str, key: tuple, dpd: float, condition: str) -> dict:
    return dict(kind=kind, model=key[0], condition=condition, scenario=key[1], group=key[2], dpd=dpd, ci_low=0.0,
                ci_high=1.0, significant=False, underpowered=False, n_valid=40 if kind == "implicit" else 60)


def _attrs(kind: str, key: tuple, condition: str, targets: list[int], n: int) -> list[dict]:
    return [dict(kind=kind, model=key[0], condition=condition, scenario=key[1], group=key[2], attribute=a,
                 n_valid=n, n_target=t) for a, t in zip("AB", targets)]


def test_contrast_cases_pairs_by_key_and_keeps_one_sided_cases():
    both, imp_only, exp_only = ("m", "s1", "g"), ("m", "s2", "g"), ("m", "s3", "g")
    cases = pd.DataFrame([_cases("implicit", both, 0.5, "contextualized"), _cases("implicit", both, 0.1, "no_persona"),
                          _cases("explicit", both, 0.05, "explicit"), _cases("implicit", imp_only, 0.2,
                                                                             "contextualized"),
                          _cases("explicit", exp_only, 0.1, "explicit")])
    attrs = pd.DataFrame(_attrs("implicit", both, "contextualized", [30, 10], 40)
                         + _attrs("implicit", both, "no_persona", [22, 18], 40)
                         + _attrs("explicit", both, "explicit", [20, 17], 60))
    t = contrast_cases(cases, attrs, B=500)
    assert list(t.columns) == CONTRAST_CASE_COLUMNS
    assert [tuple(r) for r in t[["condition", "scenario"]].fillna("-").to_numpy()] == [
        ("contextualized", "s1"), ("contextualized", "s2"), ("no_persona", "s1"), ("-", "s3")]
    paired = t[t["scenario"] == "s1"].set_index("condition")
    assert paired.loc["contextualized", "difference"] == pytest.approx(0.5 - 0.05)
    assert paired.loc["no_persona", "difference"] == pytest.approx(0.1 - 0.05)
    assert (paired["note"] == "").all()
    assert "louder probe explicit" in t.loc[t["scenario"] == "s2", "note"].iloc[0]
    assert "louder run" in t.loc[t["scenario"] == "s3", "note"].iloc[0]
    assert t.loc[t["scenario"] != "s1", "difference"].isna().all()


def test_implicit_explicit_difference_null_and_planted():
    """The difference's interval contains its estimate; with both DPDs 0 it covers 0 in at least
    95 % of 200 simulated cases (it is conservative); a planted implicit DPD of 0.6 (60 agents per
    attribute) beside an explicit one of 0 (300 answers) is found every time."""
    rng = np.random.default_rng(7)
    covered, found = 0, 0
    for i in range(200):
        x = rng.binomial(60, 0.4, size=3)
        counts = rng.multinomial(300, [0.3, 0.3, 0.3, 0.1])[:3]
        d = stats.implicit_explicit_difference(np.full(3, 60), x, counts, 300, B=400, seed=i)
        assert d.low <= d.estimate <= d.high
        covered += d.low <= 0 <= d.high
        xp = np.array([rng.binomial(60, 0.15), rng.binomial(60, 0.75), rng.binomial(60, 0.4)])
        p = stats.implicit_explicit_difference(np.full(3, 60), xp, counts, 300, B=400, seed=i)
        assert p.low <= p.estimate <= p.high
        found += p.low > 0
    assert covered >= 190 and found == 200, (covered, found)
    assert np.isnan(stats.implicit_explicit_difference([10], [3], [4, 5], 10).estimate)
