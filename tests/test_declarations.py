"""Issue 47: one home and one name per concept. A measure's declarations live in one module
(``louder.analysis.engine.declarations``), its context declares its inputs (a name it did not declare
fails naming those it did), the four registries share one type, and the names users had keep working
with a FutureWarning that names the new one."""

from __future__ import annotations

import importlib
import warnings

import pandas as pd
import pytest

from louder import dimensions, kinds
from louder.analysis.engine import declarations as D
from louder.analysis.engine import registry, select
from louder.analysis.engine.inputs import Analysis, Settings
from louder.errors import LouderError
from louder.llm import registry as backends
from louder.registry import Registry


def test_the_old_names_warn_and_are_the_new_ones():
    import louder.analysis as A

    for old, new in (("Show", D.Cell), ("View", D.Console), ("Plot", D.Figure)):
        with pytest.warns(FutureWarning, match=f"louder.analysis.{old} is now louder.analysis.{new.__name__}"):
            assert getattr(A, old) is new
    with pytest.warns(FutureWarning, match="report.console.key"):
        from louder.analysis.engine.registry import key  # noqa: F401
    with pytest.warns(FutureWarning, match="runs_after"):
        assert registry.before is registry.runs_after
    with pytest.warns(FutureWarning, match="select.rows"):
        assert select.view(pd.DataFrame({"x": [1]}), D.Input("x", raw=True)) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = importlib.import_module("louder.analysis.figures")
    with pytest.warns(FutureWarning, match="louder.analysis.measures.cases"):
        from louder.analysis.measures.cases import dpd_figure

        assert old.dpd_figure is dpd_figure
    with pytest.warns(FutureWarning, match=r"Measure\(views=…\) is now Measure\(console=…\)"):
        m = D.Measure("m", "x", (), build=lambda a: {}, views=(D.Console("t", "title", ()),))
    assert m.console[0].table == "t"
    with pytest.warns(FutureWarning, match="Measure.views is now Measure.console"):
        assert m.views == m.console
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn of nothing
        from louder.analysis import Cell, Console, Figure, Measure  # noqa: F401


def test_a_context_has_its_declared_inputs_and_a_typo_names_them(tmp_path):
    (tmp_path / "decisions.parquet").write_bytes(b"")  # never read: the typo fails first
    m = D.Measure("reader", "x", (), build=lambda a: {}, inputs=(D.Input("decisions"), D.Input("probes")))
    a = Analysis(tmp_path, Settings())
    ctx = a.context(m)
    assert "decisions" in dir(ctx) and ctx.seed == 0 and ctx.bootstrap == a.settings.bootstrap
    assert ctx.missing is a.missing and ctx.run_dir == tmp_path  # the analysis' own, never copied
    with pytest.raises(AttributeError, match=r"reads 'decisons', which it does not declare \(its inputs: "
                                             r"decisions, probes\)"):
        ctx.decisons  # noqa: B018
    clash = D.Measure("clash", "x", (), build=lambda a: {}, inputs=(D.Input("seed"),))
    with pytest.raises(LouderError, match="input 'seed' has the name of its context's own seed"):
        a.context(clash)


def test_the_registries_are_one_type_and_say_what_an_unknown_name_might_be():
    for r in (registry.MEASURES, kinds.KINDS, dimensions.DIMENSIONS, backends.BACKENDS):
        assert isinstance(r, Registry)
    with pytest.raises(LouderError, match=r"unknown kind of run 'explict' \(did you mean 'explicit'\?\)"):
        kinds.get("explict")
    with pytest.raises(LouderError, match=r"unknown dimension 'wordng' \(did you mean 'wording'\?\)"):
        dimensions.get("wordng")
    with pytest.raises(LouderError, match=r"--set x: no measure 'caes' \(did you mean 'cases'\?\)"):
        registry.get("caes", "--set x")
    r = Registry("thing", D.Table)
    t = r.register(D.Table("a", "doc", ()))
    assert r.get("a") is t and r.names() == ["a"] and "a" in r
    r.unregister("a")
    assert r.find("a") is None
