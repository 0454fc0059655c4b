"""List the functions longer than a screen or two (issue 17: "functions fit on a screen or two").

Counts every function and method of the package, nested ones included (a typer command inside
its ``register``), from its ``def`` (or first decorator) to its last line, docstring and
comments included (``--code-only``: without the docstring, which states what the function
promises and is wanted long rather than short). Prints the longest first and the count; exit
status 0 unless ``--max-count`` is given and exceeded.

    python tools/long_functions.py                  # over 50 lines in ldiv_polars/
    python tools/long_functions.py --code-only
    python tools/long_functions.py --lines 80 ldiv_polars/search
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
            first.value.value, str):
        return first.end_lineno - first.lineno + 1
    return 0


def long_functions(root: Path, limit: int, code_only: bool = False) -> list[tuple[int, str]]:
    """``(lines, "path:line qualified.name")`` of every function over ``limit`` lines under
    ``root`` (a directory or one file), longest first; ``code_only`` leaves the docstring out
    of the count."""
    out: list[tuple[int, str]] = []
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))

    def visit(node: ast.AST, prefix: str, path: Path) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    lines = child.end_lineno - start + 1
                    if code_only:
                        lines -= _docstring_lines(child)
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
    ap.add_argument("--code-only", action="store_true", help="do not count the docstring")
    args = ap.parse_args(argv)
    found = long_functions(args.root, args.lines, args.code_only)
    for lines, where in found:
        print(f"{lines:5d}  {where}")
    what = "lines of code (docstrings left out)" if args.code_only else "lines"
    print(f"{len(found)} function(s) over {args.lines} {what} under {args.root}")
    return 1 if args.max_count is not None and len(found) > args.max_count else 0


if __name__ == "__main__":
    sys.exit(main())
