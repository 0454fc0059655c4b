"""The search's fast paths give exactly what the plain computations give: counting/sort
grouping and key densification (against ``np.unique``), roll-ups through on-demand hub
snapshots (against a direct group-by of the generalized rows), the lattice's tagging masks
(against the definition) and the relaxation-first node check (against the one-call check)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from ldiv_polars.core import FrequencySet
from ldiv_polars.hierarchy import Hierarchy, generalize
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.search import EncodedFrequencySet, Lattice
from ldiv_polars.search.lattice import lattice_of
from ldiv_polars.search.grouping import count_limit, dense_rank, group_keys
from ldiv_polars.search.suppression import NodeChecker, relaxations
from ldiv_polars.search.tuning import TUNING

QI = ["sex", "age", "race", "marital-status", "education"]


@pytest.mark.parametrize("rows", [0, 1, 7, 1000])
@pytest.mark.parametrize("factor", [0.5, 1, 3, 1000])
def test_dense_and_group_match_unique(rows, factor):
    rng = np.random.default_rng(rows + int(factor))
    span = max(int(count_limit(rows) * factor), 1)  # below, at and beyond the counting limit
    key = rng.integers(0, span, rows).astype(np.int64)
    if rows > 3:
        key[: rows // 3] = key[rows // 3: 2 * (rows // 3)]  # repeated keys
    n = rng.integers(1, 9, rows).astype(np.int64)
    inv, uniq = dense_rank(key, span)
    want, want_inv = np.unique(key, return_inverse=True)
    assert np.array_equal(uniq, want) and np.array_equal(inv, want_inv.ravel())
    rep, sums = group_keys(key, span, n)
    assert np.array_equal(key[rep], want)
    assert np.array_equal(sums, np.bincount(want_inv.ravel(), weights=n,
                                            minlength=want.shape[0]).astype(np.int64))


@pytest.fixture(scope="module")
def adult(adult_dir):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(3000)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}
    return df, hs


@pytest.mark.parametrize("group_span", [None, 16, 4096, "wide"])
@pytest.mark.parametrize("sensitive", ["salary-class", None])
def test_rollups_through_hubs_equal_direct_groupby(adult, monkeypatch, sensitive, group_span):
    """Every node's roll-up (counting, through the source's classes or the general path,
    from hubs and cached snapshots in random order, with keys from per-QI or grouped codes)
    equals a group-by of the generalized rows."""
    df, hs = adult
    monkeypatch.setattr(TUNING, "hub_min_rows", 0)  # hubs on this small table too
    # grouped codes on every source used twice (None: never), groups of a few QIs
    monkeypatch.setattr(TUNING, "group_min_rows", 0)
    monkeypatch.setattr(TUNING, "group_max_rows", 1 << 62 if group_span else -1)
    monkeypatch.setattr(TUNING, "group_keyed_max_rows", 1 << 62 if group_span else -1)
    monkeypatch.setattr(TUNING, "group_keyed_min_rows", 0)  # (small keyed sources too)
    if group_span == "wide":  # sources of 1,000+ rows get the wide groups (here 64 x 16)
        monkeypatch.setattr(TUNING, "group_wide_min_rows", 1000)
        monkeypatch.setattr(TUNING, "group_span", 64)
        monkeypatch.setattr(TUNING, "group_span_wide", 1024)
    else:
        monkeypatch.setattr(TUNING, "group_span", group_span or 4096)
    # int32 grouped codes (as on large sources) in one of the runs
    monkeypatch.setattr(TUNING, "group_intp_rows", 0 if group_span == 16 else 1 << 62)
    fs = FrequencySet.build(df, QI, sensitive).materialize()
    efs = EncodedFrequencySet(fs, hs, cache_size=4)
    s_cols = [sensitive] if sensitive else []
    s_vals = efs.sensitive_table.get_column(sensitive).to_list() if sensitive else [None]
    nodes = list(itertools.product(*(range(hs[q].height) for q in QI)))
    rng = np.random.default_rng(5)
    for levels in [nodes[i] for i in rng.permutation(len(nodes))]:
        r = efs.rollup(levels)
        labels = efs.class_labels(r)
        got = sorted((*labels.row(int(r.row_class[i])),
                      *([s_vals[int(r.snapshot.s[i])]] if sensitive else []),
                      int(r.snapshot.n[i])) for i in range(r.snapshot.rows))
        direct = (generalize(df, hs, dict(zip(QI, levels)), check=False)
                  .group_by([*QI, *s_cols]).agg(pl.len().alias("n")).collect())
        assert got == sorted(direct.select([*QI, *s_cols, "n"]).rows()), levels
        # classes are contiguous runs in increasing class order, sizes add up
        assert (np.diff(r.row_class) >= 0).all()
        assert np.array_equal(np.bincount(r.row_class, weights=r.snapshot.n).astype(np.int64),
                              r.class_size)
    hubs = [h for h in efs.store.hubs.values() if h is not None]
    assert hubs and all(max(h.levels) <= 1 for h in hubs)
    grouped = [g for _, _, g, _ in efs.keys.grouped.values() if g]
    assert bool(grouped) == bool(group_span)
    if group_span == 16:  # some groups of several QIs, some of one
        assert any(len(g) < len(QI) for g in grouped)
        assert any(len(part) > 1 for g in grouped for part in g)
    assert efs.rollups == len(nodes) + len(efs.store.hubs) + efs.base_sorted


def test_lattice_masks_match_definition():
    lat = Lattice([2, 5, 1, 3, 4])
    for node in range(lat.size):
        lv = lat.nodes[node]
        assert np.array_equal(lat.above(node), (lat.nodes >= lv).all(axis=1))
        assert np.array_equal(lat.below(node), (lat.nodes <= lv).all(axis=1))


def _staged_and_one_call(efs, checker, levels, *, floors: bool):
    """The node's roll-up, its verdict as the checker stages it, and the one-call verdict:
    the models evaluated on every class (and the floors, with ``floors``) passed as ``first``."""
    r = efs.rollup(levels)
    staged = checker.check(r)
    rows = efs.model_rows(r)
    enc = checker.encoded(rows, r.classes, r.class_size, whole=True)
    one = checker.check(r, first=(checker._evaluate(rows, r.classes, sizes=r.class_size,
                                                    whole=True),
                                  checker.floors(enc) if floors else None))
    return r, staged, one


@pytest.mark.parametrize("models", [[EntropyLDiversity(3)], [RecursiveCLDiversity(3, 3)],
                                    [KAnonymity(3), RecursiveCLDiversity(2, 3)]])
def test_relaxation_first_check_equals_one_call(adult, models):
    df, hs = adult
    fs = FrequencySet.build(df, QI, "salary-class").materialize()
    efs = EncodedFrequencySet(fs, hs)
    relaxed = relaxations(models)
    assert relaxed
    limit = 30
    checker = NodeChecker(efs, models, limit, relaxed)
    lat = Lattice([hs[q].height for q in QI])
    decided_by_relaxation = 0
    for node in range(lat.size):
        _, staged, one = _staged_and_one_call(efs, checker, lat.levels(node), floors=True)
        assert staged.passed == one.passed, lat.levels(node)
        assert staged.relaxed_passed == one.relaxed_passed, lat.levels(node)
        if staged.passed:
            assert staged.suppressed_rows == one.suppressed_rows
            assert np.array_equal(staged.suppressed, one.suppressed)
        else:
            assert staged.suppressed_rows <= one.suppressed_rows
        decided_by_relaxation += not staged.relaxed_passed
    assert decided_by_relaxation  # the short cut was exercised


@pytest.mark.parametrize("limit", [0, 30, 400])
@pytest.mark.parametrize("models", [[KAnonymity(5), TCloseness(0.2, "ordered")],
                                    [KAnonymity(20), TCloseness(0.1)],
                                    [DistinctLDiversity(2), KAnonymity(3)]])
def test_size_first_check_equals_one_call(adult, models, limit):
    """A node whose classes below the models' ``min_class_size`` hold more rows than the limit
    is decided failing on those sizes alone: every node of the lattice gets the verdict of the
    one-call check (the models evaluated on every class), the same mask and rows when it
    passes, and a failing node's mask (the small classes) within the one-call mask."""
    df, hs = adult
    efs = EncodedFrequencySet(FrequencySet.build(df, QI, "salary-class").materialize(), hs)
    checker = NodeChecker(efs, models, limit)
    assert checker.size_floor == max(m.min_class_size for m in models) > 1
    lat = Lattice([hs[q].height for q in QI])
    early = 0
    for node in range(lat.size):
        r, staged, one = _staged_and_one_call(efs, checker, lat.levels(node), floors=False)
        assert staged.passed == one.passed, lat.levels(node)
        if staged.passed:
            assert staged.suppressed_rows == one.suppressed_rows
            assert np.array_equal(staged.suppressed, one.suppressed)
        else:
            assert not (staged.suppressed & ~one.suppressed).any()
            assert limit < staged.suppressed_rows <= one.suppressed_rows
        small = r.class_size < checker.size_floor
        early += int(r.class_size[small].sum()) > limit
    assert early  # the short cut was exercised


@pytest.mark.parametrize("suppression", [0, 40])
def test_search_without_sensitive_equals_search_with_it(adult, suppression):
    """k-anonymity reads only class sizes: the search on the QI-only frequency set (what
    ``anonymize`` runs when no model needs the sensitive column and the metric is not kl)
    decides every node and values every metric exactly as on the full frequency set."""
    from ldiv_polars.search.metrics import METRICS
    from ldiv_polars.search.strategies import search_lattice

    df, hs = adult
    fs = FrequencySet.build(df, QI, "salary-class").materialize()
    full = EncodedFrequencySet(fs, hs)
    slim = full.without_sensitive()
    assert slim.base_rows < full.base_rows and slim.total == full.total
    for metric in [m for m in METRICS if m != "kl"]:
        a = search_lattice(full, [KAnonymity(4)], suppression, metric, strategy="exhaustive")
        b = search_lattice(slim, [KAnonymity(4)], suppression, metric, strategy="exhaustive")
        assert a.minimal == b.minimal and a.optimum == b.optimum, metric
        assert np.array_equal(a.passing, b.passing)
        assert a.records.keys() == b.records.keys()
        for node, ra in a.records.items():
            rb = b.records[node]
            assert (ra.passed, ra.suppressed_rows, ra.classes) == \
                (rb.passed, rb.suppressed_rows, rb.classes), (metric, node)
            assert ra.value == rb.value, (metric, node)  # same classes, same order


@pytest.mark.parametrize("sensitive", [None, "salary-class", "occupation"])
def test_batched_rollups_equal_one_by_one(adult, sensitive, monkeypatch):
    """``rollup_many`` (keys of several nodes side by side, one grouping) gives every node
    exactly the roll-up ``rollup`` gives it alone, whatever the batch size."""
    df, hs = adult
    monkeypatch.setattr(TUNING, "batch_cells", 20_000)  # several batches per source
    fs = FrequencySet.build(df, QI, sensitive).materialize()
    one = EncodedFrequencySet(fs, hs)
    many = EncodedFrequencySet(fs, hs)
    lat = Lattice([hs[q].height for q in QI])
    batched = 0
    for h in range(lat.max_height + 1):
        nodes = [lat.levels(int(n)) for n in np.flatnonzero(lat.node_height == h)]
        got = many.rollup_many(nodes)
        assert len(got) == len(nodes)
        for lv, g in zip(nodes, got):
            want = one.rollup(lv)
            assert g.snapshot.levels == lv
            assert np.array_equal(g.snapshot.s, want.snapshot.s), lv
            assert np.array_equal(g.snapshot.n, want.snapshot.n), lv
            assert np.array_equal(g.row_class, want.row_class), lv
            assert np.array_equal(g.class_codes, want.class_codes), lv
            assert np.array_equal(g.class_size, want.class_size), lv
        batched += len(nodes)
    assert many.rollups == batched + many.base_sorted


def test_minimal_of_equals_pairwise_definition():
    """The grid cumulative-OR minimal elements equal the definition (no other node of the set
    componentwise below), on random sets of random lattices: upward-closed or not (on those,
    the direct-specialization test of ``upward=True`` gives the same nodes), on a lattice
    built anew and on the shared one (``lattice_of``)."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        lat = Lattice([int(h) for h in rng.integers(1, 5, rng.integers(1, 5))])
        mask = rng.random(lat.size) < rng.random()
        if rng.random() < 0.3:  # an upward-closed set, as Flash produces
            closed = np.zeros(lat.size, dtype=bool)
            for i in np.flatnonzero(mask):
                closed |= lat.above(int(i))
            mask = closed
            assert lat.minimal_of(mask, upward=True) == lat.minimal_of(mask)  # (Flash's)
        ids = np.flatnonzero(mask)
        want = [int(i) for i in ids
                if not ((lat.nodes[ids] <= lat.nodes[i]).all(axis=1) & (ids != i)).any()]
        assert lat.minimal_of(mask) == want
        if rng.random() < 0.3:  # the shared lattice of these heights gives the same
            assert lattice_of(lat.heights).minimal_of(mask) == want


def test_tag_sets_only_the_zero_entries_of_its_box():
    """Lattice.tag (value 1: one OR over the box's view; -1: a masked assignment) sets exactly
    the still-zero tags of the box and keeps every other tag, on random tags of -1, 0 and 1
    over random lattices and boxes above and below random nodes."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        lat = Lattice([int(h) for h in rng.integers(1, 5, rng.integers(1, 6))])
        tags = rng.integers(-1, 2, lat.size).astype(np.int8)
        node = int(rng.integers(0, lat.size))
        for value, inside in ((1, lat.above(node)), (-1, lat.below(node))):
            want = np.where(inside & (tags == 0), np.int8(value), tags)
            got = tags.copy()
            lat.tag(got, lat.box_above(node) if value == 1 else lat.box_below(node), value)
            assert got.tolist() == want.tolist()


@pytest.mark.parametrize("metric", ["loss", "precision", "entropy", "height", "discernibility",
                                    "aecs"])
def test_bound_pruning_in_exhaustive_keeps_minimal_set_and_optimum(adult, metric, monkeypatch):
    """Exhaustive search with nodes above a passing node left unchecked when their metric's
    lower bound exceeds the best value (from the levels, or from the roll-up for
    discernibility and aecs, whose generalizations are then pruned without one): the same
    minimal set, optimum node and value as checking every node."""
    from ldiv_polars.search import exhaustive as exhaustive_mod
    from ldiv_polars.search.strategies import search_lattice

    df, hs = adult
    fs = FrequencySet.build(df, QI, "occupation").materialize()
    models = [EntropyLDiversity(3)]
    pruned = search_lattice(EncodedFrequencySet(fs, hs), models, 60, metric)
    monkeypatch.setattr(exhaustive_mod, "unprunable", lambda state, level, beyond=None, minimal=True: level)
    full = search_lattice(EncodedFrequencySet(fs, hs), models, 60, metric)
    assert pruned.strategy == full.strategy == "exhaustive"
    assert pruned.optimum is not None and len(pruned.minimal) > 1
    assert pruned.minimal == full.minimal
    assert pruned.optimum == full.optimum
    assert pruned.records[pruned.optimum].value == full.records[full.optimum].value
    if metric != "height":
        assert pruned.checked < full.checked  # the bound did prune


@pytest.mark.parametrize("metric", ["loss", "precision", "entropy", "height"])
@pytest.mark.parametrize("strategy", ["flash", "exhaustive", "bounded"])
def test_skipped_metric_values_keep_the_optimum(adult, metric, strategy, monkeypatch):
    """Passing nodes whose level bound exceeds an earlier passing node's value get no exact
    value (``SearchState._value``): every strategy returns the same passing nodes, minimal set,
    optimum and optimum value as when every passing node is evaluated (bounded: the same
    optimum and value; the passing nodes it decides on the way depend on which nodes its path
    probes start from, so they are not compared)."""
    import math

    from ldiv_polars.search import strategies
    from ldiv_polars.search.state import SearchState

    df, hs = adult
    fs = FrequencySet.build(df, QI, None).materialize()
    searches: list = []
    init = SearchState.__init__

    def recording_init(self, *a, **kw):
        init(self, *a, **kw)
        searches.append(self)

    monkeypatch.setattr(SearchState, "__init__", recording_init)
    runs = {}
    for evaluate_all in (False, True):
        if evaluate_all:
            monkeypatch.setattr(
                SearchState, "_value",
                lambda self, node, rolled, v: self.metrics.value(
                    self.metric, rolled, v.suppressed) if v.passed else math.inf)
        runs[evaluate_all] = [
            (None if strategy == "bounded" else out.passing.tolist(), out.minimal, out.optimum,
             out.records[out.optimum].value)
            for out in (strategies.search_lattice(EncodedFrequencySet(fs, hs), [KAnonymity(k)],
                                                  limit, metric, strategy=strategy)
                        for k, limit in [(5, 30), (20, 60), (50, 150)])]
    assert runs[False] == runs[True]
    skipped = sum(s.skipped_values for s in searches)
    if metric != "height" and strategy != "bounded":
        assert skipped > 0  # values were skipped (best-first pops nodes below the best only)


def test_guided_flash_equals_binary_flash(adult, monkeypatch):
    """Flash probing each path first where earlier paths put the border (then galloping) decides
    every node as plain binary search does — same passing nodes, minimal set and optimum — and
    checks fewer nodes over these configurations."""
    from ldiv_polars.search.strategies import search_lattice

    df, hs = adult
    fs = FrequencySet.build(df, QI, None).materialize()
    checked = {}
    for quantile in (-1.0, TUNING.border_quantile):
        monkeypatch.setattr(TUNING, "border_quantile", quantile)
        runs = []
        for k, limit in [(2, 0), (5, 0), (10, 0), (5, 30), (20, 60), (50, 150)]:
            efs = EncodedFrequencySet(fs, hs)
            out = search_lattice(efs, [KAnonymity(k)], limit, "loss", strategy="flash")
            runs.append((out.passing.tolist(), out.minimal, out.optimum,
                         out.records[out.optimum].value, out.checked))
        checked[quantile] = runs
    binary, guided = checked[-1.0], checked[TUNING.border_quantile]
    for b, g in zip(binary, guided):
        assert b[:4] == g[:4]
    assert sum(g[4] for g in guided) < sum(b[4] for b in binary)
