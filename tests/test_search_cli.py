"""``ldiv anonymize`` in-process: JSON keys, files written, exit codes 0/1/2."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import polars as pl
import pytest

from ldiv_polars.cli import main
from ldiv_polars.errors import InvalidParameterError, OutputPathError
from ldiv_polars.hierarchy import Hierarchy, masking_hierarchy
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.search import anonymize
from ldiv_polars.search.anonymize import VerificationError

A = importlib.import_module("ldiv_polars.search.anonymize")

FIG1 = pl.DataFrame(
    {
        "zip": ["13053", "13068", "13068", "13053", "14853", "14853", "14850", "14850", "13053",
                "13053", "13068", "13068"],
        "age": [28, 29, 21, 23, 50, 55, 47, 49, 31, 37, 36, 35],
        "condition": ["HD", "HD", "VI", "VI", "C", "HD", "VI", "VI", "C", "C", "C", "C"],
    }
)


@pytest.fixture()
def fig1_files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "fig1.csv"
    FIG1.write_csv(data)
    hdir = tmp_path / "h"
    hdir.mkdir()
    masking_hierarchy(FIG1["zip"], levels=2).to_csv(hdir / "fig1_hierarchy_zip.csv")
    Hierarchy([[str(a), "<30" if a < 30 else ("3*" if a < 40 else ">=40"), "*"]
               for a in FIG1["age"].to_list()]).to_csv(hdir / "age.csv")
    return data, hdir


def test_cli_json_and_output(fig1_files, tmp_path, capsys):
    data, hdir = fig1_files
    out = tmp_path / "out.parquet"
    rc = main(["anonymize", str(data), str(out), "--qi", "zip,age", "--sensitive", "condition",
               "--hierarchies", str(hdir), "--k", "4", "--l", "2", "--metric", "loss", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    for key in ("lattice_size", "checked", "optimum", "minimal", "elapsed_s"):
        assert key in payload
    assert payload["lattice_size"] == 12
    opt = payload["optimum"]
    assert set(opt) >= {"levels", "metric", "value", "classes", "suppressed"}
    # (130**, age buckets) has a homogeneous Cancer class; (1305*/1306*/1485*, *) does not
    assert opt["levels"] == {"zip": 1, "age": 2} and opt["metric"] == "loss"
    assert opt["classes"] == 3 and opt["suppressed"] == 0
    assert {"zip": 1, "age": 2} in payload["minimal"]
    written = pl.read_parquet(out)
    assert written.height == 12 and set(written["zip"]) == {"1305*", "1306*", "1485*"}
    assert payload["verified"] is True  # re-verified while written


def test_cli_suppression_csv_and_human_output(fig1_files, tmp_path, capsys):
    data, hdir = fig1_files
    out = tmp_path / "out.csv"
    rc = main(["anonymize", str(data), str(out), "--qi", "zip,age", "--sensitive", "condition",
               "--hierarchies", str(hdir), "--k", "4", "--suppression", "0.34",
               "--metric", "height", "--mode", "drop"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "suppressed rows" in text and "nodes checked" in text
    assert "re-verified" in text and "pass" in text
    written = pl.read_csv(out, schema_overrides={"zip": pl.String, "age": pl.String})
    assert written.height == 8  # the four 1485* rows were dropped


@pytest.mark.parametrize(("strategy", "minimal"), [("bounded", "not computed by bounded"),
                                                   ("flash", "minimal nodes")])
def test_human_output_says_why_minimal_nodes_are_missing(fig1_files, tmp_path, capsys,
                                                          strategy, minimal):
    """The plain table names the strategy that left the minimal nodes out (the bounded search,
    which ``auto`` runs on large frequency sets) and how to get them; Flash counts them."""
    data, hdir = fig1_files
    rc = main(["anonymize", str(data), str(tmp_path / "o.csv"), "--qi", "zip,age",
               "--hierarchies", str(hdir), "--k", "4", "--suppression", "0.34",
               "--metric", "height", "--strategy", strategy])
    text = capsys.readouterr().out
    assert rc == 0 and minimal in text
    assert ("not computed" in text) == (strategy == "bounded")


def test_cli_exit_codes(fig1_files, tmp_path, capsys):
    data, hdir = fig1_files
    out = tmp_path / "none.parquet"
    rc = main(["anonymize", str(data), str(out), "--qi", "zip,age", "--sensitive", "condition",
               "--hierarchies", str(hdir), "--k", "13", "--json"])
    assert rc == 1
    assert json.loads(capsys.readouterr().out)["optimum"] is None
    assert not out.exists()
    rc = main(["anonymize", str(data), str(out), "--qi", "zip,condition", "--hierarchies",
               str(hdir), "--k", "2"])
    assert rc == 2
    assert "no hierarchy for column 'condition'" in capsys.readouterr().err
    rc = main(["anonymize", str(data), str(out), "--qi", "zip,age", "--hierarchies", str(hdir)])
    assert rc == 2
    rc = main(["anonymize", str(data), str(tmp_path / "x.txt"), "--qi", "zip,age",
               "--hierarchies", str(hdir), "--k", "2"])
    assert rc == 2


@pytest.mark.parametrize(("k", "rc"), [(4, 0), (13, 1), (None, 2)])
def test_the_script_exits_with_main_s_code_and_flushed_output(fig1_files, tmp_path, k, rc):
    # `python -m ldiv_polars` (like the `ldiv` script) ends the process without interpreter
    # teardown: the exit code, the whole JSON on stdout and the written file are all there
    import subprocess
    import sys

    data, hdir = fig1_files
    out = tmp_path / "o.parquet"
    args = [sys.executable, "-m", "ldiv_polars", "anonymize", str(data), str(out), "--qi",
            "zip,age", "--sensitive", "condition", "--hierarchies", str(hdir), "--json"]
    proc = subprocess.run(args + ([] if k is None else ["--k", str(k)]), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == rc, proc.stderr
    if rc == 2:
        assert proc.stderr.startswith("error: ")
        return
    payload = json.loads(proc.stdout)
    assert (payload["optimum"] is None) == (rc == 1)
    assert out.exists() == (rc == 0)
    if rc == 0:
        assert pl.read_parquet(out).height == 12 and payload["verified"] is True


def test_cli_adult_k5(adult_dir, adult_csv, tmp_path, capsys):
    out = tmp_path / "adult.parquet"
    qi = "sex,age,race,marital-status,education,native-country,workclass,occupation"
    rc = main(["anonymize", str(adult_csv), str(out), "--qi", qi, "--sensitive", "salary-class",
               "--hierarchies", str(adult_dir), "--k", "5", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["lattice_size"] == 6480
    assert payload["optimum"]["suppressed"] == 0
    written = pl.read_parquet(out)
    assert written.height == 30162
    assert written.group_by(qi.split(",")).len()["len"].min() >= 5


def test_demo_step_on_synthetic_data(tmp_path, capsys):
    from ldiv_polars.cli.anonymize import demo_step
    from ldiv_polars.datasets.synth import write_synthetic
    from ldiv_polars.models import DistinctLDiversity, KAnonymity
    from ldiv_polars.models.verdict import check

    path = write_synthetic(tmp_path / "demo.parquet", 20_000, 1)
    res = demo_step(path, ["age", "sex", "zip"], "disease", 5, 3)
    assert res.found and res.verification.passed
    assert "suppressed rows" in capsys.readouterr().out
    out = res.output.collect()
    assert out.height == 20_000 - res.suppressed_rows
    # an independent check of the written-out table
    models = [KAnonymity(5), DistinctLDiversity(3)]
    assert check(out, ["age", "sex", "zip"], "disease", models).passed


def test_cli_missing_output_directory(fig1_files, tmp_path, capsys):
    data, hdir = fig1_files
    rc = main(["anonymize", str(data), str(tmp_path / "nope" / "o.parquet"), "--qi", "zip,age",
               "--hierarchies", str(hdir), "--k", "2"])
    assert rc == 2 and "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(("suffix", "mode", "fused"), [
    (".parquet", "mask", True), (".csv", "drop", True), (".parquet", "drop", False),
    (".csv", "mask", False)])
def test_sink_writes_the_output_and_verifies_it(fig1_files, tmp_path, monkeypatch, suffix,
                                                mode, fused):
    # in the same pass as the write (small inputs), or in a second one (large inputs)
    if not fused:
        monkeypatch.setattr(A, "FUSED_VERIFY_MAX_ROWS", 0)
    data, hdir = fig1_files
    hs = {"zip": Hierarchy.from_csv(hdir / "fig1_hierarchy_zip.csv"),
          "age": Hierarchy.from_csv(hdir / "age.csv")}
    kw = dict(suppression=0.34, metric="height", suppression_mode=mode)
    res = anonymize(data, ["zip", "age"], "condition", hs, [KAnonymity(4), DistinctLDiversity(2)],
                    verify=False, **kw)
    assert res.verification is None and res.suppressed_rows == 4
    out = tmp_path / f"out{suffix}"
    res.sink(out)
    # the same verdict as the separate re-verification pass of anonymize(verify=True)
    ref = anonymize(data, ["zip", "age"], "condition", hs,
                    [KAnonymity(4), DistinctLDiversity(2)], **kw).verification
    got = res.verification
    assert got.passed and (got.rows, got.classes) == (ref.rows, ref.classes) == (8, 2)
    schema = {"zip": pl.String, "age": pl.String}
    written = pl.read_parquet(out) if suffix == ".parquet" else pl.read_csv(
        out, schema_overrides=schema)
    expected = res.output.collect()
    assert written.cast(schema).sort(written.columns).equals(
        expected.cast(schema).sort(expected.columns))
    assert written.height == (12 if mode == "mask" else 8)


@pytest.mark.parametrize("fused", [True, False])
def test_sink_removes_an_output_failing_verification(fig1_files, tmp_path, monkeypatch, fused):
    if not fused:
        monkeypatch.setattr(A, "FUSED_VERIFY_MAX_ROWS", 0)
    data, hdir = fig1_files
    hs = {"zip": Hierarchy.from_csv(hdir / "fig1_hierarchy_zip.csv"),
          "age": Hierarchy.from_csv(hdir / "age.csv")}
    res = anonymize(data, ["zip", "age"], "condition", hs, [KAnonymity(4)], verify=False)
    # a stricter model than the one searched for: the written output must fail its check
    res._plan.models = [KAnonymity(5)]
    out = tmp_path / "out.parquet"
    with pytest.raises(VerificationError, match="k_anonymity"):
        res.sink(out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".ldiv-tmp")]  # none left
    with pytest.raises(OutputPathError):  # (was InputFormatError: it is an output's error)
        res.sink(tmp_path / "out.json")
    none = anonymize(data, ["zip", "age"], "condition", hs, [KAnonymity(13)])
    with pytest.raises(InvalidParameterError):
        none.sink(out)


@pytest.mark.parametrize(("suffix", "mode"), [(".parquet", "mask"), (".csv", "drop")])
def test_sink_counts_the_rows_it_writes(fig1_files, tmp_path, suffix, mode):
    """An in-memory input's QI-only release is collected once, written and counted in one
    pass: the verdict is the streaming path's, the file the same; counts that do not match
    the written rows (a row lost, a wrong suppressed total) fail and leave no file."""
    data, hdir = fig1_files
    hs = {"zip": Hierarchy.from_csv(hdir / "fig1_hierarchy_zip.csv"),
          "age": Hierarchy.from_csv(hdir / "age.csv")}

    def result():
        return anonymize(data, ["zip", "age"], None, hs, [KAnonymity(4)], suppression=0.34,
                         metric="height", suppression_mode=mode, verify=False)

    def read(path):
        return pl.read_parquet(path) if suffix == ".parquet" else pl.read_csv(path)

    res, ref = result(), result()
    counter = res._plan.count_output
    assert counter is not None and res.suppressed_rows == 4
    ref._plan.count_output = None  # the streaming pass (write + retained rows' plan)
    res.sink(tmp_path / f"a{suffix}")
    ref.sink(tmp_path / f"b{suffix}")
    got, want = res.verification, ref.verification
    assert got.passed and (got.rows, got.classes) == (want.rows, want.classes) == (8, 2)
    written = read(tmp_path / f"a{suffix}")
    assert written.equals(read(tmp_path / f"b{suffix}"))
    assert written.height == (12 if mode == "mask" else 8)
    out = tmp_path / f"c{suffix}"
    res._plan.count_output = lambda lf: counter(lf.slice(1))  # one written row not counted
    with pytest.raises(VerificationError, match="7 rows outside the suppressed classes"):
        res.sink(out)
    res._plan.count_output = counter
    res.suppressed_rows = 3
    with pytest.raises(VerificationError, match="8 rows outside the suppressed classes"):
        res.sink(out)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".ldiv-tmp")]


def test_sink_recounts_the_input_when_the_masked_class_is_a_label(tmp_path):
    # "*" is a raw value here: the masked rows' class cannot be told from a retained one in
    # the written counts, so the retained rows are counted from the input (same verdict)
    df = pl.DataFrame({"g": ["x"] * 4 + ["y"] * 4 + ["*"], "s": list("abababab") + ["a"]})
    hs = {"g": Hierarchy([["x", "x"], ["y", "y"], ["*", "*"]], name="g")}
    res = anonymize(df, "g", "s", hs, [KAnonymity(2)], suppression=0.12, verify=False)
    assert res.levels == {"g": 0} and res.suppressed_rows == 1
    assert res._plan.count_output is not None
    out = tmp_path / "o.parquet"
    res.sink(out)
    assert res.verification.passed and (res.verification.rows, res.verification.classes) == (8, 2)
    assert pl.read_parquet(out).get_column("g").cast(pl.String).to_list() == df["g"].to_list()


def test_small_csv_qis_are_read_as_raw_value_enums_or_left_as_read(fig1_files, tmp_path):
    """An in-memory CSV's QI columns are read as the Enums of their raw values (the output plan
    reads those codes: no String cast of a QI); with a value outside a hierarchy or a null
    they stay as read, and the string path names the value or applies the null policy."""
    from ldiv_polars.core.engines.polars import read_coded
    from ldiv_polars.errors import NullValuesError
    from ldiv_polars.hierarchy import HierarchyValueMissingError

    data, hdir = fig1_files
    hs = {"zip": Hierarchy.from_csv(hdir / "fig1_hierarchy_zip.csv"),
          "age": Hierarchy.from_csv(hdir / "age.csv")}
    leaves = {q: hs[q].column(0) for q in hs}
    res = anonymize(data, ["zip", "age"], "condition", hs, [KAnonymity(4)], verify=False)
    plan = res.output.explain()
    assert 'col("age").to_physical()' in plan and "cast" not in plan
    frame = read_coded(data, None, pl.scan_csv(data), ["zip", "age"], leaves)
    assert frame.schema["age"] == pl.Enum(hs["age"].column(0))
    assert frame.drop("zip", "age").equals(FIG1.drop("zip", "age"))
    assert frame.select(pl.col("zip", "age").cast(pl.String)).equals(
        FIG1.select(pl.col("zip"), pl.col("age").cast(pl.String)))
    odd = tmp_path / "odd.csv"
    FIG1.with_columns(pl.when(pl.col("age") == 50).then(99).otherwise(pl.col("age"))
                      .alias("age")).write_csv(odd)
    assert read_coded(odd, ",", pl.scan_csv(odd), ["zip", "age"], leaves).schema["age"] == pl.Int64
    with pytest.raises(HierarchyValueMissingError, match="'99'"):
        anonymize(odd, ["zip", "age"], "condition", hs, [KAnonymity(4)])
    # a value read as a number before the string cast ("021" is 21) is not parsed as a
    # category: the frame stays as read, with the same result as the plain file
    padded = tmp_path / "padded.csv"
    padded.write_text(data.read_text().replace(",21,", ",021,"))
    assert read_coded(padded, ",", pl.scan_csv(padded), ["zip", "age"], leaves).schema[
        "age"] == pl.Int64
    again = anonymize(padded, ["zip", "age"], "condition", hs, [KAnonymity(4)], verify=False)
    assert again.levels == res.levels and again.output.collect().equals(res.output.collect())
    gap = tmp_path / "gap.csv"
    FIG1.with_columns(pl.when(pl.col("age") == 50).then(None).otherwise(pl.col("age"))
                      .alias("age")).write_csv(gap)
    assert read_coded(gap, ",", pl.scan_csv(gap), ["zip", "age"], leaves).schema["age"] == pl.Int64
    with pytest.raises(NullValuesError):
        anonymize(gap, ["zip", "age"], "condition", hs, [KAnonymity(4)])


def test_small_csv_is_parsed_once_with_the_same_result(fig1_files, tmp_path, monkeypatch):
    """A CSV path within ``IN_MEMORY_CSV_MAX_BYTES`` is read into memory once (the output plan
    reads that frame, no second scan of the file); a larger one is scanned, twice. Same search
    result and the same written table either way."""
    data, hdir = fig1_files
    hs = {"zip": Hierarchy.from_csv(hdir / "fig1_hierarchy_zip.csv"),
          "age": Hierarchy.from_csv(hdir / "age.csv")}
    runs = {}
    for limit in (A.IN_MEMORY_CSV_MAX_BYTES, 0):
        monkeypatch.setattr(A, "IN_MEMORY_CSV_MAX_BYTES", limit)
        res = anonymize(data, ["zip", "age"], "condition", hs, [KAnonymity(4)],
                        suppression=0.34, metric="height", verify=False)
        plan = res.output.explain()
        assert ("SCAN" in plan.upper() and "CSV" in plan.upper()) == (limit == 0)
        out = tmp_path / f"out{limit}.parquet"
        res.sink(out)
        d = res.to_dict()
        d.pop("elapsed_s")
        runs[limit] = (d, pl.read_parquet(out))
    (a, ta), (b, tb) = runs.values()
    assert a == b and a["optimum"]["suppressed"] > 0
    assert ta.equals(tb) and ta.height == FIG1.height
