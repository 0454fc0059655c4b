"""The anytime search's lower bound for separable metrics: an implicit hitting set of failures.

A metric is *separable* when its suppression-free value is a sum over the QIs of a cost of each
QI's level, ``b(x) = sum_j c_j[x_j]`` (``height``, ``precision``, ``loss``, ``entropy``: their
:meth:`~ldiv_polars.search.metrics.MetricSuite.bound_from_levels`). With one binary
``y[j, l] = [x_j >= l]`` per QI and level ``l >= 1`` (``y[j, l] >= y[j, l + 1]``), ``b`` is
linear, and a recorded *down-set failure* ``f`` (every node at or below it fails: see
:mod:`~ldiv_polars.search.anytime`) is the cut ``sum_j y[j, f_j + 1] >= 1`` — some QI above
``f``. A checked node ``x`` that may not be re-proposed (a pass, already the incumbent or worse;
a failure whose down-set may pass) is the no-good ``x' != x``. The least ``b`` under these
constraints (a MILP, solved by HiGHS through :func:`scipy.optimize.milp`; its *dual* bound is
used, valid whatever the solver's tolerance) is at most the optimum's value: the optimum passes,
so it satisfies every cut, and ``b`` never exceeds the value with suppression (suppressing a row
never lowers its cost). The decomposition bound (:mod:`~ldiv_polars.search.anytime_groups`)
adds one constraint per group of QIs, with a bounded continuous slack per QI for the cost of
suppressed cells (:meth:`CutRelaxation.add_group`). :class:`CutRelaxation` holds that program;
the loop that feeds it
(check the MILP's node, *lift* a failure to a maximal one, cut, solve again) is in
:mod:`~ldiv_polars.search.anytime`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Levels = tuple[int, ...]


class CutRelaxation:
    """The least separable cost ``sum_j cost[j][x_j]`` over the nodes above no recorded failure
    and not excluded. ``cost[j]`` is QI ``j``'s cost per level (any reals: the program does not
    need them monotone).

    >>> r = CutRelaxation([[0.0, 1.0, 3.0], [0.0, 2.0]])
    >>> r.solve()[1], r.add_failure((1, 0)), r.solve()
    ((0, 0), True, (2.0, (0, 1)))
    >>> r.add_failure((2, 0)), r.solve()
    (True, (2.0, (0, 1)))
    >>> r.add_failure((2, 1)), r.solve()
    (True, (inf, None))
    """

    rel_gap = 1e-9
    """The solver's relative MIP gap: it stops once its node is within this fraction of its
    dual bound (the bound reported is the dual bound either way)."""

    def __init__(self, cost: Sequence[Sequence[float]]) -> None:
        self.cost = [np.asarray(c, dtype=np.float64) for c in cost]
        self.heights = [len(c) for c in self.cost]
        self.offset = [0]  # column of y[j, 1] is offset[j]
        for h in self.heights:
            self.offset.append(self.offset[-1] + h - 1)
        self.n = self.offset[-1]
        self.base = float(sum(c[0] for c in self.cost))
        self.c = np.concatenate([np.diff(c) for c in self.cost]) if self.n else np.zeros(0)
        self.rows: list[tuple[list[int], list[float], float]] = []
        """Constraints ``sum coef * y >= lower`` (sparse: columns, coefficients, lower)."""
        self._fails = np.zeros((16, len(self.heights)), dtype=np.int64)
        self._n_fails = 0
        self.infeasible = False
        self.slack_max: np.ndarray | None = None
        """Per QI, the most its suppression cost can add (set by :meth:`add_group`): the
        continuous ``e[j]`` in ``[0, slack_max[j]]``, after the binaries, in the objective."""

    @property
    def failures(self) -> np.ndarray:
        """The recorded failures none of which is below another, ``(count, q)``."""
        return self._fails[:self._n_fails]

    def value(self, x: Sequence[int]) -> float:
        """The separable cost of node ``x``."""
        return float(sum(c[v] for c, v in zip(self.cost, x)))

    def _col(self, j: int, level: int) -> int:
        return self.offset[j] + level - 1

    def add_failure(self, f: Sequence[int]) -> bool:
        """Cut off ``f`` and every node below it; False when a recorded failure already did
        (a failure at or above ``f``). Failures below ``f`` are dropped (implied)."""
        fa = np.asarray(f, dtype=np.int64)
        known = self.failures
        if (known >= fa).all(axis=1).any():
            return False
        keep = known[~(known <= fa).all(axis=1)]  # (one array operation per cut: thousands)
        if keep.shape[0] + 1 > self._fails.shape[0]:
            self._fails = np.zeros((2 * self._fails.shape[0], fa.shape[0]), dtype=np.int64)
        self._fails[:keep.shape[0]] = keep
        self._fails[keep.shape[0]] = fa
        self._n_fails = keep.shape[0] + 1
        cols = [self._col(j, int(v) + 1) for j, v in enumerate(fa) if v + 1 < self.heights[j]]
        if not cols:
            self.infeasible = True  # the top fails: no node passes
        self.rows.append((cols, [1.0] * len(cols), 1.0))
        return True

    def exclude(self, x: Sequence[int]) -> None:
        """Cut off the single node ``x`` (a no-good: some QI above or below its level)."""
        cols, coef, lower = [], [], 1.0
        for j, v in enumerate(x):
            if v + 1 < self.heights[j]:
                cols.append(self._col(j, v + 1))
                coef.append(1.0)
            if v >= 1:  # below: y[j, v] = 0, i.e. the term (1 - y[j, v])
                cols.append(self._col(j, v))
                coef.append(-1.0)
                lower -= 1.0
        if not cols:
            self.infeasible = True
        self.rows.append((cols, coef, lower))

    def add_group(self, cols: Sequence[int], lower: float, slack_max: Sequence[float]) -> None:
        """Require ``sum_{j in cols} (cost[j][x_j] - cost[j][0] + e[j]) >= lower``, with one
        continuous ``e[j]`` per QI, in ``[0, slack_max[j]]``, added to the objective (the
        decomposition bound, :mod:`~ldiv_polars.search.anytime_groups`: ``e[j]`` is what
        suppression adds to QI ``j``'s cost; ``slack_max`` is the same at every call).

        >>> r = CutRelaxation([[0.0, 1.0, 4.0], [0.0, 2.0]])
        >>> r.add_group([0, 1], 2.5, [0.0, 0.0]), r.solve()
        (None, (3.0, (1, 1)))
        >>> r = CutRelaxation([[0.0, 1.0, 4.0], [0.0, 2.0]])
        >>> r.add_group([0, 1], 2.5, [0.5, 0.5]), r.solve()
        (None, (2.5, (0, 1)))
        """
        self.slack_max = np.asarray(slack_max, dtype=np.float64)
        cols_y, coef = [], []
        for j in cols:
            for lv in range(1, self.heights[j]):
                cols_y.append(self._col(j, lv))
                coef.append(float(self.cost[j][lv] - self.cost[j][lv - 1]))
            cols_y.append(self.n + j)
            coef.append(1.0)
        self.rows.append((cols_y, coef, float(lower)))

    def _matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """The constraint matrix (cuts, then the level chains ``y[j, l] - y[j, l + 1] >= 0``)
        and the lower bounds of its rows."""
        chain = [(j, l) for j, h in enumerate(self.heights) for l in range(1, h - 1)]
        width = self.n + (len(self.heights) if self.slack_max is not None else 0)
        a = np.zeros((len(self.rows) + len(chain), width))
        lower = np.zeros(a.shape[0])
        for r, (cols, coef, lo) in enumerate(self.rows):
            np.add.at(a[r], cols, coef)
            lower[r] = lo
        for r, (j, l) in enumerate(chain, start=len(self.rows)):
            a[r, self._col(j, l)], a[r, self._col(j, l + 1)] = 1.0, -1.0
        return a, lower

    def solve(self, seconds: float | None = None) -> tuple[float, Levels | None]:
        """``(bound, node)``: a lower bound of the least cost over the nodes the constraints
        allow (the solver's dual bound: valid when it stops early), and the best node it found
        (None with ``bound`` inf when no node is allowed; None with a finite bound when the time
        ran out before a node was found)."""
        if self.infeasible:
            return math.inf, None
        if not self.rows:  # each QI at its cheapest level
            node = tuple(int(np.argmin(c)) for c in self.cost)
            return self.value(node), node
        from scipy.optimize import Bounds, LinearConstraint, milp

        a, lower = self._matrix()
        opts: dict[str, float | bool] = {"mip_rel_gap": self.rel_gap, "disp": False}
        if seconds is not None:
            opts["time_limit"] = max(seconds, 0.05)
        c, integrality, upper = self.c, np.ones(self.n), np.ones(self.n)
        if self.slack_max is not None:
            q = len(self.heights)
            c = np.concatenate([c, np.ones(q)])
            integrality = np.concatenate([integrality, np.zeros(q)])
            upper = np.concatenate([upper, self.slack_max])
        res = milp(c, integrality=integrality, bounds=Bounds(0, upper),
                   constraints=LinearConstraint(a, lower, np.inf), options=opts)
        if res.status == 4:  # HiGHS's presolve fails on some tight programs: solve without it
            res = milp(c, integrality=integrality, bounds=Bounds(0, upper),
                       constraints=LinearConstraint(a, lower, np.inf),
                       options={**opts, "presolve": False})
        if res.status == 2:  # infeasible
            self.infeasible = True
            return math.inf, None
        dual = getattr(res, "mip_dual_bound", None)
        trivial = float(np.minimum(self.c, 0.0).sum())  # every y at its cheapest
        bound = self.base + (float(dual) if dual is not None and np.isfinite(dual) else trivial)
        if res.x is None:
            return bound, None
        y = np.round(res.x[:self.n]).astype(np.int64)
        node = tuple(int(y[self.offset[j]:self.offset[j + 1]].sum())
                     for j in range(len(self.heights)))
        return min(bound, self.value(node) + float(res.x[self.n:].sum())), node
