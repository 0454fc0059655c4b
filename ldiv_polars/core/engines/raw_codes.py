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
    if is_coded(q, leaves, schema):
        return pl.col(q).to_physical()
    return pl.col(q).cast(pl.String).cast(enum, strict=strict).to_physical()
