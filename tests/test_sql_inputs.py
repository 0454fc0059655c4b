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


@pytest.fixture(params=["struct", "packed"])
def plan(request, monkeypatch) -> str:
    """ld.summary's two paths: the struct-key frequency set and the packed plan with its null
    scan (every table large enough)."""
    if request.param == "packed":
        monkeypatch.setattr(ld, "PACKED_MIN_ROWS", 0)
        monkeypatch.setattr(ld, "PROBE_ROWS", 0)
    return request.param


def test_null_policy_matches_polars(con, plan) -> None:
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


def test_summary_plan_from_rows_and_a_prefix(con) -> None:
    # PACKED_MIN_ROWS rows: (q, s) distinct on every row of any prefix: packed; (r, s) spans
    # 200 values: struct; and struct for any smaller table
    n = ld.PACKED_MIN_ROWS
    con.execute("CREATE OR REPLACE TEMP TABLE ldiv_t_big AS SELECT range AS q, range % 100 AS r, "
                "range % 2 AS s FROM range(?)", [n])
    con.execute(f"CREATE OR REPLACE TEMP VIEW ldiv_t_small AS FROM ldiv_t_big LIMIT {n - 1}")
    try:
        assert ld.summary_plan(con, "ldiv_t_big", ["q", "s"]) == "packed"
        assert ld.summary_plan(con, "ldiv_t_big", ["r", "s"]) == "struct"
        assert ld.summary_plan(con, "ldiv_t_small", ["q", "s"]) == "struct"
    finally:
        con.execute("DROP VIEW ldiv_t_small")
        con.execute("DROP TABLE ldiv_t_big")


def _sql_plan(con, table: str, qi: list[str], s: str, **limits: int) -> str:
    named = "".join(f", {k} := {int(v)}" for k, v in limits.items())
    return con.execute(f"FROM ldiv_summary_plan(?, ?, ?{named})", [table, qi, s]).fetchall()[0][0]


def test_the_sql_plan_is_summary_plans(con, monkeypatch) -> None:
    # ldiv_summary chooses in SQL by summary_plan's rule: the same answer with the default
    # thresholds (PACKED_MIN_ROWS rows: packed for (q, s), struct for (r, s) and any smaller
    # table) and with lowered ones, around the row limit and the half-distinct prefix
    n = ld.PACKED_MIN_ROWS
    con.execute("CREATE OR REPLACE TEMP TABLE ldiv_t_big AS SELECT range AS q, range % 100 AS r, "
                "range % 2 AS s FROM range(?)", [n])
    con.execute(f"CREATE OR REPLACE TEMP VIEW ldiv_t_small AS FROM ldiv_t_big LIMIT {n - 1}")
    try:
        for table, qi, want in (("ldiv_t_big", ["q"], "packed"), ("ldiv_t_big", ["r"], "struct"),
                                ("ldiv_t_small", ["q"], "struct")):
            assert ld.summary_plan(con, table, [*qi, "s"]) == want
            assert _sql_plan(con, table, qi, "s") == want
    finally:
        con.execute("DROP VIEW ldiv_t_small")
        con.execute("DROP TABLE ldiv_t_big")
    monkeypatch.setattr(ld, "PACKED_MIN_ROWS", 1000)
    monkeypatch.setattr(ld, "PROBE_ROWS", 400)
    limits = {"min_rows": 1000, "probe_rows": 400}
    seen = set()
    try:
        _plans_agree_on_small_tables(con, limits, seen)
    finally:
        con.execute("DROP TABLE IF EXISTS ldiv_t_p")
    assert seen == {"packed", "struct"}


def test_the_sql_plan_keeps_the_struct_key_on_a_csv_path(con, tmp_path) -> None:
    # as summary() does: every table large enough and half distinct, a Parquet path is packed
    # and a CSV path keeps the struct key without being counted; ldiv_summary's row is the same
    DF.write_parquet(tmp_path / "t.parquet")
    DF.write_csv(tmp_path / "t.csv")
    want = lp.summary(DF, ["zip", "age"], "s")
    for name, plan in (("t.parquet", "packed"), ("t.csv", "struct")):
        path = str(tmp_path / name)
        assert _sql_plan(con, path, ["zip", "age"], "s", min_rows=0, probe_rows=0) == plan
        cur = con.execute("FROM ldiv_summary(?, ['zip', 'age'], 's', 2, min_rows := 0, "
                          "probe_rows := 0)", [path])
        same(dict(zip([d[0] for d in cur.description], cur.fetchall()[0])), want)


def _plans_agree_on_small_tables(con, limits: dict[str, int], seen: set[str]) -> None:
    for rows in (999, 1000, 3000):
        # s follows the parity of h and g: (q, s) distinct on every row, (h, s) on exactly half
        # of the probe's 400 rows (packed), (g, s) on 198 (struct), (g, h, s) on every row
        con.execute("CREATE OR REPLACE TEMP TABLE ldiv_t_p AS SELECT range AS q, range % 200 AS h,"
                    " range % 198 AS g, (range % 2)::VARCHAR AS s FROM range(?)", [rows])
        for qi in (["q"], ["h"], ["g"], ["g", "h"]):
            want = ld.summary_plan(con, "ldiv_t_p", [*qi, "s"])
            seen.add(want)
            assert _sql_plan(con, "ldiv_t_p", qi, "s", **limits) == want, (rows, qi)
            got = con.execute("FROM ldiv_summary('ldiv_t_p', ?, 's', 2, min_rows := 1000, "
                              "probe_rows := 400)", [qi]).fetchall()
            macro = "ldiv_summary_packed" if want == "packed" else "ldiv_summary_struct"
            assert got == con.execute(f"FROM {macro}('ldiv_t_p', ?, 's', 2)", [qi]).fetchall()
            same(ld.summary("ldiv_t_p", qi, "s", con=con), lp.summary(
                con.sql("FROM ldiv_t_p").pl(), qi, "s"))


def test_summary_of_a_csv_file_keeps_the_struct_key(con, tmp_path, monkeypatch) -> None:
    # every table large enough and half distinct: a Parquet file takes the packed plan, a CSV
    # file the struct key without asking summary_plan (each pass re-parses a CSV); same values
    monkeypatch.setattr(ld, "PACKED_MIN_ROWS", 0)
    monkeypatch.setattr(ld, "PROBE_ROWS", 0)
    asked: list[str] = []
    real = ld.summary_plan
    monkeypatch.setattr(ld, "summary_plan", lambda *a: asked.append(real(*a)) or asked[-1])
    DF.write_parquet(tmp_path / "t.parquet")
    DF.write_csv(tmp_path / "t.csv")
    want = lp.summary(DF, ["zip", "age"], "s")
    same(ld.summary(tmp_path / "t.csv", ["zip", "age"], "s", con=con), want)
    assert asked == []
    same(ld.summary(tmp_path / "t.parquet", ["zip", "age"], "s", con=con), want)
    assert asked == ["packed"]


def test_empty_table(con, plan) -> None:
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


def test_source_says_whether_a_row_count_reads_the_rows(con, tmp_path) -> None:
    # a CSV file is counted by reading it (summary_plan then reads its prefix first);
    # a Parquet file, a table and a frame answer from metadata
    from ldiv_polars.core.engines.duckdb import source

    DF.write_parquet(tmp_path / "t.parquet")
    DF.write_csv(tmp_path / "t.csv", separator=";")
    con.execute("CREATE OR REPLACE TABLE tbl_count AS FROM DF")
    for data, reads in [(tmp_path / "t.csv", True), (str(tmp_path / "t.csv"), True),
                        (tmp_path / "t.parquet", False), ("tbl_count", False), (DF, False)]:
        with source(data, con, None) as src:
            assert src.count_reads_rows is reads, data


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


# ------------------------------------------------------------------------------------------
# The macros check their arguments like the Python API (errors, never verdicts)
# ------------------------------------------------------------------------------------------

BAD_CALLS = [
    ("FROM ldiv_k_anonymity('a', ['zip'], 0)", "k must be an integer >= 1"),
    ("FROM ldiv_k_anonymity('a', ['zip'], 1.5)", "k must be an integer >= 1"),
    ("FROM ldiv_distinct_l('a', ['zip'], 's', -1)", r"l must be in \[1.0, 1000000.0\]"),
    ("FROM ldiv_entropy_l('a', ['zip'], 's', -2)", "l must be in"),
    ("FROM ldiv_entropy_l('a', ['zip'], 's', 'nan'::DOUBLE)", "l must be a number"),
    ("FROM ldiv_recursive_cl('a', ['zip'], 's', -1, 2)", "c must be in"),
    ("FROM ldiv_recursive_cl('a', ['zip'], 's', 'nan'::DOUBLE, 2)", "c must be a number"),
    ("FROM ldiv_recursive_cl('a', ['zip'], 's', 2, 0)", r"l must be in \[1.0, 1000000.0\]"),
    ("FROM ldiv_alpha_k('a', ['zip'], 's', 1.5, 1)", "alpha must be in"),
    ("FROM ldiv_alpha_k('a', ['zip'], 's', 0, 1)", "alpha must be in"),
    ("FROM ldiv_alpha_k('a', ['zip'], 's', 0.5, 0)", "k must be an integer >= 1"),
    ("FROM ldiv_t_closeness('a', ['zip'], 's', 'nan'::DOUBLE)", "t must be a number"),
    ("FROM ldiv_t_closeness('a', ['zip'], 's', -0.1)", "t must be in"),
    ("FROM ldiv_t_closeness('a', ['zip'], 's', 1.5)", "t must be in"),
    ("FROM ldiv_delta_disclosure('a', ['zip'], 's', -1)", "delta must be in"),
    ("FROM ldiv_delta_disclosure('a', ['zip'], 's', 'nan'::DOUBLE)", "delta must be a number"),
    ("FROM ldiv_beta_likeness('a', ['zip'], 's', 0)", "beta must be in"),
    ("FROM ldiv_beta_likeness('a', ['zip'], 's', -1, enhanced := true)", "beta must be in"),
    ("FROM ldiv_npd_recursive_cl('a', ['zip'], 's', 2, 100, 2)", "c2 must be in"),
    ("FROM ldiv_summary('a', ['zip'], 's', 0)", r"l must be in \[1.0, 1000000.0\]"),
    ("FROM ldiv_violations('a', ['zip'], 's', k := 0)", "k must be an integer >= 1"),
    ("FROM ldiv_violations('a', ['zip'], 's', t := 'nan'::DOUBLE)", "t must be a number"),
    # columns: the sensitive column among the QIs, duplicates (case-insensitive), unknown names
    ("FROM ldiv_entropy_l('a', ['zip', 's'], 's', 2)", "also listed as quasi-identifier"),
    ("FROM ldiv_distinct_l('a', ['zip', 'ZIP'], 's', 2)", "named twice"),
    ("FROM ldiv_summary('a', ['zip', 'agee'], 's', 2)", "unknown column"),
    ("FROM ldiv_k_anonymity('a', ['zip', 'agee'], 2)", "unknown column"),
    ("FROM ldiv_frequency_set('a', ['zip', 'agee'], 's')", "unknown column"),
    ("FROM ldiv_classes('a', ['zip', 'age'], 'zip')", "also listed as quasi-identifier"),
    ("FROM ldiv_prosecutor_risk('a', ['zip', 'zip'])", "named twice"),
]


@pytest.mark.parametrize("sql, message", BAD_CALLS)
def test_macros_check_their_arguments(con, sql, message) -> None:
    con.register("a", DF.to_arrow())
    try:
        with pytest.raises(duckdb.InvalidInputException, match=message):
            con.execute(sql).fetchall()
    finally:
        con.unregister("a")


def test_no_listed_column_at_all_is_an_error_too(con) -> None:
    # nothing to select (no listed QI exists, or the sensitive column does not): DuckDB's
    # binder says so before running anything (the COLUMNS expression is empty)
    con.register("a", DF.to_arrow())
    try:
        for sql in ("FROM ldiv_k_anonymity('a', ['nope'], 2)",
                    "FROM ldiv_k_anonymity('a', [], 2)",
                    "FROM ldiv_summary('a', ['zip'], 'nope', 2)"):
            with pytest.raises(duckdb.BinderException, match="empty set of columns"):
                con.execute(sql).fetchall()
    finally:
        con.unregister("a")


# ------------------------------------------------------------------------------------------
# Column names: none reserved, DuckDB's case-insensitivity
# ------------------------------------------------------------------------------------------


def test_names_like_the_internal_columns_work(con) -> None:
    """A QI named n, a sensitive column named like the internal count (ldiv__n), and names
    like the helper columns (size, cid, sv, ec): the macros and ld.check give the Polars
    verdicts of the same table with plain names."""
    from ldiv_polars.models import EntropyLDiversity, TCloseness

    plain = DF.rename({"zip": "a", "age": "b", "s": "c"})
    models = [KAnonymity(3), DistinctLDiversity(2), EntropyLDiversity(1.5), TCloseness(0.3)]
    want = lp.check(plain, ["a", "b"], "c", models)
    for q1, q2, s in [("n", "size", "ldiv__n"), ("cid", "ec", "sv"), ("sv", "n", "ec"),
                      ("ldiv__n", "tn", "size")]:
        df = plain.rename({"a": q1, "b": q2, "c": s})
        got = ld.check(df, [q1, q2], s, models, con=con)
        assert [(r["passed"], r["failing_classes"]) for r in got] == [
            (m.passed, m.failing_classes) for m in want.models], (q1, q2, s)
        for r, m in zip(got, want.models):
            assert r["achieved"] == pytest.approx(m.achieved, rel=1e-12)
        con.register("named", df.to_arrow())
        try:
            row = con.execute("SELECT k, l_distinct, classes FROM ldiv_summary('named', ?, ?, 2)",
                              [[q1, q2], s]).fetchall()[0]
            assert row == (want["k_anonymity"].achieved, want["distinct_l"].achieved,
                           want.classes)
            ent = con.execute("SELECT passed FROM ldiv_entropy_l('named', ?, ?, 1.5)",
                              [[q1, q2], s]).fetchall()[0][0]
            assert ent == want["entropy_l"].passed
        finally:
            con.unregister("named")


def test_frequency_set_macro_refuses_a_column_named_n(con) -> None:
    df = DF.rename({"zip": "n"})
    con.register("fn", df.to_arrow())
    try:
        with pytest.raises(duckdb.InvalidInputException, match="named n"):
            con.execute("FROM ldiv_frequency_set('fn', ['n', 'age'], 's')").fetchall()
        cur = con.execute("FROM ldiv_frequency_set('fn', ['age'], 's')")
        cols = [d[0] for d in cur.description]
        cur.fetchall()
        assert cols == ["age", "s", "n"]
    finally:
        con.unregister("fn")


def test_names_are_case_insensitive_as_in_duckdb(con) -> None:
    con.register("ci", DF.to_arrow())
    try:
        upper = con.execute("FROM ldiv_summary('ci', ['ZIP', 'Age'], 'S', 2)").fetchall()
        lower = con.execute("FROM ldiv_summary('ci', ['zip', 'age'], 's', 2)").fetchall()
        assert upper == lower
        assert con.execute("SELECT count(*) FROM ldiv_frequency_set('ci', ['AGE'], 'S')"
                           ).fetchall() == [(DF.select("age", "s").unique().height,)]
    finally:
        con.unregister("ci")


# every l-diversity macro, its l argument spelled as a call with {l}
L_MACROS = [
    "FROM ldiv_distinct_l('a', ['zip'], 's', {l})",
    "FROM ldiv_entropy_l('a', ['zip'], 's', {l})",
    "FROM ldiv_recursive_cl('a', ['zip'], 's', 2, {l})",
    "FROM ldiv_summary('a', ['zip'], 's', {l})",
    "FROM ldiv_violations('a', ['zip'], 's', l := {l})",
    "FROM ldiv_violations('a', ['zip'], 's', entropy_l := {l})",
    "FROM ldiv_violations('a', ['zip'], 's', c := 2, recursive_l := {l})",
]


@pytest.mark.parametrize("sql", L_MACROS)
def test_every_l_macro_has_the_models_domain_and_message(con, sql) -> None:
    """l lies in [1, L_MAX] for every l-diversity model (models/l_diversity.py): each macro
    refuses 0, L_MAX + 1 and an infinite l with Python's own message, and takes L_MAX (a
    verdict). ldiv_distinct_l and ldiv_entropy_l took any l above L_MAX."""
    from ldiv_polars.models import EntropyLDiversity
    from ldiv_polars.models.l_diversity import L_MAX

    con.register("a", DF.to_arrow())
    try:
        for bad in (0, L_MAX + 1, float("inf")):
            with pytest.raises(InvalidParameterError) as py:
                EntropyLDiversity(bad)
            literal = "'inf'::DOUBLE" if math.isinf(bad) else str(bad)
            with pytest.raises(duckdb.InvalidInputException) as sq:
                con.execute(sql.format(l=literal)).fetchall()
            name = "recursive_l" if "recursive_l :=" in sql else \
                "entropy_l" if "entropy_l :=" in sql else "l"
            assert str(py.value).replace("l must", f"{name} must", 1) in str(sq.value)
        con.execute(sql.format(l=L_MAX)).fetchall()
    finally:
        con.unregister("a")
