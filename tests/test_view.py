"""``louder view``: the replay model, the page rendered in-process (as Mesa's own SolaraViz tests
do) and the served page in headless Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import ipywidgets
import pytest
import solara
from conftest import free_port
from typer.testing import CliRunner
from view_fixture import write_network_run

from louder.cli import app
from louder.errors import LouderError
from louder.view.app import make_page
from louder.view.data import dpd_band, load_view_data
from louder.view.model import ReplayModel


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return write_network_run(tmp_path_factory.mktemp("view") / "run")


def test_replay_follows_the_recorded_rounds(run):
    m = ReplayModel(str(run))
    d = load_view_data(run).decisions
    for r in range(m.last_round + 1):
        assert m.round == r
        rec = d[(d["round"] == r) & (d["status"] == "valid")].set_index("node")["target"]
        assert {a.node: a.target for a in m.agents if a.target is not None} == rec.astype(bool).to_dict()
        m.step()
    assert m.round == m.last_round  # stays at the last round


def test_large_runs_draw_a_seeded_sample(tmp_path):
    big = write_network_run(tmp_path / "big", n=3000, rounds=1)
    a, b = ReplayModel(str(big), max_nodes=500), ReplayModel(str(big), max_nodes=500)
    assert a.sampled and a.n_nodes == 3000 and len(a.agents) == 500
    assert sorted(x.node for x in a.agents) == sorted(x.node for x in b.agents)
    assert sorted(a.grid.G.nodes) == list(range(500))  # relabelled 0..m−1: no agent dropped by Mesa


def test_page_renders_in_process(run):
    box, rc = solara.render(make_page(str(run)), handle_error=False)
    images = rc.find(ipywidgets.Image).widgets
    assert len(images) == 2 and all(len(i.value) > 10_000 for i in images)  # the network and the chart
    html = " ".join(w.value for w in rc.find(ipywidgets.HTML).widgets if isinstance(w.value, str))
    assert "no model is called" in html or "no model is called" in str(box)


def test_dpd_band_contains_the_dpd(run):
    band = dpd_band(load_view_data(run).decisions, B=500)
    assert len(band) == 4 and ((band["low"] <= band["dpd"]) & (band["dpd"] <= band["high"])).all()


def test_not_a_network_run(tmp_path):
    with pytest.raises(LouderError, match="no network run"):
        load_view_data(tmp_path)
    r = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert r.exit_code == 2 and "no network run" in r.output


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_served_page_in_headless_chromium(run):
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("louder view did not serve its page within 180 s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
            page.wait_for_function("document.querySelectorAll('img').length >= 2", timeout=120_000)
            assert page.get_by_text("no model is called").count() == 1
            assert page.get_by_text("Round").count() >= 1
            sizes = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            assert len(sizes) >= 2 and min(sizes) > 100  # the network and the chart really drew
            page.get_by_role("button", name="Step").click()  # one round on: the caption follows
            page.wait_for_function("document.body.innerText.includes('round 1 of 3')", timeout=60_000)
            browser.close()
        assert errors == []
    finally:
        proc.terminate()
        proc.wait(20)
