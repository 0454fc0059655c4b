"""Roll-ups of the encoded frequency set equal a direct group-by of the generalized rows, at
every node, whatever snapshot they are rolled up from; the lattice's order relations."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from ldiv_polars.core import FrequencySet
from ldiv_polars.hierarchy import Hierarchy, generalize
from ldiv_polars.search import EncodedFrequencySet, Lattice
from ldiv_polars.search.tuning import TUNING

QI = ["sex", "age", "race", "marital-status", "education"]


@pytest.fixture(scope="module")
def setup(adult_dir):
    df = pl.read_csv(adult_dir / "adult.csv", separator=";").head(4000)
    hs = {q: Hierarchy.from_csv(adult_dir / f"adult_hierarchy_{q}.csv") for q in QI}
    return df, hs


def _rolled_table(efs: EncodedFrequencySet, levels) -> list[tuple]:
    r = efs.rollup(levels)
    labels = efs.class_labels(r)
    rows = []
    snap = r.snapshot
    s_vals = efs.sensitive_table.get_column("salary-class").to_list()
    for i in range(snap.rows):
        rows.append((*labels.row(int(r.row_class[i])), s_vals[int(snap.s[i])], int(snap.n[i])))
    return sorted(rows)


@pytest.mark.parametrize("lut_bytes", [None, 0])
def test_every_node_rollup_equals_direct_groupby(setup, monkeypatch, lut_bytes):
    # lut_bytes=0: the QI-group lookups are dropped before each new one (none reused)
    if lut_bytes is not None:
        monkeypatch.setattr(TUNING, "group_luts_max_bytes", lut_bytes)
    df, hs = setup
    fs = FrequencySet.build(df, QI, "salary-class").materialize()
    efs = EncodedFrequencySet(fs, hs, cache_size=8)
    primed = efs.prime(min_rows=0)  # hub snapshots, as on large frequency sets
    heights = [hs[q].height for q in QI]
    # each QI at each of its levels above the raw one, and every QI one level up
    assert primed == sum(h - 1 for h in heights) + 1 and efs.store.pinned
    nodes = list(itertools.product(*(range(h) for h in heights)))
    rng = np.random.default_rng(3)
    order = [nodes[i] for i in rng.permutation(len(nodes))]  # random order: varied snapshots
    for levels in order:
        got = _rolled_table(efs, levels)
        direct = (
            generalize(df, hs, dict(zip(QI, levels)), check=False)
            .group_by([*QI, "salary-class"]).agg(pl.len().alias("n"))
            .collect()
        )
        expected = sorted(tuple(r) for r in direct.select([*QI, "salary-class", "n"]).rows())
        assert got == expected, levels
    assert efs.rollups == len(nodes) + primed + efs.base_sorted
    assert len(efs.store.cached) <= 8
    if lut_bytes == 0:  # at most one roll-up's lookups (two per QI group) are kept
        assert len(efs.keys._group_luts) <= 2 * len(QI)


def test_lattice_relations():
    lat = Lattice([2, 5, 3])
    assert lat.size == 30 and lat.max_height == 1 + 4 + 2
    for node in range(lat.size):
        lv = np.array(lat.levels(node))
        assert lat.id_of(lv) == node
        for s in lat.successors(node):
            assert (np.array(lat.levels(s)) - lv).sum() == 1
        above = {i for i in range(lat.size) if (np.array(lat.levels(i)) >= lv).all()}
        assert set(np.flatnonzero(lat.above(node))) == above
    mask = np.zeros(lat.size, dtype=bool)
    for lv in [(0, 2, 1), (1, 1, 0), (0, 3, 2), (1, 4, 2)]:
        mask[lat.id_of(lv)] = True
    assert {lat.levels(i) for i in lat.minimal_of(mask)} == {(0, 2, 1), (1, 1, 0)}


def test_prime_keeps_higher_level_pins_within_the_budget(setup):
    """Pins above the first level stop at ``pin_budget`` times the row budget; the first-level
    ones (each QI one level up, and every QI one level up) are always made."""
    df, hs = setup
    fs = FrequencySet.build(df, QI, "salary-class").materialize()
    heights = [hs[q].height for q in QI]
    full = EncodedFrequencySet(fs, hs)
    assert full.prime(min_rows=0) == sum(h - 1 for h in heights) + 1
    tight = EncodedFrequencySet(fs, hs)
    tight.row_budget = 1  # any kept first-level pin exhausts it
    assert tight.prime(min_rows=0) == len(QI) + 1 and tight.store.pinned
    assert all(max(p.levels) <= 1 for p in tight.store.pinned)
    for levels in [(1, 2, 0, 1, 2), (0, 3, 1, 2, 1)]:
        assert _rolled_table(tight, levels) == _rolled_table(full, levels)


@pytest.mark.parametrize("class_order", [True, False])
def test_class_keys_base_equals_codes_base(setup, monkeypatch, class_order):
    # the small frame's cells as sorted class keys (the class-ordered base taken as it is)
    # against the same cells as codes (the base put in class order by the search): the same
    # base, roll-ups and roll-up count; class_order False: a base not class-ordered
    if not class_order:
        monkeypatch.setattr(TUNING, "base_classes_max_rows", 0)
    from ldiv_polars.core.engines import polars as polars_engine

    df, hs = setup
    cells = polars_engine.ENGINE.encoded_counts(
        df, QI, ("salary-class",), {q: hs[q].column(0) for q in QI})
    assert cells.codes is None and cells.class_keys is not None
    fs = FrequencySet(pl.DataFrame(schema={q: pl.Int32 for q in QI} | {
        "salary-class": pl.String, "n": pl.Int64}).lazy(), QI, ("salary-class",), "n")
    sid = (cells.sensitive_ids, cells.sensitive_values.rename("salary-class").to_frame())
    keyed = EncodedFrequencySet.from_class_keys(fs, hs, cells.class_keys, cells.n, sid)
    coded = EncodedFrequencySet.from_codes(fs, hs, cells.cell_codes(), cells.n,
                                           sensitive_ids=sid)
    assert keyed.base_sorted == coded.base_sorted == class_order
    assert keyed.rollups == coded.rollups == int(class_order)
    for a, b in ((keyed.base.codes, coded.base.codes), (keyed.base.s, coded.base.s),
                 (keyed.base.n, coded.base.n)):
        assert np.array_equal(a, b)
    if class_order:
        (ka, kr), (ca, cr) = keyed.base.class_structure(), coded.base.class_structure()
        assert np.array_equal(ka, ca) and np.array_equal(kr, cr)
    heights = [hs[q].height for q in QI]
    rng = np.random.default_rng(5)
    nodes = list(itertools.product(*(range(h) for h in heights)))
    for i in rng.choice(len(nodes), 40, replace=False):
        assert _rolled_table(keyed, nodes[i]) == _rolled_table(coded, nodes[i]), nodes[i]
    assert keyed.rollups == coded.rollups
