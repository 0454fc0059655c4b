"""The DuckDB form of the models judged against a population table (issue 19): the engine's
check (``ldiv_polars.duckdb.check``, the model's ``sql_call``) and the public macros
``ldiv_k_map_population`` / ``ldiv_delta_presence`` give the Polars engine's verdicts on random
samples and populations (hypothesis), keys compared as text with NULL matching NULL."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars.duckdb as ld
from ldiv_polars import check
from ldiv_polars.errors import UnknownColumnError
from ldiv_polars.models import DeltaPresence, KMapPopulation

FIELDS = ("model", "passed", "failing_classes", "failing_rows")


@st.composite
def tables(draw):
    """A sample (zip: integers, with nulls; age: text) and a population holding it and more,
    its columns in another order, zip as text (matched by its text, as in Polars)."""
    n = draw(st.integers(1, 12))
    zips = st.one_of(st.none(), st.integers(1, 4))
    rows = draw(st.lists(st.tuples(zips, st.sampled_from("abc")), min_size=n, max_size=n))
    extra = draw(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5)),
                                    st.sampled_from("abcd")), max_size=20))
    sample = pl.DataFrame(rows, schema={"zip": pl.Int64, "age": pl.String}, orient="row")
    pop = pl.DataFrame(rows + extra, schema={"zip": pl.Int64, "age": pl.String}, orient="row")
    return sample.with_columns(s=pl.lit("x")), pop.select("age", pl.col("zip").cast(pl.String))


def _model(kind: str, k: int, pop: pl.DataFrame):
    return KMapPopulation(k, pop) if kind == "kmap" else DeltaPresence(
        0.2 * (k - 1), min(1.0, 0.4 + 0.2 * k), pop)


def _polars(sample, model) -> dict:
    r = check(sample, ["zip", "age"], "s", model, nulls="value").models[0].to_dict()
    return {f: r[f] for f in FIELDS} | {"achieved": r["achieved"]}


@settings(max_examples=40, deadline=None)
@given(tables(), st.sampled_from(["kmap", "delta"]), st.integers(1, 4))
def test_engine_check_equals_polars(data, kind, k):
    sample, pop = data
    model = _model(kind, k, pop)
    want = _polars(sample, model)
    got = ld.check(sample, ["zip", "age"], "s", [model], nulls="value")[0]
    assert {f: got[f] for f in FIELDS} == {f: want[f] for f in FIELDS}
    assert got["achieved"] == (None if want["achieved"] in (None, float("inf"))
                               else pytest.approx(want["achieved"], rel=0, abs=0))


@settings(max_examples=25, deadline=None)
@given(tables(), st.sampled_from(["kmap", "delta"]), st.integers(1, 4))
def test_public_macros_equal_polars(data, kind, k):
    sample, pop = data
    model = _model(kind, k, pop)
    con = ld.install(duckdb.connect())
    con.register("smp", sample.to_arrow())
    con.register("pop", pop.to_arrow())
    if kind == "kmap":
        row = con.execute("FROM ldiv_k_map_population('smp', ['zip', 'age'], 'pop', ?)",
                          [k]).fetchall()[0]
    else:
        row = con.execute("FROM ldiv_delta_presence('smp', ['zip', 'age'], 'pop', ?, ?)",
                          [model.delta_min, model.delta_max]).fetchall()[0]
    want = _polars(sample, model)
    assert row[:2] + row[3:5] == tuple(want[f] for f in FIELDS)


def test_errors_are_typed_or_raised_before_the_verdict(tmp_path):
    sample = pl.DataFrame({"zip": [1, 2], "age": ["a", "b"], "s": ["x", "y"]})
    pop = pl.DataFrame({"zip": [1, 2]})
    with pytest.raises(UnknownColumnError):
        ld.check(sample, ["zip", "age"], "s", [KMapPopulation(1, pop)])
    pop.with_columns(age=pl.lit("a")).write_csv(tmp_path / "pop.csv")
    r = ld.check(sample, ["zip", "age"], "s", [KMapPopulation(1, str(tmp_path / "pop.csv"))])
    assert (r[0]["passed"], r[0]["failing_classes"]) == (False, 1)  # (2, b) is not in pop
    con = ld.install(duckdb.connect())
    con.register("smp", sample.to_arrow())
    con.register("pop", pop.to_arrow())
    for sql in ("FROM ldiv_k_map_population('smp', ['zip'], 'pop', 0)",
                "FROM ldiv_delta_presence('smp', ['zip'], 'pop', 0.6, 0.5)",
                "FROM ldiv_k_map_population('smp', ['zip', 'age'], 'pop', 1)"):
        with pytest.raises(duckdb.Error):
            con.execute(sql).fetchall()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=30), st.integers(1, 6),
       st.sampled_from([0, 5, 30, 1000]), st.sampled_from(["poisson", "zero_truncated_poisson"]),
       st.sampled_from([0.01, 0.2]))
def test_estimated_k_map_macro_equals_polars(keys, k, extra, estimator, significance):
    """``ldiv_k_map`` (k' from the model through the UDF ``ldiv_k_map_k``, then k'-anonymity
    in SQL) gives ``check`` with ``KMap`` on random tables and population sizes."""
    from ldiv_polars.models import KMap

    df = pl.DataFrame({"a": keys, "b": [v % 2 for v in keys]})
    population = len(keys) + extra
    con = ld.install(duckdb.connect())
    con.register("t", df.to_arrow())
    row = con.execute("FROM ldiv_k_map('t', ['a', 'b'], ?, ?, estimator := ?, "
                      "significance := ?)", [k, str(population), estimator, significance]
                      ).fetchall()[0]
    model = KMap(k, population, estimator=estimator, significance=significance)
    want = check(df, ["a", "b"], None, model).models[0].to_dict()
    assert row[:5] == (want["model"], want["passed"], want["achieved"],
                       want["failing_classes"], want["failing_rows"])
    assert row[-1] == model.for_rows(len(keys)).derived_k
