"""Issue 31.2 and 32.4–5: the measure registry (one measure = one module + one registration), the
analysis computed once per data state, ``Run.table`` for every table, the summary, warnings, the
default run folder, and console tables that fit the terminal."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import louder
from louder.analysis import analyze
from louder.analysis.engine import registry
from louder.cli import app
from louder.errors import LouderError, LouderWarning

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "tools"))
import hooks  # noqa: E402  (docs/tools/hooks.py)
from test_docs import blocks  # noqa: E402  (the page's fenced blocks and their docs-test marks)

pytestmark = pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")  # what the runs lack: expected
runner = CliRunner()
CASE = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A run with agents and explicit probes, on the fake model with a planted bias."""
    out = tmp_path_factory.mktemp("reg") / "run"
    cfg = {"models": ["fake:seed=1,bias=female:0.9"], "simulation": {**CASE, "agents": 8}}
    louder.run(cfg, out=out, progress=False)
    louder.run({**cfg, "explicit": {"trials": 6}}, out=out, kind="explicit", progress=False)
    return out


def _copy(run: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run, to)
    for f in to.glob("*.csv"):
        f.unlink()
    (to / "analysis.json").unlink(missing_ok=True)
    return to


HOW_TO = ROOT / "docs" / "how-to" / "add-a-metric.md"


def how_to_files() -> dict[str, str]:
    """The files docs/how-to/add-a-metric.md writes (its package of a measure), by path."""
    return {b.arg: b.body for b in blocks(HOW_TO.read_text("utf-8")) if b.mark == "write"}


@pytest.fixture
def toy_measure():
    """The status-DPD measure of docs/how-to/add-a-metric.md, imported from the page itself."""
    code = how_to_files()["louder-refusals/louder_refusals/__init__.py"]
    spec = importlib.util.spec_from_loader("louder_refusals", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(code, "louder_refusals/__init__.py", "exec"), module.__dict__)
    yield registry.get("refusals")
    registry.unregister("refusals")


# --- a measure is one module and one registration ---------------------------------------------------

def test_a_new_measure_appears_in_analyze_the_report_the_api_and_the_docs(small_run, tmp_path, toy_measure):
    run = _copy(small_run, tmp_path / "run")
    r = runner.invoke(app, ["analyze", str(run), "-B", "200"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    written = pd.read_csv(run / "refusals.csv")  # analyze wrote it, with the declared columns
    assert list(written.columns) == toy_measure.tables[0].column_names
    assert len(written) == 1 and written["n_answers"].iloc[0] == 24 and written["status"].iloc[0] == "refused"
    assert (written["ci_low"] <= written["status_dpd"]).all() and (written["status_dpd"] <= written["ci_high"]).all()
    assert "Refused DPD per case" in r.output  # its console table
    assert json.loads((run / "analysis.json").read_text())["tables"]["refusals"] == "refusals.csv"
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0
    page = (run / "report" / "index.html").read_text("utf-8")
    assert "<h2>Refusals per attribute</h2>" in page and 'data-figure="refusals/dpd"><img' in page  # its section
    assert "refused answers differ by attribute" not in page or 'href="#refusals-per-attribute"' in page
    pd.testing.assert_frame_equal(louder.open(run).table("refusals"), written)  # the API
    assert "### `refusals.csv`" in hooks.analysis_tables_markdown()  # the output reference
    # its option's flag, declared on the option only: grown by `louder analyze` (with its help), taken by Python
    helped = runner.invoke(app, ["analyze", "--help"], env={"COLUMNS": "200"})
    assert helped.exit_code == 0 and "--refusal-status" in helped.output and "the status whose share" in helped.output
    r = runner.invoke(app, ["analyze", str(run), "-B", "200", "--refusal-status", "invalid"])
    assert r.exit_code == 0, r.output
    assert json.loads((run / "analysis.json").read_text())["options"] == {"refusals": {"status": "invalid"}}
    assert set(louder.open(run).analyze(bootstrap=200, refusal_status="error")["refusals"]["status"]) == {"error"}


def test_the_registry_refuses_what_it_cannot_run(toy_measure):
    taken = registry.Measure("again", "x", (registry.Table("refusals", "x", ()),), build=lambda a: {})
    with pytest.raises(LouderError, match="already written by measure refusals"):
        registry.register(taken)
    with pytest.raises(LouderError, match="needs nothing_like_this"):
        registry.register(registry.Measure("odd", "x", (), build=lambda a: {}, needs=("nothing_like_this",)))
    registry.register(registry.Measure("loop_a", "x", (), build=lambda a: {}, after=("loop_b",)))
    registry.register(registry.Measure("loop_b", "x", (), build=lambda a: {}, after=("loop_a",)))
    try:
        with pytest.raises(LouderError, match="circle"):
            registry.measures()
    finally:
        registry.unregister("loop_a")
        registry.unregister("loop_b")


def test_a_measure_of_another_package_registers_through_its_entry_point(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    (tmp_path / "louder_counts.py").write_text(
        "from louder.analysis import Column, Input, Measure, Table, register\n"
        "register(Measure('counts', 'rows per case', (Table('counts', 'rows', (Column('n', 'rows'),)),),\n"
        "                 build=lambda a: {'counts': __import__('pandas').DataFrame({'n': [len(a.decisions)]})},\n"
        "                 inputs=(Input('decisions'),), needs=('decisions',)))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        registry._load(EntryPoint("counts", "louder_counts", registry.GROUP))
        assert "counts" in [m.name for m in registry.measures()]
        assert "counts" in runner.invoke(app, ["measures"], env={"COLUMNS": "200"}).output
    finally:
        registry.unregister("counts")
    with pytest.raises(LouderError, match="measure 'broken' .* cannot be loaded: ModuleNotFoundError"):
        registry._load(EntryPoint("broken", "no_such_module_here", registry.GROUP))


def _louder_files() -> dict[str, str]:
    import hashlib

    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ROOT / "louder").rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_a_measure_packaged_outside_louder_installs_and_runs_in_a_fresh_venv(tmp_path):
    """Issue 41's "done when": the how-to's package — one option, one selection of the dimensions, one
    table — installed by pip into a new virtual environment; there `louder measures` lists it with its
    option, `louder analyze --set refusals.status=…` writes its table, `louder report` shows its section
    and `Run.table` returns it; and no file of louder changed."""
    import site
    import subprocess

    before = _louder_files()
    for path, body in how_to_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body, "utf-8")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    target = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                                 capture_output=True, text=True).stdout.strip())
    # louder (this checkout) and what it needs, from this environment: the venv holds only the new package
    (target / "louder_env.pth").write_text("\n".join([str(ROOT), *site.getsitepackages()]) + "\n")

    def run(*args, ok=True):
        r = subprocess.run([str(py), *map(str, args)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "COLUMNS": "200", "PYTHONPATH": ""})
        assert (r.returncode == 0) == ok, (args, r.stdout[-3000:], r.stderr[-3000:])
        return r.stdout + r.stderr

    run("-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "./louder-refusals")
    assert list(target.glob("louder_refusals-0.1.0.dist-info"))
    # The commands run one after the other in one process of the venv's Python (the installed package found
    # there as `louder` finds it; one start-up, not ten): each command's exit code and output, and the
    # refusals table as that command left it.
    out = tmp_path / "runs" / "first"
    steps = [
        ["measures"],
        ["run", "--out", out, "--agents", 6, "--wording", "all", "--scenario", "emergency_response", "--group",
         "gender_identity", "--model", "fake:seed=1"],
        ["analyze", out, "-B", 200],
        ["analyze", out, "-B", 200, "--set", "refusals.status=invalid"],
        ["analyze", out, "-B", 200, "--refusal-status", "invalid"],  # its flag
        ["analyze", "--help"],
        ["analyze", out, "--set", "refusal.status=error"],
        ["report", out],
    ]
    driver = textwrap.dedent(f'''
        import json, shutil, sys, warnings
        from pathlib import Path
        from typer.testing import CliRunner
        import louder
        from louder.cli import app

        warnings.simplefilter("ignore")
        done = []
        for i, args in enumerate({[[str(a) for a in step] for step in steps]!r}):
            r = CliRunner().invoke(app, args, env={{"COLUMNS": "200"}})
            for name in ("refusals.csv", "analysis.json"):
                if (Path({str(out)!r}) / name).exists():
                    shutil.copy(Path({str(out)!r}) / name, Path({str(tmp_path)!r}) / f"{{i}}-{{name}}")
            done.append((r.exit_code, r.output + (repr(r.exception) if r.exit_code not in (0, 2) else "")))
        r = louder.open({str(out)!r})
        t = r.table("refusals")
        assert set(t["status"]) == {{"invalid"}}, t
        u = r.analyze(bootstrap=200, options={{"refusals": {{"status": "error"}}}})["refusals"]
        assert set(u["status"]) == {{"error"}}, u
        assert r.analyze(bootstrap=200, refusal_status="error")["refusals"].equals(u)
        print(json.dumps(done))
        print("api ok")
    ''')
    printed = run("-c", driver)
    assert "api ok" in printed
    done = json.loads(printed.split("api ok")[0].strip().splitlines()[-1])
    text = [" ".join(output.split()) for _, output in done]
    codes = [code for code, _ in done]
    assert codes == [0, 0, 0, 0, 0, 0, 2, 0], list(zip(codes, text))
    assert "refusals" in text[0] and "refusals.status" in text[0] and "louder_refusals" in text[0]
    t = pd.read_csv(tmp_path / "2-refusals.csv")
    assert set(t["status"]) == {"refused"} and t["wording"].nunique() > 1  # every wording, each its own row
    assert "Refused DPD per case" in text[2]
    t = pd.read_csv(tmp_path / "3-refusals.csv")
    assert set(t["status"]) == {"invalid"} and "Invalid DPD per case" in text[3]
    assert json.loads((tmp_path / "3-analysis.json").read_text())["options"] == {"refusals": {"status": "invalid"}}
    assert "up to date" in text[4] and "--refusal-status" in text[5]
    assert "no measure 'refusal' (did you mean 'refusals'?)" in text[6]
    page = (out / "report" / "index.html").read_text("utf-8")
    assert "<h2>Refusals per attribute</h2>" in page and 'data-figure="refusals/dpd"><img alt="Forest plot' in page
    assert _louder_files() == before  # nothing of louder changed


def test_measures_run_after_the_measures_they_read():
    order = [m.name for m in registry.measures()]
    for m in registry.measures():
        assert all(order.index(dep) < order.index(m.name) for dep in m.after), m.name
    names = [t.name for m in registry.measures() for t in m.tables]
    assert len(names) == len(set(names))  # one measure per table
    # every table is documented column by column in the generated reference
    text = hooks.analysis_tables_markdown()
    for m in registry.measures():
        for t in m.tables:
            assert f"### `{t.name}.csv`" in text and all(c.doc for c in t.columns)


# --- computed once per data state ---------------------------------------------------------------------

def _watch(monkeypatch, calls: list) -> None:
    """Every recomputation of the cases measure is seen in ``calls``."""
    from dataclasses import replace

    cases = registry.get("cases")
    monkeypatch.setitem(registry.MEASURES.items, "cases", replace(cases, build=lambda a: calls.append(1) or cases.build(a)))


def test_the_analysis_is_computed_once_per_data_state_and_settings(small_run, tmp_path, monkeypatch):
    run = _copy(small_run, tmp_path / "run")
    first = analyze(run, bootstrap=200)
    assert not first.cached
    stamps = {f.name: f.stat().st_mtime_ns for f in run.glob("*.csv")}
    calls = []
    _watch(monkeypatch, calls)
    again = analyze(run, bootstrap=200)
    assert again.cached and not calls  # read back, not recomputed …
    assert {f.name: f.stat().st_mtime_ns for f in run.glob("*.csv")} == stamps  # … and nothing rewritten
    assert set(again.tables) == set(first.tables) and again.missing == first.missing
    pd.testing.assert_frame_equal(again.tables["cases"], pd.read_csv(run / "cases.csv"))
    monkeypatch.undo()
    assert not analyze(run, bootstrap=300).cached  # another setting: computed again
    assert analyze(run, bootstrap=300).cached
    louder.run({"models": ["fake:seed=2"], "simulation": {**CASE, "agents": 8}}, out=run, progress=False)
    assert not analyze(run, bootstrap=300).cached  # another write of the run: computed again
    (run / "cases.csv").write_text("edited\n")
    assert not analyze(run, bootstrap=300).cached  # an edited table is not trusted


def test_run_analyze_table_and_report_reuse_one_analysis(small_run, tmp_path, monkeypatch):
    run = louder.open(_copy(small_run, tmp_path / "run"))
    with pytest.warns(LouderWarning, match="one persona condition"):
        tables = run.analyze(bootstrap=200)
    calls = []
    _watch(monkeypatch, calls)
    assert run.table("cases") is tables["cases"] or run.table("cases").equals(tables["cases"])
    pd.testing.assert_frame_equal(louder.open(run.path).table("cases"), pd.read_csv(run.path / "cases.csv"))
    assert run.cases.shape == tables["cases"].shape  # attribute access reads the same table
    run.report()
    assert not calls  # none of them computed the analysis again
    with pytest.raises(KeyError, match="robustness"):
        run.table("robustness")  # a measure that has nothing to build here says so
    with pytest.raises(KeyError, match="no nothing.parquet"):
        run.table("nothing")


def test_run_table_reads_a_csv_table_before_any_analysis(small_run, tmp_path):
    run = louder.open(_copy(small_run, tmp_path / "run"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LouderWarning)
        cases = run.table("cases")  # issue 32.4: failed before, though analyze writes cases.csv
    assert len(cases) == 2 and (run.path / "cases.csv").exists()
    assert json.loads((run.path / "analysis.json").read_text())["bootstrap"] == 10_000


def test_summary_as_text_and_html(small_run, tmp_path):
    run = louder.open(_copy(small_run, tmp_path / "run"))
    assert "not analysed" in str(run.summary(compute=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LouderWarning)
        text = str(run.summary())
    assert "decisions" in text and "Findings" in text and "Design" in text and "Models: fake:seed=1" in text
    assert "What the agents do: " in text and "significantly by attribute" in text
    html = run._repr_html_()
    assert html.startswith("<div>") and "<table" in html and "Findings" in html


def test_louder_run_writes_to_a_default_folder_and_resumes_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = {"models": ["fake:seed=3"], "simulation": {**CASE, "agents": 2}}
    first = louder.run(cfg, progress=False)
    assert first.path.parent == tmp_path / "runs" and re.fullmatch(r"run-[0-9a-f]{8}", first.path.name)
    again = louder.run(cfg, progress=False)
    assert again.path == first.path and again.manifest["model_calls"] == 0
    named = louder.run({**cfg, "run_id": "mine"}, progress=False)
    assert named.path == tmp_path / "runs" / "mine"


# --- a console that fits -----------------------------------------------------------------------------

@pytest.mark.parametrize("width", [80, 120])
def test_analyze_fits_the_terminal(small_run, tmp_path, width):
    run = _copy(small_run, tmp_path / "run")
    r = runner.invoke(app, ["analyze", str(run), "-B", "200"], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= width
    table = [line for line in r.output.splitlines() if line.startswith("┃")]
    assert table and all(h in table[0] for h in ("dpd", "p_holm", "sig", "power"))
    assert "all rows: model fake:seed=1,bias=female:0.9" in " ".join(r.output.split())  # said once
    cached = runner.invoke(app, ["analyze", str(run), "-B", "200"], env={"COLUMNS": str(width)})
    assert "up to date" in cached.output


def test_wide_and_columns_choose_what_is_printed(small_run, tmp_path):
    run = _copy(small_run, tmp_path / "run")
    wide = runner.invoke(app, ["analyze", str(run), "-B", "200", "--wide"], env={"COLUMNS": "250"})
    assert "threshold" in wide.output and "inv/ref/err" in wide.output
    some = runner.invoke(app, ["analyze", str(run), "-B", "200", "--columns", "scenario,dpd,p_holm"],
                         env={"COLUMNS": "120"})
    header = next(line for line in some.output.splitlines() if line.startswith("┃"))
    assert [c.strip() for c in header.strip("┃").split("┃")] == ["scenario", "dpd", "p_holm"]
    bad = runner.invoke(app, ["analyze", str(run), "-B", "200", "--columns", "dpd,nonsense"])
    assert bad.exit_code == 2 and "--columns nonsense" in bad.stderr and "p_holm" in bad.stderr


def test_cell_text_is_never_read_as_markup():
    from rich.console import Console

    from louder.analysis.engine.declarations import Cell
    from louder.analysis.report.console import frame_table

    df = pd.DataFrame({"condition": ["contextualized [names]", "contextualized"],
                       "scenario": ["flood [mandatory]", "flood"], "spec": ["openai:MODEL[@URL]"] * 2})
    out = Console(width=120, record=True, file=__import__("io").StringIO())
    out.print(frame_table(df, "t", [Cell(c, c, priority=1) for c in df.columns]))
    text = out.export_text()
    assert "contextualized [names]" in text and "flood [mandatory]" in text and "[@URL]" in text


def test_view_draws_the_band_analyze_wrote(tmp_path):
    from louder.view.data import case_band, load_view_data

    # two wordings: each plays its own rounds (a network arm, issue 31.3), so a case label names its wording
    run = louder.run({"models": ["fake:seed=1,bias=female:0.9"], "influence": {"rounds": 2},
                      "network": {"generator": "watts_strogatz", "params": {"k": 2, "p": 0.1}, "seed": 0},
                      "simulation": {**CASE, "agents": 6, "wordings": ["as_written", "plain"]}},
                     out=tmp_path / "net", progress=False).path
    data = load_view_data(run)
    assert data.keys[-1] == "wording" and len(data.cases) == 2
    label = data.cases[1]
    assert label.endswith(" | plain")
    assert data.rounds_table is None  # no analysis yet: the view computes the band as analyze would
    computed = case_band(data, label, B=300)
    analyze(run, bootstrap=300)
    band = case_band(load_view_data(run), label)
    rounds = pd.read_csv(run / "network_rounds.csv")
    llm = rounds[(rounds["source"] == "LLM") & (rounds["wording"] == "plain")].drop_duplicates("round")
    assert band["low"].tolist() == llm["dpd_ci_low"].tolist() and band["high"].tolist() == llm["dpd_ci_high"].tolist()
    assert band["dpd"].tolist() == pytest.approx(computed["dpd"].tolist())
    assert ((band["low"] <= band["dpd"]) & (band["dpd"] <= band["high"])).all()
