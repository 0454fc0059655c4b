"""Rows in bounded batches: read one Parquet file a batch of rows at a time.

Polars' streaming sinks keep many row groups in flight, more the larger the input
(BENCHMARKS.md, "Cell suppression and local recoding"); a writer that must stay within a memory
budget reads the input in batches of
:data:`BATCH_ROWS` rows instead (:func:`parquet_batches`), transforms each batch eagerly and
appends it to the output (:meth:`~ldiv_polars.core.output.OutputFile.write_frames`).

>>> import polars as pl, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
>>> pl.DataFrame({"a": range(5)}).write_parquet(p)
>>> [b.height for b in parquet_batches(p, pl.Schema({"a": pl.Int64}), rows=2)]
[2, 2, 1]
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ldiv_polars.core.inputs import PARQUET_SUFFIXES, is_glob

BATCH_ROWS = 262_144
"""Rows per batch: a few tens of megabytes for a table of ten columns; the memory a batched
write holds grows with it, its per-batch overhead shrinks (measured in BENCHMARKS.md)."""


def single_parquet_file(data: object) -> Path | None:
    """The Parquet file ``data`` names when it is a path to one regular Parquet file (not a
    glob nor a directory, whose scans may add partition columns), else None.

    >>> single_parquet_file("t.csv") is None, single_parquet_file(123) is None
    (True, True)
    """
    if not isinstance(data, (str, Path)) or is_glob(str(data)):
        return None
    path = Path(data)
    return path if path.suffix.lower() in PARQUET_SUFFIXES and path.is_file() else None


def parquet_batches(path: str | Path, schema: pl.Schema, *,
                    rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """The rows of the Parquet file ``path`` in order, as DataFrames of at most ``rows`` rows
    cast to ``schema`` (the file's schema as ``pl.scan_parquet`` reads it, so each batch has
    the dtypes the lazy scan would give), read with pyarrow's batch reader: the caller holds
    one batch at a time."""
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(path)
    try:
        for batch in reader.iter_batches(batch_size=rows):
            df = pl.from_arrow(batch)
            assert isinstance(df, pl.DataFrame)
            yield df.cast(dict(schema)) if df.schema != schema else df
    finally:
        reader.close()
