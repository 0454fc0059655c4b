"""The encoded counts of a small in-memory DataFrame, grouped in numpy.

On a frame of a few thousand to a few hundred thousand rows the fixed costs of a Polars
group-by (a plan, a hash table per thread, a second table for the sensitive values' ids)
are most of the counting; here each QI's raw-value indices are read from its Arrow buffers by
the compiled kernel of :mod:`~ldiv_polars.core.engines.arrow_codes` (a String column's views,
the only per-row string work; a column read as codes, its dictionary indices; an integer
column, by a table over its range, :func:`~ldiv_polars.core.engines.raw_codes.integer_table`)
and added into one mixed-radix key per row in the same pass, which is grouped by one sort
(:func:`~ldiv_polars.core.engines.base.key_runs`, the same grouping as the Polars engine's
in-memory QI-only keys). The result is exactly what the Polars engine gives
(:meth:`~ldiv_polars.core.engines.polars.PolarsEngine.encoded_counts`), in the ``keys`` or
``cells`` form of :class:`~ldiv_polars.core.engines.base.EncodedCounts` (the cells as their
sorted class keys, which the search's class-ordered base reads as they are), with the rows
of each raw value counted on the way (``raw_counts``).

>>> import polars as pl
>>> df = pl.DataFrame({"zip": ["b", "a", "b"], "s": ["y", "x", "x"]})
>>> leaves = {"zip": pl.Series(["a", "b"])}
>>> enc = small_frame_counts(df, ("zip",), ("s",), leaves)
>>> enc.cell_codes().tolist(), enc.sensitive_ids.tolist(), enc.n.tolist()
([[0, 1, 1]], [0, 0, 1], [1, 1, 1])
>>> enc.sensitive_values.to_list(), [c.tolist() for c in enc.raw_counts]
(['x', 'y'], [[1, 2]])
>>> small_frame_counts(df, ("zip",), (), leaves).keys.tolist()
[0, 1]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ldiv_polars.core.engines.base import EncodedCounts, fits_key, key_runs, places
from ldiv_polars.core.engines.raw_codes import integer_table, is_coded, raw_index
from ldiv_polars.core.engines.arrow_codes import add_columns, add_columns_and_ids

SMALL_FRAME_MAX_ROWS = 1 << 18
"""DataFrames of at most this many rows are counted by :func:`small_frame_counts`. Larger ones
take the Polars engine's path: the per-row casts and the key in one query (run across cores),
then the QI-only keys grouped by the same sort
(:func:`~ldiv_polars.core.engines.base.key_runs`) and the ``(QI, sensitive)`` cells by
Polars' group-by."""


def small_frame_counts(df: pl.DataFrame, qi: Sequence[str], sensitive: Sequence[str],
                       leaves: Mapping[str, pl.Series]) -> EncodedCounts | None:
    """The encoded counts of ``df`` (each QI value's code its index in ``leaves[q]``):
    without a sensitive column the ascending mixed-radix keys of the QI codes (``keys``),
    otherwise the ``(QI, sensitive)`` cells in (class, sensitive id) order (as their
    ``class_keys``), the ids numbering the distinct sensitive values in sorted order (also
    for a QI-only search, as the Polars group-by: the search sums them out, and the ``kl``
    metric reads them).
    ``None`` when this path does not apply and the Polars engine's group-by must count
    instead: a QI value null or not a raw value (that path names it), a sensitive column that
    is not one String column without nulls (the null policy and other dtypes' orders are that
    path's), a raw value list that makes no Enum, keys past int64, or no QI."""
    import numpy as np  # here only: `ldiv check` never needs numpy

    column = df.get_column(sensitive[0]) if len(sensitive) == 1 else None
    if not qi or (sensitive and (column is None or column.dtype != pl.String
                                 or column.null_count())):
        return None
    cards = [len(leaves[q]) for q in qi]
    if not fits_key(cards):
        return None
    key = np.zeros(df.height, dtype=np.int64)
    found = _add_qi_codes(df, qi, leaves, key, places(cards), column)
    if found is None:
        return None
    raw, ids = found
    if ids is None:
        uniq, n = key_runs(_narrow(key, cards))
        return EncodedCounts(tuple(qi), (), keys=uniq, n=n, ordered=True, raw_counts=raw)
    n_s = ids[1].len()
    if not fits_key([*cards, n_s]):
        return None
    key *= n_s  # (the sensitive id is the key's last digit, place 1)
    key += ids[0]
    uniq, n = key_runs(_narrow(key, [*cards, n_s]))
    class_keys = uniq // n_s  # (numpy divides by a scalar fast, but not its remainder)
    return EncodedCounts(tuple(qi), tuple(sensitive), class_keys=class_keys,
                         raw_cards=tuple(cards),
                         sensitive_ids=(uniq - class_keys * n_s).astype(np.int32), n=n,
                         sensitive_values=ids[1], raw_counts=raw)


def _narrow(key: Any, radix: Sequence[int]) -> Any:
    """``key`` as int32 when every key of this radix fits (numpy sorts int32 in about half
    the time of int64), else as it is."""
    import numpy as np

    return key.astype(np.int32) if math.prod(max(int(c), 1) for c in radix) <= 2**31 \
        else key


def _add_qi_codes(df: pl.DataFrame, qi: Sequence[str], leaves: Mapping[str, pl.Series],
                  key: Any, qi_places: Sequence[int], sensitive: pl.Series | None
                  ) -> tuple[list[Any], tuple[Any, pl.Series] | None] | None:
    """Each QI's raw indices times its place added to ``key`` (int64, in place), per QI the
    rows of each raw value (int64 arrays), and the
    :func:`~ldiv_polars.core.engines.arrow_codes.sorted_ids` of the String column
    ``sensitive`` (None without one), read in the same pass: String columns, columns read as codes and
    integer columns (a table over the range,
    :func:`~ldiv_polars.core.engines.raw_codes.integer_table`) all in one pass of
    :func:`~ldiv_polars.core.engines.arrow_codes.add_columns` (the compiled kernel reads
    their Arrow buffers: no per-row array), the others by
    :func:`~ldiv_polars.core.engines.raw_codes.raw_index` (an Enum cast) in one query. None
    when a QI value is null or not a raw value, or the raw values make no Enum."""
    import numpy as np

    raw: dict[str, Any] = {}
    exprs, columns = [], []
    schema = df.schema  # (made anew on every read)
    place = dict(zip(qi, qi_places))
    for q in qi:
        column = df.get_column(q)
        if schema[q] == pl.String or is_coded(q, leaves[q], schema):
            raw[q] = np.zeros(len(leaves[q]), dtype=np.int64)
            columns.append(("s" if schema[q] == pl.String else "d", column, leaves[q], place[q],
                            raw[q]))
            continue
        found = integer_table(column, leaves[q])
        if found is not None:
            raw[q] = np.zeros(len(leaves[q]), dtype=np.int64)
            columns.append(("t", column, found, place[q], raw[q]))
            continue
        e = raw_index(q, leaves[q], schema, strict=False)
        if e is None:
            return None
        exprs.append(e.cast(pl.Int64).alias(q))
    ids = None
    if sensitive is not None:
        added, ids = add_columns_and_ids(columns, key, sensitive)
    else:
        added = not columns or add_columns(columns, key)
    if not added:
        return None  # a null or a value that is not a raw value
    for c in (df.select(exprs).get_columns() if exprs else []):
        if c.null_count():
            return None
        codes = c.to_numpy().astype(np.int64, copy=False)
        np.add(key, codes * place[c.name], out=key)
        raw[c.name] = np.bincount(codes, minlength=len(leaves[c.name])).astype(np.int64)
    return [raw[q] for q in qi], ids
