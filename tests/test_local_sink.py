"""A release read from one Parquet file is written in batches of rows (bounded memory): the
written file holds the rows and dtypes of the lazy release (``LocalResult.output``), for cell
suppression and local recoding (level columns), to Parquet and CSV; other inputs go through
Polars' sink, and both paths write the same table."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ldiv_polars as lp
from ldiv_polars.core import batches
from ldiv_polars.local import result as result_mod

ZIP = lp.Hierarchy([[z, z[:2] + "*", "*"] for z in ("130", "131", "140", "141")], name="zip")
AGE = lp.Hierarchy([[a, f"{a // 2 * 2}-{a // 2 * 2 + 1}", "*"] for a in range(6)], name="age")


def _table(seed: int, n: int = 60) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "zip": rng.choice(["130", "131", "140", "141"], n).tolist(),
        "age": rng.integers(0, 6, n).tolist(),
        "x": rng.normal(size=n).tolist(),
        "day": [dt.date(2020, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 9, n)],
        "flag": rng.integers(0, 2, n).astype(bool).tolist(),
        "s": rng.choice(list("pqr"), n).tolist(),
    }).with_columns(pl.col("age").cast(pl.Int16))


def _sorted(df: pl.DataFrame) -> list[tuple[object, ...]]:
    return sorted(df.rows(), key=lambda r: tuple((v is None, str(v)) for v in r))


def _read(path: Path, schema: pl.Schema) -> pl.DataFrame:
    if path.suffix == ".parquet":
        return pl.read_parquet(path)
    return pl.read_csv(path, schema=schema)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_batched_write_equals_the_lazy_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               seed: int, suffix: str) -> None:
    df = _table(seed)
    src = tmp_path / "in.parquet"
    df.write_parquet(src, row_group_size=16)
    monkeypatch.setattr(batches, "BATCH_ROWS", 7)
    seen: list[int] = []
    real = result_mod.parquet_batches

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        for b in real(*a, **kw):
            seen.append(b.height)
            yield b

    monkeypatch.setattr(result_mod, "parquet_batches", spy)
    runs = {
        "cells": lambda data: lp.suppress_cells(data, ["zip", "age"], "s", lp.KAnonymity(3)),
        "local": lambda data: lp.local_recode(data, ["zip", "age"], "s",
                                              {"zip": ZIP, "age": AGE}, lp.KAnonymity(3),
                                              suppression=0.05),
    }
    for name, run in runs.items():
        res = run(str(src))
        expected = res.output.collect()
        seen.clear()
        res.sink(tmp_path / f"{name}{suffix}")
        assert len(seen) == -(-df.height // 7) and max(seen) == 7  # batches were used
        got = _read(tmp_path / f"{name}{suffix}", expected.schema)
        assert got.schema == expected.schema
        assert _sorted(got) == _sorted(expected)
        assert res.verification is not None and res.verification.passed
        # the same release from the frame (no file: Polars' streaming sink) is the same table
        res_frame = run(df)
        assert _sorted(res_frame.output.collect()) == _sorted(expected)
        seen.clear()
        res_frame.sink(tmp_path / f"{name}_frame{suffix}")
        assert not seen
        assert _sorted(_read(tmp_path / f"{name}_frame{suffix}", expected.schema)) == \
            _sorted(got)


def test_an_empty_batch_stream_writes_the_schema(tmp_path: Path) -> None:
    from ldiv_polars.core.output import atomic_output

    schema = pl.Schema({"a": pl.Int8, "b": pl.String})
    for name in ("e.parquet", "e.csv"):
        with atomic_output(tmp_path / name) as out:
            out.write_frames(iter(()), schema)
    assert pl.read_parquet(tmp_path / "e.parquet").schema == schema
    assert (tmp_path / "e.csv").read_text() == "a,b\n"


def test_a_parquet_input_with_a_null_qi_is_refused_as_a_frame_is(tmp_path: Path) -> None:
    """The keys of one Parquet file are grouped by DuckDB: a null QI cell is the same typed
    error, with the same message, as from the frame (Polars)."""
    df = _table(4).with_columns(pl.when(pl.col("age") == 3).then(None).otherwise(pl.col("age"))
                                .alias("age"))
    src = tmp_path / "nulls.parquet"
    df.write_parquet(src)
    errors = []
    for data in (str(src), df):
        with pytest.raises(lp.NullValuesError) as e:
            lp.suppress_cells(data, ["zip", "age"], "s", lp.KAnonymity(3))
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "'age'" in errors[0]
