"""Publisher-grade safety (issue 16): outputs never destroy inputs and are written atomically,
interrupted commands leave nothing behind, exit codes mean one thing each, an empty table gets
one answer everywhere, and the CLI judges the library's own model objects.

CLI cases run the real ``ldiv`` process (the installed script); the bad-input classes are in
``tests/test_errors_table.py`` (the table of ``docs/errors.md``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli._models import GROUPING_L_MODELS, Requirements, build_models
from ldiv_polars.core.output import atomic_output, check_output
from ldiv_polars.errors import (
    InvalidParameterError,
    OutputOverwritesInputError,
    OutputPathError,
    OutputWriteError,
    UnreadableInputError,
)
from ldiv_polars.hierarchy import Hierarchy, HierarchyValueMissingError

LDIV = Path(sys.executable).parent / "ldiv"
TABLE = pl.DataFrame({"a": ["p", "q"] * 10, "b": [1, 2, 3, 4] * 5,
                      "s": ["w", "x", "y", "z"] * 5})


def ldiv(*args: str, cwd: Path, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    if not LDIV.exists():
        pytest.skip(f"the installed `ldiv` script is not next to {sys.executable}")
    return subprocess.run([str(LDIV), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "120", **(env or {})})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def temps(d: Path) -> list[Path]:
    return [p for p in d.rglob("*") if p.name.endswith(".ldiv-tmp")]


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    TABLE.write_csv(tmp_path / "t.csv")
    TABLE.write_parquet(tmp_path / "t.parquet")
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "a.csv").write_text("p;*\nq;*\n")
    (tmp_path / "h" / "b.csv").write_text("".join(f"{v};*\n" for v in range(1, 5)))
    return tmp_path


# --- no data loss -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["anonymize", "{in}", "{out}", "--qi", "a", "--sensitive", "s", "--hierarchies", "h",
     "--k", "2"],
    ["mondrian", "{in}", "{out}", "--qi", "a,b", "--sensitive", "s", "--k", "2"],
    ["microaggregate", "{in}", "{out}", "--columns", "b", "--k", "2"],
])
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "relative"])
def test_no_writer_overwrites_its_input(files, command, how):
    src = files / "t.csv"
    out = {"same": src, "relative": Path("./sub/../t.csv"),
           "symlink": files / "link.csv", "hardlink": files / "hard.csv"}[how]
    (files / "sub").mkdir()
    if how == "symlink":
        out.symlink_to(src)
    elif how == "hardlink":
        os.link(src, out)
    before = digest(src)
    args = [a.replace("{in}", "t.csv").replace("{out}", str(out)) for a in command]
    proc = ldiv(*args, cwd=files)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "destroy the input" in proc.stderr
    assert digest(src) == before and not temps(files)


def test_parquet_symlink_output_of_a_parquet_input_is_refused(files):
    # (it used to panic in Rust and leave the input with 0 rows)
    (files / "link.parquet").symlink_to(files / "t.parquet")
    before = digest(files / "t.parquet")
    proc = ldiv("anonymize", "t.parquet", "link.parquet", "--qi", "a", "--sensitive", "s",
                "--hierarchies", "h", "--k", "2", cwd=files)
    assert proc.returncode == 2 and "destroy the input" in proc.stderr
    assert digest(files / "t.parquet") == before
    assert pl.read_parquet(files / "t.parquet").equals(TABLE)


def test_check_output_relations(tmp_path):
    (tmp_path / "d").mkdir()
    TABLE.write_parquet(tmp_path / "d" / "x.parquet")
    with pytest.raises(OutputOverwritesInputError, match="inside the input directory"):
        check_output(tmp_path / "d" / "new.parquet", inputs=[tmp_path / "d"])
    with pytest.raises(OutputOverwritesInputError, match="matches the input glob"):
        check_output(tmp_path / "d" / "y.parquet", inputs=[str(tmp_path / "d" / "*.parquet")])
    # a frame or another file is no input of the path
    assert check_output(tmp_path / "o.parquet", inputs=[TABLE, tmp_path / "d" / "x.parquet"]) \
        == tmp_path / "o.parquet"
    with pytest.raises(OutputPathError, match="is a directory"):
        check_output(tmp_path / "d")
    with pytest.raises(OutputPathError, match="must end in"):
        check_output(tmp_path / "o.xlsx")
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output(tmp_path / "nope" / "o.parquet")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in any directory")
def test_unwritable_directory_is_refused_before_any_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputPathError, match="not writable"):
            check_output(ro / "o.parquet")
    finally:
        ro.chmod(0o755)


def test_atomic_output_leaves_the_target_untouched_on_failure(tmp_path):
    target = tmp_path / "o.parquet"
    target.write_bytes(b"previous release")
    target.chmod(0o640)
    for failure in (RuntimeError("crash while writing"), KeyboardInterrupt()):
        with pytest.raises(type(failure)), atomic_output(target) as out:
            TABLE.head(3).write_parquet(out.path)  # a partial write...
            raise failure  # ...then a crash or a Ctrl-C
        assert target.read_bytes() == b"previous release" and not temps(tmp_path)
    with pytest.raises(OutputWriteError, match="No space left"), atomic_output(target) as out:
        raise OSError(errno.ENOSPC, "No space left on device")  # what a full disk raises
    assert target.read_bytes() == b"previous release" and not temps(tmp_path)
    with pytest.raises(OutputPathError, match="holds 20 rows, 21 were expected"), \
            atomic_output(target) as out:
        out.write(TABLE)
        out.check_rows(21)
    assert target.read_bytes() == b"previous release" and not temps(tmp_path)
    with atomic_output(target) as out:
        out.write(TABLE)
        out.check_rows(20)
    assert pl.read_parquet(target).equals(TABLE)
    assert (target.stat().st_mode & 0o777) == 0o640  # the replaced file's permissions


def test_atomic_output_follows_a_symlink_and_removes_stale_temps(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    dead = tmp_path / ".real.csv.999999999-abc.ldiv-tmp"  # a killed writer's (no such pid)
    dead.write_text("partial")
    alive = tmp_path / f".real.csv.{os.getpid()}-abc.ldiv-tmp"  # a running writer's
    alive.write_text("in progress")
    with atomic_output(link) as out:
        out.write(TABLE)
    assert link.is_symlink() and pl.read_csv(real).equals(TABLE)
    assert not dead.exists() and alive.exists()


def test_sink_refuses_its_input_and_keeps_an_existing_target_on_failed_verification(files):
    hs = {"a": Hierarchy.from_csv(files / "h" / "a.csv")}
    src = files / "t.csv"
    res = lp.anonymize(src, ["a"], "s", hs, [lp.KAnonymity(2)], verify=False)
    assert res.sources == (str(src),)
    before = digest(src)
    with pytest.raises(OutputOverwritesInputError):
        res.sink(src)
    (files / "alias.csv").symlink_to(src)
    with pytest.raises(OutputOverwritesInputError):
        res.sink(files / "alias.csv")
    assert digest(src) == before
    out = files / "out.parquet"
    out.write_bytes(b"last week's release")
    res._plan.models = [lp.KAnonymity(11)]  # stricter than the search's: verification fails
    with pytest.raises(lp.LdivError, match="re-verification"):
        res.sink(out)
    assert out.read_bytes() == b"last week's release" and not temps(files)
    res._plan.models = [lp.KAnonymity(2)]
    res.sink(out)
    assert pl.read_parquet(out).height == 20 and res.verification.passed
    # a lazy scan of the file is the same input
    lazy = lp.anonymize(pl.scan_csv(src).filter(pl.col("b") > 0), ["a"], "s", hs,
                        [lp.KAnonymity(2)], verify=False)
    assert lazy.sources == (str(src),)
    with pytest.raises(OutputOverwritesInputError):
        lazy.sink(src)
    assert digest(src) == before


def test_write_synthetic_creates_no_directory(tmp_path):
    with pytest.raises(OutputPathError, match="does not exist"):
        lp.write_synthetic(tmp_path / "new" / "x.parquet", 10)
    assert not (tmp_path / "new").exists()
    with pytest.raises(OutputPathError, match=r"\.parquet"):
        lp.write_synthetic(tmp_path / "x.csv", 10)


def _start_synth(tmp_path: Path, rows: int) -> subprocess.Popen[str]:
    if not LDIV.exists():
        pytest.skip("no installed ldiv script")
    return subprocess.Popen([str(LDIV), "synth", "--rows", str(rows), "--chunk-rows", "100000",
                             "--out", "big.parquet"], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_an_interrupted_write_leaves_nothing_and_keeps_the_old_file(tmp_path, sig, code, word):
    old = tmp_path / "big.parquet"
    old.write_bytes(b"the previous file")
    proc = _start_synth(tmp_path, 50_000_000)  # ~a minute of work: stopped long before
    # wait until the temporary file exists: the write has started (the bound only stops a hung
    # run; on a loaded machine the interpreter's start alone can take a minute)
    deadline = time.monotonic() + 900
    while not temps(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    assert temps(tmp_path), "the write had not started"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == code and err.strip() == word, (proc.returncode, err)
    assert old.read_bytes() == b"the previous file" and not temps(tmp_path)


def test_internal_error_is_exit_3_with_one_line(files):
    """A bug (any exception that is not a typed error) is exit 3, not 1; LDIV_DEBUG=1 adds the
    traceback. The real entry point, with one library function replaced by a failing one."""
    code = ("import sys, ldiv_polars.table_summary as r\n"
            "def boom(*a, **k):\n    raise ZeroDivisionError('a bug')\n"
            "r.frequency_set_summary = boom\n"
            "sys.argv = ['ldiv', 'check', 't.csv', '--qi', 'a', '--sensitive', 's']\n"
            "from ldiv_polars.cli import run\nrun()\n")
    for debug in ("", "1"):
        proc = subprocess.run([sys.executable, "-c", code], cwd=files, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "LDIV_DEBUG": debug})
        assert proc.returncode == 3
        last = proc.stderr.strip().splitlines()[-1]
        assert last == ("internal error: ZeroDivisionError: a bug; rerun with LDIV_DEBUG=1 for "
                        "the traceback")
        assert ("Traceback" in proc.stderr) == bool(debug)
        if not debug:
            assert proc.stderr.count("\n") == 1


def test_help_documents_the_exit_codes(files):
    proc = ldiv("--help", cwd=files)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for code in ("0 done", "1 a requested model fails", "2 bad input", "3 internal error",
                 "130 interrupted"):
        assert code in text


# --- the empty table: one answer everywhere ---------------------------------------------------


EMPTY = pl.DataFrame(schema={"a": pl.String, "b": pl.Int64, "s": pl.String})
EMPTY_MODELS = [lp.KAnonymity(3), lp.DistinctLDiversity(2), lp.EntropyLDiversity(2),
                lp.RecursiveCLDiversity(3, 2), lp.TCloseness(0.2), lp.AlphaKAnonymity(0.5, 2),
                lp.DeltaDisclosure(1.0)]


def test_an_empty_table_holds_every_model_in_both_engines():
    res = lp.check(EMPTY, ["a", "b"], "s", EMPTY_MODELS)
    assert (res.rows, res.classes, res.passed) == (0, 0, True)
    assert all(m.achieved is None and m.failing_classes == 0 for m in res.models)
    duck = lp.duckdb.check(EMPTY, ["a", "b"], "s", EMPTY_MODELS)
    assert [(r["passed"], r["achieved"], r["failing_rows"]) for r in duck] == \
        [(True, None, 0)] * len(EMPTY_MODELS)
    polars_summary = lp.summary(EMPTY, ["a", "b"], "s")
    assert polars_summary == lp.duckdb.summary(EMPTY, ["a", "b"], "s")
    assert polars_summary["rows"] == 0 and polars_summary["k"] is None


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_cli_check_of_an_empty_table(tmp_path, engine):
    (tmp_path / "e.csv").write_text("a,b,s\n")
    args = ["check", "e.csv", "--qi", "a,b", "--sensitive", "s", "--k", "3", "--l", "2",
            "--model", "entropy", "--t", "0.2", "--engine", engine]
    proc = ldiv(*args, "--json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    got = json.loads(proc.stdout)
    assert got["rows"] == 0 and got["passed"] is True
    assert [(m["key"], m["passed"], m["achieved"]) for m in got["models"]] == [
        ("k_anonymity_3", True, None), ("entropy_l_2", True, None),
        ("t_closeness_0.2_equal", True, None)]
    readable = ldiv(*args, cwd=tmp_path)
    assert readable.returncode == 0 and "the table is empty" in readable.stdout


def test_anonymize_and_mondrian_write_an_empty_release(files):
    (files / "e.csv").write_text("a,b,s\n")
    proc = ldiv("anonymize", "e.csv", "o.parquet", "--qi", "a", "--sensitive", "s",
                "--hierarchies", "h", "--k", "2", "--json", cwd=files)
    assert proc.returncode == 0, proc.stderr
    out = pl.read_parquet(files / "o.parquet")
    assert out.height == 0 and out.columns == ["a", "b", "s"]
    assert json.loads(proc.stdout)["verified"] is True
    proc = ldiv("mondrian", "e.csv", "m.csv", "--qi", "a", "--sensitive", "s", "--k", "2",
                "--json", cwd=files)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["groups"] == 0
    assert (files / "m.csv").read_text().strip() == "a,b,s,group"


# --- ldiv check judges the library's model objects ------------------------------------------


def test_check_json_lists_each_model_with_the_library_s_verdict(files):
    args = ["check", "t.csv", "--qi", "a", "--sensitive", "s", "--k", "10", "--l", "4",
            "--model", "distinct", "--model", "recursive", "--c", "2", "--alpha", "0.2",
            "--t", "0.1", "--delta", "0.5", "--json"]
    models = [lp.KAnonymity(10), lp.DistinctLDiversity(4), lp.RecursiveCLDiversity(2, 4),
              lp.AlphaKAnonymity(0.2, 1), lp.TCloseness(0.1), lp.DeltaDisclosure(0.5)]
    expected = lp.check(files / "t.csv", ["a"], "s", models)
    for engine in ("polars", "duckdb"):
        proc = ldiv(*args, "--engine", engine, cwd=files)
        got = json.loads(proc.stdout)
        assert proc.returncode == (0 if expected.passed else 1)
        assert got["passed"] == expected.passed
        assert [m["key"] for m in got["models"]] == [m.key for m in expected.models]
        for g, e in zip(got["models"], expected.models):
            assert (g["passed"], g["failing_classes"], g["failing_rows"]) == \
                (e.passed, e.failing_classes, e.failing_rows)
            finite = e.achieved is not None and math.isfinite(e.achieved)
            assert g["achieved"] == (pytest.approx(e.achieved) if finite else None)
    # alpha 0.2 fails (each class holds each of 4 values 5 times out of 10: share 0.5)
    assert not expected["alpha_k_0.2_1"].passed and expected["k_anonymity_10"].passed


def test_check_reads_the_rows_once(files, monkeypatch):
    from ldiv_polars.cli.check import check_table
    from ldiv_polars.core.frequency import FrequencySet

    calls = []
    collect = FrequencySet.collect

    def counting(self):
        calls.append(1)
        return collect(self)

    monkeypatch.setattr(FrequencySet, "collect", counting)
    stats, verdicts = check_table(files / "t.csv", ["a"], "s",
                                  [lp.KAnonymity(2), lp.EntropyLDiversity(2)])
    assert len(calls) == 1  # summary and verdicts from one frequency set
    assert stats["k"] == 10 and [v["passed"] for v in verdicts] == [True, True]


@pytest.mark.parametrize(("req", "message"), [
    (Requirements(c=3.0), "--c needs --l"),
    (Requirements(models=("entropy",)), "--model needs --l"),
    (Requirements(l=2, c=3.0), "add --model recursive"),
    (Requirements(l=2, models=("recursive",)), "needs --c"),
    (Requirements(l=2, models=("binary",)), "not one of|must be one of"),
    (Requirements(l=2.5), "integer"),
    (Requirements(k=0), "k must be"),
    (Requirements(alpha=1.5), "alpha must be"),
    (Requirements(t=float("nan")), "t must be a number"),
    (Requirements(delta=-1.0), "delta must be"),
])
def test_flags_that_would_be_ignored_or_are_out_of_domain_are_refused(req, message):
    with pytest.raises(InvalidParameterError, match=message):
        build_models(req)


def test_flags_build_the_library_s_models():
    got = build_models(Requirements(k=3, l=2, models=("entropy", "recursive", "entropy"),
                                    c=4.0, t=0.3, alpha=0.6, delta=2.0), t_distance="ordered")
    assert [m.key for m in got] == [
        lp.KAnonymity(3).key, lp.EntropyLDiversity(2).key, lp.RecursiveCLDiversity(4, 2).key,
        lp.AlphaKAnonymity(0.6, 1).key, lp.TCloseness(0.3, "ordered").key,
        lp.DeltaDisclosure(2.0).key]
    binary = build_models(Requirements(k=2, l=2, positive=("w",)), choices=GROUPING_L_MODELS)
    assert [m.name for m in binary] == ["k_anonymity", "binary_l"]
    with pytest.raises(InvalidParameterError, match="needs --positive"):
        build_models(Requirements(l=2, models=("binary",)), choices=GROUPING_L_MODELS)
    with pytest.raises(InvalidParameterError, match="add --model binary"):
        build_models(Requirements(l=2, positive=("w",), models=("distinct",)),
                     choices=GROUPING_L_MODELS)
    assert build_models(Requirements()) == []


# --- typed errors in the Python API ---------------------------------------------------------


def test_unreadable_rows_are_a_typed_error_in_the_python_api(tmp_path):
    ragged = tmp_path / "r.csv"
    ragged.write_text("a,b,s\np,1,w\nq,2,x,extra\n")
    with pytest.raises(UnreadableInputError, match="more fields") as err:
        lp.check(ragged, ["a"], "s", lp.KAnonymity(1))  # the QI and s alone: still caught
    assert err.value.source == str(ragged)
    with pytest.raises(UnreadableInputError):
        lp.summary(ragged, ["a"], "s")
    with pytest.raises(UnreadableInputError):
        lp.duckdb.summary(ragged, ["a"], "s")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 truncated")
    with pytest.raises(UnreadableInputError, match="bad.parquet"):
        lp.check(bad, ["a"], "s", lp.KAnonymity(1))


def test_generalize_names_the_values_missing_from_the_hierarchy():
    h = Hierarchy([["p", "x", "*"], ["q", "x", "*"]], name="a")
    frame = pl.DataFrame({"a": ["p", "r", None, "t", "q"]})
    for lazy in (False, True):
        with pytest.raises(HierarchyValueMissingError) as err:
            if lazy:
                frame.lazy().select(pl.col("a").ldiv.generalize(h, 1)).collect(
                    engine="streaming")
            else:
                frame.select(pl.col("a").ldiv.generalize(h, 1))
        text = str(err.value)
        assert "column 'a' holds value(s) missing from its hierarchy: 'r'" in text
        if not lazy:  # one batch: both values (the streaming engine may stop at the first)
            assert "'r', 't'" in text
    # covered values (and null) generalize as before
    ok = pl.DataFrame({"a": ["p", None, "q"]}).select(pl.col("a").ldiv.generalize(h, 2))
    assert ok.to_series().to_list() == ["*", None, "*"]


def test_a_comma_hierarchy_read_with_semicolons_names_the_separator(files):
    (files / "hc").mkdir()
    (files / "hc" / "a.csv").write_text("p,x,*\nq,x,*\n")
    proc = ldiv("anonymize", "t.csv", "o.parquet", "--qi", "a", "--sensitive", "s",
                "--hierarchies", "hc", "--k", "2", cwd=files)
    assert proc.returncode == 2
    assert "--hierarchy-separator ','" in proc.stderr and proc.stderr.count("\n") == 1
    proc = ldiv("anonymize", "t.csv", "o.parquet", "--qi", "a", "--sensitive", "s",
                "--hierarchies", "hc", "--hierarchy-separator", ",", "--k", "2", cwd=files)
    assert proc.returncode == 0, proc.stderr


def test_ldiv_polars_duckdb_is_an_attribute_imported_on_first_use():
    code = ("import sys, ldiv_polars\n"
            "assert 'duckdb' not in sys.modules and 'ldiv_polars.duckdb' not in sys.modules\n"
            "import duckdb\n"
            "con = ldiv_polars.duckdb.install(duckdb.connect())\n"
            "print(con.execute(\"SELECT ldiv_mask('13053', 2)\").fetchone()[0])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "130**"
