"""The "bad input" table of ``docs/errors.md``, row by row, through the real ``ldiv`` process.

For every row: a fresh directory of fixture files, the row's command run by the installed
``ldiv`` script; asserted: the exit code; exactly one line ``error: ...`` on stderr for exit 2
(nothing on stderr otherwise); no traceback; the error type of the row (the last exception of
the traceback printed under ``LDIV_DEBUG=1``); every fixture file byte for byte unchanged;
nothing written when the command fails; no temporary file left anywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO

DOC = REPO / "docs" / "errors.md"
ROW = re.compile(r"^\| (?P<input>[^|]+?) \| `(?P<command>[^`]+)` \| (?P<error>[^|]+?) \| "
                 r"(?P<exit>\d+) \|$")


def table_rows() -> list[dict[str, str]]:
    text = DOC.read_text("utf-8")
    section = text[text.index("## Bad input"):]
    rows = [m.groupdict() for line in section.splitlines() if (m := ROW.match(line))]
    assert len(rows) >= 40, "the bad-input table of docs/errors.md was not found"
    return rows


def ldiv_script() -> Path:
    path = Path(sys.executable).parent / "ldiv"
    if not path.exists():
        pytest.skip(f"the installed `ldiv` script is not next to {sys.executable}")
    return path


def make_fixtures(d: Path) -> None:
    """The files the table's commands name (see docs/errors.md)."""
    t = pl.DataFrame({"a": ["p", "q"] * 10, "b": [1, 2, 3, 4] * 5,
                      "s": ["w", "x", "y", "z"] * 5, "g": [0, 0, 1, 1] * 5})
    t.write_csv(d / "t.csv")
    t.write_parquet(d / "t.parquet")
    (d / "zero.csv").write_bytes(b"")
    (d / "header.csv").write_text("a,b,s,g\n")
    (d / "ragged.csv").write_text("a,b,s,g\np,1,w,0\nq,2,x,1,9\n")
    (d / "corrupt.parquet").write_bytes(b"this is not a parquet file")
    data = (d / "t.parquet").read_bytes()
    (d / "trunc.parquet").write_bytes(data[: len(data) // 2])
    (d / "latin1.csv").write_bytes("a,b,s,g\np,1,caf\xe9,0\n".encode("latin-1"))
    (d / "latin1h.csv").write_bytes("a,b,s\xe9,g\np,1,w,0\n".encode("latin-1"))
    (d / "badtype.csv").write_text("a,b,s,g\n" + "p,1,w,0\n" * 200 + "q,zz,x,1\n")
    (d / "dup.csv").write_text("a,a,s,g\np,1,w,0\n")
    (d / "nulls.csv").write_text("a,b,s,g\np,1,,0\nq,2,x,1\n")
    (d / "t.json").write_text("{}")
    (d / "pop_b.csv").write_text("b\n1\n2\n")  # a population table without the QI a
    (d / "csvdir").mkdir()
    t.write_csv(d / "csvdir" / "x.csv")
    (d / "pq").mkdir()
    t.write_parquet(d / "pq" / "part-0.parquet")
    (d / "outdir.parquet").mkdir()
    os.mkfifo(d / "fifo.csv")
    (d / "unreadable.csv").write_text("a,b,s,g\np,1,w,0\n")
    (d / "unreadable.csv").chmod(0)
    (d / "link.csv").symlink_to("t.csv")
    (d / "link.parquet").symlink_to("t.parquet")
    os.link(d / "t.csv", d / "hard.csv")
    for name, sep, a_rows in (("h", ";", "p;*\nq;*\n"), ("hc", ",", "p,*\nq,*\n"),
                              ("hm", ";", "p;*\n")):
        (d / name).mkdir()
        (d / name / "a.csv").write_text(a_rows)
        (d / name / "b.csv").write_text("".join(f"{v}{sep}*\n" for v in range(1, 5)))


def snapshot(d: Path) -> dict[str, str]:
    """Hash of every regular file under ``d`` (symbolic links: their target text)."""
    out: dict[str, str] = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file() and os.access(p, os.R_OK):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_file() or p.is_dir():
            out[rel] = "dir" if p.is_dir() else "unreadable"
        else:
            out[rel] = "special"
    return out


def start(command: str, cwd: Path, debug: bool = False) -> subprocess.Popen[str]:
    args = shlex.split(command)
    assert args[0] == "ldiv"
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("LDIV_DEBUG", None)
    if debug:
        env["LDIV_DEBUG"] = "1"
    return subprocess.Popen([str(ldiv_script()), *args[1:]], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def raised_type(stderr: str) -> str | None:
    """The type name of the exception a traceback ends with."""
    tail = stderr[stderr.rindex("Traceback (most recent call last):"):]
    found = re.findall(r"^(?:\w+\.)*([A-Z]\w*): ", tail, re.M)
    return found[-1] if found else None


ROWS = table_rows()


@pytest.mark.parametrize("row", ROWS, ids=[r["input"] for r in ROWS])
def test_bad_input_row(row: dict[str, str], tmp_path: Path) -> None:
    if "not testable as root" in row["input"] and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions")
    work, twin = tmp_path / "run", tmp_path / "debug"
    for d in (work, twin):
        d.mkdir()
        make_fixtures(d)
    before = snapshot(work)
    expected = int(row["exit"])
    # the same command twice at once, in two copies of the fixtures: as a pipeline runs it,
    # and with LDIV_DEBUG=1 (whose traceback names the error type)
    plain, debug = start(row["command"], work), start(row["command"], twin, debug=True)
    rc, out, err = finish(plain)
    drc, _, derr = finish(debug)
    assert rc == expected, (out[-500:], err)
    assert "Traceback" not in err + out
    after = snapshot(work)
    assert {k: v for k, v in after.items() if k in before} == before  # inputs untouched
    assert not [p for p in work.rglob("*") if ".ldiv-tmp" in p.name
                or p.name.startswith(".ldiv-probe")]
    if expected == 0:
        assert err == ""
        return
    assert after == before  # nothing written
    if expected == 1:
        assert err == ""
        return
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert drc == expected
    assert raised_type(derr) == row["error"], derr[-800:]


def test_every_writer_and_command_is_in_the_table() -> None:
    commands = {shlex.split(r["command"])[1] for r in ROWS}
    assert commands >= {"check", "anonymize", "mondrian", "microaggregate", "synth", "attack",
                        "link", "plan", "participation", "demo"}
