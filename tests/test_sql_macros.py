"""The SQL files themselves: they parse, install idempotently, work without Python (the CLI
case), and each macro gives the values derived here by hand or by the Polars engine."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from fractions import Fraction

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
import ldiv_polars.duckdb as ld
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)

FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    c = ld.install(duckdb.connect())
    yield c
    c.close()


def _ldiv_functions(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() "
        "WHERE function_name LIKE 'ldiv%' ORDER BY 1").fetchall()]


# ------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ld.SQL_FILES)
def test_every_sql_file_parses(name: str) -> None:
    text = ld.sql_text(name)
    statements = duckdb.connect().extract_statements(text)
    assert len(statements) >= 2
    creates = text.count("CREATE OR REPLACE MACRO")
    assert len(statements) == creates  # nothing but macro definitions
    assert "->" not in "".join(line.split("--")[0] for line in text.splitlines())


def test_sql_files_found_next_to_the_package() -> None:
    d = ld.sql_dir()
    assert sorted(p.name for p in d.iterdir() if p.name.endswith(".sql")) == sorted(ld.SQL_FILES)


def test_install_twice_is_harmless() -> None:
    c = duckdb.connect()
    ld.install(c)
    first = _ldiv_functions(c)
    ld.install(c)
    assert _ldiv_functions(c) == first
    for name in ("ldiv_summary", "ldiv_frequency_set", "ldiv_mask", "ldiv_adjusted_entropy",
                 "ldiv_entropy_l_dont_care", "ldiv_t_closeness_hierarchical"):
        assert name in first
    c.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (1, 'b')) v(q, s)")
    assert c.execute("SELECT k, l_distinct FROM ldiv_summary('t', ['q'], 's', 2)").fetchall() == [
        (2, 2)]


def test_check_installs_what_the_connection_lacks() -> None:
    """``check`` and ``summary`` install the macros (and the UDFs ``check`` needs) on a
    connection without them, or with ``ldiv.sql`` alone (a DuckDB-CLI user's), and leave an
    installed one as it is."""
    from ldiv_polars.models import EntropyLDiversity, KAnonymity

    df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
    bare, sql_only = duckdb.connect(), duckdb.connect()
    for stmt in sql_only.extract_statements(ld.sql_text("ldiv.sql")):
        sql_only.execute(stmt)
    assert not ld._installed(bare, udfs=False) and not ld._installed(bare, udfs=True)
    assert ld._installed(sql_only, udfs=False) and not ld._installed(sql_only, udfs=True)
    assert ld.summary(df, ["q"], "s", con=bare)["k"] == 2
    assert ld._installed(bare, udfs=False)
    for c in (bare, sql_only):
        rows = ld.check(df, ["q"], "s", [KAnonymity(2), EntropyLDiversity(2)], con=c)
        assert [(r["passed"], r["failing_classes"]) for r in rows] == [(True, 0), (False, 1)]
        assert ld._installed(c, udfs=True)
    sql_only.execute("DROP MACRO ldiv__share_le")  # the last one of ldiv.sql: install again
    assert not ld._installed(sql_only, udfs=False)
    ld.check(df, ["q"], "s", [KAnonymity(2)], con=sql_only)
    assert ld._installed(sql_only, udfs=True)


def test_closed_forms_need_no_python() -> None:
    # what the DuckDB CLI does with `.read sql/ldiv.sql`: run the statements, nothing else
    c = duckdb.connect()
    for stmt in c.extract_statements(ld.sql_text("ldiv.sql")):
        c.execute(stmt)
    assert "ldiv_adjusted_entropy" not in _ldiv_functions(c)
    c.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (2, 'a')) v(q, s)")
    assert c.execute("SELECT rows, classes, k FROM ldiv_summary('t', ['q'], 's', 2)").fetchall() \
        == [(3, 2, 1)]
    # the UDF macros can be created, but calling them needs the Python UDF
    for stmt in c.extract_statements(ld.sql_text("ldiv_udf.sql")):
        c.execute(stmt)
    with pytest.raises(duckdb.CatalogException, match="ldiv_adjusted_entropy"):
        c.execute("FROM ldiv_entropy_l_dont_care('t', ['q'], 's', 2, ['a'])").fetchall()


# ------------------------------------------------------------------------------------------
# The paper's figures (l-diversity paper, Fig. 4 grouping: paper-notes §7)
# ------------------------------------------------------------------------------------------

FIG4 = pl.DataFrame({
    "q": [1] * 4 + [2] * 4 + [3] * 4,
    "s": ["HD", "VI", "C", "C", "C", "HD", "VI", "VI", "HD", "VI", "C", "C"],
})


def test_fig4_values(con) -> None:
    con.register("fig4", FIG4.to_arrow())
    try:
        ent = con.execute("FROM ldiv_entropy_l('fig4', ['q'], 's', 2.8)").fetchall()[0]
        assert ent[1] is True and ent[2] == pytest.approx(2 * math.sqrt(2))
        assert con.execute("SELECT passed FROM ldiv_entropy_l('fig4', ['q'], 's', 2.9)"
                           ).fetchall() == [(False,)]
        # recursive (c,3) iff c > 2 (strict), (c,2) iff c > 1
        for c, l, ok in [(2.0, 3, False), (2.01, 3, True), (1.0, 2, False), (1.01, 2, True)]:
            row = con.execute("FROM ldiv_recursive_cl('fig4', ['q'], 's', ?, ?)", [c, l]
                              ).fetchall()[0]
            assert row[1] is ok, (c, l)
        row = con.execute("FROM ldiv_distinct_l('fig4', ['q'], 's', 3)").fetchall()[0]
        assert row[1:] == (True, 3.0, 0, 0, 0)  # ..., undecided_classes
        classes = con.execute("SELECT q, size, distinct_values, counts, tail "
                              "FROM ldiv_classes('fig4', ['q'], 's', l := 3) ORDER BY q"
                              ).fetchall()
        assert classes == [(1, 4, 3, [2, 1, 1], 1), (2, 4, 3, [2, 1, 1], 1),
                           (3, 4, 3, [2, 1, 1], 1)]
    finally:
        con.unregister("fig4")


# ------------------------------------------------------------------------------------------
# Public table macros against the Python API / the Polars engine
# ------------------------------------------------------------------------------------------

SMALL = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from(["x", "y"]), st.integers(0, 3)),
    min_size=1, max_size=25,
)


def _frame(rows: list[tuple[int, str, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"a": pl.Int64, "b": pl.String, "s": pl.Int64},
                        orient="row")


@settings(max_examples=20, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rows=SMALL)
def test_public_model_macros_equal_the_polars_models(con, rows) -> None:
    df = _frame(rows)
    cases = [
        ("FROM ldiv_k_anonymity('m', ['a', 'b'], 2)", [], KAnonymity(2)),
        ("FROM ldiv_distinct_l('m', ['a', 'b'], 's', 2)", [], DistinctLDiversity(2)),
        ("FROM ldiv_entropy_l('m', ['a', 'b'], 's', 1.7)", [], EntropyLDiversity(1.7)),
        ("FROM ldiv_recursive_cl('m', ['a', 'b'], 's', 2, 2)", [], RecursiveCLDiversity(2, 2)),
        ("FROM ldiv_alpha_k('m', ['a', 'b'], 's', 0.7, 2)", [], AlphaKAnonymity(0.7, 2)),
        ("FROM ldiv_t_closeness('m', ['a', 'b'], 's', 0.3141593)", [], TCloseness(0.3141593,
                                                                               "ordered")),
        ("FROM ldiv_t_closeness('m', ['a', 'b'], 's', 0.3141593, distance := 'equal')", [],
         TCloseness(0.3141593)),
        ("FROM ldiv_delta_disclosure('m', ['a', 'b'], 's', 1.3456789)", [],
         DeltaDisclosure(1.3456789)),
        ("FROM ldiv_beta_likeness('m', ['a', 'b'], 's', 0.8765432)", [], BetaLikeness(0.8765432)),
        ("FROM ldiv_beta_likeness('m', ['a', 'b'], 's', 0.8765432, enhanced := true)", [],
         BetaLikeness(0.8765432, enhanced=True)),
    ]
    con.register("m", df.to_arrow())
    try:
        got = [con.execute(sql, p).fetchall()[0][:5] for sql, p, _ in cases]
    finally:
        con.unregister("m")
    pol = lp.check(df, ["a", "b"], "s", [m for _, _, m in cases])
    for (model, passed, achieved, fc, fr), res in zip(got, pol.models):
        assert (model, passed, fc, fr) == (res.model, res.passed, res.failing_classes,
                                           res.failing_rows), res.key
        exp = None if res.achieved is None or math.isinf(res.achieved) else res.achieved
        assert (achieved is None) == (exp is None), res.key
        if exp is not None:
            assert achieved == pytest.approx(exp, rel=1e-9, abs=1e-12), res.key


@settings(max_examples=20, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rows=SMALL, k=st.integers(1, 4), threshold=st.sampled_from([0.2, 0.5, 1.0]))
def test_risk_macros_equal_risk_profile(con, rows, k, threshold) -> None:
    df = _frame(rows)
    r = lp.risk_profile(df, ["a", "b"])
    con.register("m", df.to_arrow())
    try:
        pros = con.execute("FROM ldiv_prosecutor_risk('m', ['a', 'b'], max_risk := ?)",
                           [threshold]).fetchall()[0]
        mark = con.execute("FROM ldiv_marketer_risk('m', ['a', 'b'])").fetchall()[0]
        uniq = con.execute("FROM ldiv_sample_uniques('m', ['a', 'b'])").fetchall()[0]
        kan = con.execute("FROM ldiv_k_anonymity('m', ['a', 'b'], ?)", [k]).fetchall()[0]
    finally:
        con.unregister("m")
    sizes = df.group_by("a", "b").len()["len"].to_list()
    assert pros[2] == pytest.approx(r.prosecutor_max)
    assert pros[5] == pytest.approx(r.prosecutor_avg)
    assert pros[1] == (max(1 / f for f in sizes) <= threshold)
    assert pros[3] == sum(1 for f in sizes if 1 / f > threshold)
    assert mark[2] == pytest.approx(r.marketer)
    assert uniq[2] == r.sample_uniques and uniq[1] == (r.sample_uniques == 0)
    assert kan[1:] == (min(sizes) >= k, float(min(sizes)), sum(1 for f in sizes if f < k),
                       sum(f for f in sizes if f < k), 0)  # ..., undecided_classes


def test_frequency_set_classes_and_violations_match_polars(con) -> None:
    df = pl.DataFrame({
        "zip": ["130", "130", "130", "148", "148", "150", "150", "150", "150"],
        "age": [20, 20, 20, 30, 30, 40, 40, 40, 40],
        "s": ["flu", "hiv", "flu", "flu", "flu", "cold", "hiv", "flu", "cancer"],
    })
    con.register("v", df.to_arrow())
    try:
        fs = con.execute("FROM ldiv_frequency_set('v', ['zip', 'age'], 's') ORDER BY ALL"
                         ).fetchall()
        classes = con.execute("SELECT zip, age, size, distinct_values, max_count, entropy "
                              "FROM ldiv_classes('v', ['zip', 'age'], 's') ORDER BY zip"
                              ).fetchall()
        viol = con.execute("SELECT zip, age, size, reasons FROM ldiv_violations('v', "
                           "['zip', 'age'], 's', k := 3, l := 2) ORDER BY zip").fetchall()
        none = con.execute("SELECT count(*) FROM ldiv_violations('v', ['zip', 'age'], 's')"
                           ).fetchall()
    finally:
        con.unregister("v")
    assert fs == sorted(lp.frequency_set(df, ["zip", "age"], "s").collect().rows())
    pol = lp.classes(df, ["zip", "age"], "s").sort("zip").collect()
    assert [(z, a, n, d) for z, a, n, d, *_ in classes] == list(
        pol.select("zip", "age", "size", "distinct").iter_rows())
    assert classes[0][4:] == (2, pytest.approx(-(2 / 3) * math.log(2 / 3) - math.log(1 / 3) / 3))
    pv = lp.violations(df, ["zip", "age"], "s", [KAnonymity(3), DistinctLDiversity(2)]
                       ).sort("zip").collect()
    assert [(z, a, n) for z, a, n, _ in viol] == list(pv.select("zip", "age", "size").iter_rows())
    assert viol[0][3] == ["class size 2 < k=3", "1 distinct sensitive value(s) < l=2"]
    assert viol[0][3] == pv.get_column("reasons").to_list()[0]  # the models' own texts
    assert none == [(0,)]


def test_bad_distance_is_an_error(con) -> None:
    con.register("b", FIG4.to_arrow())
    try:
        with pytest.raises(duckdb.InvalidInputException, match="distance must be"):
            con.execute("FROM ldiv_t_closeness('b', ['q'], 's', 0.5, distance := 'hamming')"
                        ).fetchall()
    finally:
        con.unregister("b")


def test_ordered_distance_covers_temporal_columns(con) -> None:
    days = [dt.date(2024, 1, d) for d in (1, 2, 3, 1, 1, 3)]
    df = pl.DataFrame({"q": [1, 1, 1, 2, 2, 2], "s": days})
    got = ld.summary(df, ["q"], "s", con=con)
    assert got["t"] == pytest.approx(lp.summary(df, ["q"], "s")["t"], rel=1e-12)
    # hand: table (3/6, 1/6, 2/6); class 1 (1/3, 1/3, 1/3): |P-Q| = 1/6, 0 -> (1/6)/2
    assert got["t"] == pytest.approx(1 / 12)


# ------------------------------------------------------------------------------------------
# Scalar generalization macros
# ------------------------------------------------------------------------------------------


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None):
    return con.execute(sql, params or []).fetchall()[0][0]


def test_mask(con) -> None:
    assert _scalar(con, "SELECT ldiv_mask('13053', 2)") == "130**"
    assert _scalar(con, "SELECT ldiv_mask('13053', 0)") == "13053"
    assert _scalar(con, "SELECT ldiv_mask('13053', 9)") == "*****"
    assert _scalar(con, "SELECT ldiv_mask(13053, 1)") == "1305*"
    assert _scalar(con, "SELECT ldiv_mask(NULL, 1)") is None
    for code in ["1", "4711", "13053", "ünï"]:
        for n in range(6):
            want = code[: max(len(code) - n, 0)] + "*" * min(n, len(code))
            assert _scalar(con, "SELECT ldiv_mask(?, ?)", [code, n]) == want


@settings(max_examples=30, deadline=None, suppress_health_check=FIXTURE_OK)
@given(x=st.integers(-500, 500), width=st.integers(1, 50), origin=st.integers(-20, 20))
def test_bin_matches_floor_arithmetic(con, x, width, origin) -> None:
    lo = origin + ((x - origin) // width) * width
    got = con.execute("SELECT ldiv_bin_lower(?, ?, origin := ?), ldiv_bin(?, ?, origin := ?)",
                      [x, width, origin, x, width, origin]).fetchall()[0]
    assert got == (lo, f"[{lo}, {lo + width})")


def test_bin_fractional_and_null(con) -> None:
    assert _scalar(con, "SELECT ldiv_bin(3.7, 0.5)") == "[3.5, 4)"
    assert _scalar(con, "SELECT ldiv_bin(37, 10)") == "[30, 40)"
    assert _scalar(con, "SELECT ldiv_bin(NULL::INT, 10)") is None


def test_dates_and_coding(con) -> None:
    d = dt.date(2024, 5, 7)
    assert _scalar(con, "SELECT ldiv_date_trunc(?::DATE, 'month')", [d]) == dt.date(2024, 5, 1)
    assert _scalar(con, "SELECT ldiv_date_trunc(?::DATE, 'year')", [d]) == dt.date(2024, 1, 1)
    labels = con.execute(
        "SELECT ldiv_date_label(?::DATE, 'year'), ldiv_date_label(?::DATE, 'quarter'), "
        "ldiv_date_label(?::DATE, 'month'), ldiv_date_label(?::DATE, 'week'), "
        "ldiv_date_label(?::DATE, 'day')", [d] * 5).fetchall()[0]
    iso = d.isocalendar()
    assert labels == ("2024", "2024-Q2", "2024-05", f"{iso[0]}-W{iso[1]:02d}", "2024-05-07")
    assert con.execute("SELECT ldiv_top_code(95, 90), ldiv_top_code(85, 90), "
                       "ldiv_bottom_code(10, 17), ldiv_top_bottom_code(5, 17, 90), "
                       "ldiv_top_bottom_code(99, 17, 90), ldiv_top_bottom_code(40, 17, 90)"
                       ).fetchall() == [(90, 85, 17, 17, 90, 40)]


def test_generalize_in_a_view_then_check(con) -> None:
    df = pl.DataFrame({"zip": ["13053", "13068", "14850", "14853"], "age": [28, 29, 41, 47],
                       "s": ["flu", "hiv", "flu", "cold"]})
    con.register("raw_g", df.to_arrow())
    try:
        con.execute("CREATE OR REPLACE TEMP VIEW gen_g AS SELECT ldiv_mask(zip, 2) AS zip, "
                    "ldiv_bin(age, 10) AS age, s FROM raw_g")
        row = con.execute("SELECT k, l_distinct, classes FROM ldiv_summary('gen_g', "
                          "['zip', 'age'], 's', 2)").fetchall()
        con.execute("DROP VIEW gen_g")
    finally:
        con.unregister("raw_g")
    assert row == [(2, 2, 2)]


def _equal_emd_max(rows: list[tuple[int, str]]) -> Fraction:
    """Brute force in exact arithmetic: max over classes of 1/2 sum_v |p_v - q_v|."""
    total = Counter(s for _, s in rows)
    n = len(rows)
    best = Fraction(0)
    for q in {q for q, _ in rows}:
        cls = Counter(s for qq, s in rows if qq == q)
        size = sum(cls.values())
        emd = sum(abs(Fraction(cls[v], size) - Fraction(total[v], n)) for v in total) / 2
        best = max(best, emd)
    return best


def test_summary_t_maximum_in_a_multi_valued_class(con) -> None:
    # the largest EMD is the class holding the two rare values together (2 values), above
    # every single-valued class: the summary evaluates it exactly although it prunes by bounds
    rows = [(q, "a") for q in range(40)] + [(q, "b") for q in range(40, 50)]
    rows += [(50, "c"), (50, "d"), (51, "a"), (51, "c"), (51, "b"), (52, "d"), (52, "a")]
    df = pl.DataFrame({"q": [q for q, _ in rows], "s": [s for _, s in rows]})
    want = _equal_emd_max(rows)
    # hand: 57 rows, c and d twice each; class 50 = {c, d}: 1 - (2/57 + 2/57)
    assert want == Fraction(53, 57)
    got = ld.summary(df, ["q"], "s", con=con)
    assert got["t"] == pytest.approx(float(want), rel=1e-12)
    assert got["t"] == pytest.approx(lp.summary(df, ["q"], "s")["t"], rel=1e-12)
    con.register("ldiv_t_emd", df.to_arrow())
    try:
        macro = con.execute("SELECT t FROM ldiv_summary('ldiv_t_emd', ['q'], 's', 2)"
                            ).fetchall()[0][0]
    finally:
        con.unregister("ldiv_t_emd")
    assert macro == pytest.approx(float(want), rel=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rows=st.lists(st.tuples(st.integers(0, 6), st.sampled_from("aaaabbcde")),
                     min_size=1, max_size=60))
def test_summary_t_equals_exact_brute_force(con, rows) -> None:
    df = pl.DataFrame({"q": [q for q, _ in rows], "s": [s for _, s in rows]},
                      schema={"q": pl.Int64, "s": pl.String})
    got = ld.summary(df, ["q"], "s", con=con)
    assert got["t"] == pytest.approx(float(_equal_emd_max(rows)), rel=1e-12, abs=1e-15)


# ------------------------------------------------------------------------------------------
# ldiv_summary's two plans: the packed class key, and the struct key when it does not fit
# ------------------------------------------------------------------------------------------


def _macro_summary(con: duckdb.DuckDBPyConnection, df: pl.DataFrame, qi: list[str], s: str,
                   l: int, min_cells: int = 0) -> dict[str, object]:
    """ldiv_summary's statement; min_cells=0: the packed plan whenever the key fits (the
    public macro takes it from 2^20 cells), a huge min_cells: the struct-key plan."""
    con.register("ldiv_t_plans", df.to_arrow())
    try:
        cur = con.execute("FROM query(ldiv__summary_sql('ldiv_t_plans', ?, ?, ?, ?))",
                          [qi, s, l, min_cells])
        return dict(zip([d[0] for d in cur.description], cur.fetchall()[0]))
    finally:
        con.unregister("ldiv_t_plans")


def _agrees(got: dict[str, object], want: dict[str, object]) -> None:
    for key, v in want.items():
        if isinstance(v, float) and math.isinf(v):
            v = None
        if v is None or got[key] is None:
            assert got[key] is None and v is None, key
        else:
            assert got[key] == pytest.approx(v, rel=1e-9, abs=1e-12), key


def test_summary_of_a_key_too_wide_to_pack(con) -> None:
    # 7 QIs of 997 distinct values each: 997^7 * 3 > 2^62, so the macro takes the struct-key
    # plan; the same table judged on 2 of its QIs (packed) agrees with Polars as well
    n = 997
    df = pl.DataFrame({f"q{j}": [(i * (j + 2)) % n for i in range(n)] for j in range(7)}
                      | {"s": [("a", "b", "c")[(i * i) % 3] for i in range(n)]})
    cards = [df[c].n_unique() for c in df.columns]
    assert sum(math.log2(c) for c in cards) >= 62
    con.register("ldiv_t_plans", df.to_arrow())
    try:
        for qi, fits in (([f"q{j}" for j in range(7)], False), (["q0", "q1"], True)):
            assert con.execute(  # the plan ldiv_summary takes
                "FROM query('WITH ' || ldiv__sql_dicts('ldiv_t_plans', ?, 's', 0) "
                "|| ' SELECT fits FROM \"ldiv__w\"')", [qi]).fetchall() == [(fits,)]
    finally:
        con.unregister("ldiv_t_plans")
    for qi in ([f"q{j}" for j in range(7)], ["q0", "q1"]):
        for l in (1, 2, 3):
            _agrees(_macro_summary(con, df, qi, "s", l), lp.summary(df, qi, "s", l=l))


@settings(max_examples=30, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rows=st.lists(st.tuples(st.sampled_from([None, 1, 2, 3]), st.sampled_from([None, "x", "y"]),
                               st.sampled_from([None, 0.5, 1.5, 2.5, 7.0])),
                     min_size=1, max_size=50),
       l=st.integers(1, 4), numeric=st.booleans())
def test_packed_summary_with_nulls_equals_polars(con, rows, l, numeric) -> None:
    # nulls are values of their own in every column (the packed key gives NULL its own code),
    # a numeric sensitive column takes the ordered distance, a string one the equal distance
    df = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows],
                       "s": [r[2] for r in rows]},
                      schema={"a": pl.Int64, "b": pl.String, "s": pl.Float64})
    if not numeric:
        df = df.with_columns(pl.col("s").cast(pl.String))
    want = lp.summary(df, ["a", "b"], "s", l=l, nulls="value")
    _agrees(_macro_summary(con, df, ["a", "b"], "s", l), want)  # packed
    _agrees(_macro_summary(con, df, ["a", "b"], "s", l, 2**62), want)  # struct key
    _agrees(ld.summary(df, ["a", "b"], "s", l=l, con=con, nulls="value"), want)
    con.register("ldiv_t_public", df.to_arrow())
    seen: set[str] = set()
    try:  # the public macro's two plans (the packed one takes the struct key here: few cells)
        for macro in ("ldiv_summary", "ldiv_summary_packed", "ldiv_summary_struct",
                      "ldiv_summary"):  # the last: chosen packed, every table large enough
            more = ", min_rows := 0, probe_rows := 0" if macro in seen else ""
            seen.add(macro)
            cur = con.execute(f"FROM {macro}('ldiv_t_public', ['a', 'b'], 's', ?{more})", [l])
            _agrees(dict(zip([d[0] for d in cur.description], cur.fetchall()[0])), want)
    finally:
        con.unregister("ldiv_t_public")


def test_packed_summary_when_over_1024_classes_could_hold_the_largest_emd(con) -> None:
    # 1,100 classes of three values seen once in the table: every class's upper bound equals
    # the best lower bound (1 - 3/3300), more than the 1,024 kept, so every class of three
    # values is summed exactly; by hand t = 1 - 3/3300 = 1099/1100
    df = pl.DataFrame({"q": [i // 3 for i in range(3300)], "s": [f"v{i}" for i in range(3300)]})
    got = _macro_summary(con, df, ["q"], "s", 2)
    assert got["t"] == pytest.approx(1099 / 1100, rel=1e-12)
    _agrees(got, lp.summary(df, ["q"], "s", l=2))


def _ordered_emd_max(rows: list[tuple[int, int]]) -> Fraction:
    """Brute force in exact arithmetic: max over classes of (1/(m-1)) sum_{i<m} |P_i - Q_i|,
    P and Q the cumulative distributions over the table's m sorted values."""
    values = sorted({s for _, s in rows})
    m, n = len(values), len(rows)
    if m <= 1:
        return Fraction(0)
    total = Counter(s for _, s in rows)
    best = Fraction(0)
    for q in {q for q, _ in rows}:
        cls = Counter(s for qq, s in rows if qq == q)
        size = sum(cls.values())
        p_cum = q_cum = Fraction(0)
        emd = Fraction(0)
        for v in values[:-1]:
            p_cum += Fraction(cls[v], size)
            q_cum += Fraction(total[v], n)
            emd += abs(p_cum - q_cum)
        best = max(best, emd / (m - 1))
    return best


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(rows=st.one_of(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from("aabcdef")), min_size=1, max_size=60),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 9)), min_size=1, max_size=60)))
def test_both_summary_plans_give_the_exact_t(con, rows) -> None:
    # the packed plan's t comes from per-class bounds and the candidates' exact sums (the
    # equal distance for a string column; for a numeric one the ordered distance, bounded by
    # the mean rank and the class's span); the struct-key plan sums every class
    numeric = isinstance(rows[0][1], int)
    df = pl.DataFrame(rows, schema={"q": pl.Int64, "s": pl.Int64 if numeric else pl.String},
                      orient="row")
    want = float(_ordered_emd_max(rows) if numeric else _equal_emd_max(rows))
    for min_cells in (0, 2**62):
        got = _macro_summary(con, df, ["q"], "s", 2, min_cells)["t"]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), min_cells


def test_packed_ordered_t_when_over_1024_classes_reach_the_bound(con) -> None:
    # 1,100 classes holding only the value 1, one class of 2,000 zeros: a class of one value
    # has its exact EMD as both bounds, and the 1,100 share the largest, so more than the
    # 1,024 kept classes reach it and every class is summed; by hand (m = 2): P_0 = 0 against
    # Q_0 = 2000/3100, t = 20/31
    rows = [(q, 1) for q in range(1100)] + [(1100, 0)] * 2000
    df = pl.DataFrame(rows, schema={"q": pl.Int64, "s": pl.Int64}, orient="row")
    assert _ordered_emd_max(rows) == Fraction(20, 31)
    got = _macro_summary(con, df, ["q"], "s", 2)
    assert got["t"] == pytest.approx(20 / 31, rel=1e-12)
    _agrees(got, lp.summary(df, ["q"], "s", l=2))
