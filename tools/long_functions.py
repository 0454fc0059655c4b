"""List the functions longer than a screen or two (issue 17: "functions fit on a screen or two").

Counts every function and method of the package, nested ones included (a typer command inside
its ``register``), from its ``def`` (or first decorator) to its last line, docstring and
comments included. Prints the longest first and the count; exit status 0 unless ``--max-count``
is given and exceeded.

    python tools/long_functions.py                  # over 50 lines in ldiv_polars/
    python tools/long_functions.py --lines 80 ldiv_polars/search
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def long_functions(root: Path, limit: int) -> list[tuple[int, str]]:
    """``(lines, "path:line qualified.name")`` of every function over ``limit`` lines under
    ``root`` (a directory or one file), longest first."""
    out: list[tuple[int, str]] = []
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))

    def visit(node: ast.AST, prefix: str, path: Path) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    lines = child.end_lineno - start + 1
                    if lines > limit:
                        out.append((lines, f"{path}:{child.lineno} {name}"))
                visit(child, name + ".", path)
            else:
                visit(child, prefix, path)

    for path in files:
        visit(ast.parse(path.read_text(), str(path)), "", path)
    return sorted(out, key=lambda t: (-t[0], t[1]))


def main(argv: list[str] | None = None) -> int:
    """Print the long functions and their count; 1 when ``--max-count`` is exceeded."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default="ldiv_polars", type=Path)
    ap.add_argument("--lines", type=int, default=50, help="longer than this many lines")
    ap.add_argument("--max-count", type=int, default=None, help="fail above this many")
    args = ap.parse_args(argv)
    found = long_functions(args.root, args.lines)
    for lines, where in found:
        print(f"{lines:5d}  {where}")
    print(f"{len(found)} function(s) over {args.lines} lines under {args.root}")
    return 1 if args.max_count is not None and len(found) > args.max_count else 0


if __name__ == "__main__":
    sys.exit(main())
