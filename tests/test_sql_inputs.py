"""Inputs of the DuckDB engine: files, tables, frames; column names that need quoting; names
that try to inject SQL; typed errors raised before any work; Adult parity with Polars."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pytest

import ldiv_polars as lp
import ldiv_polars.duckdb as ld
from ldiv_polars.errors import (
    DuplicateColumnError,
    EmptyQuasiIdentifierError,
    InputFormatError,
    InvalidParameterError,
    NullValuesError,
    SensitiveInQuasiIdentifierError,
    UnknownColumnError,
)
from ldiv_polars.models import DistinctLDiversity, KAnonymity, MultiAttribute


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    c = ld.install(duckdb.connect())
    yield c
    c.close()


def same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        if isinstance(a[key], float) and b[key] is not None:
            assert math.isclose(a[key], b[key], rel_tol=1e-9, abs_tol=1e-12), key
        else:
            assert a[key] == b[key], key


DF = pl.DataFrame({
    "zip": ["130", "130", "130", "148", "148", "150", "150"],
    "age": [20, 20, 20, 30, 30, 40, 40],
    "s": ["flu", "hiv", "flu", "flu", "cold", "cold", "hiv"],
})

# ------------------------------------------------------------------------------------------
# Quoting and injection
# ------------------------------------------------------------------------------------------

ODD = {
    "zip": "zip code",            # space
    "age": 'the "age"',           # double quotes
    "s": "select",                # reserved word
}


def test_names_needing_quotes_work_in_both_engines(con) -> None:
    for qi_name, s_name in [(["zip code", 'the "age"'], "select"),
                            (["ünïcødé 名前", "from"], "it's"),
                            (["a;b", "order by"], "group")]:
        renamed = DF.rename(dict(zip(["zip", "age", "s"], [*qi_name, s_name])))
        got = ld.summary(renamed, qi_name, s_name, con=con)
        same(got, lp.summary(renamed, qi_name, s_name))
        same(got, lp.summary(DF, ["zip", "age"], "s"))


def test_count_column_name_does_not_clash_in_sql(con) -> None:
    df = DF.rename({"zip": "n", "s": "size"})
    got = ld.summary(df, ["n", "age"], "size", con=con)
    same(got, lp.summary(DF, ["zip", "age"], "s"))


INJECTIONS = [
    'zip"); DROP TABLE victim; --',
    "zip'); DROP TABLE victim; --",
    "zip FROM victim; DROP TABLE victim; --",
    "*",
    "1=1 OR zip",
]


@pytest.mark.parametrize("evil", INJECTIONS)
def test_injection_through_names_is_a_missing_column(con, evil: str) -> None:
    con.execute("CREATE OR REPLACE TABLE victim AS SELECT 42 AS x")
    con.register("inj", DF.to_arrow())
    try:
        with pytest.raises(UnknownColumnError) as err:
            ld.summary("inj", ["zip", evil], "s", con=con)
        assert err.value.missing == [evil]
        with pytest.raises(UnknownColumnError):
            ld.summary("inj", ["zip"], evil, con=con)
        with pytest.raises(UnknownColumnError):
            ld.check("inj", [evil], "s", [KAnonymity(2)], con=con)
        # straight to the macro: the name is a bound list element, matched as a string
        with pytest.raises(duckdb.BinderException):
            con.execute("FROM ldiv_summary('inj', ?, 's', 2)", [[evil]]).fetchall()
    finally:
        con.unregister("inj")
    assert con.execute("SELECT x FROM victim").fetchall() == [(42,)]


def test_injection_through_a_table_name_is_a_missing_table(con) -> None:
    con.execute("CREATE OR REPLACE TABLE victim AS SELECT 42 AS x")
    with pytest.raises(InputFormatError, match="no table or view"):
        ld.summary("victim; DROP TABLE victim", ["x"], "x", con=con)
    with pytest.raises(duckdb.CatalogException):
        con.execute("FROM ldiv_summary(?, ['x'], 'x', 2)", ["victim; DROP TABLE victim"]
                    ).fetchall()
    assert con.execute("SELECT x FROM victim").fetchall() == [(42,)]


def test_a_column_literally_named_like_sql_is_just_a_column(con) -> None:
    evil = 'zip"); DROP TABLE victim; --'
    con.execute("CREATE OR REPLACE TABLE victim AS SELECT 42 AS x")
    df = DF.rename({"zip": evil})
    same(ld.summary(df, [evil, "age"], "s", con=con), lp.summary(DF, ["zip", "age"], "s"))
    assert con.execute("SELECT x FROM victim").fetchall() == [(42,)]


# ------------------------------------------------------------------------------------------
# Typed errors, raised before any heavy work
# ------------------------------------------------------------------------------------------


def test_typed_errors(con) -> None:
    with pytest.raises(UnknownColumnError, match="'zipp'"):
        ld.summary(DF, ["zipp"], "s", con=con)
    with pytest.raises(EmptyQuasiIdentifierError):
        ld.summary(DF, [], "s", con=con)
    with pytest.raises(SensitiveInQuasiIdentifierError):
        ld.summary(DF, ["zip", "s"], "s", con=con)
    with pytest.raises(DuplicateColumnError):
        ld.summary(DF, ["zip", "zip"], "s", con=con)
    with pytest.raises(InvalidParameterError, match="l must be"):
        ld.summary(DF, ["zip"], "s", l=0, con=con)
    with pytest.raises(InvalidParameterError, match="nulls"):
        ld.summary(DF, ["zip"], "s", nulls="drop", con=con)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="one sensitive column"):
        ld.summary(DF, ["zip"], ["s", "age"], con=con)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="no SQL form"):
        ld.check(DF, ["zip"], "s", [MultiAttribute(DistinctLDiversity(2))], con=con)
    with pytest.raises(InvalidParameterError, match="not a privacy model"):
        ld.check(DF, ["zip"], "s", ["k=2"], con=con)
    with pytest.raises(InputFormatError, match="no such file"):
        ld.summary("/nonexistent/file.parquet", ["zip"], "s")
    with pytest.raises(InputFormatError, match="cannot tell the format"):
        ld.summary(__file__, ["zip"], "s")
    with pytest.raises(InputFormatError, match="no table or view"):
        ld.summary("no_such_table", ["zip"], "s", con=con)
    with pytest.raises(InputFormatError, match="expected"):
        ld.summary(42, ["zip"], "s", con=con)  # type: ignore[arg-type]
    # every LdivError on bad input leaves the connection usable
    assert con.execute("SELECT 1").fetchall() == [(1,)]


def test_null_policy_matches_polars(con) -> None:
    df = DF.with_columns(
        pl.when(pl.int_range(pl.len()) < 2).then(None).otherwise(pl.col("zip")).alias("zip"),
        pl.when(pl.int_range(pl.len()) == 6).then(None).otherwise(pl.col("s")).alias("s"),
    )
    with pytest.raises(NullValuesError) as sql_err:
        ld.summary(df, ["zip", "age"], "s", con=con)
    with pytest.raises(NullValuesError) as pol_err:
        lp.summary(df, ["zip", "age"], "s")
    assert sql_err.value.counts == pol_err.value.counts == {"zip": 2, "s": 1}
    assert str(sql_err.value) == str(pol_err.value)
    same(ld.summary(df, ["zip", "age"], "s", con=con, nulls="value"),
         lp.summary(df, ["zip", "age"], "s", nulls="value"))


def test_empty_table(con) -> None:
    empty = DF.head(0)
    same(ld.summary(empty, ["zip", "age"], "s", con=con), lp.summary(empty, ["zip", "age"], "s"))


# ------------------------------------------------------------------------------------------
# Input kinds
# ------------------------------------------------------------------------------------------


def test_paths_tables_frames_relations(con, tmp_path) -> None:
    want = lp.summary(DF, ["zip", "age"], "s")
    pq_path = tmp_path / "t.parquet"
    DF.write_parquet(pq_path)
    csv_path = tmp_path / "t.csv"
    DF.write_csv(csv_path, separator=";")
    same(ld.summary(pq_path, ["zip", "age"], "s"), want)
    same(ld.summary(str(pq_path), ["zip", "age"], "s", con=con), want)
    same(ld.summary(csv_path, ["zip", "age"], "s"), lp.summary(csv_path, ["zip", "age"], "s"))
    same(ld.summary(csv_path, ["zip", "age"], "s", separator=";"), want | {})
    same(ld.summary(DF.lazy(), ["zip", "age"], "s", con=con), want)
    same(ld.summary(DF.to_arrow(), ["zip", "age"], "s", con=con), want)
    con.execute("CREATE OR REPLACE TABLE tbl_in AS SELECT * FROM read_parquet(?)",
                [str(pq_path)])
    same(ld.summary("tbl_in", ["zip", "age"], "s", con=con), want)
    rel = con.sql("FROM tbl_in")
    same(ld.summary(rel, ["zip", "age"], "s", con=con), want)
    same(ld.summary(con.sql("FROM tbl_in"), ["zip", "age"], "s"), want)  # no con: rows copied
    # temporary objects are gone afterwards
    left = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'ldiv_%'"
                       ).fetchall()[0][0]
    left += con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'ldiv_%'"
                        ).fetchall()[0][0]
    assert left == 0


def test_adult_parity(adult_csv) -> None:
    c = ld.install(duckdb.connect())
    for qi, s, l in [
        (["age", "sex", "race"], "occupation", 2),
        (["sex", "race", "education"], "age", 3),
        (["age", "sex", "race", "marital-status", "education", "native-country", "workclass"],
         "salary-class", 1),
    ]:
        same(ld.summary(adult_csv, qi, s, l=l, con=c), lp.summary(adult_csv, qi, s, l=l))
    c.close()
