"""MDAV microaggregation (Domingo-Ferrer & Torra 2005), exact and vectorized.

MDAV partitions ``n`` numeric records into cells of at least ``k`` records:

* while at least ``3k`` records remain: take the centroid of the remaining records, ``r`` the
  record farthest from it and ``s`` the record farthest from ``r``; form a cell of ``r`` and its
  ``k - 1`` nearest remaining records, then a cell of ``s`` and its ``k - 1`` nearest among
  those still remaining;
* if ``2k`` to ``3k - 1`` remain: one cell around the farthest record ``r``, the rest form the
  last cell; otherwise the rest form one cell.

Columns are standardized to zero mean and unit (population) variance first, distances are
Euclidean. Ties are broken deterministically by the smaller record index (the reference record
itself always belongs to its own cell).

**Implementation and complexity.** This is the standard algorithm, selection for selection; only
the search is accelerated. Let ``n`` be the record count, ``m`` the dimension.

* Each query (farthest from the centroid, farthest from ``r`` + ``r``'s nearest, ``s``'s
  nearest) is one vectorized pass ``|z|^2 - 2 z.v`` over the remaining records, kept
  column-major (``(m, n)``) and evaluated with ``np.einsum`` (no BLAS threads, which thrash on
  a loaded machine). Removed records are masked by ``+-inf`` in the squared norms and
  compacted away whenever an eighth of the array is dead.
* The expanded form is only used to *prune*: the exact direct formula :func:`sqdist` is then
  evaluated on the records within a rounding margin of the winner (farthest) or of an upper
  bound on the ``k``-th smallest value taken from a strided sample (nearest), and the winners
  are chosen on those exact values with the index tie-break. The cells are therefore exactly
  those of the brute-force :func:`mdav_reference`.
* Cost: 3 passes of ``O(n m)`` per pair of cells, i.e. ``O(n^2 m / k)`` in total — the
  quadratic term is inherent to MDAV (every farthest-point query must see every remaining
  record) — plus ``O(n m)`` per compaction (``O(log n)`` of them); memory ``O(n m)``.
  A KD-tree (``scipy.spatial.cKDTree``) for the nearest steps was tried and rejected: MDAV
  always queries the *outermost* remaining record, where a KD-tree in 10 dimensions visits
  most leaves (measured slower than the pruned scan; timings in BENCHMARKS.md, section
  Microaggregation, from ``bench/bench_microagg.py``).

:func:`mdav_reference` is the plain brute-force version (full distance passes and an
``argpartition`` per step); tests check both give identical cells.

>>> import numpy as np
>>> x = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2], [9.0]])
>>> mdav(x, 3).labels.tolist()
[1, 1, 1, 1, 0, 0, 0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError

__all__ = [
    "MdavResult",
    "distortion",
    "mdav",
    "mdav_reference",
    "standardize",
    "weighted_centroids",
]

_REST = -1  # reference index of the final "rest" cell


@dataclass(frozen=True)
class MdavResult:
    """Cells of an MDAV run.

    Attributes:
        labels: cell id of every record (``0 .. n_cells - 1``, in formation order).
        k: the minimum cell size used.
        references: original index of each cell's reference record in selection order
            (``-1`` for the last "rest" cell, which has no reference).
        radii: squared standardized distance from each reference to the farthest record it
            took (``inf`` for the rest cell) — the paper's "distance to the last point added".
        boundary_ties: number of cells where records at exactly the radius were left out by
            the index tie-break (0 on continuous data; makes the intensional spec ambiguous).
        mean, scale: the standardization (``z = (x - mean) / scale``; constant columns keep
            scale 1).
        centroids: cell centroids in the original units (``pi``-weighted when weights given).
        distortion: ``D = SSE / SST`` on the standardized data (reconstruction by the
            unweighted cell means).
        weighted_distortion: the paper's ``(1/(m sum pi)) sum pi_j |z_j - zhat_c|^2`` with
            ``pi``-weighted centroids (equals ``distortion`` when all weights are equal).
    """

    labels: np.ndarray
    k: int
    references: np.ndarray
    radii: np.ndarray
    boundary_ties: int
    mean: np.ndarray
    scale: np.ndarray
    centroids: np.ndarray
    distortion: float
    weighted_distortion: float
    sizes: np.ndarray = field(repr=False)

    @property
    def n_cells(self) -> int:
        """The number of cells formed."""
        return int(self.references.size)


# --- helpers ------------------------------------------------------------------------------------


def _as_matrix(x: object) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"MDAV needs numeric data: {exc}") from exc
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise InvalidParameterError(
            f"MDAV needs an (n, m) matrix with m >= 1, got shape {arr.shape}"
        )
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        raise InvalidParameterError(
            f"MDAV needs finite values; {bad.size} record(s) hold NaN/inf "
            f"(first: row {int(bad[0])})"
        )
    return arr


def standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columnwise zero mean, unit population variance; constant columns get scale 1.

    Returns ``(z, mean, scale)`` with ``z = (x - mean) / scale``.
    """
    x = _as_matrix(x)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return (x - mean) / scale, mean, scale


def sqdist(z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``sum_j (z_ij - v_j)^2`` (rows of ``z`` to ``v``), summed over
    columns left to right — the one formula every exact comparison of this module uses."""
    diff = z - v
    np.multiply(diff, diff, out=diff)
    out = diff[:, 0].copy()
    for j in range(1, diff.shape[1]):  # loop over the m columns, vectorized over records
        out += diff[:, j]
    return out


def _take_nearest(d: np.ndarray, ids: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` smallest ``d`` with ties broken by smaller ``ids``."""
    if count >= d.size:
        return np.lexsort((ids, d))
    part = np.argpartition(d, count - 1)[:count]
    t = d[part].max()
    pool = np.flatnonzero(d <= t)
    order = np.lexsort((ids[pool], d[pool]))
    return pool[order[:count]]


# --- the fast exact implementation --------------------------------------------------------------


class _Remaining:
    """Remaining records: compacted arrays + dead mask, with exact farthest / nearest queries.

    Every query first evaluates ``|z|^2 - 2 z.v + |v|^2`` for all remaining records (one BLAS
    matrix-vector product), then re-evaluates the direct formula :func:`sqdist` only on the
    records that can win within a rounding margin — the answer is the exact one of the direct
    formula with the index tie-break.
    """

    _SAMPLE = 1024  # strided sample used to bound the k-th smallest distance

    def __init__(self, z: np.ndarray) -> None:
        self.ids = np.arange(z.shape[0])
        # column-major copy: the (m, n) layout makes every pass a contiguous, BLAS-free loop
        self.zt = np.ascontiguousarray(z.T)
        self._rebuild_arrays()
        self.total = z.sum(axis=0)
        self.n_alive = z.shape[0]

    def row(self, pos: int) -> np.ndarray:
        return self.zt[:, pos].copy()

    def rows(self, pos: np.ndarray) -> np.ndarray:
        """C-ordered ``(len(pos), m)`` block: the same layout, hence the same rounding, as
        indexing the row-major matrix."""
        return np.ascontiguousarray(self.zt[:, pos].T)

    def _rebuild_arrays(self) -> None:
        self.sqn = np.einsum("ji,ji->i", self.zt, self.zt)
        self.sqn_max = float(self.sqn.max()) if self.sqn.size else 0.0
        self.minus2zt = -2.0 * self.zt
        self.sqn_far = self.sqn.copy()  # -inf at dead records: they never win a farthest query
        self.sqn_near = self.sqn.copy()  # +inf at dead records: never among the nearest
        self.alive = np.ones(self.ids.size, dtype=bool)
        self.dead = np.zeros(self.ids.size, dtype=bool)
        self.n_dead = 0

    def centroid(self) -> np.ndarray:
        return self.total / self.n_alive

    def remove(self, pos: np.ndarray) -> np.ndarray:
        """Remove records at positions ``pos``; returns their original ids."""
        self.alive[pos] = False
        self.dead[pos] = True
        self.sqn_far[pos] = -np.inf
        self.sqn_near[pos] = np.inf
        self.n_dead += pos.size
        self.n_alive -= pos.size
        self.total = self.total - self.rows(pos).sum(axis=0)
        out = self.ids[pos]
        if self.n_dead * 8 > self.ids.size and self.n_alive > 0:
            keep = self.alive
            self.zt = self.zt[:, keep]
            self.ids = self.ids[keep]
            self._rebuild_arrays()
        return out

    def approx(self, v: np.ndarray, far: bool) -> tuple[np.ndarray, float]:
        """``|z|^2 - 2 z.v`` (the squared distance minus the constant ``|v|^2``; dead records at
        ``-inf`` if ``far`` else ``+inf``) and a safe bound on its rounding error."""
        d = np.einsum("ji,j->i", self.minus2zt, v)
        d += self.sqn_far if far else self.sqn_near
        return d, 1e-9 * (self.sqn_max + float(v @ v)) + 1e-300

    def near_from_far(self, d: np.ndarray) -> np.ndarray:
        """Turn a ``far`` approximation into a ``near`` one in place (dead records to +inf)."""
        np.copyto(d, np.inf, where=self.dead)
        return d

    def farthest(self, v: np.ndarray, approx: tuple[np.ndarray, float] | None = None) -> int:
        """Position of the alive record farthest from ``v`` (exact, index tie-break)."""
        d, tol = approx if approx is not None else self.approx(v, True)
        cand = np.flatnonzero(d >= d.max() - tol)
        exact = sqdist(self.rows(cand), v)
        hits = cand[exact == exact.max()]
        return int(hits[np.argmin(self.ids[hits])])

    def nearest(
        self, ref: int, count: int, approx: tuple[np.ndarray, float] | None = None
    ) -> tuple[np.ndarray, float, bool]:
        """``ref`` and its ``count - 1`` nearest alive records (exact, index tie-break).

        Returns positions, the squared radius and whether a record at exactly the radius was
        left out by the tie-break.
        """
        v = self.row(ref)
        if count >= self.n_alive:
            pool = np.flatnonzero(self.alive)
        else:
            d, tol = approx if approx is not None else self.approx(v, False)
            step = max(1, d.size // self._SAMPLE)
            sample = d[::step]
            thr = np.inf
            if sample.size > count:
                thr = float(np.partition(sample, count - 1)[count - 1])
            if not np.isfinite(thr):  # sample too small or mostly dead: full selection
                thr = float(np.partition(d, count - 1)[count - 1])
            # thr bounds the count-th smallest from above (a subset's count-th is larger)
            pool = np.flatnonzero(d <= thr + tol)
            if pool.size > 64 * count and pool.size > 4096:  # unlucky sample: tighten
                thr = float(np.partition(d[pool], count - 1)[count - 1])
                pool = pool[d[pool] <= thr + tol]
        exact = sqdist(self.rows(pool), v)
        exact[pool == ref] = -1.0
        take = _take_nearest(exact, self.ids[pool], count)
        chosen = pool[take]
        exact[pool == ref] = 0.0
        radius = float(exact[take].max())
        left = np.ones(pool.size, dtype=bool)
        left[take] = False
        tie = bool((exact[left] == radius).any())
        return chosen, radius, tie


def _run(z: np.ndarray, k: int) -> tuple[np.ndarray, list[int], list[float], int]:
    n = z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    refs: list[int] = []
    radii: list[float] = []
    ties = 0
    rem = _Remaining(np.ascontiguousarray(z))

    def cell_around(pos: int, approx: tuple[np.ndarray, float] | None = None) -> None:
        nonlocal ties
        ref_id = int(rem.ids[pos])
        chosen, radius, tie = rem.nearest(pos, k, approx)
        labels[rem.remove(chosen)] = len(refs)
        refs.append(ref_id)
        radii.append(radius)
        ties += int(tie)

    while rem.n_alive >= 3 * k:
        r = rem.farthest(rem.centroid())
        r_vec = rem.row(r)
        d_r, tol = rem.approx(r_vec, True)
        s_id = int(rem.ids[rem.farthest(r_vec, (d_r, tol))])
        cell_around(r, (rem.near_from_far(d_r), tol))  # same pass gives r's nearest records
        s = int(np.searchsorted(rem.ids, s_id))  # ids stay sorted through compactions
        if not (s < rem.ids.size and rem.ids[s] == s_id and rem.alive[s]):
            s = rem.farthest(r_vec)  # s fell into r's cell (all tied): next farthest from r
        cell_around(s)
    if rem.n_alive >= 2 * k:
        cell_around(rem.farthest(rem.centroid()))
    if rem.n_alive > 0:
        labels[rem.remove(np.flatnonzero(rem.alive))] = len(refs)
        refs.append(_REST)
        radii.append(np.inf)
    return labels, refs, radii, ties


def _run_reference(z: np.ndarray, k: int) -> tuple[np.ndarray, list[int], list[float], int]:
    n = z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    remaining = np.arange(n)
    total = z.sum(axis=0)
    refs: list[int] = []
    radii: list[float] = []
    ties = 0

    def farthest(v: np.ndarray) -> int:
        d = sqdist(z[remaining], v)
        return int(remaining[np.flatnonzero(d == d.max())].min())

    def cell_around(ref: int) -> None:
        nonlocal remaining, total, ties
        d = sqdist(z[remaining], z[ref])
        d[remaining == ref] = -1.0
        take = _take_nearest(d, remaining, k)
        d[remaining == ref] = 0.0
        radius = float(d[take].max())
        left = np.ones(remaining.size, dtype=bool)
        left[take] = False
        ties += int((d[left] == radius).any())
        chosen = remaining[take]
        labels[chosen] = len(refs)
        refs.append(ref)
        radii.append(radius)
        total = total - z[chosen].sum(axis=0)
        remaining = remaining[left]

    while remaining.size >= 3 * k:
        r = farthest(total / remaining.size)
        s = farthest(z[r])
        cell_around(r)
        if not (remaining == s).any():
            s = farthest(z[r])
        cell_around(s)
    if remaining.size >= 2 * k:
        cell_around(farthest(total / remaining.size))
    if remaining.size:
        labels[remaining] = len(refs)
        refs.append(_REST)
        radii.append(np.inf)
    return labels, refs, radii, ties


# --- centroids and distortion -------------------------------------------------------------------


def weighted_centroids(
    x: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Per-cell centroids ``sum w_j x_j / sum w_j`` (plain means without weights).

    A cell whose weights are all zero falls back to its plain mean.
    """
    x = _as_matrix(x)
    labels = np.asarray(labels, dtype=np.int64)
    n_cells = int(labels.max()) + 1 if labels.size else 0
    counts = np.bincount(labels, minlength=n_cells).astype(np.float64)
    plain = np.stack([np.bincount(labels, x[:, j], n_cells) for j in range(x.shape[1])], axis=1)
    plain /= counts[:, None]
    if weights is None:
        return plain
    w = np.asarray(weights, dtype=np.float64)
    wsum = np.bincount(labels, w, n_cells)
    num = np.stack([np.bincount(labels, w * x[:, j], n_cells) for j in range(x.shape[1])], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / wsum[:, None]
    zero = wsum <= 0
    out[zero] = plain[zero]
    return out


def distortion(
    x: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    standardized: bool = False,
) -> float:
    """Distortion of a partition. Without weights ``D = SSE / SST`` (standardized data, cell
    means); with weights the paper's ``(1/(m sum pi)) sum pi_j |z_j - zhat_c|^2`` with
    ``pi``-weighted centroids (§VI.B). ``m`` counts the non-constant columns.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless ``labels`` has one entry per
    record.

    >>> distortion([[0.0], [2.0], [10.0], [12.0]], [0, 0, 1, 1])   # SSE 4 / SST 104
    0.038461538461538464
    """
    x = _as_matrix(x)
    z = x if standardized else standardize(x)[0]
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (z.shape[0],):
        raise InvalidParameterError(
            f"labels must have one entry per record ({z.shape[0]}), got {labels.shape}"
        )
    cen = weighted_centroids(z, labels, weights)
    resid = sqdist(z - cen[labels], np.zeros(z.shape[1]))
    if weights is None:
        sst = float(sqdist(z - z.mean(axis=0), np.zeros(z.shape[1])).sum())
        return float(resid.sum() / sst) if sst > 0 else 0.0
    w = np.asarray(weights, dtype=np.float64)
    m_eff = int((z.std(axis=0) > 0).sum())
    denom = m_eff * float(w.sum())
    return float((w * resid).sum() / denom) if denom > 0 else 0.0


# --- public entry points ------------------------------------------------------------------------


def _check_weights(weights: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.size != n:
        raise InvalidParameterError(f"weights must have one entry per record ({n}), got {w.size}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise InvalidParameterError("weights (participation probabilities) must be finite and >= 0")
    return w


def _finish(
    x: np.ndarray,
    z: np.ndarray,
    mean: np.ndarray,
    scale: np.ndarray,
    k: int,
    run: tuple[np.ndarray, list[int], list[float], int],
    w: np.ndarray | None,
) -> MdavResult:
    labels, refs, radii, ties = run
    return MdavResult(
        labels=labels,
        k=k,
        references=np.asarray(refs, dtype=np.int64),
        radii=np.asarray(radii, dtype=np.float64),
        boundary_ties=ties,
        mean=mean,
        scale=scale,
        centroids=weighted_centroids(x, labels, w),
        distortion=distortion(z, labels, standardized=True),
        weighted_distortion=distortion(
            z, labels, w if w is not None else np.ones(z.shape[0]), standardized=True
        ),
        sizes=np.bincount(labels),
    )


def _prepare(
    x: object, k: object, weights: Sequence[float] | np.ndarray | None, standardize_: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]:
    xm = _as_matrix(x)
    kk = require_int_at_least("k", k, 1)
    if xm.shape[0] < kk:
        raise InvalidParameterError(
            f"cannot form cells of at least k = {kk} records from {xm.shape[0]} record(s)"
        )
    w = _check_weights(weights, xm.shape[0])
    if standardize_:
        z, mean, scale = standardize(xm)
    else:
        z, mean, scale = xm.copy(), np.zeros(xm.shape[1]), np.ones(xm.shape[1])
    return xm, z, mean, scale, kk, w


def mdav(
    x: object,
    k: int,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    standardize: bool = True,
) -> MdavResult:
    """MDAV with minimum cell size ``k`` (use ``n_min`` for p-probabilistic k-anonymity).

    Args:
        x: ``(n, m)`` numeric matrix (or a 1-d array for ``m = 1``).
        k: minimum cell size; every cell gets between ``k`` and ``2k - 1`` records.
        weights: optional participation probabilities ``pi_j``: cell centroids become
            ``sum pi x / sum pi`` and ``weighted_distortion`` uses them (§VI.B). They do not
            change the partition.
        standardize: columnwise zero mean / unit variance first (the paper's preprocessing).

    >>> import numpy as np
    >>> res = mdav(np.random.default_rng(0).normal(size=(100, 2)), 5)
    >>> int(res.sizes.min()) >= 5, res.n_cells
    (True, 20)
    """
    xm, z, mean, scale, kk, w = _prepare(x, k, weights, standardize)
    return _finish(xm, z, mean, scale, kk, _run(z, kk), w)


def mdav_reference(
    x: object,
    k: int,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    standardize: bool = True,
) -> MdavResult:
    """Brute-force MDAV (full distance pass per step): the baseline :func:`mdav` must match."""
    xm, z, mean, scale, kk, w = _prepare(x, k, weights, standardize)
    return _finish(xm, z, mean, scale, kk, _run_reference(z, kk), w)
