"""One verdict shape and one violation text on every surface: ``CheckResult.to_dict()``,
``ldiv check --json`` (Polars and DuckDB), ``ldiv_polars.duckdb.check`` and the report give
each model's verdict as the same dict (``ModelResult.to_dict``: a list of verdicts, each with
its key), with achieved values of the same type on every engine (an int for a count); the SQL
macro ``ldiv_violations`` writes the reasons of the models' own ``reason()``."""

from __future__ import annotations

import inspect
import json
import math

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ldiv_polars as lp
import ldiv_polars.duckdb as ld
import ldiv_polars.models as models_pkg
from ldiv_polars.cli import main
from ldiv_polars.models.base import Model

POP = pl.DataFrame({"q": [1] * 5 + [2] * 5 + [3] * 6 + [4] * 3})


def every_model() -> list[Model]:
    """One instance of every model with a SQL form (checked against the package's classes)."""
    return [lp.KAnonymity(3), lp.DistinctLDiversity(2), lp.EntropyLDiversity(1.5),
            lp.RecursiveCLDiversity(2, 2), lp.AlphaKAnonymity(0.6, 2), lp.TCloseness(0.2),
            lp.DeltaDisclosure(1.2), lp.BetaLikeness(0.8), lp.BetaLikeness(0.8, enhanced=True),
            lp.PositiveDisclosureRecursive(2, 2, {"a"}),
            lp.NegativePositiveDisclosureRecursive(2, 1, 2, {"a"}, {"b"}),
            lp.EntropyLDiversityDontCare(1.5, {"a"}), lp.KMap(2, 100),
            lp.KMapPopulation(2, POP), lp.DeltaPresence(0.0, 0.9, POP),
            lp.AverageRisk(0.5), lp.SampleUniques(0.3), lp.PopulationUniques(0.5, 100)]


NO_SQL = {"WeightedKAnonymity", "BinaryLDiversity", "MultiAttribute"}
"""Models without a SQL form (README), or judged on several sensitive columns (tested below
through their inner model)."""


def test_every_model_with_a_sql_form_is_listed():
    concrete = {name for name, cls in vars(models_pkg).items()
                if inspect.isclass(cls) and issubclass(cls, Model) and cls is not Model
                and not inspect.isabstract(cls)}
    listed = {type(m).__name__ for m in every_model()}
    assert concrete - NO_SQL - {"PopulationModel", "TableModel"} <= listed


TABLES = st.lists(st.tuples(st.integers(1, 4), st.sampled_from("abc")), min_size=1,
                  max_size=24).map(lambda rows: pl.DataFrame(
                      {"q": [r[0] for r in rows], "s": [r[1] for r in rows]}))


@settings(max_examples=6, deadline=None)
@given(TABLES)
def test_verdicts_have_one_shape_and_type_on_polars_and_duckdb(df):
    ms = every_model()
    polars = lp.check(df, "q", "s", ms).to_dict()["models"]
    sql = ld.check(df, "q", "s", ms)
    assert [v["key"] for v in polars] == [m.key for m in ms] == [v["key"] for v in sql]
    for p, d, m in zip(polars, sql, ms):
        assert list(p) == list(d)  # the same keys in the same order
        assert type(p["achieved"]) is type(d["achieved"]), m.key
        if p["achieved"] is not None:
            assert isinstance(p["achieved"], int) == m.integer_achieved
            assert math.isclose(p["achieved"], d["achieved"], rel_tol=1e-9, abs_tol=1e-12)
        assert {k: v for k, v in p.items() if k != "achieved"} == \
            {k: v for k, v in d.items() if k != "achieved"}


def test_the_cli_json_is_the_library_dict(capsys, tmp_path):
    df = pl.DataFrame({"q": [1, 1, 1, 2, 2, 3], "s": ["a", "b", "a", "b", "c", "a"]})
    path = tmp_path / "t.csv"
    df.write_csv(path)
    want = lp.check(str(path), "q", "s", [lp.KAnonymity(2), lp.DistinctLDiversity(2)]).to_dict()
    for engine in ("polars", "duckdb"):
        rc = main(["check", str(path), "--qi", "q", "--sensitive", "s", "--k", "2", "--l", "2",
                   "--engine", engine, "--json"])
        got = json.loads(capsys.readouterr().out)
        assert rc == 1 and got["models"] == want["models"], engine
        assert [type(v["achieved"]) for v in got["models"]] == [int, int]
        assert {k: got[k] for k in ("rows", "classes", "unjudged_rows", "passed")} == \
            {k: want[k] for k in ("rows", "classes", "unjudged_rows", "passed")}


MACRO_GROUPS = [  # the models ldiv_violations judges, in its order, with its arguments
    ([lp.KAnonymity(3), lp.DistinctLDiversity(2), lp.EntropyLDiversity(1.5),
      lp.RecursiveCLDiversity(2, 2), lp.AlphaKAnonymity(0.6, 1), lp.TCloseness(0.15),
      lp.DeltaDisclosure(0.7), lp.BetaLikeness(0.5)],
     "k := 3, l := 2, entropy_l := 1.5, c := 2, recursive_l := 2, alpha := 0.6, t := 0.15, "
     "distance := 'equal', delta := 0.7, beta := 0.5"),
    ([lp.EntropyLDiversity(2), lp.RecursiveCLDiversity(1.5, 3),
      lp.TCloseness(0.15, distance="ordered"), lp.BetaLikeness(0.5, enhanced=True)],
     "entropy_l := 2, c := 1.5, recursive_l := 3, t := 0.15, distance := 'ordered', "
     "beta := 0.5, enhanced := true"),
    # parameters past SQL's 64-bit integers (an integral c of 1e300 used to stop the macro
    # with DuckDB's conversion error) and at the 1e15 switch to repr
    ([lp.RecursiveCLDiversity(1e300, 2)], "c := 1e300, recursive_l := 2"),
    ([lp.RecursiveCLDiversity(1e15, 2)], "c := 1e15, recursive_l := 2"),
]


@pytest.fixture(scope="module")
def con():
    c = ld.install(duckdb.connect())
    yield c
    c.close()


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TABLES.map(lambda df: df.with_columns(pl.col("s").replace_strict(
    {"a": 1, "b": 2, "c": 3}, return_dtype=pl.Int64))))
def test_violation_reasons_are_the_models_on_every_engine(con, df):
    """The SQL macro's reasons are the models' ``reason()`` (Polars; every engine's
    ``violations`` asks the model), class by class and in the models' order."""
    con.register("v", df.to_arrow())
    try:
        for ms, args in MACRO_GROUPS:
            sql = dict(con.execute(
                f"SELECT q, reasons FROM ldiv_violations('v', ['q'], 's', {args})").fetchall())
            pol = dict(lp.violations(df, "q", "s", ms).select("q", "reasons").collect().rows())
            assert pol == sql, [m.key for m in ms]
    finally:
        con.unregister("v")
