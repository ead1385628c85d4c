"""The code's shape: no function longer than a screen in the app's packages, no import circle
in ``model/``, and docs a reader can keep true (each at most 15 KB). Each reads the files
(the source with ``ast``); nothing is imported or run."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "viz", "app_pages", "server", "bench")
MAX_LINES = 80  # a function from its ``def`` to its last line (decorators and docstring included)
MAX_DOC_BYTES = 15_000  # a doc is a reference of the present; the history is data in results/


def _sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def long_functions(paths: list[Path], limit: int = MAX_LINES, root: Path = ROOT) -> list[str]:
    """Every function or method (nested ones too) over ``limit`` lines, as ``path:line name (n lines)``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, at the top or inside a function."""
    names = {p.stem for p in (root / package).glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in (root / package).glob("*.py"):
        edges = graph.setdefault(path.stem, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:  # from .checkpoint import ...
                    edges.add(node.module.split(".")[0])
                elif node.level == 1:  # from . import hf
                    edges.update(a.name for a in node.names)
                elif node.level == 0 and node.module and node.module.split(".")[0] == package:
                    parts = node.module.split(".")
                    edges.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                edges.update(a.name.split(".")[1] for a in node.names
                             if a.name.startswith(package + ".") and len(a.name.split(".")) > 1)
        edges &= names
        edges.discard(path.stem)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the path that closes it (depth-first search)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                circle = path[path.index(nxt):]
                if not any(set(circle) == set(c) for c in found):
                    found.append(circle + [nxt])
            elif nxt not in done:
                visit(nxt, path + [nxt])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_no_function_is_over_80_lines():
    assert long_functions(_sources(*PACKAGES)) == []


def test_the_line_count_finds_a_long_function_and_a_long_method(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))  # def + 79 lines: 80, allowed
    method = "\n".join(f"        y{i} = {i}" for i in range(MAX_LINES))  # def + 80 lines: 81
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n\n\nclass C:\n    async def m(self):\n{method}\n")
    assert long_functions([tmp_path / "long.py"], root=tmp_path) == [f"long.py:{MAX_LINES + 4} m ({MAX_LINES + 1} lines)"]


def test_no_module_in_model_imports_one_that_imports_it_back():
    graph = import_graph("model")
    assert "checkpoint" in graph["hf"] and "hf" in graph["zoo"]  # the graph sees imports, lazy ones too
    assert cycles(graph) == []


@pytest.mark.parametrize("package", ["viz", "app_pages", "server"])
def test_no_import_circle_in_the_other_packages(package):
    graph = import_graph(package)
    assert any(graph.values())  # the package's own imports are seen
    assert cycles(graph) == []


def test_the_cycle_search_finds_a_circle_through_a_lazy_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("from .b import x\n")
    (tmp_path / "pkg" / "b.py").write_text("import os\n\n\ndef load():\n    from pkg.a import y\n")
    (tmp_path / "pkg" / "c.py").write_text("from . import a\nimport pkg.b\n")
    graph = import_graph("pkg", root=tmp_path)
    assert graph == {"a": {"b"}, "b": {"a"}, "c": {"a", "b"}}
    assert cycles(graph) == [["a", "b", "a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_every_doc_is_at_most_15_kb():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert {p.name: p.stat().st_size for p in docs if p.stat().st_size > MAX_DOC_BYTES} == {}
