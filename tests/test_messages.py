"""Issue 32, item 3: messages that help. A misspelt id, value, flag or command names the one meant;
a run that cannot show what it claims says so before it runs; a kind of run with no valid answer
says why and what to change, in the console and in the report — never "run it again"."""

from __future__ import annotations

import json
import warnings

import pytest
from typer.testing import CliRunner

from louder.analysis import analyze
from louder.analysis.report.page import render
from louder.cli import app
from louder.config import build_config
from louder.errors import LouderError, did_you_mean
from louder.status import no_valid_notes

runner = CliRunner()


def fails(*args) -> str:
    """The one line a bad command prints (exit 2)."""
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 2, (args, r.output)
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    return lines[0]


def test_a_misspelt_scenario_id_fails_in_one_line_naming_the_right_id(tmp_path):
    line = fails("run", "--out", tmp_path / "x", "-m", "fake", "--scenario", "emergency_respons")
    assert "unknown scenario 'emergency_respons' (did you mean 'emergency_response'?)" in line


@pytest.mark.parametrize("args, meant", [
    (["run", "-g", "gender_identiy"], "'gender_identity'"),
    (["run", "--population", "us_adult"], "'us_adults'"),
    (["run", "-s", "emergency_response_policy", "--variant", "mandatry"], "'mandatory'"),
    (["run", "-s", "emergency_response", "--wording", "formla"], "'formal'"),
    (["run", "-c", "contextualised"], "'contextualized'"),
    (["run", "--reasoning", "hgh"], "'high'"),
    (["run", "--signal", "name"], "'names'"),
    (["run", "--signal", "names", "--names", "bertrand_mullainathan"], "'bertrand_mullainathan_2004'"),
    (["probe", "association", "--stereotype", "racsm"], "'racism'"),
    (["run", "-m", "fak:seed=1"], "'fake:seed=1'"),
    (["run", "-m", "openia:gpt-4o"], "'openai:gpt-4o'"),
])
def test_did_you_mean_for_every_id(args, meant, tmp_path):
    if "-m" not in args:
        args = [*args, "-m", "fake"]
    line = fails(*args, "--out", tmp_path / "x")
    assert f"(did you mean {meant}?)" in line, line


def test_did_you_mean_for_kinds_and_twin_groups():
    from louder import kinds

    with pytest.raises(LouderError, match=r"unknown kind of run 'explict' \(did you mean 'explicit'\?\)"):
        kinds.get("explict")
    with pytest.raises(LouderError, match=r"not a group of population us_gender_ideology \(did you mean "
                                          r"'gender_identity'\?\)"):
        build_config(dict(population="us_gender_ideology", twins=True, twin_groups=["gender_identiy"]))


def test_did_you_mean_stays_quiet_without_a_close_name():
    assert did_you_mean("zzz", ["emergency_response", "career_path_selection"]) == ""
    assert did_you_mean("Racism", ["racism"]) == " (did you mean 'racism'?)"
    assert did_you_mean("racism", ["racism"]) == ""  # the name itself: nothing to suggest


def test_misspelt_flags_and_commands_suggest_the_right_one(tmp_path):
    r = runner.invoke(app, ["run", "--out", str(tmp_path), "--agnets", "3"])
    assert r.exit_code == 2 and "--agents" in r.output.split("Possible options:")[1].split(",")[0]
    r = runner.invoke(app, ["rn"])
    assert r.exit_code == 2 and "Did you mean 'run'?" in r.output
    r = runner.invoke(app, ["probe", "explict"])
    assert r.exit_code == 2 and "Did you mean 'explicit'?" in r.output


def test_an_unknown_config_field_points_to_the_config_reference(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("agentz: 3\n")
    line = fails("run", config, "--out", tmp_path / "x", "-m", "fake")
    assert "agentz: unknown field" in line and "docs/reference/config.md" in line and "README" not in line


# --- a run that cannot show what it claims ----------------------------------------------------------------

def test_the_fake_model_on_the_association_test_says_so_before_and_after(tmp_path):
    out = tmp_path / "bai"
    cfg = build_config(dict(models=["fake:seed=1"], stereotypes=["racism"], association_trials=2,
                            association_variations=["replication"]))
    from louder import kinds

    with pytest.warns(UserWarning, match="fake:seed=1 writes a filler sentence, not the word pairs the association "
                                         "test reads, so every one of its word-association answers will be invalid"):
        kinds.get("association").build(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = runner.invoke(app, ["probe", "association", "--out", str(out), "-m", "fake:seed=1", "--trials", "2",
                                "--stereotype", "racism", "--variation", "replication"])
    assert r.exit_code == 0, r.output
    after = [x for x in r.output.splitlines() if x.startswith("warning: association:")]
    assert len(after) == 1 and "none of the 2 word-association answers of fake:seed=1 is valid (2 invalid)" in after[0]
    assert "real model" in after[0] and "again" not in after[0]
    a = analyze(out, bootstrap=100)
    notes = [m for m in a.missing if m.startswith("association:")]
    assert len(notes) == 1 and "real model" in notes[0]
    # the folder holds no agent run: its cache is the probe's, so nothing says to run `louder run` "again"
    assert not any("again" in m for m in a.missing), a.missing
    assert "none of the 2 word-association answers" in render(a)


def test_the_chained_decision_test_on_the_fake_model_warns_before_it_runs():
    from louder import kinds

    cfg = build_config(dict(models=["fake"], stereotypes=["racism"], decision_trials=2, decision_variant="chained"))
    with pytest.warns(UserWarning, match="chained decision test's association scores"):
        kinds.get("decision").build(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the relative variant reads its follow-up's choice: nothing to warn
        kinds.get("decision").build(build_config(dict(models=["fake"], stereotypes=["racism"], decision_trials=2)))


def _manifest(kind: str, **counts) -> dict:
    row = {"model": "openai:small", "valid": 0, "invalid": 0, "refused": 0, "error": 0, **counts}
    return {"louder_kind": kind, "status_counts": {"t": {k: row[k] for k in ("valid", "invalid", "refused", "error")}},
            "status_by_case": [row]}


def test_no_valid_answer_says_why_and_what_to_change():
    (invalid,) = no_valid_notes({"a": _manifest("explicit", invalid=12, refused=1)})
    assert invalid.startswith("explicit: none of the 13 explicit-probe answers of openai:small is valid "
                              "(12 invalid, 1 refused)")
    assert "raw_response` in probes.parquet" in invalid and "max_tokens" in invalid
    (refused,) = no_valid_notes({"a": _manifest("simulation", refused=5)})
    assert "declined" in refused and "decisions.parquet" in refused
    (error,) = no_valid_notes({"a": _manifest("beliefs", error=4)})
    assert "--retry-errors" in error and "starts with the cause" in error
    assert no_valid_notes({"a": _manifest("explicit", valid=1, invalid=50)}) == []
    assert no_valid_notes({"a": _manifest("explicit")}) == []  # no answers at all: nothing to diagnose
    two = _manifest("association", invalid=3)
    two["status_by_case"] = [dict(two["status_by_case"][0], model="fake"),
                             dict(model="openai:x", valid=2, invalid=1, refused=0, error=0)]
    (only,) = no_valid_notes({"a": two})
    assert "of fake is valid" in only and "real model" in only


def test_a_valid_run_prints_no_such_warning(tmp_path):
    r = runner.invoke(app, ["run", "--out", str(tmp_path / "r"), "-m", "fake", "--agents", "2", "-s",
                            "emergency_response", "-g", "gender_female_male"])
    assert r.exit_code == 0 and "warning:" not in r.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert no_valid_notes({"simulation": manifest}) == []
