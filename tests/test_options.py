"""Issue 41.2: a measure declares its options, and they are reached one way — `louder analyze RUN --set
MEASURE.OPTION=VALUE`, `Run.analyze(options=...)` —, listed by `louder measures`, recorded in
analysis.json (another value: another analysis), refused in one line with "did you mean". The flags of
earlier releases (--control, --reference, --random-slopes, --adjust, --observed, --predictions,
--patterns) are shorthands: each writes byte for byte the tables its --set form writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import louder
from louder.analysis.engine import options as O
from louder.analysis.engine import registry
from louder.analysis.engine.run import recorded_settings, settings_of
from louder.cli import app
from louder.errors import LouderError

pytestmark = pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the runs lack: expected
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def _analyze(run: Path, *args, ok: bool = True) -> str:
    r = runner.invoke(app, ["analyze", str(run), "-B", "200", *map(str, args)], env={"COLUMNS": "160"})
    assert (r.exit_code == 0) == ok, (args, r.output[-2000:], r.exception)
    return " ".join(r.output.split())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("options")
    one = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}
    plain = louder.run({"models": ["fake:seed=1,bias=female:0.8"], "simulation": {**one, "agents": 8}},
                       out=base / "plain", progress=False).path
    louder.run({"models": ["fake:seed=1,bias=female:0.8"], "simulation": one, "explicit": {"trials": 6}},
               out=plain, kind="explicit", progress=False)
    score = louder.run({"models": ["fake:seed=2,bias=female:0.9,noise=0.3"], "simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"], "agents": 8,
        "decision_mode": "score"}}, out=base / "score", progress=False).path
    pop = louder.run({"models": ["fake:seed=1,bias=liberal:0.9"], "population": "us_gender_ideology",
                      "simulation": {"scenarios": ["emergency_response_policy"], "variants": ["base", "mandatory"],
                                     "agents": 60}}, out=base / "pop", progress=False).path
    observed = base / "observed.yaml"
    rates = [("gender_identity", a, r) for a, r in (("Female", 0.7), ("Male", 0.5), ("Non-binary", 0.6))]
    rates += [("political_ideology", a, r) for a, r in (("Very Liberal", 0.75), ("Liberal", 0.7), ("Moderate", 0.6),
                                                         ("Conservative", 0.5), ("Very Conservative", 0.45))]
    observed.write_text(yaml.safe_dump([dict(scenario=s, group=g, attribute=a, rate=r, n=400, source="invented",
                                             year=2026, measure="share who evacuated")
                                        for s in ("emergency_response", "emergency_response_policy")
                                        for g, a, r in rates]))
    predictions = base / "predictions.yaml"
    predictions.write_text(yaml.safe_dump({"predictions": [dict(
        id="mine-1", scenario="emergency_response", group="gender_identity", prediction="women evacuate more",
        higher=["Female"], lower=["Male"])]}))
    patterns = base / "patterns.yaml"
    shutil.copy(ROOT / "louder" / "data" / "analysis" / "rationale_patterns.yaml", patterns)
    text = patterns.read_text()
    patterns.write_text(text.replace("safety", "safe"))  # a file of one's own, not louder's
    return dict(base=base, plain=plain, score=score, pop=pop, observed=observed, predictions=predictions,
                patterns=patterns)


def _fresh(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    for f in to.glob("*.csv"):
        f.unlink()
    (to / "analysis.json").unlink(missing_ok=True)
    return to


# (run, the flags, their --set form)
SHORTHANDS = [
    ("pop", ["--control", "political_ideology"], ["--set", "conditional.control=political_ideology"]),
    ("score", ["--reference", "gender_identity=Female"], ["--set", "discrimination.reference=gender_identity=Female"]),
    ("score", ["--random-slopes"], ["--set", "discrimination.random_slopes=true"]),
    ("pop", ["--adjust", "parity"], ["--set", "sensitivity.calibration=parity"]),
    # a run of one group: raking to observed rates of two groups whose means differ never converges and
    # runs its 500 cycles (43 s), which says nothing of the flags
    ("plain", ["--adjust", "observed", "--observed", "{observed}"],
     ["--set", "sensitivity.calibration=observed", "--set", "sensitivity.observed={observed}",
      "--set", "voices.observed={observed}"]),
    ("plain", ["--observed", "{observed}"], ["--set", "voices.observed={observed}",
                                             "--set", "sensitivity.observed={observed}"]),
    ("plain", ["--predictions", "{predictions}"], ["--set", "directions.predictions={predictions}",
                                                   "--set", "voices.predictions={predictions}"]),
    ("plain", ["--patterns", "{patterns}"], ["--set", "rationales.patterns={patterns}",
                                             "--set", "persona_audit.patterns={patterns}"]),
]


@pytest.mark.parametrize("run,flags,forms", SHORTHANDS, ids=[" ".join(f[:1]) + f"-{i}" for i, (_, f, _) in
                                                             enumerate(SHORTHANDS)])
def test_each_flag_writes_byte_for_byte_what_its_set_form_writes(runs, tmp_path, run, flags, forms):
    fill = lambda args: [a.format(**{k: v for k, v in runs.items() if isinstance(v, Path)}) for a in args]  # noqa
    a = _fresh(runs[run], tmp_path / "flag")
    b = _fresh(runs[run], tmp_path / "set")
    _analyze(a, *fill(flags))
    _analyze(b, *fill(forms))
    tables = sorted(f.name for f in a.glob("*.csv"))
    assert tables == sorted(f.name for f in b.glob("*.csv"))
    for name in tables:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    recorded = [json.loads((x / "analysis.json").read_text())["options"] for x in (a, b)]
    assert recorded[0] == recorded[1] and recorded[0]  # the same options, recorded once each
    if flags[0] in ("--control", "--adjust", "--reference", "--random-slopes"):
        default = _fresh(runs[run], tmp_path / "default")
        _analyze(default)
        written = {f.name: f.read_bytes() for f in default.glob("*.csv")}
        assert any(written.get(n) != (a / n).read_bytes() for n in tables)  # the option changed a table


def test_louder_measures_lists_every_option_with_its_default_and_shorthand():
    r = runner.invoke(app, ["measures"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    for m in registry.measures():
        assert m.name in text
        for o in m.options:
            assert f"{m.name}.{o.name}" in text and (o.flag is None or o.flag in text)
    assert "discrimination.random_slopes │ bool │ false │ --random-slopes" in text
    assert "refusals" not in text  # (an outside measure only once installed: tests/test_registry.py)


def test_a_different_option_is_a_different_analysis_and_the_default_given_is_the_default(runs, tmp_path):
    run = _fresh(runs["pop"], tmp_path / "pop")
    _analyze(run)
    assert "up to date" in _analyze(run, "--set", "discrimination.random_slopes=false")  # the default, given
    assert "wrote" in _analyze(run, "--set", "conditional.control=political_ideology")  # another analysis
    assert (run / "conditional.csv").exists()
    assert json.loads((run / "analysis.json").read_text())["options"] == {
        "conditional": {"control": ["political_ideology"]}}
    assert "up to date" in _analyze(run, "--control", "political_ideology")  # the shorthand: the same analysis
    assert "wrote" in _analyze(run)
    assert not (run / "conditional.csv").exists()  # analysed again without the option: its table is gone


def test_the_api_reaches_the_options_and_reads_back_the_same_analysis(runs, tmp_path):
    run = _fresh(runs["pop"], tmp_path / "pop")
    _analyze(run, "--set", "conditional.control=political_ideology")
    r = louder.open(run)
    assert "conditional" in r.analyze(bootstrap=200, options={"conditional": {"control": ["political_ideology"]}})
    assert r.analyze(bootstrap=200, control=["political_ideology"])["conditional"].equals(r.table("conditional"))
    assert "conditional" not in r.analyze(bootstrap=200, write=False)


@pytest.mark.parametrize("args,message", [
    (["--set", "conditionl.control=x"], "no measure 'conditionl' (did you mean 'conditional'?)"),
    (["--set", "conditional.contrl=x"], "measure conditional has no option 'contrl' (did you mean 'control'?)"),
    (["--set", "conditional"], "write MEASURE.OPTION=VALUE"),
    (["--set", "discrimination.random_slopes=maybe"], "not a yes/no value"),
    (["--set", "sensitivity.calibration=parityy"], "use one of parity, observed (did you mean 'parity'?)"),
    (["--set", "sensitivity.calibration=observed"], "needs observed rates"),
    (["--set", "discrimination.reference=gender_identity"], "write GROUP=ATTRIBUTE"),
])
def test_a_bad_option_is_one_line(runs, args, message):
    r = runner.invoke(app, ["analyze", str(runs["pop"]), "-B", "200", *args])
    assert r.exit_code == 2 and message in " ".join(r.output.split()) and "Traceback" not in r.output, r.output
    assert len(r.output.strip().splitlines()) <= 3  # one line (wrapped at most by the terminal)


def test_options_of_python_are_checked_as_those_of_the_command_line():
    with pytest.raises(LouderError, match="did you mean 'control'"):
        settings_of(options={"conditional": {"contrl": ["x"]}})
    with pytest.raises(LouderError, match="no setting 'contrl'"):
        settings_of(contrl=["x"])
    s = settings_of(options={"conditional": {"control": "political_ideology"}, "discrimination": {"random_slopes": False}})
    assert s.options == {"conditional": {"control": ("political_ideology",)}}  # a default given is not recorded
    assert O.parse_set(["conditional.control=a", "conditional.control=b"]) == {"conditional": {"control": ["a", "b"]}}


def test_an_analysis_json_of_an_earlier_louder_reads_as_its_shorthands(runs, tmp_path):
    run = _fresh(runs["pop"], tmp_path / "pop")
    (run / "analysis.json").write_text(json.dumps({"bootstrap": 300, "seed": 2, "predictions": None, "patterns": None,
                                                   "observed": None, "adjust": "parity", "random_slopes": True,
                                                   "reference": [], "control": ["political_ideology"]}))
    s = recorded_settings(run)
    assert (s.bootstrap, s.seed) == (300, 2)
    assert s.options == {"conditional": {"control": ("political_ideology",)},
                         "discrimination": {"random_slopes": True}, "sensitivity": {"calibration": "parity"}}
