"""Layers import downward only: a walk over every import statement of the package (module level
and inside functions, since a lazy import is a dependency all the same).

The layers, lowest first (docs/ARCHITECTURE.md):

0. core: ``core`` (inputs, outputs, validation, frequency sets, the engines of ``core/engines``)
   and ``errors``: they know no privacy model and no hierarchy object (an engine reads each
   QI's raw values and the labels of a level as plain Series);
0.5 risk: ``risk`` (numeric statistics over small tables; imports core only);
1. models: ``models``;
2. transforms, in three steps: ``hierarchy`` (value hierarchies); ``search``, ``partition``,
   ``microagg`` (which generalize with hierarchies); ``local`` (which reuses the search's
   lattice and hierarchies);
3. analyses: ``attacks``, ``linkage``, ``table_summary``, ``datasets``;
4. interfaces: the package itself (``ldiv_polars/__init__``), ``namespace``, ``duckdb``,
   ``cli``, ``report``/``reporting``, ``federated``, ``__main__``.

A module may import its own layer and any lower one. A new top-level module or folder must be
given a layer here (the test fails on one it does not know).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "ldiv_polars"

LAYERS: dict[str, float] = {
    "core": 0, "errors": 0,
    "models": 1,
    "hierarchy": 2.0, "search": 2.1, "partition": 2.1, "microagg": 2.1,
    "risk": 0.5,
    "local": 2.2,
    "attacks": 3, "linkage": 3, "table_summary": 3, "datasets": 3,
    "": 4, "namespace": 4, "duckdb": 4, "cli": 4, "report": 4, "reporting": 4,
    "federated": 4, "__main__": 4,
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> float | None:
    parts = module.split(".")
    return LAYERS.get(parts[1] if len(parts) > 1 else "")


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every ``ldiv_polars`` module an import statement of ``path`` names, with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from ldiv_polars import search` names the module ldiv_polars.search
            out.append((node.module, node.lineno))
            if node.module == "ldiv_polars":
                out += [(f"ldiv_polars.{a.name}", node.lineno) for a in node.names
                        if a.name in LAYERS]
    return [(m, line) for m, line in out if m.split(".")[0] == "ldiv_polars"]


MODULES = sorted(PKG.rglob("*.py"))


def test_every_module_has_a_layer():
    unknown = sorted({_module(p) for p in MODULES if _layer(_module(p)) is None})
    assert not unknown, f"give these modules a layer in tests/test_layers.py: {unknown}"


def test_no_module_imports_upward():
    upward = []
    for path in MODULES:
        me = _module(path)
        mine = _layer(me)
        assert mine is not None
        for target, line in _imports(path):
            theirs = _layer(target)
            if theirs is not None and theirs > mine:
                upward.append(f"{path.relative_to(PKG.parent)}:{line}: {me} (layer {mine}) "
                              f"imports {target} (layer {theirs})")
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize(("source", "expected"), [
    ("from ldiv_polars.search.rollup import X\n", [("ldiv_polars.search.rollup", 1)]),
    ("def f():\n    from ldiv_polars import search\n",
     [("ldiv_polars", 2), ("ldiv_polars.search", 2)]),
    ("import ldiv_polars.cli.app as app\nimport numpy\n", [("ldiv_polars.cli.app", 1)]),
])
def test_the_walk_sees_every_kind_of_import(tmp_path, source, expected):
    # (the checker itself: a walk that missed lazy or aliased imports would pass vacuously)
    f = tmp_path / "m.py"
    f.write_text(source)
    assert _imports(f) == expected
    # and an upward import is one: core importing the search
    assert _layer("ldiv_polars.core.engines.base") < _layer("ldiv_polars.search.rollup")
