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


def test_expr_namespace_generalizes_like_the_hierarchy():
    hier = lp.Hierarchy([["13053", "1305*", "130**", "*"], ["13068", "1306*", "130**", "*"],
                         ["14850", "1485*", "148**", "*"]])
    df = pl.DataFrame({"zip": ["13053", "14850", "13068"]})
    got = df.select(pl.col("zip").ldiv.generalize(hier, 2))["zip"].to_list()
    assert got == ["130**", "148**", "130**"]


def test_anonymize_through_the_namespace_is_reverified_and_accounted():
    df = pl.DataFrame({"zip": ["13053", "13053", "13068", "13069", "14850", "14850"],
                       "s": ["a", "b", "a", "b", "a", "b"]})
    hier = lp.masking_hierarchy(df["zip"].unique(), levels=3)
    res = df.lazy().ldiv.anonymize(["zip"], "s", {"zip": hier}, [lp.KAnonymity(2),
                                                                  lp.DistinctLDiversity(2)])
    out = res.output.collect()
    assert out.height + res.suppressed_rows == df.height
    assert lp.check(out, ["zip"], "s", [lp.KAnonymity(2), lp.DistinctLDiversity(2)]).passed
    # level 0 fails (13068 and 13069 are singletons); masking one digit merges them into
    # 1306* = {a, b}, and 1305* and 1485* hold two values each: level 1 is the optimum
    assert res.levels == {"zip": 1} and res.suppressed_rows == 0
    assert sorted(set(out["zip"].to_list())) == ["1305*", "1306*", "1485*"]


def test_numpy_scalars_are_accepted_as_parameters():
    import numpy as np

    assert lp.KAnonymity(np.int64(3)).k == 3
    assert lp.RecursiveCLDiversity(np.float64(2.5), np.int32(2)).l == 2
    assert lp.TCloseness(np.float32(0.25)).t == 0.25
