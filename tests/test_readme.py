"""Every code block of the README runs as written.

The blocks run in README order in one temporary directory where ``adult.csv`` and the Adult
hierarchies are *symbolic links* to the shared reference data (never copies): python blocks
are executed there, bash blocks run each command with the installed ``ldiv`` (exit 0, or the
1 its comment announces: ``# exit 1``), sql blocks run on a DuckDB connection with the macros
installed. Blocks that cannot run inside the suite are listed in :data:`NOT_RUN` with the
reason (and what they do is tested instead); a new block is run by default.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, shared_data_path

README = REPO / "README.md"
FENCE = re.compile(r"^```([\w-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
RUN = ("python", "bash", "sql")
NOT_CODE = ("text",)

NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/ldiv demo":
        "creates a virtual environment and installs the package into it (minutes, network); "
        "test_the_demo_command runs what it ends with, `ldiv demo`, from the installed package",
    "bash .ci/run":
        "is what CI runs: this very test suite",
}
"""First line of a block -> why it is not run here."""


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(README.read_text("utf-8"))]


def ldiv_script() -> Path:
    path = Path(sys.executable).parent / "ldiv"
    if not path.exists():
        pytest.skip(f"the installed `ldiv` script is not next to {sys.executable}")
    return path


def test_every_block_is_run_or_listed_with_a_reason():
    found = blocks()
    assert len(found) >= 10
    for lang, body in found:
        assert lang in RUN + NOT_CODE, f"README block with language {lang!r}: {body[:60]!r}"
    firsts = {body.strip().splitlines()[0] for _, body in found}
    assert set(NOT_RUN) <= firsts, "NOT_RUN lists a block the README no longer has"


def commands(body: str) -> list[str]:
    """The commands of a bash block (continuation lines joined, comments kept)."""
    out: list[str] = []
    for line in body.replace("\\\n", " ").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def expected_exit(command: str) -> int:
    return 1 if re.search(r"#.*\bexit 1\b", command) else 0


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    adult = shared_data_path("adult")
    d = tmp_path_factory.mktemp("readme")
    for f in sorted(adult.glob("*.csv")):
        (d / f.name).symlink_to(f)
    return d


def run_bash(body: str, cwd: Path) -> None:
    env = {**os.environ, "PATH": f"{ldiv_script().parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100"}
    for cmd in commands(body):
        proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)
        assert "Traceback" not in proc.stderr, (cmd, proc.stderr)
        assert proc.returncode == expected_exit(cmd), (cmd, proc.returncode, proc.stderr)


def run_sql(body: str) -> None:
    import duckdb

    import ldiv_polars

    con = ldiv_polars.duckdb.install(duckdb.connect())
    for stmt in con.extract_statements(body):
        con.execute(stmt).fetchall()


def test_readme_blocks_run_as_written(workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    ran = 0
    for i, (lang, body) in enumerate(blocks()):
        first = body.strip().splitlines()[0]
        if lang in NOT_CODE or first in NOT_RUN:
            continue
        where = f"README block {i} ({lang}): {first}"
        try:
            if lang == "python":
                exec(compile(body, where, "exec"), {"__name__": "__readme__"})  # noqa: S102
            elif lang == "bash":
                run_bash(body, workdir)
            else:
                run_sql(body)
        except Exception as exc:  # name the block in the failure
            raise AssertionError(f"{where} failed: {exc!r}") from exc
        ran += 1
    assert ran == len(blocks()) - len(NOT_RUN) - sum(lang in NOT_CODE for lang, _ in blocks())
    # what the blocks wrote, through symbolic links to the shared data that stay intact
    assert (workdir / "anonymized.parquet").is_file() and (workdir / "out.parquet").is_file()
    assert (workdir / "adult.csv").is_symlink()
    assert not list(workdir.glob(".*ldiv-tmp"))
    capsys.readouterr()


def test_the_demo_command(tmp_path):
    """What the first set-up block ends with: ``ldiv demo`` from the installed package
    (fewer rows: the same steps)."""
    proc = subprocess.run([str(ldiv_script()), "demo", "--rows", "20000"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr
    assert "Raw data" in proc.stdout and "After anonymization" in proc.stdout
    assert proc.stdout.count("k_anonymity(k=5)") == 2 and proc.stderr == ""
    assert list(tmp_path.iterdir()) == []  # the demo writes nothing in the working directory
