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

DRAWN: list[tuple[str, str, list[str]]] = []  # every figure the reports drew: (its name, alt text, problems)


@pytest.fixture(scope="module")
def golden_runs(tmp_path_factory):
    """The reference runs, analysed and reported — their folder and their snapshot; every figure the
    reports draw is checked as it is drawn (``figure_checks``: intervals around their estimates, the
    palette's colours)."""
    from louder.analysis.report import html

    real = html.figure

    def checked(fig, alt, name="figure", download=None):
        if fig is not None:
            DRAWN.append((name, alt, figure_checks.problems(fig)))
        return real(fig, alt, name, download)

    html.figure = checked
    try:
        # the reference probes run on the fake model, which writes no word pairs: planning them says so
        base = tmp_path_factory.mktemp("golden")
        with pytest.warns(UserWarning, match="writes a filler sentence"):
            return base, golden.build(base)
    finally:
        html.figure = real


@pytest.fixture(scope="module")
def built(golden_runs):
    return golden_runs[1]


@pytest.fixture(scope="module")
def written_files(golden_runs, tmp_path_factory) -> dict[str, list[tuple[str, list[str]]]]:
    """file → [(run, its columns)] of every file the reference runs wrote — each folder's Parquet files,
    each analysis's CSVs (the snapshot's: a run's next setting is analysed afresh) — and of the runs
    docs/reference/outputs.md needs beyond them (``test_docs.extra_runs``)."""
    import io

    import pandas as pd
    from test_docs import columns_of, extra_runs

    base, data = golden_runs
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for label, snap in data.items():
        run = label.split("/")[0]
        for name, text in snap["csv"].items():
            found.setdefault(name, []).append((label, [str(c) for c in pd.read_csv(io.StringIO(text), nrows=0).columns]))
        if label.endswith("/default"):
            for f in sorted((base / run).glob("*.parquet")):
                found.setdefault(f.name, []).append((run, columns_of(f)))
    for run in extra_runs(tmp_path_factory.mktemp("more-runs")):
        for f in sorted(run.glob("*.parquet")) + sorted(run.glob("*.csv")):
            found.setdefault(f.name, []).append((run.name, columns_of(f)))
    return found


@pytest.mark.slow
def test_documented_files_and_columns_are_those_runs_write(written_files):
    """docs/reference/outputs.md lists every file a run folder can hold and each one's columns: every file
    and column the reference runs (every kind of run, each analysis setting) and a few more wrote is on the
    page, and everything on the page was written by one of them. (The golden runs' folders serve: building
    a second set of reference runs for this was 18 s of the suite.)"""
    from test_docs import undocumented

    problems = undocumented(written_files)
    assert not problems, "\n".join(problems)


def _rows(csv_text: str) -> int:
    return len(csv_text.strip().splitlines()) - 1


@pytest.mark.slow
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


@pytest.mark.slow
def test_figures_draw_intervals_around_estimates_in_the_palette_with_alt_text(built):
    assert len(DRAWN) > 100
    bad = [f"{name}: {p}" for name, _, problems in DRAWN for p in problems]
    assert not bad, "\n".join(bad[:20])
    assert all(len(alt) > 30 and alt != "figure" for _, alt, _ in DRAWN), [n for n, a, _ in DRAWN if len(a) <= 30]


@pytest.mark.slow
def test_the_same_analyses(built):
    assert sorted(built) == sorted(golden.read())


@pytest.mark.slow
@pytest.mark.parametrize("part", ["csv", "console", "report"])
def test_every_table_console_and_report_section_is_unchanged(built, part):
    want, problems = golden.read(), []
    for name, got in built.items():
        w, g = want[name][part], got[part]
        # a number that prints an iterative fit's value may move as that value may (golden.TOLERANCES)
        tolerated = golden.tolerated_values(want[name]["csv"], got["csv"])
        if part == "console":
            if not golden.text_matches(w, g, tolerated):
                problems.append(f"{name} console:\n" + "\n".join(difflib.unified_diff(
                    w.splitlines(), g.splitlines(), lineterm="", n=1)))
            continue
        if sorted(w) != sorted(g):
            problems.append(f"{name} {part}: {sorted(set(w) - set(g))} gone, {sorted(set(g) - set(w))} new")
        for k in sorted(set(w) & set(g)):
            if part == "csv":
                problems += [f"{name} {k}: {d}" for d in golden.csv_differences(w[k], g[k], k)]
            elif not golden.text_matches(w[k], g[k], tolerated):
                diff = difflib.unified_diff(w[k].split("<tr>"), g[k].split("<tr>"), lineterm="", n=0)
                problems.append(f"{name} report section {k!r}:\n" + "\n".join(list(diff)[:12]))
    assert not problems, "\n".join(problems[:40])


# --- what "unchanged" means (golden.TOLERANCES), on tables made here --------------------------------------

DISCRIMINATION = """group,attribute,coef,ci_low,ci_high,p_value,p_holm,significant,n,method,status
g,A,2.493632,2.233021,2.754242,1.8e-78,3.6e-78,True,60,mixedlm_slopes,ok
g,B,0.396265,0.140383,0.652146,0.002403358,0.002403358,True,60,mixedlm_slopes,ok
g,A,1.834685,0.767756,2.901613,0.000751,0.001501,True,120,logit,ok
"""


def _moved(text: str, row: int, column: str, value) -> str:
    import io

    import pandas as pd

    t = pd.read_csv(io.StringIO(text))
    t.loc[row, column] = value
    return t.to_csv(index=False)


def test_iterative_fits_compare_within_their_stated_tolerance_and_the_rest_exactly():
    w = DISCRIMINATION
    assert golden.csv_differences(w, w, "discrimination.csv") == []
    # a mixed model's interval within 1e-3 (an optimiser's wobble), its p-value far in the tail: the same
    assert golden.csv_differences(w, _moved(_moved(w, 0, "ci_low", 2.2345), 0, "p_value", 3e-78),
                                  "discrimination.csv") == []
    # issue 47's unconverged random-slopes fit: the interval 2 % off, p 11 % off — caught
    assert golden.csv_differences(w, _moved(w, 0, "ci_low", 2.195), "discrimination.csv")
    assert golden.csv_differences(w, _moved(w, 1, "p_value", 0.00268), "discrimination.csv")
    # a logistic regression's row (IRLS) may move 1e-7, not 1e-4; the same column of a table with no
    # tolerance stated, and counts, strings and verdicts, not at all
    assert golden.csv_differences(w, _moved(w, 2, "coef", 1.834685 * (1 + 1e-7)), "discrimination.csv") == []
    assert golden.csv_differences(w, _moved(w, 2, "coef", 1.8348), "discrimination.csv")
    assert golden.csv_differences(w, _moved(w, 0, "ci_low", 2.2345), "cases.csv")
    assert golden.csv_differences(w, _moved(w, 0, "n", 61), "discrimination.csv")
    assert golden.csv_differences(w, _moved(w, 0, "significant", False), "discrimination.csv")
    assert golden.csv_differences(w, _moved(w, 0, "status", "failed"), "discrimination.csv")
    problem = golden.csv_differences(w, _moved(w, 0, "ci_high", 2.792), "discrimination.csv")
    assert len(problem) == 1 and "2.754242 → 2.792" in problem[0] and "REML" in problem[0]


def test_a_printed_number_may_move_only_as_the_tolerated_cell_it_prints():
    got = _moved(DISCRIMINATION, 0, "ci_low", 2.23349)  # prints 2.233 → 2.233, and to 4 places 2.2330 → 2.2335
    tolerated = golden.tolerated_values({"discrimination.csv": DISCRIMINATION}, {"discrimination.csv": got})
    assert tolerated == [(2.233021, 2.23349)]
    page = "<td>2.494</td><td>{lo}</td><td>2.754</td> coef 2.49 [{short}, 2.75], dpd {dpd}"
    want = page.format(lo="2.2330", short="2.23", dpd="0.471")
    assert golden.text_matches(want, page.format(lo="2.2335", short="2.23", dpd="0.471"), tolerated)
    assert not golden.text_matches(want, page.format(lo="2.1950", short="2.20", dpd="0.471"), tolerated)
    assert not golden.text_matches(want, page.format(lo="2.2335", short="2.23", dpd="0.472"), tolerated)
    assert not golden.text_matches(want, page.format(lo="2.2335", short="2.23", dpd="0.471") + " more", tolerated)
    assert not golden.text_matches(want, page.format(lo="2.2335", short="2.23", dpd="0.471"), [])
