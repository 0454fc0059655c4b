"""The codes of a String or Enum column's rows read straight from its Arrow buffers.

Polars casts a String column to an Enum in a query (a plan, then a hash and a lookup of each
row's string); the compiled kernel ``_arrow_codes`` numbers the distinct strings of the
column's Arrow views (read through the Arrow C stream of ``Series.__arrow_c_stream__``:
zero-copy, chunk by chunk, without pyarrow) in one pass (a hash of each row's bytes into a
small table), with no query plan (BENCHMARKS.md, "Small searches, session 15").
Two strings get one number exactly when their bytes are equal, so the codes are exactly the
Enum cast's: :func:`leaf_codes` is :func:`~ldiv_polars.core.engines.raw_codes.raw_index` for
a String column, :func:`sorted_ids` the ids of a sensitive column's distinct values in sorted
order. A column read as the Enum of its raw values already (``read_coded``) has its codes in
its dictionary indices, which :func:`add_coded_indices` reads from the Arrow buffers with no
query. :func:`add_columns` adds several columns' codes to one key in one call of the kernel
(rows in blocks, each string looked up among the leaves by three words of its bytes), and
:func:`add_columns_and_ids` numbers the sensitive column in the same pass (BENCHMARKS.md,
"Small searches, session 16"). Without the kernel (not compiled, or ``LDIV_POLARS_NO_KERNEL=1``) the same arrays come
from Polars' casts.

>>> import polars as pl
>>> leaf_codes(pl.Series(["b", "a", "b"]), pl.Series(["a", "b"])).tolist()
[1, 0, 1]
>>> ids, values = sorted_ids(pl.Series(["y", "x", "y"]))
>>> ids.tolist(), values.to_list()
([1, 0, 1], ['x', 'y'])
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import polars as pl

from ldiv_polars.core.engines.raw_codes import leaf_enum

try:  # the compiled kernel (absent when the package was installed without a C compiler)
    from ldiv_polars.core.engines import _arrow_codes as _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

KERNEL = _kernel is not None and not os.environ.get("LDIV_POLARS_NO_KERNEL")
"""Whether the rows are encoded by the compiled kernel (else by Polars' Enum cast)."""


def leaf_codes(column: pl.Series, leaves: pl.Series, *, kernel: bool | None = None
               ) -> Any | None:
    """Each row's index among the raw values ``leaves`` (int64 numpy array), exactly what
    :func:`~ldiv_polars.core.engines.raw_codes.raw_index` casts a String column to. None
    when ``column`` is not String, holds a null or a value that is not a raw value, or the
    raw values make no Enum (the Polars engine's path then names the value). ``kernel``:
    force the compiled kernel on or off (default :data:`KERNEL`; tests compare the two).

    >>> leaf_codes(pl.Series(["c"]), pl.Series(["a", "b"])) is None
    True
    """
    import numpy as np

    enum = leaf_enum(leaves)
    if enum is None or column.dtype != pl.String or column.null_count():
        return None
    if not _use_kernel(kernel):
        codes = column.cast(enum, strict=False)
        if codes.null_count():
            return None
        return codes.to_physical().to_numpy().astype(np.int64, copy=False)
    ids = np.empty(column.len(), dtype=np.int64)
    try:
        if ids.shape[0] and _kernel.encode(column.__arrow_c_stream__(), ids,
                                           leaves.cast(pl.String).__arrow_c_stream__(),
                                           0) is None:
            return None  # a value that is not a raw value
    except TypeError:  # an Arrow layout the kernel does not read (nothing written yet)
        return leaf_codes(column, leaves, kernel=False)
    return ids


def add_leaf_codes(column: pl.Series, leaves: pl.Series, key: Any, place: int, counts: Any,
                   *, kernel: bool | None = None) -> bool:
    """Add each row's :func:`leaf_codes` times ``place`` to ``key`` (int64 numpy array of
    the column's length, in place: a mixed-radix key, the caller's place keeping it within
    int64) and count the rows of each raw value into ``counts`` (int64, ``len(leaves)``
    cells), in one pass without the codes' own array. False where :func:`leaf_codes` is
    None (``key`` and ``counts`` may then be partly updated). ``kernel`` as there.

    >>> import numpy as np
    >>> key, counts = np.zeros(3, np.int64), np.zeros(2, np.int64)
    >>> add_leaf_codes(pl.Series(["b", "a", "b"]), pl.Series(["a", "b"]), key, 10, counts)
    True
    >>> key.tolist(), counts.tolist()
    ([10, 0, 10], [1, 2])
    """
    if not _use_kernel(kernel):
        codes = leaf_codes(column, leaves, kernel=False)
        return codes is not None and _add_codes(codes, key, place, counts)
    if leaf_enum(leaves) is None or column.dtype != pl.String or column.null_count():
        return False
    if column.len() == 0:
        return True
    try:
        return bool(_kernel.add_codes(column.__arrow_c_stream__(),
                                      leaves.cast(pl.String).__arrow_c_stream__(), key, place,
                                      counts))
    except TypeError:  # an Arrow layout the kernel does not read (nothing added yet)
        return add_leaf_codes(column, leaves, key, place, counts, kernel=False)


def add_coded_indices(column: pl.Series, leaves: pl.Series, key: Any, place: int, counts: Any,
                      *, kernel: bool | None = None) -> bool:
    """:func:`add_leaf_codes` for a column read as codes (its dtype the
    :func:`~ldiv_polars.core.engines.raw_codes.leaf_enum` of ``leaves``: a row's code is its
    Enum index): the indices read from the column's Arrow dictionary arrays. False when the
    column is not such an Enum or holds a null.

    >>> import numpy as np
    >>> leaves = pl.Series(["a", "b"])
    >>> key, counts = np.zeros(3, np.int64), np.zeros(2, np.int64)
    >>> col = pl.Series(["b", "a", "b"], dtype=leaf_enum(leaves))
    >>> add_coded_indices(col, leaves, key, 10, counts), key.tolist(), counts.tolist()
    (True, [10, 0, 10], [1, 2])
    """
    import numpy as np

    enum = leaf_enum(leaves)
    if enum is None or column.dtype != enum or column.null_count():
        return False
    if not _use_kernel(kernel):
        return _add_codes(column.to_physical().to_numpy().astype(np.int64), key, place, counts)
    try:
        _kernel.add_indices(column.__arrow_c_stream__(), key, place, counts)
    except TypeError:  # an Arrow layout the kernel does not read (nothing added yet)
        return add_coded_indices(column, leaves, key, place, counts, kernel=False)
    return True


def add_integer_codes(column: pl.Series, table: Any, low: int, key: Any, place: int,
                      counts: Any, *, kernel: bool | None = None) -> bool:
    """:func:`add_leaf_codes` for an integer column and its
    :func:`~ldiv_polars.core.engines.raw_codes.integer_table` ``(table, low)``: each row's
    code ``table[v - low]``. False (``key`` and ``counts`` then partly updated) when a value
    has no code (-1) or lies outside the table, and (nothing updated) when the column is not
    an integer column without nulls whose values fit int64 (a float, a null, a UInt64 past
    int64 has no code here: the caller casts); ``kernel`` as in :func:`leaf_codes`.

    >>> import numpy as np
    >>> key, counts = np.zeros(2, np.int64), np.zeros(2, np.int64)
    >>> table = np.array([1, -1, 0])  # 17 -> 1, 19 -> 0
    >>> add_integer_codes(pl.Series([19, 17]), table, 17, key, 10, counts), key.tolist()
    (True, [0, 10])
    """
    if not column.dtype.is_integer() or column.null_count():
        return False
    if _use_kernel(kernel):
        try:
            return bool(_kernel.add_table(column.__arrow_c_stream__(), table, low, key, place,
                                          counts))
        except TypeError:  # an Arrow layout the kernel does not read (nothing added yet)
            pass
    values = column.cast(pl.Int64, strict=False)  # null: past int64 (UInt64, Int128)
    if values.null_count():
        return False
    offset = values.to_numpy() - low
    if offset.shape[0] and (offset.min() < 0 or offset.max() >= table.shape[0]):
        return False
    codes = table[offset]
    return not (codes.shape[0] and codes.min() < 0) and _add_codes(codes, key, place, counts)


def add_columns(columns: Sequence[tuple[str, pl.Series, Any, int, Any]], key: Any, *,
                kernel: bool | None = None) -> bool:
    """Several columns' codes added to one key in one pass: each ``(kind, column, codes,
    place, counts)`` is what :func:`add_leaf_codes` (kind ``"s"``, ``codes`` the raw values),
    :func:`add_coded_indices` (``"d"``, the raw values) or :func:`add_integer_codes` (``"t"``,
    ``codes`` its ``(table, low)``) adds and counts, and the result is theirs: False when one
    of them is False (``key`` and ``counts`` then partly updated). The kernel reads every
    column in blocks of rows (the key's block stays in cache across the columns) in one call;
    a layout it does not read, or no kernel, takes the one-column functions.

    >>> import numpy as np
    >>> key, c1, c2 = np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64)
    >>> add_columns([("s", pl.Series(["b", "a"]), pl.Series(["a", "b"]), 2, c1),
    ...              ("t", pl.Series([7, 5]), (np.array([0, -1, 1]), 5), 1, c2)], key)
    True
    >>> key.tolist(), c1.tolist(), c2.tolist()
    ([3, 0], [1, 1], [1, 1])
    """
    specs = _specs(columns) if _use_kernel(kernel) and key.shape[0] else None
    if specs is not None:
        try:
            return bool(_kernel.add_columns(specs, key))
        except TypeError:  # a layout the kernel does not read (nothing added yet)
            pass
    return all(_ONE_COLUMN[kind](column, *(codes if kind == "t" else (codes,)), key, place,
                                 counts, kernel=False if specs is not None else kernel)
               for kind, column, codes, place, counts in columns)


def add_columns_and_ids(columns: Sequence[tuple[str, pl.Series, Any, int, Any]], key: Any,
                        sensitive: pl.Series, *, kernel: bool | None = None
                        ) -> tuple[bool, tuple[Any, pl.Series] | None]:
    """:func:`add_columns` and :func:`sorted_ids` of the String column ``sensitive`` (of the
    key's length) from the same pass of the kernel: ``(added, ids)``; ``(False, None)``,
    nothing added, when ``sensitive`` is not a String column without nulls, and ``ids``
    None when ``added`` is False.

    >>> import numpy as np
    >>> key, counts = np.zeros(3, np.int64), np.zeros(2, np.int64)
    >>> ok, (ids, values) = add_columns_and_ids(
    ...     [("s", pl.Series(["b", "a", "b"]), pl.Series(["a", "b"]), 1, counts)], key,
    ...     pl.Series(["y", "x", "y"]))
    >>> ok, key.tolist(), ids.tolist(), values.to_list()
    (True, [1, 0, 1], [1, 0, 1], ['x', 'y'])
    """
    import numpy as np

    if sensitive.dtype != pl.String or sensitive.null_count():
        return False, None
    specs = _specs(columns) if _use_kernel(kernel) and key.shape[0] else None
    if specs is not None:
        ids, new = np.empty(key.shape[0], dtype=np.int64), []
        try:
            added = _kernel.add_columns(
                [*specs, ("n", sensitive.__arrow_c_stream__(), ids, SORT_LIMIT, new)], key)
        except TypeError:  # a layout the kernel does not read (nothing added yet)
            pass
        else:
            return bool(added), (_ranked(sensitive, ids, None if new == [None] else new)
                                 if added else None)
    added = add_columns(columns, key, kernel=kernel)
    return added, (sorted_ids(sensitive, kernel=kernel) if added else None)


def _specs(columns: Sequence[tuple[str, pl.Series, Any, int, Any]]) -> list[tuple] | None:
    """The kernel's specs of :func:`add_columns`' columns; None when one of them is not of
    its kind's dtype or holds a null (its one-column function then answers)."""
    specs: list[tuple] = []
    for kind, column, codes, place, counts in columns:
        if column.null_count():
            return None
        if kind == "t":
            if not column.dtype.is_integer():
                return None
            specs.append(("t", column.__arrow_c_stream__(), codes[0], codes[1], place, counts))
            continue
        enum = leaf_enum(codes)
        if enum is None or column.dtype != (pl.String if kind == "s" else enum):
            return None
        specs.append(("s", column.__arrow_c_stream__(), codes.cast(pl.String).__arrow_c_stream__(),
                      place, counts) if kind == "s" else
                     ("d", column.__arrow_c_stream__(), place, counts))
    return specs


def _add_codes(codes: Any, key: Any, place: int, counts: Any) -> bool:
    """The kernel's additions in numpy: ``key += codes * place``, each code counted."""
    import numpy as np

    key += codes * place
    counts += np.bincount(codes, minlength=counts.shape[0])
    return True


SORT_LIMIT = 4096
"""The most distinct values :func:`sorted_ids` sorts in Python after the kernel's pass; a
column with more is numbered by Polars (``unique().sort()`` and an Enum cast) instead."""


def sorted_ids(column: pl.Series, *, kernel: bool | None = None
               ) -> tuple[Any, pl.Series] | None:
    """The distinct values of a String column in sorted order (as ``unique().sort()``) and
    each row's index among them (int64 numpy array): exactly the physical values of the
    column cast to the Enum of those values. None when ``column`` is not String or holds a
    null. ``kernel`` as in :func:`leaf_codes`.

    >>> sorted_ids(pl.Series([1, 2])) is None
    True
    """
    import numpy as np

    if column.dtype != pl.String or column.null_count():
        return None
    ids = np.empty(column.len(), dtype=np.int64)
    new = _sorted_new(column, ids) if _use_kernel(kernel) and ids.shape[0] else None
    return _ranked(column, ids, new)


def _ranked(column: pl.Series, ids: Any, new: list[bytes] | None) -> tuple[Any, pl.Series]:
    """:func:`sorted_ids` from the kernel's first-appearance numbers ``ids`` of ``column``
    and its distinct strings ``new`` (None: past :data:`SORT_LIMIT`, Polars numbers them)."""
    import numpy as np

    if new is None:
        values = column.unique().sort()
        ids = column.cast(pl.Enum(values)).to_physical().to_numpy()
        return ids.astype(np.int64, copy=False), values
    # Polars sorts strings by their UTF-8 bytes, as Python sorts bytes
    order = sorted(range(len(new)), key=new.__getitem__)
    rank = np.empty(len(new), dtype=np.int64)
    rank[order] = np.arange(len(new), dtype=np.int64)
    return rank[ids], pl.Series([new[i].decode() for i in order], dtype=pl.String)


def _sorted_new(column: pl.Series, ids: Any) -> list[bytes] | None:
    """The kernel's first-appearance numbers of ``column`` written to ``ids`` and its
    distinct strings; None past :data:`SORT_LIMIT` of them, or for an Arrow layout the kernel
    does not read."""
    try:
        return _kernel.encode(column.__arrow_c_stream__(), ids, None, SORT_LIMIT)
    except TypeError:
        return None


def _use_kernel(kernel: bool | None) -> bool:
    return _kernel is not None and (KERNEL if kernel is None else kernel)


_ONE_COLUMN = {"s": add_leaf_codes, "d": add_coded_indices, "t": add_integer_codes}
"""The one-column function of each kind of :func:`add_columns`."""
