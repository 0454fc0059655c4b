"""The capped (water-filling) suppression floor of entropy l-diversity
(``models/entropy_floor.py``) against a brute force over every sub-multiset of a class.

The passing parts of any split pass together (entropy is concave), so the rows in failing
parts are at least ``|C| - max{|D| : D within C, H(D) >= ln l}``. The brute force finds that
maximum over every integer sub-multiset, each judged exactly (``entropy_sign`` near the
threshold). The floor must never exceed that bound (soundness), and must stay within the
capped values' count of it (its real-valued relaxation: rounding the cap down to an integer
keeps the entropy at least ``ln l`` and loses less than one row per capped value). The compiled
kernel (``models/_floors.c``) gives the numpy twin's floor.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.models import EntropyLDiversity
from ldiv_polars.models.encoded import EncodedRows
from ldiv_polars.models import entropy_floor
from ldiv_polars.models.entropy_floor import capped_entropy_floor, capped_entropy_floor_numpy
from ldiv_polars.models.exact import decimal, entropy_sign


def _passes(d: tuple[int, ...], l: float) -> bool:
    """Exact ``H(d) >= ln l`` (float far from the threshold, exact routine near it)."""
    d = tuple(x for x in d if x)
    if not d:
        return False
    t = sum(d)
    h = math.log(t) - sum(x * math.log(x) for x in d) / t
    if abs(h - math.log(l)) > 1e-9:
        return h > math.log(l)
    return entropy_sign(d, decimal(l)) >= 0


def _brute_floor(counts: list[int], l: float) -> int:
    """``|C|`` less the largest integer sub-multiset passing entropy l."""
    best = 0
    for d in itertools.product(*(range(c + 1) for c in counts)):
        if sum(d) > best and _passes(d, l):
            best = sum(d)
    return sum(counts) - best


def _rows(classes: list[list[int]]) -> EncodedRows:
    cls, s, n = [], [], []
    for i, counts in enumerate(classes):
        for v, c in enumerate(counts):
            if c:
                cls.append(i)
                s.append(v)
                n.append(c)
    return EncodedRows(np.array(cls, dtype=np.int64), np.array(s, dtype=np.int64),
                       np.array(n, dtype=np.int64), classes=len(classes), n_sensitive=5)


CLASS = st.lists(st.integers(0, 9), min_size=2, max_size=4).filter(lambda c: sum(c) > 0)


@settings(max_examples=60, deadline=None)
@given(classes=st.lists(CLASS, min_size=1, max_size=3),
       l=st.sampled_from([1.5, 2, 2.5, 3, 3.5, 4]))
def test_capped_floor_is_sound_and_nearly_tight(classes, l):
    rows = _rows(classes)
    every = np.ones(len(classes), dtype=bool)
    floor = capped_entropy_floor_numpy(rows, l, every)
    if entropy_floor.KERNEL:  # the compiled twin: the same floor within rounding
        compiled = capped_entropy_floor(rows, l, every)
        assert np.allclose(compiled, floor, rtol=1e-9, atol=1e-6), (classes, compiled, floor)
    model = EntropyLDiversity(l)
    model_floor = model.tighter_floor(rows, 0.0, model.suppression_floor(rows, 0.0))
    for i, counts in enumerate(classes):
        exact = _brute_floor(counts, l)
        values = sum(1 for c in counts if c)
        assert floor[i] <= exact + 1e-9, (counts, l, floor[i], exact)
        assert model_floor[i] <= exact + 1e-9, (counts, l, model_floor[i], exact)
        if values >= math.ceil(l):
            # the real-valued relaxation loses less than a row per capped value
            assert floor[i] >= exact - (values - 1) - 1e-6, (counts, l, floor[i], exact)


def test_capped_floor_beats_the_linear_one():
    """(10, 5, 5) under l = 3: the linear floor |C| (1 - H / ln l) is about 1.07 rows, the
    exact one 5 (only (5, 5, 5) passes among the largest sub-multisets); a class at the
    threshold ((1, 1, 1), H = ln 3 exactly) has floor 0."""
    rows = _rows([[10, 5, 5], [1, 1, 1], [7, 3, 1]])
    model = EntropyLDiversity(3)
    cheap = model.suppression_floor(rows, 0.0)
    floor = model.tighter_floor(rows, 0.0, cheap)
    assert abs(floor[0] - 5) < 0.05 and floor[1] == 0 and cheap[0] < 1.1
    assert abs(floor[2] - _brute_floor([7, 3, 1], 3)) < 0.05  # 8: only (1, 1, 1) passes


def test_kernel_skips_unselected_classes_and_checks_its_input():
    """Only the selected classes are written; rows not grouped by class are left to numpy,
    which gives the same floors."""
    if not entropy_floor.KERNEL:
        return
    rows = _rows([[10, 5, 5], [7, 3, 1]])
    assert capped_entropy_floor(rows, 3, np.array([False, True]))[0] == 0.0
    shuffled = EncodedRows(rows.cls[::-1].copy(), rows.s[::-1].copy(), rows.n[::-1].copy(),
                           classes=2, n_sensitive=5)
    both = np.array([True, True])
    assert np.allclose(capped_entropy_floor(shuffled, 3, both), capped_entropy_floor(rows, 3, both))
    out = np.zeros(2)
    with pytest.raises(ValueError):
        entropy_floor._kernel.capped_entropy(rows.cls, rows.n[:-1], np.ones(2, np.uint8), 3.0,
                                             out)
