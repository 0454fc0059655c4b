"""The models judged against a population table with the Spark engine (issue 19): the engine
hands the frequency set (and the search's encoded counts) to the driver, where the models read
the population as in Polars, so ``check`` and ``anonymize`` give the Polars engine's answers.
Skipped with a reason when PySpark or Java is missing."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'ldiv_polars[spark]')")
if shutil.which("java") is None:
    pytest.skip("no java on PATH: the Spark engine needs Java 17+", allow_module_level=True)

import ldiv_polars as lp  # noqa: E402
from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.models import DeltaPresence, KMapPopulation  # noqa: E402
from tests.test_engine_spark import spark  # noqa: E402,F401 (its local session fixture)


@pytest.mark.slow
def test_spark_check_and_search_equal_polars(spark, tmp_path):
    pop = pl.DataFrame({"zip": ["130", "131", "131", "140", "140", "130", "131"],
                        "age": ["1", "2", "3", "1", "1", "2", "2"]})
    sample = pop.head(4).with_columns(s=pl.lit("a"))
    sample.write_parquet(tmp_path / "s.parquet")
    h = {"zip": Hierarchy([["130", "13*", "*"], ["131", "13*", "*"], ["140", "14*", "*"]]),
         "age": Hierarchy([["1", "a", "*"], ["2", "a", "*"], ["3", "b", "*"]])}
    for model in (KMapPopulation(2, pop), DeltaPresence(0.3, 0.8, pop)):
        on_spark = lp.check(str(tmp_path / "s.parquet"), ["zip", "age"], None, model,
                            engine="spark").models[0].to_dict()
        assert on_spark == lp.check(sample, ["zip", "age"], None, model).models[0].to_dict()
    model = KMapPopulation(2, pop)
    got = lp.anonymize(str(tmp_path / "s.parquet"), ["zip", "age"], None, h, model,
                       engine="spark")
    want = lp.anonymize(sample, ["zip", "age"], None, h, model)
    assert (got.levels, got.suppressed_rows) == (want.levels, want.suppressed_rows)
