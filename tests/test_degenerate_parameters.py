"""Degenerate and boundary parameters of the models, against the papers' definitions.

Recursive (c,l)-diversity with l = 1: Def 4.2 of Machanavajjhala et al. (TKDD 2007) ends with
"We say that 1-diversity is always satisfied" (/work/shared/papers/l-diversity.txt; paper-notes
§2.6), so a class passes recursive (c,1) whatever c, even a one-value class with c <= 1 where
the bare formula ``r1 < c (r_1 + ... + r_m)`` would fail it (ARX's ``RecursiveCLDiversity``
applies the formula for l = 1; docs/models.md says so). The brute force below is written from
the definition in exact fractions and every engine is compared with it, per class where the
engine gives classes: Polars, the DuckDB engine, the array verdict (the search's numpy and C
path), the SQL macros, and Spark when it is installed.

Also here: thresholds the definitions exclude are typed errors (CLI exit 2), and k-map at
significance 0."""

from __future__ import annotations

import shutil
from collections import Counter
from fractions import Fraction

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
import ldiv_polars.duckdb as ld
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.models import (
    BinaryLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    KMap,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
)
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain, class_verdict
from ldiv_polars.models.exact import decimal
from ldiv_polars.search import anonymize
from tests.lattice_brute import random_table

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
C_VALUES = [0.5, 1, 1.5, 2, 3]


def recursive_definition(counts: list[int], c: float, l: int) -> bool:
    """Def 4.2 in exact fractions (c as the decimal it was written as): ``r1 < c (r_l + ... +
    r_m)`` on the counts sorted descending, and "1-diversity is always satisfied"."""
    if l == 1:
        return True
    r = sorted(counts, reverse=True)
    return Fraction(r[0]) < decimal(c) * sum(r[l - 1:])


@st.composite
def class_tables(draw):
    """Classes 0.. as Counters over values a..e: some with one value, some of one row."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["one value", "one row", "mixed"]))
        if kind == "one row":
            out.append(Counter({draw(st.sampled_from("abcde")): 1}))
        elif kind == "one value":
            out.append(Counter({draw(st.sampled_from("abcde")): draw(st.integers(1, 6))}))
        else:
            vals = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=5, unique=True))
            out.append(Counter({v: draw(st.integers(1, 6)) for v in vals}))
    return out


def _order(item):
    return (item[0] is None, str(item[0]))


def as_frame(classes: list[Counter]) -> pl.DataFrame:
    rows = [(i, v) for i, c in enumerate(classes) for v, n in sorted(c.items(), key=_order)
            for _ in range(n)]
    return pl.DataFrame(rows, schema={"q": pl.Int64, "s": pl.Utf8}, orient="row")


def encoded(classes: list[Counter]) -> EncodedRows:
    values = sorted({v for c in classes for v in c}, key=lambda v: _order((v,)))
    ids = {v: i for i, v in enumerate(values)}
    trip = [(i, ids[v], n) for i, c in enumerate(classes)
            for v, n in sorted(c.items(), key=_order)]
    cls, s, n = (np.array(x, dtype=np.int64) for x in zip(*trip))
    domain = SensitiveDomain(pl.DataFrame({"s": values}, schema={"s": pl.Utf8}))
    return EncodedRows(cls, s.astype(np.int32), n, classes=len(classes),
                       n_sensitive=len(values), domain=domain)


def per_class(df: pl.DataFrame, model, engine: str | None = None) -> list[bool]:
    out = lp.classes(df, ["q"], "s", [model], engine=engine).collect().sort("q")
    return out[f"pass_{model.key}"].to_list()


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    ld.install(c)
    return c


@SETTINGS
@given(class_tables(), st.sampled_from(C_VALUES), st.integers(1, 4))
def test_recursive_cl_every_engine_is_the_definition(con, classes, c, l):
    model = RecursiveCLDiversity(c, l)
    want = [recursive_definition(list(k.values()), c, l) for k in classes]
    df = as_frame(classes)
    assert per_class(df, model) == want
    assert per_class(df, model, "duckdb") == want
    assert class_verdict(model, encoded(classes)).tolist() == want
    got = ld.check(df, ["q"], "s", [model], con=con)[0]
    assert (got["passed"], got["failing_classes"]) == (all(want), want.count(False))
    res = lp.check(df, ["q"], "s", [model]).models[0]
    assert res.passed is all(want) and model.satisfied_by(res.achieved) is all(want)


@pytest.mark.parametrize("c", [0.5, 1, 1.5])
def test_recursive_l1_passes_one_value_classes_whatever_c(con, c):
    # the bare formula with l = 1 would fail {a: 3} for c <= 1 (3 < c * 3) and {a: 1} too;
    # the paper's stipulation passes them, and no c is needed: achieved 0
    classes = [Counter({"a": 3}), Counter({"b": 1}), Counter({"a": 1, "b": 2})]
    assert all(recursive_definition(list(k.values()), c, 1) for k in classes)
    model = RecursiveCLDiversity(c, 1)
    df = as_frame(classes)
    res = lp.check(df, ["q"], "s", [model]).models[0]
    assert (res.passed, res.achieved) == (True, 0.0)
    assert class_verdict(model, encoded(classes)).tolist() == [True] * 3
    got = ld.check(df, ["q"], "s", [model], con=con)[0]
    assert (got["passed"], got["achieved"]) == (True, 0.0)


@SETTINGS
@given(class_tables(), class_tables(), st.sampled_from(C_VALUES), st.integers(1, 4))
def test_recursive_cl_is_monotone_for_every_l(a, b, c, l):
    """The ``monotone`` flag's fact on merged classes: two passing classes merge into a
    passing one (r1 is subadditive, the tail superadditive), l = 1 included."""
    for x, y in zip(a, b):
        if recursive_definition(list(x.values()), c, l) and \
                recursive_definition(list(y.values()), c, l):
            assert recursive_definition(list((x + y).values()), c, l)
    assert RecursiveCLDiversity(c, l).monotone


@pytest.mark.parametrize("l", [1, 2, 3])
def test_recursive_cl_is_union_closed_only_for_l1(l):
    """``union_closed`` (a class containing a passing class passes; the search keeps Flash
    with suppression on it): true for l = 1, which every class passes; for l >= 2 a passing
    class merged with a one-value class fails, so the flag must stay false."""
    model = RecursiveCLDiversity(1.5, l)
    passing = Counter({"a": 1, "b": 1, "c": 1})
    merged = passing + Counter({"a": 10})
    assert recursive_definition(list(passing.values()), 1.5, l)
    assert recursive_definition(list(merged.values()), 1.5, l) is (l == 1)
    assert model.union_closed is (l == 1)
    assert EntropyLDiversity(l).union_closed is (l == 1)
    assert PositiveDisclosureRecursive(1.5, l, ["b"]).union_closed is (l == 1)
    assert NegativePositiveDisclosureRecursive(1.5, 10, l, ["b"], ["c"]).union_closed is False


@st.composite
def lattice_tables(draw):
    return random_table(draw, st, draw(st.integers(3, 14)), draw(st.integers(1, 2)))


@settings(max_examples=15, deadline=None)
@given(lattice_tables(), st.sampled_from([0.5, 1]), st.sampled_from([0.0, 0.3]))
def test_search_with_recursive_l1_finds_the_exhaustive_optimum(data, c, suppression):
    """Recursive (c,1) with c <= 1 beside k = 2: every strategy reaches the exhaustive
    search's optimum, which is k-anonymity's alone (1-diversity adds no condition)."""
    df, hier = data
    qi = [q for q in hier]
    hs = {q: Hierarchy(r) for q, r in hier.items()}
    models = [KAnonymity(2), RecursiveCLDiversity(c, 1)]
    ref = anonymize(df, qi, "s", hs, models, suppression=suppression, strategy="exhaustive")
    alone = anonymize(df, qi, "s", hs, [KAnonymity(2)], suppression=suppression,
                      strategy="exhaustive")
    assert (ref.found, ref.value) == (alone.found, alone.value)
    for strategy in ("flash", "bounded", "anytime"):
        got = anonymize(df, qi, "s", hs, models, suppression=suppression, strategy=strategy)
        assert (got.found, got.value) == (ref.found, ref.value), strategy


@pytest.mark.slow
def test_recursive_l1_on_spark_is_the_definition():
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the Spark engine needs Java 17+")
    from pyspark.sql import SparkSession

    from ldiv_polars.core.engines import spark as spark_engine

    s = (SparkSession.builder.master("local[1]").appName("ldiv-tests")
         .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
         .getOrCreate())
    spark_engine.use_session(s)
    classes = [Counter({"a": 3}), Counter({"b": 1}), Counter({"a": 1, "b": 2}),
               Counter({"a": 2, "b": 2, "c": 1})]
    df = as_frame(classes)
    for c in (0.5, 1, 1.5):
        for l in (1, 2, 3):
            model = RecursiveCLDiversity(c, l)
            want = [recursive_definition(list(k.values()), c, l) for k in classes]
            assert per_class(df, model, "spark") == want, (c, l)


# --- thresholds the definitions exclude: typed errors ------------------------------------------


@pytest.mark.parametrize("factory", [
    lambda: EntropyLDiversity(float("inf")),
    lambda: RecursiveCLDiversity(float("inf"), 2),
    lambda: RecursiveCLDiversity(2, float("inf")),
    lambda: PositiveDisclosureRecursive(float("inf"), 2, ["a"]),
    lambda: NegativePositiveDisclosureRecursive(float("inf"), 10, 2, ["a"], ["b"]),
    lambda: EntropyLDiversityDontCare(float("inf"), ["a"]),
    lambda: BinaryLDiversity(float("-inf"), ["a"]),
    lambda: BinaryLDiversity(float("inf"), ["a"]),
])
def test_infinite_l_or_c_is_a_typed_error(factory):
    # l and c are real constants (Defs 4.1-4.5); an infinite one used to escape as a bare
    # ValueError from the exact threshold (CLI: "internal error", exit 3)
    with pytest.raises(InvalidParameterError, match="l must|c must|c1 must"):
        factory()


@pytest.mark.parametrize("sql", [
    "FROM ldiv_recursive_cl('t', ['q'], 's', 'inf'::DOUBLE, 2)",
    "FROM ldiv_entropy_l('t', ['q'], 's', 'inf'::DOUBLE)",
])
def test_infinite_l_or_c_is_refused_by_the_sql_macros(con, sql):
    con.register("t", pl.DataFrame({"q": [0, 0], "s": ["a", "b"]}).to_arrow())
    with pytest.raises(duckdb.Error, match="must be in|must be a finite number"):
        con.sql(sql).fetchall()


@pytest.mark.parametrize("args", [["--model", "recursive", "--c", "inf", "--l", "2"],
                                  ["--model", "entropy", "--l", "inf"]])
def test_cli_infinite_l_or_c_exits_2(tmp_path, capsys, args):
    from ldiv_polars.cli import main

    path = tmp_path / "t.csv"
    pl.DataFrame({"q": [0, 0, 1, 1], "s": ["a", "b", "a", "b"]}).write_csv(path)
    assert main(["check", str(path), "--qi", "q", "--sensitive", "s", *args]) == 2
    err = capsys.readouterr().err
    assert "must be a finite number" in err and "internal error" not in err


# --- k-map at significance 0 -------------------------------------------------------------------


@pytest.mark.parametrize("estimator", ["poisson", "zero_truncated_poisson"])
def test_k_map_significance_zero_is_k_bounded_by_the_rows(estimator):
    # level 1 - 0 = 1: no finite count reaches it (the quantile is infinite; ARX's loop stops
    # at k), so k' = min(k, rows); it used to raise OverflowError
    for k, rows in ((3, 9), (12, 9)):
        m = KMap(k, 100, significance=0.0, estimator=estimator).for_rows(rows)
        assert m.derived_k == min(k, rows)
    df = pl.DataFrame({"q": [0] * 5 + [1] * 3 + [2], "s": ["a"] * 9})
    res = lp.check(df, ["q"], "s", [KMap(3, 100, significance=0.0, estimator=estimator)])
    assert not res.passed  # the class of 1 row is under k' = 3
    assert lp.check(df, ["q"], "s", [KMap(1, 100, significance=0.0,
                                          estimator=estimator)]).passed


# --- a null sensitive value (nulls="value") is a value outside Y and W -------------------------


@st.composite
def null_tables(draw):
    """Classes over a, b and null (some all null), and a don't-care set that may name a value
    no class holds."""
    classes = []
    for _ in range(draw(st.integers(1, 5))):
        vals = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=3,
                             unique=True))
        classes.append(Counter({v: draw(st.integers(1, 5)) for v in vals}))
    y = draw(st.sets(st.sampled_from(["a", "b", "zzz"]), max_size=2))
    return classes, sorted(y)


@SETTINGS
@given(null_tables(), st.sampled_from([0.5, 1, 2, 3]), st.integers(2, 3))
def test_null_is_a_value_outside_the_dont_care_set(con, data, c, l):
    """pd-recursive (Def 4.3's two-case rule, tests/reference.py) and the adjusted entropy
    (Algorithm 1) with null a value of its own, in no set: a null used to count as a
    don't-care value (pd-recursive: adding an absent value to Y turned an all-null class from
    failing to passing) or as no value at all (adjusted entropy)."""
    from tests import reference as ref

    classes, y = data
    df = as_frame(classes)
    pd = PositiveDisclosureRecursive(c, l, y)
    want = [ref.pd_recursive_pass(k, c, l, set(y)) for k in classes]
    got = lp.classes(df, ["q"], "s", [pd], nulls="value").collect().sort("q")
    assert got[f"pass_{pd.key}"].to_list() == want
    assert class_verdict(pd, encoded(classes)).tolist() == want
    sql = ld.check(df, ["q"], "s", [pd], con=con, nulls="value")[0]
    assert (sql["passed"], sql["failing_classes"]) == (all(want), want.count(False))
    edc = EntropyLDiversityDontCare(1.0, y)
    h = [ref.adjusted_entropy([n for v, n in k.items() if v in y],
                              [n for v, n in k.items() if v not in y]) for k in classes]
    finite = [v for v in h if v is not None]
    res = lp.check(df, ["q"], "s", [edc], nulls="value").models[0]
    sql = ld.check(df, ["q"], "s", [edc], con=con, nulls="value")[0]
    if finite:
        assert np.log(res.achieved) == pytest.approx(min(finite), rel=1e-9, abs=1e-12)
        assert np.log(sql["achieved"]) == pytest.approx(min(finite), rel=1e-9, abs=1e-12)
    else:
        assert np.isinf(res.achieved) and sql["achieved"] is None


def test_none_in_a_value_set_is_a_typed_error():
    with pytest.raises(InvalidParameterError, match="cannot hold None"):
        PositiveDisclosureRecursive(2, 2, ["a", None])
    with pytest.raises(InvalidParameterError, match="cannot hold None"):
        NegativePositiveDisclosureRecursive(2, 10, 2, ["a"], [None])


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("model", [
    PositiveDisclosureRecursive(1, 2, ["a"]), EntropyLDiversityDontCare(1.5, ["a"]),
    BinaryLDiversity(2, ["a"]), NegativePositiveDisclosureRecursive(1, 0, 2, [], ["a"])])
def test_a_value_set_of_another_type_is_named_in_a_typed_error(engine, model):
    # strings against an integer column: it was an UnreadableInputError ("cannot read the
    # input: 'is_in' cannot check ...") raised while evaluating, naming neither the set nor
    # the column
    df = pl.DataFrame({"q": [0, 0, 1, 1], "s": [1, 2, 1, 2]})
    with pytest.raises(InvalidParameterError, match=r"set .*\['a'\] cannot be compared .*'s'"):
        lp.check(df, ["q"], "s", [model], engine=engine)
    with pytest.raises(InvalidParameterError, match="cannot be compared"):
        anonymize(df, ["q"], "s", {"q": Hierarchy([["0", "*"], ["1", "*"]])}, [model])
    assert lp.check(df, ["q"], "s", [PositiveDisclosureRecursive(1, 2, [1])]).models[0]


# --- t-closeness at t = 0 and t = 1 ------------------------------------------------------------


@st.composite
def proportional_tables(draw):
    """Classes that are multiples of one distribution over integers (so equal to the table's),
    and maybe one class that is not."""
    vals = draw(st.lists(st.integers(1, 60), min_size=1, max_size=6, unique=True))
    base = {v: draw(st.integers(1, 5)) for v in vals}
    mults = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    classes = [Counter({v: n * m for v, n in base.items()}) for m in mults]
    if draw(st.booleans()):
        classes.append(Counter({draw(st.sampled_from(vals)): draw(st.integers(1, 3))}))
    return classes


@SETTINGS
@given(proportional_tables(), st.sampled_from(["equal", "ordered"]))
def test_t_closeness_at_0_and_1_is_the_definition(con, classes, distance):
    """t = 0 passes exactly the classes whose distribution is the table's (EMD 0, compared in
    fractions here), t = 1 every class (an EMD is at most 1), in Polars, SQL and arrays."""
    from ldiv_polars.models import TCloseness

    total = sum(classes, Counter())
    n = sum(total.values())
    same = [all(Fraction(k.get(v, 0), sum(k.values())) == Fraction(m, n)
                for v, m in total.items()) for k in classes]
    rows = [(i, v) for i, k in enumerate(classes) for v, c in sorted(k.items()) for _ in range(c)]
    df = pl.DataFrame(rows, schema={"q": pl.Int64, "s": pl.Int64}, orient="row")
    values = sorted(total)
    cls, ids, cnt = (np.array(x, dtype=np.int64) for x in zip(
        *[(i, values.index(v), c) for i, k in enumerate(classes) for v, c in sorted(k.items())]))
    enc = EncodedRows(cls, ids.astype(np.int32), cnt, classes=len(classes),
                      n_sensitive=len(values), domain=SensitiveDomain(pl.DataFrame({"s": values})))
    for t, want in ((0.0, same), (1.0, [True] * len(classes))):
        model = TCloseness(t, distance)
        got = lp.classes(df, ["q"], "s", [model]).collect().sort("q")
        assert got[f"pass_{model.key}"].to_list() == want, t
        assert class_verdict(model, enc).tolist() == want, t
        sql = ld.check(df, ["q"], "s", [model], con=con)[0]
        assert (sql["passed"], sql["failing_classes"]) == (all(want), want.count(False)), t


# --- l beyond what the engines can sum the largest counts of -----------------------------------


def test_recursive_l_beyond_the_engines_is_a_typed_error_in_python_and_sql(con):
    # the l - 1 largest counts: DuckDB's max(n, k) takes k < 10^6, Polars' top_k a 32-bit k;
    # a larger l was an UnreadableInputError ("cannot read the input: conversion from i64 to
    # u32 failed") in Polars and an "Invalid input for MIN/MAX" in SQL
    from ldiv_polars.models.l_diversity import L_MAX

    for factory in (lambda l: RecursiveCLDiversity(2, l),
                    lambda l: PositiveDisclosureRecursive(2, l, ["a"]),
                    lambda l: NegativePositiveDisclosureRecursive(2, 10, l, ["a"], ["b"])):
        with pytest.raises(InvalidParameterError, match="l must be in"):
            factory(L_MAX + 1)
    df = pl.DataFrame({"q": [0, 0, 1], "s": ["a", "b", "a"]})
    res = lp.check(df, ["q"], "s", [RecursiveCLDiversity(2, L_MAX)]).models[0]
    assert (res.passed, res.achieved) == (False, float("inf"))  # fewer than l values
    got = ld.check(df, ["q"], "s", [RecursiveCLDiversity(2, L_MAX)], con=con)[0]
    assert (got["passed"], got["achieved"]) == (False, None)
    con.register("t", df.to_arrow())
    with pytest.raises(duckdb.Error, match="l must be in"):
        con.sql(f"FROM ldiv_recursive_cl('t', ['q'], 's', 2, {L_MAX + 1})").fetchall()


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_cli_distinct_at_the_largest_l_checks(tmp_path, capsys, engine):
    # the summary's recursive_c at l = L_MAX ranks L_MAX - 1 counts, within DuckDB's top-n
    # (it used to stop with "Invalid input for MIN/MAX", exit 2, past it); one more is refused
    from ldiv_polars.cli import main
    from ldiv_polars.models.l_diversity import L_MAX

    path = tmp_path / "t.csv"
    pl.DataFrame({"q": [0, 0, 1, 1], "s": ["a", "b", "a", "b"]}).write_csv(path)
    args = ["check", str(path), "--qi", "q", "--sensitive", "s", "--engine", engine, "--l"]
    assert main([*args, str(L_MAX)]) == 1
    assert main([*args, str(L_MAX + 1)]) == 2


def test_sql_check_refuses_a_value_set_of_another_type_as_polars_does(con):
    # the macros compare Y as text: Y = [1] named no row of a DOUBLE column (its text is
    # '1.0') and the class failed silently, where the Polars side raises
    df = pl.DataFrame({"q": [0, 0, 1], "s": [1.0, 1.0, 2.0]})
    for y in ([1], ["1"]):
        with pytest.raises(InvalidParameterError, match="cannot be compared"):
            ld.check(df, ["q"], "s", [PositiveDisclosureRecursive(1, 2, y)], con=con)
        with pytest.raises(InvalidParameterError, match="cannot be compared"):
            lp.check(df, ["q"], "s", [PositiveDisclosureRecursive(1, 2, y)])
    ok = PositiveDisclosureRecursive(1, 2, [1.0])
    assert ld.check(df, ["q"], "s", [ok], con=con)[0]["passed"] \
        == lp.check(df, ["q"], "s", [ok]).models[0].passed
