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
