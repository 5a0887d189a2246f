"""The golden reference runs (tests/golden.py): every CSV, the console of `louder analyze` and every
report section of a set of reference runs — a population run with twins, network, archetype and
sequential runs, a run that varies wording × order × reasoning × intervention, a human study, score
mode, Bai et al.'s probes and WEAT, each analysed with every analysis setting — are what they were
when the snapshot was written (tests/data/golden.json.gz). A change that is meant to move a table
rewrites the snapshot (``python tests/golden.py --write``) and says which rows changed, and why."""

from __future__ import annotations

import difflib

import figure_checks
import golden
import pytest

pytestmark = pytest.mark.slow
DRAWN: list[tuple[str, str, list[str]]] = []  # every figure the reports drew: (its name, alt text, problems)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The reference runs, analysed and reported; every figure the reports draw is checked as it is drawn
    (``figure_checks``: intervals around their estimates, the palette's colours)."""
    from louder.analysis.report import html

    real = html.figure

    def checked(fig, alt, name="figure", download=None):
        if fig is not None:
            DRAWN.append((name, alt, figure_checks.problems(fig)))
        return real(fig, alt, name, download)

    html.figure = checked
    try:
        # the reference probes run on the fake model, which writes no word pairs: planning them says so
        with pytest.warns(UserWarning, match="writes a filler sentence"):
            return golden.build(tmp_path_factory.mktemp("golden"))
    finally:
        html.figure = real


def _rows(csv_text: str) -> int:
    return len(csv_text.strip().splitlines()) - 1


def test_every_measure_that_writes_a_table_has_a_figure_in_its_section(built):
    """Issue 43, over the registry: in every reference analysis, each measure that wrote a table with rows
    places one of its declared figures in its section (``data-figure="MEASURE/…"``: the figure, or the line
    saying why this run has nothing to draw) — and across the reference runs each such measure really draws."""
    from louder.analysis.engine import registry

    problems, drew = [], set()
    for name, got in built.items():
        report = "".join(got["report"].values())
        for m in registry.measures():
            wrote = [t.name for t in m.tables if _rows(got["csv"].get(f"{t.name}.csv", "")) > 0]
            if not wrote:
                continue
            if f'data-figure="{m.name}/' not in report:
                problems.append(f"{name}: measure {m.name} wrote {', '.join(wrote)} and its section has no figure")
            if f'<figure class="fig" data-figure="{m.name}/' in report:
                drew.add(m.name)
    # (a run of several models is not among the reference runs: test_compare checks the models measure's figure;
    # nor is a convention run (issue 48): test_convention checks its measure's figures the same way)
    with_tables = {m.name for m in registry.measures() if m.tables} - {"models", "convention"}
    written = {m.name for m in registry.measures() for got in built.values()
               if any(_rows(got["csv"].get(f"{t.name}.csv", "")) > 0 for t in m.tables)}
    assert not problems, "\n".join(problems)
    assert written == with_tables  # the reference runs exercise every measure that writes tables …
    assert drew == written, sorted(written - drew)  # … and each draws its figure in one of them at least


def test_figures_draw_intervals_around_estimates_in_the_palette_with_alt_text(built):
    assert len(DRAWN) > 100
    bad = [f"{name}: {p}" for name, _, problems in DRAWN for p in problems]
    assert not bad, "\n".join(bad[:20])
    assert all(len(alt) > 30 and alt != "figure" for _, alt, _ in DRAWN), [n for n, a, _ in DRAWN if len(a) <= 30]


def test_the_same_analyses(built):
    assert sorted(built) == sorted(golden.read())


@pytest.mark.parametrize("part", ["csv", "console", "report"])
def test_every_table_console_and_report_section_is_unchanged(built, part):
    want, problems = golden.read(), []
    for name, got in built.items():
        w, g = want[name][part], got[part]
        if part == "console":
            if w != g:
                problems.append(f"{name} console:\n" + "\n".join(difflib.unified_diff(
                    w.splitlines(), g.splitlines(), lineterm="", n=1)))
            continue
        if sorted(w) != sorted(g):
            problems.append(f"{name} {part}: {sorted(set(w) - set(g))} gone, {sorted(set(g) - set(w))} new")
        for k in sorted(set(w) & set(g)):
            if part == "csv":
                problems += [f"{name} {k}: {d}" for d in golden.csv_differences(w[k], g[k])]
            elif w[k] != g[k]:
                diff = difflib.unified_diff(w[k].split("<tr>"), g[k].split("<tr>"), lineterm="", n=0)
                problems.append(f"{name} report section {k!r}:\n" + "\n".join(list(diff)[:12]))
    assert not problems, "\n".join(problems[:40])
