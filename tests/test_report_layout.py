"""Issue 32.5: the HTML report reads at 1280 px — no sideways scroll of the page (a wide table scrolls in its
own box) and no panel title cut at a figure's edge. Issue 43: the first screen (1280 × 800) of the demo's
report and of a planted-bias run's report shows the run's design and its findings, the planted case named
with its interval; tables show their key columns (the rest behind a toggle) and sort; figures are SVG with
alt text and a download link; the table of contents follows the reader; no console error. Issue 47: the
comparison's page (`louder compare`) is drawn by the same page machinery — the same stylesheet and table
of contents, its findings in sentences and the ΔDPD forest plot on the first screen, the Δ, its interval
and the verdict among the key columns."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from louder.analysis.measures.cases import dpd_figure
from louder.analysis.report.html import fit_titles
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


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to run the browser test")
    from playwright.sync_api import sync_playwright

    return exe, sync_playwright


def _open(p, exe, report, height=900):
    """The report in a new page of a headless Chromium; what the browser reports as wrong is collected."""
    browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                                           "--disable-background-networking",
                                                           "--disable-component-update"])
    page = browser.new_page(viewport={"width": 1280, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
    page.goto(report.as_uri())
    return browser, page, problems


BEYOND = ("Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > 1280 && "
          "!e.closest('.wide, .scroll, pre, .agents')).map(e => e.tagName + ': ' + (e.textContent || '').slice(0, 60))")


def test_report_fits_1280_px_in_chromium(wide_report):
    exe, sync_playwright = _chromium()
    with sync_playwright() as p:
        browser, page, problems = _open(p, exe, wide_report)
        try:
            width = page.evaluate("document.documentElement.scrollWidth")
            beyond = page.evaluate(BEYOND)
            clipped = page.evaluate("Array.from(document.querySelectorAll('h1, h2, h3')).filter(e => "
                                    "e.scrollWidth > e.clientWidth).map(e => e.textContent)")
            # tables show their key columns; with every column shown, the wide tables are really wider than the
            # page: they scroll in their own boxes, and the page still does not
            for button in page.query_selector_all("button.cols"):
                button.click()
            boxes = page.evaluate("Array.from(document.querySelectorAll('.wide, .scroll')).filter(e => "
                                  "e.scrollWidth > e.clientWidth).length")
            width_all = page.evaluate("document.documentElement.scrollWidth")
            beyond_all = page.evaluate(BEYOND)
        finally:
            browser.close()
    assert width <= 1280, beyond
    assert beyond == [] and clipped == []
    assert boxes >= 1 and width_all <= 1280, beyond_all
    assert problems == [], problems


def test_long_panel_titles_are_wrapped_not_cut():
    cases = pd.DataFrame([dict(model="openai:meta-llama/Llama-3.1-8B-Instruct@http://vllm-host.example:8000/v1",
                               kind=k, condition="contextualized", scenario="emergency_response",
                               group="gender_identity", dpd=0.3, threshold=0.2, significant=k == "implicit",
                               ci_low=0.1, ci_high=0.5, p_value=0.01, p_holm=0.02, dpd_p=float("nan"))
                          for k in ("implicit", "explicit")])
    fig = dpd_figure(cases)

    def cut(fig) -> list[str]:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        return [t.get_text() for ax in fig.axes for t in (ax.title, ax._left_title) if t.get_text()
                if not (0 <= (b := t.get_window_extent(renderer)).x0 and b.x1 <= fig.bbox.width)]

    assert cut(fig), "the title of this figure should be too wide for it before fit_titles"
    fit_titles(fig)
    assert cut(fig) == []
    assert "\n" in fig.axes[0]._left_title.get_text()


def test_a_side_panels_title_is_wrapped_to_its_room_in_one_pass():
    """A centred title over the right-hand panel of three sticks out though it is narrower than the figure:
    it is wrapped to the room its centre leaves (twice the distance to the nearer edge), so the figure is
    laid out once to find it and once more to place it — not once more for every 10 % it was narrowed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    class Counted(ConstrainedLayoutEngine):
        passes = 0

        def execute(self, fig):
            Counted.passes += 1
            return super().execute(fig)

    fig = Figure(figsize=(9, 3))
    fig.set_layout_engine(Counted())
    axes = fig.subplots(1, 3)
    axes[2].set_title("a title over the right-hand panel that is long: " * 2)
    fit_titles(fig)
    renderer = FigureCanvasAgg(fig).get_renderer()
    box = axes[2].title.get_window_extent(renderer)
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and "\n" in axes[2].title.get_text()
    assert Counted.passes == 2


def test_a_figure_measures_its_tick_labels_less_and_draws_the_same_bytes(monkeypatch):
    """Under ``FIGURE_RC`` a title sits on its axes (no search for what could push it up) and ``svg`` pins
    the labels that have no text: writing a figure of six panels measures its tick labels less than half as
    often as before, and the SVG is the same, byte for byte."""
    import matplotlib
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

    from louder.analysis.report import html

    def panels() -> Figure:
        fig = Figure(figsize=(9, 5), layout="constrained")
        for i, ax in enumerate(fig.subplots(2, 3).ravel()):
            ax.plot([0, 1, 2], [i, 2 * i, 0.5])
            ax.set_title(f"panel {i}")
            ax.set_xlabel("share" if i > 2 else "")  # the top row's axes have no label
        return fig

    measured = []
    real = Axis._get_ticklabel_bboxes
    monkeypatch.setattr(Axis, "_get_ticklabel_bboxes", lambda self, *a, **k: measured.append(1) or real(self, *a, **k))
    with monkeypatch.context() as old:
        old.setattr(html, "_fix_empty_labels", lambda fig: None)  # as before
        before = html.svg(panels())
    n_before = len(measured)
    measured.clear()
    with matplotlib.rc_context(html.FIGURE_RC):
        fig = panels()
    assert html.svg(fig) == before
    assert len(measured) < n_before / 2, (len(measured), n_before)


# --- issue 43: the first screen ---------------------------------------------------------------------------

def _report(out, runs):
    runner = CliRunner()
    for args in [*runs, ["report", out, "-B", 500]]:
        r = runner.invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, r.output[-2000:]
    return out / "report" / "index.html"


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    """A run shaped like `louder demo`'s (its scenarios, group, agents and explicit probes: cli.py `demo`),
    on the fake model instead of the embedded one."""
    out = tmp_path_factory.mktemp("demo") / "run"
    both = ["--scenario", "emergency_response", "--scenario", "career_path_selection", "--group", "gender_identity"]
    return _report(out, [["run", "--out", out, "-m", "fake:seed=1", "--agents", 4, *both],
                         ["probe", "explicit", "--out", out, "-m", "fake:seed=1", "--trials", 6, *both]])


PLANTED = "fake:seed=1,bias=female:0.9"


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted") / "run"
    one = ["--scenario", "emergency_response", "--group", "gender_identity"]
    return _report(out, [["run", "--out", out, "-m", PLANTED, "--agents", 40, *one],
                         ["probe", "explicit", "--out", out, "-m", PLANTED, "--trials", 6, *one]])


def _first_screen(report, shot):
    """What the first 1280 × 800 screen shows: the text of every element wholly inside it, and a screenshot."""
    exe, sync_playwright = _chromium()
    with sync_playwright() as p:
        browser, page, problems = _open(p, exe, report, height=800)
        try:
            page.screenshot(path=str(shot))
            seen = page.evaluate("Array.from(document.querySelectorAll('main dl.card div, #findings li')).filter(e => "
                                 "{const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= 800 && "
                                 "r.width > 0;}).map(e => e.innerText)")
            toc = page.evaluate("document.querySelector('#toc a.here') && document.querySelector('#toc a.here')"
                                ".textContent")
        finally:
            browser.close()
    return seen, toc, problems


def test_the_demo_report_opens_on_its_design_and_findings(demo_report, tmp_path):
    seen, toc, problems = _first_screen(demo_report, tmp_path / "demo.png")
    text = "\n".join(seen)
    for label in ("Models", "Scenarios", "Groups", "Conditions", "Agents", "Model calls", "Cost", "Date", "louder"):
        assert any(line.startswith(label) for line in seen), (label, seen)
    assert "What the agents do:" in text and "What the model says when asked:" in text
    assert "underpowered" in text and "louder plan --effect 0.3" in text  # 4 agents per attribute: says so
    assert toc == "Findings" and problems == []
    assert (tmp_path / "demo.png").stat().st_size > 10_000


def test_a_planted_bias_is_named_on_the_first_screen_with_its_interval(planted_report, tmp_path):
    seen, toc, problems = _first_screen(planted_report, tmp_path / "planted.png")
    cases = pd.read_csv(planted_report.parent.parent / "cases.csv")
    imp = cases[cases["kind"] == "implicit"].iloc[0]
    assert bool(imp["significant"])
    named = [s for s in seen if s.startswith("What the agents do: 1 of 1 case differs significantly")]
    assert named, seen
    assert (f"emergency_response × gender_identity (contextualized), DPD {imp['dpd']:.2f} [{imp['ci_low']:.2f}, "
            f"{imp['ci_high']:.2f}]") in named[0]
    assert re.search(r"Female 0\.\d\d vs (Male|Non-binary) 0\.\d\d", named[0])
    assert problems == []


def test_tables_sort_figures_download_and_the_contents_follow(planted_report):
    exe, sync_playwright = _chromium()
    with sync_playwright() as p:
        browser, page, problems = _open(p, exe, planted_report, height=800)
        try:
            html = planted_report.read_text("utf-8")
            assert "data:image/png" not in html and html.count('src="data:image/svg+xml;base64,') >= 5
            alts = page.eval_on_selector_all("figure.fig img", "els => els.map(e => e.alt)")
            assert alts and all(len(a) > 30 for a in alts)  # every figure says what it shows
            sizes = page.eval_on_selector_all("figure.fig img", "els => els.map(e => e.naturalWidth)")
            assert min(sizes) > 100  # the SVGs really drew
            table = page.locator("section#target-decision-rate-per-attribute-cf-fig-4 table.t").first
            header = table.locator("th", has_text="n_valid")
            header.click()
            values = [int(t) for t in table.locator("tbody tr td:nth-child(%d)" % (
                1 + page.evaluate("(h) => [...h.parentNode.children].indexOf(h)", header.element_handle())))
                .all_inner_texts()]
            assert values == sorted(values) and header.get_attribute("aria-sort") == "ascending"
            hidden = table.locator("th.x").first
            assert not hidden.is_visible()
            page.locator("section#target-decision-rate-per-attribute-cf-fig-4 button.cols").first.click()
            assert hidden.is_visible()
            with page.expect_download() as download:
                page.locator("figure.fig a.dl").first.click()
            assert download.value.suggested_filename == "cases-dpd.svg"
            assert download.value.path().read_text("utf-8").lstrip().startswith("<?xml")
            page.locator("#toc a", has_text="Rationales").click()
            page.wait_for_function("document.querySelector('#toc a.here').textContent === 'Rationales'")
        finally:
            browser.close()
    assert problems == []


# --- issue 47: the comparison's page ------------------------------------------------------------------------

BASE, BIASED = "fake:seed=1", "fake:seed=1,bias=Female:0.8"


@pytest.fixture(scope="module")
def compare_report(tmp_path_factory):
    """Two runs of the fake model, one without bias and one with a bias of 0.8 planted on Female (a ΔDPD of
    about 0.3), 300 agents per attribute and 60 trials of the explicit probe each, compared with the gate."""
    root = tmp_path_factory.mktemp("compare")
    one = ["--scenario", "emergency_response", "--group", "gender_identity"]
    runner = CliRunner()
    for name, model in (("base", BASE), ("new", BIASED)):
        for args in (["run", "--out", root / name, "-m", model, "--agents", 300, *one],
                     ["probe", "explicit", "--out", root / name, "-m", model, "--trials", 60, *one]):
            r = runner.invoke(app, [str(a) for a in args])
            assert r.exit_code == 0, r.output[-2000:]
    r = runner.invoke(app, ["compare", f"base={root / 'base'}", f"new={root / 'new'}", "-B", "1000", "--fail-if",
                            "worse", "--out", str(root / "cmp")], env={"COLUMNS": "200"})
    assert r.exit_code == 1 and "worse: new is more biased than base" in r.output, r.output[-2000:]
    return root / "cmp" / "report" / "index.html"


STYLE = "(() => {const m = getComputedStyle(document.querySelector('main')); return [m.maxWidth, m.marginLeft, " \
        "getComputedStyle(document.body).fontFamily, document.querySelector('style').textContent];})()"


def test_the_comparison_page_opens_on_its_findings_and_forest_plot_styled_as_a_run_report(
        compare_report, planted_report, tmp_path):
    exe, sync_playwright = _chromium()
    shot = tmp_path / "comparison.png"
    with sync_playwright() as p:
        browser, page, problems = _open(p, exe, planted_report, height=800)
        try:
            run_style = page.evaluate(STYLE)
        finally:
            browser.close()
        browser, page, more = _open(p, exe, compare_report, height=800)
        problems += more
        try:
            page.screenshot(path=str(shot))
            style = page.evaluate(STYLE)
            seen = page.evaluate("Array.from(document.querySelectorAll('main dl.card div, #findings li')).filter(e => "
                                 "{const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= 800 && "
                                 "r.width > 0;}).map(e => e.innerText)")
            forest = page.evaluate("(() => {const i = document.querySelector('figure[data-figure=\"models/forest\"] "
                                   "img'); const r = i.getBoundingClientRect(); return [r.top, r.bottom, r.left, "
                                   "r.right, i.naturalWidth, i.alt];})()")
            toc = page.eval_on_selector_all("#toc a", "els => els.map(e => e.textContent)")
            here = page.evaluate("document.querySelector('#toc a.here').textContent")
            width = page.evaluate("document.documentElement.scrollWidth")
            beyond = page.evaluate(BEYOND)
            shown = page.evaluate("Array.from(document.querySelector('section#model-against-model table.t')"
                                  ".querySelectorAll('th')).filter(e => e.getBoundingClientRect().width > 0)"
                                  ".map(e => e.textContent)")
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    # the run report's stylesheet and layout: the same style element, the page's width and margins
    assert style == run_style and style[:2] == ["1060px", "230px"]
    assert toc[0] == "Findings" and "Model against model" in toc and "Release gate" in toc and here == "Findings"
    assert width <= 1280 and beyond == [], beyond
    # the first screen: the design card, the findings in sentences (the gate, who is more biased where, by how
    # much) and the whole forest plot
    cmp = pd.read_csv(compare_report.parent.parent / "model_pairs.csv").iloc[0]
    assert cmp["actions_verdict"] == "more biased"
    assert any(s.startswith("base") and "fake:seed=1" in s for s in seen), seen
    text = "\n".join(seen)
    assert "Release gate (--fail-if worse): failed in " in text
    assert ("Actions (what the agents do): new is more biased than base in 1 of 1 case — emergency_response × "
            f"gender_identity (contextualized), ΔDPD {cmp['actions_delta']:+.2f} [{cmp['actions_ci_low']:+.2f}, "
            f"{cmp['actions_ci_high']:+.2f}]") in text, text
    assert "Words (what the models say when asked): new is " in text
    top, bottom, _, right, natural, alt = forest
    assert 0 <= top and bottom <= 800 and right <= 1280 and natural > 300 and "ΔDPD" in alt, forest
    # the pair table shows the Δ, its interval and the verdict without its toggle; the p-values wait behind it
    assert {"actions ΔDPD [95 % CI]", "actions_verdict", "words ΔDPD [95 % CI]", "words_verdict"} <= set(shown)
    assert "actions_p_holm" not in shown
    assert problems == [], problems
