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


def _round_slider(rc) -> int:
    import ipyvuetify as v

    (slider,) = [w for w in rc.find(v.Slider).widgets if w.label == "Round"]
    return slider


def test_round_slider_follows_step_and_sets_the_round(run):
    """issue 23.7: the Round slider shows the model's round after every Step / ▶ (what SolaraViz's
    controller does: ``model.step()`` then ``force_update()``), and moving it moves the model."""
    from mesa.visualization.utils import force_update

    page = make_page(str(run))
    model = page.args[0]
    box, rc = solara.render(page, handle_error=False)
    assert _round_slider(rc).v_model == 0 and _round_slider(rc).max == model.last_round == 3
    for r in (1, 2, 3, 3):  # stepping past the last round stays there, and ▶ stops (running is False)
        model.step()
        force_update()
        assert _round_slider(rc).v_model == model.round == r
        assert model.running == (r < 3)
    _round_slider(rc).v_model = 1  # the user drags it back
    assert model.round == 1 and "round 1 of 3" in str(box)
    assert {a.node: a.target for a in model.agents} == {a.node: a.target for a in ReplayModel(str(run), round=1).agents}


def test_view_stops_its_server_on_sigterm(run):
    """issue 23.7: `louder view` stopped by SIGTERM (a script, a service manager) stops its solara child."""
    import signal
    import socket

    import psutil

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    children: list = []
    try:
        _wait_served(port)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "louder view serves through a child process"
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert alive == [], f"still running after SIGTERM: {[p.cmdline() for p in alive]}"
        with socket.socket() as s:  # the port is free again
            s.bind(("127.0.0.1", port))
    finally:
        for p in [proc, *children]:
            if p.poll() is None if p is proc else p.is_running():
                p.kill()


def _wait_served(port: int, within: float = 180) -> None:
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    pytest.fail(f"louder view did not serve its page within {within:.0f} s")


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
    """The page in a real browser: it draws, the Round slider follows Step and ▶, and the browser
    reports nothing wrong — no console error, no uncaught exception, no failed or 4xx/5xx request
    (the page is offline: every asset must come from the server itself)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    problems: list[str] = []
    try:
        _wait_served(port)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            pending: set = set()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "assert") else None)
            page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
            page.on("request", lambda r: pending.add(r))
            page.on("requestfinished", lambda r: pending.discard(r))
            page.on("requestfailed", lambda r: (pending.discard(r), problems.append(f"failed: {r.url} {r.failure}")))
            page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
            page.wait_for_function("document.querySelectorAll('img').length >= 2", timeout=120_000)
            assert page.get_by_text("no model is called").count() == 1
            sizes = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            assert len(sizes) >= 2 and min(sizes) > 100  # the network and the chart really drew
            rounds = ("els => els.filter(e => e.getAttribute('aria-valuemax') === '3')"
                      ".map(e => e.getAttribute('aria-valuenow'))")
            assert page.eval_on_selector_all("[role=slider]", rounds) == ["0"]
            page.get_by_role("button", name="Step").click()  # one round on: caption and slider follow
            page.wait_for_function("document.body.innerText.includes('round 1 of 3')", timeout=60_000)
            page.wait_for_function("Array.from(document.querySelectorAll('[role=slider]')).filter(e => "
                                   "e.getAttribute('aria-valuemax') === '3')[0].getAttribute('aria-valuenow') === '1'",
                                   timeout=60_000)
            page.get_by_role("button", name="▶").click()  # play: runs to the last round and stops there
            page.wait_for_function("document.body.innerText.includes('round 3 of 3')", timeout=60_000)
            page.wait_for_function("Array.from(document.querySelectorAll('[role=slider]')).filter(e => "
                                   "e.getAttribute('aria-valuemax') === '3')[0].getAttribute('aria-valuenow') === '3'",
                                   timeout=60_000)
            # Let every request the page made end (an asset fetched through the server's CDN proxy
            # fails only after the proxy's retries), then look at what the browser reported.
            deadline = time.time() + 60
            while pending and time.time() < deadline:
                page.wait_for_timeout(500)
            page.wait_for_timeout(3000)
            assert not pending, [r.url for r in pending]
            browser.close()
        assert problems == [], "\n".join(problems)
    finally:
        proc.terminate()
        proc.wait(20)
