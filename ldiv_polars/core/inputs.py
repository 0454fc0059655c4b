"""Turn what the caller hands us (a LazyFrame, a DataFrame, a CSV or Parquet path) into a
LazyFrame without reading the rows.

>>> import polars as pl
>>> to_lazyframe(pl.DataFrame({"a": [1]})).collect().shape
(1, 1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

import polars as pl

from ldiv_polars.errors import InputFormatError

TableLike = Union[pl.LazyFrame, pl.DataFrame, str, Path]

CSV_SUFFIXES = {".csv", ".tsv", ".txt"}
PARQUET_SUFFIXES = {".parquet", ".pq"}


def to_lazyframe(data: TableLike, *, separator: str | None = None) -> pl.LazyFrame:
    """Return ``data`` as a LazyFrame; paths are scanned lazily (``scan_parquet`` / ``scan_csv``).

    ``separator`` applies to CSV paths; by default ``;`` is used when the header line contains
    one and no comma (the ARX convention), ``\\t`` for ``.tsv``, otherwise ``,``.
    """
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.exists() and not any(ch in str(data) for ch in "*?["):
            raise InputFormatError(f"no such file: {str(data)!r}")
        suffix = path.suffix.lower()
        if suffix in PARQUET_SUFFIXES or path.is_dir():
            return pl.scan_parquet(data)
        if suffix in CSV_SUFFIXES:
            sep = separator or sniff_separator(path, suffix)
            return pl.scan_csv(data, separator=sep)
        raise InputFormatError(
            f"cannot tell the format of {str(data)!r}: use a .csv/.tsv/.txt or .parquet file"
        )
    raise InputFormatError(
        f"expected a polars LazyFrame/DataFrame or a CSV/Parquet path, got {type(data).__name__}"
    )


def sniff_separator(path: Path, suffix: str) -> str:
    """The CSV separator of ``path``: tab for .tsv, else `;` or tab when the header has one and
    no comma (ARX files are `;`-separated), else a comma."""
    if suffix == ".tsv":
        return "\t"
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            header = fh.readline()
    except OSError as exc:  # pragma: no cover - unreadable file
        raise InputFormatError(f"cannot read {str(path)!r}: {exc}") from exc
    if ";" in header and "," not in header:
        return ";"
    if "\t" in header and "," not in header:
        return "\t"
    return ","
