"""Issue 43: a figure for every section. Each measure declares its figures on the registry (``Figure``);
every measure that writes a table declares one; a section places it with ``a.figure`` (SVG with alt text
and a download link, or a line saying why there is nothing to draw); the figures draw every interval
around its estimate in the palette (``figure_checks``, read from the drawn figure). The report-wide check
over every kind of run is in tests/test_golden.py; the tables that fit are checked here too."""

from __future__ import annotations

import base64
import re

import figure_checks
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

import louder
from louder.analysis import analyze
from louder.analysis.engine import registry
from louder.analysis.engine.declarations import Figure, Measure, Table
from louder.analysis.report import html, palette
from louder.analysis.report.page import SectionContext, write_report
from louder.errors import LouderError

pytestmark = pytest.mark.filterwarnings("ignore::louder.errors.LouderWarning")


def test_every_measure_that_writes_a_table_declares_a_figure():
    for m in registry.measures():
        if m.tables:
            assert m.figures, f"measure {m.name} writes {', '.join(t.name for t in m.tables)} and declares no figure"
        for p in m.figures:
            assert p.name and callable(p.draw) and (callable(p.alt) or len(p.alt) > 30), (m.name, p.name)


def test_the_registry_refuses_two_figures_of_one_name_and_an_undeclared_one():
    draw = Figure("x", lambda a: None, "an alt text long enough to say what it shows")
    with pytest.raises(LouderError, match="two figures are named 'x'"):
        registry.register(Measure("twice", "x", (), build=lambda a: {}, figures=(draw, draw)))
    m = Measure("once", "x", (Table("once_t", "x", ()),), build=lambda a: {}, figures=(draw,))
    with pytest.raises(LouderError, match="places figure 'y', which it does not declare"):
        m.figure("y")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Two persona conditions, explicit probes and a planted bias: most of the seed run's sections."""
    out = tmp_path_factory.mktemp("figures") / "run"
    cfg = {"models": ["fake:seed=1,bias=female:0.9"], "explicit": {"trials": 6},
           "simulation": {"scenarios": ["emergency_response", "career_path_selection"], "groups": ["gender_identity"],
                          "agents": 12, "conditions": ["contextualized", "no_persona"]}}
    louder.run(cfg, out=out, progress=False)
    louder.run(cfg, out=out, kind="explicit", progress=False)
    return out


def test_figures_of_a_run_are_svg_with_alt_text_in_the_palette_around_their_estimates(small, monkeypatch):
    drawn = figure_checks.recorded(monkeypatch)
    page = write_report(analyze(small, bootstrap=300)).read_text("utf-8")
    names = {n for n, _ in drawn}
    assert {"cases/dpd", "attributes/rates", "attributes/choices", "contrast/contrast", "ablation/conditions",
            "persona_audit/gaps", "rationales/patterns", "directions/directions"} <= names
    assert [(n, p) for n, p in drawn if p] == []
    figures = re.findall(r'<figure class="fig" data-figure="([^"]+)"><img alt="([^"]+)" width="(\d+)" height="(\d+)" '
                         r'src="data:image/svg\+xml;base64,([^"]+)"><figcaption><a class="dl" download="([^"]+)"',
                         page)
    assert len(figures) == len(drawn)
    for name, alt, w, h, data, download in figures:
        svg = base64.b64decode(data).decode("utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<text" in svg  # text stays text
        assert len(alt) > 30 and int(w) > 100 and int(h) > 50 and download.endswith(".svg")
    assert len({f[5] for f in figures}) == len(figures)  # each downloads under a name of its own


def test_the_same_figure_gives_the_same_svg():
    cases = pd.DataFrame([dict(kind=k, model="m", condition="contextualized", scenario="s", group="g", dpd=0.3,
                               threshold=0.2, significant=k == "implicit", ci_low=0.1, ci_high=0.5, p_value=0.01,
                               p_holm=0.02, dpd_p=np.nan) for k in ("implicit", "explicit")])
    from louder.analysis.measures.cases import dpd_figure

    assert html.svg(dpd_figure(cases)) == html.svg(dpd_figure(cases))


def test_a_laid_out_figure_is_drawn_once_to_write_it():
    """``svg`` lays the figure out (constrained layout, titles fitted), then savefig draws it once: with
    any layout engine left on the figure — even the "none" placeholder — savefig first draws it a second
    time, draw-disabled, measuring every text again. A figure with no engine to begin with is drawn once
    to measure its titles and once to be written. So whatever layout matplotlibrc asks for."""
    import matplotlib
    from matplotlib.figure import Figure

    from louder.analysis.measures.cases import dpd_figure

    cases = pd.DataFrame([{"kind": k, "model": "m", "condition": "contextualized", "scenario": "s", "group": "g",
                           "dpd": 0.3, "threshold": 0.2, "significant": k == "implicit", "ci_low": 0.1, "ci_high": 0.5,
                           "p_value": 0.01, "p_holm": 0.02, "dpd_p": np.nan} for k in ("implicit", "explicit")])
    for rc in ({}, {"figure.constrained_layout.use": True}, {"figure.autolayout": True}):
        with matplotlib.rc_context(rc):
            fig = dpd_figure(cases)
            assert fig.get_layout_engine() is not None
            draws: list = []
            fig.canvas.mpl_connect("draw_event", draws.append)
            first = html.svg(fig)
            assert len(draws) == 1, rc
            positions = [ax.get_position().bounds for ax in fig.axes]
            assert html.svg(fig) == first, rc  # written again: the same bytes and layout
            assert [ax.get_position().bounds for ax in fig.axes] == positions
    plain = Figure()
    plain.subplots().plot([0, 1], [0, 1])
    draws = []
    plain.canvas.mpl_connect("draw_event", draws.append)
    html.svg(plain)
    assert len(draws) == 2


def test_a_bad_interval_and_a_colour_off_the_palette_are_seen():
    """The checks can fail: an interval that misses its point and a default matplotlib colour."""
    fig = MplFigure()
    ax = fig.subplots()
    ax.errorbar([0.5], [0], xerr=[[0.1], [0.1]], fmt="o", color=palette.BLUE)
    assert figure_checks.problems(fig) == []
    ax.errorbar([0.9], [1], xerr=[[0.1], [0.1]], fmt="o", color=palette.BLUE)
    ax.containers[-1].lines[2][0].set_segments([np.array([[0.1, 1], [0.3, 1]])])  # drawn away from its point
    ax.plot([0, 1], [0, 1])  # matplotlib's default blue
    problems = figure_checks.problems(fig)
    assert any("does not contain its estimate 0.9" in p for p in problems)
    assert any("#1F77B4" in p for p in problems)


def test_a_figure_with_nothing_to_draw_says_why(small):
    a = analyze(small, bootstrap=300, write=False)
    m = registry.get("discrimination")
    ctx = SectionContext(a, m)  # a measure's context while its section is written places its figures
    empty = ctx.figure("coefficients", pd.DataFrame(columns=["status"]), "a title")
    assert empty.startswith('<p class="note nofig" data-figure="discrimination/coefficients">No figure: ')
    with pytest.raises(LouderError, match="does not declare"):
        ctx.figure("nothing_like_this")


def test_tables_show_their_key_columns_and_format_numbers_as_the_console():
    df = pd.DataFrame({"model": ["m", "m"], "scenario": ["a", "b"], "dpd": [0.12345, np.nan], "p_holm": [0.0123456, 1.0],
                       "n_valid": [20.0, 30.0], "significant": [True, False], **{f"extra{i}": [1.5, 2.5] for i in range(9)}})
    out = html.table(df)
    assert '<p class="shared">all rows: model m</p>' in out  # said once, hidden from the key columns
    shown = [n for c, n in re.findall(r'<th(?: class="([^"]*)")?>([^<]+)</th>', out) if "x" not in c.split()]
    assert "scenario" in shown and "dpd" in shown and "model" not in shown
    assert len(shown) == html.MAX_SHOWN and "all 15 columns (7 more)" in out
    assert ">0.123<" in out and ">–<" in out and ">0.0123<" in out and ">20<" in out and ">yes<" in out
    keyed = html.table(df, key=["scenario", "dpd", "model"])
    assert [n for c, n in re.findall(r'<th(?: class="([^"]*)")?>([^<]+)</th>', keyed) if "x" not in c.split()] == [
        "scenario", "dpd"]
    assert html.table(pd.DataFrame()) == '<p class="note">(no rows)</p>'
