"""A String column's codes read from its Arrow views by the compiled kernel
(``core/engines/arrow_codes.py``, ``_arrow_codes.c``), and an Enum column's from its
dictionary indices, equal Polars' casts exactly: on random
columns with empty, long (past the 12 bytes a view holds inline) and non-ASCII strings, values
outside the raw values, nulls, several chunks and slices; the kernel refuses views that point
outside their buffers; the small frame's counts are the same with and without the kernel.
The audit's tests (audit7, below) shape the columns as Polars leaves them (slices, heads and
tails, filters, gathers, appends, empty chunks, 4-byte Enum indices, every integer width and
values past int64, null slots holding garbage, Enums in another order, Categorical), lay views
out as another producer may (garbage padding, equal strings stored twice), check the Arrow
layout Polars exports, and run the search end to end on such Adult frames."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
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


# --- audit7: adversarial shapes of the Arrow buffers the kernel reads ------------------------

# views at the inline/out-of-line boundary (12/13 bytes), equal prefixes differing only past
# the 4-byte prefix or in the last byte, NUL bytes, non-ASCII, and long (> 1 block) strings
AUDIT_WORDS = [*WORDS, "abcdefghijkL", "abcdXfghijklm", "abcdefghijklX", "\x00" * 13,
               "\x00" * 12, "ÿ" * 7, "🙂" * 4, "z" * 9000, "z" * 8999 + "y", "y" + "z" * 8999]

_OPS = st.lists(st.tuples(st.sampled_from(["slice", "head", "tail", "filter", "concat",
                                           "append", "rechunk", "gather"]),
                          st.integers(0, 40), st.integers(0, 40)), max_size=5)


def _shaped(col: pl.Series, ops: list[tuple[str, int, int]]) -> pl.Series:
    """``col`` through a sequence of Polars operations that leave sliced arrays (offsets),
    several chunks (also empty ones) or gathered views behind."""
    for op, a, b in ops:
        if op == "slice":
            col = col.slice(min(a, col.len()), b)
        elif op == "head":
            col = col.head(a)
        elif op == "tail":
            col = col.tail(a)
        elif op == "filter":
            col = col.filter(pl.Series([(i * 7 + a) % 3 != 0 for i in range(col.len())],
                                       dtype=pl.Boolean))
        elif op == "concat":
            col = pl.concat([col.slice(a % 5), col.slice(0, 0), col.tail(b)], rechunk=False)
        elif op == "append":
            col = col.clone()
            col.append(col.slice(min(a, col.len())))
        elif op == "gather":
            col = col.gather([(i * (a + 1)) % col.len() for i in range(col.len())]
                             ) if col.len() else col
        else:
            col = col.rechunk()
    return col


def _reference(values: list[str | None], leaves: list[str]) -> list[int] | None:
    """Each value's index among ``leaves`` by a Python dict: None when one is null or
    unknown (independent of Polars and of the kernel)."""
    index = {v: i for i, v in enumerate(leaves)}
    if any(v not in index for v in values):
        return None
    return [index[v] for v in values]


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(AUDIT_WORDS), min_size=1, unique=True),
       st.lists(st.sampled_from([*AUDIT_WORDS, None]), max_size=50), _OPS)
def test_shaped_string_columns_match_a_dict(leaves, values, ops):
    """Slices, heads/tails, filters, gathers, appends and concats of a String column (offsets,
    several and empty chunks, views out of line in several data buffers), against raw values
    that are themselves a slice in two chunks: the kernel's leaf codes, added codes and
    sorted ids equal a Python dict's, as the Polars path's do."""
    col = _shaped(pl.Series("c", values, dtype=pl.String), ops)
    seen = col.to_list()
    want = _reference(seen, leaves)
    whole = pl.Series([""] + leaves, dtype=pl.String)  # the raw values: a slice, two chunks
    leaves_s = pl.concat([whole.slice(1, len(leaves) // 2), whole.slice(1 + len(leaves) // 2)],
                         rechunk=False)
    assert leaves_s.to_list() == leaves
    for kernel in (True, False):
        got = arrow_codes.leaf_codes(col, leaves_s, kernel=kernel)
        assert (got is None) if want is None else (got.tolist() == want)
        key, counts = np.ones(col.len(), np.int64), np.zeros(len(leaves), np.int64)
        added = arrow_codes.add_leaf_codes(col, leaves_s, key, 9, counts, kernel=kernel)
        assert added is (want is not None)
        if want is not None:
            assert key.tolist() == [1 + 9 * w for w in want]
            assert counts.tolist() == [want.count(i) for i in range(len(leaves))]
        ids = arrow_codes.sorted_ids(col, kernel=kernel)
        if None in seen:
            assert ids is None
            continue
        order = sorted(set(seen), key=lambda v: v.encode())  # Polars: by the UTF-8 bytes
        assert ids[1].to_list() == order
        assert ids[0].tolist() == [order.index(v) for v in seen]


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.permutations(["a", "b", "c", "d" * 20, "é", ""]),
       st.lists(st.sampled_from(["a", "b", "c", "d" * 20, "é", "", None]), max_size=40), _OPS)
def test_shaped_enum_columns_read_their_indices(leaves, values, ops):
    """The same shapes of a column read as codes (the Enum of its raw values, in any order):
    the indices the kernel reads are each value's index among the raw values (a dict's);
    False with a null."""
    col = _shaped(pl.Series("c", values, dtype=leaf_enum(pl.Series(leaves))), ops)
    seen = col.cast(pl.String).to_list()
    want = _reference(seen, leaves)
    for kernel in (True, False):
        key, counts = np.ones(col.len(), np.int64), np.zeros(len(leaves), np.int64)
        added = arrow_codes.add_coded_indices(col, pl.Series(leaves), key, 4, counts,
                                              kernel=kernel)
        assert added is (want is not None)
        if want is not None:
            assert key.tolist() == [1 + 4 * w for w in want]
            assert counts.tolist() == [want.count(i) for i in range(len(leaves))]


@needs_kernel
def test_enum_in_another_order_and_categorical_are_not_read_as_codes():
    """An Enum of the raw values in another order, or a Categorical, has indices that are not
    raw codes: not read as such (False); the small frame casts them and counts them as the
    String column."""
    leaves = pl.Series(["c", "b", "a"])
    values = ["a", "b", "c", "a", "a"]
    for dtype in (pl.Enum(["a", "b", "c"]), pl.Categorical):
        col = pl.Series("q", values, dtype=dtype)
        key = np.zeros(5, np.int64)
        assert arrow_codes.add_coded_indices(col, leaves, key, 1, np.zeros(3, np.int64),
                                             kernel=True) is False
        assert key.tolist() == [0] * 5
        want = small_frame_counts(pl.DataFrame({"q": values}), ("q",), (), {"q": leaves})
        got = small_frame_counts(pl.DataFrame([col]), ("q",), (), {"q": leaves})
        assert got.keys.tolist() == want.keys.tolist() == [0, 1, 2]
        assert got.n.tolist() == want.n.tolist() == [1, 1, 3]


def _garbage_null_column() -> pl.Series:
    """A String column whose null row's view holds garbage (a buffer index and offset far
    outside), built from raw buffers as a foreign producer might hand it over."""
    import pyarrow as pa

    data = b"abcdefghijklmnopqrstuvwxyz"
    views = struct.pack("<i4sii", 20, data[:4], 0, 0) + struct.pack("<i4sii", 1 << 30,
                                                                   b"zzzz", 77, 1 << 30)
    arr = pa.Array.from_buffers(pa.string_view(), 3,
                                [pa.py_buffer(bytes([0b101])), pa.py_buffer(views + views[:16]),
                                 pa.py_buffer(data)], null_count=1)
    return pl.from_arrow(arr)


@needs_kernel
def test_a_null_slot_is_never_read():
    """A null whose slot holds garbage: every function declines (None/False) without
    reading it, the kernel refuses the chunk (TypeError, the callers' fallback); once the
    null is dropped or filled the codes are right."""
    col = _garbage_null_column()
    assert col.null_count() == 1 and col.len() == 3
    leaves = pl.Series(["abcdefghijklmnopqrst", "x"])
    for kernel in (True, False):
        assert arrow_codes.leaf_codes(col, leaves, kernel=kernel) is None
        assert arrow_codes.sorted_ids(col, kernel=kernel) is None
        assert arrow_codes.add_leaf_codes(col, leaves, np.zeros(3, np.int64), 1,
                                          np.zeros(2, np.int64), kernel=kernel) is False
        assert arrow_codes.leaf_codes(col.drop_nulls(), leaves, kernel=kernel).tolist() == [0, 0]
        assert arrow_codes.leaf_codes(col.fill_null("x"), leaves, kernel=kernel).tolist() == \
            [0, 1, 0]
        assert arrow_codes.leaf_codes(col.slice(2), leaves, kernel=kernel).tolist() == [0]
    with pytest.raises(TypeError, match="nulls"):
        arrow_codes._kernel.encode(col.__arrow_c_stream__(), np.empty(3, np.int64))


_INT_DTYPES = [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32,
               pl.UInt64, pl.Int128, pl.UInt128]


def _int_bounds(dtype: pl.DataType) -> tuple[int, int]:
    bits = {pl.Int8: 8, pl.Int16: 16, pl.Int32: 32, pl.Int64: 64, pl.Int128: 128}
    if dtype in bits:
        return -(1 << (bits[dtype] - 1)), (1 << (bits[dtype] - 1)) - 1
    ubits = {pl.UInt8: 8, pl.UInt16: 16, pl.UInt32: 32, pl.UInt64: 64, pl.UInt128: 128}
    return 0, (1 << ubits[dtype]) - 1


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_INT_DTYPES), st.lists(st.integers(0, 6) | st.none(), max_size=30),
       st.integers(-3, 3), _OPS)
def test_integer_columns_of_every_width(dtype, picks, shift, ops):
    """Integer columns of every width and sign, with their extreme values (past int64 for
    UInt64/Int128/UInt128), nulls, and the same shapes: add_integer_codes gives each value's
    table code (a dict's), or False for a null, a value outside the table or past int64 (never
    a wrapped value's code, never a NaN cast), with the kernel and without; the table of the
    column's range comes from integer_table exactly when the dtype has at most 63 bits."""
    import warnings

    from ldiv_polars.core.engines.raw_codes import integer_table

    lo, hi = _int_bounds(dtype)
    pool = [lo, lo + 1, hi - 1, hi, 0, 1, 2]
    pool = [min(max(v + shift, lo), hi) for v in pool]
    col = _shaped(pl.Series("c", [None if p is None else pool[p] for p in picks], dtype=dtype),
                  ops)
    seen = col.to_list()
    small = [v for v in seen if v is not None and -(1 << 63) <= v < (1 << 63)]
    low = min(small, default=0)
    span = min(max(small, default=0) - low + 1, 64)
    table = np.arange(span, dtype=np.int64)[::-1].copy()  # value low + i -> code span-1-i
    table[::3] = -1
    codes = {low + i: int(c) for i, c in enumerate(table) if c >= 0}
    want = None if any(v not in codes for v in seen) else [codes[v] for v in seen]
    for kernel in (True, False):
        key, counts = np.full(col.len(), 2, np.int64), np.zeros(span, np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NaN or overflow cast on the way
            added = arrow_codes.add_integer_codes(col, table, low, key, 5, counts,
                                                  kernel=kernel)
        assert added is (want is not None)
        if want is not None:
            assert key.tolist() == [2 + 5 * w for w in want]
            assert counts.tolist() == [want.count(i) for i in range(span)]
    found = integer_table(col, pl.Series([str(v) for v in pool]))
    if dtype in (pl.UInt64, pl.Int128, pl.UInt128) or None in seen or not seen:
        assert found is None


@needs_kernel
def test_zero_length_columns_and_empty_chunks():
    """A zero-length column (and one of empty chunks only) gives empty codes, no counts,
    True; a column whose first chunk is empty reads the rest."""
    leaves = pl.Series(["a", "b"])
    empty = pl.Series("c", [], dtype=pl.String)
    only_empty = pl.concat([empty, empty.clone()], rechunk=False)
    first_empty = pl.Series("c", ["b", "a"]).slice(2)
    first_empty.append(pl.Series("c", ["b" * 30, "a"]).slice(1))
    for kernel in (True, False):
        for col in (empty, only_empty):
            assert arrow_codes.leaf_codes(col, leaves, kernel=kernel).tolist() == []
            counts = np.zeros(2, np.int64)
            assert arrow_codes.add_leaf_codes(col, leaves, np.zeros(0, np.int64), 3, counts,
                                              kernel=kernel) is True
            assert counts.tolist() == [0, 0]
            ids, values = arrow_codes.sorted_ids(col, kernel=kernel)
            assert ids.tolist() == [] and values.to_list() == []
            coded = col.cast(leaf_enum(leaves))
            assert arrow_codes.add_coded_indices(coded, leaves, np.zeros(0, np.int64), 3,
                                                 counts, kernel=kernel) is True
            ints = pl.Series("i", [], dtype=pl.Int16)
            assert arrow_codes.add_integer_codes(ints, np.zeros(1, np.int64), 0,
                                                 np.zeros(0, np.int64), 3, counts,
                                                 kernel=kernel) is True
            assert counts.tolist() == [0, 0]
        assert arrow_codes.leaf_codes(first_empty, leaves, kernel=kernel).tolist() == [0]


@needs_kernel
def test_many_data_buffers_and_long_strings():
    """A column whose views point into several data buffers (thousands of distinct strings
    out of line, some of 100 kB), gathered out of order and sliced: codes equal a dict's."""
    rng = np.random.default_rng(7)
    leaves = [f"{i:05d}-" + "q" * (i % 40) for i in range(3000)] + ["w" * 100_000,
                                                                   "w" * 99_999 + "v"]
    picks = rng.integers(0, len(leaves), 20_000)
    col = pl.Series("c", [leaves[i] for i in picks]).slice(3, 19_990)
    col = pl.concat([col.gather(rng.permutation(col.len())), col.tail(5)], rechunk=False)
    want = _reference(col.to_list(), leaves)
    for kernel in (True, False):
        assert arrow_codes.leaf_codes(col, pl.Series(leaves), kernel=kernel).tolist() == want
    ids, values = arrow_codes.sorted_ids(col, kernel=True)
    assert values.to_list() == sorted(set(col.to_list()))
    assert values.gather(ids).to_list() == col.to_list()


def _shaped_adult(df: pl.DataFrame, qi: list[str], leaves: dict[str, pl.Series]
                  ) -> dict[str, pl.DataFrame]:
    """Adult frames whose columns are sliced, in several (and empty) chunks, filtered or
    gathered, one with a QI read as codes (the Enum of its raw values) and sliced after."""
    coded = df.with_columns(pl.col(qi[-1]).cast(leaf_enum(leaves[qi[-1]])))
    return {
        "slice": df.slice(1234, 20_000),
        "chunks": pl.concat([df.slice(0, 7000), df.slice(7000, 0),
                             df.slice(7000, 9000).filter(pl.col("age") % 2 == 0),
                             df.tail(5000)], rechunk=False),
        "gathered": df.sample(fraction=0.7, seed=3),
        "coded": pl.concat([coded.slice(17, 6000), coded.tail(9000)], rechunk=False),
    }


def test_search_on_shaped_adult_frames(adult_dir, monkeypatch):
    """End to end: sliced, multi-chunk, filtered and gathered Adult frames are counted by the
    small frame (the kernel's path) into exactly the counts of the same rows rebuilt from
    Python lists, with the kernel and without, and the search finds the same optimum."""
    from ldiv_polars.core.engines import polars as polars_engine
    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.models import DistinctLDiversity, KAnonymity
    from ldiv_polars.search import anonymize

    qi = ["sex", "age", "race", "marital-status", "education"]
    df = pl.read_csv(adult_dir / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    leaves = {q: hs[q].column(0) for q in qi}
    used = []
    real = polars_engine.small_frame_counts
    monkeypatch.setattr(polars_engine, "small_frame_counts",
                        lambda *a: used.append(real(*a)) or used[-1])
    for name, frame in _shaped_adult(df, qi, leaves).items():
        fresh = pl.DataFrame(frame.to_dict(as_series=False), schema=frame.schema)
        assert fresh.n_chunks() == 1 and fresh.equals(frame), name
        want = small_frame_counts(fresh, qi, ("occupation",), leaves)
        for kernel in (True, False):
            monkeypatch.setattr(arrow_codes, "KERNEL", kernel)
            got = small_frame_counts(frame, qi, ("occupation",), leaves)
            for field in ("class_keys", "sensitive_ids", "n"):
                assert getattr(got, field).tolist() == getattr(want, field).tolist(), name
            assert [c.tolist() for c in got.raw_counts] == [c.tolist() for c in want.raw_counts]
        results = []
        for data, kernel in ((frame, True), (frame, False), (fresh, True)):
            monkeypatch.setattr(arrow_codes, "KERNEL", kernel)
            used.clear()
            res = anonymize(data, qi, "occupation", hs, [KAnonymity(5), DistinctLDiversity(2)],
                            suppression=0.01, metric="aecs", verify=data is frame)
            assert used and used[0] is not None, name  # the small frame counted it
            results.append((res.levels, res.value, res.classes, res.suppressed_rows))
        assert results[0] == results[1] == results[2], name
        assert res.levels is not None


@needs_kernel
def test_kernel_checks_each_out_of_line_view_against_its_buffer():
    """An out-of-line view ending exactly at its buffer's end is read; one byte further, a
    buffer index past the variadic buffers (none at all, too), or a prefix that is not the
    first 4 of its bytes (two equal strings would get two numbers) is a ValueError."""
    kern = arrow_codes._kernel
    data = b"abcdefghijklmnopqrstuvwxyz"
    ids = np.empty(2, dtype=np.int64)

    def view(length: int, off: int, buf: int = 0, prefix: bytes | None = None) -> bytes:
        return struct.pack("<i4sii", length, prefix or data[off:off + 4], buf, off)

    assert kern.encode(_stream(view(13, 13) + view(13, 13), 2, data), ids) == [data[13:]]
    assert ids.tolist() == [0, 0]
    bad = (view(14, 13), view(13, 13, prefix=b"Nopq"), view(13, 0, buf=1))
    for v in bad:
        with pytest.raises(ValueError, match="outside its buffer"):
            kern.encode(_stream(view(13, 0) + v, 2, data), ids)
    with pytest.raises(ValueError, match="outside its buffer"):
        kern.encode(_stream(view(13, 0), 1), ids)  # no data buffer at all
    key, counts = np.zeros(2, np.int64), np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="prefix"):  # the seed's views are checked as well
        kern.add_codes(_stream(view(13, 0) * 2, 2, data),
                       _stream(view(13, 0, prefix=b"Abcd"), 1, data), key, 1, counts)


def test_polars_exports_the_layout_the_kernel_reads():
    """The kernel trusts the Arrow C data interface's layout of Polars' streams: a string
    view array's buffers are validity, views, the data buffers and last their sizes (int64),
    an Enum's a dictionary of unsigned indices, an integer column's its plain values. pyarrow
    imports the same streams by that layout and checks every view against the sizes (full
    validation): should a Polars upgrade export another layout, this fails first."""
    pa = pytest.importorskip("pyarrow")
    leaves = pl.Series(["abc", "abcdefghijklm" * 3, "é" * 40])
    col = pl.concat([pl.Series([f"{i:06d}-" + "v" * (i % 50) for i in range(20_000)]).slice(7),
                     leaves.gather([2, 0, 1] * 3000).tail(100)], rechunk=False)
    chunks = pa.chunked_array(col).chunks
    assert len(chunks) == 2 and chunks[0].offset == 7 and len(chunks[0].buffers()) > 3
    for chunk in chunks:
        assert chunk.type == pa.string_view()
        chunk.validate(full=True)
    enum = pl.Series(["abc"] * 300, dtype=leaf_enum(pl.Series([f"v{i}" for i in range(299)]
                                                             + ["abc"]))).slice(5)
    (chunk,) = pa.chunked_array(enum).chunks
    assert pa.types.is_dictionary(chunk.type) and chunk.type.index_type == pa.uint16()
    assert chunk.offset == 5 and set(chunk.indices.to_pylist()) == {299}
    for dtype, arrow in ((pl.Int8, pa.int8()), (pl.UInt32, pa.uint32()), (pl.Int64, pa.int64())):
        (chunk,) = pa.chunked_array(pl.Series([1, 2, 3], dtype=dtype).slice(1)).chunks
        assert chunk.type == arrow and chunk.offset == 1 and chunk.to_pylist() == [2, 3]


@needs_kernel
def test_four_byte_enum_indices():
    """An Enum of more than 65,536 raw values has 4-byte indices: read exactly, sliced and in
    two chunks, and past the counts refused."""
    leaves = pl.Series([f"r{i}" for i in range(70_000)])
    picks = [69_999, 0, 65_536, 256, 69_999, 12]
    col = pl.Series([f"r{i}" for i in picks], dtype=leaf_enum(leaves))
    col = pl.concat([col.slice(1, 2), col.tail(3)], rechunk=False)
    want = [0, 65_536, 256, 69_999, 12]
    for kernel in (True, False):
        key, counts = np.zeros(5, np.int64), np.zeros(70_000, np.int64)
        assert arrow_codes.add_coded_indices(col, leaves, key, 2, counts, kernel=kernel)
        assert key.tolist() == [2 * w for w in want]
        assert np.flatnonzero(counts).tolist() == sorted(want) and counts.sum() == 5
    with pytest.raises(ValueError, match="past the counts"):
        arrow_codes._kernel.add_indices(col.__arrow_c_stream__(), np.zeros(5, np.int64), 1,
                                        np.zeros(69_999, np.int64))


def _foreign_views(strings: list[bytes], garbage: bytes, nbuf: int) -> tuple[Any, int]:
    """An Arrow C stream of one string-view array as another producer may lay it out: the
    bytes past an inline string's end hold garbage (Polars zeroes them), and each out-of-line
    string is stored anew (equal strings at other offsets), round robin over ``nbuf`` data
    buffers after a garbage gap."""
    import pyarrow as pa

    bufs = [bytearray(garbage) for _ in range(nbuf)]
    views = bytearray()
    for i, s in enumerate(strings):
        if len(s) <= 12:
            pad = (garbage * 12)[i % max(1, len(garbage)):][:12 - len(s)]
            views += struct.pack("<i", len(s)) + s + pad.ljust(12 - len(s), b"\xaa")
        else:
            b = i % nbuf
            views += struct.pack("<i4sii", len(s), s[:4], b, len(bufs[b]))
            bufs[b] += s + garbage[:3]
    arr = pa.Array.from_buffers(pa.string_view(), len(strings),
                                [None, pa.py_buffer(bytes(views))]
                                + [pa.py_buffer(bytes(b)) for b in bufs])
    return pa.chunked_array([arr]).__arrow_c_stream__(), len(strings)


@needs_kernel
@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=30) | st.sampled_from([b"abcdefghijkl", b"abcdefghijklm",
                                                          b"", b"\x00", b"\x00" * 13]),
                max_size=40),
       st.binary(min_size=1, max_size=16), st.integers(1, 3))
def test_foreign_views_are_numbered_by_their_bytes(strings, garbage, nbuf):
    """Views laid out by another producer (garbage padding inline, equal strings stored
    twice, several data buffers): the kernel numbers the strings by their bytes alone, in
    order of first appearance, exactly as a dict of the bytes does."""
    stream, n = _foreign_views(strings, garbage, nbuf)
    ids = np.empty(n, np.int64)
    new = arrow_codes._kernel.encode(stream, ids)
    first: dict[bytes, int] = {}
    for s in strings:
        first.setdefault(s, len(first))
    assert new == list(first)
    assert ids.tolist() == [first[s] for s in strings]


# --- small9: several columns in one pass, the seed strings' table --------------------------

@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(AUDIT_WORDS), min_size=1, unique=True),
       st.lists(st.sampled_from(AUDIT_WORDS), min_size=1, max_size=40), _OPS,
       st.lists(st.integers(0, 30), min_size=1, max_size=40), st.booleans())
def test_add_columns_adds_what_each_column_adds(leaves, values, ops, numbers, unknown):
    """One pass over a String column, a column read as codes and an integer column (each
    shaped as Polars leaves it, so their chunks differ) adds to the key and counts exactly
    what the one-column functions add without the kernel; False as soon as one value has no
    code (a string that is not a leaf, an integer outside the table)."""
    from ldiv_polars.core.engines.raw_codes import integer_table

    strings = _shaped(pl.Series("c", [v for v in values if v in leaves] or [leaves[0]]), ops)
    n = strings.len()
    assume(n > 0)
    if unknown:
        strings = pl.concat([strings.head(n - 1), pl.Series("c", ["not a leaf"])],
                            rechunk=False)
    lv = pl.Series(leaves)
    coded = pl.Series("d", [leaves[i % len(leaves)] for i in range(n)]).cast(leaf_enum(lv))
    ints = pl.concat([pl.Series("t", [numbers[i % len(numbers)] for i in range(n // 2)],
                                pl.Int64),
                      pl.Series("t", [numbers[i % len(numbers)] for i in range(n // 2, n)],
                                pl.Int64)], rechunk=False)
    int_leaves = pl.Series([str(v) for v in sorted(set(numbers))])
    found = integer_table(ints, int_leaves)
    assert found is not None

    def columns(counts):
        return [("s", strings, lv, 7, counts[0]), ("d", coded, lv, 1000, counts[1]),
                ("t", ints, found, 100_000, counts[2])]

    got = []
    for kernel in (True, False):
        key = np.arange(n, dtype=np.int64)
        counts = [np.zeros(len(lv), np.int64), np.zeros(len(lv), np.int64),
                  np.zeros(len(int_leaves), np.int64)]
        if kernel:
            ok = arrow_codes.add_columns(columns(counts), key)
        else:
            ok = all(arrow_codes._ONE_COLUMN[kind](c, *(codes if kind == "t" else (codes,)),
                                                   key, place, cnt, kernel=False)
                     for kind, c, codes, place, cnt in columns(counts))
        got.append((ok, key.tolist(), [c.tolist() for c in counts]))
    assert got[0][0] is got[1][0] is (not unknown)
    if got[0][0]:
        assert got[0] == got[1]
        want = _reference(strings.to_list(), leaves)
        assert got[0][2][0] == [want.count(i) for i in range(len(leaves))]


@needs_kernel
@pytest.mark.parametrize("many", [False, True])
def test_seed_strings_differing_only_in_their_middle(many):
    """Leaves longer than 20 bytes that differ only in bytes 12 .. len - 9 (timestamps
    differing in their minutes: the same length, prefix, bytes 4 .. 11 and last 8 bytes),
    past the table's perfect placement (5,000 of them) or not, in several chunks: each row
    gets its own leaf's code; a string differing from a leaf in its middle only is no leaf."""
    count = 5000 if many else 60
    leaves = [f"2020-01-01T{h:02d}:{m:02d}:00.000000+0000" for h in range(24)
              for m in range(60)][:count] if not many else \
        [f"2020-01-01T{i // 60:03d}{i % 60:02d}:00.000000+0000" for i in range(count)]
    rng = np.random.default_rng(5)
    picks = rng.integers(0, count, 3000)
    col = pl.concat([pl.Series("c", [leaves[i] for i in picks[:1000]]),
                     pl.Series("c", [leaves[i] for i in picks[1000:]])], rechunk=False)
    key, counts = np.zeros(col.len(), np.int64), np.zeros(count, np.int64)
    assert arrow_codes.add_columns([("s", col, pl.Series(leaves), 1, counts)], key)
    assert key.tolist() == picks.tolist()
    assert counts.tolist() == np.bincount(picks, minlength=count).tolist()
    other = leaves[0][:14] + "99" + leaves[0][16:]
    assert other not in leaves and len(other) == len(leaves[0])
    bad = pl.concat([col, pl.Series("c", [other])], rechunk=False)
    assert arrow_codes.add_columns([("s", bad, pl.Series(leaves), 1, np.zeros(count, np.int64))],
                                   np.zeros(bad.len(), np.int64)) is False


@needs_kernel
def test_add_columns_refuses_what_add_codes_refuses():
    """The one-pass kernel checks what the one-column entry points check: columns of unequal
    lengths, a repeated seed string, an index past the counts (a ValueError), an unknown kind;
    a layout it does not read is a TypeError before anything is written, and add_columns then
    takes the one-column functions (an integer column past int64: their cast refuses it)."""
    kern = arrow_codes._kernel
    a, b = pl.Series(["x", "y"]), pl.Series(["x"])
    key = np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="differ in length"):
        kern.add_columns([("s", a.__arrow_c_stream__(), a.__arrow_c_stream__(), 1,
                           np.zeros(2, np.int64)),
                          ("s", b.__arrow_c_stream__(), a.__arrow_c_stream__(), 1,
                           np.zeros(2, np.int64))], key)
    with pytest.raises(ValueError, match="repeat"):
        kern.add_columns([("s", a.__arrow_c_stream__(), pl.Series(["x", "x"]).__arrow_c_stream__(),
                           1, np.zeros(2, np.int64))], key)
    with pytest.raises(ValueError, match="kind"):
        kern.add_columns([("q", a.__arrow_c_stream__(), 1, np.zeros(2, np.int64))], key)
    with pytest.raises(ValueError, match="past the counts"):
        kern.add_columns([("d", a.cast(leaf_enum(a)).__arrow_c_stream__(), 1,
                           np.zeros(1, np.int64))], key)
    with pytest.raises(TypeError):
        kern.add_columns([("s", a.__arrow_c_stream__(), a.__arrow_c_stream__(), 1,
                           np.zeros(2, np.int64)),
                          ("t", pl.Series([2**63, 1], dtype=pl.UInt64).__arrow_c_stream__(),
                           np.zeros(2, np.int64), 0, 1, np.zeros(2, np.int64))], key)
    assert key.tolist() == [0, 0]  # (nothing written before the TypeError)
    big = pl.Series([2**63, 1], dtype=pl.UInt64)
    assert arrow_codes.add_columns(
        [("s", a, a, 1, np.zeros(2, np.int64)),
         ("t", big, (np.zeros(2, np.int64), 0), 1, np.zeros(2, np.int64))], key) is False


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(AUDIT_WORDS), min_size=1, max_size=60), _OPS,
       st.lists(st.sampled_from(AUDIT_WORDS[:8]), min_size=1, max_size=60))
def test_sensitive_ids_from_the_same_pass(values, ops, qi_values):
    """The sensitive column numbered in the QI columns' pass (the kernel's "n" spec) gets
    exactly sorted_ids' ids and values without the kernel (Polars' sort and Enum cast), on
    shaped columns (slices, chunks, gathers) of short, long and non-ASCII strings; the QI
    column's key and counts are add_columns'."""
    sens = _shaped(pl.Series("s", values), ops)
    n = sens.len()
    assume(n > 0)
    qi = pl.concat([pl.Series("q", [qi_values[i % len(qi_values)] for i in range(n // 3)],
                              pl.String),
                    pl.Series("q", [qi_values[i % len(qi_values)] for i in range(n // 3, n)],
                              pl.String)], rechunk=False)
    leaves = pl.Series(AUDIT_WORDS[:8])
    key, counts = np.zeros(n, np.int64), np.zeros(8, np.int64)
    added, got = arrow_codes.add_columns_and_ids([("s", qi, leaves, 3, counts)], key, sens)
    want_ids, want_values = arrow_codes.sorted_ids(sens, kernel=False)
    assert added is True and got is not None
    assert got[0].tolist() == want_ids.tolist()
    assert got[1].to_list() == want_values.to_list() == sorted(set(sens.to_list()))
    want = _reference(qi.to_list(), AUDIT_WORDS[:8])
    assert key.tolist() == [3 * w for w in want]
    assert counts.tolist() == [want.count(i) for i in range(8)]


@needs_kernel
@pytest.mark.parametrize("distinct", [300, 3000, 5000])
def test_sensitive_ids_of_many_values(distinct):
    """Past the reseeding of small tables (256 strings), growing the table several times,
    and past SORT_LIMIT (4,096 distinct values: Polars numbers them), long strings differing
    in their middle: the ids are sorted_ids' without the kernel; a QI value that is no leaf
    makes the pass False with no ids."""
    rng = np.random.default_rng(distinct)
    words = [f"2020-01-01T{i // 60:03d}{i % 60:02d}:00.000000+0000" if i % 2 else f"v{i}"
             for i in range(distinct)]
    sens = pl.Series("s", [words[i] for i in rng.integers(0, distinct, 12_000)])
    qi = pl.Series("q", ["a"] * 12_000)
    key, counts = np.zeros(12_000, np.int64), np.zeros(1, np.int64)
    added, got = arrow_codes.add_columns_and_ids([("s", qi, pl.Series(["a"]), 1, counts)],
                                                 key, sens)
    want_ids, want_values = arrow_codes.sorted_ids(sens, kernel=False)
    assert added is True and got is not None
    assert got[0].tolist() == want_ids.tolist() and got[1].equals(want_values)
    assert counts.tolist() == [12_000]
    bad = pl.Series("q", ["a"] * 11_999 + ["b"])
    assert arrow_codes.add_columns_and_ids([("s", bad, pl.Series(["a"]), 1, counts)],
                                           np.zeros(12_000, np.int64), sens) == (False, None)
    assert arrow_codes.add_columns_and_ids([], key, pl.Series([1] * 12_000)) == (False, None)


@needs_kernel
@pytest.mark.parametrize("leaves", [["abcdefgh", "xyz", "abcdefghijklmnopqrstuvwxyz0"],
                                    ["abcdefgh", "abcdefgX", "abcdefghijklmnopqrstuvwxyz0"]])
def test_strings_sharing_a_leafs_length_and_prefix_are_not_that_leaf(leaves):
    """Leaves told apart by their length and 4-byte prefix alone (the table then hashes that
    word only) or not: a string of a leaf's length and prefix that differs later (in bytes
    4-11, in its last 8, in the middle of a long one) is no leaf, and each leaf gets its own
    code."""
    col = pl.Series("c", [leaves[i % len(leaves)] for i in range(50)])
    key, counts = np.zeros(50, np.int64), np.zeros(len(leaves), np.int64)
    assert arrow_codes.add_columns([("s", col, pl.Series(leaves), 1, counts)], key)
    assert key.tolist() == [i % len(leaves) for i in range(50)]
    for other in ("abcdefgY", "abcdYfgh", "abcdefghijklmnopqrstuvwxyz1",
                  "abcdefghijklmnoXqrstuvwxyz0", "abcdefghijkXmnopqrstuvwxyz0"):
        assert other not in leaves
        bad = pl.concat([col, pl.Series("c", [other])], rechunk=False)
        assert arrow_codes.add_columns(
            [("s", bad, pl.Series(leaves), 1, np.zeros(len(leaves), np.int64))],
            np.zeros(51, np.int64)) is False
