"""Deprecated: the out-of-core counts of a large Parquet file moved to the DuckDB engine,
:mod:`ldiv_polars.core.engines.duckdb` (this alias goes in the next release).

:func:`build` here still takes hierarchies (the engine's takes each QI's raw values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ldiv_polars.core.engines import duckdb as _engine
from ldiv_polars.core.engines.duckdb import (
    COUNT_MAX_SPAN,
    FETCH_ROWS,
    MEMORY_LIMIT,
    MEMORY_TABLE_MAX_ROWS,
    DuckFrequencySet,
)

__all__ = ["COUNT_MAX_SPAN", "FETCH_ROWS", "MEMORY_LIMIT", "MEMORY_TABLE_MAX_ROWS",
           "DuckFrequencySet", "build"]


def build(path: str | Path, qi: Sequence[str], sensitive: Sequence[str],
          hierarchies: Mapping[str, Any], *, memory_limit: str = MEMORY_LIMIT,
          ) -> DuckFrequencySet | None:
    """:func:`ldiv_polars.core.engines.duckdb.build` with each QI's hierarchy (its raw values
    are read from level 0)."""
    leaves = {q: hierarchies[q].column(0) for q in qi}
    return _engine.build(path, qi, sensitive, leaves, memory_limit=memory_limit)
