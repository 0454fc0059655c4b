"""Exact results of the minimality-attack paper (App. C/D) against the numbers in the paper
notes and brute-force enumeration of placements."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from ldiv_polars.attacks.minimality import (
    InconsistentReleaseError,
    even_split_bound,
    gg_bucket_posteriors,
    gg_bucket_posteriors_float,
    gg_lemma9,
    gg_lemma10,
    gg_lemma11,
    gg_limit,
    gg_posterior_b1,
    gg_valid_worlds,
    sg_binary_posteriors,
    sg_worst_case,
    theorem6_bound,
)
from ldiv_polars.errors import InvalidParameterError


def brute_gg(m: int, l: int, r: int | None = None, p: Fraction = Fraction(0)):
    """Enumerate every set of positive positions in m buckets of size l; weight p per proper
    prefix that is already binary l-diverse (GG: p = 0 rejects it)."""
    r = m if r is None else r
    total = Fraction(0)
    acc = [Fraction(0)] * m
    for pos in itertools.combinations(range(m * l), r):
        per = [0] * m
        for t in pos:
            per[t // l] += 1
        w = Fraction(1)
        c = 0
        for i in range(m - 1):
            c += per[i]
            if c * l <= (i + 1) * l:   # positives <= size / l
                w *= p
        if w:
            total += w
            for i in range(m):
                acc[i] += w * per[i]
    return total, [a / total / l for a in acc] if total else None


# (l, m) -> l * p(b_1), as listed in the paper notes (verified there by enumeration)
NOTES_TABLE = {
    (3, 3): Fraction(21, 10), (3, 4): Fraction(15, 7), (3, 5): Fraction(13, 6),
    (4, 3): Fraction(15, 7), (4, 4): Fraction(364, 165), (4, 5): Fraction(204, 91),
    (5, 3): Fraction(13, 6),
    (6, 3): Fraction(24, 11), (6, 4): Fraction(77, 34), (6, 5): Fraction(585, 253),
}


@pytest.mark.parametrize(("lm", "expected"), sorted(NOTES_TABLE.items()))
def test_closed_form_table_of_the_notes(lm, expected):
    l, m = lm
    assert l * gg_posterior_b1(m, l) == expected
    assert l * gg_bucket_posteriors(m, l)[0] == expected


@pytest.mark.parametrize("l", range(2, 9))
def test_two_buckets_give_twice_the_intended_risk(l):
    assert l * gg_posterior_b1(2, l) == 2


@pytest.mark.parametrize("m", range(2, 8))
def test_l2_is_certainty(m):
    assert 2 * gg_posterior_b1(m, 2) == 2


@pytest.mark.parametrize(("l", "vector"), [
    (2, [Fraction(2), Fraction(6, 5), Fraction(4, 5), Fraction(0)]),
    (3, [Fraction(15, 7), Fraction(8, 7), Fraction(5, 7), Fraction(0)]),
    (4, [Fraction(364, 165), Fraction(184, 165), Fraction(112, 165), Fraction(0)]),
])
def test_per_bucket_vectors_m4(l, vector):
    assert [l * x for x in gg_bucket_posteriors(4, l)] == vector


@pytest.mark.parametrize(("l", "m", "count"), [(3, 3, 10), (4, 4, 165), (3, 5, 198)])
def test_valid_world_counts(l, m, count):
    assert gg_valid_worlds(m, l) == count


@pytest.mark.parametrize(("l", "m"), [(l, m) for l in range(2, 6) for m in range(2, 6)])
def test_valid_worlds_formula_lemmas_and_brute_force(l, m):
    total, post = brute_gg(m, l)
    assert gg_valid_worlds(m, l) == total
    # C(ml - l, m) / (m - 1) placements
    assert Fraction(math.comb(m * l - l, m), m - 1) == total
    scale = math.factorial(m) * math.factorial(m * l - m)
    nks = {k: gg_lemma9(m, l, k) for k in range(0, m + 1)}
    assert sum(nks.values()) == total * scale
    assert sum(k * v for k, v in nks.items()) == gg_lemma10(m, l)
    assert sum(l * v for v in nks.values()) == gg_lemma11(m, l)
    assert gg_bucket_posteriors(m, l) == post
    assert gg_posterior_b1(m, l) == post[0]


@pytest.mark.parametrize(("m", "l", "r", "p"), [
    (3, 2, 2, Fraction(1, 3)), (4, 2, 3, Fraction(1, 2)), (3, 3, 3, Fraction(3, 5)),
    (2, 4, 1, Fraction(13, 20)), (4, 3, 4, Fraction(1, 5)),
])
def test_rgg_weighting_matches_brute_force(m, l, r, p):
    _, post = brute_gg(m, l, r, p)
    assert gg_bucket_posteriors(m, l, positives=r, p=p) == post
    np.testing.assert_allclose(gg_bucket_posteriors_float(m, l, r, float(p)),
                               [float(x) for x in post], rtol=1e-12, atol=1e-14)


def test_rgg_one_merge_matches_appendix_c4():
    """m = 2 buckets: WS = worlds whose first bucket is diverse (weight p), WN = the others;
    p(b_1) = (p|WS| p(b_1|WS) + |WN| p(b_1|WN)) / (p|WS| + |WN|)."""
    l, r, p = 4, 2, Fraction(2, 5)
    ws = [(a, math.comb(l, a) * math.comb(l, r - a)) for a in range(0, r + 1) if a <= 1]
    wn = [(a, math.comb(l, a) * math.comb(l, r - a)) for a in range(0, r + 1) if a > 1]
    n_ws, n_wn = sum(w for _, w in ws), sum(w for _, w in wn)
    pb1_ws = Fraction(sum(a * w for a, w in ws), n_ws * l)
    pb1_wn = Fraction(sum(a * w for a, w in wn), n_wn * l)
    expected = (p * n_ws * pb1_ws + n_wn * pb1_wn) / (p * n_ws + n_wn)
    assert gg_bucket_posteriors(2, l, positives=r, p=p)[0] == expected


@pytest.mark.parametrize(("l", "m"), [(l, m) for l in range(2, 8) for m in range(2, 9)])
def test_theorem8_ordering_and_theorem6_bound(l, m):
    vec = gg_bucket_posteriors(m, l)
    assert all(a >= b for a, b in zip(vec, vec[1:]))
    assert vec[-1] == 0                     # n_m = 0 (derived from (3) and (4))
    assert sum(vec) * l == m                # the m positives are all somewhere
    assert float(vec[0]) < theorem6_bound(l)
    assert float(vec[0]) <= gg_limit(l) + 1e-15


def test_limit_in_m():
    for l in (3, 6):
        assert abs(float(gg_posterior_b1(400, l)) - gg_limit(l)) < 5e-3 / l
    assert round(3 * gg_limit(3), 4) == 2.25
    assert round(6 * gg_limit(6), 3) == 2.488


def test_float_dp_on_large_groups_matches_exact():
    exact = gg_bucket_posteriors(30, 4)
    np.testing.assert_allclose(gg_bucket_posteriors_float(30, 4, 30), [float(x) for x in exact],
                               rtol=1e-10)


def brute_sg(n: int, r: int, l: int, k: int = 1):
    nl = (n + 1) // 2
    total = 0
    left = 0
    for pos in itertools.combinations(range(n), r):
        a = sum(1 for t in pos if t < nl)
        split_ok = (n - nl) >= k and nl >= k and a * l <= nl and (r - a) * l <= n - nl
        if not split_ok:
            total += 1
            left += a
    return Fraction(left, total * nl), Fraction(r * total - left, total * (n - nl))


@pytest.mark.parametrize(("n", "r", "l", "k"), [(7, 2, 2, 1), (11, 2, 3, 1), (9, 2, 3, 1),
                                                 (12, 3, 3, 1), (15, 2, 4, 1), (10, 2, 4, 1),
                                                 (11, 2, 3, 3), (5, 1, 3, 1), (23, 2, 6, 6)])
def test_sg_posteriors_match_brute_force(n, r, l, k):
    assert sg_binary_posteriors(n, r, l, k) == brute_sg(n, r, l, k)


def test_sg_children_smaller_than_l_are_not_covered_by_theorem5():
    # 5 rows, 1 positive, l = 3, no minimum size: halves 3 | 2; the split is rejected only when
    # the positive sits in the 2-row half, which an attacker then knows (posterior 1/2 > 1/3).
    # Theorem 5 assumes children of at least l rows (k = l), where this cannot happen.
    assert sg_binary_posteriors(5, 1, 3) == (Fraction(0), Fraction(1, 2))
    assert sg_binary_posteriors(5, 1, 3, k=3) == (Fraction(1, 5), Fraction(1, 5))


@pytest.mark.parametrize("l", range(2, 8))
def test_sg_worst_case_is_2_over_2l_minus_1(l):
    """Children of at least l rows (k = l), one rejected split (notes, [derived])."""
    worst = Fraction(0)
    arg = None
    for n in range(2, 4 * l + 4):
        for r in range(0, n // l + 1):      # the whole group must be diverse
            try:
                a, b = sg_binary_posteriors(n, r, l, k=l)
            except InconsistentReleaseError:
                continue
            if max(a, b) > worst:
                worst, arg = max(a, b), (n, r)
    assert worst == sg_worst_case(l) == Fraction(2, 2 * l - 1)
    assert arg == (4 * l - 1, 2)
    # inside the appendix bound 1/(l - 2/3); above the main text's 1/(l - 2/l) from l = 5 on
    assert worst <= 1 / (l - Fraction(2, 3))
    if l >= 5:
        assert worst > 1 / (l - Fraction(2, l))
    # Theorem 5's s/((s-1) l) with children 2l and 2l-1 (s = 2l)
    assert worst <= even_split_bound(2 * l, l) * Fraction(2 * l, 2 * l) + Fraction(1, 10**9)


def test_bad_parameters():
    with pytest.raises(InvalidParameterError):
        gg_posterior_b1(1, 3)
    with pytest.raises(InvalidParameterError):
        gg_bucket_posteriors(3, 1)
    with pytest.raises(InconsistentReleaseError):
        gg_bucket_posteriors(3, 3, positives=4)
    with pytest.raises(InconsistentReleaseError):   # GG would have closed after bucket 1
        gg_bucket_posteriors(3, 3, positives=1)
    with pytest.raises(InvalidParameterError):
        gg_bucket_posteriors(3, 3, p=1.0)
