"""Issue 47: an analysis stands alone. `import louder.analysis`, analysing an existing run folder and its
report work with the simulation stack unimportable — Mesa, humanleague, networkx and louder.simulation
(and louder.config, which imports them) blocked on the import path — so that an analysis of a run folder
needs only what the analysis itself uses. The folders are written here on the fake model as usual."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import louder

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("mesa", "humanleague", "networkx", "louder.simulation", "louder.config")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A seed run with explicit probes and two persona conditions, and a population run with policy
    variants and twins: between them the sections most measures write."""
    base = tmp_path_factory.mktemp("standalone")
    one = {"scenarios": ["emergency_response"], "groups": ["gender_identity"]}
    seed = base / "seed"
    cfg = {"models": ["fake:seed=1,bias=female:0.8"], "explicit": {"trials": 6},
           "simulation": {**one, "agents": 6, "conditions": ["contextualized", "no_persona"]}}
    louder.run(cfg, out=seed, progress=False)
    louder.run(cfg, out=seed, kind="explicit", progress=False)
    pop = base / "pop"
    louder.run({"models": ["fake:seed=1,bias=liberal:0.9"], "population": {"file": "us_gender_ideology", "twins": True},
                "simulation": {"scenarios": ["emergency_response_policy"], "variants": ["base", "mandatory"],
                               "agents": 24}}, out=pop, progress=False)
    return [seed, pop]


BLOCKER = textwrap.dedent('''
    import importlib.abc, sys
    BLOCKED = {blocked!r}

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"{{name}} is blocked: the analysis must not need it")

    sys.meta_path.insert(0, Blocked())
    for name in [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]:
        del sys.modules[name]
''')


def test_the_analysis_and_its_report_need_no_simulation_stack(folders):
    code = BLOCKER.format(blocked=BLOCKED) + textwrap.dedent(f'''
        import warnings
        warnings.simplefilter("ignore")
        import louder.analysis
        from louder.analysis.report.page import write_report
        analyses = []
        for folder in {[str(f) for f in folders]!r}:
            a = louder.analysis.analyze(folder, bootstrap=200)
            assert a.tables["cases"] is not None and len(a.tables) > 5, sorted(a.tables)
            analyses.append(a)
        # nor the drawing: matplotlib (~0.5 s of imports) waits for the report's figures
        assert "matplotlib" not in sys.modules, "an analysis without a report imported matplotlib"
        for a in analyses:
            page = write_report(a).read_text("utf-8")
            assert "<h2" in page and "Traceback" not in page
            print(a.run_dir, len(a.tables), "tables")
        loaded = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
        assert not loaded, loaded
        print("standalone ok")
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and "standalone ok" in r.stdout, r.stderr[-3000:]
    assert "population_groups.csv" in os.listdir(folders[1])  # the population run's own measures ran


def test_the_blocker_blocks(tmp_path):
    """The check can fail: with the blocker, what needs the simulation stack does not import."""
    code = BLOCKER.format(blocked=BLOCKED) + "import louder.config\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode != 0 and "louder.config is blocked" in r.stderr


def test_a_sample_mode_analysis_imports_neither_scipy_stats_nor_statsmodels(tmp_path):
    """P6's cold ``louder analyze`` (decisions only, sample mode: the cases, their power, the ablation, the
    discrimination score's logistic fit, the rationales) needs neither scipy.stats nor statsmodels — ~0.9 s
    of imports, a quarter of it: the quantiles come from scipy.special (``stats.distributions``), the logit
    from ``regression.irls_logit``. Blocked here, the analysis runs and writes its discrimination table."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from analyze_100k import synthetic_run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    synthetic_run(tmp_path, agents=40, scenarios=("emergency_response", "career_path_selection"))
    code = BLOCKER.format(blocked=("scipy.stats", "statsmodels")) + textwrap.dedent(f'''
        import louder.analysis
        a = louder.analysis.analyze({str(tmp_path)!r}, bootstrap=200)
        d = a.tables["discrimination"]
        assert len(d) and (d["method"] == "logit").all() and (d["status"] == "ok").all(), d
        assert len(a.tables["cases"]) == 18 and a.tables["cases"]["mdd"].notna().all()
        print("no scipy.stats ok")
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and "no scipy.stats ok" in r.stdout, r.stderr[-3000:]
