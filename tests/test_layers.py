"""The package's layers (issue 41): no import circle anywhere in louder/ — imports inside functions and
under TYPE_CHECKING counted —, statistics never import a measure, a measure never imports another
measure, the API imports no CLI module, and the analysis core holds nothing of any one measure."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "louder"


def _module(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str, root: Path = ROOT) -> bool:
    p = root.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every louder module ``path`` imports, wherever the import stands (a function, a TYPE_CHECKING
    block): ``from pkg import sub`` is an import of the submodule when ``pkg.sub`` is a module."""
    me = _module(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "louder"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "louder":
                continue
            for a in node.names:
                out.add(f"{base}.{a.name}" if _exists(f"{base}.{a.name}", root) else base)
    return {m for m in out if m != me}


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in PACKAGE.rglob("*.py"):
        g.add_node(_module(path))
        for m in imports(path):
            g.add_edge(_module(path), m)
    return g


def test_no_import_circle_in_louder():
    cycles = sorted(nx.simple_cycles(graph()), key=len)
    assert not cycles, "import circles (imports inside functions counted): " + "; ".join(
        " → ".join([*c, c[0]]) for c in cycles[:10])


def test_the_circle_check_sees_an_import_inside_a_function(tmp_path):
    (tmp_path / "louder").mkdir()
    (tmp_path / "louder" / "a.py").write_text("def f():\n    from louder import b\n")
    (tmp_path / "louder" / "b.py").write_text("import louder.a\n")
    assert imports(tmp_path / "louder" / "a.py", tmp_path) == {"louder.b"}
    assert imports(tmp_path / "louder" / "b.py", tmp_path) == {"louder.a"}


MEASURES = "louder.analysis.measures"


def test_statistics_never_import_a_measure_and_a_measure_no_other():
    g = graph()
    for src, dst in g.edges:
        if not dst.startswith(MEASURES + "."):
            continue
        # the registry finds louder's measures by their package (importlib), never by name
        assert not src.startswith("louder.analysis.") or src.startswith(MEASURES), f"{src} imports the measure {dst}"
        assert not src.startswith(MEASURES + "."), f"measure {src} imports measure {dst}"


def test_the_api_imports_no_cli_module():
    g = graph()
    assert not [m for m in nx.descendants(g, "louder.api") if m.startswith("louder.cli")]


def test_the_analysis_core_knows_no_measure():
    """Analysis holds the run folder's files and the views of them, not a field per input of a measure;
    the core modules name no measure."""
    from louder.analysis.engine import registry, select
    from louder.analysis.engine.inputs import Analysis, Settings

    fields = {f.name for f in dataclasses.fields(Analysis)}
    assert fields == {"run_dir", "settings", "tables", "missing", "manifests", "seconds", "cached", "state", "_files",
                      "_rows", "_groups"}
    assert {f.name for f in dataclasses.fields(Settings)} == {"bootstrap", "seed", "options"}
    # ("cases" is also a plain word of the core's prose, "models" the manifest's key of a run's models, and a
    # dimension is not a measure)
    names = {m.name for m in registry.measures()} - {"cases", "models"} - {a.id for a in select.axes()}
    core = [*(PACKAGE / "analysis" / "engine").glob("*.py"), PACKAGE / "analysis" / "report" / "page.py",
            PACKAGE / "analysis" / "report" / "findings.py"]
    for path in core:
        code = path.read_text("utf-8")
        tree = ast.parse(code)
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not names & strings, f"{path.relative_to(PACKAGE)} names the measure(s) {names & strings}"


def test_every_name_a_benchmark_or_tool_imports_from_louder_exists():
    """benchmarks/ and docs/tools/ are scripts no test imports whole; what they import from louder must
    exist (a refactor that moves a function moves their import too)."""
    import importlib

    missing = []
    for path in [*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "docs" / "tools").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("louder"):
                module = importlib.import_module(node.module)
                for a in node.names:
                    if not hasattr(module, a.name) and not _exists(f"{node.module}.{a.name}"):
                        missing.append(f"{path.relative_to(ROOT)}: from {node.module} import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("louder") and not _exists(a.name):
                        missing.append(f"{path.relative_to(ROOT)}: import {a.name}")
    assert not missing, missing
