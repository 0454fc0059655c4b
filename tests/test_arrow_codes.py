"""A String column's codes read from its Arrow views by the compiled kernel
(``core/engines/arrow_codes.py``, ``_arrow_codes.c``), and an Enum column's from its
dictionary indices, equal Polars' casts exactly: on random
columns with empty, long (past the 12 bytes a view holds inline) and non-ASCII strings, values
outside the raw values, nulls, several chunks and slices; the kernel refuses views that point
outside their buffers; the small frame's counts are the same with and without the kernel."""

from __future__ import annotations

import struct

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.core.engines import arrow_codes
from ldiv_polars.core.engines.raw_codes import leaf_enum, raw_index
from ldiv_polars.core.engines.small_frame import small_frame_counts

needs_kernel = pytest.mark.skipif(arrow_codes._kernel is None,
                                  reason="the _arrow_codes kernel is not compiled")

# short and long (> 12 bytes: stored out of line), empty, non-ASCII, sharing prefixes (and
# lengths: told apart only past the view's 4-byte prefix)
WORDS = ["", "a", "b", "ab", "abcd", "abcdefghijkl", "abcdefghijklm", "abcdefghijklmn",
         "é", "éé", "日本語", "日本語のテキストです", "Married-civ-spouse", "Married-AF-spouse",
         "Married-civ-spousE", "x" * 40, "x" * 41, "a\x00b", "a\x00c", " a", "a ",
         "abcdX", "abcdY", "abcdefghijkZ", "abcdefghijklmnopqrstuvwxyZ"]


def _column(values: list[str | None], chunks: int, cut: int) -> pl.Series:
    """``values`` as a String Series of up to ``chunks`` chunks, then sliced from ``cut``."""
    if chunks > 1 and len(values) > 1:
        step = max(1, len(values) // chunks)
        parts = [pl.Series("c", values[i:i + step], dtype=pl.String)
                 for i in range(0, len(values), step)]
        col = pl.concat(parts, rechunk=False)
    else:
        col = pl.Series("c", values, dtype=pl.String)
    return col.slice(min(cut, col.len()))


def _cast(col: pl.Series, leaves: pl.Series) -> list[int | None]:
    """Each row's code by Polars' Enum cast (raw_index), None where null or unknown."""
    return pl.DataFrame(col).select(
        raw_index("c", leaves, pl.Schema({"c": pl.String}), strict=False)
        .cast(pl.Int64)).to_series().to_list()


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=len(WORDS), unique=True),
       st.lists(st.sampled_from([*WORDS, None]), max_size=60),
       st.integers(1, 4), st.integers(0, 5))
def test_leaf_codes_are_the_enum_cast(leaves, values, chunks, cut):
    """The kernel's codes are the Enum cast's, row by row; None exactly when the cast has a
    null (a null row, or a value that is not a raw value), with the kernel and without; the
    same codes added to a key (times a place) and counted per raw value by add_leaf_codes."""
    leaves_s = pl.Series(leaves, dtype=pl.String)
    col = _column(values, chunks, cut)
    want = _cast(col, leaves_s)
    start = np.arange(col.len(), dtype=np.int64) * 1000  # a key the codes are added to
    for kernel in (True, False):
        got = arrow_codes.leaf_codes(col, leaves_s, kernel=kernel)
        key, counts = start.copy(), np.zeros(len(leaves), dtype=np.int64)
        added = arrow_codes.add_leaf_codes(col, leaves_s, key, 7, counts, kernel=kernel)
        if any(w is None for w in want):
            assert got is None and added is False
        else:
            assert got is not None and got.dtype == np.int64 and got.tolist() == want
            assert added is True
            assert key.tolist() == [s + 7 * w for s, w in zip(start.tolist(), want)]
            assert counts.tolist() == [want.count(i) for i in range(len(leaves))]


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*WORDS, None]), max_size=60), st.integers(1, 4),
       st.integers(0, 5))
def test_sorted_ids_are_the_sorted_values_enum(values, chunks, cut):
    """The sensitive ids: the distinct values as ``unique().sort()`` gives them, each row's id
    its value's index there (the physical value of the Enum cast); None with a null."""
    col = _column(values, chunks, cut)
    for kernel in (True, False):
        got = arrow_codes.sorted_ids(col, kernel=kernel)
        if col.null_count():
            assert got is None
            continue
        assert got is not None
        ids, distinct = got
        want_values = col.unique().sort()
        assert distinct.dtype == pl.String and distinct.to_list() == want_values.to_list()
        assert ids.tolist() == col.cast(pl.Enum(want_values)).to_physical().to_list()


@needs_kernel
def test_many_distinct_values_are_sorted_by_polars(monkeypatch):
    """Past SORT_LIMIT distinct values the ids come from Polars' sort: the same arrays."""
    monkeypatch.setattr(arrow_codes, "SORT_LIMIT", 10)
    col = pl.Series("c", [f"v{i % 37:03d}é" for i in range(200)])
    ids, distinct = arrow_codes.sorted_ids(col, kernel=True)
    assert distinct.to_list() == sorted(set(col.to_list()))
    assert ids.tolist() == [distinct.to_list().index(v) for v in col.to_list()]


def test_not_a_string_column():
    """Another dtype, or raw values that make no Enum, is not this path's."""
    assert arrow_codes.leaf_codes(pl.Series([1, 2]), pl.Series(["1", "2"])) is None
    assert arrow_codes.leaf_codes(pl.Series(["a"]), pl.Series(["a", "a"])) is None
    assert arrow_codes.sorted_ids(pl.Series([1.5])) is None
    assert arrow_codes.leaf_codes(pl.Series([], dtype=pl.String), pl.Series(["a"])).tolist() \
        == []


def _stream(views: bytes, n: int, data: bytes | None = None, offset: int = 0):
    """An Arrow C stream of one string-view array built from raw buffers (pyarrow, tests
    only: the library reads Polars' streams without it)."""
    import pyarrow as pa

    bufs = [None, pa.py_buffer(views)] + ([pa.py_buffer(data)] if data is not None else [])
    arr = pa.Array.from_buffers(pa.string_view(), n, bufs, offset=offset)
    return pa.chunked_array([arr]).__arrow_c_stream__()


@needs_kernel
def test_kernel_refuses_views_outside_their_buffers():
    """A view whose buffer index or offset points past its buffers, or a negative length,
    is a ValueError: nothing is read out of bounds. A repeated seed string, or a stream
    already consumed, too; a stream of another layout is a TypeError."""
    kern = arrow_codes._kernel
    ids = np.empty(1, dtype=np.int64)
    data = b"abcdefghijklmnopqrstuvwxyz"

    def long_view(length: int, buf: int, off: int) -> bytes:
        return struct.pack("<i4sii", length, data[:4], buf, off)

    assert kern.encode(_stream(long_view(20, 0, 0), 1, data), ids) == [data[:20]]
    for view in (long_view(20, 1, 0), long_view(20, 0, 10), long_view(20, 0, -1),
                 struct.pack("<i12s", -1, b"")):
        with pytest.raises(ValueError, match="outside its buffer"):
            kern.encode(_stream(view, 1, data), ids)
    inline = struct.pack("<i12s", 1, b"a")
    with pytest.raises(ValueError, match="repeat"):
        kern.encode(_stream(inline, 1), ids, _stream(inline * 2, 2))
    with pytest.raises(ValueError):  # ids too short or not int64
        kern.encode(_stream(inline, 1), np.empty(1, dtype=np.int32))
    with pytest.raises(TypeError, match="not a column"):  # (the callers then cast instead)
        kern.encode(pl.Series([1]).__arrow_c_stream__(), ids)
    stream = _stream(inline, 1)
    kern.encode(stream, ids)
    with pytest.raises(TypeError, match="consumed"):
        kern.encode(stream, ids)
    key = np.zeros(1, dtype=np.int64)
    with pytest.raises(ValueError):  # fewer counts than seed strings
        kern.add_codes(_stream(inline, 1), _stream(inline, 1), key, 1, np.zeros(0, np.int64))
    counts = np.zeros(1, dtype=np.int64)
    assert kern.add_codes(_stream(inline, 1), _stream(inline, 1), key, 5, counts) is True
    assert key.tolist() == [0] and counts.tolist() == [1]
    other = struct.pack("<i12s", 1, b"b")
    assert kern.add_codes(_stream(other, 1), _stream(inline, 1), key, 5, counts) is False


@needs_kernel
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 300), st.integers(0, 2**31 - 1))
def test_small_frame_counts_with_and_without_the_kernel(rows, seed):
    """The small frame's encoded counts are the same arrays whichever path encodes the
    strings and reads the coded columns (and the Polars group-by's, tests/test_engines.py)."""
    rng = np.random.default_rng(seed)
    words = [w for w in WORDS if w]
    df = pl.DataFrame({"q0": rng.choice(words[:6], rows).tolist(),
                       "q1": rng.choice(words[6:], rows).tolist(),
                       "s": rng.choice(WORDS, rows).tolist()},
                      schema={"q0": pl.String, "q1": pl.String, "s": pl.String})
    leaves = {"q0": pl.Series(words[:6][::-1]), "q1": pl.Series(words[6:])}
    if seed % 2:  # q0 read as codes (the Enum of its raw values, as read_coded reads a CSV)
        df = df.with_columns(pl.col("q0").cast(leaf_enum(leaves["q0"])))
    for sens in ((), ("s",)):
        out = []
        for kernel in (True, False):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(arrow_codes, "KERNEL", kernel)
                out.append(small_frame_counts(df, ("q0", "q1"), sens, leaves))
        a, b = out
        assert a is not None and b is not None
        for name in ("keys", "class_keys", "sensitive_ids", "n"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or x.tolist() == y.tolist()
        assert [c.tolist() for c in a.raw_counts] == [c.tolist() for c in b.raw_counts]
        if sens:
            assert a.sensitive_values.to_list() == b.sensitive_values.to_list()


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.lists(st.integers(0, 299) | st.none(), max_size=60),
       st.integers(1, 4), st.integers(0, 5))
def test_coded_indices_are_the_physical_values(n_leaves, picks, chunks, cut):
    """A column read as the Enum of its raw values (1- or 2-byte indices, as many raw
    values ask for; several chunks, slices) adds its physical values, exactly, with the kernel and without;
    False with a null or another dtype."""
    leaves = pl.Series([f"v{i}" for i in range(n_leaves)])
    enum = leaf_enum(leaves)
    values = [None if p is None else f"v{p % n_leaves}" for p in picks]
    col = _column(values, chunks, cut).cast(enum)
    want = col.to_physical().to_list()
    start = np.arange(col.len(), dtype=np.int64) * 1000
    for kernel in (True, False):
        key, counts = start.copy(), np.zeros(n_leaves, dtype=np.int64)
        added = arrow_codes.add_coded_indices(col, leaves, key, 3, counts, kernel=kernel)
        if None in want:
            assert added is False
            continue
        assert added is True
        assert key.tolist() == [s + 3 * w for s, w in zip(start.tolist(), want)]
        assert counts.tolist() == [want.count(i) for i in range(n_leaves)]
    assert arrow_codes.add_coded_indices(col.cast(pl.String), leaves, start.copy(), 3,
                                         np.zeros(n_leaves, dtype=np.int64)) is False


@needs_kernel
def test_kernel_refuses_indices_past_the_counts():
    """An index past the counts is a ValueError; a String column is not indices (a
    TypeError)."""
    kern = arrow_codes._kernel
    leaves = pl.Series(["a", "b", "c"])
    col = pl.Series(["c", "b"], dtype=leaf_enum(leaves))
    key = np.zeros(2, dtype=np.int64)
    with pytest.raises(ValueError, match="past the counts"):
        kern.add_indices(col.__arrow_c_stream__(), key, 1, np.zeros(2, dtype=np.int64))
    with pytest.raises(TypeError, match="not a column"):
        kern.add_indices(leaves.__arrow_c_stream__(), key, 1, np.zeros(3, dtype=np.int64))
    counts = np.zeros(3, dtype=np.int64)
    kern.add_indices(col.__arrow_c_stream__(), key, 4, counts)
    assert key.tolist() == [8, 4] and counts.tolist() == [0, 1, 1]


@needs_kernel
def test_a_layout_the_kernel_does_not_read_falls_back_to_polars(monkeypatch):
    """Should Polars export another Arrow layout (the kernel's TypeError, raised before
    anything is written), each function gives the Polars path's arrays."""
    class Refusing:
        def __getattr__(self, name):
            def refuse(*args):
                raise TypeError("not a column of string views or dictionary indices")
            return refuse

    leaves = pl.Series(["a", "b", "c"])
    col = pl.Series(["c", "a", "c", "b"])
    want_codes = arrow_codes.leaf_codes(col, leaves, kernel=False).tolist()
    want_ids, want_values = arrow_codes.sorted_ids(col, kernel=False)
    monkeypatch.setattr(arrow_codes, "_kernel", Refusing())
    assert arrow_codes.leaf_codes(col, leaves, kernel=True).tolist() == want_codes
    ids, values = arrow_codes.sorted_ids(col, kernel=True)
    assert ids.tolist() == want_ids.tolist() and values.to_list() == want_values.to_list()
    for c, add in ((col, arrow_codes.add_leaf_codes),
                   (col.cast(leaf_enum(leaves)), arrow_codes.add_coded_indices)):
        key, counts = np.zeros(4, dtype=np.int64), np.zeros(3, dtype=np.int64)
        assert add(c, leaves, key, 2, counts, kernel=True) is True
        assert key.tolist() == [2 * w for w in want_codes]
        assert counts.tolist() == [want_codes.count(i) for i in range(3)]


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=50),
       st.sets(st.integers(0, 45), max_size=20),
       st.sampled_from([pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32]),
       st.booleans(), st.integers(1, 3), st.integers(0, 3))
def test_integer_codes_are_the_table_lookup(values, numbers, dtype, negative, chunks, cut):
    """An integer column's codes added by the kernel are integer_index's (the Enum cast of
    each value's string, tests/test_engines.py), with the kernel and without, on every
    integer width, several chunks and slices; False where a value has no raw value."""
    from ldiv_polars.core.engines.raw_codes import integer_index, integer_table

    if negative and dtype in (pl.Int8, pl.Int16, pl.Int32, pl.Int64):
        values = [v - 20 for v in values]
        numbers = {v - 20 for v in numbers}
    leaves = pl.Series(sorted({str(v) for v in numbers} | {"03", "+3", "x"}))
    parts = [pl.Series("c", values[i::chunks], dtype=dtype) for i in range(chunks)]
    col = pl.concat(parts, rechunk=False).slice(min(cut, len(values) - 1))
    found = integer_table(col, leaves)
    assert found is not None
    want = integer_index(col, leaves).tolist()
    for kernel in (True, False):
        key, counts = np.full(col.len(), 5, dtype=np.int64), np.zeros(len(leaves), np.int64)
        added = arrow_codes.add_integer_codes(col, *found, key, 3, counts, kernel=kernel)
        assert added is (min(want) >= 0)
        if added:
            assert key.tolist() == [5 + 3 * w for w in want]
            assert counts.tolist() == [want.count(i) for i in range(len(leaves))]
    table, low = found
    short = table[:-1] if table.shape[0] > 1 else table[:0]  # the largest value falls outside
    for kernel in (True, False):
        assert arrow_codes.add_integer_codes(
            col, short, low, np.zeros(col.len(), np.int64), 1,
            np.zeros(len(leaves), np.int64), kernel=kernel) is False


@needs_kernel
def test_the_limit_counts_new_strings_over_every_chunk():
    """encode's limit holds over the whole column, not per chunk: two chunks of three new
    strings each pass a limit of 6 and not one of 4."""
    col = pl.concat([pl.Series(["a", "b", "c"]), pl.Series(["d", "e", "f"])], rechunk=False)
    assert col.n_chunks() == 2
    ids = np.empty(6, dtype=np.int64)
    assert arrow_codes._kernel.encode(col.__arrow_c_stream__(), ids, None, 6) == \
        [b"a", b"b", b"c", b"d", b"e", b"f"]
    assert ids.tolist() == [0, 1, 2, 3, 4, 5]
    assert arrow_codes._kernel.encode(col.__arrow_c_stream__(), ids, None, 4) is None
