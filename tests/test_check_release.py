"""Checking a release ``anonymize`` wrote agrees with its own re-verification and the report
on every surface (``ldiv check`` Polars and DuckDB, ``lp.check``, ``ldiv report``): the rows
masked to ``*`` in every QI are suppressed records, left out of the verdicts and counted;
a Parquet release records its mask, a CSV one needs ``--release``."""

from __future__ import annotations

import json

import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.cli import main

# zip 130 x3, 148 x3, 149 x1: k=3 with 10 % suppression masks the 149 row (1 < k rows)
TABLE = pl.DataFrame({
    "zip": ["130", "130", "130", "148", "148", "148", "149", "130", "148", "130"],
    "disease": ["flu", "hiv", "flu", "flu", "cancer", "hiv", "flu", "cancer", "hiv", "hiv"],
})
H = {"zip": lp.Hierarchy([[z, z[:2] + "*", "*"] for z in ("130", "148", "149")], name="zip")}
MODELS = [lp.KAnonymity(3), lp.TCloseness(0.2)]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """The anonymization and its release written as Parquet and CSV."""
    d = tmp_path_factory.mktemp("rel")
    anon = lp.anonymize(TABLE, ["zip"], "disease", H, MODELS, suppression=0.1)
    assert anon.levels == {"zip": 0} and anon.suppressed_rows == 1
    anon.sink(d / "r.parquet")
    anon.sink(d / "r.csv")
    return anon, d


def cli(capsys, *args):
    rc = main(["check", *args, "--qi", "zip", "--sensitive", "disease", "--k", "3",
               "--t", "0.2", "--json"])
    return rc, json.loads(capsys.readouterr().out)


def verification(anon):
    return [{"key": m.key, **m.to_dict()} for m in anon.verification.models]


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_check_of_a_parquet_release_agrees_with_its_verification(capsys, release, engine):
    anon, d = release
    rc, got = cli(capsys, str(d / "r.parquet"), "--engine", engine)
    assert rc == 0 and got["passed"] and got["unjudged_rows"] == anon.suppressed_rows == 1
    assert got["models"] == verification(anon)
    assert got["rows"] == 10 and got["k"] == 1  # the statistics count every published row
    rc, naive = cli(capsys, str(d / "r.parquet"), "--engine", engine, "--no-release")
    assert rc == 1 and naive["unjudged_rows"] == 0  # the * class of 1 row fails k = 3
    assert naive["models"][0]["achieved"] == 1


def test_a_csv_release_is_judged_as_one_with_release(capsys, release):
    anon, d = release
    rc, got = cli(capsys, str(d / "r.csv"))
    assert rc == 1 and got["unjudged_rows"] == 0  # no metadata: every row judged
    rc, got = cli(capsys, str(d / "r.csv"), "--release")
    assert rc == 0 and got["unjudged_rows"] == 1 and got["models"] == verification(anon)


def test_python_check_and_report_agree(release):
    anon, d = release
    by_hand = lp.check(pl.read_csv(d / "r.csv").filter(pl.col("zip") != "*"), ["zip"],
                       "disease", MODELS)  # the retained rows, filtered independently
    for res in (lp.check(str(d / "r.parquet"), "zip", "disease", MODELS),
                lp.check(str(d / "r.csv"), "zip", "disease", MODELS, release=True),
                lp.check(str(d / "r.csv"), "zip", "disease", MODELS, release="*")):
        assert res.passed and res.unjudged_rows == 1 and res.rows == 9
        assert res.models == by_hand.models
    frame = pl.read_csv(d / "r.csv").lazy()
    assert frame.ldiv.check("zip", "disease", MODELS, release=True).models == by_hand.models
    plain = lp.check(str(d / "r.parquet"), "zip", "disease", MODELS, release=False)
    assert not plain.passed and plain.unjudged_rows == 0 and plain.rows == 10
    pytest.importorskip("matplotlib")
    page = lp.report(TABLE, ["zip"], "disease", MODELS, release=str(d / "r.parquet"))
    assert page.verdicts == verification(anon) and page.unjudged_rows == 1


def test_the_parquet_release_records_its_mask(release):
    _, d = release
    meta = json.loads(pl.read_parquet_metadata(d / "r.parquet")["ldiv_release"])
    assert meta == {"qi": ["zip"], "mask": "*", "mode": "mask"}


def test_a_failing_check_of_a_masked_csv_hints_at_release(capsys, release):
    _, d = release
    rc, _ = cli(capsys, str(d / "r.csv"))  # (cli reads stdout; the hint went to stderr)
    assert rc == 1
    args = ["check", str(d / "r.csv"), "--qi", "zip", "--sensitive", "disease", "--k", "3"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "hint: 1 row(s) are masked to * in every QI" in err and "--release" in err
    assert main([*args, "--no-release"]) == 1  # asked for: no hint
    assert "hint" not in capsys.readouterr().err
    assert main(["check", str(d / "r.csv"), "--qi", "zip", "--sensitive", "disease",
                 "--k", "1"]) == 0  # passing: no hint
    assert "hint" not in capsys.readouterr().err
