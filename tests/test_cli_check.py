"""``ldiv check`` / ``ldiv synth`` / ``ldiv demo`` in-process: JSON keys, values, exit codes."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main

TABLE = pl.DataFrame(
    {
        "zip": ["130", "130", "130", "148", "148", "148", "149"],
        "age": [1, 1, 1, 2, 2, 2, 3],
        "disease": ["flu", "flu", "hiv", "flu", "cancer", "hiv", "flu"],
        "income": [10, 20, 30, 40, 50, 60, 70],
    }
)


@pytest.fixture()
def csv(tmp_path):
    path = tmp_path / "t.csv"
    TABLE.write_csv(path, separator=";")
    return path


def run_json(capsys, *args):
    rc = main([*args, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_json_has_exactly_the_summary_keys_and_values(capsys, csv):
    rc, got = run_json(capsys, "check", str(csv), "--qi", "zip,age", "--sensitive", "disease",
                       "--l", "2")
    assert rc == 1  # --l 2 is also a requirement (distinct l), which fails
    # the summary's keys, then the verdict of every requested model (which one failed)
    assert list(got) == [*lp.SUMMARY_KEYS, "passed", "models"]
    assert got["passed"] is False
    assert got["models"] == [{"key": "distinct_l_2", "model": "distinct_l", "params": {"l": 2},
                              "passed": False, "achieved": 1, "failing_classes": 1,
                              "failing_rows": 1}]
    # derived by hand: classes {flu,flu,hiv} {flu,cancer,hiv} {flu}
    assert got["rows"] == 7 and got["classes"] == 3 and got["k"] == 1
    assert got["l_distinct"] == 1 and got["l_entropy"] == pytest.approx(1.0)
    assert got["recursive_c"] is None  # the singleton class has < 2 values
    assert got["alpha"] == 1.0
    assert got["delta"] is None  # classes miss values of the table
    assert got["sample_uniques"] == 1
    assert got["prosecutor_max"] == 1.0 and got["prosecutor_avg"] == pytest.approx(3 / 7)
    # t for a string column: equal distance; the singleton class {flu}: 0.5*(3/7+... ) = 1-4/7
    assert got["t"] == pytest.approx(1 - 4 / 7)


def test_numeric_sensitive_uses_ordered_distance(capsys, csv):
    rc, got = run_json(capsys, "check", str(csv), "--qi", "zip", "--sensitive", "income")
    assert rc == 0
    # class 149 = {70} vs uniform over 7 ordered values: (1/6) * sum_{i<7} i/7 = 0.5
    assert got["t"] == pytest.approx(0.5)


def test_thresholds_set_exit_code(capsys, csv):
    base = ["check", str(csv), "--qi", "zip", "--sensitive", "disease"]
    assert main([*base, "--k", "1", "--json"]) == 0
    assert main([*base, "--k", "2", "--json"]) == 1
    assert main([*base, "--l", "1", "--model", "entropy", "--json"]) == 0
    assert main([*base, "--l", "2", "--model", "recursive", "--c", "3", "--json"]) == 1
    assert main([*base, "--t", "1.0", "--alpha", "1.0", "--json"]) == 0
    assert main([*base, "--delta", "100", "--json"]) == 1  # infinite delta
    capsys.readouterr()


def test_bad_input_exits_2_with_one_line(capsys, csv):
    assert main(["check", str(csv), "--qi", "zipp", "--sensitive", "disease"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "zipp" in err[0]
    assert main(["check", str(csv), "--qi", "zip", "--sensitive", "disease", "--l", "2",
                 "--model", "nope"]) == 2
    assert main(["check", str(csv), "--qi", "zip", "--sensitive", "disease", "--k", "x"]) == 2


def test_readable_report(capsys, csv):
    rc = main(["check", str(csv), "--qi", "zip", "--sensitive", "disease", "--k", "2"])
    out = capsys.readouterr().out
    assert rc == 1 and "FAIL" in out and "k_anonymity(k=2)" in out and "sample uniques" in out


def test_engines_agree_through_the_cli(capsys, csv):
    pytest.importorskip("ldiv_polars.duckdb")
    from ldiv_polars import duckdb as ldiv_duckdb

    if not hasattr(ldiv_duckdb, "summary"):
        pytest.skip("the DuckDB summary is not available")
    _, polars_json = run_json(capsys, "check", str(csv), "--qi", "zip,age", "--sensitive",
                              "disease")
    _, duck_json = run_json(capsys, "check", str(csv), "--qi", "zip,age", "--sensitive",
                            "disease", "--engine", "duckdb")
    assert list(duck_json) == list(polars_json)
    for key, v in polars_json.items():
        if isinstance(v, float):
            assert duck_json[key] == pytest.approx(v, rel=1e-9)
        else:
            assert duck_json[key] == v


def test_synth_then_check(capsys, tmp_path):
    out = tmp_path / "s.parquet"
    assert main(["synth", "--rows", "5000", "--seed", "3", "--out", str(out),
                 "--chunk-rows", "2000"]) == 0
    capsys.readouterr()
    rc, got = run_json(capsys, "check", str(out), "--qi", "sex,race", "--sensitive", "disease")
    assert rc == 0 and got["rows"] == 5000
    assert got["classes"] == pl.read_parquet(out).select("sex", "race").n_unique()
    assert not math.isnan(got["t"])


def test_demo_runs(capsys):
    assert main(["demo", "--rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "Raw data" in out and "k_anonymity(k=5)" in out


def test_null_error_names_the_flag_that_accepts_nulls(capsys, tmp_path):
    """A cell-suppressed release holds nulls: the error tells a command-line user the flag
    (not only the Python keyword), and the flag it names is accepted."""
    path = tmp_path / "cells.csv"
    TABLE.with_columns(pl.when(pl.col("zip") == "149").then(None).otherwise(pl.col("zip"))
                       .alias("zip")).write_csv(path)
    base = ["check", str(path), "--qi", "zip", "--sensitive", "disease", "--k", "1"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "--nulls value" in err and err.count("\n") == 1
    assert main([*base, "--nulls", "value"]) == 0


def test_fractional_l_error_names_the_model_and_the_one_that_takes_it(capsys, csv):
    base = ["check", str(csv), "--qi", "zip", "--sensitive", "disease", "--l", "2.5"]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "distinct_l" in err and "entropy" in err
    assert main([*base, "--model", "entropy", "--json"]) == 1  # 2.5 is an entropy l
