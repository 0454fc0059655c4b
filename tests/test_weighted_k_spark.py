"""Weighted k-anonymity with the Spark engine: the weighted frequency set is grouped by Spark
(its weighted counts over the keys) and judged on the driver, so ``check`` and ``anonymize``
give the Polars engine's answers. Skipped with a reason when PySpark or Java is missing."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'ldiv_polars[spark]')")
if shutil.which("java") is None:
    pytest.skip("no java on PATH: the Spark engine needs Java 17+", allow_module_level=True)

import ldiv_polars as lp  # noqa: E402
from ldiv_polars.errors import InvalidParameterError  # noqa: E402
from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.models import WeightedKAnonymity  # noqa: E402
from tests.test_engine_spark import spark  # noqa: E402,F401 (its local session fixture)


@pytest.mark.slow
def test_spark_weighted_check_and_search_equal_polars(spark, tmp_path):
    df = pl.DataFrame({"zip": ["130", "131", "140", "141", "141"], "s": list("abaab"),
                       "w": [2.0, 3.0, 1.0, 1.5, 6.0]})
    path = str(tmp_path / "w.parquet")
    df.write_parquet(path)
    for k in (5, 9):
        got = lp.check(path, "zip", "s", WeightedKAnonymity(k), weight="w", engine="spark")
        want = lp.check(df, "zip", "s", WeightedKAnonymity(k), weight="w")
        assert got.models[0].to_dict() == want.models[0].to_dict()
    h = {"zip": Hierarchy([["130", "13*", "*"], ["131", "13*", "*"], ["140", "14*", "*"],
                           ["141", "14*", "*"]])}
    got = lp.anonymize(path, "zip", None, h, WeightedKAnonymity(5), weight="w", engine="spark")
    want = lp.anonymize(df, "zip", None, h, WeightedKAnonymity(5), weight="w")
    assert (got.levels, got.suppressed_rows) == (want.levels, want.suppressed_rows) == (
        {"zip": 1}, 0)
    bad = df.with_columns(w=pl.Series([1.0, -1.0, 1.0, 1.0, 1.0]))
    bad.write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InvalidParameterError, match="1 null, non-finite or non-positive"):
        lp.check(str(tmp_path / "bad.parquet"), "zip", None, WeightedKAnonymity(1), weight="w",
                 engine="spark")
