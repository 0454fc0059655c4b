"""Every notebook in notebooks/ executes top to bottom without error (cwd = notebooks/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path: Path, monkeypatch: pytest.MonkeyPatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    shared = path.parents[2] / "shared" / "data"
    if not shared.exists():
        pytest.skip(f"reference data not found at {shared}")
    # the kernel imports this checkout's package even when it is not installed
    repo = str(path.parents[1])
    monkeypatch.setenv("PYTHONPATH", repo + (":" + os.environ["PYTHONPATH"]
                                             if os.environ.get("PYTHONPATH") else ""))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    errors = [
        out for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", []) if out.get("output_type") == "error"
    ]
    assert not errors
