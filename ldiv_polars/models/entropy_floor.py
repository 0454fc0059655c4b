"""The tight suppression floor of entropy l-diversity: the fewest rows of a class that lie in
failing parts, however a specialization splits the class (docs/anonymize.md, "Sound pruning
with suppression").

**Why.** The passing parts of a split pass together: entropy is concave, so the union of
classes with ``H >= ln l`` has ``H >= ln l`` too. Their union ``D`` is a sub-multiset of the
class ``C`` (``d_s <= c_s`` for every value), so the rows in failing parts are at least
``|C| - max{|D| : D within C, H(D) >= ln l}``. That bound holds for every split, of any rows,
so also for the parts a specialization makes (unions of the base classes inside ``C``).

**The largest such D.** For a given size ``T``, the sub-multiset of most entropy is the capped
one ``d_s = min(c_s, lam)`` with ``sum d_s = T`` (it is majorized by every other: entropy is
Schur-concave); its distribution grows in the majorization order as ``lam`` rises (the capped
values' shares rise, the others' fall), so its entropy falls. The largest ``D`` is therefore
the capped one at the largest ``lam`` with ``H(min(c, lam)) >= ln l`` (real-valued counts: a
relaxation of the integer ``D``, so the floor stays a lower bound).

**Computed.** Counts in decreasing order ``c_0 >= c_1 >= ...``; capping at ``lam = c_r`` gives
``T = r c_r + sum_{i >= r} c_i`` and ``sum d ln d = r c_r ln c_r + sum_{i >= r} c_i ln c_i``
(one segmented pass over the class-sorted rows). The first rank whose cap passes fixes the
segment ``[c_r, c_{r-1}]`` of the crossing, where ``r`` values are capped; Newton's steps
from its top keep ``lam`` above the crossing (:func:`_crossing`) (every test widened by :func:`entropy_band
<ldiv_polars.models.entropy_floor.entropy_band>`: a cap within rounding of ``ln l`` counts as
passing), so the ``T`` used is at least the true one and the floor at most the true floor.

>>> import numpy as np
>>> from ldiv_polars.models.encoded import EncodedRows
>>> rows = EncodedRows(np.array([0, 0, 0]), np.array([0, 1, 2]), np.array([10, 5, 5]),
...                    classes=1, n_sensitive=3)
>>> round(float(capped_entropy_floor(rows, 3, np.array([True]))[0]), 1)  # D = (5, 5, 5)
5.0
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from ldiv_polars.models.exact import EPS

try:  # the compiled floor (absent when the package was built without a C compiler)
    from ldiv_polars.models import _floors as _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import EncodedRows

KERNEL = _kernel is not None and not os.environ.get("LDIV_POLARS_NO_KERNEL")
"""Whether the floor runs in the compiled kernel ``_floors.c`` (one loop per class; tests set
it to compare the paths)."""

STEPS = 8
"""Rounds towards a class's crossing (a Newton step and a halving each, from above): the cap
ends within ``2**-STEPS`` of its segment's width above the crossing, usually far closer."""


def entropy_band(distinct: object, log_size: object) -> object:
    """Rounding bound of a class entropy ``ln N - (sum n ln n) / N`` (any summation order) and
    of ``ln l``: ``64 eps (m + 4) (1 + ln N)`` for m values (a wide multiple of the error)."""
    return 64 * EPS * (distinct + 4) * (1 + log_size)


def _band(distinct: np.ndarray, total: np.ndarray) -> np.ndarray:
    import numpy as np

    return entropy_band(distinct, np.log(np.maximum(total, 1.0)))  # type: ignore[return-value]


def _entropy_at(lam: np.ndarray, capped: np.ndarray, rest: np.ndarray,
                rest_nlogn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(T, H)`` of the multiset capping ``capped`` values at ``lam`` beside values summing
    to ``rest`` (with ``sum c ln c`` of them ``rest_nlogn``)."""
    import numpy as np

    total = capped * lam + rest
    s = capped * lam * np.log(lam) + rest_nlogn
    return total, np.log(total) - s / total


def capped_entropy_floor(rows: EncodedRows, l: float, which: np.ndarray) -> np.ndarray:
    """Per class of ``rows``: the rows lying in failing parts of every split of the class under
    entropy ``l``-diversity (``|C|`` less the largest sub-multiset with ``H >= ln l``, see the
    module), for the classes ``which`` (bool per class; 0 for the others, and for a class with
    fewer than ``l`` values, whose floor, all its rows, the caller has). Float, ``>= 0``, never above the
    exact floor. Computed by the compiled kernel when built (:data:`KERNEL`), else in numpy
    (:func:`capped_entropy_floor_numpy`, its parity oracle)."""
    import numpy as np

    if KERNEL and _kernel is not None:
        out = np.zeros(rows.classes, dtype=np.float64)
        rc = _kernel.capped_entropy(np.ascontiguousarray(rows.cls, dtype=np.int64),
                                    np.ascontiguousarray(rows.n, dtype=np.int64),
                                    np.ascontiguousarray(which, dtype=bool).view(np.uint8),
                                    float(l), out)
        if rc == 0:
            return out
    return capped_entropy_floor_numpy(rows, l, which)


def capped_entropy_floor_numpy(rows: EncodedRows, l: float, which: np.ndarray) -> np.ndarray:
    """:func:`capped_entropy_floor` in numpy (segmented over the class-sorted rows)."""
    import numpy as np

    out = np.zeros(rows.classes, dtype=np.float64)
    sel = which[rows.cls]
    if not sel.any():
        return out
    cls, c = rows.cls[sel], rows.n[sel].astype(np.int64)
    big = int(c.max()) + 1
    order = np.argsort(cls * big + (big - 1 - c), kind="stable")  # by class, counts down
    cls, c = cls[order], c[order].astype(np.float64)
    first = np.ones(c.shape[0], dtype=bool)
    np.not_equal(cls[1:], cls[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    lens = np.diff(np.append(starts, c.shape[0]))
    rank = np.arange(c.shape[0]) - np.repeat(starts, lens)
    clogc = c * np.log(c)
    # sums over ranks >= r within the class: the class total less the exclusive prefix
    suf_t = _suffix(c, starts, lens)
    suf_s = _suffix(clogc, starts, lens)
    total, h = _entropy_at(c, rank.astype(np.float64), suf_t, suf_s)  # cap at lam = c_r
    distinct = np.repeat(lens, lens).astype(np.float64)
    ok = h + _band(distinct, total) >= math.log(l)
    # the first passing rank per class (ok is monotone along the ranks)
    ranked = np.where(ok, rank, np.iinfo(np.int64).max)
    first_ok = np.minimum.reduceat(ranked, starts)
    size = np.add.reduceat(c, starts)
    ids = cls[starts]
    found = first_ok < lens
    keep_t = np.where(found, 0.0, size)  # (none passing: numerically lost; floor 0)
    seg = found & (first_ok > 0)  # a class with first_ok == 0 passes whole: T = |C|
    keep_t[found & (first_ok == 0)] = size[found & (first_ok == 0)]
    if seg.any():
        at = starts[seg] + first_ok[seg]
        keep_t[seg] = _crossing(c[at], c[at - 1], first_ok[seg].astype(np.float64),
                                suf_t[at], suf_s[at], lens[seg].astype(np.float64), l)
    out[ids] = np.maximum(size - keep_t, 0.0)
    return out


def _suffix(v: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Per row, the sum of ``v`` over the rows from it to its class's end."""
    import numpy as np

    cs = np.cumsum(v)
    end = cs[starts + lens - 1]
    return np.repeat(end, lens) - cs + v


def _crossing(lo: np.ndarray, hi: np.ndarray, capped: np.ndarray, rest: np.ndarray,
              rest_nlogn: np.ndarray, distinct: np.ndarray, l: float) -> np.ndarray:
    """The size ``T`` of the capped multiset at a cap at or above the crossing in
    ``[lo, hi]`` (``hi`` certainly fails). ``G(lam) = T ln T - sum d ln d - T ln l`` (``T``
    times ``H - ln l``) has ``G' = capped * ln(T / (l lam))``, decreasing in ``lam``: ``G`` is
    concave, so Newton's steps from ``hi`` fall towards the crossing without passing it (and
    slowly where ``G' = 0`` there: each round also tries the midpoint of what is left). A cap
    is taken only where it certainly fails (rounding cannot carry it past the crossing); one
    that may pass raises ``lo``."""
    import numpy as np

    thr = math.log(l)
    x = hi
    for _ in range(STEPS):
        total = capped * x + rest
        g = total * np.log(total) - capped * x * np.log(x) - rest_nlogn - total * thr
        slope = capped * (np.log(total) - np.log(x) - thr)
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = np.clip(np.where(slope < 0, x - g / slope, x), lo, x)
        for cand in (newton, 0.5 * (lo + x)):
            t2, h = _entropy_at(cand, capped, rest, rest_nlogn)
            fails = h + _band(distinct, t2) < thr
            x = np.where(fails, np.minimum(x, cand), x)
            lo = np.where(fails, lo, np.maximum(lo, cand))
    return capped * x + rest
