"""The code's shape: no function longer than a screen in the app's packages, no import circle
anywhere in them (subpackages included), and the floors of the house: no package imports one
above it, ``app_pages/`` holds pages only, pages and ``ui/`` hold no torch and no process-wide
settings, ``viz/`` no torch or Streamlit. All but one read the source with ``ast``; that one
imports ``viz/`` in a child process."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "viz", "teaching", "server", "ui", "app_pages", "bench")
MAX_LINES = 80  # a function from its ``def`` to its last line (decorators and docstring included)
# The floors of the house: each package may import only its own modules and those named here.
# model/ (the encoder–decoder), viz/ (figures from plain data) and server/ (settings, limits,
# the class store) stand alone; teaching/ (numpy-only content) may use model/'s torch-free
# metrics; ui/ (Streamlit parts the pages share) wires them; app_pages/ wires ui/ and the
# rest, and nothing imports a page. The top files (app.py, navigation.py) are above them all.
MAY_IMPORT = {
    "model": set(),
    "viz": set(),
    "server": set(),
    "teaching": {"model"},
    "ui": {"model", "viz", "server", "teaching"},
    "app_pages": {"model", "viz", "server", "teaching", "ui"},
    "bench": {"model", "viz", "server", "teaching", "ui"},
    "scripts": {"model", "viz", "server", "teaching", "ui"},
}
FIRST_PARTY = (*MAY_IMPORT, "app", "navigation", "tests")
# third-party packages a floor must not import: model/ knows no UI, viz/ no torch, teaching/ is numpy
NEVER_IMPORTS = {
    "model": {"streamlit", "plotly"},
    "viz": {"torch", "streamlit"},
    "teaching": {"torch", "streamlit", "plotly"},
    "server": {"torch", "plotly"},
    "ui": {"torch"},
    "app_pages": {"torch"},
}


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


def module_name(path: Path, root: Path = ROOT) -> str:
    """``ui/zoo_cache.py`` -> ``ui.zoo_cache``; a package's ``__init__.py`` is the package itself."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, root: Path = ROOT) -> set[str]:
    """Every dotted name ``path`` imports, at the top or inside a function; a relative import is
    made absolute, and ``from a import b`` gives both ``a`` and ``a.b`` (``b`` may be a module)."""
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


def import_graph(packages: tuple[str, ...], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` (subpackages included) it imports, at the top or
    inside a function, as dotted names (``ui.zoo_cache`` -> ``model.search``, …)."""
    paths = [p for package in packages for p in sorted((root / package).rglob("*.py"))]
    modules = {module_name(p, root) for p in paths}
    graph = {}
    for path in paths:
        name = module_name(path, root)
        graph[name] = {m for m in imported_names(path, root) if m in modules and m != name
                       and not name.startswith(m + ".")}  # a package's own __init__ is not an edge back
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


MAX_MODULE_LINES = 500  # the server's and the UI's modules: one concern each (a package where a concern grows)


def test_no_server_or_ui_module_is_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in _sources("server", "ui")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_the_line_count_finds_a_long_function_and_a_long_method(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))  # def + 79 lines: 80, allowed
    method = "\n".join(f"        y{i} = {i}" for i in range(MAX_LINES))  # def + 80 lines: 81
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n\n\nclass C:\n    async def m(self):\n{method}\n")
    assert long_functions([tmp_path / "long.py"], root=tmp_path) == [f"long.py:{MAX_LINES + 4} m ({MAX_LINES + 1} lines)"]


def test_no_import_circle_anywhere():
    graph = import_graph(tuple(MAY_IMPORT))
    assert "model.checkpoint" in graph["model.hf"] and "model.hf" in graph["model.zoo"]  # lazy imports seen
    assert "ui.zoo_cache" in graph["app_pages.translate"] and "model.metrics" in graph["teaching.exercises"]
    assert cycles(graph) == []


def _first_party_imports(package: str) -> dict[str, set[str]]:
    """Module of ``package`` -> the top-level packages it imports (first-party or not)."""
    return {module_name(p): {name.split(".")[0] for name in imported_names(p)}
            for p in sorted((ROOT / package).rglob("*.py"))}


@pytest.mark.parametrize("package", list(MAY_IMPORT))
def test_no_package_imports_one_on_a_higher_floor(package):
    imports = _first_party_imports(package)
    assert imports
    above = {m: sorted(names & set(FIRST_PARTY) - MAY_IMPORT[package] - {package}) for m, names in imports.items()}
    assert {m: names for m, names in above.items() if names} == {}
    banned = {m: sorted(names & NEVER_IMPORTS.get(package, set())) for m, names in imports.items()}
    assert {m: names for m, names in banned.items() if names} == {}


def test_app_pages_holds_pages_only():
    """Streamlit runs each page file; no module (page, helper, test or the server) imports one."""
    sources = [p for folder in (*MAY_IMPORT, "tests") for p in (ROOT / folder).rglob("*.py")]
    sources += [ROOT / "app.py", ROOT / "navigation.py"]
    importers = {str(p.relative_to(ROOT)): sorted(n for n in imported_names(p) if n.startswith("app_pages."))
                 for p in sources}
    assert {p: names for p, names in importers.items() if names} == {}
    pages = {p.name for p in (ROOT / "app_pages").glob("*.py")} - {"__init__.py"}
    navigation = (ROOT / "navigation.py").read_text(encoding="utf-8")
    assert {p for p in pages if f'"app_pages/{p}"' not in navigation} == set()  # each file is a page


def test_the_floors_see_a_wrong_import(tmp_path):
    (tmp_path / "viz").mkdir()
    (tmp_path / "viz" / "a.py").write_text("def f():\n    from ui.zoo_cache import zoo\n    import torch\n")
    assert imported_names(tmp_path / "viz" / "a.py", tmp_path) == {"ui.zoo_cache", "ui.zoo_cache.zoo", "torch"}


def test_the_cycle_search_finds_a_circle_through_a_lazy_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("from .b import x\n")
    (tmp_path / "pkg" / "b.py").write_text("import os\n\n\ndef load():\n    from pkg.a import y\n")
    (tmp_path / "pkg" / "c.py").write_text("from . import a\nimport pkg.b\n")
    (tmp_path / "pkg" / "sub").mkdir()
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "d.py").write_text("from ..c import z\n")
    graph = import_graph(("pkg",), root=tmp_path)
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a", "pkg.b"}, "pkg.sub": set(),
                     "pkg.sub.d": {"pkg.c"}}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_viz_imports_no_torch():
    code = ("import sys, viz.heatmap, viz.bleu, viz.curves, viz.export, viz.latex, viz.paper_figures; "
            "assert 'torch' not in sys.modules, 'viz imported torch'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def _imports(path) -> set[str]:
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


PAGE_FILES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py") if p.name != "__init__.py")
UI_FILES = sorted(f"../{p.relative_to(ROOT)}" for p in (ROOT / "ui").rglob("*.py") if p.name != "__init__.py")
VIZ_FILES = sorted(p.name for p in (ROOT / "viz").glob("*.py"))
SERVER_FILES = sorted(f"../{p.relative_to(ROOT)}" for p in (ROOT / "server").rglob("*.py") if p.name != "__init__.py")


SHARED_RESOURCES = {"../ui/zoo_cache.py", "../server/limits.py", "emerge.py"}  # the zoo, the server's limits, the toy vocabulary


@pytest.mark.parametrize("page_file", PAGE_FILES + UI_FILES + SERVER_FILES + ["../navigation.py", "../app.py"])
def test_pages_only_wire(page_file):
    """Pages wire model/ to viz/: no torch of their own, no process-wide settings, and
    shared resources only where the server owns them."""
    path = ROOT / "app_pages" / page_file
    source = path.read_text(encoding="utf-8")
    assert "torch" not in _imports(path) and "torch." not in source
    assert "set_num_threads" not in source and "os.environ[" not in source and "os.putenv" not in source
    if page_file not in SHARED_RESOURCES:
        assert "st.cache_resource" not in source, "models are loaded once, in ui/zoo_cache.py"


@pytest.mark.parametrize("viz_file", VIZ_FILES)
def test_viz_knows_no_torch_and_no_streamlit(viz_file):
    imports = _imports(ROOT / "viz" / viz_file)
    assert not imports & {"torch", "streamlit", "model", "app_pages", "ui"}, imports


def readme_layout(root: Path = ROOT) -> str:
    """The code block under README's "How the code is laid out"."""
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## How the code is laid out"):]
    return section.split("```")[1]


def test_the_readme_layout_names_every_package_and_module():
    """A newcomer's map: every folder of the repository and every module of the app's packages
    (bench/ and scripts/ by group) appear in README's layout."""
    layout = readme_layout()
    made_here = {"test-output", "runs", "logs"}  # written by tests and training, ignored by git
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))} - made_here
    assert {f for f in folders if f"{f}/" not in layout} == set()
    modules = {p for package in ("model", "viz", "server", "ui", "teaching") for p in (ROOT / package).glob("*.py")
               if p.name != "__init__.py"}
    assert {str(p.relative_to(ROOT)) for p in modules if p.name not in layout} == set()
    assert all(f"{f}.py" in layout for f in ("app", "navigation"))


def test_viz_names_every_module_it_holds():
    doc = ast.get_docstring(ast.parse((ROOT / "viz" / "__init__.py").read_text(encoding="utf-8")))
    assert {p.stem for p in (ROOT / "viz").glob("*.py") if f":mod:`viz.{p.stem}`" not in doc} == {"__init__"}


def defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_every_name_from_ui_is_imported_from_the_module_that_defines_it():
    """No re-exports: a page (or anything) names the ui/ module a helper lives in."""
    defines = {f"ui.{p.stem}": defined_names(p) for p in (ROOT / "ui").glob("*.py")}
    sources = [p for folder in (*MAY_IMPORT, "tests") for p in (ROOT / folder).rglob("*.py")]
    wrong = []
    for path in [*sources, ROOT / "app.py", ROOT / "navigation.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in defines:
                wrong += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name not in defines[node.module]]
    assert wrong == []


# Streamlit's private internals are touched in one package (server/streamlit_patches/) and the
# tests of its patches; everywhere else a Streamlit upgrade could break them unseen.
PRIVATE_STREAMLIT_DOOR = ("server/streamlit_patches/", "tests/test_streamlit_patches.py", "tests/test_serving.py")
PRIVATE_NAMES = {"_state", "_session_state", "_populate_theme_msg", "ScriptCache", "AppSession"}


def private_streamlit_uses(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Every ``streamlit.runtime`` import and every use of a private name of Streamlit's
    (``PRIVATE_NAMES``, as an attribute, a name or an imported name), as ``path:line what``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            what = next((m for m in modules if m == "streamlit.runtime" or m.startswith("streamlit.runtime.")), None)
            if isinstance(node, ast.ImportFrom) and node.module == "streamlit" and any(a.name == "runtime" for a in node.names):
                what = "streamlit.runtime"
            name = (node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name)
                    else next((a.name for a in node.names if a.name in PRIVATE_NAMES), None)
                    if isinstance(node, ast.ImportFrom) else None)
            if what or name in PRIVATE_NAMES:
                found.append(f"{path.relative_to(root)}:{node.lineno} {what or name}")
    return found


def test_streamlits_private_internals_are_touched_in_one_module_only():
    everywhere = [p for p in ROOT.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    elsewhere = [p for p in everywhere if not str(p.relative_to(ROOT)).startswith(PRIVATE_STREAMLIT_DOOR)]
    assert private_streamlit_uses(elsewhere) == []


def test_the_private_access_check_sees_each_kind_of_use(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("import streamlit.runtime.runtime\nfrom streamlit.runtime import Runtime\nfrom streamlit import runtime\n"
                    "from streamlit.runtime.app_session import AppSession\n"
                    "def f(ctx, s):\n    return ctx.session_state._state, s._session_state, AppSession\n")
    found = private_streamlit_uses([page], tmp_path)
    assert found == ["page.py:1 streamlit.runtime.runtime", "page.py:2 streamlit.runtime", "page.py:3 streamlit.runtime",
                     "page.py:4 streamlit.runtime.app_session", "page.py:6 _state", "page.py:6 _session_state",
                     "page.py:6 AppSession"], found


def test_a_page_reads_the_browsers_cookies_only_through_the_session_keys_a_shared_run_is_keyed_by():
    """A follower's run may be a copy of another's (server/streamlit_patches/replay.py), keyed by the
    session's state: a cookie a page reads must be in it (``ui.class_session.page_cookie``), not
    read from the request. Only the class's identity (ui/class_session.py) and the visitor's turn
    (server/visitor.py, never drawn) read ``st.context.cookies``."""
    readers = set()
    for path in [p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).parts[0] in (*PACKAGES, "app.py", "navigation.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "cookies" and isinstance(node.value, ast.Attribute) \
                    and node.value.attr == "context":
                readers.add(str(path.relative_to(ROOT)))
    assert readers <= {"ui/class_session.py", "server/visitor.py"}, readers


def test_no_page_or_ui_function_writes_a_global():
    """A shared run's fragment (server/streamlit_patches/replay.py) runs in the recorded run's
    namespace for every session that shares it: a page or ui function that wrote a global would
    write another session's value (Step through's step did). Module-level counters of the
    process (``ui/zoo_cache.py``'s loads) are no page state."""
    writers = set()
    for path in [p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).parts[0] in ("app_pages", "ui", "navigation.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Global):
                writers.add(f"{path.relative_to(ROOT)}: {', '.join(node.names)}")
    assert writers <= {"ui/zoo_cache.py: zoo_loads"}, writers
