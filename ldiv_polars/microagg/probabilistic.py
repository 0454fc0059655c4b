"""p-probabilistic k-anonymous MDAV (§V-VI of Rebollo-Monedero et al.).

* Constant participation ``pi``: MDAV with the minimum cell size ``n_min`` of Algorithm A
  (the paper's reduction, Fig. 5).
* One probability per respondent: cells of **variable size**. MDAV picks its reference records
  as usual (farthest from the centroid of the remaining records, then farthest from that one);
  each cell takes the reference's nearest remaining records in ascending distance (ties by
  index) and **Algorithm A runs along that order** — the paper's suggestion of sorting records
  by their distance to a reference — stopping at the first ``n >= k`` with
  ``P{0 < K_n < k} <= p_bar``. A cell is accepted only if the records left after it could
  still form a valid last cell (``>= k`` records and cell failure ``<= p_bar``: a Chernoff
  bound first, the exact Poisson-binomial when the bound is inconclusive); otherwise all
  remaining records form the last cell. With every ``pi_j = 1`` this is exactly MDAV(k).
  Centroids are ``pi``-weighted (§VI.B).

The paper leaves the ordering for unequal ``pi_j`` open; this rule is ours and is labelled so in
the documentation.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=(400, 2))
>>> res = p_probabilistic_mdav(x, 5, rng.uniform(0.5, 1.0, 400), 1e-4)
>>> bool((res.cell_failure <= 1e-4).all()), int(res.mdav.sizes.min()) >= 5
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.microagg.mdav import (
    _REST,
    MdavResult,
    _finish,
    _prepare,
    _Remaining,
    mdav,
    sqdist,
)
from ldiv_polars.microagg.participation import (
    _check_pi,
    _run_recursion,
    _step,
    effective_anonymity,
)

__all__ = ["ProbabilisticMdav", "cell_failures", "p_probabilistic_mdav"]


@dataclass(frozen=True)
class ProbabilisticMdav:
    """Result of :func:`p_probabilistic_mdav`.

    Attributes:
        mdav: the partition (labels, centroids — ``pi``-weighted —, distortion ...).
        cell_failure: exact ``q_bar = P{0 < K < k}`` of every cell (Poisson-binomial).
        n_min: Algorithm A's cell size for a constant ``pi``; ``None`` for per-record ``pi``.
        satisfied: every cell has ``q_bar <= p_bar``.
    """

    mdav: MdavResult
    cell_failure: np.ndarray
    n_min: int | None
    satisfied: bool


def cell_failures(labels: np.ndarray, pis: float | np.ndarray, k: int) -> np.ndarray:
    """Exact ``P{0 < K_c < k}`` of every cell ``c`` (``K_c`` = active records of the cell).

    The Poisson-binomial recursion runs over member *positions* (at most the largest cell
    size), vectorized over all cells at once.

    >>> cell_failures(np.array([0, 0, 1, 1, 1]), 0.5, 2).tolist()   # n pi_bar^(n-1) pi
    [0.5, 0.375]
    """
    labels = np.asarray(labels, dtype=np.int64)
    k = require_int_at_least("k", k, 1)
    n_cells = int(labels.max()) + 1 if labels.size else 0
    pi_arr = np.broadcast_to(np.asarray(pis, dtype=np.float64), labels.shape)
    order = np.argsort(labels, kind="stable")
    lab = labels[order]
    sizes = np.bincount(labels, minlength=n_cells)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    pos = np.arange(labels.size) - starts[lab]
    p = np.zeros((n_cells, k))
    p[:, 0] = 1.0
    for j in range(int(sizes.max()) if n_cells else 0):  # loop over positions, not records
        at = pos == j
        cells = lab[at]
        pij = pi_arr[order[at]][:, None]
        cur = p[cells]
        nxt = (1.0 - pij) * cur
        nxt[:, 1:] += pij * cur[:, :-1]
        p[cells] = nxt
    return p[:, 1:].sum(axis=1)


def _set_failure_at_most(pis: np.ndarray, k: int, p_bar: float) -> bool:
    """Whether one cell made of all records ``pis`` has ``P{0 < K < k} <= p_bar``."""
    if pis.size < k:
        return False
    p = np.zeros(k)
    p[0] = 1.0
    for v in pis:  # reached only when the Chernoff bound is inconclusive (small remainders)
        p = _step(p, float(v))
    q = float(p[1:].sum())
    return q <= p_bar


def _run_variable(
    z: np.ndarray, k: int, pis: np.ndarray, p_bar: float
) -> tuple[np.ndarray, list[int], list[float], int]:
    """MDAV with variable cells on standardized rows ``z``: each cell grows around its
    reference record until ``P{0 < K < k} <= p_bar`` under the records' participation ``pis``.
    Returns the labels, the reference record of each cell (``_REST`` for the remainder), the
    cells' radii and how many cells had a distance tie at their border."""
    cells = _VariableCells(z, k, pis, p_bar)
    rem = cells.rem
    while rem.n_alive > 0:
        r = rem.farthest(rem.centroid())
        r_vec = rem.row(r)
        s_id = int(rem.ids[rem.farthest(r_vec)])
        if not cells.try_cell(r):
            break
        s = int(np.searchsorted(rem.ids, s_id))
        if not (s < rem.ids.size and rem.ids[s] == s_id and rem.alive[s]):
            s = rem.farthest(r_vec)
        if not cells.try_cell(s):
            break
    if rem.n_alive > 0:
        cells.labels[rem.remove(np.flatnonzero(rem.alive))] = len(cells.refs)
        cells.refs.append(_REST)
        cells.radii.append(np.inf)
    return cells.labels, cells.refs, cells.radii, cells.ties


class _VariableCells:
    """The state of one variable-cell MDAV run: the remaining records, the labels given so
    far, each cell's reference record and radius, and the participation left."""

    def __init__(self, z: np.ndarray, k: int, pis: np.ndarray, p_bar: float) -> None:
        self.k, self.pis, self.p_bar = k, pis, p_bar
        self.labels = np.full(z.shape[0], -1, dtype=np.int64)
        self.refs: list[int] = []
        self.radii: list[float] = []
        self.ties = 0
        self.rem = _Remaining(np.ascontiguousarray(z))
        self.pi_left = float(pis.sum())
        self.guess = max(k, effective_anonymity(k, float(np.clip(pis.mean(), 1e-6, 1.0)),
                                                p_bar).n_min)

    def propose(self, pos: int) -> tuple[np.ndarray, float, bool]:
        """The smallest cell of nearest records around ``pos`` that meets ``p_bar`` (or all
        remaining records), its radius, and whether a record outside ties the radius."""
        rem, k, pis, p_bar = self.rem, self.k, self.pis, self.p_bar
        count = min(self.guess, rem.n_alive)
        while True:
            chosen, _, _ = rem.nearest(pos, count)  # sorted by (distance, index), pos first
            run = _run_recursion(k, pis[rem.ids[chosen]], p_bar, chosen.size, literal=False)
            if run.satisfied or count >= rem.n_alive:
                break
            count = min(2 * count, rem.n_alive)
        cell = chosen[: run.n]
        d = sqdist(rem.rows(chosen), rem.row(pos))
        d[0] = 0.0
        radius = float(d[: run.n].max())
        tie = bool((d[run.n :] == radius).any()) or (chosen.size < rem.n_alive and d[-1] == radius)
        self.guess = max(self.guess, run.n)
        return cell, radius, tie

    def try_cell(self, pos: int) -> bool:
        """Form the cell around ``pos`` if the records left after it can still form a valid
        last cell; whether it was formed."""
        rem, pis = self.rem, self.pis
        cell, radius, tie = self.propose(pos)
        ids = rem.ids[cell]
        if cell.size >= rem.n_alive:
            return False
        mu_left = self.pi_left - float(pis[ids].sum())

        def left_pis() -> np.ndarray:
            keep = rem.alive.copy()
            keep[cell] = False
            return pis[rem.ids[keep]]

        if not _remainder_ok(mu_left, rem.n_alive - cell.size, self.k, self.p_bar, left_pis):
            return False
        self.labels[rem.remove(cell)] = len(self.refs)
        self.refs.append(int(ids[0]))
        self.radii.append(radius)
        self.ties += int(tie)
        self.pi_left -= float(pis[ids].sum())
        return True


def _remainder_ok(
    mu: float, size: int, k: int, p_bar: float, pis: Callable[[], np.ndarray]
) -> bool:
    """Whether ``size`` records with participation sum ``mu`` can form a valid last cell."""
    if size < k:
        return False
    if mu > k - 1 and math.exp(-((mu - (k - 1)) ** 2) / (2.0 * mu)) <= p_bar:
        return True  # multiplicative Chernoff: q_bar <= P{K <= k-1} <= bound
    return _set_failure_at_most(pis(), k, p_bar)


def p_probabilistic_mdav(
    x: object,
    k: int,
    pi: float | Sequence[float] | np.ndarray,
    p_bar: float,
    *,
    standardize: bool = True,
) -> ProbabilisticMdav:
    """MDAV whose cells are k-anonymous among participants with probability ``>= 1 - p_bar``.

    ``pi`` is a constant (cells of ``n_min``, Algorithm A) or one participation probability
    per record (variable-size cells, see the module docstring; centroids ``pi``-weighted).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` unless ``pi`` has one entry per
    record.
    """
    k = require_int_at_least("k", k, 1)
    p_bar = require_real("p_bar", p_bar, low=0.0, high=1.0, low_open=True)
    pis = _check_pi(pi)
    if not isinstance(pis, np.ndarray):
        n_min = effective_anonymity(k, pis, p_bar).n_min
        res = mdav(x, n_min, standardize=standardize)
        q = cell_failures(res.labels, pis, k)
        return ProbabilisticMdav(res, q, n_min, bool((q <= p_bar).all()))
    xm, z, mean, scale, kk, w = _prepare(x, k, pis, standardize)
    if pis.size != xm.shape[0]:
        raise InvalidParameterError(f"pi has {pis.size} entries for {xm.shape[0]} records")
    res = _finish(xm, z, mean, scale, kk, _run_variable(z, kk, pis, p_bar), w)
    q = cell_failures(res.labels, pis, k)
    return ProbabilisticMdav(res, q, None, bool((q <= p_bar).all()))
