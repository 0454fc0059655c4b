"""The key-grouping primitives of :mod:`ldiv_polars.search.grouping` and the class-code
decoding of :mod:`ldiv_polars.search.snapshot` against plain numpy (``np.unique``, ``//`` and
``%``), on every sort branch: numpy's quicksort (short arrays), timsort (nearly sorted keys),
Polars' sort of packed keys, Polars' ``arg_sort`` (keys too wide to pack), and counting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars.search.grouping as grouping
from ldiv_polars.search.grouping import count_limit, dense_rank, group_keys, group_sum
from ldiv_polars.search.snapshot import ClassCodes
from ldiv_polars.search.tuning import TUNING, tuned


def _check(key: np.ndarray, span: int, n: np.ndarray) -> None:
    want, want_inv = np.unique(key, return_inverse=True)
    want_inv = want_inv.ravel()
    want_sums = np.zeros(want.shape[0], dtype=np.int64)
    np.add.at(want_sums, want_inv, n)
    n_before = n.copy()
    inv, uniq = dense_rank(key, span)
    assert inv.dtype == np.int64 and np.array_equal(inv, want_inv)
    assert np.array_equal(uniq, want)
    rep, sums = group_keys(key, span, n)
    assert np.array_equal(key[rep], want) and np.array_equal(sums, want_sums)
    assert sums.dtype == np.int64
    uniq2, sums2 = group_sum(key, span, n)
    assert np.array_equal(uniq2, want) and np.array_equal(sums2, want_sums)
    assert sums2.dtype == np.int64
    # "ordered" (a roll-up of a source in key order) is a hint: the same result if it is wrong
    uniq3, sums3 = group_sum(key, span, n, ordered=True)
    assert np.array_equal(uniq3, want) and np.array_equal(sums3, want_sums)
    # "consume": the key's buffer is given away (packed, sorted and summed in place: by the
    # engine's sort, or by numpy's in the buffer itself, summed chunk by chunk)
    uniq4, sums4 = group_sum(key.copy(), span, n, consume=True)
    assert np.array_equal(uniq4, want) and np.array_equal(sums4, want_sums)
    with tuned(inplace_sort_min_rows=0, pack_chunk=7):
        uniq5, sums5 = group_sum(key.copy(), span, n, consume=True)
    assert np.array_equal(uniq5, want) and np.array_equal(sums5, want_sums)
    assert sums5.dtype == np.int64
    assert np.array_equal(n, n_before)  # the counts are not overwritten


@pytest.fixture(params=["numpy", "polars"])
def sort_branch(request, monkeypatch):
    """Every sort branch: numpy's argsort below ``sort_polars_min_rows``, else (at 0) Polars or
    timsort, whichever the keys call for."""
    monkeypatch.setattr(TUNING, "sort_polars_min_rows",
                        1 << 40 if request.param == "numpy" else 0)
    return request.param


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 64, 65, 1000, 5000, 70_000])
@pytest.mark.parametrize("span", [1, 7, 50_000, 10**9, 2**31 + 5, 2**62])
@pytest.mark.parametrize("order", ["shuffled", "sorted", "runs", "equal"])
def test_grouping_matches_unique(sort_branch, rows, span, order):
    rng = np.random.default_rng(rows * 7 + span % 1000)
    if order == "equal":
        key = np.full(rows, span - 1, dtype=np.int64)
    else:
        key = rng.integers(0, span, rows, dtype=np.int64)
        if rows > 3:
            key[: rows // 3] = key[rows // 3: 2 * (rows // 3)]  # repeated keys
        if order == "sorted":
            key.sort()
        elif order == "runs":  # a roll-up of a sorted source: sorted runs, merged
            key = np.concatenate([np.sort(key[: rows // 2]), np.sort(key[rows // 2:])])
    # counts are rows of a table: their sums stay below 2**53 (float64 bincount sums)
    n = rng.integers(1, 1 << (40 if rows <= 5000 else 30), rows, dtype=np.int64)
    _check(key, span, n)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2**62 - 1), max_size=300), st.sampled_from([0, 1 << 40]),
       st.integers(0, 3))
def test_grouping_matches_unique_hypothesis(values, polars_min, presort):
    with tuned(sort_polars_min_rows=polars_min):
        key = np.array(values, dtype=np.int64)
        if presort == 1:
            key.sort()
        span = int(key.max()) + 1 if key.shape[0] else 1
        if presort == 2:  # narrow keys: the same values, by counting or packed
            key %= 1000
            span = 1000
        n = np.arange(1, key.shape[0] + 1, dtype=np.int64)
        _check(key, span, n)


def test_counting_is_capped_in_cells(monkeypatch):
    # whatever the rows, at most count_max_cells cells are counted; beyond, the same groups by
    # one sort
    assert grouping.count_limit(10**9) == TUNING.count_max_cells
    assert grouping.count_limit(1000) == 16_000
    assert grouping.bincount_limit(10**9) == TUNING.bincount_max_cells
    assert grouping.bincount_limit(1000) == 4000
    monkeypatch.setattr(TUNING, "count_max_cells", 4096)
    rng = np.random.default_rng(5)
    key = rng.integers(0, 50_000, 5000, dtype=np.int64)  # 10x the rows: counted without cap
    assert grouping.count_limit(5000) == 4096
    _check(key, 50_000, rng.integers(1, 1000, 5000, dtype=np.int64))


def test_consumed_keys_are_sorted_in_their_own_buffer(monkeypatch):
    # shuffled keys of a wide span: the packed sort in the key's buffer, chunk by chunk
    monkeypatch.setattr(TUNING, "pack_chunk", 1000)
    rng = np.random.default_rng(9)
    key = rng.integers(0, 10**9, 5000, dtype=np.int64)
    key[:2000] = key[2000:4000]
    n = rng.integers(1, 1000, 5000, dtype=np.int64)
    want, inv = np.unique(key, return_inverse=True)
    want_sums = np.bincount(inv.ravel(), weights=n).astype(np.int64)
    buf = key.copy()
    uniq, sums = group_sum(buf, 10**9, n, consume=True)
    assert np.array_equal(uniq, want) and np.array_equal(sums, want_sums)
    assert not np.array_equal(buf, key)  # the buffer was used (it now holds partial sums)


def test_sort_branches_are_taken(monkeypatch):
    """The branches the tests above rely on are reachable: timsort on presorted keys, Polars'
    packed sort on shuffled ones, ``arg_sort`` on keys too wide to pack."""
    monkeypatch.setattr(TUNING, "sort_polars_min_rows", 0)
    rng = np.random.default_rng(0)
    key = rng.integers(0, 10**9, 5000, dtype=np.int64)
    assert not grouping.presorted(key) and grouping.presorted(np.sort(key))
    seen = []
    real_argsort = np.argsort

    def spy(a, *args, **kw):
        seen.append(kw.get("kind"))
        return real_argsort(a, *args, **kw)

    monkeypatch.setattr(grouping.np, "argsort", spy)
    grouping._sorted(np.sort(key), 10**9)
    assert seen == ["stable"]
    grouping._sorted(key, 10**9, ordered=True)  # the hint alone takes the timsort too
    assert seen == ["stable", "stable"]
    seen.clear()
    grouping._sorted(key, 10**9)  # packed: a Polars sort, no argsort
    grouping._sorted(key * 2**30, 2**62)  # too wide to pack beside 13 bits of rows
    assert seen == []


def test_run_sums():
    v = np.array([3, 1, 4, 1, 5, 9, 2], dtype=np.int64)
    flag = np.array([1, 0, 1, 1, 0, 0, 1], dtype=bool)
    assert grouping.run_sums(v.copy(), flag).tolist() == [4, 4, 15, 2]
    assert grouping.run_sums(v[:1].copy(), flag[:1]).tolist() == [3]
    assert grouping.run_sums(np.zeros(0, np.int64), np.zeros(0, bool)).tolist() == []


def test_count_limit_branch_unchanged():
    rows = 1000
    rng = np.random.default_rng(1)
    for span in (count_limit(rows), count_limit(rows) + 1):
        key = rng.integers(0, span, rows, dtype=np.int64)
        _check(key, span, np.ones(rows, np.int64))


@settings(max_examples=100, deadline=None)
# cards of at most 1,000 (six of them: < 2**60): class keys are int64, the roll-ups never build
# wider ones (with up to 5,000, hypothesis found spans overflowing the test's own int64 array)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=6), st.data())
def test_class_codes_decode(cards, data):
    div = [1] * len(cards)
    for i in range(len(cards) - 2, -1, -1):
        div[i] = div[i + 1] * cards[i + 1]
    span = div[0] * cards[0]
    keys = np.array(data.draw(st.lists(st.integers(0, span - 1), max_size=50)), dtype=np.int64)
    got = ClassCodes(keys, div, cards).full()
    want = np.stack([keys // d % c if i else keys // d
                     for i, (d, c) in enumerate(zip(div, cards))], axis=1) \
        if keys.shape[0] else np.zeros((0, len(cards)), np.int64)
    assert got.dtype == np.int32 and got.flags.f_contiguous
    assert np.array_equal(got, want)
    which = np.arange(keys.shape[0])[::2]
    assert np.array_equal(ClassCodes(keys, div, cards).subset(which), want[which])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(1, 5000)), min_size=1,
                max_size=6),
       st.lists(st.integers(0, 2**40), max_size=50))
def test_class_codes_decode_any_divisors(div_cards, values):
    """Divisors that are not a mixed radix of the cardinalities take the general branch."""
    div = [d for d, _ in div_cards]
    cards = [c for _, c in div_cards]
    keys = np.array(values, dtype=np.int64)
    got = ClassCodes(keys, div, cards).full()
    want = np.stack([keys // d % c if i else keys // d
                     for i, (d, c) in enumerate(zip(div, cards))], axis=1) \
        if keys.shape[0] else np.zeros((0, len(cards)), np.int64)
    first_fits = keys.shape[0] == 0 or int(want[:, 0].max()) < 2**31
    if first_fits:  # the first code is not reduced (a key below the span keeps it small)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("polars_min", [0, 1 << 40])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("sensitive", [None, "salary-class", "occupation"])
@pytest.mark.parametrize("chunk", [1000, 1 << 16, "kernel"])
def test_wide_rollups_equal_stepwise_path(adult_dir, monkeypatch, polars_min, shuffle,
                                          sensitive, chunk):
    """Wide roll-ups (through the source's classes, or the rows' full keys grouped by
    ``group_sum``) give the very arrays of the stepwise general path (densified keys,
    ``group_keys``; forced here by a tiny key limit): rows, their order, classes, codes and
    counts, from the base (in key order or shuffled) and from cached snapshots."""
    import itertools

    import polars as pl

    import ldiv_polars.search.keys as keys_mod
    from ldiv_polars.core import FrequencySet
    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.search import EncodedFrequencySet, counting

    qi = ["sex", "age", "race", "marital-status", "education", "native-country"]
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(6000)
    if shuffle:
        df = df.sample(fraction=1.0, shuffle=True, seed=3)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in qi}
    fs = FrequencySet.build(df, qi, sensitive).materialize()
    monkeypatch.setattr(TUNING, "sort_polars_min_rows", polars_min)
    monkeypatch.setattr(TUNING, "bincount_rows_factor", 0)  # every roll-up wide
    monkeypatch.setattr(TUNING, "bincount_min_cells", 0)
    monkeypatch.setattr(TUNING, "base_classes_max_rows", 0)  # a base without classes
    monkeypatch.setattr(TUNING, "kernel_count_cells", 0)  # (the kernel's counting too)
    if chunk == "kernel":  # keys built by the compiled kernel
        if not counting.COMPILED:
            pytest.skip("the compiled kernel was not built (no C compiler at install)")
        monkeypatch.setattr(counting, "KERNEL", True)
    else:  # keys built by numpy, in several chunks or one
        monkeypatch.setattr(counting, "KERNEL", False)
        monkeypatch.setattr(TUNING, "key_chunk", chunk)
        monkeypatch.setattr(TUNING, "chunked_key_rows", chunk)
    new = EncodedFrequencySet(fs, hs, cache_size=8)
    ref = EncodedFrequencySet(fs, hs, cache_size=8)
    key_limit = keys_mod.KEY_LIMIT
    nodes = list(itertools.product(*(range(hs[q].height) for q in qi)))
    rng = np.random.default_rng(2)
    for levels in [nodes[i] for i in rng.permutation(len(nodes))[:150]]:
        monkeypatch.setattr(keys_mod, "KEY_LIMIT", 1)  # the stepwise path
        b = ref.rollup(levels)
        monkeypatch.setattr(keys_mod, "KEY_LIMIT", key_limit)
        a = new.rollup(levels)
        assert np.array_equal(a.snapshot.n, b.snapshot.n), levels
        assert np.array_equal(a.snapshot.s, b.snapshot.s)
        assert a.snapshot.s.dtype == b.snapshot.s.dtype == np.int32
        assert np.array_equal(a.row_class, b.row_class)
        assert a.row_class.dtype == b.row_class.dtype == np.int64
        assert np.array_equal(a.class_size, b.class_size)
        assert np.array_equal(a.class_codes, b.class_codes)
        assert (a.snapshot.codes is None) == (b.snapshot.codes is None)
        if a.snapshot.codes is not None:
            assert np.array_equal(a.snapshot.codes, b.snapshot.codes)
            assert np.array_equal(a.snapshot.class_structure()[1],
                                  b.snapshot.class_structure()[1])


@pytest.mark.parametrize("cards", [[2, 2**30], [3, 2**30], [2**31], [1, 2**31 - 1, 1]])
def test_class_codes_decode_near_int32(cards):
    """Keys up to the span's top, on both sides of the int32 decoding's limit."""
    div = [1] * len(cards)
    for i in range(len(cards) - 2, -1, -1):
        div[i] = div[i + 1] * cards[i + 1]
    span = div[0] * cards[0]
    keys = np.array([0, 1, span // 2, span - 2, span - 1], dtype=np.int64)
    want = np.stack([keys // d % c if i else keys // d
                     for i, (d, c) in enumerate(zip(div, cards))], axis=1)
    assert np.array_equal(ClassCodes(keys, div, cards).full(), want)
