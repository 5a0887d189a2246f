"""Issue 32.5: the HTML report reads at 1280 px — no sideways scroll of the page (a wide table scrolls in its
own box) and no panel title cut at a figure's edge."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from louder.analysis.figures import dpd_figure
from louder.analysis.html import fit_titles
from louder.cli import app

LONG_MODEL = "fake:seed=1,think=field,bias=black:0.7"


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory):
    """A run with many columns: two wordings, two choice orders, two signals, two reasoning levels, two
    persona conditions and an explicit probe, on a model with a long spec."""
    run = tmp_path_factory.mktemp("wide") / "run"
    dims = ["--scenario", "emergency_response", "--group", "race_black_white", "--wording", "as_written",
            "--wording", "plain", "--choice-order", "balanced", "--signal", "stated", "--signal", "names",
            "--reasoning", "off", "--reasoning", "high", "-c", "contextualized", "-c", "no_persona"]
    runner = CliRunner()
    for args in (["run", "--out", run, "-m", LONG_MODEL, "--agents", 4, *dims],
                 ["probe", "explicit", "--out", run, "-m", LONG_MODEL, "--trials", 6, "--scenario",
                  "emergency_response", "--group", "race_black_white"],
                 ["report", run, "-B", 200]):
        r = runner.invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, r.output[-2000:]
    return run / "report" / "index.html"


def test_report_fits_1280_px_in_chromium(wide_report):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                                               "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(wide_report.as_uri())
            width = page.evaluate("document.documentElement.scrollWidth")
            beyond = page.evaluate("Array.from(document.querySelectorAll('body *')).filter(e => "
                                   "e.getBoundingClientRect().right > 1280 && !e.closest('.wide, .scroll, pre'))"
                                   ".map(e => e.tagName + ': ' + (e.textContent || '').slice(0, 60))")
            clipped = page.evaluate("Array.from(document.querySelectorAll('h1, h2, h3')).filter(e => "
                                    "e.scrollWidth > e.clientWidth).map(e => e.textContent)")
            # the wide tables are really there, and really wider than the page: they scroll in their boxes
            boxes = page.evaluate("Array.from(document.querySelectorAll('.wide, .scroll')).filter(e => "
                                  "e.scrollWidth > e.clientWidth).length")
        finally:
            browser.close()
    assert width <= 1280, beyond
    assert beyond == [] and clipped == []
    assert boxes >= 1


def test_long_panel_titles_are_wrapped_not_cut():
    cases = pd.DataFrame([dict(model="openai:meta-llama/Llama-3.1-8B-Instruct@http://vllm-host.example:8000/v1",
                               kind=k, condition="contextualized", scenario="emergency_response",
                               group="gender_identity", dpd=0.3, threshold=0.2, significant=k == "implicit")
                          for k in ("implicit", "explicit")])
    fig = dpd_figure(cases)

    def cut(fig) -> list[str]:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        return [ax.title.get_text() for ax in fig.axes
                if not (0 <= (b := ax.title.get_window_extent(renderer)).x0 and b.x1 <= fig.bbox.width)]

    assert cut(fig), "the title of this figure should be too wide for it before fit_titles"
    fit_titles(fig)
    assert cut(fig) == []
    assert "\n" in fig.axes[0].title.get_text()
