"""The roll-ups' counting kernels (:mod:`ldiv_polars.search.counting`): the compiled kernel
against its numpy twin and against plain numpy (``np.unique`` and ``np.add.at``) on random
inputs, its typed errors on bad arguments (nothing written out of bounds, the kept scratch
arrays left zeroed), threads, and whole searches that give the same results either way."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.search import counting
from ldiv_polars.search.counting import lookup_count, lookup_sum, use_kernel
from ldiv_polars.search.tuning import TUNING, tuned

needs_kernel = pytest.mark.skipif(
    not counting.COMPILED, reason="the compiled kernel was not built (no C compiler at install)")


@pytest.mark.parametrize("module", ["ldiv_polars.search._counting", "ldiv_polars.models._emd",
                                    "ldiv_polars.models._floors",
                                    "ldiv_polars.core.engines._arrow_codes"])
def test_kernel_built_where_required(module):
    """CI (with a C compiler) sets LDIV_POLARS_REQUIRE_KERNEL: a build that silently fell back
    to numpy there fails here instead of only running slower (and instead of the kernels'
    parity tests comparing the numpy twin with itself). Every optional extension of
    setup.py."""
    import importlib

    if os.environ.get("LDIV_POLARS_REQUIRE_KERNEL"):
        try:
            importlib.import_module(module)
        except ImportError as e:  # pragma: no cover - a broken build
            pytest.fail(f"the optional C extension {module} was not built: {e}")


@st.composite
def digit_problems(draw):
    """Random code columns (uint16/int32/int64), lookups (int64 holding their places, or
    int64/uint16 scaled by them) or scales, sensitive ids, weights."""
    rows = draw(st.integers(0, 3000))
    q = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cols, tables, scale = [], [], []
    place = draw(st.integers(1, 5))  # the extra's range: ids below the first place
    extra = rng.integers(0, place, rows).astype(np.int32) if place > 1 else None
    for _ in range(q):
        card = int(rng.integers(1, 40))
        dtype = draw(st.sampled_from([np.uint16, np.int32, np.int64]))
        cols.append(rng.integers(0, card, rows).astype(dtype))
        if draw(st.booleans()):
            out_card = int(rng.integers(1, card + 1))
            table = rng.integers(0, out_card, card).astype(np.int64)
            if draw(st.booleans()):  # a lookup holding its place (scale 1), or scaled by it
                tables.append(table * place)
                scale.append(1)
            else:  # (an unscaled lookup as int64 or uint16, as the QI groups' are)
                tables.append(table.astype(draw(st.sampled_from([np.int64, np.uint16]))))
                scale.append(place)
            place *= out_card
        else:
            tables.append(None)
            scale.append(place)
            place *= card
    weights = rng.integers(1, draw(st.sampled_from([2, 1000, 2**40])), rows).astype(np.int64)
    return cols, tables, scale, extra, weights, place


def _reference(cols, tables, scale, extra, weights):
    key = np.zeros(weights.shape[0], dtype=np.int64) if extra is None else \
        extra.astype(np.int64)
    for c, t, s in zip(cols, tables, scale):
        key += (t[c.astype(np.int64)].astype(np.int64) if t is not None else
                c.astype(np.int64)) * s
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.zeros(uniq.shape[0], dtype=np.int64)
    np.add.at(sums, inv.ravel(), weights)
    return key, uniq, sums


@settings(max_examples=150, deadline=None)
@given(digit_problems())
def test_kernel_and_numpy_equal_plain_numpy(problem):
    cols, tables, scale, extra, weights, span = problem
    key, uniq, sums = _reference(cols, tables, scale, extra, weights)
    total = int(weights.sum())
    for flag in ([False, True] if counting.COMPILED else [False]):
        with use_kernel(flag):
            got = lookup_sum(cols, tables, scale, weights.shape[0], extra)
            assert got.dtype == np.int64 and np.array_equal(got, key), flag
            k, s = lookup_count(cols, tables, scale, weights, span=span, total=total,
                                extra=extra)
            assert k.dtype == s.dtype == np.int64
            assert np.array_equal(k, uniq) and np.array_equal(s, sums), flag
            if total < 2**31:  # int32 weights (a snapshot's narrow counts)
                k, s = lookup_count(cols, tables, scale, weights.astype(np.int32), span=span,
                                    total=total, extra=extra)
                assert np.array_equal(k, uniq) and np.array_equal(s, sums), flag
            if flag:  # the bitmap's bits set per row (no flag bytes)
                with tuned(flag_max_cells=0):
                    k, s = lookup_count(cols, tables, scale, weights, span=span, total=total,
                                        extra=extra)
                assert np.array_equal(k, uniq) and np.array_equal(s, sums), "no flags"
            if flag:  # the key space counted window by window (several passes)
                with tuned(window_cells=max(1, span // 3)):
                    k, s = lookup_count(cols, tables, scale, weights, span=span, total=total,
                                        extra=extra)
                assert np.array_equal(k, uniq) and np.array_equal(s, sums), "windows"
    if counting.COMPILED:  # the kept arrays are left zeroed for the next roll-up
        for name in ("counts32", "counts64", "bitmap", "flags"):
            kept = getattr(counting._local, name, None)
            assert kept is None or not kept.any()


@needs_kernel
@settings(max_examples=100, deadline=None)
@given(digit_problems(), st.integers(1, 7))
def test_kernel_split_read_out_equals_plain_numpy(problem, ns):
    """``lookup_count_split`` (keys read as ``class * ns + id`` in the kernel's read-out)
    against plain numpy's distinct keys split by ``//`` and ``%``: ids, counts, class index
    per row, and per class its key and summed count; the scratch arrays left zeroed."""
    cols, tables, scale, extra, weights, span = problem
    _, uniq, sums = _reference(cols, tables, scale, extra, weights)
    total = int(weights.sum())
    with use_kernel(True):
        got = counting.lookup_count_split(cols, tables, scale, weights, span=span, total=total,
                                          ns=ns, extra=extra)
        assert got is not None
        s, n, rc, ck, cs = got
        cls_keys, row_class = np.unique(uniq // ns, return_inverse=True)
        assert s.dtype == np.int32 and np.array_equal(s, uniq % ns)
        assert np.array_equal(n, sums) and np.array_equal(rc, row_class.ravel())
        assert np.array_equal(ck, cls_keys)
        assert np.array_equal(cs, np.bincount(row_class.ravel(), weights=sums,
                                              minlength=cls_keys.shape[0]).astype(np.int64)
                              if sums.shape[0] else np.zeros(0, np.int64))
        with tuned(window_cells=max(1, span - 1)):  # several windows: the caller splits
            assert span == 1 or counting.lookup_count_split(
                cols, tables, scale, weights, span=span, total=total, ns=ns,
                extra=extra) is None
    with use_kernel(False):
        assert counting.lookup_count_split(cols, tables, scale, weights, span=span,
                                           total=total, ns=ns, extra=extra) is None
    for name in ("counts32", "counts64", "bitmap"):
        kept = getattr(counting._local, name, None)
        assert kept is None or not kept.any()
    flags = getattr(counting._local, "flags", None)
    assert flags is None or not flags.any()


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(digit_problems(), st.sampled_from([0, 1, 12, 25, 40]), st.booleans())
def test_kernel_sort_sum_equals_plain_numpy(problem, shift, narrow):
    """``lookup_sort_sum`` (the keys packed above their weights and radix-sorted in the
    kernel) against plain numpy's distinct keys and sums, on key spans of one to several
    radix passes (a leading column's digits placed ``shift`` bits above the problem's span);
    None where a key and a weight do not fit in 64 bits together, or without the kernel."""
    cols, tables, scale, extra, weights, span = problem
    lead = np.arange(weights.shape[0], dtype=np.int64) % 3
    cols, tables = [lead, *cols], [None, *tables]
    scale, span = [span << shift, *scale], 3 * (span << shift)
    _, uniq, sums = _reference(cols, tables, scale, extra, weights)
    total = int(weights.sum())
    if narrow and total < 2**31:
        weights = weights.astype(np.int32)
    with use_kernel(True):
        got = counting.lookup_sort_sum(cols, tables, scale, weights, span=span, total=total,
                                       extra=extra)
    if (span - 1).bit_length() + total.bit_length() > 64:
        assert got is None
        return
    assert got is not None
    k, s = got
    assert k.dtype == s.dtype == np.int64
    assert np.array_equal(k, uniq) and np.array_equal(s, sums)
    with use_kernel(False):
        assert counting.lookup_sort_sum(cols, tables, scale, weights, span=span,
                                        total=total, extra=extra) is None
    with tuned(radix_max_rows=weights.shape[0] - 1):
        assert counting.lookup_sort_sum(cols, tables, scale, weights, span=span,
                                        total=total, extra=extra) is None


@needs_kernel
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_kernel_read_out_refuses_too_little_room_and_zeroes_the_cells(dtype):
    """``read_cells`` given fewer output slots than occupied cells raises ValueError before it
    writes any, and still zeroes the counts and the bitmap (they are kept scratch)."""
    from ldiv_polars.search import _counting

    counts, bits = np.zeros(200, dtype), np.zeros(4, np.uint64)
    col = np.array([3, 150, 3, 64], np.int32)
    assert _counting.count_keys((col,), (None,), (1,), None, np.ones(4, np.int64), counts,
                                bits) == 3
    keys, sums = np.full(2, -1, np.int64), np.full(2, -1, np.int64)
    with pytest.raises(ValueError, match="more occupied cells"):
        _counting.read_cells(counts, bits, keys, sums)
    assert not counts.any() and not bits.any()
    assert keys.tolist() == sums.tolist() == [-1, -1]
    assert _counting.count_keys((col,), (None,), (1,), None, np.ones(4, np.int64), counts,
                                bits) == 3
    keys, sums = np.empty(3, np.int64), np.empty(3, np.int64)
    assert _counting.read_cells(counts, bits, keys, sums, 10) == 3
    assert keys.tolist() == [13, 74, 160] and sums.tolist() == [2, 1, 1]
    assert not counts.any() and not bits.any()


@needs_kernel
def test_kernel_sort_sum_rejects_bad_codes_keys_and_weights():
    """A code outside its lookup or a key outside the span raises IndexError, a weight that
    does not fit beside the key ValueError, a span too wide for the weights' bits ValueError
    (the caller's check, repeated in the kernel)."""
    from ldiv_polars.search import _counting

    table = np.array([0, 1, 2], dtype=np.int64)
    col = np.array([0, 1, 2, 1], np.int32)
    w = np.ones(4, dtype=np.int64)
    out = (np.empty(4, np.int64), np.empty(4, np.int64))
    with pytest.raises(IndexError, match="outside its lookup"):
        _counting.sort_sum((np.array([0, 3], np.int32),), (table,), (1,), None,
                           np.ones(2, np.int64), 3, 4, *out)
    with pytest.raises(IndexError, match="outside the sorted span"):
        _counting.sort_sum((col,), (table,), (1,), None, w, 2, 4, *out)
    with pytest.raises(ValueError, match="weight"):
        _counting.sort_sum((col,), (table,), (1,), None, np.array([1, 16, 1, 1]), 3, 4, *out)
    with pytest.raises(ValueError, match="weight"):
        _counting.sort_sum((col,), (table,), (1,), None, np.array([1, -1, 1, 1]), 3, 4, *out)
    with pytest.raises(ValueError, match="<= 64"):
        _counting.sort_sum((col,), (table,), (1,), None, w, 2**40, 30, *out)
    assert _counting.sort_sum((col,), (table,), (1,), None, w, 3, 4, *out) == 3
    for narrow in (np.uint16, np.int64):  # (a uint16 lookup is checked by its own length)
        with pytest.raises(IndexError, match="outside its lookup"):
            _counting.lookup_sum((np.array([0, 3], np.uint16),), (table.astype(narrow),),
                                 (1,), None, np.empty(2, np.int64))
    assert out[0][:3].tolist() == [0, 1, 2] and out[1][:3].tolist() == [1, 2, 1]


@needs_kernel
@pytest.mark.parametrize("span", [1, 64, 65, 1 << 20, TUNING.scratch_max_cells + 1])
def test_kernel_counts_sparse_and_edge_spans(span):
    """One key at each end of the span (bitmap words' edges, the kept and fresh arrays)."""
    col = np.array([0, span - 1, span - 1, 0, span // 2], dtype=np.int64)
    w = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    with use_kernel(True):
        k, s = lookup_count((col,), (None,), (1,), w, span=span, total=15)
    want = {}
    for c, x in zip(col.tolist(), w.tolist()):
        want[c] = want.get(c, 0) + x
    assert k.tolist() == sorted(want) and s.tolist() == [want[c] for c in sorted(want)]


@needs_kernel
def test_kernel_int64_counts_past_int32():
    """Weights summing past 2**31 are counted in int64 (``total`` says so)."""
    col = np.zeros(3, dtype=np.int32)
    w = np.full(3, 2**31 - 1, dtype=np.int64)
    with use_kernel(True):
        k, s = lookup_count((col,), (None,), (1,), w, span=4, total=3 * (2**31 - 1))
    assert k.tolist() == [0] and s.tolist() == [3 * (2**31 - 1)]


@needs_kernel
def test_kernel_rejects_out_of_range_codes_and_keys():
    """A code outside its lookup, or a key outside the span, raises IndexError (the kernel
    checks before it writes) and the kept arrays stay zeroed; wrong dtypes raise TypeError."""
    from ldiv_polars.search import _counting

    w = np.ones(4, dtype=np.int64)
    table = np.array([0, 1, 2], dtype=np.int64)
    with use_kernel(True):
        with pytest.raises(IndexError, match="outside its lookup"):
            lookup_count((np.array([0, 1, 3, 2], np.int32),), (table,), (1,), w, span=3,
                         total=4)
        with pytest.raises(IndexError, match="outside its lookup"):
            lookup_sum((np.array([0, -1, 1, 2], np.int64),), (table,), (1,), 4)
        with pytest.raises(IndexError, match="outside the counted span"):
            lookup_count((np.array([0, 1, 2, 3], np.int32),), (None,), (1,), w, span=3,
                         total=4)
        with pytest.raises(IndexError, match="outside the counted span"):
            lookup_count((np.array([0, -1, 2, 1], np.int64),), (None,), (1,), w, span=3,
                         total=4)
    assert not counting._local.counts32.any() and not counting._local.bitmap.any()
    counts, bits = np.zeros(8, np.int32), np.zeros(1, np.uint64)
    with pytest.raises(TypeError):  # float codes
        _counting.count_keys((np.zeros(4),), (None,), (1,), None, w, counts, bits)
    with pytest.raises(TypeError):  # float weights
        _counting.count_keys((np.zeros(4, np.int32),), (None,), (1,), None,
                             np.ones(4), counts, bits)
    with pytest.raises(TypeError):  # codes in the other byte order
        _counting.count_keys((np.zeros(4, np.dtype(np.int32).newbyteorder()),), (None,), (1,),
                             None, w, counts, bits)
    with pytest.raises(TypeError):  # int16 codes (2-byte codes are uint16)
        _counting.count_keys((np.zeros(4, np.int16),), (None,), (1,), None, w, counts, bits)
    with pytest.raises(TypeError):  # a bitmap too short for the counts
        _counting.count_keys((np.zeros(4, np.int32),), (None,), (1,), None, w,
                             np.zeros(65, np.int32), bits)
    with pytest.raises(ValueError):  # columns of different lengths
        _counting.count_keys((np.zeros(4, np.int32), np.zeros(3, np.int32)), (None, None),
                             (1, 1), None, w, counts, bits)
    with pytest.raises(ValueError):  # read-out with too little room
        _counting.count_keys((np.arange(4, dtype=np.int32),), (None,), (1,), None, w, counts,
                             bits)
        _counting.read_cells(counts, bits, np.empty(2, np.int64), np.empty(2, np.int64))
    with pytest.raises(ValueError):  # a window past the span
        _counting.count_keys((np.zeros(4, np.int32),), (None,), (1,), None, w, counts, bits,
                             4, 10)
    with pytest.raises(IndexError, match="outside the counted span"):  # checked in a window
        _counting.count_keys((np.array([0, 1, 12, 2], np.int32),), (None,), (1,), None, w,
                             counts, np.zeros(1, np.uint64), 2, 12)
    with pytest.raises(ValueError):  # read-only output
        out = np.empty(4, np.int64)
        out.flags.writeable = False
        _counting.lookup_sum((np.zeros(4, np.int32),), (None,), (1,), None, out)


@needs_kernel
@settings(max_examples=25, deadline=None)
@given(span=st.integers(1, 300), rows=st.integers(0, 6000), run=st.integers(1, 60),
       sort_from=st.floats(0, 1), zeros=st.booleans(), wide=st.booleans(), seed=st.integers(0, 99))
def test_kernel_counts_runs_of_keys(span, rows, run, sort_from, zeros, wide, seed):
    """Narrow key spaces whose blocks are runs of equal keys (a source in key order: counted
    into partial histograms) or scattered, in one call, give the plain bincount's cells and
    sums, also with zero weights (a cell a zero weight falls in is still occupied), in int32
    and int64 counts."""
    rng = np.random.default_rng(seed)
    keys = np.repeat(rng.integers(0, span, rows // run + 1), run)[:rows]
    cut = int(rows * sort_from)
    keys[:cut] = np.sort(keys[:cut])  # runs first, then (often) scattered runs
    w = rng.integers(0 if zeros else 1, 4, rows).astype(np.int32 if wide else np.int64)
    total = 2**31 if wide else max(int(w.sum()), 1)
    with use_kernel(True):
        k, s = lookup_count((keys.astype(np.int32),), (None,), (1,), w, span=span, total=total)
    want = {}
    for c, x in zip(keys.tolist(), w.tolist()):
        want[c] = want.get(c, 0) + x
    assert k.tolist() == sorted(want) and s.tolist() == [want[c] for c in sorted(want)]


def _raw_count(keys, w, span, flags):
    """The kernel's count of ``keys`` (one int32 column, no table) with or without flag
    bytes, read out: ``(keys, sums)`` lists."""
    from ldiv_polars.search import _counting

    counts = np.zeros(span, np.int32 if w.dtype == np.int32 else np.int64)
    bits = np.zeros((span + 63) // 64, np.uint64)
    occupied = _counting.count_keys((keys,), (None,), (1,), None, w, counts, bits, 0, -1, flags)
    k, s = np.empty(occupied, np.int64), np.empty(occupied, np.int64)
    _counting.read_cells(counts, bits, k, s)
    assert not counts.any() and not bits.any()
    return k.tolist(), s.tolist()


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(span=st.integers(1, 5000), rows=st.integers(0, 4000), run=st.integers(1, 30),
       zeros=st.booleans(), narrow=st.booleans(), seed=st.integers(0, 99))
def test_kernel_flags_equal_the_bitmap(span, rows, run, zeros, narrow, seed):
    """Counting with flag bytes (each counted cell flagged by a plain store, the flags gathered
    into the bitmap eight at a time at the end) gives the plain count's cells and sums, as
    setting each bit does: runs of keys, scattered keys, spans not a multiple of 64 or 8, zero
    weights (their cell still occupied); the flags are left zeroed."""
    rng = np.random.default_rng(seed)
    keys = np.repeat(rng.integers(0, span, rows // run + 1), run)[:rows].astype(np.int32)
    keys[: rows // 2] = np.sort(keys[: rows // 2])
    w = rng.integers(0 if zeros else 1, 4, rows).astype(np.int32 if narrow else np.int64)
    want = {}
    for c, x in zip(keys.tolist(), w.tolist()):
        want[c] = want.get(c, 0) + x
    flags = np.zeros((span + 63) // 64 * 64, np.uint8)
    expected = (sorted(want), [want[c] for c in sorted(want)])
    assert _raw_count(keys, w, span, flags) == expected
    assert not flags.any()
    assert _raw_count(keys, w, span, None) == expected


@needs_kernel
def test_kernel_flags_checked_and_zeroed_after_a_bad_key():
    """Flag bytes of the wrong size or type are refused before anything is counted; after a
    key outside the span, the flags are zeroed again (and the kept ones of
    :func:`~ldiv_polars.search.counting.lookup_count`)."""
    from ldiv_polars.search import _counting

    keys = np.array([0, 5, 5, 70, 71, 1, 80], np.int32)
    w = np.ones(7, np.int64)
    counts, bits = np.zeros(80, np.int64), np.zeros(2, np.uint64)
    flags = np.zeros(128, np.uint8)
    with pytest.raises(IndexError, match="outside the counted span"):
        _counting.count_keys((keys,), (None,), (1,), None, w, counts, bits, 0, -1, flags)
    assert not flags.any()
    with pytest.raises(ValueError, match="flags"):  # a byte per cell rounded up to 64
        _counting.count_keys((keys[:6],), (None,), (1,), None, w[:6], counts, bits, 0, -1,
                             np.zeros(80, np.uint8))
    with pytest.raises(TypeError, match="flags"):
        _counting.count_keys((keys[:6],), (None,), (1,), None, w[:6], counts, bits, 0, -1,
                             np.zeros(128, np.int32))
    with use_kernel(True):
        with pytest.raises(IndexError, match="outside the counted span"):
            lookup_count((keys,), (None,), (1,), w, span=80, total=7)
    assert not counting._local.flags.any() and not counting._local.counts32.any()


@needs_kernel
def test_kernel_rejects_a_bad_key_in_a_run():
    """A key outside the span inside a block of runs (the partial histograms) raises
    IndexError, and the kept arrays are left zeroed."""
    keys = np.zeros(5000, np.int32)
    keys[4000:] = 7
    keys[4500] = 8  # span 8
    with use_kernel(True):
        with pytest.raises(IndexError, match="outside the counted span"):
            lookup_count((keys,), (None,), (1,), np.ones(5000, np.int64), span=8, total=5000)
        k, s = lookup_count((keys[:4500],), (None,), (1,), np.ones(4500, np.int64), span=8,
                            total=4500)
    assert k.tolist() == [0, 7] and s.tolist() == [4000, 500]
    assert not counting._local.counts32.any() and not counting._local.bitmap.any()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 5000), dtype=st.sampled_from([np.int64, np.int32]),
       big=st.booleans(), stride=st.sampled_from([1, 2]), seed=st.integers(0, 2**32 - 1))
def test_masked_sum_equals_a_python_sum(n, dtype, big, stride, seed):
    """masked_sum (the rows of the selected classes) with and without the kernel equals an
    exact Python sum of the selected values: scattered masks, int32 values, strided views,
    sums past int32."""
    rng = np.random.default_rng(seed)
    high = 2**40 if big and dtype == np.int64 else 2**20
    values = rng.integers(0, high, n * stride).astype(dtype)[::stride]
    mask = (rng.random(n * stride) < rng.random())[::stride]
    want = sum(int(v) for v, m in zip(values.tolist(), mask.tolist()) if m)
    for flag in (True, False):
        with use_kernel(flag):
            got = counting.masked_sum(values, mask)
        assert got == want and type(got) is int


@needs_kernel
def test_kernel_masked_sum_rejects_bad_arguments():
    """The kernel's masked_sum refuses values that are not int64, a mask of another length
    or of wider items, and non-contiguous arrays (a typed error, nothing read past them)."""
    k = counting._kernel
    v = np.arange(8, dtype=np.int64)
    m = np.ones(8, dtype=bool)
    assert k.masked_sum(v, m) == 28
    for bad in [(v.astype(np.int32), m), (v, m[:7]), (v.astype(np.float64), m),
                (v, np.ones(1, dtype=np.int64))]:
        with pytest.raises(TypeError):
            k.masked_sum(*bad)
    with pytest.raises((TypeError, ValueError, BufferError)):
        k.masked_sum(v[::2], m[:4])


@needs_kernel
def test_kernel_threads_keep_their_own_scratch():
    """The kernel runs without the GIL: each thread counts into its own kept arrays."""
    rng = np.random.default_rng(5)
    problems = []
    for _ in range(4):
        cols = [rng.integers(0, 300, 20_000).astype(np.int32) for _ in range(2)]
        w = rng.integers(1, 9, 20_000).astype(np.int64)
        problems.append((cols, w, _reference(cols, [None, None], [300, 1], None, w)))
    errors: list[str] = []

    def work(i: int) -> None:
        cols, w, (_, uniq, sums) = problems[i]
        for _ in range(30):
            k, s = lookup_count(cols, [None, None], [300, 1], w, span=90_000, total=int(w.sum()))
            if not (np.array_equal(k, uniq) and np.array_equal(s, sums)):
                errors.append(f"thread {i}")
                return

    with use_kernel(True):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors


@needs_kernel
@pytest.mark.parametrize("sensitive, model", [(None, "k"), ("occupation", "distinct")])
def test_searches_equal_with_and_without_kernel(adult_dir, sensitive, model):
    """A whole search (Adult, 2% suppression) gives the same minimal nodes, optimum, metric
    value, class count and suppressed rows with the kernel and with numpy."""
    import polars as pl

    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.models import DistinctLDiversity, KAnonymity
    from ldiv_polars.search import anonymize

    qi = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    models = [KAnonymity(5)] if model == "k" else [DistinctLDiversity(3)]
    results = []
    for flag in (False, True):
        with use_kernel(flag):
            r = anonymize(df, qi, sensitive, hs, models, suppression=0.02, metric="loss")
        d = r.to_dict()
        for volatile in ("elapsed_s", "checked", "rollups", "evaluations"):
            d.pop(volatile, None)
        results.append((d, r.output.collect()))
    _assert_same(results[0][0], results[1][0])
    assert results[0][1].equals(results[1][1])


def _assert_same(a, b, path=""):
    """Equal, floats to 1e-12 relative (the KL metric's float sums vary in their last bit from
    run to run, kernel or not)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12), path
    else:
        assert a == b, path
