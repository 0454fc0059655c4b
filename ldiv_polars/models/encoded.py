"""A frequency set as integer arrays, and per-class verdicts computed on them in numpy.

Search loops (the lattice search checks hundreds of small roll-ups) pay a query's fixed cost per
:func:`~ldiv_polars.models.evaluate_classes` call, more than the work itself on a few thousand
rows. A model whose verdict reads only the identity of sensitive values may therefore also judge
:class:`EncodedRows` — one row per (class, sensitive value) with the class index ``cls``, the
value's integer id ``s`` (ids identify values; their order means nothing) and the count ``n`` —
in :meth:`Model.array_verdict <ldiv_polars.models.Model.array_verdict>`.

**One semantics.** An array verdict compares the same statistic with the same threshold as the
model's ``passes()``. Integer statistics are exact; a float statistic comes with a rigorous
bound of its rounding error, and a class within that bound of the threshold is *uncertain*:
:func:`class_verdict` hands such classes to the model's exact routine
(:meth:`Model.decide <ldiv_polars.models.Model.decide>`), the one every engine uses, so the
verdict is the exact one whatever the engine.

>>> import numpy as np
>>> from ldiv_polars.models import DistinctLDiversity, KAnonymity
>>> rows = EncodedRows(cls=np.array([0, 0, 1]), s=np.array([0, 1, 0]),
...                    n=np.array([2, 1, 3]), classes=2, n_sensitive=2)
>>> class_verdict(KAnonymity(3), rows).tolist()
[True, True]
>>> class_verdict(DistinctLDiversity(2), rows).tolist()
[True, False]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ldiv_polars.models.exact import EPS, ClassCounts, Reference

if TYPE_CHECKING:
    from ldiv_polars.models.base import Model

__all__ = ["EPS", "ClassVerdict", "EncodedRows", "SensitiveDomain", "class_verdict"]

DENSE_CELLS = 1 << 16
"""A per-class computation over the whole sensitive domain (``classes x ids`` cells) is done
on a dense matrix when it has at most this many cells, or at most 2 cells per row of the
frequency set; sparsely (on the rows) otherwise."""


class SensitiveDomain:
    """The sensitive values behind the ids of :class:`EncodedRows`: ``values`` has one column
    per sensitive attribute and row ``i`` holds the value(s) of id ``i``. Models whose verdict
    reads the values (their order, their place in a hierarchy, membership in a set) derive
    per-id arrays from it once (:meth:`derived`) and reuse them on every evaluation.

    >>> d = SensitiveDomain(pl.DataFrame({"s": ["b", None, "a"]}))
    >>> d.order().tolist(), d.text()
    ([1, 2, 0], ['b', None, 'a'])
    """

    def __init__(self, values: pl.DataFrame) -> None:
        self.values = values
        self._width = values.width
        self._derived: dict[tuple[int, str], tuple[object, Any]] = {}

    @property
    def width(self) -> int:
        """The number of sensitive attributes."""
        return self._width

    @property
    def column(self) -> pl.Series:
        """The values of the first sensitive attribute, by id."""
        return self.values.to_series(0)

    def derived(self, owner: object, name: str, build: Callable[[], Any]) -> Any:
        """``build()`` computed once per ``(owner, name)`` and kept with this domain."""
        key = (id(owner), name)
        hit = self._derived.get(key)
        if hit is None or hit[0] is not owner:  # the owner is kept: its id is not reused
            hit = self._derived[key] = (owner, build())
        return hit[1]

    def order(self) -> np.ndarray:
        """The ids in the engines' domain order of the first attribute (ascending, nulls
        first, as Polars sorts): ``arange`` when the ids already are (the small frame numbers
        the values in sorted order), without a sort.

        >>> SensitiveDomain(pl.DataFrame({"s": [1, 5, 9]})).order().tolist()
        [0, 1, 2]
        """
        return self.derived(self, "order", self._order)

    def _order(self) -> np.ndarray:
        c = self.column
        if not c.null_count() and c.is_sorted():
            return np.arange(c.len(), dtype=np.int64)
        return c.arg_sort(nulls_last=False).to_numpy().astype(np.int64)

    def text(self) -> list[str | None]:
        """The first attribute's values cast to strings, as the engines cast them."""
        return self.derived(self, "text", lambda: self.column.cast(pl.String).to_list())

    def matches(self, expr: Callable[[pl.Expr], pl.Expr]) -> np.ndarray:
        """Per id, whether ``expr(column)`` holds for its value (a null result: False), the
        same expression the model's frame form filters with.

        >>> SensitiveDomain(pl.DataFrame({"s": ["a", None, "b"]})).matches(
        ...     lambda c: c.is_in(["a"])).tolist()
        [True, False, False]
        """
        name = self.values.columns[0]
        out = self.values.select(expr(pl.col(name)).fill_null(False).alias(name))
        return out.to_series(0).to_numpy().astype(bool)


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
    domain: SensitiveDomain | None = None
    """Optionally the sensitive values behind the ids; a model whose verdict reads more than
    their identity has no array verdict without it."""
    weights: np.ndarray | None = None
    """Optionally each row's sum of sampling weights (float64), for a model reading weights
    (:class:`~ldiv_polars.models.weighted_k.WeightedKAnonymity`)."""
    class_weights: np.ndarray | None = None
    """Optionally each class's sum of sampling weights, when the caller has them (default:
    summed from :attr:`weights`)."""
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def _get(self, name: str) -> np.ndarray | None:
        return self._cache.get(name)

    def owned(self, owner: object, name: str) -> Any | None:
        """What :meth:`own` kept for ``(owner, name)`` on these rows, None when nothing: an
        entry is read back only by the very object that kept it (a model freed and another
        made at its address reads nothing).

        >>> rows = EncodedRows(np.array([0]), np.array([0]), np.array([2]), 1, 1)
        >>> a, b = object(), object()
        >>> rows.own(a, "emd", 0.5); rows.owned(a, "emd"), rows.owned(b, "emd")
        (0.5, None)
        """
        hit = self._cache.get(f"{name}_{id(owner)}")
        return hit[1] if hit is not None and hit[0] is owner else None  # type: ignore[index]

    def own(self, owner: object, name: str, value: Any) -> None:
        """Keep ``value`` for ``(owner, name)`` with these rows (:meth:`owned`), unless a
        value is kept for it already (the first one stays)."""
        if self.owned(owner, name) is None:
            self._cache[f"{name}_{id(owner)}"] = (owner, value)  # type: ignore[assignment]

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
    def weight_sum(self) -> np.ndarray | None:
        """Sampling weights per class (float64, ``F_k``; 0 for a class with no rows), or None
        when the rows carry no weights.

        >>> EncodedRows(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([1, 1, 1]),
        ...             classes=2, n_sensitive=2, weights=np.array([1.5, 2.0, 4.0])
        ...             ).weight_sum.tolist()
        [3.5, 4.0]
        """
        if self.class_weights is not None:
            return np.asarray(self.class_weights, dtype=np.float64)
        if self.weights is None:
            return None
        v = self._get("weight_sum")
        if v is None:
            v = self._cache["weight_sum"] = np.bincount(self.cls, weights=self.weights,
                                                        minlength=self.classes)
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
        """Classes with at least one row (``evaluate_classes`` returns only these): from the
        class sizes when the caller gave them (every count is positive, so a class has rows
        iff its size is), else from the rows."""
        if self.sizes is not None and self._get("distinct") is None:
            return self.size > 0
        return self.distinct > 0

    def starts(self) -> np.ndarray:
        """The index of each present class's first row (rows are grouped by class), kept
        with the rows.

        >>> EncodedRows(np.array([0, 0, 2]), np.array([0, 1, 0]), np.array([1, 1, 4]), 3, 2
        ...             ).starts().tolist()
        [0, 2]
        """
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
        """``(r1, sum of the j largest counts)`` per class (``j >= 1``;
        :func:`~ldiv_polars.models.class_stats.class_stats`, kept with the rows)."""
        v = self._get(f"top{j}")
        r1 = self._get("r1")
        if v is None or r1 is None:
            self._class_stats(j, with_s=False)
            v, r1 = self._cache[f"top{j}"], self._cache["r1"]
        return r1, v

    @property
    def nlogn(self) -> np.ndarray:
        """``sum n ln n`` per class (float64; 0 for a class with no rows), summed in row
        order (:func:`~ldiv_polars.models.class_stats.class_stats`, kept with the rows).

        >>> EncodedRows(np.array([0, 0]), np.array([0, 1]), np.array([2, 1]), 1, 2
        ...             ).nlogn.tolist()
        [1.3862943611198906]
        """
        v = self._get("nlogn")
        if v is None:
            self._class_stats(1, with_s=True)
            v = self._cache["nlogn"]
        return v

    def _class_stats(self, j: int, with_s: bool) -> None:
        """Keep the per-class statistics of one pass (the number of values, ``r1``, the sum
        of the ``j`` largest counts, and ``sum n ln n`` if ``with_s``) with the rows."""
        from ldiv_polars.models.class_stats import class_stats

        st = class_stats(self, j, with_s)
        self._cache.setdefault("distinct", st["distinct"])
        self._cache["r1"] = st["r1"]
        self._cache[f"top{j}"] = st["top"]
        if with_s:
            self._cache["nlogn"] = st["s"]

    def uniform(self, which: np.ndarray) -> np.ndarray:
        """Whether each class of ``which`` (class indices) has all its counts equal: exactly
        when its largest count times its number of values is its size (integers; the largest
        counts of :meth:`top`, kept with the rows). A class with no rows is uniform.

        >>> rows = EncodedRows(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]),
        ...                    np.array([2, 2, 3, 1]), classes=2, n_sensitive=2)
        >>> rows.uniform(np.array([0, 1])).tolist()
        [True, False]
        """
        r1, _ = self.top(1)
        return r1[which] * self.distinct[which] == self.size[which]

    @property
    def table_counts(self) -> np.ndarray:
        """Table count of each sensitive id (``reference``, or summed from the rows)."""
        v = self._get("table")
        if v is None:
            ref = self.reference
            if ref is None:
                ref = np.bincount(self.s, weights=self.n, minlength=self.n_sensitive)
            v = self._cache["table"] = np.asarray(ref).astype(np.int64)
        return v

    @property
    def domain_size(self) -> int:
        """The number of sensitive ids with a positive table count (:attr:`table_counts`)."""
        v = self._get("domain_size")
        if v is None:
            v = self._cache["domain_size"] = np.count_nonzero(self.table_counts > 0)
        return int(v)

    @property
    def q(self) -> np.ndarray:
        """Table share of each row's sensitive value (``n_s / N``, as ``evaluate_classes``)."""
        v = self._get("q")
        if v is None:
            ref = self.table_counts
            v = ref[self.s].astype(np.float64) / float(int(ref.sum()))
            self._cache["q"] = v
        return v

    @property
    def p(self) -> np.ndarray:
        """Class share of each row's value (``n / class size``, as ``evaluate_classes``)."""
        v = self._get("p")
        if v is None:
            v = self._cache["p"] = self.n / self.size[self.cls].astype(np.float64)
        return v

    def class_max(self, values: np.ndarray, empty: float = 0.0) -> np.ndarray:
        """The largest of ``values`` (one per row) in each class (``empty`` for a class with
        no rows)."""
        starts = self.starts()
        out = np.full(self.classes, empty, dtype=np.float64)
        if starts.shape[0]:
            out[self.cls[starts]] = np.maximum.reduceat(values, starts)
        return out

    def class_any(self, mask: np.ndarray) -> np.ndarray:
        """Whether any row of each class has ``mask`` set."""
        return np.bincount(self.cls[mask], minlength=self.classes) > 0

    def dense(self, weights: np.ndarray, width: int, column: np.ndarray) -> np.ndarray:
        """A ``classes x width`` matrix holding ``weights`` (one per row) at
        ``(cls, column)`` (summed where rows share a cell)."""
        flat = self.cls * width + column
        return np.bincount(flat, weights=weights, minlength=self.classes * width).reshape(
            self.classes, width)

    def prefers_dense(self, width: int) -> bool:
        """Whether a ``classes x width`` matrix is small enough for :meth:`dense`
        (:data:`DENSE_CELLS`)."""
        cells = self.classes * width
        return cells <= max(DENSE_CELLS, 2 * self.cls.shape[0])

    def exact_inputs(self, which: np.ndarray) -> tuple[Reference, list[ClassCounts]]:
        """The reference and the counts of the classes ``which`` (indices), as the models'
        exact routines read them: the ids with a positive table count are the domain, in the
        engines' order of their values (:class:`SensitiveDomain`) when the rows carry a
        one-column domain, else in id order (the values are then the ids: enough for a model
        reading identities only)."""
        table = self.table_counts
        dom = self.domain if self.domain is not None and self.domain.width == 1 else None
        order = dom.order() if dom is not None else np.arange(table.shape[0])
        ids = order[table[order] > 0]
        rank = np.full(table.shape[0], -1, dtype=np.int64)
        rank[ids] = np.arange(ids.shape[0])
        if dom is None:
            ref = Reference(tuple(int(i) for i in ids), tuple(int(c) for c in table[ids]))
        else:
            text = dom.text()
            ref = Reference(tuple(dom.column.gather(ids).to_list()),
                            tuple(int(c) for c in table[ids]),
                            tuple(text[i] for i in ids.tolist()))
        # rows are grouped by class: each class is one slice
        lo = np.searchsorted(self.cls, which, side="left")
        hi = np.searchsorted(self.cls, which, side="right")
        out = [ClassCounts(tuple(rank[self.s[a:b]].tolist()), tuple(self.n[a:b].tolist()))
               for a, b in zip(lo.tolist(), hi.tolist())]
        return ref, out


@dataclass(frozen=True)
class ClassVerdict:
    """Per-class verdict of an array form: ``passed`` is meaningful where ``uncertain`` is
    False (a float statistic within its rounding bound of the threshold)."""

    passed: np.ndarray
    uncertain: np.ndarray | None = None


def class_verdict(model: Model, rows: EncodedRows) -> np.ndarray | None:
    """The exact per-class verdict (bool per class; classes with no rows pass) of ``model`` on
    ``rows``: its array form, with the uncertain classes decided by its exact routine. None
    when the model has no array form."""
    v = model.array_verdict(rows)
    if v is None:
        return None
    passed = np.asarray(v.passed, dtype=bool)
    if v.uncertain is None or not v.uncertain.any():
        return passed
    passed = passed.copy()
    which = np.flatnonzero(v.uncertain)
    ref, counts = rows.exact_inputs(which)
    for c, cc in zip(which, counts):
        passed[c] = model.decide(cc, ref)[0]
    return passed
