"""The minimality attack (Cormode, Srivastava, Li, Li, PVLDB 2010) and its exact special cases.

An adversary who knows the grouping algorithm rejects every possible world (assignment of the
released sensitive values to the tuples of a group) on which the algorithm would not have
produced the published group, and reads its belief off the remaining worlds. This module gives

- the **exact** posterior for Greedy Grouping (GG) under *binary* l-diversity: the closed form of
  ``l * p(b_1)`` (proof of Theorem 6), Lemmas 9-11, and the full per-bucket vector by a dynamic
  programme over buckets (which also handles RGG's weighting of voluntary merges by ``p``);
- the exact posterior for Symmetric Grouping (SG) under binary l-diversity (one rejected split);
- a **rejection Monte Carlo** attack for any deterministic grouper, vectorized over worlds with
  numpy, one group at a time (groups are independent, §4.2), seeded; worlds are weighted (RGG:
  ``p`` per voluntary merge) instead of merely accepted; small groups are enumerated exactly;
- :func:`minimality_attack`, which analyses a grouped release and returns a
  :class:`MinimalityReport` (per-tuple posterior, vulnerable fraction = share of tuples whose
  posterior exceeds 1/l, max risk as a multiple of 1/l).

>>> from fractions import Fraction
>>> gg_posterior_b1(3, 3) * 3            # l * p(b_1) for m = 3 buckets of size l = 3
Fraction(21, 10)
>>> [3 * p for p in gg_bucket_posteriors(4, 3)]   # Theorem 8: non-increasing
[Fraction(15, 7), Fraction(8, 7), Fraction(5, 7), Fraction(0, 1)]
>>> sg_worst_case(6)
Fraction(2, 11)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np
import polars as pl

from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import (
    as_names,
    reject_nested,
    require_int_at_least,
    require_real,
)
from ldiv_polars.attacks import ALGORITHMS
from ldiv_polars.errors import InvalidParameterError, LdivError, UnknownColumnError

__all__ = [
    "Requirement",
    "GGDecision",
    "SGDecision",
    "SplitDecision",
    "GroupPosterior",
    "GroupRisk",
    "MinimalityReport",
    "InconsistentReleaseError",
    "gg_lemma9",
    "gg_lemma10",
    "gg_lemma11",
    "gg_posterior_b1",
    "gg_valid_worlds",
    "gg_bucket_posteriors",
    "gg_bucket_posteriors_float",
    "sg_binary_posteriors",
    "theorem6_bound",
    "gg_limit",
    "even_split_bound",
    "sg_worst_case",
    "rejection_posterior",
    "exact_posterior",
    "mondrian_candidate_masks",
    "minimality_attack",
]

Algorithm = Literal["gg", "rgg", "sg", "mondrian-strict", "mondrian-relaxed"]
_EPS = 1e-9


class InconsistentReleaseError(LdivError, ValueError):
    """The release could not have been produced by the stated algorithm (e.g. a GG group whose
    size is not a multiple of l, or a group that violates the requirement)."""


# ---------------------------------------------------------------------------------------------
# Exact results for GG under binary l-diversity (App. D)
# ---------------------------------------------------------------------------------------------


def _check_ml(m: int, l: int, *, m_low: int = 2) -> tuple[int, int]:
    return require_int_at_least("m", m, m_low), require_int_at_least("l", l, 2)


def gg_lemma9(m: int, l: int, k: int) -> int:
    """Lemma 9: ``N_k``, the number of valid worlds (SA permutations) with ``n_1 = k`` positives
    in the first bucket, for a GG group of ``m`` buckets of size ``l`` under binary l-diversity.

    >>> sum(gg_lemma9(3, 3, k) for k in (2, 3)) // (math.factorial(3) * math.factorial(6))
    10
    """
    m, l = _check_ml(m, l)
    k = require_int_at_least("k", k, 0)
    if k < 2 or k > min(m, l):
        return 0
    n = Fraction(k - 1, m - 1) * math.comb(l, k) * math.comb(m * l - l, m - k)
    n *= math.factorial(m) * math.factorial(m * l - m)
    assert n.denominator == 1
    return int(n)


def gg_lemma10(m: int, l: int) -> int:
    """Lemma 10: ``sum_k k N_k = l(l-1)/(m-1) C(ml-2, m-2) m! (ml-m)!``."""
    m, l = _check_ml(m, l)
    v = Fraction(l * (l - 1), m - 1) * math.comb(m * l - 2, m - 2)
    v *= math.factorial(m) * math.factorial(m * l - m)
    assert v.denominator == 1
    return int(v)


def gg_lemma11(m: int, l: int) -> int:
    """Lemma 11 (with its stated factor l): ``sum_k l N_k = l/(m-1) C(ml-l, m) m! (ml-m)!``."""
    m, l = _check_ml(m, l)
    v = Fraction(l, m - 1) * math.comb(m * l - l, m) * math.factorial(m) * math.factorial(m * l - m)
    assert v.denominator == 1
    return int(v)


def gg_posterior_b1(m: int, l: int) -> Fraction:
    """Closed form of the adversary's belief that a tuple of the first bucket is positive, for a
    GG group of ``m >= 2`` buckets of size ``l`` under binary l-diversity:
    ``p(b_1) = (1/l) prod_{j=1}^{l-1} (ml-1-j)/(ml-m-j)`` (proof of Theorem 6).

    >>> 6 * gg_posterior_b1(5, 6)
    Fraction(585, 253)
    >>> gg_posterior_b1(2, 7) * 7
    Fraction(2, 1)
    """
    m, l = _check_ml(m, l)
    v = Fraction(1)
    for j in range(1, l):
        v *= Fraction(m * l - 1 - j, m * l - m - j)
    return v / l


def theorem6_bound(l: float) -> float:
    """Theorem 6: under GG every bucket posterior is below ``e / l``."""
    return math.e / require_real("l", l, low=1.0, low_open=True)


def gg_limit(l: int) -> float:
    """``lim_{m -> inf} p(b_1) = (l/(l-1))^(l-1) / l`` for fixed l (notes, [derived])."""
    l = require_int_at_least("l", l, 2)
    return (l / (l - 1)) ** (l - 1) / l


def even_split_bound(s: int, l: float) -> Fraction | float:
    """Theorem 5's bound ``s / ((s-1) l)`` for an even split into children of sizes s-1 and s."""
    s = require_int_at_least("s", s, 2)
    if isinstance(l, int) and not isinstance(l, bool):
        return Fraction(s, (s - 1) * l)
    return s / ((s - 1) * require_real("l", l, low=1.0))


def sg_worst_case(l: int) -> Fraction:
    """The worst posterior after one rejected SG split under binary l-diversity: ``2/(2l-1)``
    (n = 4l-1 tuples, 2 positives), i.e. ``1/(l - 1/2)``, inside the appendix bound 1/(l-2/3)."""
    l = require_int_at_least("l", l, 2)
    return Fraction(2, 2 * l - 1)


def _prefix_factor(i: int, c: int, m: int, r: int, p: Fraction) -> Fraction:
    """Weight of reaching cumulative count c after bucket i (1-based) in a GG/RGG group."""
    if i == m:
        return Fraction(1) if c == r else Fraction(0)
    # prefix of i buckets has i*l tuples; binary l-diverse iff positives <= i
    return p if c <= i else Fraction(1)


@lru_cache(maxsize=4096)
def _gg_dp(m: int, l: int, r: int, p: Fraction) -> tuple[Fraction, tuple[Fraction, ...]]:
    """Total weight of valid placements and E[n_i] per bucket (exact)."""
    choose = [math.comb(l, x) for x in range(l + 1)]
    fwd: list[dict[int, Fraction]] = [{0: Fraction(1)}]
    for i in range(1, m + 1):
        nxt: dict[int, Fraction] = {}
        for c, w in fwd[-1].items():
            for x in range(0, min(l, r - c) + 1):
                f = _prefix_factor(i, c + x, m, r, p)
                if f:
                    nxt[c + x] = nxt.get(c + x, Fraction(0)) + w * choose[x] * f
        fwd.append(nxt)
    total = fwd[m].get(r, Fraction(0))
    bwd: list[dict[int, Fraction]] = [dict() for _ in range(m + 1)]
    bwd[m] = {r: Fraction(1)}
    for i in range(m - 1, -1, -1):
        cur: dict[int, Fraction] = {}
        for c in fwd[i]:
            acc = Fraction(0)
            for x in range(0, min(l, r - c) + 1):
                nb = bwd[i + 1].get(c + x)
                if nb:
                    acc += choose[x] * _prefix_factor(i + 1, c + x, m, r, p) * nb
            if acc:
                cur[c] = acc
        bwd[i] = cur
    expect = []
    for i in range(1, m + 1):
        e = Fraction(0)
        for c, w in fwd[i - 1].items():
            for x in range(1, min(l, r - c) + 1):
                nb = bwd[i].get(c + x)
                if nb:
                    e += w * choose[x] * _prefix_factor(i, c + x, m, r, p) * x * nb
        expect.append(e / total if total else Fraction(0))
    return total, tuple(expect)


def gg_bucket_posteriors_float(m: int, l: int, positives: int, p: float = 0.0) -> np.ndarray:
    """Float version of :func:`gg_bucket_posteriors` for large groups: the same forward/backward
    programme over the cumulative positive count, banded (``x <= l`` per bucket) and rescaled at
    every step, in ``O(m * r * l)`` numpy work. Agrees with the exact version to ~1e-12.

    >>> np.round(gg_bucket_posteriors_float(4, 3, 4) * 3, 6).tolist()
    [2.142857, 1.142857, 0.714286, 0.0]
    """
    m = require_int_at_least("m", m, 1)
    l = require_int_at_least("l", l, 2)
    r = require_int_at_least("positives", positives, 0)
    choose = np.array([math.comb(l, x) for x in range(l + 1)], dtype=float)
    fwd = _gg_forward(m, l, r, p, choose)
    bwd = _gg_backward(m, l, r, p, choose)
    post = np.zeros(m)
    for i in range(1, m + 1):
        g = _gg_factor(i, m, r, p) * bwd[i]
        num = 0.0
        den = 0.0
        for x in range(min(l, r) + 1):
            t = fwd[i - 1][: r + 1 - x] * choose[x] * g[x:]
            num += x * t.sum()
            den += t.sum()
        post[i - 1] = num / den / l if den > 0 else 0.0
    return post


def _gg_factor(i: int, m: int, r: int, p: float) -> np.ndarray:
    """Per cumulative positive count ``c`` after bucket ``i``: the weight of GG going on (``p``
    where the prefix already passes, ``c <= i``; 1 otherwise); after the last bucket, 1 only
    at ``c = r``."""
    states = np.arange(r + 1)
    if i == m:
        return (states == r).astype(float)
    return np.where(states <= i, p, 1.0)


def _gg_forward(m: int, l: int, r: int, p: float, choose: np.ndarray) -> list[np.ndarray]:
    """The forward programme: after bucket ``i`` (0..m), the rescaled weight of each cumulative
    positive count. Raises :class:`InconsistentReleaseError` when no world reaches a bucket."""
    fwd = [np.zeros(r + 1)]
    fwd[0][0] = 1.0
    for i in range(1, m + 1):
        v = np.zeros(r + 1)
        for x in range(min(l, r) + 1):
            v[x:] += fwd[-1][: r + 1 - x] * choose[x]
        v *= _gg_factor(i, m, r, p)
        tot = v.sum()
        if tot <= 0:
            raise InconsistentReleaseError(
                f"no world is consistent with a GG group of {m} bucket(s) of size {l} and {r} "
                f"positive(s) at p={p}: GG would have closed the group earlier"
            )
        fwd.append(v / tot)
    return fwd


def _gg_backward(m: int, l: int, r: int, p: float, choose: np.ndarray) -> list[np.ndarray]:
    """The backward programme: before bucket ``i + 1``, the rescaled weight of completing the
    group from each cumulative positive count."""
    states = np.arange(r + 1)
    bwd = [np.zeros(r + 1) for _ in range(m + 1)]
    bwd[m] = (states == r).astype(float)
    for i in range(m, 0, -1):
        # bwd[i-1][c] = sum_x choose[x] * factor_i(c+x) * bwd[i][c+x]
        g = _gg_factor(i, m, r, p) * bwd[i]
        out = np.zeros(r + 1)
        for x in range(min(l, r) + 1):
            out[: r + 1 - x] += choose[x] * g[x:]
        s_ = out.sum()
        bwd[i - 1] = out / s_ if s_ > 0 else out
    return bwd


def gg_valid_worlds(m: int, l: int, *, positives: int | None = None) -> int:
    """Number of placements of the positives (valid worlds divided by ``m!(ml-m)!`` when
    ``positives = m``) in a GG group of ``m`` buckets of size ``l`` under binary l-diversity:
    every proper prefix fails, the whole group passes. Equals ``C(ml-l, m)/(m-1)`` for m >= 2.

    >>> gg_valid_worlds(3, 3), gg_valid_worlds(4, 4), gg_valid_worlds(5, 3)
    (10, 165, 198)
    """
    m = require_int_at_least("m", m, 1)
    l = require_int_at_least("l", l, 2)
    r = m if positives is None else require_int_at_least("positives", positives, 0)
    total, _ = _gg_dp(m, l, r, Fraction(0))
    assert total.denominator == 1
    return int(total)


def gg_bucket_posteriors(
    m: int, l: int, *, positives: int | None = None, p: float | Fraction = 0
) -> list[Fraction]:
    """Exact per-bucket posteriors ``p(b_1), ..., p(b_m)`` that a tuple is positive, for a group of
    ``m`` buckets of size ``l`` produced by GG (``p = 0``) or RGG (merge probability ``p``) under
    binary l-diversity, holding ``positives`` positives (default m, the only possibility for GG
    when m >= 2). Each world is weighted by ``p`` per voluntary merge (a proper prefix that was
    already diverse); the paper's App. C.4 is the one-merge case of this weighting. Raises
    :class:`InconsistentReleaseError` when no world is consistent with such a group (it is not
    binary l-diverse, or GG would have closed it earlier).

    >>> [2 * x for x in gg_bucket_posteriors(4, 2)]
    [Fraction(2, 1), Fraction(6, 5), Fraction(4, 5), Fraction(0, 1)]
    >>> gg_bucket_posteriors(1, 5, positives=1)
    [Fraction(1, 5)]
    """
    m = require_int_at_least("m", m, 1)
    l = require_int_at_least("l", l, 2)
    r = m if positives is None else require_int_at_least("positives", positives, 0)
    if r > m:
        raise InconsistentReleaseError(
            f"a group of {m} bucket(s) of size {l} with {r} positives is not binary {l}-diverse"
        )
    pf = p if isinstance(p, Fraction) else Fraction(str(require_real("p", p, low=0, high=1,
                                                                     high_open=True)))
    total, expect = _gg_dp(m, l, r, pf)
    if total == 0:
        raise InconsistentReleaseError(
            f"no world is consistent with a GG group of {m} bucket(s) of size {l} and {r} "
            f"positive(s) at p={p}: GG would have closed the group earlier"
        )
    return [e / l for e in expect]


def sg_binary_posteriors(size: int, positives: int, l: int, k: int = 1
                         ) -> tuple[Fraction, Fraction]:
    """Exact posteriors (left half, right half) that a tuple is positive in a group kept by SG
    under binary l-diversity: the split into ``ceil(size/2)`` and ``floor(size/2)`` tuples was
    rejected, i.e. at least one half is not diverse (or has fewer than ``k`` tuples, in which
    case every arrangement is consistent and the posterior is the group's positive share).
    Raises :class:`InconsistentReleaseError` when SG would have split the group.

    >>> sg_binary_posteriors(4 * 6 - 1, 2, 6)     # both positives must be in the right half
    (Fraction(0, 1), Fraction(2, 11))
    """
    size = require_int_at_least("size", size, 1)
    r = require_int_at_least("positives", positives, 0)
    l = require_int_at_least("l", l, 2)
    k = require_int_at_least("k", k, 1)
    nl, nr = (size + 1) // 2, size // 2
    total = Fraction(0)
    left_pos = Fraction(0)
    for a in range(max(0, r - nr), min(nl, r) + 1):
        w = math.comb(nl, a) * math.comb(nr, r - a)
        split_ok = nr >= k and nr > 0 and a * l <= nl and (r - a) * l <= nr
        if split_ok:
            continue
        total += w
        left_pos += w * a
    if total == 0:
        raise InconsistentReleaseError(
            f"SG would have split a group of {size} with {r} positive(s) under binary {l}-diversity"
        )
    pl_ = left_pos / total / nl
    pr_ = (Fraction(r) - left_pos / total) / nr if nr else Fraction(0)
    return pl_, pr_


# ---------------------------------------------------------------------------------------------
# Requirements and grouper decisions, vectorized over worlds
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """The privacy requirement the grouper enforced, evaluated on count matrices.

    ``kind``: ``"binary"`` (share of positive values ``<= 1/l``; ``positive`` lists the codes),
    ``"simple"`` (every value ``<= 1/l`` of the group, i.e. (1/l, k)-anonymity),
    ``"distinct"`` (``>= l`` distinct values) or ``"entropy"`` (entropy ``>= ln l``); plus
    ``k`` (minimum group size).

    >>> import numpy as np
    >>> Requirement("binary", 2, positive=frozenset({1})).holds(np.array([[1, 1], [0, 2]]))
    array([ True, False])
    """

    kind: Literal["binary", "simple", "distinct", "entropy"]
    l: float
    positive: frozenset[int] = frozenset()
    k: int = 1

    def __post_init__(self) -> None:
        if self.kind not in ("binary", "simple", "distinct", "entropy"):
            raise InvalidParameterError(
                f"requirement kind must be binary/simple/distinct/entropy, got {self.kind!r}"
            )
        require_real("l", self.l, low=1.0)
        require_int_at_least("k", self.k, 1)

    def holds(self, counts: np.ndarray) -> np.ndarray:
        """Verdict per row of ``counts`` (``(..., V)``, the count of each value code)."""
        counts = np.asarray(counts)
        size = counts.sum(axis=-1)
        ok = size >= self.k
        if self.kind == "binary":
            idx = [c for c in self.positive if c < counts.shape[-1]]
            pos = counts[..., idx].sum(axis=-1) if idx else np.zeros_like(size)
            return ok & (pos * self.l <= size + _EPS)
        if self.kind == "simple":
            return ok & (counts.max(axis=-1) * self.l <= size + _EPS)
        if self.kind == "distinct":
            return ok & ((counts > 0).sum(axis=-1) >= self.l)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = counts / np.maximum(size, 1)[..., None]
            h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)
        return ok & (h >= math.log(self.l) - 1e-12)

    def risk(self, posterior: np.ndarray) -> np.ndarray:
        """Per-tuple risk from a posterior matrix ``(n, V)``: the probability of being positive
        (binary) or the largest probability of any single value."""
        if self.kind == "binary":
            idx = [c for c in self.positive if c < posterior.shape[-1]]
            return posterior[..., idx].sum(axis=-1) if idx else np.zeros(posterior.shape[:-1])
        return posterior.max(axis=-1)


def _counts(worlds: np.ndarray, n_values: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Value counts per world (``(W, V)``), optionally over the positions where ``mask``."""
    w = worlds if mask is None else worlds[:, mask]
    out = np.zeros((worlds.shape[0], n_values), dtype=np.int64)
    for v in range(n_values):
        out[:, v] = (w == v).sum(axis=1)
    return out


class Decision:
    """A grouper's decision about one published group, as a weight per world (0 = the grouper
    could not have produced the group from that world). ``cacheable`` decisions depend only on
    the group's size and value multiset, not on its QI values."""

    cacheable: bool = True

    def blocks(self, n: int) -> np.ndarray:
        """Labels of exchangeable positions (the decision cannot tell them apart), used to
        average Monte Carlo estimates; default: every position on its own."""
        return np.arange(n)

    def weights(self, worlds: np.ndarray, n_values: int) -> np.ndarray:  # pragma: no cover
        """The weight of each world (rows of ``worlds``: value codes in ``[0, n_values)`` of
        the group's tuples in order) under this decision: 0 where the grouper could not have
        produced the group from that world, else the relative probability of the decision.
        Each grouper's decision implements it (``NotImplementedError`` here)."""
        raise NotImplementedError


@dataclass
class GGDecision(Decision):
    """GG (p = 0) or RGG (p > 0) over buckets of ``bucket`` tuples: every proper bucket prefix
    that already satisfies the requirement contributes a factor ``p`` (a voluntary merge), so
    under GG such worlds are rejected."""

    requirement: Requirement
    bucket: int
    p: float = 0.0

    def blocks(self, n: int) -> np.ndarray:
        return np.arange(n) // self.bucket

    def weights(self, worlds: np.ndarray, n_values: int) -> np.ndarray:
        n = worlds.shape[1]
        w = np.ones(worlds.shape[0])
        onehot = worlds[:, :, None] == np.arange(n_values)[None, None, :]
        cum = np.cumsum(onehot, axis=1, dtype=np.int32)
        for b in range(self.bucket, n, self.bucket):
            ok = self.requirement.holds(cum[:, b - 1, :])
            w = np.where(ok, w * self.p, w)
        return w


@dataclass
class SGDecision(Decision):
    """SG kept the group: splitting it into ``ceil(n/2)`` and ``floor(n/2)`` tuples (in order)
    would leave a half that fails the requirement."""

    requirement: Requirement

    def blocks(self, n: int) -> np.ndarray:
        return (np.arange(n) >= (n + 1) // 2).astype(np.int64)

    def weights(self, worlds: np.ndarray, n_values: int) -> np.ndarray:
        n = worlds.shape[1]
        left = np.zeros(n, dtype=bool)
        left[: (n + 1) // 2] = True
        if n < 2:
            return np.ones(worlds.shape[0])
        both = self.requirement.holds(_counts(worlds, n_values, left)) & self.requirement.holds(
            _counts(worlds, n_values, ~left)
        )
        return (~both).astype(float)


@dataclass
class SplitDecision(Decision):
    """A partitioning algorithm (Mondrian) stopped at this group: none of its candidate splits
    (boolean left-side masks over the group's tuples, fixed by the QIs) was allowed."""

    requirement: Requirement
    left_masks: np.ndarray
    cacheable = False

    def blocks(self, n: int) -> np.ndarray:
        masks = np.atleast_2d(self.left_masks).reshape(-1, n)
        _, labels = np.unique(masks.T, axis=0, return_inverse=True)
        return labels.reshape(-1)

    def weights(self, worlds: np.ndarray, n_values: int) -> np.ndarray:
        w = np.ones(worlds.shape[0])
        for mask in np.atleast_2d(self.left_masks):
            mask = np.asarray(mask, dtype=bool)
            if mask.all() or not mask.any():
                continue
            both = self.requirement.holds(_counts(worlds, n_values, mask)) & self.requirement.holds(
                _counts(worlds, n_values, ~mask)
            )
            w = np.where(both, 0.0, w)
        return w


def mondrian_candidate_masks(qi_values: np.ndarray, *, relaxed: bool) -> np.ndarray:
    """Left-side masks of the median splits Mondrian (as implemented in
    :mod:`ldiv_polars.partition.mondrian`) considers for a partition whose tuples have the QI
    matrix ``qi_values`` (``(n, d)``, numeric codes, rows in the release order). Strict: left =
    values below the upper median (or up to it when that would leave the left side empty);
    relaxed: the first ``ceil(n/2)`` tuples in (value, row order). Dimensions with a single value
    give no candidate.

    >>> mondrian_candidate_masks(np.array([[0], [1], [2], [2], [2], [3]]), relaxed=False)
    array([[ True,  True, False, False, False, False]])
    """
    x = np.asarray(qi_values)
    if x.ndim == 1:
        x = x[:, None]
    n = x.shape[0]
    masks = []
    for j in range(x.shape[1]):
        col = x[:, j]
        if n < 2 or col.min() == col.max():
            continue
        if relaxed:
            order = np.lexsort((np.arange(n), col))
            mask = np.zeros(n, dtype=bool)
            mask[order[: (n + 1) // 2]] = True
        else:
            med = np.sort(col, kind="stable")[n // 2]
            mask = col < med
            if not mask.any():
                mask = col <= med
        if mask.any() and not mask.all():
            masks.append(mask)
    return np.array(masks, dtype=bool).reshape(len(masks), n)


# ---------------------------------------------------------------------------------------------
# Posterior of one group: enumeration or rejection sampling
# ---------------------------------------------------------------------------------------------


@dataclass
class GroupPosterior:
    """Posterior of one group: ``posterior[i, v]`` = P(tuple i has value code v | release)."""

    posterior: np.ndarray
    method: str
    drawn: int
    accepted: float
    """Number of accepted worlds (sum of weights for RGG-style weighting)."""


def _multiset_permutations(codes: Sequence[int]) -> Iterable[tuple[int, ...]]:
    items = sorted(codes)
    n = len(items)
    a = list(items)
    # Knuth's algorithm L (lexicographic next permutation), generating each distinct one once
    while True:
        yield tuple(a)
        i = n - 2
        while i >= 0 and a[i] >= a[i + 1]:
            i -= 1
        if i < 0:
            return
        j = n - 1
        while a[j] <= a[i]:
            j -= 1
        a[i], a[j] = a[j], a[i]
        a[i + 1:] = reversed(a[i + 1:])


def _n_arrangements(codes: np.ndarray) -> int:
    _, counts = np.unique(codes, return_counts=True)
    out = math.factorial(len(codes))
    for c in counts:
        out //= math.factorial(int(c))
    return out


def exact_posterior(codes: Sequence[int] | np.ndarray, decision: Decision, n_values: int,
                    *, limit: int = 200_000) -> GroupPosterior:
    """Exact posterior by enumerating every distinct arrangement of the group's values (each
    distinct arrangement stands for the same number of permutation-worlds). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` above ``limit`` arrangements."""
    codes = np.asarray(codes, dtype=np.int64)
    count = _n_arrangements(codes)
    if count > limit:
        raise InvalidParameterError(f"{count} arrangements exceed the enumeration limit {limit}")
    worlds = np.array(list(_multiset_permutations(codes.tolist())), dtype=np.int64)
    return _accumulate(worlds, decision, n_values, "exact", len(worlds))


def _accumulate(worlds: np.ndarray, decision: Decision, n_values: int, method: str,
                drawn: int) -> GroupPosterior:
    w = decision.weights(worlds, n_values)
    total = float(w.sum())
    post = np.zeros((worlds.shape[1], n_values))
    for v in range(n_values):
        post[:, v] = w @ (worlds == v)
    if total > 0:
        post /= total
    return GroupPosterior(post, method, drawn, total)


def rejection_posterior(
    codes: Sequence[int] | np.ndarray,
    decision: Decision,
    n_values: int,
    *,
    samples: int = 4000,
    rng: np.random.Generator | int | None = 0,
    batch_cells: int = 4_000_000,
) -> GroupPosterior:
    """Rejection Monte Carlo posterior of one group (§5.1): draw ``samples`` uniformly random
    permutations of the group's values (vectorized, in batches), weight each by the grouper's
    decision, and average the one-hot value matrices of the accepted worlds. Seeded by ``rng``.
    If no drawn world is accepted the posterior is all zeros and ``accepted == 0``.
    """
    codes = np.asarray(codes, dtype=np.int64)
    samples = require_int_at_least("samples", samples, 1)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n = codes.shape[0]
    per = max(16, min(samples, batch_cells // max(1, n * max(1, n_values))))
    post = np.zeros((n, n_values))
    total = 0.0
    drawn = 0
    while drawn < samples:
        b = min(per, samples - drawn)
        worlds = gen.permuted(np.broadcast_to(codes, (b, n)), axis=1)
        w = decision.weights(worlds, n_values)
        total += float(w.sum())
        for v in range(n_values):
            post[:, v] += w @ (worlds == v)
        drawn += b
    if total > 0:
        post /= total
        # positions the decision cannot tell apart have the same posterior: average them
        labels = decision.blocks(n)
        sums = np.zeros((int(labels.max()) + 1, n_values))
        np.add.at(sums, labels, post)
        post = sums[labels] / np.bincount(labels)[labels][:, None]
    return GroupPosterior(post, "monte-carlo", drawn, total)


# ---------------------------------------------------------------------------------------------
# Report on a grouped release
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRisk:
    """Attack result for one published group."""

    group: object
    size: int
    max_posterior: float
    vulnerable_tuples: int
    method: str
    drawn: int = 0
    accepted: float = 0.0

    def to_dict(self, l: float) -> dict[str, object]:
        """The group's risk as a JSON-ready dict; ``l`` scales ``max_risk_times_l``."""
        return {
            "group": self.group,
            "size": self.size,
            "max_posterior": self.max_posterior,
            "max_risk_times_l": self.max_posterior * l,
            "vulnerable_tuples": self.vulnerable_tuples,
            "vulnerable": self.vulnerable_tuples > 0,
            "method": self.method,
            "drawn_worlds": self.drawn,
            "accepted_worlds": self.accepted,
        }


@dataclass
class MinimalityReport:
    """Result of :func:`minimality_attack`.

    ``tuples`` holds one row per released tuple (``row`` = position in the release, the group,
    the tuple's ``posterior`` = risk: probability of being positive under binary l-diversity,
    otherwise the largest probability of any single sensitive value, and ``vulnerable``).
    """

    algorithm: str
    l: float
    requirement: Requirement
    tuples: pl.DataFrame
    groups: list[GroupRisk] = field(default_factory=list)

    @property
    def vulnerable_fraction(self) -> float:
        """Share of tuples whose posterior exceeds 1/l."""
        h = self.tuples.height
        return float(self.tuples["vulnerable"].sum()) / h if h else 0.0

    @property
    def max_risk(self) -> float:
        """The largest posterior of any tuple's true sensitive value (0.0 for an empty
        release)."""
        return float(self.tuples["posterior"].max() or 0.0) if self.tuples.height else 0.0

    @property
    def max_risk_times_l(self) -> float:
        """:attr:`max_risk` times ``l``: above 1 means the attack beats the ``1/l`` bound."""
        return self.max_risk * self.l

    @property
    def vulnerable_groups(self) -> int:
        """How many groups hold at least one vulnerable tuple."""
        return sum(1 for g in self.groups if g.vulnerable_tuples > 0)

    def to_dict(self, *, details: bool = False) -> dict[str, object]:
        """The report as a JSON-ready dict (headline figures; with ``details`` also each
        group's risk)."""
        out: dict[str, object] = {
            "algorithm": self.algorithm,
            "l": self.l,
            "requirement": self.requirement.kind,
            "tuples": self.tuples.height,
            "groups": len(self.groups),
            "vulnerable_fraction": self.vulnerable_fraction,
            "vulnerable_groups": self.vulnerable_groups,
            "max_risk": self.max_risk,
            "max_risk_times_l": self.max_risk_times_l,
            "methods": sorted({g.method for g in self.groups}),
        }
        if details:
            out["group_details"] = [g.to_dict(self.l) for g in self.groups]
        return out


def _vulnerable(post: np.ndarray, l: float, tol: float) -> np.ndarray:
    return post > 1.0 / l + tol


@reads_input
def minimality_attack(
    release: TableLike,
    *,
    group: str,
    sensitive: str,
    l: float,
    algorithm: Algorithm = "gg",
    positive: Iterable[object] | None = None,
    p: float = 0.0,
    k: int = 1,
    qi: str | Iterable[str] | None = None,
    order: str | None = None,
    requirement: Literal["simple", "distinct", "entropy"] = "simple",
    samples: int = 4000,
    seed: int = 0,
    exact_limit: int = 20_000,
    tolerance: float = 1e-9,
    mc_tolerance: float = 0.01,
) -> MinimalityReport:
    """Run the minimality attack on a grouped release.

    ``release`` has one row per tuple with a group id column and the sensitive column, rows in
    the order the grouper scanned them (or sorted by ``order``). ``positive`` switches to binary
    l-diversity (the listed sensitive values are positive); otherwise ``requirement`` names the
    l-diversity variant the grouper enforced (``simple`` = every value at most 1/l).
    ``algorithm``: ``gg``/``rgg`` (buckets of l tuples, ``p`` for RGG), ``sg``, or
    ``mondrian-strict``/``mondrian-relaxed`` (needs the raw ``qi`` columns, numeric or
    categorical, and ``k``). Groups are analysed independently: exactly where a closed form or
    dynamic programme exists (GG/RGG/SG under binary l-diversity), by enumeration when a group
    has at most ``exact_limit`` arrangements, otherwise by ``samples`` rejection-sampled worlds
    (seeded). A tuple is vulnerable when its posterior exceeds ``1/l + tolerance``; for a
    posterior estimated by sampling the margin is ``mc_tolerance`` (sampling noise alone must
    not flag a tuple).

    >>> import polars as pl
    >>> fig6a = pl.DataFrame({"g": [0, 0, 0, 0], "s": ["+", "+", "-", "-"]})
    >>> r = minimality_attack(fig6a, group="g", sensitive="s", l=2, positive=["+"])
    >>> r.tuples["posterior"].to_list(), r.max_risk_times_l
    ([1.0, 1.0, 0.0, 0.0], 2.0)
    """
    a = _checked_parameters(algorithm, l, p, k, qi, samples, tolerance, mc_tolerance, positive)
    seed = require_int_at_least("seed", seed, 0)  # numpy's seeds are non-negative
    df = _read_release(release, group, sensitive, a.qi, order)
    s_codes, n_values, req = _sensitive_codes(df[sensitive], a.positive, requirement, a.l, a.k)
    post, vul, results = _posteriors(df[group], s_codes, req, algorithm, a, n_values,
                                     _qi_codes(df, a.qi) if a.qi else None, seed, exact_limit)
    tuples = pl.DataFrame({"row": df["row"], "group": df[group], "posterior": post,
                           "vulnerable": vul}).sort("row")
    return MinimalityReport(algorithm, a.l, req, tuples, results)


def _posteriors(groups: pl.Series, s_codes: np.ndarray, req: Requirement, algorithm: str,
                a: _Parameters, n_values: int, qi_codes: np.ndarray | None, seed: int,
                exact_limit: int) -> tuple[np.ndarray, np.ndarray, list[GroupRisk]]:
    """Each tuple's posterior (as ``req.risk`` reads it) and vulnerability, and each group's
    :class:`GroupRisk`, groups analysed one by one (sampling seeded by ``seed``)."""
    (tolerance, mc_tolerance), l_val = a.tolerances, a.l
    rng = np.random.default_rng(seed)
    post = np.zeros(groups.len())
    vul = np.zeros(groups.len(), dtype=bool)
    cache: dict[tuple, GroupPosterior] = {}
    results: list[GroupRisk] = []
    for g, rows in _group_rows(groups, algorithm):
        gp = _group_posterior(s_codes[rows], rows, req, algorithm, l_val, a.p, n_values,
                              qi_codes, a.samples, rng, exact_limit, cache)
        risk = req.risk(gp.posterior)
        post[rows] = risk
        tol = max(tolerance, mc_tolerance) if gp.method == "monte-carlo" else tolerance
        vul[rows] = _vulnerable(risk, l_val, tol)
        results.append(GroupRisk(
            group=g, size=len(rows), max_posterior=float(risk.max()) if len(risk) else 0.0,
            vulnerable_tuples=int(vul[rows].sum()), method=gp.method,
            drawn=gp.drawn, accepted=gp.accepted,
        ))
    return post, vul, results


class _Parameters(NamedTuple):
    """The attack's parameters, checked."""

    l: float
    p: float
    k: int
    qi: tuple[str, ...]
    samples: int
    tolerances: tuple[float, float]  # exact, Monte Carlo
    positive: list | tuple | set | frozenset | None


def _checked_parameters(algorithm: str, l: float, p: float, k: int,
                        qi: str | Iterable[str] | None, samples: int, tolerance: float,
                        mc_tolerance: float, positive: Iterable[object] | None) -> _Parameters:
    """The parameters checked against each other and ``algorithm``; raises
    :class:`InvalidParameterError` on an unknown algorithm, a value out of range, ``p`` without
    RGG, Mondrian without QIs or an empty ``positive``."""
    if algorithm not in ALGORITHMS:
        raise InvalidParameterError(f"algorithm must be one of {', '.join(ALGORITHMS)}, "
                                    f"got {algorithm!r}")
    l_val = require_real("l", l, low=1.0, low_open=True)
    p = require_real("p", p, low=0.0, high=1.0, high_open=True)
    k = require_int_at_least("k", k, 1)
    samples = require_int_at_least("samples", samples, 1)
    tolerances = (require_real("tolerance", tolerance, low=0.0),
                  require_real("mc_tolerance", mc_tolerance, low=0.0))
    if algorithm != "rgg" and p:
        raise InvalidParameterError("p applies only to algorithm='rgg'")
    qi_t = as_names(qi)
    if algorithm.startswith("mondrian") and not qi_t:
        raise InvalidParameterError(f"algorithm {algorithm!r} needs the qi columns of the release")
    return _Parameters(l_val, p, k, qi_t, samples, tolerances, _positive_values(positive))


def _positive_values(positive: Iterable[object] | None) -> list | tuple | set | frozenset | None:
    """The positive values as a collection (None: not binary l-diversity); raises
    :class:`InvalidParameterError` when none is listed."""
    if positive is not None and not isinstance(positive, (list, tuple, set, frozenset)):
        positive = list(positive)
    if positive is not None and not positive:
        raise InvalidParameterError("positive must list at least one sensitive value")
    return positive


def _read_release(release: TableLike, group: str, sensitive: str, qi: tuple[str, ...],
                  order: str | None) -> pl.DataFrame:
    """The release's group, sensitive and qi columns with the input row number ``row``, in the
    grouper's order (sorted by ``order`` when given, input order breaking ties). Raises
    :class:`~ldiv_polars.errors.UnknownColumnError`, :class:`InvalidParameterError` for
    overlapping column roles and :class:`~ldiv_polars.errors.NullValuesError`."""
    lf = to_lazyframe(release)
    names = lf.collect_schema().names()
    wanted = [group, sensitive, *qi] + ([order] if order else [])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise UnknownColumnError(missing, names)
    if group == sensitive or group in qi or sensitive in qi:
        raise InvalidParameterError("group, sensitive and qi columns must be distinct")
    reject_nested(lf.collect_schema(), wanted)

    cols = [group, sensitive, *qi]
    # the order may be one of those columns (e.g. the group ids): selected once
    plan = lf.select(*cols, *([order] if order and order not in cols else []))
    plan = plan.with_row_index("row")
    if order:
        plan = plan.sort(order, "row", maintain_order=True)
    df = plan.collect()
    nulls = {c: int(df[c].null_count()) for c in cols if df[c].null_count()}
    if nulls:
        from ldiv_polars.errors import NullValuesError

        raise NullValuesError(nulls)
    return df


def _sensitive_codes(values: pl.Series, positive: list | tuple | set | frozenset | None,
                     requirement: str, l: float, k: int) -> tuple[np.ndarray, int, Requirement]:
    """``(codes, n_values, requirement)``: with ``positive`` (binary l-diversity) code 1 marks a
    positive value and 0 the others; otherwise each value's rank in the sorted distinct
    values. Raises :class:`InvalidParameterError` when no positive value occurs."""
    if positive is not None:
        # only positive / negative matters to a binary requirement: code 1 = positive
        pos_list = list(positive)
        flags = values.is_in(pos_list)
        if not flags.any():
            raise InvalidParameterError(
                f"none of the positive values {pos_list!r} occurs in column {values.name!r}"
            )
        return flags.cast(pl.Int64).to_numpy(), 2, Requirement("binary", l, frozenset({1}), k)
    distinct = values.unique().sort()
    code_of = {v: i for i, v in enumerate(distinct.to_list())}
    req = Requirement(requirement, l, frozenset(), k)  # type: ignore[arg-type]
    return values.replace_strict(code_of, return_dtype=pl.Int64).to_numpy(), distinct.len(), req


def _qi_codes(df: pl.DataFrame, qi: tuple[str, ...]) -> np.ndarray:
    """The qi columns as a float matrix: numeric values as they are, others by dense rank."""
    return np.column_stack([
        (df[c].rank("dense").to_numpy() if not df[c].dtype.is_numeric()
         else df[c].cast(pl.Float64).to_numpy())
        for c in qi
    ])


def _group_rows(gids: pl.Series, algorithm: str) -> list[tuple[object, np.ndarray]]:
    """``(group id, row positions)`` of every group, in order of first appearance. Raises
    :class:`InconsistentReleaseError` when a group of ``gg``/``rgg``/``sg`` is not one run of
    the ordered release."""
    group = gids.name
    ginfo = (
        gids.to_frame().select(pl.col(group), pl.int_range(pl.len()).alias("pos"))
        .group_by(group, maintain_order=True)
        .agg(pl.col("pos").first().alias("first"), pl.col("pos").last().alias("last"),
             pl.len().alias("size"))
    )
    if algorithm in ("gg", "rgg", "sg"):
        bad = ginfo.filter(pl.col("last") - pl.col("first") + 1 != pl.col("size"))
        if bad.height:
            raise InconsistentReleaseError(
                f"{bad.height} group(s) are not contiguous in the release order (e.g. group "
                f"{bad[group][0]!r}); {algorithm} groups are runs of the ordered table"
            )
    # rows of each group (positions in the release), via one sort
    dense = gids.rank("dense").to_numpy()
    order_idx = np.argsort(dense, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(dense)[1:])])
    sizes_sorted = ginfo.sort("first")
    first_seen = {g: i for i, g in enumerate(sizes_sorted[group].to_list())}
    dense_of = (
        sizes_sorted.select(pl.col(group), pl.col(group).rank("dense").alias("d"))
        ["d"].to_list()
    )
    return [(g, order_idx[bounds[d - 1]: bounds[d]]) for g, d in zip(first_seen, dense_of)]


@lru_cache(maxsize=4096)
def _gg_float_cached(m: int, l: int, r: int, p: float) -> np.ndarray:
    return gg_bucket_posteriors_float(m, l, r, p)


def _group_posterior(codes: np.ndarray, rows: np.ndarray, req: Requirement, algorithm: str,
                     l: float, p: float, n_values: int, qi_codes: np.ndarray | None,
                     samples: int, rng: np.random.Generator, exact_limit: int,
                     cache: dict[tuple, GroupPosterior]) -> GroupPosterior:
    """The posterior of one published group (sensitive ``codes`` of its tuples at release
    positions ``rows``): a closed form where one exists, else the grouper's decision by
    enumeration (at most ``exact_limit`` arrangements) or rejection sampling. Raises
    :class:`InconsistentReleaseError` when the group could not be the grouper's output."""
    n = len(codes)
    counts = np.bincount(codes, minlength=n_values)
    if not bool(req.holds(counts[None, :])[0]):
        raise InconsistentReleaseError(
            f"a published group of {n} tuple(s) does not satisfy the {req.kind} requirement with "
            f"l={l}, k={req.k}: it cannot be the output of {algorithm}"
        )
    fraction = np.broadcast_to(counts / n, (n, n_values)).copy()
    if algorithm in ("gg", "rgg"):
        found = _gg_posterior_or_decision(counts, req, l, p, n_values, fraction)
    elif algorithm == "sg":
        found = _sg_posterior_or_decision(counts, req, l, n_values, fraction)
    else:
        assert qi_codes is not None
        masks = mondrian_candidate_masks(qi_codes[rows], relaxed=algorithm == "mondrian-relaxed")
        if masks.shape[0] == 0:
            return GroupPosterior(fraction, "trivial", 0, 1.0)
        found = SplitDecision(req, masks)
    if isinstance(found, GroupPosterior):
        return found
    return _decision_posterior(codes, counts, found, req, algorithm, p, n_values, samples, rng,
                               exact_limit, cache)


def _gg_posterior_or_decision(counts: np.ndarray, req: Requirement, l: float, p: float,
                              n_values: int, fraction: np.ndarray) -> GroupPosterior | Decision:
    """GG/RGG: the exact dynamic programme under binary l-diversity (``k <= l``), the trivial
    posterior of a single bucket, else the :class:`GGDecision` to enumerate or sample."""
    n = int(counts.sum())
    if not float(l).is_integer():
        raise InvalidParameterError(f"GG/RGG buckets have l tuples: l must be an integer, "
                                    f"got {l}")
    li = int(l)
    if n % li:
        raise InconsistentReleaseError(
            f"a GG group of {n} tuples is not a whole number of buckets of size {li}"
        )
    m = n // li
    if m == 1:
        return GroupPosterior(fraction, "trivial", 0, 1.0)
    if req.kind == "binary" and req.k <= li:
        r = int(counts[list(req.positive)].sum()) if req.positive else 0
        if r > m:
            raise InconsistentReleaseError(
                f"a group of {m} bucket(s) with {r} positives is not binary {li}-diverse")
        vec = _gg_float_cached(m, li, r, p)
        post = np.zeros((n, n_values))
        per_tuple = np.repeat(vec, li)
        # spread the positive probability over the positive values by their shares
        pos_idx = sorted(req.positive)
        if r:
            for v in pos_idx:
                post[:, v] = per_tuple * counts[v] / r
        neg = [v for v in range(n_values) if v not in req.positive]
        nneg = n - r
        for v in neg:
            post[:, v] = (1 - per_tuple) * (counts[v] / nneg if nneg else 0)
        return GroupPosterior(post, "exact-dp", 0, 1.0)
    return GGDecision(req, li, p)


def _sg_posterior_or_decision(counts: np.ndarray, req: Requirement, l: float, n_values: int,
                              fraction: np.ndarray) -> GroupPosterior | Decision:
    """SG: the closed form under binary l-diversity (integral ``l``), the trivial posterior
    of a single tuple, else the :class:`SGDecision` to enumerate or sample."""
    n = int(counts.sum())
    if req.kind == "binary":
        r = int(counts[list(req.positive)].sum()) if req.positive else 0
        if float(l).is_integer() and n >= 2:
            left, right = sg_binary_posteriors(n, r, int(l), req.k)
            per_tuple = np.concatenate([np.full((n + 1) // 2, float(left)),
                                        np.full(n // 2, float(right))])
            post = np.zeros((n, n_values))
            for v in sorted(req.positive):
                post[:, v] = per_tuple * (counts[v] / r if r else 0)
            nneg = n - r
            for v in range(n_values):
                if v not in req.positive:
                    post[:, v] = (1 - per_tuple) * (counts[v] / nneg if nneg else 0)
            return GroupPosterior(post, "exact", 0, 1.0)
    if n < 2:
        return GroupPosterior(fraction, "trivial", 0, 1.0)
    return SGDecision(req)


def _decision_posterior(codes: np.ndarray, counts: np.ndarray, decision: Decision,
                        req: Requirement, algorithm: str, p: float, n_values: int,
                        samples: int, rng: np.random.Generator, exact_limit: int,
                        cache: dict[tuple, GroupPosterior]) -> GroupPosterior:
    """The posterior under ``decision`` by enumeration or rejection sampling, computed on the
    group's values relabelled canonically (by count, then code) so that groups with the same
    value multiset share one cached result."""
    n = len(codes)
    # canonical relabelling: local codes by count desc, then global code (cache key)
    present = np.flatnonzero(counts)
    ranked = present[np.lexsort((present, -counts[present]))]
    local_of = np.full(n_values, -1)
    local_of[ranked] = np.arange(len(ranked))
    local = local_of[codes]
    local_req = Requirement(req.kind, req.l, frozenset(int(local_of[v]) for v in req.positive
                                                       if local_of[v] >= 0), req.k)
    if isinstance(decision, GGDecision):
        decision = GGDecision(local_req, decision.bucket, decision.p)
    elif isinstance(decision, SGDecision):
        decision = SGDecision(local_req)
    else:
        decision = SplitDecision(local_req, decision.left_masks)  # type: ignore[attr-defined]
    key = None
    if decision.cacheable:
        key = (algorithm, n, tuple(counts[ranked]), tuple(sorted(local_req.positive)), p)
        if key in cache:
            gp = cache[key]
            return _delocalize(gp, ranked, n_values)
    nv = len(ranked)
    if _n_arrangements(local) <= exact_limit:
        gp = exact_posterior(local, decision, nv, limit=exact_limit)
    else:
        gp = rejection_posterior(local, decision, nv, samples=samples, rng=rng)
    if gp.accepted <= 0:
        if gp.method == "exact":
            raise InconsistentReleaseError(
                f"no arrangement of a published group of {n} tuple(s) is consistent with "
                f"{algorithm}: the release was not produced by it"
            )
        gp = GroupPosterior(np.broadcast_to(np.bincount(local, minlength=nv) / n, (n, nv)).copy(),
                            "monte-carlo-no-accept", gp.drawn, 0.0)
    elif gp.method == "monte-carlo" and gp.accepted >= gp.drawn:
        # no drawn world was rejected: the constraint was never active in the sample
        gp = GroupPosterior(np.broadcast_to(np.bincount(local, minlength=nv) / n,
                                            (n, nv)).copy(), "monte-carlo-all-accepted",
                            gp.drawn, gp.accepted)
    if key is not None:
        cache[key] = gp
    return _delocalize(gp, ranked, n_values)


def _delocalize(gp: GroupPosterior, ranked: np.ndarray, n_values: int) -> GroupPosterior:
    post = np.zeros((gp.posterior.shape[0], n_values))
    post[:, ranked] = gp.posterior
    return GroupPosterior(post, gp.method, gp.drawn, gp.accepted)
