"""``louder view``: the replay model, the page rendered in-process (as Mesa's own SolaraViz tests
do) and the served page in headless Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from conftest import free_port
from typer.testing import CliRunner
from view_fixture import write_network_run

from louder.cli import app
from louder.errors import LouderError
from louder.view.data import dpd_band, load_view_data
from louder.view.model import ReplayModel


def make_page(run: str):
    """The page of ``louder view`` (solara and Mesa's visualization imported here, by the tests that render:
    every pytest-xdist worker imports every test module, and these two take seconds)."""
    from louder.view.app import make_page

    return make_page(run)


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
    import ipywidgets
    import solara

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
    import solara
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


def _wait_served(port: int, within: float = 180) -> None:
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    pytest.fail(f"louder view did not serve its page within {within:.0f} s")


@pytest.fixture(scope="module")
def served(run):
    """`louder view RUN` started once for the module (a solara server takes seconds to come up): the browser
    test drives it, then the SIGTERM test stops it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        _wait_served(port)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)


def test_dpd_band_contains_the_dpd(run):
    band = dpd_band(load_view_data(run).decisions, B=500)
    assert len(band) == 4 and ((band["low"] <= band["dpd"]) & (band["dpd"] <= band["high"])).all()


def test_not_a_network_run(tmp_path):
    with pytest.raises(LouderError, match="no network run"):
        load_view_data(tmp_path)
    r = CliRunner().invoke(app, ["view", str(tmp_path)])  # not a network run: the agents' page, which needs decisions
    assert r.exit_code == 2 and "has no decisions.parquet" in r.output


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_served_page_in_headless_chromium(served):
    """The page in a real browser: it draws, the Round slider follows Step and ▶, and the browser
    reports nothing wrong — no console error, no uncaught exception, no failed or 4xx/5xx request
    (the page is offline: every asset must come from the server itself)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    _, port = served
    problems: list[str] = []
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


def test_view_stops_its_server_on_sigterm(served):
    """issue 23.7: `louder view` stopped by SIGTERM (a script, a service manager) stops its solara child.
    (After the browser test, which drives the same server.)"""
    import signal
    import socket

    import psutil

    proc, port = served
    children: list = []
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "louder view serves through a child process"
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert alive == [], f"still running after SIGTERM: {[p.cmdline() for p in alive]}"
        with socket.socket() as s:  # the port is free again: nothing listens on it
            # (SO_REUSEADDR: the browser test's closed connections may sit in TIME_WAIT; Linux still refuses
            # the bind while a socket listens on the port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()
    finally:
        for p in [proc, *children]:
            if p.poll() is None if p is proc else p.is_running():
                p.kill()


# --- issue 43: `louder view RUN` for any run: the agents' own words ------------------------------------------

@pytest.fixture(scope="module")
def seed_run(tmp_path_factory) -> Path:
    """A run on the fake model (a thinking model, a planted bias, two scenarios, two conditions)."""
    import louder

    out = tmp_path_factory.mktemp("agents") / "run"
    louder.run({"models": ["fake:seed=1,think=field,bias=female:0.9"],
                "simulation": {"scenarios": ["emergency_response", "career_path_selection"],
                               "groups": ["gender_identity"], "agents": 6,
                               "conditions": ["contextualized", "no_persona"]}}, out=out, progress=False)
    return out


def test_the_agents_of_any_run_filtered_by_case_attribute_status_and_decision(seed_run):
    import pandas as pd

    from louder.view.agents import agents_table, facets, query

    t = agents_table(seed_run)
    d = pd.read_parquet(seed_run / "decisions.parquet")
    assert len(t) == len(d) and {"persona", "decision", "rationale", "thinking"} <= set(t.columns)
    f = facets(t)
    case = "fake:seed=1,think=field,bias=female:0.9 | contextualized | emergency_response | gender_identity"
    assert case in f["cases"] and f["by_case"][case]["attributes"] == ["Female", "Male", "Non-binary"]
    got = query(t, case=case, attribute="Female", limit=500)
    want = d[(d["condition"] == "contextualized") & (d["scenario"] == "emergency_response") & (d["attribute"] == "Female")]
    assert got["total"] == len(want) == 6
    assert sorted(r["agent_id"] for r in got["rows"]) == sorted(want["agent_id"])
    row = next(r for r in got["rows"] if r["agent_id"] == want["agent_id"].iloc[0])
    w = want.iloc[0]
    assert (row["persona"], row["decision"], row["rationale"], row["thinking"]) == (
        w["persona"], w["decision"], w["rationale"], w["thinking"])
    decision = w["decision"]
    only = query(t, case=case, decision=decision, status="valid", limit=500)
    assert only["total"] == int(((d["condition"] == "contextualized") & (d["scenario"] == "emergency_response")
                                 & (d["decision"] == decision) & (d["status"] == "valid")).sum())
    assert query(t, text="no such word anywhere")["total"] == 0
    page = query(t, offset=5, limit=3)
    assert page["total"] == len(d) and len(page["rows"]) == 3


@pytest.mark.slow
def test_louder_view_lists_the_agents_of_a_case_and_attribute_in_chromium(seed_run):
    """`louder view RUN` on a seed run, driven in Debian's Chromium: choose a case and an attribute, and the
    page lists exactly its agents, each with persona, decision, rationale and thinking side by side; a
    decision filter narrows them; nothing is fetched from elsewhere and the browser reports no error."""
    import pandas as pd

    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    d = pd.read_parquet(seed_run / "decisions.parquet")
    case = "fake:seed=1,think=field,bias=female:0.9 | contextualized | career_path_selection | gender_identity"
    want = d[(d["condition"] == "contextualized") & (d["scenario"] == "career_path_selection")
             & (d["attribute"] == "Male")]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "louder.cli", "view", str(seed_run), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    problems: list[str] = []
    try:
        _wait_served(port, within=60)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                                                   "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
            page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
            page.on("request", lambda r: problems.append(f"elsewhere: {r.url}")
                    if not r.url.startswith((f"http://127.0.0.1:{port}/", "data:")) else None)
            held = []

            def hold_the_case_wide_answer(route):  # the case's every-attribute answer arrives last
                q = parse_qs(urlparse(route.request.url).query, keep_blank_values=True)
                if not held and q.get("case") == [case] and q.get("attribute") == [""]:
                    held.append(route)
                else:
                    route.continue_()

            page.route("**/api/agents?*", hold_the_case_wide_answer)
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_function("document.querySelectorAll('#case option').length > 1")
            page.select_option("#case", case)
            page.wait_for_function("document.querySelectorAll('#attribute option').length > 1")
            page.select_option("#attribute", "Male")
            page.wait_for_function(f"document.getElementById('count').textContent.includes('of {len(want)} agents')")
            # the answer to the filter left behind comes back now, after the attribute's: it must not replace it
            # (it did, in CI: 18 rows under "1–6 of 6 agents")
            assert len(held) == 1
            with page.expect_response(lambda r: r.request.url == held[0].request.url):
                held[0].continue_()
            page.evaluate("() => new Promise(done => setTimeout(done, 300))")  # its JSON read and shown, if it were
            assert f"of {len(want)} agents" in page.locator("#count").inner_text()
            rows = page.locator("tr.agent")
            assert rows.count() == len(want)
            shown = {(rows.nth(i).locator("td.persona").inner_text(), rows.nth(i).locator("td.decision b").inner_text(),
                      rows.nth(i).locator("td.rationale").inner_text(), rows.nth(i).locator("td.thinking").inner_text())
                     for i in range(rows.count())}
            assert shown == {(w.persona, w.decision, w.rationale, w.thinking) for w in want.itertuples()}
            decision = want["decision"].iloc[0]
            page.select_option("#decision", decision)
            n = int((want["decision"] == decision).sum())
            page.wait_for_function(f"document.getElementById('count').textContent.includes('of {n} agents')")
            assert set(page.locator("tr.agent td.decision b").all_inner_texts()) == {decision}
            browser.close()
    finally:
        proc.terminate()
        proc.wait(20)
    assert problems == [], problems
