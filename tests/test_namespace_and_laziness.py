"""The .ldiv namespace mirrors the plain functions; lazy results stay lazy."""

from __future__ import annotations

import polars as pl

import ldiv_polars as lp
from ldiv_polars.models import DistinctLDiversity, EntropyLDiversity, KAnonymity

DF = pl.DataFrame({"zip": ["1", "1", "2", "2", "3"], "s": ["a", "b", "a", "a", "c"]})


def test_namespace_equals_plain_functions():
    models = [KAnonymity(2), DistinctLDiversity(2)]
    assert DF.ldiv.check(["zip"], "s", models) == lp.check(DF, ["zip"], "s", models)
    assert DF.lazy().ldiv.summary(["zip"], "s") == lp.summary(DF, ["zip"], "s")
    assert DF.ldiv.classes(["zip"], "s", models).collect().sort("zip").equals(
        lp.classes(DF, ["zip"], "s", models).collect().sort("zip"))
    assert DF.lazy().ldiv.frequency_set(["zip"], "s").collect().sort("zip", "s").rows() == [
        ("1", "a", 1), ("1", "b", 1), ("2", "a", 2), ("3", "c", 1)]
    assert DF.ldiv.risk(["zip"]).sample_uniques == 1


def test_lazy_outputs_are_lazy_and_correct():
    lf = DF.lazy()
    v = lf.ldiv.violations(["zip"], "s", [KAnonymity(2), DistinctLDiversity(2)])
    assert isinstance(v, pl.LazyFrame)
    got = {r["zip"]: r["reasons"] for r in v.collect().iter_rows(named=True)}
    assert got == {
        "2": ["1 distinct sensitive value(s) < l=2"],
        "3": ["class size 1 < k=2", "1 distinct sensitive value(s) < l=2"],
    }
    assert isinstance(lp.classes(lf, ["zip"], "s", [EntropyLDiversity(2)]), pl.LazyFrame)


def test_scan_paths_lazily(tmp_path):
    p = tmp_path / "d.parquet"
    DF.write_parquet(p)
    c = tmp_path / "d.csv"
    DF.write_csv(c)
    assert lp.summary(str(p), ["zip"], "s") == lp.summary(str(c), ["zip"], "s") == lp.summary(
        DF, ["zip"], "s")
