"""Issue 30.5: a backend from an outside package, found through the entry-point group
``louder.backends``. The package is the one docs/how-to/add-a-backend.md shows: this test writes its
files from the page and installs it into a folder the way pip lays out an installed package — the
module beside a ``NAME-VERSION.dist-info`` with the ``entry_points.txt`` that the page's
``pyproject.toml`` declares (no build step, no network, never into this environment) — then runs it
from the CLI and the Python API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from test_docs import blocks

import louder
from louder.errors import LouderError
from louder.llm import registry

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "how-to" / "add-a-backend.md"


def install(project: Path, target: Path) -> None:
    """What ``pip install --target TARGET PROJECT`` leaves for a pure-Python package: its modules, and a
    dist-info with METADATA and the entry points of its pyproject.toml."""
    meta = tomllib.loads((project / "pyproject.toml").read_text("utf-8"))["project"]
    name, version = meta["name"], meta["version"]
    for pkg in (p for p in project.iterdir() if (p / "__init__.py").exists()):
        shutil.copytree(pkg, target / pkg.name)
    dist = target / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", "utf-8")
    groups = meta.get("entry-points", {})
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for group, eps in groups.items()),
        "utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The how-to's package, written from the page and installed into a folder."""
    work = tmp_path_factory.mktemp("outside")
    written = [b for b in blocks(PAGE.read_text("utf-8")) if b.mark == "write"]
    assert {b.arg for b in written} == {"louder-first/pyproject.toml", "louder-first/louder_first/__init__.py"}
    for b in written:
        (work / b.arg).parent.mkdir(parents=True, exist_ok=True)
        (work / b.arg).write_text(b.body, "utf-8")
    target = work / "site"
    install(work / "louder-first", target)
    assert (target / "louder_first").is_dir()
    return target


def _louder(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "louder.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_cli_lists_and_runs_a_backend_from_an_installed_package(site, tmp_path):
    r = _louder(site, "backends", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.strip("│ ").startswith("first"))
    assert "first:NAME" in line and "louder-first" in line
    r = _louder(site, "run", "--out", "runs/first", "--model", "first:baseline", "-n", "5", "-s",
                "emergency_response", "-g", "gender_identity", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    d = pd.read_parquet(tmp_path / "runs" / "first" / "decisions.parquet")
    assert len(d) == 15 and (d["status"] == "valid").all() and set(d["decision"]) == {"Evacuate"}
    m = json.loads((tmp_path / "runs" / "first" / "manifest.json").read_text())
    assert m["models"]["first:baseline"]["identity"] == {"backend": "first", "model": "baseline"}
    assert m["preflight"]["first:baseline"] is None  # no preflight for a backend of another package
    # a reasoning level it cannot honour: one line
    bad = _louder(site, "run", "--out", "runs/x", "--model", "first:x", "-n", "1", "-s", "emergency_response",
                  "-g", "gender_identity", "--reasoning", "high", cwd=tmp_path)
    assert bad.returncode == 2 and "model first:x cannot honour reasoning level 'high'" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.fixture
def on_path(site):
    sys.path.insert(0, str(site))
    registry.BACKENDS.forget_entry_points()
    yield
    sys.path.remove(str(site))
    registry.unregister("first")
    registry.BACKENDS.forget_entry_points()
    sys.modules.pop("louder_first", None)


def test_the_python_api_loads_it_too_and_a_remote_declaration_is_not_preflighted(on_path, tmp_path):
    assert "first" in registry.prefixes() and registry.outside()["first"] == "louder-first"
    cfg = {"models": ["first:api"], "simulation": {"scenarios": ["emergency_response"],
                                                    "groups": ["gender_identity"], "agents": 2}}
    assert (louder.run(cfg, out=tmp_path / "a", progress=False).decisions["status"] == "valid").all()
    # the how-to's local=False used to send the run to a preflight that named the wrong cause
    info = registry.backend_info("first")
    registry.register(registry.BackendInfo("first", info.build, forms=info.forms, takes_url=False, local=False))
    assert (louder.run(cfg, out=tmp_path / "b", progress=False).decisions["status"] == "valid").all()
    assert louder.estimate(cfg)["price"][0] == "not in louder/data/prices.yaml"


def test_a_broken_entry_point_is_one_line(tmp_path, monkeypatch):
    dist = tmp_path / "louder_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: louder-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[louder.backends]\nbroken = louder_broken_missing_module\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.BACKENDS.forget_entry_points()
    try:
        with pytest.raises(LouderError, match=r"backend 'broken' .*louder-broken\) cannot be loaded: "
                                              "ModuleNotFoundError") as e:
            louder.run({"models": ["broken:x"]}, out=tmp_path / "r", progress=False)
        assert "\n" not in str(e.value)
        assert "fake:seed=N" in registry.spec_forms()  # the other backends are still listed
    finally:
        registry.BACKENDS.forget_entry_points()
