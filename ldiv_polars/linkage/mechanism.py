"""Mech-(l,delta)-diversity (Algorithm 1 of Rameshwar & Tandon) and its generalizers.

The central anonymizer (CA) knows P_{Q,S}; it picks ``p in (0, p_l]``, builds equivalence
classes over the ordered QI domain such that every class ``c`` keeps
``|{s : P(c, s) >= p}| >= l`` (*admissible*), and broadcasts the classes together with the sample
size ``N = ceil(ln(m l / delta) / ln(1 / (1 - p)))``, ``m = min(|Q|, 1/(l p),
sum_{i>=l} p_i / p)``. Every data owner waits for N samples and applies the same classes; each
release is then l-diverse with probability >= 1 - delta (Thm 4.4) and t linked releases keep
(l, t delta) (Thm 4.5, :mod:`ldiv_polars.linkage.ledger`).

Exactness: admissibility is decided on integers. With ``P(q, s) = w(q, s) / Z`` the test
``P(c, s) >= p`` is ``sum_{q in c} w(q, s) >= ceil(p Z)``; ``ceil(p Z)`` is computed once with
:class:`fractions.Fraction`. Floats typed by the caller (``p=2e-4``, ``beta=0.01``) are read as
their decimal value (see :func:`~ldiv_polars.linkage.distribution.as_fraction`).

Speed: Greedy-Generalize (Algorithm 2) is one sweep. For a product joint it is a bisection on the
prefix sums of P_Q per class. For a general (sparse) joint the class from ``a`` ends at the l-th
smallest, over the columns s, of the position where the running weight of s from ``a`` reaches
``ceil(p Z)``: few long classes are closed by two vectorized searches over the |S| columns; many
classes switch to the *windows* of all cells (computed once, int64) and a sweep costing one
``maximum.at`` over the class's cells plus one partition of |S| values per class; many short
classes are resolved all at once by a vectorized *band* (the class end of every start, see
:func:`_band`). All are exact and tested equal. See ``bench/bench_linkage.py``.

>>> from ldiv_polars.linkage.distribution import JointDistribution
>>> d = JointDistribution.paper_setting("uniform")
>>> plan = plan_mechanism(d, l=10, delta=0.01, beta=0.01)
>>> plan.classes, plan.N, float(plan.p)
(100, 65606, 0.0002)
>>> plan_mechanism(d, l=10, delta=0.01, beta=0.02).classes
50
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from ldiv_polars.core.inputs import reads_input
from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.linkage.distribution import (
    Exact,
    JointDistribution,
    SparseIndex,
    as_fraction,
)

if TYPE_CHECKING:  # pragma: no cover
    from ldiv_polars.core.inputs import TableLike
    from ldiv_polars.linkage.release import Release

CLASS = "ec"
"""Default name of the equivalence-class column the mechanism adds to a table."""


# --- parameters --------------------------------------------------------------------------------


def _check_l(dist: JointDistribution, l: int) -> int:
    l = require_int_at_least("l", l, 1)
    if l > dist.n_sensitive:
        raise InvalidParameterError(
            f"l={l} exceeds the number of sensitive values |S|={dist.n_sensitive}")
    return l


def _check_delta(delta: float) -> float:
    return require_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)


def _check_p(dist: JointDistribution, l: int, p: Exact) -> tuple[Fraction, Fraction]:
    pf = as_fraction("p", p)
    pl_ = dist.p_l(l)
    if not 0 < pf <= pl_:
        raise InvalidParameterError(
            f"p must be in (0, p_l] = (0, {float(pl_):.6g}] for l={l}, got {float(pf):.6g}")
    return pf, pl_


def m_value(p_sorted: Sequence[Fraction], l: int, p: Fraction, n_qi: int) -> Fraction:
    """m = min{|Q|, 1/(l p), (sum_{i=l}^{|S|} p_i) / p} (exact; Lemma 4.3 bounds the number of
    classes by each term).

    >>> m_value([Fraction(1, 50)] * 50, 10, Fraction(1, 5000), 3000)
    Fraction(500, 1)
    """
    tail = sum(p_sorted[l - 1:], Fraction(0))
    return min(Fraction(n_qi), 1 / (l * p), tail / p)


def sample_size_real(l: int, delta: float, p: Exact, m: Exact) -> float:
    """N before rounding: ln(m l / delta) / ln(1 / (1 - p)).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless ``0 < p <= 1`` and ``m > 0``.

    >>> round(sample_size_real(10, 0.01, 2e-4, 500), 2)
    65605.26
    """
    l = require_int_at_least("l", l, 1)
    delta = _check_delta(delta)
    pfr = as_fraction("p", p)
    mf = float(as_fraction("m", m))
    if not 0 < pfr <= 1:
        raise InvalidParameterError(f"p must be in (0, 1], got {p!r}")
    if mf <= 0:
        raise InvalidParameterError(f"m must be positive, got {m!r}")
    if pfr == 1:
        return 0.0  # every record hits every kept value: one record suffices
    return math.log(mf * l / delta) / -math.log1p(-float(pfr))


def sample_size(l: int, delta: float, p: Exact, m: Exact) -> int:
    """The integer N of Algorithm 1: the smallest N with m l (1 - p)^N <= delta, i.e.
    ceil(ln(m l / delta) / ln(1 / (1 - p))) (the paper does not say how to round; ceil keeps the
    guarantee).

    >>> sample_size(10, 0.01, 2e-4, 500), sample_size(30, 0.01, 2e-4, "500/3")
    (65606, 65606)
    """
    x_real = sample_size_real(l, delta, p, m)
    if as_fraction("p", p) == 1:
        return 1
    pf = float(as_fraction("p", p))
    target = math.log(float(as_fraction("m", m)) * l / delta)
    y = -math.log1p(-pf)
    n = max(0, math.ceil(x_real))
    while n > 0 and (n - 1) * y >= target:
        n -= 1
    while n * y < target:
        n += 1
    return n


# --- partitions --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Partition:
    """Contiguous classes over the ordered domain: class ``k`` holds positions
    ``starts[k] .. starts[k+1]-1`` (the last one ends at ``n - 1``)."""

    starts: np.ndarray
    n: int

    @property
    def classes(self) -> int:
        """The number of classes (contiguous runs of the domain order)."""
        return int(self.starts.size)

    @property
    def stops(self) -> np.ndarray:
        """The end (exclusive) of each class in the domain order."""
        return np.append(self.starts[1:], self.n)

    @property
    def sizes(self) -> np.ndarray:
        """The number of QI vectors of each class."""
        return self.stops - self.starts

    def bounds(self) -> list[tuple[int, int]]:
        """Inclusive ``(first, last)`` positions of every class."""
        return [(int(a), int(b) - 1) for a, b in zip(self.starts, self.stops)]

    def class_of_position(self) -> np.ndarray:
        """Class index of every position of the domain (int64 array of length n)."""
        return np.repeat(np.arange(self.classes, dtype=np.int64), self.sizes)


def _threshold(dist: JointDistribution, p: Fraction) -> int:
    """ceil(p * total): P(c, s) >= p  <=>  W(c, s) >= this integer."""
    return math.ceil(p * dist.total)


def _greedy_product(dist: JointDistribution, l: int, p: Fraction) -> list[int]:
    assert dist.wq is not None and dist.ws is not None
    zq = int(dist.wq.sum())
    zs = sum(dist.ws)
    t = math.ceil(p * zq * zs)
    ws_l = sorted(dist.ws, reverse=True)[l - 1]
    need = -(-t // ws_l)  # class admissible <=> W_Q(class) * ws_l >= t  <=> W_Q(class) >= need
    prefix = np.concatenate(([0], np.cumsum(dist.wq, dtype=np.int64)))
    n = dist.n_qi
    if need <= 1 and (dist.wq > 0).all():
        return list(range(n))  # every single QI vector is admissible
    if (dist.wq == dist.wq[0]).all():
        size = -(-need // int(dist.wq[0]))
        count = max(1, n // size)
        return [k * size for k in range(count)]  # last class takes the remainder
    cum = prefix.tolist()
    starts: list[int] = []
    a = 0
    while a < n:
        b = bisect.bisect_left(cum, cum[a] + need)  # class = [a, b-1] when b <= n
        if b > n:
            break  # deficient tail
        starts.append(a)
        a = b
    if not starts:
        starts = [0]
    return starts


_PROBE_CLASSES = 16
"""Classes closed by column searches before the sweep decides whether to switch to the
windowed sweep (a long-class joint never pays for the windows)."""

_MANY_CLASSES = 1000
"""Projected class count above which the windowed sweep (+ band) replaces the searches."""

_BAND_MAX_LEN = 16
"""Median class length (QI positions) up to which the band resolves the short classes."""


def _windows(ix: SparseIndex, t: int) -> tuple[np.ndarray, np.ndarray]:
    """For every cell ``i`` of column ``s`` (CSC order): ``hi[i]``, the QI position where the
    running weight of column ``s`` started at cell ``i`` first reaches ``t`` (``n``: never), and
    ``hn[i] = hi[i + 1]`` for the next cell of the same column (``n`` after the column's last).

    Both are non-decreasing along a column. A cell of weight >= t closes its own window; the
    others are found by one search in the cumulative weights (exact int64)."""
    n = ix.n
    hi = ix.q.astype(ix.pos_dtype)
    short = np.flatnonzero(ix.w < t)
    if short.size:
        j = np.searchsorted(ix.cum0, ix.cum0[short] + t)
        j -= 1  # the cell whose running weight first reaches the target
        ok = j < ix.col_end[ix.s[short]]
        np.minimum(j, ix.nnz - 1, out=j)
        hi[short] = np.where(ok, ix.q[j], n)
    hn = np.empty_like(hi)
    hn[:-1] = hi[1:]
    hn[ix.col_end - 1] = n
    return hi, hn


def _band(ix: SparseIndex, hi: np.ndarray, hn: np.ndarray, l: int, width: int) -> np.ndarray:
    """Class end ``e(a)`` for EVERY start ``a`` whose class is shorter than ``width`` positions
    (``-1`` elsewhere), in ``width`` vectorized passes over the domain.

    ``N(a, b)``, the number of columns whose weight on ``[a, b]`` reaches t, counts the columns
    having a window ``[x, y] = [q_i, hi[i]]`` inside ``[a, b]``. Windows of a column form a
    chain (x and y non-decreasing), so by inclusion-exclusion ``N(a, b)`` is the signed number of
    points ``(x, y)`` with ``a <= x`` and ``y <= b``: ``+1`` at every window, ``-1`` at every
    ``(q_i, hn[i])`` (the overlap of two consecutive windows). Row ``j`` of the band is
    ``N(a, a + j) = N(a, a + j - 1) + T_j(a + j)`` with ``T_j(y)`` the signed points ending at
    ``y`` with ``y - x <= j``; ``N`` is non-decreasing in ``b``, so the first ``j`` reaching
    ``l`` is ``width`` minus the number of rows that reach it."""
    n = ix.n
    q = ix.q
    pts_y: list[np.ndarray] = []
    pts_d: list[np.ndarray] = []
    for y in (hi, hn):
        d = y - q
        keep = np.flatnonzero((d < width) & (y < n))
        pts_y.append(y[keep].astype(np.intp))
        pts_d.append(d[keep].astype(np.uint8))
    t_row = np.zeros(n + width, dtype=np.int32)
    run = np.zeros(n, dtype=np.int32)
    hits = np.zeros(n, dtype=np.int16)
    reached = np.empty(n, dtype=bool)
    groups = []
    for y, d in zip(pts_y, pts_d):
        order = np.argsort(d, kind="stable")
        groups.append((y[order], np.searchsorted(d[order], np.arange(width + 1))))
    (yw, bw), (yc, bc) = groups
    ones = np.ones(max(yw.size, yc.size, 1), dtype=np.int32)  # ufunc.at is slow with a scalar
    for j in range(width):
        if bw[j + 1] > bw[j]:
            np.add.at(t_row, yw[bw[j]:bw[j + 1]], ones[:bw[j + 1] - bw[j]])
        if bc[j + 1] > bc[j]:
            np.subtract.at(t_row, yc[bc[j]:bc[j + 1]], ones[:bc[j + 1] - bc[j]])
        run += t_row[j:j + n]
        np.greater_equal(run, l, out=reached)
        hits += reached
    ends = np.arange(n, dtype=np.int64) + (width - hits)
    ends[hits == 0] = -1
    return ends


class _Sweep:
    """``F[s]`` = the position where column ``s``'s window started at the first cell >= ``pos``
    closes; the class from ``pos`` ends at the l-th smallest ``F``. Moving ``pos`` forward
    applies the skipped cells (CSR slice): ``F[s] = max(F[s], hn[cell])``."""

    def __init__(self, ix: SparseIndex, hi: np.ndarray, hn: np.ndarray, l: int) -> None:
        self.ix, self.l = ix, l
        self.hn = hn[ix.csr]
        self.f = hi[ix.col_start]
        self.pos = 0

    def close(self, a: int) -> int:
        ix = self.ix
        if a != self.pos:
            lo, up = int(ix.rowptr[self.pos]), int(ix.rowptr[a])
            np.maximum.at(self.f, ix.csr_s[lo:up], self.hn[lo:up])
            self.pos = a
        return int(np.partition(self.f, self.l - 1)[self.l - 1])


def _close_search(ix: SparseIndex, t: int, l: int, a: int) -> int:
    """End of the class starting at ``a`` by two vectorized searches over the |S| columns: the
    first cell >= ``a`` of every column, then where its running weight reaches ``t``."""
    k = np.searchsorted(ix.key, ix.col_base + a)
    j = np.searchsorted(ix.cum0, ix.cum0[k] + t)
    j -= 1
    ok = j < ix.col_end
    np.minimum(j, ix.nnz - 1, out=j)
    f = np.where(ok, ix.q[j], ix.n)
    return int(np.partition(f, l - 1)[l - 1])


def _close_scan(ix: SparseIndex, t: int, l: int, a: int,
                cells: tuple[list[int], list[int], list[int]]) -> int:
    """Reference: scan the cells from position ``a`` in QI order (pure Python), counting the
    columns whose running weight crosses ``t``; ``n`` when the tail never closes."""
    qs, ss, ws = cells
    run: dict[int, int] = {}
    crossed = 0
    for i in range(int(ix.rowptr[a]), len(qs)):
        col = ss[i]
        before = run.get(col, 0)
        after = before + ws[i]
        run[col] = after
        if before < t <= after:
            crossed += 1
            if crossed >= l:
                return qs[i]
    return ix.n


def _greedy_sparse(dist: JointDistribution, l: int, p: Fraction, mode: str = "auto") -> list[int]:
    """Greedy sweep over a sparse joint: the class from ``a`` ends at ``e(a)``, the l-th
    smallest over the columns s of the first position where the running weight of s from
    ``a`` reaches ``t``. Ways to get ``e(a)``, all exact (tested equal):

    * ``search``: two vectorized searches over the |S| columns (no set-up; ~|S| log nnz cache
      misses per class, good for few long classes);
    * ``sweep``: the windows of all cells once (:func:`_windows`), then per class one
      ``maximum.at`` over the class's cells and one partition of |S| values;
    * ``band`` (``bandK``: band width K, default 8): ``e(a)`` for every ``a`` whose class is
      shorter than K positions at once (:func:`_band`), the sweep for the rest;
    * ``scan``: pure-Python reference scan of the cells.

    ``auto`` closes the first classes by search and switches to the sweep when the domain
    projects to many classes, and to the band when their median length is short."""
    ix = dist.sparse_index
    n = ix.n
    t = _threshold(dist, p)
    starts: list[int] = []
    if mode == "scan":
        order = ix.csr
        cells = (ix.q[order].tolist(), ix.s[order].tolist(), ix.w[order].tolist())
        _close_classes(lambda a: _close_scan(ix, t, l, a, cells), 0, n, starts)
        return starts or [0]
    a = 0
    if mode in ("auto", "search"):
        limit = n if mode == "search" else _PROBE_CLASSES
        a, done = _close_classes(lambda a: _close_search(ix, t, l, a), a, n, starts, limit)
        if done or len(starts) * n <= _MANY_CLASSES * a:  # few long classes: keep searching
            _close_classes(lambda a: _close_search(ix, t, l, a), a, n, starts)
            return starts or [0]
    hi, hn = _windows(ix, t)
    sweep = _Sweep(ix, hi, hn, l)
    width = (int(mode[4:]) if mode[4:] else 8) if mode.startswith("band") else 0
    if mode == "auto":
        first = len(starts)
        a, done = _close_classes(sweep.close, a, n, starts, first + 4 * _PROBE_CLASSES)
        if done:
            return starts or [0]
        width = _band_width(starts[first:], a)
    if width and a < n:
        ends = _band(ix, hi, hn, l, width).tolist()
        _close_classes(lambda a: ends[a] if ends[a] >= 0 else sweep.close(a), a, n, starts)
        return starts or [0]
    _close_classes(sweep.close, a, n, starts)
    return starts or [0]


def _band_width(probed: list[int], end: int) -> int:
    """The band width ``auto`` takes after probing the classes starting at ``probed`` (the
    last ending before ``end``): a power of two from 8 up covering three times their median
    length when that is at most ``_BAND_MAX_LEN``, else 0 (no band: the sweep)."""
    lengths = [stop - start for start, stop in zip(probed, [*probed[1:], end])]
    if not lengths:
        return 0
    median = sorted(lengths)[len(lengths) // 2]
    if median > _BAND_MAX_LEN:
        return 0
    width = 8
    while width < 3 * median:
        width *= 2
    return width


def _close_classes(close: Callable[[int], int], a: int, n: int, starts: list[int],
                   limit: int | None = None) -> tuple[int, bool]:
    """Close classes one after another from position ``a`` (``close(a)``: the class's last
    position, ``>= n`` when the rest cannot form a class), appending each start to ``starts``
    until ``starts`` holds ``limit`` entries. Returns the next start and whether the domain is
    done (every position placed, or the rest unable to close)."""
    while a < n and (limit is None or len(starts) < limit):
        e = close(a)
        if e >= n:
            return a, True
        starts.append(a)
        a = e + 1
    return a, a >= n


_SPARSE_MODES = {"auto": "auto", "search": "search", "csc": "search", "scan": "scan",
                 "csr": "scan", "sweep": "sweep", "band": "band"}
"""Ways of closing a class on a sparse joint (``csc`` / ``csr``: earlier names)."""


def greedy_generalize(dist: JointDistribution, l: int, p: Exact, *,
                      _mode: str = "auto") -> Partition:
    """Algorithm 2 (Greedy-Generalize), intended semantics: sweep the ordered QI domain, close
    the current class as soon as it is admissible (``|{s : P(c, s) >= p}| >= l``), merge a
    deficient last class into the previous one. Optimal (most classes) among contiguous
    admissible partitions (Prop. 4.6). Exact integer comparisons.

    The paper's literal loop ``while i < |Q|`` can leave the last QI vector out; this sweep
    covers every position (erratum in ``paper-notes/ell-delta-diversity.md``).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` on an unknown sweep mode.

    >>> d = JointDistribution.paper_setting("uniform")
    >>> greedy_generalize(d, 10, Fraction(4, 10000)).classes  # beta = 0.02: 50 classes of 60
    50
    """
    l = _check_l(dist, l)
    pf, _ = _check_p(dist, l, p)
    if dist.kind == "product":
        starts = _greedy_product(dist, l, pf)
    else:
        mode = _SPARSE_MODES.get(_mode, _mode)
        if mode not in _SPARSE_MODES.values() and not (
                mode.startswith("band") and mode[4:].isdigit() and 0 < int(mode[4:]) < 256):
            raise InvalidParameterError(f"unknown sweep mode {_mode!r}")
        starts = _greedy_sparse(dist, l, pf, mode)
    return Partition(np.asarray(starts, dtype=np.int64), dist.n_qi)


def generalize_ind(dist: JointDistribution, l: int, p: Exact) -> Partition:
    """Algorithm 3 (Generalize-Ind) for P_{Q,S} = P_Q P_S: theta = |Q| min_q P_Q(q),
    k = floor(theta p_l / p) classes of T = |Q| / k consecutive QI vectors.

    The paper assumes T is an integer. When k does not divide |Q| this uses T = ceil(|Q| / k)
    and merges the remainder into the last class (every class keeps >= |Q|/k vectors, so
    Lemma 4.7's admissibility argument still holds); k = 0 (theta p_l < p) gives the single
    class of Lemma 4.2. Raises :class:`DistributionError` when P is not independent.

    >>> d = JointDistribution.paper_setting("uniform")
    >>> generalize_ind(d, 10, Fraction(1, 5000)).classes  # floor(p_l / p) = 100
    100
    """
    l = _check_l(dist, l)
    pf, pl_ = _check_p(dist, l, p)
    prod = dist.as_product()
    assert prod.wq is not None
    nq = prod.n_qi
    theta = Fraction(nq * int(prod.wq.min()), int(prod.wq.sum()))
    k = math.floor(theta * pl_ / pf)
    if k <= 1:
        return Partition(np.zeros(1, dtype=np.int64), nq)
    size = -(-nq // k)
    count = nq // size
    return Partition(np.arange(count, dtype=np.int64) * size, nq)


def class_weights(dist: JointDistribution, part: Partition) -> np.ndarray:
    """W(c, s) for every class and sensitive value (object array of exact ints for product
    joints, int64 otherwise): ``P(c, s) = W(c, s) / dist.total``."""
    cls = part.class_of_position()
    if dist.kind == "product":
        assert dist.wq is not None and dist.ws is not None
        wq_c = np.zeros(part.classes, dtype=np.int64)
        np.add.at(wq_c, cls, dist.wq)
        return np.outer(wq_c.astype(object), np.asarray(dist.ws, dtype=object))
    assert dist.q_idx is not None and dist.s_idx is not None and dist.weight is not None
    out = np.zeros((part.classes, dist.n_sensitive), dtype=np.int64)
    np.add.at(out, (cls[dist.q_idx], dist.s_idx), dist.weight)
    return out


def admissible_counts(dist: JointDistribution, part: Partition, p: Exact) -> np.ndarray:
    """|{s : P(c, s) >= p}| for every class (exact)."""
    pf = as_fraction("p", p)
    w = class_weights(dist, part)
    t = math.ceil(pf * dist.total)
    return (w >= t).sum(axis=1).astype(np.int64)


# --- the plan ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MechanismPlan:
    """What the CA broadcasts: p, N and the classes (plus the numbers behind them).

    ``p``, ``p_l``, ``beta = p / p_l`` and ``m`` are exact fractions; ``N`` is the integer sample
    size (``N_real`` before rounding). :meth:`to_dict` gives the JSON of ``ldiv plan``.
    """

    l: int
    delta: float
    p: Fraction
    p_l: Fraction
    m: Fraction
    N: int
    N_real: float
    partition: Partition
    dist: JointDistribution = field(repr=False)
    method: str = "greedy"

    @property
    def beta(self) -> Fraction:
        """The threshold ratio ``p / p_l`` (exact fraction)."""
        return self.p / self.p_l

    @property
    def classes(self) -> int:
        """The number of classes of the plan's partition."""
        return self.partition.classes

    @property
    def qi(self) -> tuple[str, ...]:
        """The QI column names of the planned distribution."""
        return self.dist.qi

    def class_bounds(self) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """``(first, last)`` QI vector of every class, in the domain order."""
        dom = self.dist.domain
        firsts = dom[self.partition.starts.tolist()].rows()
        lasts = dom[(self.partition.stops - 1).tolist()].rows()
        return list(zip(firsts, lasts))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``p``, ``p_l``, ``beta``, ``m``, ``N``, ``classes``, ``class_bounds``."""
        def plain(v: Any) -> Any:
            return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

        return {
            "p": float(self.p),
            "p_l": float(self.p_l),
            "beta": float(self.beta),
            "m": float(self.m),
            "N": int(self.N),
            "classes": int(self.classes),
            "class_bounds": [
                [[plain(v) for v in first], [plain(v) for v in last]]
                for first, last in self.class_bounds()
            ],
        }

    # --- broadcasting the classes to a data owner ----------------------------------------------

    def class_map(self, class_column: str = CLASS) -> pl.DataFrame:
        """The explicit map ``(qi..., class)`` of every QI vector of the domain."""
        return self.dist.domain.with_columns(
            pl.Series(class_column, self.partition.class_of_position()))

    def class_expr(self, class_column: str = CLASS) -> pl.Expr:
        """For a single ordered QI column: the class as an interval lookup expression
        (``first_k <= q <= last_k``, null outside every interval), no join.

        Requires the domain order to be the column's sorted order (the lexicographic default).
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` for several QI columns or a
        domain that is not ascending without nulls (use :meth:`apply`).
        """
        if len(self.qi) != 1:
            raise InvalidParameterError(
                "class_expr needs a single QI column; use apply() (a join) for QI vectors")
        col = self.qi[0]
        values = self.dist.domain.get_column(col)
        if not values.is_sorted() or values.null_count():
            raise InvalidParameterError(
                "class_expr needs the domain in ascending order without nulls; use apply()")
        firsts = values.gather(self.partition.starts.tolist())
        lasts = values.gather((self.partition.stops - 1).tolist())
        x = pl.col(col).cast(values.dtype, strict=False)
        idx = pl.lit(firsts).search_sorted(x, side="right").cast(pl.Int64) - 1
        safe = idx.clip(0, len(firsts) - 1)
        inside = (idx >= 0) & (x <= pl.lit(lasts).gather(safe))
        return pl.when(inside).then(idx).otherwise(None).alias(class_column)

    def apply(self, table: TableLike, *, class_column: str = CLASS) -> pl.LazyFrame:
        """Lazy: ``table`` with the broadcast class added as ``class_column`` (null for a QI
        vector outside the domain). One QI column in sorted order uses :meth:`class_expr`;
        otherwise a join on the explicit map. Rows are never dropped here.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the table already has
        ``class_column``."""
        from ldiv_polars.core.inputs import to_lazyframe
        from ldiv_polars.core.validate import validate_columns

        lf = to_lazyframe(table)
        validate_columns(lf, self.qi, None, require_sensitive=False)
        if class_column in lf.collect_schema().names():
            raise InvalidParameterError(f"table already has a column named {class_column!r}")
        if len(self.qi) == 1:
            values = self.dist.domain.get_column(self.qi[0])
            if values.is_sorted() and not values.null_count() and values.dtype.is_numeric():
                return lf.with_columns(self.class_expr(class_column))
        mapping = self.class_map(class_column).lazy()
        schema = lf.collect_schema()
        casts = [pl.col(c).cast(schema[c]) for c in self.qi]
        mapping = mapping.with_columns(casts)
        return lf.join(mapping, on=list(self.qi), how="left", nulls_equal=True,
                       maintain_order="left")

    @reads_input
    def anonymize(self, table: TableLike, sensitive: str, *, class_column: str = CLASS,
                  verify: bool = True) -> AnonymizedTable:
        """Apply the classes to a data owner's table and re-verify the result.

        The released frame has columns ``(class_column, sensitive)``; rows whose QI vector is
        outside the broadcast domain are suppressed and counted. With ``verify`` the release is
        checked with the foundation checker (``DistinctLDiversity(l)`` on the class column):
        under the mechanism it fails with probability <= delta when the table holds >= N
        i.i.d. rows.
        """
        from ldiv_polars.core.inputs import to_lazyframe
        from ldiv_polars.core.validate import validate_columns

        lf = to_lazyframe(table)
        validate_columns(lf, self.qi, sensitive)
        classed = self.apply(lf, class_column=class_column)
        counts = classed.select(
            pl.len().alias("rows"), pl.col(class_column).is_null().sum().alias("out"),
        ).collect()
        rows, out = int(counts["rows"][0]), int(counts["out"][0])
        released = classed.filter(pl.col(class_column).is_not_null()).select(class_column,
                                                                             sensitive)
        passed: bool | None = None
        achieved: int | None = None
        if verify and rows - out > 0:
            from ldiv_polars.models import DistinctLDiversity
            from ldiv_polars.models.verdict import check

            res = check(released, [class_column], sensitive, [DistinctLDiversity(self.l)])
            passed = res.passed
            ach = res.models[0].achieved
            achieved = None if ach is None else int(ach)  # type: ignore[call-overload]
        return AnonymizedTable(frame=released, rows=rows, suppressed=out,
                               enough_rows=rows >= self.N,
                               passed=passed, achieved_l=achieved, class_column=class_column,
                               sensitive=sensitive, plan=self)


@dataclass(frozen=True, eq=False)
class AnonymizedTable:
    """A data owner's release under a :class:`MechanismPlan` and its verification."""

    frame: pl.LazyFrame
    rows: int
    suppressed: int
    enough_rows: bool
    passed: bool | None
    achieved_l: int | None
    class_column: str
    sensitive: str
    plan: MechanismPlan = field(repr=False)

    def release(self, name: str | None = None) -> Release:
        """This table as a :class:`~ldiv_polars.linkage.release.Release` (for linkage)."""
        from ldiv_polars.linkage.release import Release

        mapping = self.plan.class_map(self.class_column)
        return Release.from_mapping(self.frame, self.plan.qi, self.sensitive, mapping,
                                    class_columns=[self.class_column], name=name)


def plan_mechanism(
    dist: JointDistribution,
    l: int,
    delta: float,
    *,
    p: Exact | None = None,
    beta: Exact | None = None,
    budget: int | None = None,
    method: Literal["greedy", "ind"] = "greedy",
) -> MechanismPlan:
    """Plan Algorithm 1 in either direction: give exactly one of ``p``, ``beta = p / p_l``
    (classes and N follow), or a sample ``budget`` (the p maximizing the number of classes with
    ``N <= budget`` is found: N(p) is non-increasing in p and the greedy class count is
    non-increasing in p, so it is the smallest feasible p, located by bisection and checked).

    ``method="ind"`` uses Algorithm 3 (independent P only).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless exactly one of ``p``,
    ``beta``, ``budget`` is given, on a ``beta`` outside (0, 1] or an unknown ``method``.
    """
    l = _check_l(dist, l)
    delta = _check_delta(delta)
    given = [x is not None for x in (p, beta, budget)]
    if sum(given) != 1:
        raise InvalidParameterError("give exactly one of p, beta or budget")
    if method not in ("greedy", "ind"):
        raise InvalidParameterError(f"method must be 'greedy' or 'ind', got {method!r}")
    ps = dist.p_sorted()
    pl_ = ps[l - 1]
    if beta is not None:
        b = as_fraction("beta", beta)
        if not 0 < b <= 1:
            raise InvalidParameterError(f"beta must be in (0, 1], got {beta!r}")
        pf = b * pl_
    elif p is not None:
        pf, _ = _check_p(dist, l, p)
    else:
        pf = p_for_budget(dist, l, delta, budget)  # type: ignore[arg-type]
    run = greedy_generalize if method == "greedy" else generalize_ind
    part = run(dist, l, pf)
    if budget is not None:
        pf, part = _round_up_p(dist, l, pf, pl_, part, run)
    m = m_value(ps, l, pf, dist.n_qi)
    if part.classes > m:  # Lemma 4.3; exact arithmetic makes this impossible
        raise AssertionError(f"{part.classes} classes exceed m={m} (Lemma 4.3)")
    return MechanismPlan(l=l, delta=delta, p=pf, p_l=pl_, m=m,
                         N=sample_size(l, delta, pf, m), N_real=sample_size_real(l, delta, pf, m),
                         partition=part, dist=dist, method=method)


def _round_up_p(dist: JointDistribution, l: int, p: Fraction, p_l: Fraction, part: Partition,
                run: Any) -> tuple[Fraction, Partition]:
    """The shortest decimal >= p (so N stays within budget) that keeps the same classes."""
    for digits in range(1, 18):
        exp = math.floor(math.log10(float(p))) - digits + 1
        unit = Fraction(10) ** exp
        cand = math.ceil(p / unit) * unit
        if cand > p_l:
            continue
        other = run(dist, l, cand)
        if np.array_equal(other.starts, part.starts):
            return cand, other
    return p, part


def p_for_budget(dist: JointDistribution, l: int, delta: float, budget: int) -> Fraction:
    """The smallest p in (0, p_l] whose sample size is <= ``budget`` (N(p) is non-increasing).

    Raises :class:`InvalidParameterError` when even p = p_l needs more samples.
    """
    l = _check_l(dist, l)
    delta = _check_delta(delta)
    budget = require_int_at_least("budget", budget, 1)
    ps = dist.p_sorted()
    pl_ = ps[l - 1]

    def n_of(x: Fraction) -> int:
        return sample_size(l, delta, x, m_value(ps, l, x, dist.n_qi))

    if n_of(pl_) > budget:
        raise InvalidParameterError(
            f"budget N={budget} is too small: even p = p_l needs N={n_of(pl_)}")
    lo, hi = 0.0, float(pl_)  # n_of(lo) = inf > budget, n_of(hi) <= budget
    hi_f = pl_
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        mf = Fraction(mid)
        if n_of(mf) <= budget:
            hi, hi_f = mid, mf
        else:
            lo = mid
    return hi_f
