"""Shared builder of the notebooks: each ``make_*.py`` collects its cells and calls
:func:`write_notebook`, which executes them (cwd = notebooks/) and writes the ``.ipynb`` with
outputs and stable cell ids."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat


class NotebookCells(list):
    """An ordered list of ``(kind, source)`` cells with ``md`` / ``code`` appenders."""

    def md(self, text: str) -> None:
        self.append(("markdown", text.strip("\n")))

    def code(self, text: str) -> None:
        self.append(("code", text.strip("\n")))


def build(cells: Sequence[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind in ("md", "markdown")
                        else nbformat.v4.new_code_cell(src))
    return nb


def write_notebook(cells: Sequence[tuple[str, str]], out: Path, *, timeout: int = 600,
                   argv: Sequence[str] | None = None) -> None:
    """Build, execute (unless ``--no-run``) and write the notebook ``out``."""
    ap = argparse.ArgumentParser(description=f"build {out.name}")
    ap.add_argument("--no-run", action="store_true", help="write without executing")
    args = ap.parse_args(argv)
    nb = build(cells)
    t0 = time.perf_counter()
    if not args.no_run:
        from nbclient import NotebookClient

        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(out.parent)}}).execute()
    for i, cell in enumerate(nb.cells):  # stable ids keep regenerations' diffs small
        cell["id"] = f"cell-{i:02d}"
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)
    nbformat.validate(nb)
    nbformat.write(nb, out)
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB) in "
          f"{time.perf_counter() - t0:.1f} s")
