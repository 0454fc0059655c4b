"""Grouping of integer keys in numpy: dense ranks, representatives and sums by counting or by
one sort, and the limits that choose between them (measured on 2 cores). The sort is numpy's
timsort on nearly sorted keys (roll-ups of a source in key order), Polars' multithreaded
sort otherwise; every branch gives the same arrays.

>>> import numpy as np
>>> inv, uniq = dense_rank(np.array([7, 3, 7, 9]), 10)
>>> inv.tolist(), uniq.tolist()
([1, 0, 1, 2], [3, 7, 9])
>>> uniq, sums = group_sum(np.array([7, 3, 7, 9]), 10, np.array([1, 2, 3, 4]))
>>> uniq.tolist(), sums.tolist()
([3, 7, 9], [2, 4, 4])
"""

from __future__ import annotations

import numpy as np
import polars as pl

SORT_POLARS_MIN_ROWS = 1 << 12
"""Key arrays of at least this many rows are sorted by Polars (below, numpy's ``argsort``:
no call overhead)."""
PRESORTED_STRIDE = 64
"""Row distance of the sample that :func:`presorted` checks for order."""
ORDERED_SORT_MIN_ROWS = 1 << 16
ORDERED_SORT_MAX_ROWS = 1 << 22
"""Roll-ups of ``ORDERED_SORT_MIN_ROWS`` to ``ORDERED_SORT_MAX_ROWS`` rows from a source in key
order are sorted by numpy's timsort whatever :func:`presorted` finds (see :func:`group_sum`;
below, counting is cheaper: Adult's 30K-row searches 0.7 ms slower)."""
COUNT_MAX_CELLS = 1 << 26
"""Most cells of a key space grouped by counting, whatever the rows (:func:`count_limit`): a
dense rank over ``span`` cells holds ``5 x span`` bytes (a boolean presence array and int32
positions), 2.3 GB at 16x the rows of a 32M-row frequency set; beyond this cap (320 MB), one
sort. 100M rows with k=5 and distinct l=2: peak RSS 4.24 -> 3.26 GB, 130.8 -> 128.7 s (the
dense ranks of 250-370M cells paged in more memory than a sort of their 32M keys costs);
k-anonymity alone at 100M unchanged (57.7 s)."""
BINCOUNT_MAX_CELLS = 1 << 25
"""Most cells of a key space counted by one weighted ``bincount`` (float64 counts: 256 MB),
whatever the rows (:func:`bincount_limit`; 4x the rows of a 32M-row frequency set were 1 GB).
With the count cap and the sort in the key's own buffer (:func:`_group_sum_packed`): 100M
rows with k=5 and distinct l=2 peak 3.26 -> 2.68 GB for 130 -> 143 s; k=5 alone unchanged."""
PRESORTED_COUNT_FACTOR = 2
"""Nearly sorted keys of a span above this many times their rows are grouped by
:func:`group_sum` with one sort, not by counting."""


def count_limit(rows: int) -> int:
    """Largest key span grouped by counting (a boolean presence array of ``span`` entries,
    O(rows + span)) rather than by one sort (O(rows log rows)); measured break-even on 2 cores
    is about 40 x rows, but at most ``COUNT_MAX_CELLS`` cells (memory)."""
    return max(min(16 * rows, COUNT_MAX_CELLS), 1 << 12)


def bincount_limit(rows: int) -> int:
    """Largest key span rolled up by one weighted ``bincount`` (a float64 array of ``span``
    entries, O(rows + span)), at most ``BINCOUNT_MAX_CELLS``; beyond it, the general path
    (densified keys, then counting or one sort)."""
    return max(min(4 * rows, BINCOUNT_MAX_CELLS), 1 << 10)


def dense_rank(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Monotone dense rank of ``key`` (ints in ``[0, span)``): ``(inv, uniq)`` with ``uniq``
    the distinct keys in increasing order and ``uniq[inv] == key``."""
    rows = key.shape[0]
    if span <= count_limit(rows):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        uniq = np.flatnonzero(present)  # flatnonzero of a bool array: a few times faster
        # int32 ranks: half the memory of the (span,) lookup on large frequency sets
        pos = np.empty(span, dtype=np.int32 if rows < 2**31 else np.int64)
        pos[uniq] = np.arange(uniq.shape[0], dtype=pos.dtype)
        return pos[key].astype(np.int64), uniq
    order, sk = _sorted(key, span)
    flag = run_starts(sk)
    uniq = sk[flag]
    del sk
    rank = np.cumsum(flag, dtype=np.int32 if rows < 2**31 else np.int64)
    rank -= 1
    inv = np.empty(rows, dtype=np.int64)
    inv[order] = rank
    return inv, uniq


def group_keys(key: np.ndarray, span: int, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group rows by ``key`` (ints in ``[0, span)``): one representative row index per
    distinct key, in increasing key order, and the summed ``n``. Counting (O(rows + span)) when
    the key space is small, one sort otherwise."""
    rows = key.shape[0]
    if rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if span <= count_limit(rows):
        inv, uniq = dense_rank(key, span)
        g = uniq.shape[0]
        rep = np.empty(g, dtype=np.int64)
        rep[inv] = np.arange(rows, dtype=np.int64)
        # float64 sums are exact below 2**53 rows
        return rep, np.bincount(inv, weights=n, minlength=g).astype(np.int64)
    order, sk = _sorted(key, span)
    flag = run_starts(sk)
    v = sk if sk.flags.writeable else np.empty(sk.shape[0], dtype=np.int64)
    del sk
    np.take(np.asarray(n, dtype=np.int64), order, out=v)
    return order[flag], run_sums(v, flag)


def group_sum(key: np.ndarray, span: int, n: np.ndarray, *, ordered: bool = False,
              consume: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(uniq, sums)``: the distinct keys (ints in ``[0, span)``) in increasing order and the
    summed ``n`` (int64) of each. Nearly sorted keys (see :func:`presorted`) of a span above
    ``PRESORTED_COUNT_FACTOR x rows`` are sorted rather than counted: their sort is
    near-linear and touches less fresh memory than the span's arrays (whose page faults made
    counting 2x slower than the sort in the 10M-row search). ``ordered`` says the keys are
    a roll-up of rows in key order (runs of sorted keys, whatever :func:`presorted` finds):
    numpy's timsort merges them (on ``ORDERED_SORT_MIN_ROWS`` to ``ORDERED_SORT_MAX_ROWS``
    rows). ``consume``: ``key`` (a writeable int64 array) is the caller's to give: the sort
    packs, sorts and sums in its buffer (see :func:`_group_sum_packed`; from
    ``INPLACE_SORT_MIN_ROWS`` rows the distinct keys are returned in the buffer's front,
    :func:`_group_sum_inplace`)."""
    rows = key.shape[0]
    ordered = ordered and ORDERED_SORT_MIN_ROWS <= rows <= ORDERED_SORT_MAX_ROWS
    sorted_ = ordered or (rows >= SORT_POLARS_MIN_ROWS and presorted(key))
    if span <= count_limit(rows) and (span <= PRESORTED_COUNT_FACTOR * rows
                                      or rows < SORT_POLARS_MIN_ROWS or not sorted_):
        inv, uniq = dense_rank(key, span)
        # float64 sums are exact below 2**53 rows
        return uniq, np.bincount(inv, weights=n, minlength=uniq.shape[0]).astype(np.int64)
    if (consume and not sorted_ and rows >= SORT_POLARS_MIN_ROWS and key.dtype == np.int64
            and key.flags.writeable and _packable(rows, span)):
        if rows >= INPLACE_SORT_MIN_ROWS:
            return _group_sum_inplace(key, n)
        return _group_sum_packed(key, n)
    order, sk = _sorted(key, span, ordered=ordered)
    flag = run_starts(sk)
    uniq = sk[flag]
    # the sorted keys' buffer (int64, no longer needed) takes the sorted counts
    v = sk if sk.flags.writeable else np.empty(sk.shape[0], dtype=np.int64)
    del sk
    np.take(np.asarray(n, dtype=np.int64), order, out=v)
    return uniq, run_sums(v, flag)


def _row_bits(rows: int) -> int:
    """Bits of a row index (packed beside a key by the sorts)."""
    return max(int(rows - 1).bit_length(), 1)


def _packable(rows: int, span: int) -> bool:
    """Whether a row index fits beside keys of ``span`` in an int64."""
    return span <= 1 << (63 - _row_bits(rows))


PACK_CHUNK = 1 << 20
"""Rows per chunk of the row indices packed beside the keys, and of the gathers by them."""


def _pack(buf: np.ndarray) -> int:
    """``key << bits | row`` in ``buf`` (int64 keys, overwritten) chunk by chunk (distinct
    values: any sort of them has one deterministic order); returns ``bits``."""
    rows = buf.shape[0]
    bits = _row_bits(rows)
    np.left_shift(buf, bits, out=buf)
    for lo in range(0, rows, PACK_CHUNK):
        hi = min(lo + PACK_CHUNK, rows)
        np.bitwise_or(buf[lo:hi], np.arange(lo, hi, dtype=np.int64), out=buf[lo:hi])
    return bits


def _packed_sort(buf: np.ndarray) -> np.ndarray:
    """Polars' sort of the keys of ``buf`` packed with their rows (:func:`_pack`); the sorted
    values, read-only."""
    _pack(buf)
    return pl.Series(buf).sort().to_numpy()


def _group_sum_packed(key: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_sum` by one Polars sort of ``key << bits | row``, packed in ``key``'s own
    buffer, which then takes the sorted keys and then the sorted counts (the row indices and
    the gathers of ``n`` chunk by chunk): besides ``key``, only the engine's sorted copy and
    the distinct keys are allocated. On 32M keys: +0.5 GB instead of +1.2 GB for the sort
    with its own arrays."""
    rows = key.shape[0]
    bits = _row_bits(rows)
    ps = _packed_sort(key)
    sk = np.right_shift(ps, bits, out=key)
    flag = run_starts(sk)
    uniq = sk[flag]
    mask = (1 << bits) - 1
    counts = np.asarray(n, dtype=np.int64)
    for lo in range(0, rows, PACK_CHUNK):  # the sorted keys' buffer takes the sorted counts
        hi = min(lo + PACK_CHUNK, rows)
        np.take(counts, np.bitwise_and(ps[lo:hi], mask), out=sk[lo:hi])
    del ps
    return uniq, run_sums(sk, flag)


INPLACE_SORT_MIN_ROWS = 1 << 24
"""Keys given away (``consume``) of at least this many rows are sorted by numpy in their own
buffer and summed chunk by chunk (:func:`_group_sum_inplace`): no copy of the rows' size (the
engine's sort makes one: 256 MB on 32M keys, the peak of the 100M-row search with a sensitive
model), for ~3x the sort's time (numpy's sort is single-threaded)."""


def _group_sum_inplace(key: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_sum` by numpy's in-place sort of ``key << bits | row`` in ``key``'s own
    buffer, then two reads of the runs chunk by chunk (``PACK_CHUNK`` rows): one counts them,
    the other writes the distinct keys to the buffer's front (never past the rows already
    read) and their sums to an array of exactly that size. Besides ``key`` (whose front the
    distinct keys are returned in), only the sums and chunk temporaries are allocated."""
    rows = key.shape[0]
    bits = _pack(key)
    key.sort()
    last = -1
    distinct = 0
    for lo in range(0, rows, PACK_CHUNK):
        k = np.right_shift(key[lo:lo + PACK_CHUNK], bits)
        distinct += int(np.count_nonzero(run_starts(k))) - int(k[0] == last)
        last = int(k[-1])
    mask = (1 << bits) - 1
    counts = np.asarray(n, dtype=np.int64)
    sums = np.empty(distinct, dtype=np.int64)
    at = 0
    for lo in range(0, rows, PACK_CHUNK):
        ps = key[lo:lo + PACK_CHUNK]
        k = np.right_shift(ps, bits)
        c = counts[np.bitwise_and(ps, mask)]
        starts = np.flatnonzero(run_starts(k))
        uk, us = k[starts], np.add.reduceat(c, starts)
        if at and uk[0] == key[at - 1]:  # a run continued from the previous chunk
            sums[at - 1] += us[0]
            uk, us = uk[1:], us[1:]
        key[at:at + uk.shape[0]] = uk  # (at <= lo: the chunk is read into k and c already)
        sums[at:at + us.shape[0]] = us
        at += uk.shape[0]
    return key[:distinct], sums


def run_starts(sk: np.ndarray) -> np.ndarray:
    """Boolean mask of the first row of each run of equal values of the sorted ``sk``."""
    flag = np.empty(sk.shape[0], dtype=bool)
    if sk.shape[0]:
        flag[0] = True
        np.not_equal(sk[1:], sk[:-1], out=flag[1:])
    return flag


def run_sums(v: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """Sums (int64) of ``v`` (int64, overwritten) over the runs starting where ``flag`` is set
    (``flag[0]`` set): the cumulative sum read at the run ends, then differenced (``reduceat``
    is several times slower on many short runs); no temporary of the rows' size."""
    if not v.shape[0]:
        return np.zeros(0, dtype=np.int64)
    np.cumsum(v, out=v)
    ends = np.flatnonzero(flag)  # run starts, then the last row of each run
    ends[:-1] = ends[1:]
    ends[:-1] -= 1
    ends[-1] = v.shape[0] - 1
    cs = v[ends]
    # the differences, written over the (no longer needed) run ends
    ends[0] = cs[0]
    np.subtract(cs[1:], cs[:-1], out=ends[1:])
    return ends


def presorted(key: np.ndarray) -> bool:
    """Whether ``key`` is nearly sorted at large scale: at most 1/32 descents between rows
    ``PRESORTED_STRIDE`` apart (a roll-up of a source in key order: disorder only within short
    stretches or a few long runs, which numpy's stable sort (timsort) merges in near-linear
    time, ~10x faster than on shuffled keys)."""
    sample = key[::PRESORTED_STRIDE]
    if sample.shape[0] < 2:
        return True
    return int(np.count_nonzero(sample[1:] < sample[:-1])) * 32 <= sample.shape[0]


def _sorted(key: np.ndarray, span: int, *, ordered: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
    """``(order, key[order])`` for an order that sorts ``key`` (which one among equal keys is
    left open: callers use only the sorted keys, each row's run, and one row of each run;
    every choice gives the same results).

    Nearly sorted keys (see :func:`presorted`) are sorted by numpy's timsort; others of at
    least ``SORT_POLARS_MIN_ROWS`` rows by Polars' multithreaded sort (~3x numpy's quicksort
    ``argsort`` on 2 cores): one sort of the packed ``key << bits | row`` when the row index
    fits beside the key in an int64 (distinct values: one deterministic result), else Polars'
    ``arg_sort``."""
    rows = key.shape[0]
    if rows >= SORT_POLARS_MIN_ROWS and (ordered or presorted(key)):
        order = np.argsort(key, kind="stable")
        return order, key[order]
    if rows < SORT_POLARS_MIN_ROWS:
        order = np.argsort(key, kind="quicksort")
        return order, key[order]
    if _packable(rows, span):
        bits = _row_bits(rows)
        ps = _packed_sort(key.astype(np.int64))  # (a copy: the caller's keys stay)
        sk = np.right_shift(ps, bits)
        return np.bitwise_and(ps, (1 << bits) - 1), sk
    order = pl.Series(key).arg_sort().to_numpy()
    return order, key[order]
