"""Functions fit on a screen or two (issue 17): no function or method of the package is over
50 lines (``tools/long_functions.py``: from its ``def`` or first decorator to its last line,
docstring included), except those listed below, which their owners are splitting.

When you split one of them, remove its line here; a new long function fails this test: split
it where the pieces have names of their own.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 50

# "path:qualified.name" -> the branch that owns the file and is splitting it
ALLOWED: dict[str, str] = {}


def _tool():
    """``tools/long_functions.py`` as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("long_functions",
                                                  ROOT / "tools" / "long_functions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _long_functions() -> dict[str, int]:
    """``"path:qualified.name" -> lines`` of every function over LIMIT lines."""
    out = {}
    for lines, where in _tool().long_functions(ROOT / "ldiv_polars", LIMIT):
        path_line, name = where.split(" ")
        path = Path(path_line.rsplit(":", 1)[0]).resolve().relative_to(ROOT).as_posix()
        out[f"{path}:{name}"] = lines
    return out


def test_no_new_function_over_50_lines() -> None:
    found = _long_functions()
    new = {k: v for k, v in found.items() if k not in ALLOWED}
    assert not new, (
        "functions over 50 lines (split them where the pieces have names of their own): "
        + ", ".join(f"{k} ({v} lines)" for k, v in sorted(new.items()))
    )
    gone = sorted(set(ALLOWED) - set(found))
    if gone:  # split since: the entry can go (a warning, so that the owner's merge is simple)
        warnings.warn(f"no longer over {LIMIT} lines, remove from ALLOWED: {', '.join(gone)}",
                      stacklevel=1)


def test_the_counter_sees_a_long_method(tmp_path: Path) -> None:
    # a method of 51 lines (its def and 50 statements) is found, one of 50 is not
    for statements, expected in ((LIMIT, [(LIMIT + 1, f"{tmp_path / 'm.py'}:2 C.f")]),
                                 (LIMIT - 1, [])):
        body = "".join(f"        x{i} = {i}\n" for i in range(statements))
        (tmp_path / "m.py").write_text(f"class C:\n    def f(self):\n{body}\n\n"
                                       "def g():\n    pass\n")
        assert _tool().long_functions(tmp_path / "m.py", LIMIT) == expected
