"""Structural guard of start-up cost: ``import ldiv_polars`` and ``ldiv --help`` import no heavy
optional module (the timing ratios are measured in bench/, see BENCHMARKS.md "Start-up")."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "duckdb", "rich", "numpy", "pyarrow", "pandas", "pyspark", "matplotlib")

_PROBE = """
import contextlib, io, json, sys
{code}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))
"""


def _top_modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(code=code)], check=True,
                         capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_ldiv_polars_is_light() -> None:
    loaded = _top_modules("import ldiv_polars")
    assert "polars" in loaded  # the probe works
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_ldiv_help_is_light() -> None:
    loaded = _top_modules(
        "import ldiv_polars.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    rc = c.main(['--help'])\n"
        "assert rc == 0 and 'anonymize' in out.getvalue() and 'check' in out.getvalue()")
    assert "typer" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_ldiv_check_is_light(tmp_path) -> None:
    # the CLI's most common command on the Polars engine reads no heavy module either: numpy
    # (the search's key decoding) once cost `ldiv check` a fifth of its process time
    path = tmp_path / "t.csv"
    path.write_text("a,s\n1,x\n1,y\n2,x\n2,y\n", encoding="utf-8")
    loaded = _top_modules(
        "import ldiv_polars.cli as c\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    rc = c.main(['check', {str(path)!r}, '--qi', 'a', '--sensitive', 's', '--k', '2',"
        " '--json'])\n"
        "assert rc == 0 and '\"passed\": true' in out.getvalue(), out.getvalue()")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_ldiv_process_settings() -> None:
    # the CLI's entry point sets OPENBLAS_NUM_THREADS before numpy is imported (it is not
    # imported with the CLI: the setting takes effect), and keeps a value the caller set
    probe = (
        "import os, sys\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
        "import ldiv_polars.cli as c\n"
        "assert 'numpy' not in sys.modules\n"
        "c.single_blas_thread()\n"
        "first = os.environ.get('OPENBLAS_NUM_THREADS')\n"
        "os.environ['OPENBLAS_NUM_THREADS'] = '3'\n"
        "c.single_blas_thread()\n"
        "print(first, os.environ['OPENBLAS_NUM_THREADS'])\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS')\n"
        "import gc\n"
        "assert gc.get_freeze_count() == 0\n"
        "c.main = lambda: print(os.environ.get('OPENBLAS_NUM_THREADS'),\n"
        "                      gc.get_freeze_count() > 1000) or 0\n"
        "c.run()\n")  # (run() ends the process with main()'s code)
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True).stdout.split()
    # ... and freezes the objects the imports made (the collector skips them from then on)
    assert out == ["1", "3", "1", "True"]
