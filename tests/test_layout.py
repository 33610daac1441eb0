"""The package's shape: no import cycle between bytepair's modules (counting
the imports inside functions too, so a cycle cannot hide behind a lazy
import), no module that shadows the standard library or a package we wrap, no
file over 600 lines, `import bytepair` without heavy optional packages, and a
`_core.pyi` that lists everything the extension exports."""

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
HEAVY = ("loky", "ray", "pyspark", "matplotlib", "transformers", "torch")


def _modules() -> dict[str, Path]:
    root = SOURCE if SOURCE.exists() else PACKAGE
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _is_type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports for annotations only."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _package_imports(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of `known` that `module` imports anywhere: at the top, inside
    functions and methods (lazy imports run too, only later), in `else`
    branches of `if TYPE_CHECKING:`; not in the `if TYPE_CHECKING:` body,
    which never runs. Imports of other packages (ray, pyspark, loky,
    matplotlib may stay lazy) are not bytepair modules and are left out."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                for branch in child.orelse:
                    visit_one(branch)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        else:
            visit(node)

    visit(ast.parse(source))
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


def test_the_import_finder_sees_lazy_imports_and_skips_type_checking():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import pkg.a\n"
        "if TYPE_CHECKING:\n"
        "    from pkg import b\n"
        "else:\n"
        "    from pkg import c\n"
        "def f():\n"
        "    from . import d\n"
        "class K:\n"
        "    def m(self):\n"
        "        import ray, pkg.e\n"
    )
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.x"}
    found = _package_imports(source, "pkg.x", False, known)
    assert found == {"pkg", "pkg.a", "pkg.c", "pkg.d", "pkg.e"}


def test_no_import_cycle_even_through_function_level_imports():
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        source = path.read_text(encoding="utf-8")
        imports = _package_imports(source, name, path.name == "__init__.py", set(modules))
        # A package's submodule imports its parent package first: that edge is
        # implied, not a cycle (and `from bytepair import __version__` reads the
        # finished package).
        graph[name] = {m for m in imports if not name.startswith(m + ".")}
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
    code = (
        "import sys, bytepair; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
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
