"""No import cycle among the package's modules: a walk over every import statement that runs
(module level and inside functions: a lazy import is a dependency all the same), then a search
for strongly connected components of the module graph.

Not counted, each for a reason:

- imports under ``if TYPE_CHECKING:`` (never executed: annotations only);
- imports inside a module-level ``__getattr__`` (PEP 562): the deprecated aliases of moved
  names (e.g. ``models.base.evaluate_classes``), run on access only, never while the module
  loads;
- a module's import of one of its own ancestor packages (``from ldiv_polars.search import
  _counting`` inside ``search``): Python initializes the ancestors first whatever the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ldiv_polars"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:`` and inside a module ``__getattr__``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        type_only = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        if type_only:
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            out.update(id(n) for n in ast.walk(node))
    return out


def _imports(path: Path) -> set[str]:
    """Every ``ldiv_polars`` name a counted import statement of ``path`` names (modules and
    ``module.name`` pairs; the caller keeps those that are modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _skipped(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (see the module docstring for what is not
    counted)."""
    files = {_module(p): p for p in PKG.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in files and i != m
                and not m.startswith(i + ".")}
            for m, p in files.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_detector_finds_a_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package():
    found = cycles(graph())
    assert not found, (
        "import cycles (move what the lower module needs below it, or import lazily in a "
        f"module __getattr__ for an alias): {found}")
