"""The synthetic generator: deterministic, chunk-invariant on disk, census-like shape."""

from __future__ import annotations

import polars as pl

from ldiv_polars.datasets import SYNTH_COLUMNS, synthesize, write_synthetic


def test_deterministic_and_seeded():
    a = synthesize(3000, seed=1)
    assert a.equals(synthesize(3000, seed=1))
    assert not a.equals(synthesize(3000, seed=2))
    assert a.columns == list(SYNTH_COLUMNS) and a.height == 3000


def test_written_file_equals_in_memory_table(tmp_path):
    path = write_synthetic(tmp_path / "x.parquet", 2500, seed=4, chunk_rows=1000)
    assert pl.read_parquet(path).equals(synthesize(2500, seed=4, chunk_rows=1000))
    md = pl.read_parquet_schema(path)
    assert list(md) == list(SYNTH_COLUMNS)


def test_shape_is_census_like():
    df = synthesize(50_000, seed=0)
    assert df.null_count().sum_horizontal().item() == 0
    assert df["age"].min() >= 17 and df["age"].max() <= 90
    assert df["zip"].str.len_chars().unique().to_list() == [5]
    share_white = (df["race"] == "White").mean()
    assert 0.7 < share_white < 0.82  # skewed like the census
    # correlation: the old are more often widowed than the young
    old = df.filter(pl.col("age") >= 70)["marital_status"].eq("Widowed").mean()
    young = df.filter(pl.col("age") < 25)["marital_status"].eq("Widowed").mean()
    assert old > 10 * max(young, 1e-4)
    # income grows with education
    by_edu = df.group_by("education").agg(pl.col("income").median())
    doct = by_edu.filter(pl.col("education") == "Doctorate")["income"].item()
    hs = by_edu.filter(pl.col("education") == "HS-grad")["income"].item()
    assert doct > hs


def test_zero_rows(tmp_path):
    assert synthesize(0).height == 0
    assert pl.read_parquet(write_synthetic(tmp_path / "e.parquet", 0)).height == 0
