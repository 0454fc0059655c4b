"""The search's parts on their own: every roll-up path (:mod:`ldiv_polars.search.rolling`) gives
the same roll-up, forced one by one on the same nodes and sources; the path choice follows the
tuning; the snapshot store's policy (:mod:`ldiv_polars.search.store`) against its definition
on hand-made snapshots; :func:`~ldiv_polars.search.tuning.tuned`."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ldiv_polars.search.keys as keys_mod
from ldiv_polars.core import FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy import Hierarchy
from ldiv_polars.search import EncodedFrequencySet
from ldiv_polars.search.rolling import PATHS, Roller
from ldiv_polars.search.snapshot import Snapshot
from ldiv_polars.search.store import SnapshotStore
from ldiv_polars.search.tuning import TUNING, SearchTuning, tuned

QI = ["sex", "age", "race", "marital-status", "education"]


@pytest.fixture(scope="module")
def adult(adult_dir):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(3000)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}
    return df, hs


def _applicable(src: Snapshot, efs: EncodedFrequencySet, levels) -> list[str]:
    """The paths that can roll ``src`` up to ``levels`` (each has its preconditions)."""
    out = ["count", "stepwise"]
    if src.kept:
        out.append("sort")
    if efs.n_sensitive > 1 and src.class_count is not None:
        out.append("classes")
    return out


def _same(a, b, what) -> None:
    assert a.snapshot.levels == b.snapshot.levels, what
    for x, y in [(a.snapshot.s, b.snapshot.s), (a.snapshot.n, b.snapshot.n),
                 (a.row_class, b.row_class), (a.class_size, b.class_size),
                 (a.class_codes, b.class_codes)]:
        assert np.array_equal(x, y), what
    assert a.snapshot.s.dtype == b.snapshot.s.dtype == np.int32, what
    assert a.row_class.dtype == b.row_class.dtype == np.int64, what


@pytest.mark.parametrize("sensitive", [None, "salary-class", "occupation"])
def test_every_path_gives_the_same_rollup(adult, sensitive, monkeypatch):
    """Each path forced in turn (where its preconditions hold), from the base and from kept
    snapshots of lower nodes: the same rows, order, classes, codes and counts."""
    df, hs = adult
    fs = FrequencySet.build(df, QI, sensitive).materialize()
    efs = EncodedFrequencySet(fs, hs)
    chosen: dict[str, str] = {}
    real_path = Roller.path

    def forced(self, src, cards, span):
        return chosen.get("path") or real_path(self, src, cards, span)

    monkeypatch.setattr(Roller, "path", forced)
    nodes = list(itertools.product(*(range(hs[q].height) for q in QI)))
    rng = np.random.default_rng(11)
    sources = [efs.base]
    for lv in [nodes[i] for i in rng.permutation(len(nodes))[:6]]:
        lower = tuple(v // 2 for v in lv)
        sources.append(efs.rollup(lower, cache=False, keep_codes=True).snapshot)
    tried = set()
    for src in sources:
        above = [n for n in nodes if all(a >= b for a, b in zip(n, src.levels))]
        for lv in [above[i] for i in rng.permutation(len(above))[:12]]:
            results = {}
            for path in _applicable(src, efs, lv):
                chosen["path"] = path
                results[path] = efs.roller.roll(src, lv, keep_codes=True)
                tried.add(path)
            chosen.clear()
            ref = results.pop("count")
            for path, got in results.items():
                _same(got, ref, (path, src.levels, lv))
                # kept codes (what a later roll-up from it reads) agree too
                assert np.array_equal(got.snapshot.codes, ref.snapshot.codes), (path, lv)
    assert tried == set(PATHS) if sensitive else tried == set(PATHS) - {"classes"}


def test_path_choice_follows_the_tuning(adult, monkeypatch):
    """``count`` while the span can be counted; beyond, ``classes`` for a source with classes
    and a sensitive column, ``sort`` when its classes are too many to densify, ``stepwise``
    when the key would not fit."""
    df, hs = adult
    efs = EncodedFrequencySet(FrequencySet.build(df, QI, "occupation").materialize(), hs)
    src, lv = efs.base, (0, 1, 0, 0, 0)
    cards = efs.encoding.level_cards(lv)
    span = efs.encoding.span(lv)
    with tuned(bincount_min_cells=span):  # numpy's limit (the kernel's is wider)
        assert efs.roller.path(src, cards, span) == "count"
    for field in ("kernel_count_cells", "bincount_rows_factor", "bincount_min_cells"):
        monkeypatch.setattr(TUNING, field, 0)
    assert efs.roller.path(src, cards, span) == "classes"
    monkeypatch.setattr(TUNING, "classes_sort_max_rows", 0)
    monkeypatch.setattr(TUNING, "count_max_cells", 1)
    monkeypatch.setattr(TUNING, "count_min_cells", 1)
    assert efs.roller.path(src, cards, span) == "sort"
    monkeypatch.setattr(keys_mod, "KEY_LIMIT", 1)
    assert efs.roller.path(src, cards, span) == "stepwise"


def _snap(levels, rows) -> Snapshot:
    return Snapshot(tuple(levels), np.zeros((len(levels), rows), np.int32),
                    np.zeros(rows, np.int32), np.ones(rows, np.int64))


def test_store_keeps_and_picks_by_its_policy(monkeypatch):
    """Kept: at most keep_ratio of the source's rows, within the budget, oldest evicted
    first (and forgotten). Source: the smallest kept snapshot that specializes the node."""
    monkeypatch.setattr(TUNING, "row_budget_min_rows", 100)
    monkeypatch.setattr(TUNING, "row_budget_factor", 1)
    forgotten = []
    store = SnapshotStore(2, 50, cache_size=3, forget=forgotten.append)
    assert store.row_budget == 100
    base = _snap((0, 0), 50)
    store.remember(_snap((1, 0), 45), base)  # 90% of its source: not kept
    assert not store.cached
    a, b, c = _snap((1, 0), 40), _snap((0, 1), 30), _snap((1, 1), 20)
    for s in (a, b, c):
        store.remember(s, base)
    assert list(store.cached) == [(1, 0), (0, 1), (1, 1)]
    assert store.source_for((2, 2), base) is c  # all three specialize it: the smallest
    assert store.source_for((1, 0), base) is a
    assert store.source_for((0, 2), base) is b
    assert store.source_for((0, 0), base) is base
    d = _snap((2, 0), 35)  # 40 + 30 + 20 + 35 > 100: the oldest go
    store.remember(d, base)
    assert list(store.cached) == [(0, 1), (1, 1), (2, 0)] and forgotten == [a]
    store.remember(_snap((2, 2), 101), _snap((0, 0), 1000))  # beyond the budget
    assert (2, 2) not in store.cached
    store.release()
    assert not store.cached and store.source_for((2, 2), base) is base


def test_store_makes_a_hub_on_its_third_request(monkeypatch):
    monkeypatch.setattr(TUNING, "hub_min_rows", 0)
    store = SnapshotStore(2, 1000)
    base = _snap((0, 0), 1000)
    made = []

    def make(src, levels):
        made.append((src.levels, levels))
        return _snap(levels, 100)

    for _ in range(TUNING.hub_after - 1):
        assert store.source((2, 3), base, make) is base
    hub = store.source((3, 2), base, make)  # the same hub, (1, 1)
    assert made == [((0, 0), (1, 1))] and hub.levels == (1, 1)
    assert store.source((1, 4), base, make) is hub and len(made) == 1
    assert store.hub((1, 1), base, make) is None  # a node is not its own hub
    declined, asked = SnapshotStore(2, 1000), []  # a maker returning None: would not be kept
    for _ in range(TUNING.hub_after + 2):
        assert declined.source((2, 3), base, lambda s, lv: asked.append(lv)) is base
    assert asked == [(1, 1)] and declined.hubs == {(1, 1): None}


def test_tuned_sets_restores_and_rejects_unknown_fields():
    before = TUNING.hub_after
    with pytest.raises(RuntimeError), tuned(hub_after=before + 5):
        assert TUNING.hub_after == before + 5
        raise RuntimeError
    assert TUNING.hub_after == before
    with pytest.raises(InvalidParameterError, match="no_such_knob"), tuned(no_such_knob=1):
        pass
    assert TUNING == SearchTuning()  # every test leaves the defaults


def test_named_constructors_equal_the_keyword_one(adult):
    """``from_frame``, ``from_encoded_frame``, ``from_codes`` and ``from_keys`` build the same
    base and roll-ups as the keyword constructor given the same input."""
    df, hs = adult
    fs = FrequencySet.build(df, QI, "salary-class").materialize()
    a, b = EncodedFrequencySet(fs, hs), EncodedFrequencySet.from_frame(fs, hs)
    codes = a.base.codes
    raw = {q: hs[q].column(0).cast(pl.String) for q in QI}
    enc = fs.frame.with_columns(
        pl.col(q).cast(pl.String).replace_strict(raw[q], pl.arange(0, raw[q].len(), eager=True),
                                                 return_dtype=pl.Int32) for q in QI)
    enc_fs = FrequencySet(enc.lazy(), tuple(QI), ("salary-class",))
    c = EncodedFrequencySet.from_encoded_frame(enc_fs, hs)
    d = EncodedFrequencySet(enc_fs, hs, encoded=True)
    sid = (a.base.s, a.sensitive_table)
    e = EncodedFrequencySet.from_codes(fs, hs, codes.copy(), a.base.n.copy(), sensitive_ids=sid)
    slim = a.without_sensitive()
    keys = np.zeros(slim.base_rows, np.int64)
    for i, q in enumerate(QI):
        keys = keys * len(raw[q]) + slim.base.codes[i]
    qi_fs = FrequencySet(pl.DataFrame(schema={q: pl.Int32 for q in QI} | {"n": pl.Int64}).lazy(),
                         tuple(QI), ())
    f = EncodedFrequencySet.from_keys(qi_fs, hs, keys, slim.base.n.copy())
    g = EncodedFrequencySet(qi_fs, hs, arrays=(keys, slim.base.n.copy()))
    for lv in [(0, 0, 0, 0, 0), (1, 2, 0, 1, 3), (0, 4, 1, 2, 1)]:
        want = a.rollup(lv, cache=False)
        for other in (b, c, d, e):
            _same(other.rollup(lv, cache=False), want, lv)
        want_qi = slim.rollup(lv, cache=False)
        for other in (f, g):
            _same(other.rollup(lv, cache=False), want_qi, lv)
    with pytest.raises(InvalidParameterError):
        EncodedFrequencySet.from_codes(fs, hs, codes, a.base.n)  # no sensitive ids
    with pytest.raises(InvalidParameterError):
        EncodedFrequencySet.from_keys(fs, hs, keys, slim.base.n)  # a sensitive column


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 400), st.lists(st.integers(1, 6), min_size=1, max_size=6),
       st.integers(0, 2**32 - 1), st.data())
def test_classes_floor_bounds_the_rollup_classes(rows, cards, seed, data):
    """The hashed class count is at most the roll-up's classes (collisions only merge), and
    equal to it here (a 64-bit collision among a few hundred keys is not expected)."""
    rng = np.random.default_rng(seed)
    cols = {f"q{j}": [f"v{v}" for v in rng.integers(0, c, rows)] for j, c in enumerate(cards)}
    hs = {f"q{j}": Hierarchy([[f"v{v}", f"g{v // 2}", "*"] for v in range(c)], name=f"q{j}")
          for j, c in enumerate(cards)}
    fs = FrequencySet.build(pl.DataFrame(cols), list(cols), None).materialize()
    efs = EncodedFrequencySet.from_frame(fs, hs)
    levels = tuple(data.draw(st.lists(st.integers(0, 2), min_size=len(cards),
                                      max_size=len(cards))))
    classes = efs.rollup(levels, cache=False).class_size.shape[0]
    assert efs.roller.classes_floor(efs.base, levels) == classes


def test_a_nearly_unique_wide_base_makes_no_hub(monkeypatch):
    """25 QIs, every row unique at level 1: the hub is declined by its hashed count (no
    roll-up), and every roll-up is the same as with hubs off."""
    from ldiv_polars.datasets.wide import synthesize_wide, wide_columns, wide_hierarchies

    monkeypatch.setattr(TUNING, "hub_min_rows", 0)
    cols = wide_columns(25)
    fs = FrequencySet.build(synthesize_wide(3000, qis=25, seed=1), cols, None).materialize()
    efs = EncodedFrequencySet.from_frame(fs, wide_hierarchies(25))
    plain = EncodedFrequencySet.from_frame(fs, wide_hierarchies(25))
    plain.lazy_hubs = False
    top = [h.height - 1 for h in efs.hierarchies]
    nodes = [tuple(max(t - (j + i) % 3, 1) for j, t in enumerate(top)) for i in range(6)]
    for x in nodes:
        a, b = efs.rollup(x), plain.rollup(x)
        assert a.class_size.tolist() == b.class_size.tolist()
        every = np.arange(a.classes)
        assert np.array_equal(a.codes_of(every), b.codes_of(every))
    hub = (1,) * 25
    assert efs.store.hubs == {hub: None} and efs.rollups == len(nodes)
