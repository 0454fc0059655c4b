"""Per-class verdicts on an integer-encoded frequency set, in numpy.

Search loops (the lattice search checks hundreds of small roll-ups) pay ~0.3 ms of query
overhead per :func:`~ldiv_polars.models.evaluate_classes` call, more than the work itself on a
few thousand rows. For the models whose per-class statistic is a plain count or a short sum,
this module computes the same verdict directly on arrays: one row per (class, sensitive value)
with the class index ``cls``, the sensitive value's integer id ``s`` (ids identify values; their
order is not used) and the count ``n``.

**One semantics.** Each verdict is the expression of the model's ``passes()`` on the same
statistics, computed with the same arithmetic: integer statistics (size, distinct values, the
largest counts) are exact in both engines and so are the single float operations that compare
them (``c * tail``, ``alpha * size * (1 + 1e-15)``: one IEEE operation each, the same in numpy
and Polars). The two float *sums* (the entropy's ``sum n ln n`` and the equal-distance EMD) may
round differently in another summation order; a class whose statistic lies within a bound of
that rounding error from the threshold is reported as **uncertain**, and the caller decides it
with :func:`~ldiv_polars.models.evaluate_classes` instead. Property tests check these verdicts
against ``evaluate_classes`` on random frequency sets.

>>> import numpy as np
>>> from ldiv_polars.models import DistinctLDiversity, KAnonymity
>>> rows = EncodedRows(cls=np.array([0, 0, 1]), s=np.array([0, 1, 0]),
...                    n=np.array([2, 1, 3]), classes=2, n_sensitive=2)
>>> verdict(KAnonymity(3), rows).passed.tolist()
[True, True]
>>> verdict(DistinctLDiversity(2), rows).passed.tolist()
[True, False]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ldiv_polars.models.base import ENTROPY_TOLERANCE, Model
from ldiv_polars.models.disclosure import AlphaKAnonymity
from ldiv_polars.models.k_anonymity import KAnonymity
from ldiv_polars.models.l_diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
)
from ldiv_polars.models.t_closeness import TCloseness

_EPS = float(np.finfo(np.float64).eps)


def supported(model: Model) -> bool:
    """Whether :func:`verdict` evaluates ``model`` (otherwise use ``evaluate_classes``)."""
    if type(model) in (KAnonymity, DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity,
                       AlphaKAnonymity):
        return True
    return type(model) is TCloseness and model.distance == "equal"


@dataclass
class EncodedRows:
    """A frequency set as arrays: row ``i`` is ``n[i]`` records of class ``cls[i]`` with the
    sensitive value ``s[i]``; rows are grouped by class (``cls`` non-decreasing), each
    (class, value) pair appears at most once and ``n > 0``.
    ``reference`` optionally gives the table's count of each sensitive id (default: summed
    from the rows), as ``evaluate_classes``'s ``reference``; ``sizes`` the class sizes."""

    cls: np.ndarray
    s: np.ndarray
    n: np.ndarray
    classes: int
    n_sensitive: int
    reference: np.ndarray | None = None
    sizes: np.ndarray | None = None
    """Optionally the class sizes, when the caller has them (default: summed from the rows)."""
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def _get(self, name: str) -> np.ndarray | None:
        return self._cache.get(name)

    @property
    def size(self) -> np.ndarray:
        """Records per class (int64; 0 for a class with no rows)."""
        v = self._get("size")
        if v is None and self.sizes is not None:
            v = self._cache["size"] = np.asarray(self.sizes, dtype=np.int64)
        if v is None:
            # float64 sums of int64 counts are exact below 2**53 records
            v = np.bincount(self.cls, weights=self.n, minlength=self.classes).astype(np.int64)
            self._cache["size"] = v
        return v

    @property
    def distinct(self) -> np.ndarray:
        """Distinct sensitive values per class (rows per class)."""
        v = self._get("distinct")
        if v is None:
            v = np.bincount(self.cls, minlength=self.classes).astype(np.int64)
            self._cache["distinct"] = v
        return v

    @property
    def present(self) -> np.ndarray:
        """Classes with at least one row (``evaluate_classes`` returns only these)."""
        return self.distinct > 0

    def _starts(self) -> np.ndarray:
        v = self._get("starts")
        if v is None:
            m = self.cls.shape[0]
            first = np.ones(m, dtype=bool)
            if m:
                np.not_equal(self.cls[1:], self.cls[:-1], out=first[1:])
            v = np.flatnonzero(first)
            self._cache["starts"] = v
        return v

    def top(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """``(r1, sum of the j largest counts)`` per class (``j >= 1``)."""
        key = f"top{j}"
        v = self._get(key)
        r1 = self._get("r1")
        if v is not None and r1 is not None:
            return r1, v
        starts = self._starts()
        ids = self.cls[starts]
        r1 = np.zeros(self.classes, dtype=np.int64)
        if starts.shape[0]:
            r1[ids] = np.maximum.reduceat(self.n, starts)
        if j == 1:
            v = r1
        elif j == 2:
            # the second largest: the largest once one copy of the maximum is set aside
            is_max = self.n == r1[self.cls]
            ties = np.add.reduceat(is_max, starts) if starts.shape[0] else starts
            rest = np.maximum.reduceat(np.where(is_max, 0, self.n), starts) \
                if starts.shape[0] else starts
            v = r1.copy()
            v[ids] += np.where(ties >= 2, r1[ids], rest)
        else:
            # counts in decreasing order within each class (rows are grouped by class)
            big = int(self.n.max()) + 1 if self.n.shape[0] else 1
            order = np.argsort(self.cls * big + (big - 1 - self.n), kind="stable")
            ns = self.n[order]
            rank = np.arange(ns.shape[0]) - np.repeat(starts, np.diff(np.append(
                starts, ns.shape[0])))
            take = rank < j
            v = np.bincount(self.cls[take], weights=ns[take],
                            minlength=self.classes).astype(np.int64)
        self._cache[key] = v
        self._cache["r1"] = r1
        return r1, v

    @property
    def q(self) -> np.ndarray:
        """Table share of each row's sensitive value (``n_s / N``, as ``evaluate_classes``)."""
        v = self._get("q")
        if v is None:
            ref = self.reference
            if ref is None:
                ref = np.bincount(self.s, weights=self.n, minlength=self.n_sensitive)
            ref = np.asarray(ref).astype(np.int64)
            total = int(ref.sum())
            v = ref[self.s].astype(np.float64) / float(total)
            self._cache["q"] = v
        return v


@dataclass(frozen=True)
class ClassVerdict:
    """Per-class verdict: ``passed`` is meaningful where ``uncertain`` is False."""

    passed: np.ndarray
    uncertain: np.ndarray | None = None


def verdict(model: Model, rows: EncodedRows) -> ClassVerdict:
    """Per-class verdict of a :func:`supported` model (classes with no rows pass)."""
    absent = ~rows.present
    if type(model) is KAnonymity:
        return ClassVerdict((rows.size >= model.k) | absent)
    if type(model) is DistinctLDiversity:
        return ClassVerdict((rows.distinct >= model.l) | absent)
    if type(model) is AlphaKAnonymity:
        r1, _ = rows.top(1)
        size = rows.size
        ok = (size >= model.k) & (r1 <= model.alpha * size * (1 + 1e-15))
        return ClassVerdict(ok | absent)
    if type(model) is RecursiveCLDiversity:
        if model.l == 1:
            return ClassVerdict(np.ones(rows.classes, dtype=bool))
        r1, top = rows.top(model.l - 1)
        tail = rows.size - top
        return ClassVerdict((r1 < model.c * tail) | absent)
    if type(model) is EntropyLDiversity:
        return _entropy(model, rows, absent)
    if type(model) is TCloseness and model.distance == "equal":
        return _emd_equal(model, rows, absent)
    raise TypeError(f"no array verdict for {model.describe()}")


def _entropy(model: EntropyLDiversity, rows: EncodedRows, absent: np.ndarray) -> ClassVerdict:
    n = rows.n.astype(np.float64)
    size = rows.size.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.bincount(rows.cls, weights=n * np.log(n), minlength=rows.classes)
        h = np.clip(np.log(size) - s / size, 0.0, None)
        # rounding of ln N - (sum n ln n)/N in any summation order: |error| <= about
        # (m + 2) eps (1 + ln N) for m values; a wide multiple of it
        band = 16 * _EPS * (rows.distinct + 4) * (1.0 + np.log(np.maximum(size, 1.0)))
    thr = math.log(model.l) - ENTROPY_TOLERANCE
    passed = (h >= thr) | absent
    uncertain = (np.abs(h - thr) <= band) & ~absent
    return ClassVerdict(passed, uncertain)


def _emd_equal(model: TCloseness, rows: EncodedRows, absent: np.ndarray) -> ClassVerdict:
    size = rows.size
    p = rows.n / size[rows.cls].astype(np.float64)
    q = rows.q
    s = np.bincount(rows.cls, weights=np.abs(p - q) - q, minlength=rows.classes)
    emd = 0.5 * (1.0 + s)
    band = 32 * _EPS * (rows.distinct + 4)
    passed = (emd <= model.t) | absent
    uncertain = (np.abs(emd - model.t) <= band) & ~absent
    return ClassVerdict(passed, uncertain)
