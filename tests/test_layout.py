"""The package's shape (issue 16): no import cycles at import time, no module
that shadows the standard library or a package we wrap, no file over 600
lines, `import bytepair` without heavy optional packages, and a `_core.pyi`
that lists everything the extension exports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import bytepair
from bytepair import _core

PACKAGE = Path(bytepair.__file__).parent
SOURCE = Path(__file__).resolve().parents[1] / "python" / "bytepair"
HEAVY = ("loky", "ray", "pyspark", "matplotlib")


def _modules() -> dict[str, Path]:
    root = SOURCE if SOURCE.exists() else PACKAGE
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _import_time_imports(path: Path, module: str, known: set[str]) -> set[str]:
    """Package modules `module` imports when it is imported: top-level import
    statements, not those inside functions or `if TYPE_CHECKING:`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known and name != module}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_at_import_time():
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        # A package's submodule imports its parent package first: that edge is implied, not a cycle.
        graph[name] = {
            m
            for m in _import_time_imports(path, name, set(modules))
            if not name.startswith(m + ".")
        }
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


def test_no_module_shadows_the_standard_library_or_a_wrapped_package():
    shadowing = sorted(
        str(path)
        for name, path in _modules().items()
        if name.rpartition(".")[2] in sys.stdlib_module_names or name.rpartition(".")[2] in HEAVY
    )
    assert shadowing == []


def test_no_source_file_over_600_lines():
    long = {
        str(p): n
        for p in _modules().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}


def test_import_bytepair_imports_no_heavy_optional_package():
    code = f"import sys, bytepair; print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("owner", ["module", "WordCounter", "CoreBPE"])
def test_core_stub_lists_every_export(owner):
    stub = ast.parse((PACKAGE / "_core.pyi").read_text(encoding="utf-8"))
    if owner == "module":
        declared = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        exported = {n for n in dir(_core) if not n.startswith("_")}
    else:
        cls = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == owner)
        declared = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        exported = {n for n in dir(getattr(_core, owner)) if not n.startswith("_")}
    assert exported - declared == set()


def test_python_dash_m_bytepair_is_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "bytepair", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("usage: bytepair")
