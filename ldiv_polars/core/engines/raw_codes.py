"""A QI value's *raw code*: its index among the raw values (leaves) of the QI's hierarchy.

One owner of how a column's rows become those codes, shared by the Polars engine's group-by
(:mod:`.polars`) and the small-frame count (:mod:`.small_frame`): a column read as the
hierarchy's Enum already (:func:`is_coded`) gives its physical values; any other column is
cast through that Enum.

>>> import polars as pl
>>> leaves = pl.Series(["a", "b"])
>>> df = pl.DataFrame({"q": ["b", "a", "c"]})
>>> df.select(raw_index("q", leaves, df.schema, strict=False)).to_series().to_list()
[1, 0, None]
"""

from __future__ import annotations

from typing import Any

import polars as pl


def leaf_enum(leaves: pl.Series) -> pl.Enum | None:
    """The Enum of a hierarchy's raw values (as strings; a QI value's index among them is its
    code), None when they hold a null or a repeat (never, once validated)."""
    if leaves.null_count() or leaves.n_unique() != leaves.len():
        return None
    return pl.Enum(leaves.cast(pl.String))


def is_coded(q: str, leaves: pl.Series, schema: pl.Schema) -> bool:
    """Whether QI ``q`` is read as codes already: its column is the :func:`leaf_enum` of its
    raw values (:func:`read_coded`), so a row's raw index is the column's physical value."""
    enum = leaf_enum(leaves)
    return enum is not None and schema.get(q) == enum


def raw_index(q: str, leaves: pl.Series, schema: pl.Schema, *, strict: bool
              ) -> pl.Expr | None:
    """Each row's index among the raw values ``leaves`` of QI ``q`` (UInt; null where the
    value is null or, without ``strict``, not a raw value): the physical value of a column
    already read as :func:`leaf_enum` (:func:`read_coded`), else an Enum cast of its strings.
    None when the raw values make no Enum."""
    enum = leaf_enum(leaves)
    if enum is None:
        return None
    if schema.get(q) == enum:  # is_coded, its Enum made once
        return pl.col(q).to_physical()
    return pl.col(q).cast(pl.String).cast(enum, strict=strict).to_physical()




INTEGER_SPAN = 1 << 16
"""The widest ``max - min + 1`` range of an integer QI column that :func:`integer_index` maps
by one table over the range (wider columns are cast row by row)."""

_INTEGERS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32)


def integer_index(column: pl.Series, leaves: pl.Series) -> Any | None:
    """The raw indices (int64 numpy array, -1 where a value is not a raw value) of an integer
    column without nulls, exactly as :func:`raw_index` casts it (each value as a string, then
    the Enum of ``leaves``), by a lookup per row into :func:`integer_table`. None when that
    does not apply: cast the rows instead.

    >>> codes = integer_index(pl.Series([42, 17, 5]), pl.Series(["17", "42", "05"]))
    >>> codes.tolist()
    [1, 0, -1]
    """
    import numpy as np

    found = integer_table(column, leaves)
    if found is None:
        return None
    table, low = found
    return table[column.to_numpy().astype(np.int64, copy=False) - low]


def integer_table(column: pl.Series, leaves: pl.Series) -> tuple[Any, int] | None:
    """``(table, low)``: each integer of the column's ``[low, high]`` range mapped to its raw
    index (int64 numpy array, ``table[v - low]``; -1 where ``v`` is not a raw value), as
    :func:`raw_index` casts it (the value as a string, then the Enum of ``leaves``). The table
    holds each raw value that is an integer's own string (``"17"``, not ``"017"`` or ``"+17"``:
    the only strings an integer casts to) at that integer. None when this does not apply (not
    an integer dtype of at most 63 bits, nulls, a range wider than :data:`INTEGER_SPAN`, an
    empty column, or raw values that make no Enum).

    >>> table, low = integer_table(pl.Series([42, 17, 40]), pl.Series(["17", "42", "40"]))
    >>> low, table[[0, 23, 25]].tolist()
    (17, [0, 2, 1])
    """
    import numpy as np

    if (column.dtype not in _INTEGERS or column.null_count() or column.len() == 0
            or leaf_enum(leaves) is None):
        return None
    low, high = int(column.min()), int(column.max())  # type: ignore[arg-type]
    if high - low >= INTEGER_SPAN:
        return None
    text = leaves.cast(pl.String)
    number = text.cast(pl.Int64, strict=False)
    own = np.equal((number.cast(pl.String) == text).to_numpy(), True)  # null: not own
    index = np.flatnonzero(own)
    number = number.to_numpy()[index] if index.shape[0] else np.zeros(0, np.int64)
    inside = (number >= low) & (number <= high)
    table = np.full(high - low + 1, -1, dtype=np.int64)
    table[number[inside].astype(np.int64) - low] = index[inside]
    return table, low
