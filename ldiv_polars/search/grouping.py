"""Grouping of integer keys in numpy: dense ranks, one representative row and the summed counts
of each distinct key, by counting over the key span or by one sort. Every branch gives the same
arrays; which one runs is a matter of time and memory only (:class:`~ldiv_polars.search.tuning.
SearchTuning`, "grouping"). Sorts: numpy's timsort on nearly sorted keys (a roll-up of a source in
key order), Polars' multithreaded sort of ``key << bits | row`` otherwise, numpy's in-place sort of
very large keys given away.

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

from ldiv_polars.search.tuning import TUNING


def count_limit(rows: int) -> int:
    """Largest key span that :func:`dense_rank` and :func:`group_keys` group by counting (a
    boolean presence array of ``span`` entries, O(rows + span)) rather than by one sort
    (O(rows log rows)) for keys of ``rows`` rows (``TUNING.count_*``).

    >>> count_limit(1000), count_limit(0), count_limit(10**12) == TUNING.count_max_cells
    (16000, 4096, True)
    """
    t = TUNING
    return max(min(t.count_rows_factor * rows, t.count_max_cells), t.count_min_cells)


def bincount_limit(rows: int) -> int:
    """Largest key span that numpy sums by one weighted ``bincount`` (a float64 array of
    ``span`` entries, O(rows + span)) for keys of ``rows`` rows (``TUNING.bincount_*``);
    beyond it, keys are densified first (counting or one sort)."""
    t = TUNING
    return max(min(t.bincount_rows_factor * rows, t.bincount_max_cells), t.bincount_min_cells)


def dense_rank(key: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Monotone dense rank of ``key`` (ints in ``[0, span)``): ``(inv, uniq)``, ``uniq`` the
    distinct keys in increasing order (int64) and ``inv`` (int64) each row's index in it, so
    ``uniq[inv] == key``. ``key`` is not modified."""
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
    """Group rows by ``key`` (ints in ``[0, span)``): ``(rep, sums)``, one representative row
    index per distinct key in increasing key order (int64) and the summed ``n`` of each
    (int64). Counting when the span is within :func:`count_limit`, one sort otherwise.

    >>> rep, sums = group_keys(np.array([7, 3, 7]), 10, np.array([1, 2, 3]))
    >>> sorted(rep.tolist()) in ([0, 1], [1, 2]), sums.tolist()
    (True, [2, 4])
    """
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
    summed ``n`` (int64) of each.

    Counted when the span is within :func:`count_limit`, unless the keys are nearly sorted
    (:func:`presorted`) and their span exceeds ``TUNING.presorted_count_factor x rows`` (their
    sort is near-linear and touches less fresh memory than the span's arrays). ``ordered``:
    the keys are a roll-up of rows in key order (runs of sorted keys, whatever
    :func:`presorted` finds), merged by numpy's timsort (``TUNING.ordered_sort_*`` rows).
    ``consume``: ``key`` (a writeable int64 array) is the caller's to give, and is then
    overwritten: the sort packs, sorts and sums in its buffer (:func:`_group_sum_packed`, or
    :func:`_group_sum_inplace` from ``TUNING.inplace_sort_min_rows`` rows, which returns the
    distinct keys in the buffer's front)."""
    t = TUNING
    rows = key.shape[0]
    ordered = ordered and t.ordered_sort_min_rows <= rows <= t.ordered_sort_max_rows
    sorted_ = ordered or (rows >= t.sort_polars_min_rows and presorted(key))
    if span <= count_limit(rows) and (span <= t.presorted_count_factor * rows
                                      or rows < t.sort_polars_min_rows or not sorted_):
        inv, uniq = dense_rank(key, span)
        # float64 sums are exact below 2**53 rows
        return uniq, np.bincount(inv, weights=n, minlength=uniq.shape[0]).astype(np.int64)
    if (consume and not sorted_ and rows >= t.sort_polars_min_rows and key.dtype == np.int64
            and key.flags.writeable and _packable(rows, span)):
        if rows >= t.inplace_sort_min_rows:
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


def _pack(buf: np.ndarray) -> int:
    """``key << bits | row`` in ``buf`` (int64 keys, overwritten) chunk by chunk (distinct
    values: any sort of them has one deterministic order); returns ``bits``."""
    rows = buf.shape[0]
    bits = _row_bits(rows)
    np.left_shift(buf, bits, out=buf)
    chunk = TUNING.pack_chunk
    for lo in range(0, rows, chunk):
        hi = min(lo + chunk, rows)
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
    the distinct keys are allocated."""
    rows = key.shape[0]
    bits = _row_bits(rows)
    ps = _packed_sort(key)
    sk = np.right_shift(ps, bits, out=key)
    flag = run_starts(sk)
    uniq = sk[flag]
    mask = (1 << bits) - 1
    counts = np.asarray(n, dtype=np.int64)
    chunk = TUNING.pack_chunk
    for lo in range(0, rows, chunk):  # the sorted keys' buffer takes the sorted counts
        hi = min(lo + chunk, rows)
        np.take(counts, np.bitwise_and(ps[lo:hi], mask), out=sk[lo:hi])
    del ps
    return uniq, run_sums(sk, flag)


def _group_sum_inplace(key: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`group_sum` by numpy's in-place sort of ``key << bits | row`` in ``key``'s own
    buffer, then two reads of the runs chunk by chunk (``TUNING.pack_chunk`` rows): one counts
    them, the other writes the distinct keys to the buffer's front (never past the rows already
    read) and their sums to an array of exactly that size. Besides ``key`` (whose front the
    distinct keys are returned in), only the sums and chunk temporaries are allocated."""
    rows = key.shape[0]
    bits = _pack(key)
    key.sort()
    chunk = TUNING.pack_chunk
    last = -1
    distinct = 0
    for lo in range(0, rows, chunk):
        k = np.right_shift(key[lo:lo + chunk], bits)
        distinct += int(np.count_nonzero(run_starts(k))) - int(k[0] == last)
        last = int(k[-1])
    mask = (1 << bits) - 1
    counts = np.asarray(n, dtype=np.int64)
    sums = np.empty(distinct, dtype=np.int64)
    at = 0
    for lo in range(0, rows, chunk):
        ps = key[lo:lo + chunk]
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
    ``TUNING.presorted_stride`` apart (a roll-up of a source in key order: disorder only
    within short stretches or a few long runs, which numpy's stable sort (timsort) merges in
    near-linear time)."""
    sample = key[::TUNING.presorted_stride]
    if sample.shape[0] < 2:
        return True
    return int(np.count_nonzero(sample[1:] < sample[:-1])) * 32 <= sample.shape[0]


def _sorted(key: np.ndarray, span: int, *, ordered: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
    """``(order, key[order])`` for an order that sorts ``key`` (which one among equal keys is
    left open: callers use only the sorted keys, each row's run, and one row of each run;
    every choice gives the same results).

    Nearly sorted keys (see :func:`presorted`) are sorted by numpy's timsort; others of at
    least ``TUNING.sort_polars_min_rows`` rows by Polars' multithreaded sort: one sort of the
    packed ``key << bits | row`` when the row index fits beside the key in an int64 (distinct
    values: one deterministic result), else Polars' ``arg_sort``."""
    rows = key.shape[0]
    polars_min = TUNING.sort_polars_min_rows
    if rows >= polars_min and (ordered or presorted(key)):
        order = np.argsort(key, kind="stable")
        return order, key[order]
    if rows < polars_min:
        order = np.argsort(key, kind="quicksort")
        return order, key[order]
    if _packable(rows, span):
        bits = _row_bits(rows)
        ps = _packed_sort(key.astype(np.int64))  # (a copy: the caller's keys stay)
        sk = np.right_shift(ps, bits)
        return np.bitwise_and(ps, (1 << bits) - 1), sk
    order = pl.Series(key).arg_sort().to_numpy()
    return order, key[order]
