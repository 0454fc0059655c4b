"""Prop. 3.1: formula, eq. (3) construction, brute force, and real l-diverse tables that the
linkage attack collapses to the worst case."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.attack import link, post_linkage
from ldiv_polars.linkage.worst_case import (
    brute_force_worst_case_l,
    worst_case_construction,
    worst_case_l,
    worst_case_releases,
)


@pytest.mark.parametrize(("L", "t", "l", "expected"), [(6, 2, 5, 3), (6, 3, 6, 4), (6, 2, 4, 1)])
def test_issue_examples(L, t, l, expected):
    assert worst_case_l(L, t, l) == expected
    assert brute_force_worst_case_l(L, t, l) == expected
    rels, target = worst_case_releases(L, t, l)
    assert link(rels, target).diversity == expected


def test_notes_sequences():
    assert [worst_case_l(6, 2, l) for l in range(1, 8)] == [1, 1, 1, 1, 3, 5, 7]
    assert [worst_case_l(6, 3, l) for l in range(1, 8)] == [1, 1, 1, 1, 1, 4, 7]
    assert worst_case_construction(6, 2, 4)[:, 1:].tolist() == [[1, 1, 1, 0, 0, 0],
                                                                [0, 0, 0, 1, 1, 1]]


@pytest.mark.parametrize(("L", "t"), [(4, 2), (6, 2), (6, 3), (8, 2), (8, 4), (9, 3), (6, 6),
                                      (10, 5)])
def test_formula_equals_brute_force_and_construction(L, t):
    for l in range(1, L + 2):
        formula = worst_case_l(L, t, l)
        assert brute_force_worst_case_l(L, t, l) == formula
        iota = worst_case_construction(L, t, l)
        assert (iota.sum(axis=1) == l).all() and (iota[:, 0] == 1).all()
        assert int(iota.all(axis=0).sum()) == formula
        assert formula == max(1, L + 1 - t * (L - l + 1))  # the notes' closed form
        # Lemma 3.2 threshold
        assert (formula > 1) == (l > Fraction(L * (t - 1), t) + 1)


def test_corollary_3_3():
    for L in (2, 4, 6, 8):
        for l in range(1, L + 2):
            expected = 1 if l <= L // 2 + 1 else 2 * l - L - 1
            assert worst_case_l(L, 2, l) == expected


@pytest.mark.parametrize(("L", "t", "l"), [(6, 2, 5), (6, 3, 6), (6, 2, 4), (8, 4, 8), (4, 2, 3),
                                           (9, 3, 8)])
def test_generated_tables_are_l_diverse_and_collapse(L, t, l):
    rels, target = worst_case_releases(L, t, l)
    assert len(rels) == t
    for r in rels:
        res = r.check(l)  # foundation checker: every table is l-diverse
        assert res.passed and res.achieved == l
    lk = link(rels, target)
    assert lk.diversity == worst_case_l(L, t, l)
    assert set(lk.counts["s"].to_list()) == {
        f"s{i}" for i in np.flatnonzero(worst_case_construction(L, t, l).all(axis=0))}
    assert post_linkage(rels).l_t == worst_case_l(L, t, l)


def test_brute_force_without_divisibility():
    # t does not divide L: the brute force still gives the intersection bound
    assert brute_force_worst_case_l(5, 2, 5) == max(1, 5 + 1 - 2 * (5 - 5 + 1))


@pytest.mark.parametrize(("args", "msg"), [((6, 4, 3), "t \\| L"), ((6, 7, 3), "t must be"),
                                           ((6, 2, 8), "l must be"), ((1, 2, 1), "L must"),
                                           ((6, 1, 2), "t must")])
def test_bad_parameters(args, msg):
    with pytest.raises(InvalidParameterError, match=msg):
        worst_case_l(*args)
    with pytest.raises(InvalidParameterError):
        brute_force_worst_case_l(13, 2, 3)
