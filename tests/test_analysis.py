"""`louder probe explicit`, `louder analyze` and `louder report` on runs made against a real local
HTTP server (deterministic answers), including a run without probes."""

import json
import platform
import re

import mesa
import pandas as pd
import pytest

from louder.analysis import analyze
from louder.analysis.measures.cases import CASE_COLUMNS
from louder.analysis.report.page import environment_table, write_report
from louder.config import build_config
from louder.errors import LouderError
from louder.probes.explicit import count_probe_calls, run_explicit
from louder.simulation import run_experiment
from louder.types import PROBE_COLUMNS


def cfg(url, **kw):
    base = dict(models=[{"spec": f"openai:fake@{url}", "max_attempts": 2, "timeout_s": 5}],
                scenarios=["emergency_response", "authority_compliance"], groups=["gender_identity"],
                agents=4, concurrency=8, probe_trials=12)
    base.update(kw)
    return build_config(base)


def test_explicit_probes_write_accounted_rows(fake_server, tmp_path):
    probes, m = run_explicit(cfg(fake_server.url), tmp_path)
    assert list(probes.columns) == PROBE_COLUMNS
    assert len(probes) == 2 * 12 == m["model_calls"] == count_probe_calls(cfg(fake_server.url))
    assert set(probes["status"]) == {"valid"}
    assert set(probes["answer"]) <= {"Female", "Male", "Non-binary", "Unknown"}
    assert probes.loc[probes["answer"] == "Unknown", "attribute"].isna().all()
    body = fake_server.requests[0]["body"]
    prompt = body["messages"][0]["content"]
    assert body["temperature"] == 0.2
    assert "What is the most likely gender identity of this person?" in prompt
    assert "Unknown (meaning unable to decide/equally possible)" in prompt
    # A second run is served from the cache.
    again, m2 = run_explicit(cfg(fake_server.url), tmp_path)
    assert m2["model_calls"] == 0 and again.equals(probes)


def test_protest_stray_lines_only_when_paper_faithful(fake_server, tmp_path):
    run_explicit(cfg(fake_server.url, scenarios=["authority_compliance"], probe_trials=1), tmp_path / "a")
    run_explicit(cfg(fake_server.url, scenarios=["authority_compliance"], probe_trials=1, paper_faithful=True),
                 tmp_path / "b")
    prompts = [r["body"]["messages"][0]["content"] for r in fake_server.requests]
    assert "Evacuating now" not in prompts[0] and "Evacuating now" in prompts[1]


def test_default_trials_follow_the_paper():
    c = build_config(dict(groups=["gender_identity", "race_ethnicity"], scenarios=["emergency_response"]))
    assert count_probe_calls(c) == 100 * 3 + 100 * 6


def test_refusals_and_garbage_are_accounted(fake_server, tmp_path):
    def behaviour(n, prompt, body):
        return ["I'm sorry, I can't guess that.", "no idea", json.dumps({"answer": "Female", "rationale": "x"})][
            n % 3]

    fake_server.behaviour = behaviour
    probes, _ = run_explicit(cfg(fake_server.url, scenarios=["emergency_response"], probe_trials=9,
                                 concurrency=1), tmp_path)
    assert probes["status"].value_counts().to_dict() == {"refused": 3, "invalid": 3, "valid": 3}
    a = analyze(tmp_path, bootstrap=500)
    case = a.tables["cases"].iloc[0]
    assert (case["n_valid"], case["n_invalid"], case["n_refused"]) == (3, 3, 3) and case["dpd"] == 1


@pytest.fixture
def full_run(fake_server, tmp_path):
    c = cfg(fake_server.url, conditions=["contextualized", "non_contextualized", "no_persona"])
    run_experiment(c, tmp_path)
    run_explicit(c, tmp_path)
    return tmp_path


def test_analyze_writes_every_table(full_run):
    a = analyze(full_run, bootstrap=1_000)
    cases = pd.read_csv(full_run / "cases.csv")
    assert list(cases.columns) == CASE_COLUMNS
    assert sorted(cases["kind"].unique()) == ["explicit", "implicit"]
    assert len(cases) == 2 * 3 + 2  # implicit: 2 scenarios × 3 conditions; explicit: 2 scenarios
    assert (cases["p_holm"] >= cases["p_value"] - 1e-12).all()
    assert ((cases["ci_low"] <= cases["dpd"] + 1e-9) & (cases["dpd"] <= cases["ci_high"] + 1e-9)).all()
    rates = json.loads(cases.loc[0, "rates"])
    assert set(rates) == {"Male", "Female", "Non-binary"}
    implicit = cases[cases["kind"] == "implicit"]
    assert (implicit["n_valid"] == 12).all()
    for name in ("directions", "rationales", "contrast", "ablation", "attributes"):
        assert (full_run / f"{name}.csv").exists()
    d = pd.read_csv(full_run / "directions.csv")
    d = d[d["condition"] == "contextualized"].set_index("id")
    assert d.loc["evacuate_female_male", "verdict"] in {"aligned", "opposite", "inconclusive"}
    assert d.loc["astronaut_male_female", "verdict"] == "not_run"
    ab = a.tables["ablation"]
    assert set(ab["condition"]) == {"contextualized", "non_contextualized", "no_persona"}
    assert ab.loc[ab["condition"] == "contextualized", "diff_vs_contextualized"].isna().all()
    assert ab.loc[ab["condition"] != "contextualized", "diff_vs_contextualized"].notna().all()
    con = a.tables["contrast"].iloc[0]
    assert con["n_implicit"] == 2 and con["n_explicit"] == 2
    # Same seed, same numbers.
    again = analyze(full_run, bootstrap=1_000, write=False)
    pd.testing.assert_frame_equal(a.tables["cases"], again.tables["cases"])
    assert not a.missing


def test_measures_selects_tables_and_what_they_read_in_memory(full_run):
    """``measures=``: the tables of the measures named (a measure or a table it writes) and of those they
    read, equal to the whole analysis's; nothing written; refused with write=True; an unknown name is one
    line."""
    from louder.errors import LouderError

    whole = analyze(full_run, bootstrap=300, write=False)
    part = analyze(full_run, bootstrap=300, write=False, measures=["ablation", "contrast_cases"])
    # ablation reads cases and attributes (its ``after``; attributes writes choices too); contrast writes
    # contrast and contrast_cases, after cases, attributes and voices (which writes nothing without beliefs)
    assert set(part.tables) == {"ablation", "cases", "attributes", "choices", "contrast", "contrast_cases"}
    for name, t in part.tables.items():
        pd.testing.assert_frame_equal(t, whole.tables[name])
    assert not list(full_run.glob("*.csv")) and not (full_run / "analysis.json").exists()
    with pytest.raises(LouderError, match="pass write=False"):
        analyze(full_run, bootstrap=300, measures=["ablation"])
    with pytest.raises(LouderError, match=r"^measures=: no measure 'ablaton' \(did you mean 'ablation'\?\)"):
        analyze(full_run, bootstrap=300, write=False, measures=["ablaton"])


def test_report_is_self_contained(full_run):
    path = write_report(analyze(full_run, bootstrap=500))
    html = path.read_text()
    assert path == full_run / "report" / "index.html"
    for heading in ("Demographic parity difference per case", "Implicit vs explicit", "Target-decision rate",
                    "Persona-condition ablation", "Literature directions", "Rationales", "Answer accounting",
                    "Manifests"):
        assert heading in html
    assert html.count('src="data:image/svg+xml;base64,') >= 4
    assert not re.search(r'src="(?!data:)', html) and "<link" not in html  # nothing fetched from elsewhere
    # the Environment: the versions the run and the probes recorded, Python first
    env = environment_table(analyze(full_run, bootstrap=200, write=False).manifests)
    assert env["package"].iloc[0] == "python" and list(env.columns) == ["package", "simulation", "explicit_probes"]
    row = env.set_index("package").loc["mesa"]
    assert (row == mesa.__version__).all() and (env.iloc[0, 1:] == platform.python_version()).all()
    assert "<h2>Environment</h2>" in html and f"<td>{mesa.__version__}</td>" in html
    assert "different versions" not in html


def test_environment_names_packages_that_differ_between_parts():
    m = {"simulation": {"package_versions": {"python": "3.11.7", "mesa": "3.3.1", "ray": None}},
         "explicit_probes": {"package_versions": {"python": "3.13.0", "mesa": "3.3.1"}}, "other": {}}
    env = environment_table(m)
    assert env.to_dict("records") == [
        {"package": "python", "simulation": "3.11.7", "explicit_probes": "3.13.0"},
        {"package": "mesa", "simulation": "3.3.1", "explicit_probes": "3.3.1"},
        {"package": "ray", "simulation": "not installed", "explicit_probes": "not installed"}]


def test_report_without_probes_says_what_is_missing(fake_server, tmp_path):
    run_experiment(cfg(fake_server.url), tmp_path)
    a = analyze(tmp_path, bootstrap=300)
    assert set(a.tables["cases"]["kind"]) == {"implicit"}
    html = write_report(a).read_text()
    assert "louder probe explicit" in html and "Not in this run folder" in html
    assert any("one persona condition" in m for m in a.missing)


def test_analyze_refuses_an_empty_folder(tmp_path):
    with pytest.raises(LouderError, match="neither decisions.parquet nor probes.parquet"):
        analyze(tmp_path)
    with pytest.raises(LouderError, match="does not exist"):
        analyze(tmp_path / "nope")
    with pytest.raises(LouderError, match="--bootstrap"):
        analyze(tmp_path, bootstrap=5)


def test_probes_only_folder_reports(fake_server, tmp_path):
    run_explicit(cfg(fake_server.url), tmp_path)
    a = analyze(tmp_path, bootstrap=300)
    assert set(a.tables["cases"]["kind"]) == {"explicit"}
    assert any("no decisions.parquet" in m for m in a.missing)
    assert "Answer accounting" in write_report(a).read_text()
