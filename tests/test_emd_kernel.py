"""The compiled ordered EMD (``ldiv_polars.models._emd``) against its numpy twin and against
exact arithmetic (the model's own :meth:`TCloseness.exact_emd
<ldiv_polars.models.TCloseness.exact_emd>` and the floor's terms from their definition).

1. On random classes (ids shuffled, rows in and out of value order, dense and sparse numpy
   paths): kernel == numpy == the Fraction value, the kernel within a few roundings of it.
2. The floor's terms likewise (``ordered_floor_terms``, with random values allowed to vanish).
3. Boundary: a class whose EMD is exactly ``t`` passes ``t`` and fails just below it, with
   and without the kernel (the model's exact step decides the classes within its band).
4. Bad input: a duplicated (class, value) pair, ids out of range, arrays of wrong length are
   errors, not wrong answers.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ldiv_polars.models import TCloseness, emd_arrays
from ldiv_polars.models.encoded import EncodedRows, SensitiveDomain, class_verdict
from tests.test_ordered_floor import _terms_by_definition, draw_classes

pytestmark = pytest.mark.skipif(emd_arrays._kernel is None,
                                reason="the compiled ordered EMD was not built (no C compiler)")

VALUES = [3, 10, 25, 100, 7, 41, 0]


def _rows(classes: list[Counter], table: Counter, seed: int, shuffle_rows: bool,
          reference: bool = True) -> EncodedRows:
    """Encoded rows of ``classes`` (ids in a shuffled order of the values; within a class
    the rows in value order, or shuffled) against the table counts ``table``."""
    rng = np.random.default_rng(seed)
    ids = [VALUES[i] for i in rng.permutation(len(VALUES))]
    id_of = {v: i for i, v in enumerate(ids)}
    cls, s, n = [], [], []
    for c, counts in enumerate(classes):
        vals = sorted(counts)
        if shuffle_rows:
            vals = [vals[i] for i in rng.permutation(len(vals))]
        for v in vals:
            cls.append(c)
            s.append(id_of[v])
            n.append(counts[v])
    ref = np.array([table.get(v, 0) for v in ids], dtype=np.int64) if reference else None
    return EncodedRows(np.array(cls, dtype=np.int64), np.array(s, dtype=np.int32),
                       np.array(n, dtype=np.int64), classes=len(classes),
                       n_sensitive=len(ids), reference=ref,
                       domain=SensitiveDomain(pl.DataFrame({"s": ids})))


def _exact(rows: EncodedRows, model: TCloseness) -> list[Fraction]:
    ref, counts = rows.exact_inputs(np.arange(rows.classes))
    return [model.exact_emd(c, ref) if c.counts else Fraction(0) for c in counts]


@st.composite
def _case(draw, reference: bool = True):
    m = draw(st.integers(1, len(VALUES)))
    dom = draw(st.permutations(VALUES))[:m]
    classes, table = draw_classes(draw, dom, 40, 7, 30 if reference else None)
    return classes, table, draw(st.integers(0, 9)), draw(st.booleans())


def _paths(rows_of):
    """The EMD by the kernel and by numpy's dense and sparse paths (fresh rows each)."""
    out = {}
    for name, kernel, dense in (("kernel", True, None), ("dense", False, True),
                                ("sparse", False, False)):
        rows = rows_of()
        if dense is not None:
            rows.prefers_dense = lambda width, d=dense: d  # type: ignore[method-assign]
        before = emd_arrays.KERNEL
        emd_arrays.KERNEL = kernel
        try:
            out[name] = emd_arrays.ordered_emd(rows)
        finally:
            emd_arrays.KERNEL = before
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.booleans())
def test_kernel_numpy_and_fractions_agree(case, whole):
    classes, table, seed, shuffled = case
    if not whole:  # the reference summed from the rows (the retained rows of a node)
        table = sum(classes, Counter())

    def rows_of():
        return _rows(classes, table, seed, shuffled, reference=whole)

    want = _exact(rows_of(), TCloseness(0.2, "ordered"))
    got = _paths(rows_of)
    for w, k in zip(want, got["kernel"]):  # one rounding of an exact ratio (and a product)
        assert abs(k - float(w)) <= 8 * np.finfo(float).eps * max(float(w), 1e-300)
    for name in ("dense", "sparse"):
        assert np.allclose(got[name], got["kernel"], rtol=0, atol=1e-12), name


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.lists(st.sampled_from(VALUES), unique=True))
def test_floor_terms_kernel_numpy_and_definition(case, vanish):
    classes, table, seed, shuffled = case
    if sum(1 for v in table if table[v]) <= 1:
        return
    want = [_terms_by_definition(c, table, set(vanish)) for c in classes]
    got = {}
    for kernel in (True, False):
        rows = _rows(classes, table, seed, shuffled)
        mask = np.array([v in vanish for v in rows.domain.column.to_list()])
        before = emd_arrays.KERNEL
        emd_arrays.KERNEL = kernel
        try:
            got[kernel] = emd_arrays.ordered_floor_terms(rows, mask)
        finally:
            emd_arrays.KERNEL = before
    for i in (0, 1):
        exact = [float(w[i]) for w in want]
        assert np.allclose(got[True][i], exact, rtol=0, atol=4 * np.finfo(float).eps * 8)
        assert np.allclose(got[False][i], got[True][i], rtol=0, atol=1e-12)


def _verdicts(rows_of, model: TCloseness) -> dict[str, list[bool]]:
    """The exact per-class verdict (``class_verdict``) with the one-call kernel verdict, with
    the kernel's EMD compared in numpy (the EMD computed first), and in numpy alone."""
    out = {}
    for name, kernel in (("one call", True), ("kernel EMD", True), ("numpy", False)):
        rows = rows_of()
        before = emd_arrays.KERNEL
        emd_arrays.KERNEL = kernel
        try:
            if name == "kernel EMD":
                model._array_emd(rows)  # kept: the verdict takes the numpy comparison
            out[name] = class_verdict(model, rows).tolist()
        finally:
            emd_arrays.KERNEL = before
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.booleans(), st.integers(0, 6), st.integers(0, 3))
def test_one_call_verdict_kernel_numpy_and_fractions(case, whole, pick, digits):
    """The verdict in one compiled call (issue 23) against the numpy form and exact fractions,
    with ``t`` on a class's own EMD (rounded to ``digits`` decimals, or its float): the
    boundary cases the rounding rule decides exactly."""
    classes, table, seed, shuffled = case
    if not whole:
        table = sum(classes, Counter())

    def rows_of():
        return _rows(classes, table, seed, shuffled, reference=whole)

    exact = _exact(rows_of(), TCloseness(0.5, "ordered"))
    target = exact[pick % len(exact)]
    t = float(target) if not digits else round(float(target), digits)
    model = TCloseness(min(max(t, 0.0), 1.0), "ordered")
    want = [e <= model._exact_t for e in exact]
    got = _verdicts(rows_of, model)
    for name, verdict in got.items():
        assert verdict == want, name


def test_one_call_verdict_bands_and_bad_arrays():
    """A per-class rounding bound (tables of more than 64 values), classes without rows, and
    arrays of the wrong length or type."""
    k = emd_arrays._kernel
    cls, s, n = np.array([0, 0, 2]), np.array([0, 1, 1]), np.array([3, 1, 4])
    pos, cum_t, st_ = np.array([0, 1]), np.array([3, 8]), np.array([0, 3, 11])
    size = np.array([4, 0, 4])
    emd, passed, unc = np.empty(3), np.empty(3, bool), np.empty(3, bool)
    # class 0: |3*8 - 3*4| / (4*8) = 3/8; class 2: |0 - 3*4| / 32 = 3/8; class 1: no rows
    band = np.array([0.0, 0.0, 0.1])
    assert k.ordered_verdict(cls, s, n, pos, size, cum_t, st_, 8, emd, 0.3, band, passed,
                             unc) == 1
    assert emd.tolist() == [0.375, 0.0, 0.375]
    assert passed.tolist() == [False, True, False] and unc.tolist() == [False, False, True]
    assert k.ordered_verdict(cls[::-1].copy(), s[::-1].copy(), n[::-1].copy(), pos, size,
                             cum_t, st_, 8, emd, 0.3, band, passed, unc) == -1
    with pytest.raises(ValueError):  # a band of neither one nor one per class
        k.ordered_verdict(cls, s, n, pos, size, cum_t, st_, 8, emd, 0.3, band[:2], passed,
                          unc)
    with pytest.raises(TypeError):  # the verdict as integers, not bools
        k.ordered_verdict(cls, s, n, pos, size, cum_t, st_, 8, emd, 0.3, band,
                          np.empty(3, np.int8), unc)


def test_one_call_verdict_wide_table():
    """More than 64 values in the table: the bound per class from its own values."""
    m = 70
    rng = np.random.default_rng(3)
    table = Counter({v: int(rng.integers(1, 20)) for v in range(m)})
    classes = [Counter({0: 5, 69: 5}), Counter({v: table[v] for v in range(m)}),
               Counter({35: 3})]
    table = table + sum(classes, Counter())
    dom = SensitiveDomain(pl.DataFrame({"s": list(range(m))}))

    def rows_of():
        cls = [c for c, cc in enumerate(classes) for _ in cc]
        ids = [v for cc in classes for v in sorted(cc)]
        return EncodedRows(np.array(cls), np.array(ids), np.array(
            [cc[v] for cc in classes for v in sorted(cc)]), classes=3, n_sensitive=m,
            reference=np.array([table[v] for v in range(m)]), domain=dom)

    exact = _exact(rows_of(), TCloseness(0.5, "ordered"))
    for t in (0.0, float(exact[1]), 0.3, float(exact[0])):
        model = TCloseness(t, "ordered")
        want = [e <= model._exact_t for e in exact]
        assert set(map(tuple, _verdicts(rows_of, model).values())) == {tuple(want)}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.booleans(), st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.35]),
       st.sampled_from([0.0, 0.01, 0.1]))
def test_one_call_floor_matches_the_terms_path_and_numpy(case, whole, t, slack):
    """The ordered floor in one compiled call (issue 23) is the floor the model computes from
    the kernel's terms, bit for bit, and numpy's within rounding; the EMD it keeps is the
    kernel's."""
    classes, table, seed, shuffled = case
    if not whole:
        table = sum(classes, Counter())
    model = TCloseness(t, "ordered")
    out = {}
    for name in ("one call", "terms", "numpy"):
        rows = _rows(classes, table, seed, shuffled, reference=whole)
        before, one = emd_arrays.KERNEL, emd_arrays.ordered_floor
        emd_arrays.KERNEL = name != "numpy"
        if name == "terms":
            emd_arrays.ordered_floor = lambda *a: None
        try:
            floor = model.suppression_floor(rows, slack)
            out[name] = (floor, model._array_emd(rows))
        finally:
            emd_arrays.KERNEL, emd_arrays.ordered_floor = before, one
    assert np.array_equal(out["one call"][0], out["terms"][0])
    assert np.array_equal(out["one call"][1], out["terms"][1])
    assert np.allclose(out["one call"][0], out["numpy"][0], rtol=1e-9, atol=1e-9)


def test_one_call_floor_bad_arrays():
    """Arrays of the wrong length or type, and rows out of order."""
    k = emd_arrays._kernel
    cls, s, n = np.array([0, 0, 2]), np.array([0, 1, 1]), np.array([3, 1, 4])
    pos, cum_t, st_ = np.array([0, 1]), np.array([3, 8]), np.array([0, 3, 11])
    kept, kst = np.array([0, 1]), np.array([0, 3])
    size, f = np.array([4, 0, 4]), [np.empty(3) for _ in range(4)]
    band = np.array([0.0])

    def call(*a, band=band):
        return k.ordered_floor(*a, pos, size, cum_t, st_, 8, f[0], kept, kst, f[1], f[2],
                               0.1, band, f[3])

    assert call(cls, s, n) == 0
    assert f[0].tolist() == [0.375, 0.0, 0.375] and f[3][1] == 0.0 and f[3][0] > 0
    assert call(cls[::-1].copy(), s[::-1].copy(), n[::-1].copy()) == -1
    with pytest.raises(ValueError):
        call(cls, s, n, band=np.zeros(2))
    with pytest.raises(TypeError):
        call(cls, s, n.astype(float))


def _both_passes(rows_of, vanishing_of, t: float, slack: float) -> list:
    """The kernel's EMD, floor terms, verdict and floor with its stretch pass and with its
    dense pass (``set_dense_ratio``: never, always)."""
    out = []
    for ratio in (0.0, 1e18):
        old = emd_arrays._kernel.set_dense_ratio(ratio)
        try:
            model = TCloseness(t, "ordered")
            rows = rows_of()
            terms = emd_arrays.ordered_floor_terms(rows, vanishing_of(rows))
            emd = emd_arrays.ordered_emd(rows_of())
            verdict = model.array_verdict(rows_of())
            floor = model.suppression_floor(rows_of(), slack)
            out.append((emd, terms, verdict.passed, verdict.uncertain, floor))
        finally:
            emd_arrays._kernel.set_dense_ratio(old)
    return out


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a, b)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.booleans(), st.lists(st.sampled_from(VALUES), unique=True),
       st.sampled_from([0.0, 0.1, 0.2]), st.sampled_from([0.0, 0.05]))
def test_dense_and_stretch_passes_agree_bit_for_bit(case, whole, vanish, t, slack):
    """The kernel's two passes (the stretches, and the dense one over the domain for small
    domains) sum the same exact integers: every output is the same float."""
    classes, table, seed, shuffled = case
    if not whole:
        table = sum(classes, Counter())

    def rows_of():
        return _rows(classes, table, seed, shuffled, reference=whole)

    def vanishing_of(rows):
        return np.array([v in vanish for v in rows.domain.column.to_list()])

    stretch, dense = _both_passes(rows_of, vanishing_of, t, slack)
    assert _same(stretch, dense)


def test_dense_pass_rejects_duplicate_pairs():
    old = emd_arrays._kernel.set_dense_ratio(1e18)
    try:
        rows = EncodedRows(np.array([0, 0]), np.array([1, 1]), np.array([2, 3]), classes=1,
                           n_sensitive=2, reference=np.array([4, 5]),
                           domain=SensitiveDomain(pl.DataFrame({"s": [1, 2]})))
        before = emd_arrays.KERNEL
        emd_arrays.KERNEL = True
        try:
            with pytest.raises(ValueError, match="appears twice"):
                emd_arrays.ordered_emd(rows)
        finally:
            emd_arrays.KERNEL = before
    finally:
        emd_arrays._kernel.set_dense_ratio(old)


# --- t exactly reached --------------------------------------------------------------------------

BOUNDARY = [
    # (class counts, table counts, t): the class's ordered EMD is exactly t
    (Counter({3: 7, 10: 3}), Counter({3: 50, 10: 50}), Fraction(1, 5)),
    # m = 3: |7/10 - 1/2| + |1 - 3/4| = 9/20, over m - 1 = 2: 9/40
    (Counter({3: 7, 10: 3}), Counter({3: 50, 10: 25, 25: 25}), Fraction(9, 40)),
    # (0.6 - 0.5) + (0.9 - 0.8) over 2: each difference a little off 1/10 in floats
    (Counter({0: 6, 3: 3, 7: 1}), Counter({0: 10, 3: 6, 7: 4}), Fraction(1, 10)),
]


@pytest.mark.parametrize("case", range(len(BOUNDARY)))
@pytest.mark.parametrize("kernel", [True, False])
def test_t_exactly_reached_passes(case, kernel, monkeypatch):
    cls, table, t = BOUNDARY[case]
    rows = _rows([cls], table, 0, False)
    assert _exact(rows, TCloseness(float(t), "ordered"))[0] == t  # the case is what it says
    monkeypatch.setattr(emd_arrays, "KERNEL", kernel)
    for t_model, passes in ((float(t), True), (float(t) - 1e-12, False)):
        rows = _rows([cls], table, 0, False)
        assert class_verdict(TCloseness(t_model, "ordered"), rows).tolist() == [passes]


# --- bad input ----------------------------------------------------------------------------------


def test_duplicate_pairs_and_bad_arrays_are_errors(monkeypatch):
    monkeypatch.setattr(emd_arrays, "KERNEL", True)  # (also under LDIV_POLARS_NO_KERNEL=1)
    rows = EncodedRows(np.array([0, 0]), np.array([1, 1]), np.array([2, 3]), classes=1,
                       n_sensitive=2, reference=np.array([4, 5]),
                       domain=SensitiveDomain(pl.DataFrame({"s": [1, 2]})))
    with pytest.raises(ValueError, match="appears twice"):
        emd_arrays.ordered_emd(rows)
    k = emd_arrays._kernel
    one = np.zeros(1, np.int64)
    pos, cum_t, st_ = np.array([0, 1]), np.array([4, 9]), np.array([0, 4, 13])
    size, out = np.array([5]), np.zeros(1)
    with pytest.raises(IndexError):  # id 7 out of the ids
        k.ordered_emd(one, np.array([7]), np.array([5]), pos, size, cum_t, st_, 9, out)
    with pytest.raises(IndexError):  # class 3 out of the classes
        k.ordered_emd(np.array([3]), one, np.array([5]), pos, size, cum_t, st_, 9, out)
    with pytest.raises(ValueError):  # st of the wrong length
        k.ordered_emd(one, one, np.array([5]), pos, size, cum_t, st_[:2], 9, out)
    with pytest.raises(TypeError):  # float counts
        k.ordered_emd(one, one, np.array([5.0]), pos, size, cum_t, st_, 9, out)
    assert k.ordered_emd(one, one, np.array([5]), pos, size, cum_t, st_, 9, out) == 0
    assert out[0] == pytest.approx(abs(5 * 9 - 4 * 5) / (5 * 9))


# --- long stretches (the binary search) and 128-bit sums ---------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(20, 60), st.integers(0, 2**31), st.booleans())
def test_wide_domains_and_huge_counts(m, seed, huge):
    """A domain of 20-60 values with few of them per class (stretches past the scan's reach:
    the binary search), and counts near 2**26 (a table of ~10**9 rows: sums past int64, the
    128-bit pass; numpy's ``C N`` still fits in int64 there)."""
    rng = np.random.default_rng(seed)
    scale = 2**26 if huge else 50
    table = np.zeros(m, dtype=np.int64)
    cls, s, n = [], [], []
    for c in range(int(rng.integers(1, 6))):
        ids = np.sort(rng.choice(m, size=int(rng.integers(1, 4)), replace=False))
        for i in ids:
            cls.append(c)
            s.append(int(i))
            n.append(int(rng.integers(1, scale)))
            table[i] += n[-1]
    table += rng.integers(0, scale, size=m)
    dom = SensitiveDomain(pl.DataFrame({"s": list(range(m))}))

    def rows_of():
        return EncodedRows(np.array(cls, dtype=np.int64), np.array(s, dtype=np.int64),
                           np.array(n, dtype=np.int64), classes=max(cls) + 1, n_sensitive=m,
                           reference=table.copy(), domain=dom)

    want = _exact(rows_of(), TCloseness(0.2, "ordered"))
    got = _paths(rows_of)
    for w, k in zip(want, got["kernel"]):
        assert abs(k - float(w)) <= 8 * np.finfo(float).eps * max(float(w), 1e-300)
    assert np.allclose(got["sparse"], got["kernel"], rtol=0, atol=1e-9)
    vanishing = rng.random(m) < 0.3
    terms = {}
    for kernel in (True, False):
        before = emd_arrays.KERNEL
        emd_arrays.KERNEL = kernel
        try:
            terms[kernel] = emd_arrays.ordered_floor_terms(rows_of(), vanishing)
        finally:
            emd_arrays.KERNEL = before
    for i in (0, 1):
        assert np.allclose(terms[True][i], terms[False][i], rtol=0, atol=1e-9)
    stretch, dense = _both_passes(rows_of, lambda rows: vanishing, 0.2, 0.01)
    assert _same(stretch, dense)  # (the 128-bit dense pass too, with huge counts)
