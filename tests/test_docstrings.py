"""Every public function, class and method of ldiv_polars says what it promises.

Public: a name without a leading underscore, defined in a module of the package (every module
whose path has no component starting with an underscore), found on the module or on a public
class of it. A method that overrides a documented method of a base class inherits its docstring
(``inspect.getdoc``): the base states the promise every override keeps. Names re-exported from
another module are checked where they are defined. Functions nested inside other functions (the
CLI's typer commands) are not reachable from a module and are not checked here. A module that
cannot be imported here for want of an optional dependency (an engine's client library, say) is
checked from its source instead (no inheritance of docstrings there).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
import textwrap
from pathlib import Path

import ldiv_polars

MIN_WORDS = 3
"""A docstring must be a sentence, not a label: at least this many words."""


_UNIMPORTABLE: dict[str, Path] = {}
"""Modules whose optional dependency is missing here: name -> source file (see the module
docstring)."""


def _modules() -> list[object]:
    out = [ldiv_polars]
    for info in pkgutil.walk_packages(ldiv_polars.__path__, "ldiv_polars.",
                                      onerror=lambda name: None):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            out.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "ldiv_polars":
                raise
            spec = importlib.util.find_spec(info.name)
            _UNIMPORTABLE[info.name] = Path(spec.origin)
    return out


def _undocumented_in_source(module: str, path: Path) -> list[str]:
    """The check of :func:`undocumented` read from the source of a module not imported."""
    missing = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name.startswith("_"):
                    continue
                doc = ast.get_docstring(node)
                if not doc or len(doc.split()) < MIN_WORDS:
                    missing.append(f"{module}.{prefix}{node.name}")
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(path.read_text()).body, "")
    return missing


def _members(cls: type) -> list[tuple[str, object]]:
    """Public functions, properties, class- and static methods defined in ``cls`` itself."""
    out = []
    for name, raw in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if inspect.isfunction(raw) or isinstance(raw, property):
            out.append((name, raw))
    return out


def _doc(cls: type | None, name: str, obj: object) -> str | None:
    if cls is not None:  # an override inherits the base's docstring
        doc = inspect.getdoc(getattr(cls, name, obj))
        if doc:
            return doc
        fget = obj.fget if isinstance(obj, property) else None
        return inspect.getdoc(fget) if fget is not None else None
    return inspect.getdoc(obj) if obj.__doc__ else None


def public_objects() -> dict[str, tuple[object, str | None]]:
    """Every public function, class and method of the imported modules: qualified name ->
    (the object, its docstring or its base's, None when there is none)."""
    out: dict[str, tuple[object, str | None]] = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            checks = [(None, name, obj)]
            if inspect.isclass(obj):
                checks += [(obj, m, raw) for m, raw in _members(obj)]
            for cls, member, raw in checks:
                where = f"{name}.{member}" if cls is not None else name
                out[f"{module.__name__}.{where}"] = (raw, _doc(cls, member, raw))
    return out


def undocumented() -> list[str]:
    """Qualified names of public objects without a docstring of ``MIN_WORDS`` words."""
    missing = [name for name, (_, doc) in public_objects().items()
               if not doc or len(doc.split()) < MIN_WORDS]
    for name, path in _UNIMPORTABLE.items():
        missing += _undocumented_in_source(name, path)
    return sorted(set(missing))


FIGURE = re.compile(r"\b\d[\d,.]*\s?(ms|MB|GB|kB)\b|\b\d[\d.]*x (faster|slower)\b|~\d[\d.]*\s?s\b")
"""A measured figure (a time, a size, a speed-up): they belong in BENCHMARKS.md, where the
machine, the load and the baseline are stated beside them."""


def documentation_strings(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring of a source file: the module's, each function's and
    class's, and the strings documenting an assignment (module, class or function level)."""
    out = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, stmt in enumerate(body):
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue
            first = i == 0 and isinstance(node, (ast.Module, ast.FunctionDef,
                                                 ast.AsyncFunctionDef, ast.ClassDef))
            after_assignment = i > 0 and isinstance(body[i - 1], (ast.Assign, ast.AnnAssign))
            if first or after_assignment:
                out.append((stmt.lineno, stmt.value.value))
    return out


def measured_figures(root: Path = Path(ldiv_polars.__file__).parent) -> list[str]:
    """``path:line: figure`` of every measured figure in a docstring under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for line, text in documentation_strings(path):
            for m in FIGURE.finditer(text):
                found.append(f"{path.relative_to(root.parent)}:{line}: {m.group(0)}")
    return found


def coverage() -> dict[str, object]:
    """What share of the public objects has a docstring, and what share of the public
    functions whose own body raises also says so (mentions "raise" or an error)."""
    objects = public_objects()
    documented = sum(1 for _, doc in objects.values() if doc and len(doc.split()) >= MIN_WORDS)
    raising = {}
    for name, (obj, doc) in objects.items():
        fn = obj.fget if isinstance(obj, property) else obj
        if not inspect.isfunction(fn):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        if any(isinstance(n, ast.Raise) for n in ast.walk(tree.body[0])):
            raising[name] = bool(doc and re.search(r"rais|error", doc, re.I))
    return {"public": len(objects), "documented": documented,
            "raising": len(raising), "raising_says_so": sum(raising.values()),
            "raising_silent": sorted(k for k, v in raising.items() if not v)}


def test_every_public_object_has_a_docstring():
    missing = undocumented()
    assert not missing, f"{len(missing)} public object(s) without a docstring:\n" + "\n".join(
        missing)


def test_no_measured_figure_in_a_docstring():
    found = measured_figures()
    assert not found, "measured figures belong in BENCHMARKS.md:\n" + "\n".join(found)


def test_the_figure_check_sees_one(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text('"""Fast."""\n\nLIMIT = 4\n"""Chosen: 12 ms on Adult."""\n\n\n'
                              'def f():\n    """Twice as fast (2.5x faster)."""\n'
                              '    x = "3 MB, not a docstring"\n    return x\n')
    assert measured_figures(pkg) == ["pkg/m.py:4: 12 ms", "pkg/m.py:8: 2.5x faster"]


def test_the_checker_sees_a_missing_docstring():
    # the checker itself: a module-level function without a docstring is reported
    import types

    mod = types.ModuleType("ldiv_polars.fake_for_docstring_test")

    def naked(x):
        return x

    naked.__module__ = mod.__name__
    mod.naked = naked
    original = _modules
    try:
        globals()["_modules"] = lambda: [mod]
        assert undocumented() == ["ldiv_polars.fake_for_docstring_test.naked"]
    finally:
        globals()["_modules"] = original


def test_the_source_check_of_an_unimportable_module(tmp_path):
    src = tmp_path / "engine.py"
    src.write_text('import pyspark_not_here\n\n\ndef read(x):\n    """Read the table x lazily."""\n'
                   '\n\nclass Engine:\n    """One engine of the boundary."""\n\n'
                   '    def frequency_set(self):\n        return None\n\n'
                   '    def _private(self):\n        return None\n')
    assert _undocumented_in_source("ldiv_polars.fake.engine", src) == [
        "ldiv_polars.fake.engine.Engine.frequency_set"]


if __name__ == "__main__":  # python tests/test_docstrings.py: the coverage figures
    cov = coverage()
    print(f"public functions, classes and methods: {cov['public']}; with a docstring: "
          f"{cov['documented']} ({cov['documented'] / cov['public']:.1%})")
    print(f"public functions that raise: {cov['raising']}; their docstring says so: "
          f"{cov['raising_says_so']} ({cov['raising_says_so'] / max(cov['raising'], 1):.1%})")
    if "-v" in sys.argv:
        print("\n".join(cov["raising_silent"]))
