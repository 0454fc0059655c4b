"""The risk SQL macros (sql/ldiv.sql: ldiv_individual_risk, ldiv_global_risk; sql/ldiv_udf.sql:
ldiv_population_uniqueness) against ldiv_polars.risk on the same data."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars.duckdb as ld
from ldiv_polars.risk import individual_risk, population_uniqueness

QI8 = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
       "occupation"]


def _frame(c: duckdb.DuckDBPyConnection, sql: str, params: list | None = None
           ) -> pl.DataFrame:
    rel = c.execute(sql, params or [])
    names = [d[0] for d in rel.description]
    return pl.DataFrame(rel.fetchall(), schema=names, orient="row")


@pytest.fixture(scope="module")
def con(adult_csv: Path) -> duckdb.DuckDBPyConnection:
    c = ld.install(duckdb.connect())
    c.execute("SET enable_progress_bar = false")
    c.execute(f"CREATE TABLE adult AS FROM read_csv('{adult_csv}', sep=';')")
    return c


@pytest.mark.parametrize("population,model", [
    ("usa", "dankar"), ("100000", "dankar"), ("40000", "dankar"), ("100000", "zayatz"),
    ("1000000", "pitman"), ("60000", "snb"), ("uk", "zayatz"),
])
def test_population_uniqueness_macro_equals_python(con: duckdb.DuckDBPyConnection,
                                                    adult_csv: Path, population: str,
                                                    model: str) -> None:
    got = _frame(con, "FROM ldiv_population_uniqueness('adult', ?, ?, model := ?)",
                 [QI8, population, model]).row(0, named=True)
    df = pl.read_csv(adult_csv, separator=";")
    pop = int(population) if population.isdigit() else population
    want = population_uniqueness(df, QI8, population_size=pop, model=model).to_dict()  # type: ignore[arg-type]
    for key, value in got.items():
        if isinstance(value, float):
            assert math.isclose(value, want[key], rel_tol=1e-12), key
        else:
            assert value == want[key], key


def test_population_uniqueness_macro_region_is_a_number(con: duckdb.DuckDBPyConnection) -> None:
    row = con.execute("FROM ldiv_population_uniqueness('adult', ['sex', 'age'], 317238626)"
                      ).fetchone()
    named = con.execute("FROM ldiv_population_uniqueness('adult', ['sex', 'age'], 'usa')"
                        ).fetchone()
    assert row == named


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_individual_and_global_risk_macros_equal_python(con: duckdb.DuckDBPyConnection,
                                                        data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 30))
    df = pl.DataFrame({
        "a": data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        "b": data.draw(st.lists(st.sampled_from(["x", "y", None]), min_size=n, max_size=n)),
        "w": data.draw(st.lists(st.floats(1.0, 500.0), min_size=n, max_size=n)),
    })
    c = con.cursor()
    c.register("t", df.to_arrow())
    got = _frame(c, "FROM ldiv_individual_risk('t', ['a', 'b'], 'w')")
    want = individual_risk(df, ["a", "b"], weight="w", nulls="value")
    joined = want.table.join(got, on=["a", "b"], how="full", nulls_equal=True, coalesce=True)
    assert joined.height == want.table.height == got.height
    assert (joined["fk"] == joined["fk_right"]).all()
    assert np.allclose(joined["weight_sum_right"], joined["Fk"], rtol=1e-12)
    assert np.allclose(joined["risk_right"], joined["risk"], rtol=1e-9)
    g = _frame(c, "FROM ldiv_global_risk('t', ['a', 'b'], 'w')").row(0, named=True)
    c.unregister("t")
    assert g["records"] == want.records and g["classes"] == want.classes
    assert g["sample_uniques"] == want.sample_uniques
    assert math.isclose(g["expected_reidentifications"], want.expected_reidentifications,
                        rel_tol=1e-9)
    assert math.isclose(g["global_risk"], want.global_risk, rel_tol=1e-9)
    assert math.isclose(g["max_risk"], want.max_risk, rel_tol=1e-9)  # type: ignore[arg-type]


def test_individual_risk_macro_rejects_bad_weights(con: duckdb.DuckDBPyConnection) -> None:
    c = con.cursor()
    c.execute("CREATE OR REPLACE TABLE bad AS SELECT * FROM (VALUES (1, 2.0), (1, 0.0)) v(a, w)")
    with pytest.raises(duckdb.Error, match="non-positive"):
        c.execute("FROM ldiv_individual_risk('bad', ['a'], 'w')").fetchall()


@pytest.mark.parametrize("population,model", [("usa", "dankar"), ("100000", "pitman"),
                                              ("60000", "snb"), ("40000", "zayatz")])
@pytest.mark.parametrize("x", [0.0, 0.01, 0.05, 0.3])
def test_population_uniques_threshold_macro_is_the_model(con: duckdb.DuckDBPyConnection,
                                                         population, model, x) -> None:
    """The SQL threshold's verdict and figure are the model's (PopulationUniques in check)."""
    from ldiv_polars import check
    from ldiv_polars.models import PopulationUniques

    qi = ["sex", "age", "race", "marital-status"]
    row = con.execute("FROM ldiv_population_uniques('adult', ?, ?, ?, model := ?)",
                      [qi, population, x, model]).fetchone()
    df = _frame(con, "FROM adult")
    pop = int(population) if population.isdigit() else population
    want = check(df, qi, None, PopulationUniques(x, pop, model)).models[0]
    assert row[0] == "population_uniques"
    assert row[1] == want.passed
    assert row[2] == want.achieved
