"""The roll-ups' inner loops: the mixed-radix key of every source row as a sum of digit
lookups (:func:`lookup_sum`), and its weighted count over the key space read out in key order
(:func:`lookup_count`).

Both run in a small compiled kernel (``ldiv_polars.search._counting``, an optional C extension
built when the package is installed with a C compiler at hand) or, without it, in numpy; the
two give the same arrays (property-tested). The kernel builds keys in blocks that stay in L1,
counts them into a reused array and marks each counted cell in a bitmap (through a kept flag
byte per cell where there are few cells per row: ``TUNING.flag_max_cells``), so reading the
result visits only the occupied cells. Wide key spaces of large sources are counted window by window
(``TUNING.window_*``) rather than sorted. ``LDIV_POLARS_NO_KERNEL=1`` in the environment (or
:func:`use_kernel`) selects numpy. Its speed: ``BENCHMARKS.md`` (session 7).

>>> import numpy as np
>>> cols = (np.array([0, 1, 1, 2], np.int32), np.array([1, 0, 1, 1], np.int32))
>>> tables = (np.array([0, 1, 1]), None)  # QI 0: codes 1 and 2 merge (digit place 2)
>>> lookup_sum(cols, tables, (2, 1), 4).tolist()
[1, 2, 3, 3]
>>> keys, sums = lookup_count(cols, tables, (2, 1), np.array([5, 1, 1, 2]), span=4, total=9)
>>> keys.tolist(), sums.tolist()
([1, 2, 3], [5, 1, 3])
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ldiv_polars.search.tuning import TUNING

try:  # the compiled kernel (absent when the package was installed without a C compiler)
    from ldiv_polars.search import _counting as _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

COMPILED = _kernel is not None
"""Whether the compiled kernel was built and imports."""
KERNEL = COMPILED and not os.environ.get("LDIV_POLARS_NO_KERNEL")
"""Whether the roll-ups use the compiled kernel (see :func:`use_kernel`)."""
Columns = Sequence[np.ndarray]
Tables = Sequence[np.ndarray | None]

_local = threading.local()


@contextmanager
def use_kernel(flag: bool) -> Iterator[None]:
    """Run the roll-ups with (``True``, if compiled) or without the compiled kernel inside the
    ``with`` block (tests compare the two; not thread-safe: it sets the module's switch)."""
    global KERNEL
    before = KERNEL
    KERNEL = bool(flag) and COMPILED
    try:
        yield
    finally:
        KERNEL = before


def count_cells(rows: int, numpy_limit: int) -> int:
    """Largest key span a roll-up of ``rows`` source rows counts (rather than sorts):
    ``numpy_limit`` (numpy's, see :func:`~ldiv_polars.search.grouping.bincount_limit`) or,
    with the kernel, at least ``TUNING.kernel_count_cells``, and ``TUNING.window_max_passes``
    windows of ``TUNING.window_cells`` from ``TUNING.window_min_rows`` rows."""
    if not KERNEL:
        return numpy_limit
    t = TUNING
    if rows >= t.window_min_rows:
        return max(numpy_limit, t.kernel_count_cells, t.window_cells * t.window_max_passes)
    return max(numpy_limit, t.kernel_count_cells)


def lookup_sum(cols: Columns, tables: Tables, scale: Sequence[int], rows: int,
               extra: np.ndarray | None = None) -> np.ndarray:
    """int64 ``sum_i tables[i][cols[i]] * scale[i]`` (``cols[i] * scale[i]`` where
    ``tables[i]`` is None; a lookup already holding its digits' places has scale 1), plus
    ``extra`` (int32): the mixed-radix key of every row, a fresh int64 array of ``rows``
    entries. ``cols`` are uint16, int32 or intp codes, ``tables`` int64 or uint16 lookups. A
    code outside its lookup raises ``IndexError`` (the kernel checks before it reads)."""
    if KERNEL and cols:
        out = np.empty(rows, dtype=np.int64)
        assert _kernel is not None
        _kernel.lookup_sum(_args(cols), tuple(tables), tuple(int(s) for s in scale),
                           _extra(extra), out)
        return out
    # (numpy: int64 lookups, so digits are scaled and summed without overflow)
    tables = [t if t is None or t.dtype == np.int64 else t.astype(np.int64) for t in tables]
    if rows >= TUNING.chunked_key_rows or not cols:
        return _lookup_sum_chunked(cols, tables, scale, rows, extra)
    key = None if extra is None else extra.astype(np.int64)
    for col, table, r in zip(cols, tables, scale):
        # fancy indexing takes int32 indices as they are (np.take casts them on every call)
        if table is None:
            digit = col * np.int64(r)
        else:
            digit = table[col]  # (a fresh array: scaled in place)
            if r != 1:
                np.multiply(digit, r, out=digit)
        if key is None:  # the first digits are the key's array (a fresh int64 one)
            key = digit if digit.dtype == np.int64 else digit.astype(np.int64)
        else:
            np.add(key, digit, out=key)
    assert key is not None
    return key


def lookup_count(cols: Columns, tables: Tables, scale: Sequence[int], weights: np.ndarray,
                 *, span: int, total: int, extra: np.ndarray | None = None,
                 fweights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, sums)``: the distinct keys of :func:`lookup_sum` (ints in ``[0, span)``) in
    increasing order and the summed ``weights`` (int32 or int64) of each, as int64. ``total``
    bounds the sum of the weights (int32 counts below 2**31); ``fweights``, the weights as
    float64 if the caller holds them (numpy's ``bincount`` reads those). A key outside
    ``[0, span)`` raises ``IndexError`` with the kernel (numpy's ``bincount`` grows its array
    past ``span`` instead: callers keep keys within it)."""
    rows = int(weights.shape[0])
    if not KERNEL or not cols:
        key = lookup_sum(cols, tables, scale, rows, extra)
        # float64 sums are exact below 2**53 rows
        counts = np.bincount(key, weights=weights if fweights is None else fweights,
                             minlength=span)
        del key
        keys = np.flatnonzero(counts != 0)  # a bool mask: ~5x faster than on floats
        sums = counts[keys].astype(np.int64)
        return keys, sums
    assert _kernel is not None
    width = max(1, min(span, TUNING.window_cells))
    counts, bitmap = _scratch(width, total < 2**31)
    args = (_args(cols), tuple(tables), tuple(int(s) for s in scale), _extra(extra),
            _weights(weights))
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for first in range(0, max(span, 1), width):  # (one window unless the span is wider)
        cells = min(width, span - first)
        c, b = counts[:cells], bitmap[:(cells + 63) // 64]
        occupied = _count_keys(args, c, b, None if cells == span else (first, span))
        keys = np.empty(occupied, dtype=np.int64)
        sums = np.empty(occupied, dtype=np.int64)
        _kernel.read_cells(c, b, keys, sums, first)
        parts.append((keys, sums))
    if len(parts) == 1:
        return parts[0]
    return (np.concatenate([k for k, _ in parts]), np.concatenate([s for _, s in parts]))


def lookup_sort_sum(cols: Columns, tables: Tables, scale: Sequence[int], weights: np.ndarray,
                    *, span: int, total: int, extra: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`lookup_count`'s ``(keys, sums)`` for a key space too wide to count: the kernel
    builds every row's key, packs it above its weight in a uint64 and radix-sorts those, then
    sums the weights of each run of equal keys (one pass that builds and histograms the keys,
    a few that scatter them: no comparison sort, no gathers of keys and weights by its
    order; the two result arrays are its buffers). ``total`` bounds every weight. None
    without the kernel, when a key and a weight do not fit in 64 bits together, or above
    ``TUNING.radix_max_rows`` rows: the caller then sorts the keys
    (:func:`~ldiv_polars.search.grouping.group_sum`).

    >>> cols = (np.array([3, 0, 3, 1], np.int32),)
    >>> got = lookup_sort_sum(cols, (None,), (1,), np.array([2, 1, 5, 1]), span=4, total=9)
    >>> got is None or [a.tolist() for a in got] == [[0, 1, 3], [1, 1, 7]]
    True
    """
    rows = int(weights.shape[0])
    wbits = max(int(total).bit_length(), 1)
    if not KERNEL or not cols or rows > TUNING.radix_max_rows or \
            max(span - 1, 1).bit_length() + wbits > 64:
        return None
    assert _kernel is not None
    keys = np.empty(rows, dtype=np.int64)
    sums = np.empty(rows, dtype=np.int64)
    distinct = _kernel.sort_sum(_args(cols), tuple(tables), tuple(int(s) for s in scale),
                                _extra(extra), _weights(weights), int(span), wbits, keys, sums)
    # (shrunk in place, no copy: a kept snapshot must not hold the whole buffers alive)
    keys.resize(distinct, refcheck=False)
    sums.resize(distinct, refcheck=False)
    return keys, sums


def _count_keys(args: tuple[Any, ...], counts: np.ndarray, bitmap: np.ndarray,
                window: tuple[int, int] | None) -> int:
    """The kernel's ``count_keys`` of ``args`` into the scratch views ``counts`` and
    ``bitmap`` (``window``: ``(first, span)`` when the key space is counted in windows); the
    number of occupied cells. A whole key space is counted with this thread's flag bytes
    (:func:`_flags`: the kernel flags each counted cell by a plain store, cheaper than setting
    its bit, and gathers the flags into the bitmap at the end). On any error the views are
    zeroed again before it propagates (the scratch arrays are kept for the next roll-up and
    must stay zeroed)."""
    assert _kernel is not None
    flags = None if window is not None else _flags(counts.shape[0])
    try:
        return _kernel.count_keys(*args, counts, bitmap, *(window or (0, -1)), flags)
    except BaseException:
        counts[:] = 0
        bitmap[:] = 0
        if flags is not None:  # (the kernel leaves them zeroed: kept so whatever happened)
            flags[:] = 0
        raise


def lookup_count_split(cols: Columns, tables: Tables, scale: Sequence[int],
                       weights: np.ndarray, *, span: int, total: int, ns: int,
                       extra: np.ndarray | None = None
                       ) -> tuple[np.ndarray, ...] | None:
    """:func:`lookup_count` with its keys read as ``class * ns + sensitive id``, split in
    the kernel's one read-out: ``(s, n, row_class, class_keys, class_size)`` (int32 ids,
    int64 otherwise; per occupied key in order its id, count and class index, per class its
    key and summed count), as the roll-up splits them. None without the kernel, or when the
    key space is counted in several windows (the caller then splits :func:`lookup_count`'s
    keys itself)."""
    if not KERNEL or not cols or span > TUNING.window_cells:
        return None
    assert _kernel is not None
    counts, bitmap = _scratch(max(span, 1), total < 2**31)
    c, b = counts[:span], bitmap[:(span + 63) // 64]
    occupied = _count_keys((_args(cols), tuple(tables), tuple(int(x) for x in scale),
                            _extra(extra), _weights(weights)), c, b, None)
    s = np.empty(occupied, dtype=np.int32)
    n, rc, ck, cs = (np.empty(occupied, dtype=np.int64) for _ in range(4))
    _, classes = _kernel.read_cells_split(c, b, int(ns), s, n, rc, ck, cs)
    if classes < occupied // 2:  # (kept snapshots must not hold the whole buffers alive)
        return s, n, rc, ck[:classes].copy(), cs[:classes].copy()
    return s, n, rc, ck[:classes], cs[:classes]


def masked_sum(values: np.ndarray, mask: np.ndarray) -> int:
    """The sum of the int64 ``values`` where the bool ``mask`` (of their length) is set,
    exact: the kernel reads the mask's bytes in place; numpy's dot product (the twin, without
    the kernel) first copies the mask into a fresh int64 array.

    >>> masked_sum(np.array([3, 1, 4]), np.array([True, False, True]))
    7
    """
    if values.dtype != np.int64:  # (int32 counts: their dot product would be int32)
        values = values.astype(np.int64)
    if KERNEL and mask.dtype == np.bool_ and len(mask) == len(values):
        return int(_kernel.masked_sum(np.ascontiguousarray(values),  # type: ignore[union-attr]
                                      np.ascontiguousarray(mask)))
    return int(np.dot(values, mask))


def _extra(extra: np.ndarray | None) -> np.ndarray | None:
    """The added ids as the kernel reads them: C-contiguous int32."""
    if extra is None or (extra.dtype == np.int32 and extra.flags.c_contiguous):
        return extra
    return np.ascontiguousarray(extra, dtype=np.int32)


def _weights(w: np.ndarray) -> np.ndarray:
    """Weights as the kernel reads them: C-contiguous int32 or int64."""
    return w if w.dtype in _KERNEL_WEIGHTS and w.flags.c_contiguous else \
        np.ascontiguousarray(w, dtype=np.int64)


_KERNEL_WEIGHTS = (np.dtype(np.int32), np.dtype(np.int64))
_KERNEL_CODES = (np.dtype(np.uint16), np.dtype(np.int32), np.dtype(np.int64))


def _args(cols: Columns) -> tuple[np.ndarray, ...]:
    """Code columns as the kernel reads them: C-contiguous uint16, int32 or int64."""
    return tuple(c if c.dtype in _KERNEL_CODES and c.flags.c_contiguous
                 else np.ascontiguousarray(c, dtype=np.int64) for c in cols)


def _scratch(span: int, narrow: bool) -> tuple[np.ndarray, np.ndarray]:
    """A zeroed count array (int32 if ``narrow``, else int64) of ``span`` cells and its zeroed
    bitmap: views of this thread's kept arrays up to ``TUNING.scratch_max_cells`` (allocated
    once, lazily zeroed: only the pages that cells fall in are ever touched; the read-out
    leaves them zeroed), else fresh."""
    words = (span + 63) // 64
    dtype = np.int32 if narrow else np.int64
    cells = TUNING.scratch_max_cells
    if span > cells:
        return np.zeros(span, dtype=dtype), np.zeros(words, dtype=np.uint64)
    name = "counts32" if narrow else "counts64"
    kept = getattr(_local, name, None)
    if kept is None or kept.shape[0] < span:
        kept = np.zeros(cells, dtype=dtype)
        setattr(_local, name, kept)
    bits = getattr(_local, "bitmap", None)
    if bits is None or bits.shape[0] < words:
        bits = np.zeros((cells + 63) // 64, dtype=np.uint64)
        _local.bitmap = bits
    return kept[:span], bits[:words]


def _flags(cells: int) -> np.ndarray | None:
    """This thread's zeroed flag bytes for a key space of ``cells`` cells (a byte per cell,
    rounded up to 64), kept like :func:`_scratch`'s arrays, or None above
    ``TUNING.flag_max_cells`` or ``TUNING.scratch_max_cells`` (the kernel then sets the
    bitmap's bits directly). The kernel leaves them zeroed."""
    size = (cells + 63) // 64 * 64
    if size > min(TUNING.flag_max_cells, TUNING.scratch_max_cells):
        return None
    kept = getattr(_local, "flags", None)
    if kept is None or kept.shape[0] < size:
        kept = np.zeros(TUNING.scratch_max_cells, dtype=np.uint8)
        _local.flags = kept
    return kept[:size]


def _lookup_sum_chunked(cols: Columns, tables: Tables, scale: Sequence[int], rows: int,
                        extra: np.ndarray | None = None) -> np.ndarray:
    """numpy's :func:`lookup_sum` in chunks of ``TUNING.key_chunk`` rows: each column's lookup
    indices and the partial sums stay in cache, and no temporary of the rows' size is made."""
    key = np.zeros(rows, dtype=np.int64) if not cols else np.empty(rows, dtype=np.int64)
    if not cols or not rows:
        if extra is not None:
            np.add(key, extra, out=key)
        return key
    chunk = min(rows, TUNING.key_chunk)
    tmp = np.empty(chunk, dtype=np.int64)
    idx = np.empty(chunk, dtype=np.intp)
    for lo in range(0, rows, chunk):
        hi = min(lo + chunk, rows)
        k, t, ix = key[lo:hi], tmp[: hi - lo], idx[: hi - lo]
        for i, col in enumerate(cols):
            digit = k if not i else t  # the first column's digits are written in place
            table = tables[i]
            if table is None:
                np.multiply(col[lo:hi], scale[i], out=digit, dtype=np.int64)
            elif col.dtype == np.intp:
                np.take(table, col[lo:hi], out=digit)
            else:
                ix[...] = col[lo:hi]  # intp indices: numpy casts others on every gather
                np.take(table, ix, out=digit)
            if table is not None and scale[i] != 1:
                np.multiply(digit, scale[i], out=digit)
            if i:
                np.add(k, t, out=k)
        if extra is not None:
            np.add(k, extra[lo:hi], out=k)
    return key
