"""Worst-case degradation of pure l-diversity under linkage (§3, Prop. 3.1).

With ``|S| = L + 1`` sensitive values and ``t`` releases that are each l-diverse, the adversary
who links the t classes of a common user can be left with

    l_[t] = 1                              if l <= L (t-1)/t + 1
    l_[t] = L + 1 - (L - l + 1) t          otherwise             (t | L, 2 <= t <= L)

distinct values. :func:`worst_case_construction` is the matching construction of eq. (3),
:func:`worst_case_releases` turns it into t real l-diverse tables (with their class maps) that
:func:`~ldiv_polars.linkage.attack.link` collapses to exactly that many values, and
:func:`brute_force_worst_case_l` checks the formula by enumerating every admissible choice of
supports for small L.

>>> worst_case_l(6, 2, 5), worst_case_l(6, 3, 6), worst_case_l(6, 2, 4)
(3, 4, 1)
>>> brute_force_worst_case_l(6, 2, 5)
3
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.release import Release


def _check(L: int, t: int, l: int, *, divisible: bool = True) -> tuple[int, int, int]:
    L = require_int_at_least("L", L, 2)
    t = require_int_at_least("t", t, 2)
    l = require_int_at_least("l", l, 1)
    if t > L:
        raise InvalidParameterError(f"t must be <= L = |S| - 1 = {L}, got t={t}")
    if l > L + 1:
        raise InvalidParameterError(f"l must be in [1, |S|] = [1, {L + 1}], got l={l}")
    if divisible and L % t:
        raise InvalidParameterError(f"Prop. 3.1 needs t | L; got L={L}, t={t}")
    return L, t, l


def worst_case_l(L: int, t: int, l: int) -> int:
    """Prop. 3.1: the smallest post-linkage diversity l_[t] over t l-diverse releases,
    ``|S| = L + 1``, ``t | L``, ``2 <= t <= L``.

    >>> [worst_case_l(6, 2, l) for l in range(1, 8)]
    [1, 1, 1, 1, 3, 5, 7]
    """
    L, t, l = _check(L, t, l)
    if l <= Fraction(L * (t - 1), t) + 1:
        return 1
    return L + 1 - (L - l + 1) * t


def worst_case_construction(L: int, t: int, l: int) -> np.ndarray:
    """Eq. (3): the ``t x (L + 1)`` 0/1 matrix whose row j is iota_j = (1, x_j), x_j the cyclic
    window of ``l - 1`` ones starting at offset ``(j - 1) L / t``. Column 0 is the common user's
    value. Each row has weight l; the column-wise AND has weight :func:`worst_case_l`.

    >>> worst_case_construction(6, 2, 4)[:, 1:].tolist()
    [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]]
    """
    L, t, l = _check(L, t, l)
    out = np.zeros((t, L + 1), dtype=np.int8)
    out[:, 0] = 1
    for j in range(1, t + 1):
        start = (j - 1) * L // t + 1
        for r in range(start, start + l - 1):
            out[j - 1, (r - 1) % L + 1] = 1  # (r)_L = mod(r - 1, L) + 1, 1-based in x_j
    return out


def brute_force_worst_case_l(L: int, t: int, l: int) -> int:
    """min over t supports iota_1..iota_t (each containing the common value, weight >= l) of
    the weight of their intersection, by exhaustive search over subsets of the other L values
    (bit masks; the set of reachable intersections is closed under one more AND per release).
    Limited to L <= 12. Needs no divisibility of L by t.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``L > 12``.
    """
    L, t, l = _check(L, t, l, divisible=False)
    if L > 12:
        raise InvalidParameterError("brute force is limited to L <= 12")
    masks = np.arange(1 << L, dtype=np.int64)
    weights = np.zeros(1 << L, dtype=np.int64)
    for b in range(L):
        weights += (masks >> b) & 1
    rows = masks[weights >= l - 1]  # the common value is always present: l - 1 others
    reach = np.unique(rows)
    for _ in range(t - 1):
        reach = np.unique(np.bitwise_and.outer(reach, rows).ravel())
    return 1 + int(weights[reach].min())


def worst_case_releases(L: int, t: int, l: int, *, filler_classes: int = 2) -> tuple[
        list[Release], dict[str, object]]:
    """t real tables built from eq. (3), each l-diverse, with their class maps, and the target.

    Release j has a raw QI column ``q`` (ints) and sensitive column ``s`` (``"s0"`` .. ``"sL"``).
    The common user has ``q = 0`` and value ``s0``; its class in release j is ``{0, j}`` (a
    different generalization per release) and holds one record of every value of iota_j. The
    ``filler_classes`` other classes hold every sensitive value once. Every table is l-diverse;
    linking them on ``q = 0`` leaves exactly ``worst_case_l(L, t, l)`` values.

    Returns ``(releases, target)`` with ``target = {"q": 0}``.
    """
    iota = worst_case_construction(L, t, l)
    names = [f"s{i}" for i in range(L + 1)]
    releases: list[Release] = []
    for j in range(t):
        q_raw: list[int] = [0]
        cls_of: list[str] = ["c0"]
        rows_q: list[str] = []
        rows_s: list[str] = []
        for i in range(L + 1):
            if iota[j, i]:
                rows_q.append("c0")
                rows_s.append(names[i])
        # the target's class also covers raw value j + 1 (a release-specific generalization)
        q_raw.append(j + 1)
        cls_of.append("c0")
        for f in range(filler_classes):
            c = f"f{f}"
            raw = 100 + 10 * j + f
            q_raw.append(raw)
            cls_of.append(c)
            rows_q.extend([c] * (L + 1))
            rows_s.extend(names)
        table = pl.DataFrame({"q": rows_q, "s": rows_s})
        mapping = pl.DataFrame({"q": q_raw, "q_class": cls_of})
        releases.append(Release.from_mapping(table, ["q"], "s", mapping, name=f"D{j + 1}"))
    return releases, {"q": 0}
