"""The golden reference runs (tests/golden.py): every CSV, the console of `louder analyze` and every
report section of a set of reference runs — a population run with twins, network, archetype and
sequential runs, a run that varies wording × order × reasoning × intervention, a human study, score
mode, Bai et al.'s probes and WEAT, each analysed with every analysis setting — are what they were
when the snapshot was written (tests/data/golden.json.gz). A change that is meant to move a table
rewrites the snapshot (``python tests/golden.py --write``) and says which rows changed, and why."""

from __future__ import annotations

import difflib

import pytest

import golden

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    # the reference probes run on the fake model, which writes no word pairs: planning them says so
    with pytest.warns(UserWarning, match="writes a filler sentence"):
        return golden.build(tmp_path_factory.mktemp("golden"))


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
