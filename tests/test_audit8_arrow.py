"""Audit of session 16's one-pass kernel (issue 23, branch audit8): the leaves' table looked
up by the first word alone when the leaves differ in length and prefix (``w0only``), rows
that are near misses of a leaf (the same length and 4-byte prefix, differing in bytes 4..11,
in the last 8 bytes or in the middle of a long string, or in a non-ASCII byte), the sensitive
column numbered in the same pass on such near misses, the int32 narrowing of the keys at its
boundary, and :func:`add_columns_and_ids`' contract without the kernel (``ids`` None when a
QI value is no leaf). Each expected value comes from a Python dict / ``sorted`` / numpy."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ldiv_polars.core.engines import arrow_codes
from ldiv_polars.core.engines.base import key_runs
from ldiv_polars.core.engines.small_frame import _narrow

needs_kernel = pytest.mark.skipif(arrow_codes._kernel is None,
                                  reason="the _arrow_codes kernel is not compiled")


def _near(word: str, at: int, char: str) -> str:
    """``word`` with its character ``at`` (taken modulo its length) replaced by ``char``."""
    if not word:
        return char
    at %= len(word)
    return word[:at] + char + word[at + 1:]


# leaves distinct in length + first 4 bytes (the kernel then hashes that word alone)
W0_LEAVES = ["abcdefgh", "abcdefghijkl", "abcdefghijklmnop", "abcd" + "m" * 30,
             "wxyz", "wxy", "éèàç", "日本語の" + "x" * 10, "0123456789012345678901234567"]


def _rows(leaves: list[str], picks: list[tuple[int, int, int, bool]]) -> list[str]:
    """Rows drawn from ``leaves``, some changed in one character past the prefix (near misses
    sharing the leaf's length and prefix when the character has the same UTF-8 width)."""
    out = []
    for leaf_at, at, char, miss in picks:
        word = leaves[leaf_at % len(leaves)]
        out.append(_near(word, 4 + at, "QZ"[char % 2]) if miss and len(word) > 4 else word)
    return out


_PICKS = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 60), st.integers(0, 1),
                            st.booleans()), min_size=1, max_size=60)


def _chunked(values: list[str], cut: int) -> pl.Series:
    """``values`` in two chunks, with an extra first row sliced away (an offset)."""
    head = pl.Series("c", ["garbage-before-the-slice"] + values[:cut], pl.String)
    tail = pl.Series("c", values[cut:], pl.String)
    return pl.concat([head, tail], rechunk=False).slice(1)


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(W0_LEAVES), min_size=1, unique=True), _PICKS,
       st.integers(0, 60))
def test_near_misses_of_leaves_told_apart_by_their_first_word(leaves, picks, cut):
    """With leaves told apart by length and prefix, a row equal to a leaf in those but not in
    a later byte is no leaf (False); otherwise every row gets its leaf's index (a dict's)."""
    rows = _rows(leaves, picks)
    col = _chunked(rows, cut % (len(rows) + 1))
    assert col.to_list() == rows
    key, counts = np.zeros(len(rows), np.int64), np.zeros(len(leaves), np.int64)
    ok = arrow_codes.add_columns([("s", col, pl.Series(leaves), 1, counts)], key)
    code = {w: i for i, w in enumerate(leaves)}
    assert ok is all(r in code for r in rows)
    if ok:
        assert key.tolist() == [code[r] for r in rows]
        assert counts.tolist() == np.bincount(key, minlength=len(leaves)).tolist()


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(W0_LEAVES), min_size=1, unique=True), _PICKS,
       st.integers(0, 60))
def test_sensitive_near_misses_are_numbered_apart(leaves, picks, cut):
    """The sensitive column's numbering in the QI pass (kind 'n') gives strings equal in
    length and prefix but not in their bytes their own ids: those of ``sorted(set(...))``."""
    rows = _rows(leaves, picks)
    sens = _chunked(rows, cut % (len(rows) + 1))
    qi = pl.Series("q", ["a"] * len(rows))
    key, counts = np.zeros(len(rows), np.int64), np.zeros(1, np.int64)
    added, got = arrow_codes.add_columns_and_ids([("s", qi, pl.Series(["a"]), 1, counts)],
                                                 key, sens)
    values = sorted(set(rows), key=lambda s: s.encode())
    assert added is True and got is not None
    assert got[1].to_list() == values
    assert got[0].tolist() == [values.index(r) for r in rows]


@pytest.mark.parametrize("kernel", [False, True])
def test_ids_are_none_when_a_qi_value_is_no_leaf(kernel):
    """add_columns_and_ids promises ``(False, None)``'s ids None when ``added`` is False, with
    or without the kernel (the fallback returned the sensitive ids anyway: a caller reading
    them would number a frame whose key is only partly added)."""
    if kernel and arrow_codes._kernel is None:
        pytest.skip("the _arrow_codes kernel is not compiled")
    sens = pl.Series("s", ["x", "y", "x"])
    bad = pl.Series("q", ["a", "b", "a"])
    got = arrow_codes.add_columns_and_ids(
        [("s", bad, pl.Series(["a"]), 1, np.zeros(1, np.int64))], np.zeros(3, np.int64), sens,
        kernel=kernel)
    assert got == (False, None)
    good = pl.Series("q", ["a", "a", "a"])
    added, (ids, values) = arrow_codes.add_columns_and_ids(
        [("s", good, pl.Series(["a"]), 1, np.zeros(1, np.int64))], np.zeros(3, np.int64),
        sens, kernel=kernel)
    assert added is True and ids.tolist() == [0, 1, 0] and values.to_list() == ["x", "y"]


@pytest.mark.parametrize("radix, top, narrowed", [
    ([2**31], 2**31 - 1, True), ([2**16, 2**15], 2**31 - 1, True),
    ([2**31 + 1], 2**31, False), ([2**16, 2**15 + 1], 2**31, False),
    ([3, 0, 5], 14, True)])
def test_keys_narrowed_to_int32_only_when_every_key_fits(radix, top, narrowed):
    """The int32 sort's boundary: a radix of product 2**31 holds keys up to 2**31 - 1 (int32's
    largest), narrowed; one more and the keys stay int64; the grouping is the same either way
    (key_runs of the int64 keys, an independent np.unique)."""
    keys = np.array([top, 0, top, 1, top - 1], np.int64)
    got = _narrow(keys, radix)
    assert (got.dtype == np.int32) is narrowed
    uniq, n = key_runs(got)
    want_u, want_n = np.unique(keys, return_counts=True)
    assert uniq.dtype == np.int64 and uniq.tolist() == want_u.tolist()
    assert n.tolist() == want_n.tolist()
