"""Audit of session 16's per-class statistics kernel (``class_stats`` in ``_floors.c``, issue 23,
branch audit8): entropy and recursive (c,l)-diversity verdicts read from it, on classes built at
their boundaries (a class spread uniformly over exactly l values: ``H = ln l``; ``r1`` exactly
``c`` times the tail; ties among the j largest counts; one-value classes; classes with no rows),
equal the exact verdict in integers and fractions, with the kernel and with its numpy twin; the
array form's own verdict is wrong only where it says it is uncertain."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldiv_polars.models import class_stats as cs
from ldiv_polars.models.encoded import EncodedRows, class_verdict
from ldiv_polars.models.l_diversity import EntropyLDiversity, RecursiveCLDiversity


def _entropy_passes(counts: list[int], l: Fraction) -> bool:
    """``H >= ln l`` in integers: ``N^N q^N >= p^N prod n^n`` for ``l = p/q`` (no rows: pass)."""
    if not counts:
        return True
    total = sum(counts)
    prod = 1
    for n in counts:
        prod *= n ** n
    return total ** total * l.denominator ** total >= l.numerator ** total * prod


def _recursive_passes(counts: list[int], c: Fraction, l: int) -> bool:
    """``r1 < c (r_l + ... + r_m)`` in fractions (no rows: pass)."""
    if not counts:
        return True
    ranked = sorted(counts, reverse=True)
    return ranked[0] < c * sum(ranked[l - 1:])


@st.composite
def boundary_classes(draw):
    """Classes at the models' boundaries: uniform over 1..5 values (H = ln m), one value,
    none, ties in the largest counts, a largest count a multiple of the rest, random ones."""
    classes = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["uniform", "one", "empty", "ties", "multiple", "random"]))
        a = draw(st.integers(1, 9))
        m = draw(st.integers(1, 5))
        if kind == "uniform":
            counts = [a] * m
        elif kind == "one":
            counts = [a]
        elif kind == "empty":
            counts = []
        elif kind == "ties":
            counts = [a + 1] * draw(st.integers(2, 4)) + [a] * m
        elif kind == "multiple":
            rest = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
            counts = [draw(st.integers(1, 3)) * sum(rest)] + rest
        else:
            counts = draw(st.lists(st.integers(1, 12), min_size=1, max_size=6))
        classes.append(draw(st.permutations(counts)))
    return classes


def _rows(classes: list[list[int]]) -> EncodedRows:
    cls = [c for c, counts in enumerate(classes) for _ in counts]
    s = [v for counts in classes for v in range(len(counts))]
    n = [k for counts in classes for k in counts]
    return EncodedRows(np.array(cls, dtype=np.int64), np.array(s, dtype=np.int64),
                       np.array(n, dtype=np.int64), classes=len(classes),
                       n_sensitive=max([len(c) for c in classes] + [1]))


MODELS = [(EntropyLDiversity(l), lambda counts, l=l: _entropy_passes(counts, Fraction(str(l))))
          for l in (2, 3, 4, 2.5, 1.5)] + \
         [(RecursiveCLDiversity(c, l),
           lambda counts, c=c, l=l: _recursive_passes(counts, Fraction(str(c)), l))
          for c, l in ((1, 2), (2, 2), (3, 3), (0.5, 2), (1.5, 3), (0.1, 2), (3, 4))]


@pytest.mark.parametrize("kernel", [True, False])
@settings(max_examples=60, deadline=None)
@given(classes=boundary_classes())
def test_boundary_classes_get_the_exact_verdict(kernel, classes):
    """Each model's exact class verdict (array form, uncertain classes decided exactly) is
    the integer/fraction verdict, with the kernel and with the numpy twin; the array form's
    undecided verdict differs from it only on classes it marks uncertain."""
    if kernel and cs._kernel is None:
        pytest.skip("the C kernel is not built")
    was, cs.KERNEL = cs.KERNEL, kernel
    try:
        for model, oracle in MODELS:
            rows = _rows(classes)  # (fresh rows: nothing cached from another model)
            want = [oracle(counts) for counts in classes]
            assert class_verdict(model, rows).tolist() == want, (model.params(), classes)
            v = model.array_verdict(_rows(classes))
            wrong = np.asarray(v.passed, dtype=bool) != np.array(want, dtype=bool)
            unsure = (np.zeros(len(classes), dtype=bool) if v.uncertain is None
                      else np.asarray(v.uncertain, dtype=bool))
            assert not (wrong & ~unsure).any(), (model.params(), classes)
    finally:
        cs.KERNEL = was


def test_uniform_class_exactly_at_ln_l_passes_and_one_short_fails():
    """A class spread uniformly over exactly l values has H = ln l: it passes entropy l
    (>= is not >), and one row more on one value makes it fail; recursive (c,l) with r1 equal
    to c times the tail fails (strict <), one row less passes."""
    for a in (1, 2, 7, 1000):
        assert class_verdict(EntropyLDiversity(3), _rows([[a, a, a]])).tolist() == [True]
        assert class_verdict(EntropyLDiversity(3), _rows([[a + 1, a, a]])).tolist() == [False]
    assert class_verdict(RecursiveCLDiversity(2, 2), _rows([[6, 2, 1], [5, 2, 1]])).tolist() \
        == [False, True]
    assert class_verdict(RecursiveCLDiversity(0.1, 2), _rows([[1, 10], [1, 11]])).tolist() \
        == [False, False]  # (r1 = 10 or 11 against 0.1 * 1)
    assert class_verdict(RecursiveCLDiversity(0.1, 2), _rows([[1, 1]] + [[]])).tolist() \
        == [False, True]
