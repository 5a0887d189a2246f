"""The run-kind registry and the Python API (issue 26): one dispatch for the CLI, batch, dry run and
Python; each kind counts its own calls from the plan it runs; network runs honour variants."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import louder
from louder import kinds
from louder.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SMALL = {"archetype-1m.yaml": 3000, "archetype.yaml": 3000}  # agents for the big archetype examples

# (kind or None = what `louder run` runs, config) — every kind, and the paths inside kinds that add calls
CASES = {
    "simulation, three conditions": (None, {"simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "non_contextualized", "no_persona"]}}),
    "simulation, variants": (None, {"simulation": {"variants": ["base", "mandatory"],
        "scenarios": ["emergency_response_policy"], "groups": ["political_ideology"], "agents": 2}}),
    "simulation, completion path": (None, {"models": ["completion:fake:seed=2"], "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "no_persona"]}}),
    "simulation, score mode": (None, {"simulation": {
        "scenarios": ["negative_information_sharing"], "groups": ["race_ethnicity"], "agents": 2,
        "decision_mode": "score"}}),
    "network, variants": (None, {"network": {
        "generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}}, "influence": {"rounds": 2}, "simulation": {
        "scenarios": ["emergency_response_policy"], "groups": ["gender_identity"], "agents": 10,
        "variants": ["base", "mandatory"]}}),
    "population, twins and variants": (None, {"population": {"file": "us_gender_ideology", "twins": True},
                                              "simulation": {"variants": ["base", "mandatory"],
        "scenarios": ["emergency_response_policy"], "agents": 40}}),
    # issue 41: score mode, where a twin decides with its source's seed (an unchanged ideology twin asks its
    # source's text): each twin's call is its own, so the count is exact whatever the model writes
    "population, twins on every group, score mode": (None, {"population": {"file": "us_gender_ideology",
                                                                           "twins": True}, "simulation": {
        "scenarios": ["emergency_response_policy"], "variants": ["base", "mandatory"], "agents": 10,
        "decision_mode": "score"}}),
    # sequential runs plan their budget; a run that goes to it makes exactly those calls (issue 20)
    "simulation, sequential to its budget": (None, {"sequential": {"budget": 4, "wave": 2, "precision": 0.01},
                                                    "simulation": {"scenarios": ["emergency_response"],
                                                                   "groups": ["gender_identity", "political_ideology"]}}),
    "population, sequential to its budget": (None, {"population": "us_gender_ideology", "sequential": {
        "budget": 40, "wave": 20, "precision": 0.01}, "simulation": {"scenarios": ["emergency_response"]}}),
    # issue 25: wordings × orders × signals (and wordings × variants, and the explicit probes' orders)
    "simulation, wordings × balanced orders × both signals": (None, {"simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["race_black_white"], "agents": 3,
        "conditions": ["contextualized", "no_persona"], "wordings": ["all"], "choice_order": "balanced",
        "signal": ["stated", "names"]}}),
    # issue 34: a human study's paired agents in every arm (a scenario without respondents has none)
    "simulation, a human study × wordings × balanced orders": (None, {"simulation": {
        "scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "no_persona"], "wordings": ["all"], "choice_order": "balanced",
        "humans": str(ROOT / "examples" / "humans-synthetic.csv")}}),
    "simulation, variants, shuffled orders, score mode": (None, {"simulation": {"variants": ["base", "mandatory"],
        "scenarios": ["emergency_response_policy"], "groups": ["gender_identity"], "agents": 2,
        "wordings": ["as_written"], "choice_order": "shuffled", "decision_mode": "score"}}),
    "network, balanced orders": (None, {"network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}},
                                        "influence": {"rounds": 1}, "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 4, "choice_order": "balanced"}}),
    "population, reversed orders": (None, {"population": "us_gender_ideology", "simulation": {
        "scenarios": ["emergency_response"], "agents": 20, "choice_order": "reversed"}}),
    # issue 31.3: the dimensions in every kind (wordings × levels × signals; completion path; twins; waves)
    "population, twins × wordings × reasoning levels": (None, {"population": {"file": "us_gender_ideology",
                                                                              "twins": True}, "simulation": {
        "scenarios": ["emergency_response"], "agents": 12, "wordings": ["as_written", "plain"],
        "reasoning": ["off", "high"], "choice_order": "balanced"}}),
    "network, every dimension, score mode": (None, {"network": {"generator": "watts_strogatz",
                                                                "params": {"k": 2, "p": 0.1}},
                                                    "influence": {"rounds": 2}, "simulation": {
        "scenarios": ["emergency_response"], "groups": ["race_black_white"], "agents": 3, "decision_mode": "score",
        "score_pick": "draw", "wordings": ["all"], "choice_order": "shuffled", "signal": ["stated", "names"],
        "reasoning": ["default", "off"]}}),
    "simulation, completion path, wordings × levels": (None, {"models": ["completion:fake:seed=2"], "simulation": {
        "scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 2,
        "conditions": ["contextualized", "no_persona"], "wordings": ["all"], "reasoning": ["default", "low"]}}),
    "simulation, sequential, every dimension": (None, {"sequential": {"budget": 4, "wave": 2, "precision": 0.01},
                                                       "simulation": {
        "scenarios": ["emergency_response"], "groups": ["race_black_white"], "wordings": ["all"],
        "choice_order": "balanced", "signal": ["stated", "names"], "reasoning": ["off", "high"]}}),
    "population, sequential, every dimension": (None, {"population": "us_gender_ideology", "sequential": {
        "budget": 20, "wave": 10, "precision": 0.01}, "simulation": {"scenarios": ["emergency_response"],
                                                                      "wordings": ["as_written", "formal"],
                                                                      "reasoning": ["off", "high"]}}),
    "explicit probes, balanced orders": ("explicit", {"explicit": {"trials": 4}, "simulation": {
        "scenarios": ["emergency_response"], "groups": ["political_ideology"], "choice_order": "balanced"}}),
    "explicit probes": ("explicit", {"explicit": {"trials": 3}, "simulation": {
        "scenarios": ["emergency_response", "authority_compliance"], "groups": ["gender_identity", "race_ethnicity"]}}),
    "explicit probes, completion path": ("explicit", {"models": ["completion:fake:seed=2"], "explicit": {"trials": 2},
                                                      "simulation": {"scenarios": ["emergency_response"],
                                                                     "groups": ["gender_identity"]}}),
    "beliefs probe": ("beliefs", {"beliefs": {"trials": 3}, "simulation": {
        "scenarios": ["emergency_response", "authority_compliance"], "groups": ["gender_identity", "race_ethnicity"]}}),
    "beliefs probe, completion path": ("beliefs", {"models": ["completion:fake:seed=2"], "beliefs": {"trials": 2},
                                                   "simulation": {"scenarios": ["emergency_response"],
                                                                  "groups": ["gender_identity"]}}),
    "association test": ("association", {"stereotypes": ["racism", "guilt"], "association": {"trials": 2}}),
    "decision test": ("decision", {"stereotypes": ["racism", "guilt"], "decision_test": {"trials": 2}}),
    "decision test, absolute": ("decision", {"stereotypes": ["racism"], "decision_test": {
        "trials": 2, "variant": "absolute"}}),
    # issue 48: a coordination game — a mixed population, personas, a committed sweep and two sizes
    "convention, mixed, personas, committed sweep": (None, {
        "models": {"fake:seed=1,follow=0.9": 0.75, "fake:seed=2,bias=Q:0.8": 0.25},
        "convention": {"sizes": [4, 7], "populations": 2, "steps": 4, "group": "gender_identity",
                       "committed": {"fraction": [0, 0.3]}}}),
}


def _fake(config: dict) -> dict:
    return {**config, "models": config.get("models") or ["fake:seed=1"]}


def _example(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text("utf-8"))
    doc["models"] = ["fake:seed=1"]
    if path.name in SMALL:
        doc["simulation"] = {**doc.get("simulation", {}), "agents": SMALL[path.name]}
    return doc


def _cold_run(tmp_path: Path, kind: str | None, config: dict):
    cfg = louder.api._config(config, {})
    run = louder.run(cfg, out=tmp_path / "run", kind=kind, progress=False)
    m = run.result.manifest
    return cfg, m


@pytest.mark.parametrize("name", CASES)
def test_a_cold_run_makes_exactly_the_calls_its_kind_plans(tmp_path, name):
    """planned_calls (the kind's plan), model_calls (what the run asked) and the dry run agree."""
    kind, config = CASES[name]
    # the fake model cannot write word pairs: planning the association test says so, before the run
    with pytest.warns(UserWarning, match="fake:seed=1 writes a filler sentence") if kind == "association" else (
            contextlib.nullcontext()):
        cfg, m = _cold_run(tmp_path, kind, _fake(config))
        # (a persona shared by policy variants is read back from the cache: a hit, not a call)
        assert m["planned_calls"] == m["model_calls"] == kinds.count_calls(cfg, kind or "simulation") > 0
        assert int(louder.estimate(cfg, kind=kind)["calls"].sum()) == m["planned_calls"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_config_makes_exactly_its_planned_calls(tmp_path, path):
    cfg, m = _cold_run(tmp_path, None, _example(path))
    assert m["louder_kind"] == kinds.for_config(cfg).name
    assert m["planned_calls"] == m["model_calls"] > 0


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_a_network_run_honours_variants(tmp_path):
    """The issue's case: a network config with variants ran the base text only and wrote no variant
    column, while --dry-run announced 150 calls where the run made 120."""
    config = _fake({"network": {"generator": "watts_strogatz", "params": {"k": 4, "p": 0.1}},
                    "influence": {"rounds": 2}, "simulation": {"scenarios": ["emergency_response_policy"],
                                                               "groups": ["gender_identity"], "agents": 10,
                                                               "variants": ["base", "mandatory"]}})
    cfg, m = _cold_run(tmp_path, None, config)
    run = louder.open(tmp_path / "run")
    d, control = run.decisions, run.control
    assert set(d["variant"]) == set(control["variant"]) == {"base", "mandatory"}
    # every agent × round in each variant; personas written once and shared by the variants
    assert len(d) == 2 * 30 * 3 and len(run.personas) == 30
    # personas, then per variant rounds 0-2 and the no-influence arm's rounds 1-2
    assert m["model_calls"] == 30 + 2 * 30 * 3 + 2 * 30 * 2 == m["planned_calls"]
    # the variants' decision prompts differ (the mandatory order is in the text), the personas do not
    assert d.groupby("variant")["persona"].apply(tuple).nunique() == 1
    tables = run.analyze(bootstrap=200)
    scenarios = set(tables["network_rounds"]["scenario"])
    assert scenarios == {"emergency_response_policy", "emergency_response_policy [mandatory]"}
    amp = tables["amplification"]
    assert set(amp["variant"]) == {"base", "mandatory"} and amp["dpd_control"].notna().all()
    assert run.report().exists()
    dry = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "dry"), "--dry-run", "--model", "fake:seed=1",
                                   "--variant", "base", "--variant", "mandatory", "--rounds", "2", "--agents", "10",
                                   "--scenario", "emergency_response_policy", "--group", "gender_identity",
                                   str(_write(tmp_path, {"network": config["network"]}))])
    assert dry.exit_code == 0, dry.output
    assert "330" in dry.output


def _write(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "net.yaml"
    p.write_text(yaml.safe_dump(doc), "utf-8")
    return p


def test_recognition_names_one_kind_per_config():
    base = {"models": ["fake"], "simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}}
    read = lambda extra: kinds.for_config(louder.api._config({**base, **extra}, {})).name  # noqa: E731
    assert read({}) == "simulation"
    assert read({"population": "us_gender_ideology"}) == "population"
    assert read({"network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}}}) == "network"
    assert read({"population": {"file": "us_gender_ideology", "mode": "archetype"}}) == "archetype"
    assert set(kinds.names("probe")) >= {"explicit", "association", "decision", "beliefs"}
    assert read({"convention": {"agents": 4}}) == "convention"  # issue 48
    assert set(kinds.names("run")) == {"simulation", "population", "network", "archetype", "convention"}


def test_a_new_kind_is_one_registration(tmp_path):
    """A kind registered from outside runs through `louder.run`, the dry run and `louder kinds`."""
    from louder.task import Calls, Item, Task

    def echo_task(config):
        items = [Item(("fake:seed=1", i), 1, (Calls("fake:seed=1", 1, "Say anything.", "decision", 20),))
                 for i in range(3)]

        def run_item(ctx, key, tick):
            from louder.llm.base import Request

            reply = ctx.sessions[key[0]].client.call(Request(prompt=f"Say anything {key[1]}.", temperature=0.0,
                                                             max_tokens=20, seed=key[1], replicate=str(key[1])))
            if tick:
                tick()
            return reply.text

        def tables(ctx, results):
            import pandas as pd

            return {"echo.parquet": pd.DataFrame({"text": results})}, {}

        return Task("echo", items, run_item, tables, "echo_manifest.json")

    import sys
    import types

    mod = types.ModuleType("echo_kind")
    mod.echo_task = echo_task
    sys.modules["echo_kind"] = mod
    kinds.register(kinds.Kind("echo", "asks the model three times", "probe echo", "echo_kind:echo_task",
                              ("echo.parquet",), "echo_manifest.json"))
    try:
        run = louder.run({"models": ["fake:seed=1"]}, out=tmp_path / "e", kind="echo", progress=False)
        assert len(run.echo) == 3 and run.manifests["echo_manifest"]["model_calls"] == 3
        assert int(louder.estimate({"models": ["fake:seed=1"]}, kind="echo")["calls"].sum()) == 3
        listed = CliRunner().invoke(app, ["kinds"])
        assert listed.exit_code == 0 and "echo" in listed.output and "asks the model three times" in listed.output
    finally:
        kinds.unregister("echo")
        del sys.modules["echo_kind"]


@pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the run lacks for some measures: expected
def test_the_python_api_runs_analyses_and_reports(tmp_path, monkeypatch):
    """The issue's one-liner, then the rest of the API on the same folder."""
    monkeypatch.chdir(tmp_path)
    r = louder.run({"simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"], "agents": 3},
                    "models": ["fake:seed=1"]}, out="runs/x", progress=False)
    cases = r.analyze()["cases"]
    assert list(cases["kind"]) == ["implicit"] and cases["n_valid"].iloc[0] == 9
    assert (tmp_path / "runs/x/cases.csv").exists()
    again = louder.open("runs/x")
    assert again.tables == ["decisions", "personas"] and len(again.decisions) == 9 and len(again.personas) == 9
    assert again.manifest["louder_kind"] == "simulation" and again.manifest["model_calls"] == 18
    assert again.report() == tmp_path / "runs/x/report/index.html"
    with pytest.raises(AttributeError, match="no probes.parquet"):
        again.probes
    # a rerun resumes from the cache: nothing is asked twice
    rerun = louder.run({"simulation": {"scenarios": ["emergency_response"], "groups": ["gender_identity"],
                                       "agents": 3}}, out="runs/x", models=["fake:seed=1"], progress=False)
    assert rerun.manifest["model_calls"] == 0 and rerun.manifest["cache_hits"] == 18
    # the probe kinds write into the same folder
    louder.run({"models": ["fake:seed=1"], "explicit": {"trials": 4}}, out="runs/x", kind="explicit",
               scenarios=["emergency_response"], groups=["gender_identity"], progress=False)
    assert len(louder.open("runs/x").probes) == 4 and "contrast" in louder.open("runs/x").analyze(bootstrap=200)
    est = louder.estimate({"models": ["fake"]}, agents=2, scenarios=["emergency_response"],
                          groups=["gender_identity"])
    assert list(est["calls"]) == [2 * 3 * 2]
    p = louder.plan(0.3, 3, 0.5)
    assert p.agents_per_attribute and p.power >= 0.8


def test_api_errors_are_one_line(tmp_path):
    with pytest.raises(louder.LouderError, match="agentz"):
        louder.run({"models": ["fake"]}, out=tmp_path / "x", agentz=3)
    # issue 32.4: `out` is no longer required (louder.api.default_out; tests/test_registry.py runs it)
    assert louder.api.default_out(louder.api._config({"models": ["fake"]}, {})).parent == Path("runs")
    with pytest.raises(louder.LouderError, match="does not exist"):
        louder.open(tmp_path / "nowhere")
    with pytest.raises(louder.LouderError, match="unknown kind"):
        louder.estimate({"models": ["fake"]}, kind="nonsense")
    with pytest.raises(louder.LouderError, match="effect"):
        louder.plan(0, 3, 0.5)


def test_every_public_name_is_typed_and_documented():
    import inspect

    assert set(louder.__all__) >= {"run", "open", "estimate", "plan", "Run", "LouderError"}
    for name in louder.__all__:
        obj = getattr(louder, name)
        if name.startswith("__"):
            continue
        assert inspect.getdoc(obj), name
        if inspect.isfunction(obj):
            hints = inspect.signature(obj)
            assert hints.return_annotation is not inspect.Signature.empty, name
    for name in ("decisions", "personas", "manifest", "manifests", "tables", "analyze", "report", "table"):
        assert inspect.getdoc(getattr(louder.Run, name)), name


def _quickstart(tmp_path: Path, **parameters):
    import sys

    sys.path.insert(0, str(ROOT / "docs" / "tools"))
    import notebooks  # docs/tools/notebooks.py: notebook execution with parameters

    nb = notebooks.execute(ROOT / "examples" / "quickstart.ipynb", tmp_path, parameters)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    return nb


def test_quickstart_notebook_runs_on_the_fake_model_and_its_second_half_on_a_served_model(fake_server, tmp_path):
    """One execution of the notebook, top to bottom: the first half on the fake model (its figure inline,
    its report written); the second half at the notebook's own size (2 agents per attribute) on a model
    served over HTTP (the openai client) that answers some decisions off the list and refuses some; the
    notebook names the embedded model there (whose own end-to-end run is tests/test_e2e_embedded.py's)."""
    import nbformat

    sys.path.insert(0, str(ROOT / "docs" / "tools"))
    import notebooks
    from fake_openai import misbehaving

    nb = nbformat.read(str(ROOT / "examples" / "quickstart.ipynb"), as_version=4)
    assert 'model = "embedded"' in nb.cells[notebooks.parameters_cell(nb)].source
    fake_server.behaviour = misbehaving()
    spec = f"openai:fake@{fake_server.url}"
    nb = _quickstart(tmp_path, model=spec, agents=20)
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells if c.cell_type == "code"])
    assert "image/png" in outputs  # the figure is shown inline
    assert (tmp_path / "runs/quickstart-fake/report/index.html").exists()
    assert louder.open(tmp_path / "runs/quickstart-fake").manifest["config"]["models"][0]["spec"].startswith("fake:")
    d = louder.open(tmp_path / "runs/quickstart-real").decisions
    assert len(d) == 2 * 3 and set(d["status"]) <= {"valid", "invalid", "refused", "error"}
    assert {"invalid", "refused"} <= set(d["status"]), d["status"].tolist()
    assert louder.open(tmp_path / "runs/quickstart-real").manifest["config"]["models"][0]["spec"] == spec
