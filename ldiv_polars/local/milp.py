"""Optimal cell suppression as a mixed-integer program (``scipy.optimize.milp``, HiGHS).

Variables: ``x[k, m] = 1`` when key ``k`` is released with suppression mask ``m`` (one mask per
key); ``y[g] = 1`` when the released pattern ``g`` is used (holds records); for distinct
l-diversity ``z[g, s]`` in [0, 1], at most 1 when value ``s`` occurs in ``g``'s class. The
objective is the weighted number of suppressed cells, ``sum n_k w(m) x[k, m]``.

Own-value semantics (exact)::

    sum_m x[k, m] = 1                                   every key released once
    x[k, m] <= y[g(k, m)]                               a used pattern ...
    sum_{(k,m) -> g} n_k x[k, m] >= K y[g]              ... holds >= K records
    z[g, s] <= sum_{(k,m) -> g, s in k} x[k, m]         value s present in g
    sum_s z[g, s] >= l y[g]                             ... >= l distinct values

Candidates (``x`` columns): every mask of every *unsafe* key (one whose records alone fail a
model) and, for safe keys, mask 0 and the masks leading to a pattern some unsafe key can reach
(a pattern reached by safe keys only is never needed: moving them back to mask 0 keeps every
class passing, since unions of passing classes pass for these models, and costs less).
Patterns whose every candidate together cannot pass are dropped.

Wildcard semantics: pattern ``g``'s class is every record compatible with it. A key agreeing
with ``g`` on ``g``'s kept positions counts whatever its mask (a constant); any other key
``k'`` counts through its candidates ``x[k', m']`` with ``m'`` covering the positions where it
disagrees with ``g``. The constraints are those above with the class sums replaced by these;
candidates are every mask of every unsafe key and mask 0 of safe keys (sdcMicro suppresses
cells of unsafe records only): the optimum is exact **over releases that leave safe keys
intact** (a restriction of the search space, stated in the result; the greedy searches the
same space, and every release is re-verified).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ldiv_polars.core.limited import TIMED_OUT, call_within
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.local.classes import (
    STAR,
    Semantics,
    class_verdicts,
    compatible_sum,
    group_sum,
    mask_array,
    masks_of,
    unique_rows,
)
from ldiv_polars.local.greedy import mask_costs
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.models.base import Model

MAX_CANDIDATES = 3_000_000
"""Programs with more candidate columns (key, mask) are not built (memory: ~1 KB each)."""

MIN_SOLVE_S = 1.0
"""A solver phase (LP, a dive step, the final MILP) starts only with at least this many
seconds of the time limit left: a call given less spends its seconds setting up (building the
program, starting its process) and is killed before it answers."""

HIGHS_SHARE = 0.9
"""The share of a solver call's seconds given to HiGHS as its own ``time_limit``; the call
itself is killed at its seconds (:func:`~ldiv_polars.core.limited.call_within`): HiGHS checks
its clock too rarely to keep a limit on a loaded machine."""

NEAR_REDUCED_COSTS = (0.5, 1.0, 2.0)
"""The *near* MILPs, run one after the other before the final MILP until one finds a cheaper
release: each keeps the LP's support, the best release's candidates and the columns whose LP
reduced cost is at most its value, presolved (a primal search: on Adult, 5 QIs, k = 5, at 0.5
it found the optimum with 2.4 s of CPU where the whole program's search took over 100 s;
BENCHMARKS.md)."""

DIVE_REDUCED_COST = 2.0
"""The restricted MILP that looks for a good release first keeps the candidates whose LP
reduced cost is at most this (plus the LP's support and the incumbent's candidates)."""


@dataclass(frozen=True)
class ExactOutcome:
    """The MILP's answer: ``masks`` (None when no release was found in time), its weighted
    ``objective``, HiGHS's dual ``bound`` and relative ``gap`` (0 when proven optimal)."""

    masks: np.ndarray | None
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float
    variables: int
    constraints: int
    space: str
    steps: dict[str, object] = field(default_factory=dict)
    """The LP bound, the dive's release cost, the columns fixed by reduced cost."""

    @property
    def optimal(self) -> bool:
        """Whether the solver proved the solution optimal."""
        return self.status == "optimal"


def exact_supported(models: Sequence[Model], semantics: Semantics = "value") -> None:
    """Raise unless every model is formulated: k-anonymity, and under own-value semantics
    distinct l-diversity."""
    bad = [m.describe() for m in models
           if (b := m.count_bounds) is None or (semantics != "value" and b[1] > 0)]
    if bad:
        raise InvalidParameterError(
            f"method='exact' formulates k-anonymity (and, with semantics='value', distinct "
            f"l-diversity) only, not "
            f"{', '.join(bad)}: use method='greedy'")


def exact_masks(table: KeyTable, models: Sequence[Model], weights: np.ndarray,
                semantics: Semantics, time_limit: float, *,
                incumbent: np.ndarray | None = None,
                max_candidates: int = MAX_CANDIDATES) -> ExactOutcome:
    """Solve the program of the module docstring within ``time_limit`` seconds.

    ``incumbent`` (masks of a valid release, e.g. the greedy's) seeds the search. Steps: the LP
    relaxation (dual simplex) gives a lower bound and reduced costs; a *dive* (the keys the LP
    assigns integrally fixed, the rest solved as a small MILP) improves the incumbent; every
    candidate whose reduced cost exceeds the incumbent's gap to the LP bound is fixed to its LP
    value (classical reduced-cost fixing); the MILP of what is left, with integral costs under
    the cutoff row ``c x <= best - 1/2``, is solved after the *near* MILPs
    (:data:`NEAR_REDUCED_COSTS`, a primal search: restricted programs that find a cheaper
    release sooner, so that the fixing removes more and the cutoff is lower). Optimal
    when the final MILP finishes, proves no better release exists (infeasible under the
    cutoff) or its dual bound reaches the best release; else the best release found, with the
    bound and gap. The time limit holds: every solver call gets the seconds left and runs in a
    child process killed at them (:mod:`~ldiv_polars.core.limited`; HiGHS's own limit is
    :data:`HIGHS_SHARE` of them), a phase starts only with :data:`MIN_SOLVE_S` left; a run
    stopped by the limit returns the best release so far (status ``"time_limit"``, with the
    bound and gap when the LP was solved). ``steps["found_by"]`` names the phase that found
    the returned release (``"incumbent"``, ``"dive"``, ``"near"``, ``"milp"``),
    ``steps["phase_s"]`` the wall seconds of each phase; e.g. with ``time_limit=0`` no phase
    runs and the incumbent is returned. More than ``max_candidates`` candidate columns:
    nothing is solved (status ``"too_large"``, the incumbent returned); a final MILP stopped
    by HiGHS itself: ``"solver_error"`` (its message in ``steps["solver_error"]``)."""
    exact_supported(models, semantics)
    t0 = time.perf_counter()
    unsafe = ~class_verdicts(table.histogram(), models, table.s_values, table.reference())
    var_key, var_mask = _candidates(table, unsafe, semantics)
    if var_key.shape[0] > max_candidates:
        cost = None if incumbent is None else float(
            table.n @ mask_costs(weights)[incumbent])
        return ExactOutcome(incumbent, "too_large", cost, None, None,
                            time.perf_counter() - t0, int(var_key.shape[0]), 0,
                            f"not solved: {var_key.shape[0]:,} candidates > {max_candidates:,}")
    bounds = [m.count_bounds or (0, 0) for m in models]  # every model has them (above)
    prog = _Program(table, var_key, var_mask, weights)
    prog.pattern_rows(models, semantics, max([b[0] for b in bounds], default=0),
                      max([b[1] for b in bounds], default=0))
    search = _Search(prog, t0, float(time_limit), bool(np.all(weights == np.round(weights))))
    if incumbent is not None:
        search.offer(incumbent.astype(np.int64), float(table.n @ prog.mask_cost[incumbent]),
                     "incumbent")
    lp = search.timed("lp", prog.relaxation, search.left()) if search.can_start() else None
    if lp is not None:
        search.lp_and_dive(lp, semantics)
    if not search.proven_by_lp(lp) and search.can_start():
        search.final(lp)
    return search.outcome(semantics)


class _Search:
    """The state of one exact solve: the best release, its cost, the bound, the steps."""

    def __init__(self, prog: _Program, t0: float, time_limit: float, integral: bool) -> None:
        self.prog, self.t0, self.time_limit, self.integral = prog, t0, time_limit, integral
        self.best: np.ndarray | None = None
        self.best_cost = np.inf
        self.bound = -np.inf
        self.status = "time_limit"
        self.steps: dict[str, object] = {}

    def left(self) -> float:
        """Seconds left of the time limit."""
        return max(self.time_limit - (time.perf_counter() - self.t0), 0.0)

    def can_start(self) -> bool:
        """Whether enough of the time limit is left to start a solver phase."""
        return self.left() >= MIN_SOLVE_S

    def timed(self, phase: str, solve: Any, *args: Any, **kw: Any) -> Any:
        """``solve(*args, **kw)``, its wall seconds added to ``steps["phase_s"][phase]``."""
        t = time.perf_counter()
        out = solve(*args, **kw)
        times = self.steps.setdefault("phase_s", {})
        times[phase] = round(times.get(phase, 0.0) + time.perf_counter() - t, 3)
        return out

    def offer(self, masks: np.ndarray | None, cost: float, source: str) -> None:
        """Keep ``masks`` (found by phase ``source``) when cheaper than the best so far."""
        if masks is not None and cost < self.best_cost:
            self.best, self.best_cost = masks, cost
            self.steps["found_by"] = source

    def lp_and_dive(self, lp: Any, semantics: Semantics) -> None:
        """Record the LP bound, then the dive: restricted MILPs for a good release (the keys
        the LP settles fixed; else the columns of small reduced cost, with the best's), each
        step started only with time left and given :meth:`_dive_share` of it."""
        prog = self.prog
        self.bound = lp.fun
        self.steps["lp_bound"] = float(lp.fun)
        self.steps["lp_s"] = round(time.perf_counter() - self.t0, 3)
        dive = None
        if semantics == "value" and self.can_start():
            dive = self.timed("dive", prog.solve, prog.upper(lp_fixed=lp.x),
                              self._dive_share(), presolve=True)
        if (dive is None or dive.masks is None) and self.can_start():
            dive = self.timed("dive", prog.solve,
                              prog.upper(near=(lp, DIVE_REDUCED_COST, self.best)),
                              self._dive_share(), presolve=True)
        if dive is not None:
            self.steps["dive"] = dive.cost if np.isfinite(dive.cost) else None
            self.offer(dive.masks, dive.cost, "dive")

    def _dive_share(self) -> float:
        """The seconds of a dive step: half of those left, at least a quarter of the limit
        (never more than are left)."""
        return min(self.left(), max(self.left() / 2, self.time_limit / 4, MIN_SOLVE_S))

    def _slack(self) -> float:
        """The reduced cost above which a column cannot be in a release cheaper than the
        best (integral costs: cheaper by at least 1)."""
        return self.best_cost - self.bound - (1 - 1e-6 if self.integral else 0.0)

    def proven_by_lp(self, lp: Any) -> bool:
        """Whether the LP bound alone proves the best release optimal (integral costs: no
        release costs less than the bound rounded up)."""
        if lp is not None and np.isfinite(self.best_cost) and \
                _proven(self.best_cost, self.bound, self.integral):
            self.status = "optimal"
        return self.status == "optimal"

    def final(self, lp: Any) -> None:
        """The *near* MILPs (a primal search, :data:`NEAR_REDUCED_COSTS`) one after the other
        until one finds a cheaper release (at most half the time left), then the MILP of the
        columns that reduced-cost fixing leaves, under the cutoff, within the time left."""
        if lp is not None and np.isfinite(self.best_cost):
            self._near_ladder(lp)
        prog = self.prog
        known = lp is not None and np.isfinite(self.best_cost)
        ub = prog.upper(reduced=(lp, self._slack())) if known else prog.upper()
        self.steps["columns_fixed"] = int((ub == 0).sum())
        if not self.can_start():
            return
        seconds = self.left()
        self._proof(self.timed("milp", prog.solve, ub, seconds,
                               cutoff=self._cutoff() if known else None), known)

    def _near_ladder(self, lp: Any) -> None:
        """The near MILPs one after the other until one improves the best release or half of
        the seconds left are spent; each answer recorded in ``steps["near"]`` (its reduced
        cost, the release's cost or None, the seconds since the ladder began)."""
        t = time.perf_counter()
        end = t + self.left() / 2
        for tau in NEAR_REDUCED_COSTS:
            seconds = end - time.perf_counter()
            if seconds < MIN_SOLVE_S:
                return
            done = self.timed("near", self.prog.solve, self.prog.upper(near=(lp, tau, self.best)),
                              seconds, presolve=True, cutoff=self._cutoff())
            self.steps.setdefault("near", []).append(
                {"reduced_cost": tau, "cost": done.cost if np.isfinite(done.cost) else None,
                 "s": round(time.perf_counter() - t, 3)})
            improved = done.cost < self.best_cost
            self.offer(done.masks, done.cost, "near")
            if improved:
                return

    def _cutoff(self) -> float | None:
        """The right-hand side of the row ``c x <= cutoff`` admitting exactly the releases
        cheaper than the best (integral costs: by at least 1); None for fractional costs
        (no row: a tolerance would decide)."""
        return self.best_cost - 0.5 if self.integral and np.isfinite(self.best_cost) else None

    def _proof(self, done: _Solved, known: bool) -> None:
        """Take the final MILP's answer: its release, and optimality when it finished or
        proved (with the columns fixed by reduced cost and the cutoff) that no release beats
        the best; else the bound it reached."""
        self.offer(done.masks, done.cost, "milp")
        if done.optimal or (done.infeasible and known):
            self.status = "optimal"
        elif done.bound is not None and np.isfinite(self.best_cost):
            # no release below min(bound, best) in the restricted program nor outside it
            self.bound = max(self.bound, min(done.bound, self.best_cost))
            if _proven(self.best_cost, self.bound, self.integral):
                self.status = "optimal"
        if done.error is not None and self.status != "optimal":
            self.status = "solver_error"  # stopped by HiGHS, not by the time limit
            self.steps["solver_error"] = done.error

    def outcome(self, semantics: Semantics) -> ExactOutcome:
        """The :class:`ExactOutcome` of the search."""
        bound = self.best_cost if self.status == "optimal" else self.bound
        gap = None if self.best is None or not np.isfinite(bound) else (
            0.0 if self.status == "optimal"
            else (self.best_cost - bound) / max(abs(self.best_cost), 1e-9))
        return ExactOutcome(self.best, self.status,
                            None if self.best is None else self.best_cost,
                            None if not np.isfinite(bound) else float(bound), gap,
                            time.perf_counter() - self.t0, self.prog.n_cols, self.prog.n_rows,
                            "all releases" if semantics == "value"
                            else "releases leaving safe keys intact", self.steps)


def _candidates(table: KeyTable, unsafe: np.ndarray, semantics: Semantics
                ) -> tuple[np.ndarray, np.ndarray]:
    """(key, mask) of every candidate ``x`` column."""
    q = len(table.qi)
    all_m = np.arange(1 << q, dtype=np.int64)
    u = np.flatnonzero(unsafe)
    s = np.flatnonzero(~unsafe)
    uk, um = np.repeat(u, all_m.size), np.tile(all_m, u.size)
    keys, masks = [uk, s], [um, np.zeros(s.size, dtype=np.int64)]
    if semantics == "value" and s.size and u.size and q:
        sk, sm = np.repeat(s, all_m.size - 1), np.tile(all_m[1:], s.size)
        reach = mask_array(table.codes[uk], um)
        mine = mask_array(table.codes[sk], sm)
        _, inv = unique_rows(np.concatenate([reach, mine]))
        reachable = np.zeros(int(inv.max()) + 1, dtype=bool)
        reachable[inv[: reach.shape[0]]] = True
        keep = reachable[inv[reach.shape[0]:]]
        keys.append(sk[keep])
        masks.append(sm[keep])
    return np.concatenate(keys), np.concatenate(masks)


def _projections(pats: np.ndarray, bs: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every (pattern, mask ``b`` in ``bs``) pair: the projection of the pattern (mask
    ``a``) on ``S = ~(a | b)``. Returns the distinct rows ``(b, S, projection...)``, each
    pair's index into them, and each pair's pattern index."""
    q = pats.shape[1]
    full = (1 << q) - 1
    a_of = masks_of(pats)
    g_rep = np.repeat(np.arange(pats.shape[0]), bs.size)
    b_rep = np.tile(bs, pats.shape[0])
    s_rep = full & ~(a_of[g_rep] | b_rep)
    bits = ((s_rep[:, None] >> np.arange(q)) & 1).astype(bool)
    proj = np.where(bits, pats[g_rep], STAR)
    avals, a_inv = unique_rows(np.column_stack([b_rep, s_rep, proj]))
    return avals, a_inv, g_rep


class _Program:
    """The sparse program, built column block by column block."""

    def __init__(self, table: KeyTable, var_key: np.ndarray, var_mask: np.ndarray,
                 weights: np.ndarray) -> None:
        self.table = table
        self.var_key, self.var_mask = var_key, var_mask
        self.mask_cost = mask_costs(weights)
        self.c_x = table.n[var_key] * self.mask_cost[var_mask]
        self.blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (row, col, val)
        self.lb: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.n_rows = 0
        self.n_cols = var_key.shape[0]
        self.int_cols: list[int] = [self.n_cols]
        self.col_ub = np.ones(self.n_cols)
        self.c = self.c_x
        self._lc: LinearConstraint | None = None
        # every key released with exactly one mask
        self._rows(np.arange(var_key.shape[0]), var_key, np.ones(var_key.shape[0]),
                   table.keys, 1.0, 1.0, offset_col=0)

    def _rows(self, cols: np.ndarray, rows: np.ndarray, vals: np.ndarray, n: int,
              lb: float, ub: float, *, offset_col: int) -> None:
        self.blocks.append((rows + self.n_rows, cols + offset_col, vals))
        self.lb.append(np.full(n, lb))
        self.ub.append(np.full(n, ub))
        self.n_rows += n

    def _new_cols(self, n: int, upper: float = 1.0) -> int:
        start = self.n_cols
        self.n_cols += n
        self.c = np.concatenate([self.c, np.zeros(n)])
        self.col_ub = np.concatenate([self.col_ub, np.full(n, upper)])
        return start

    def pattern_rows(self, models: Sequence[Model], semantics: Semantics, k: int,
                     ell: int) -> None:
        """Pattern variables and the k / distinct-l rows of every pattern needing them."""
        self.models = list(models)
        pat, vp = unique_rows(mask_array(self.table.codes[self.var_key], self.var_mask))
        if semantics == "value":
            self._value_rows(pat, vp, k, ell)
        else:
            self._wildcard_rows(pat, vp, k)

    def _pattern_cols(self, need: np.ndarray, patterns: int) -> np.ndarray:
        """One binary ``y`` column per pattern in ``need``: the column of every pattern
        (-1 for the others)."""
        y0 = self._new_cols(need.size)
        self.int_cols.append(self.n_cols)
        ycol = np.full(patterns, -1, dtype=np.int64)
        ycol[need] = y0 + np.arange(need.size)
        return ycol

    def _link_rows(self, link: np.ndarray, ycols: np.ndarray) -> None:
        """``x[v] - y[g(v)] <= 0`` for the candidates ``link`` (their pattern columns
        ``ycols``)."""
        n = link.size
        r = np.arange(n)
        self._rows(np.concatenate([link, ycols]), np.concatenate([r, r]),
                   np.concatenate([np.ones(n), -np.ones(n)]), n, -np.inf, 0.0, offset_col=0)

    def _value_rows(self, pat: np.ndarray, vp: np.ndarray, k: int, ell: int) -> None:
        """Own-value rows: a pattern's class is the candidates mapping to it."""
        t = self.table
        key_hist = t.histogram()
        ref, sv = t.reference(), t.s_values
        cap = group_sum(vp, key_hist[self.var_key], pat.shape[0])
        dead = ~class_verdicts(cap, self.models, sv, ref)
        single = np.bincount(vp, minlength=pat.shape[0]) == 1
        own_ok = class_verdicts(key_hist[self.var_key], self.models, sv, ref)
        free = np.zeros(pat.shape[0], dtype=bool)
        free[vp[own_ok & single[vp]]] = True  # a safe key alone: no constraint
        const = np.zeros_like(cap)
        # candidates of dead patterns are fixed to 0 (upper bound)
        self.dead_cols = dead[vp]
        need = np.flatnonzero(~free & ~dead)
        ycol = self._pattern_cols(need, pat.shape[0])
        # links for candidates of unsafe keys only (records of a safe key make any class
        # they join pass: these models are union-closed)
        link = np.flatnonzero((ycol[vp] >= 0) & ~own_ok & ~self.dead_cols)
        self._link_rows(link, ycol[vp[link]])
        mem_col = np.arange(self.var_key.shape[0])
        on = (ycol[vp] >= 0) & ~self.dead_cols
        mem_col, mem_pat = mem_col[on], vp[on]
        if k:
            self._k_rows(pat.shape[0], need, ycol, mem_col, mem_pat, const.sum(axis=1), k)
        if ell:
            self._distinct_rows(pat, need, ycol, mem_col, mem_pat, const, ell)

    def _k_rows(self, patterns: int, need: np.ndarray, ycol: np.ndarray, mem_col: np.ndarray,
                mem_pat: np.ndarray, size_const: np.ndarray, k: int) -> None:
        """``sum min(n, K) x - K y >= 0`` per pattern in ``need`` (coefficients capped at
        ``K``: valid when ``y = 1``, a tighter LP)."""
        rowid = np.full(patterns, -1, dtype=np.int64)
        rowid[need] = np.arange(need.size)
        self._rows(np.concatenate([mem_col, ycol[need]]),
                   np.concatenate([rowid[mem_pat], rowid[need]]),
                   np.concatenate([np.minimum(self.table.n[self.var_key[mem_col]],
                                              np.maximum(k - size_const[mem_pat], 0)
                                              ).astype(float),
                                   -(k - size_const[need]).astype(float)]),
                   need.size, 0.0, np.inf, offset_col=0)

    def _wildcard_rows(self, pat: np.ndarray, vp: np.ndarray, k: int) -> None:
        """Wildcard k-anonymity rows. Pattern ``g`` (mask ``a``) counts, for every mask ``b``,
        the records of the unsafe keys released with mask ``b`` that equal ``g`` on the
        positions ``S = ~(a | b)``: an aggregate column ``A[b, S, g|S]`` defined once by
        ``A = sum n_k x[k, b]`` over those keys, shared by every pattern with the same
        projection. Safe keys (mask 0) count as a constant."""
        t = self.table
        key_hist = t.histogram()
        const = compatible_sum(pat, t.codes, key_hist)  # every key agreeing on kept positions
        free = class_verdicts(const, self.models, t.s_values, t.reference())
        self.dead_cols = np.zeros(self.var_key.shape[0], dtype=bool)
        need = np.flatnonzero(~free)
        ycol = self._pattern_cols(need, pat.shape[0])
        link = np.flatnonzero(ycol[vp] >= 0)
        self._link_rows(link, ycol[vp[link]])
        unsafe_keys = np.unique(self.var_key[self.var_mask != 0])
        safe = np.ones(t.keys, dtype=bool)
        safe[unsafe_keys] = False
        safe_const = compatible_sum(pat[need], t.codes[safe], key_hist[safe]).sum(axis=1)
        bs = np.unique(self.var_mask[np.isin(self.var_key, unsafe_keys)])
        avals, a_inv, g_rep = _projections(pat[need], bs)
        a0 = self._new_cols(avals.shape[0], upper=np.inf)
        # sum_b A[b, S, g|S] - (K - safe constant) y >= 0
        self._rows(np.concatenate([a0 + a_inv, ycol[need]]),
                   np.concatenate([g_rep, np.arange(need.size)]),
                   np.concatenate([np.ones(a_inv.size),
                                   -np.maximum(k - safe_const, 0).astype(float)]),
                   need.size, 0.0, np.inf, offset_col=0)
        self._aggregate_rows(avals, a0, safe)

    def _aggregate_rows(self, avals: np.ndarray, a0: int,
                        safe: np.ndarray) -> None:
        """``A[b, S, v] - sum n x = 0``: the sum over the unsafe keys released with mask
        ``b`` and equal to ``v`` on the positions ``S`` (``avals`` rows: ``b, S, v...``;
        the ``A`` columns from ``a0`` on)."""
        t = self.table
        q = len(t.qi)
        rows, cols, vals = [np.arange(avals.shape[0])], [a0 + np.arange(avals.shape[0])], \
            [np.ones(avals.shape[0])]
        for b, smask in np.unique(avals[:, :2], axis=0):
            ai = np.flatnonzero((avals[:, 0] == b) & (avals[:, 1] == smask))
            vi = np.flatnonzero((self.var_mask == b) & ~safe[self.var_key])
            sb = ((int(smask) >> np.arange(q)) & 1).astype(bool)
            kc = np.where(sb, t.codes[self.var_key[vi]], STAR)
            _, inv = unique_rows(np.concatenate([avals[ai, 2:], kc]))
            where = np.full(int(inv.max()) + 1, -1, dtype=np.int64)
            where[inv[: ai.size]] = ai
            hit = where[inv[ai.size:]]
            ok = hit >= 0
            rows.append(hit[ok])
            cols.append(vi[ok])
            vals.append(-t.n[self.var_key[vi[ok]]].astype(float))
        self._rows(np.concatenate(cols), np.concatenate(rows), np.concatenate(vals),
                   avals.shape[0], 0.0, 0.0, offset_col=0)

    def _distinct_rows(self, pat: np.ndarray, need: np.ndarray, ycol: np.ndarray,
                       mem_col: np.ndarray, mem_pat: np.ndarray, const: np.ndarray,
                       ell: int) -> None:
        t = self.table
        present = t.histogram()[self.var_key[mem_col]] > 0
        vcol, vs = np.nonzero(present)
        pg, ps = mem_pat[vcol], vs
        # one z per (pattern, value) that a candidate can bring and the constant part lacks
        pair = pg * t.n_sensitive + ps
        upair, inv = np.unique(pair, return_inverse=True)
        lacking = const[upair // t.n_sensitive, upair % t.n_sensitive] == 0
        z0 = self._new_cols(upair.size)
        # z - sum x <= 0 (for lacking pairs)
        keep = lacking[inv]
        rows_z = np.flatnonzero(lacking)
        rid = np.full(upair.size, -1, dtype=np.int64)
        rid[rows_z] = np.arange(rows_z.size)
        self._rows(np.concatenate([z0 + rows_z, mem_col[vcol[keep]]]),
                   np.concatenate([rid[rows_z], rid[inv[keep]]]),
                   np.concatenate([np.ones(rows_z.size), -np.ones(int(keep.sum()))]),
                   rows_z.size, -np.inf, 0.0, offset_col=0)
        # sum_s z + distinct(const) - l y >= 0
        rowid = np.full(pat.shape[0], -1, dtype=np.int64)
        rowid[need] = np.arange(need.size)
        zg = upair // t.n_sensitive
        lack_z = np.flatnonzero(lacking & (rowid[zg] >= 0))
        distinct_const = (const > 0).sum(axis=1)
        self._rows(np.concatenate([z0 + lack_z, ycol[need]]),
                   np.concatenate([rowid[zg[lack_z]], rowid[need]]),
                   np.concatenate([np.ones(lack_z.size),
                                   -(ell - distinct_const[need]).astype(float)]),
                   need.size, 0.0, np.inf, offset_col=0)

    def constraints(self) -> LinearConstraint:
        if self._lc is not None:
            return self._lc
        rows = np.concatenate([b[0] for b in self.blocks])
        cols = np.concatenate([b[1] for b in self.blocks])
        vals = np.concatenate([b[2] for b in self.blocks])
        a = sparse.csr_array((vals, (rows, cols)), shape=(self.n_rows, self.n_cols))
        self._lc = LinearConstraint(a, np.concatenate(self.lb), np.concatenate(self.ub))
        return self._lc

    def integrality(self) -> np.ndarray:
        out = np.zeros(self.n_cols)
        out[: self.int_cols[-1]] = 1  # x and y binary; z continuous
        return out

    def upper(self, *, lp_fixed: np.ndarray | None = None,
              reduced: tuple[Any, float] | None = None,
              near: tuple[Any, float, np.ndarray | None] | None = None) -> np.ndarray:
        """Column upper bounds: dead candidates at 0; with ``lp_fixed`` (an LP solution) the
        keys it assigns integrally keep only that candidate; with ``reduced`` (an LP result
        and a gap) the columns at 0 in the LP whose reduced cost exceeds the gap are fixed
        at 0; with ``near`` (an LP result, a reduced cost, masks) only the LP's support, the
        columns of small reduced cost and the masks' candidates are kept."""
        nx = self.var_key.shape[0]
        ub = self.col_ub.copy()
        ub[:nx][self.dead_cols] = 0
        if lp_fixed is not None:
            ub[:nx][self._settled(lp_fixed[:nx])] = 0
        if reduced is not None:
            lp, gap = reduced
            rc = np.asarray(lp.lower.marginals)
            ub[(lp.x < 1e-9) & (rc > gap + 1e-7)] = 0
        if near is not None:
            lp, tau, masks = near
            rc = np.asarray(lp.lower.marginals)
            keep = (lp.x > 1e-9) | (rc <= tau)
            keep[nx:] = True
            if masks is not None:
                keep[:nx] |= masks[self.var_key] == self.var_mask
            ub[~keep] = 0
        return ub

    def _settled(self, x: np.ndarray) -> np.ndarray:
        """The candidates to drop when fixing the keys the LP solution ``x`` settles: keys
        assigned integrally whose pattern's integrally assigned members alone pass."""
        t = self.table
        one = x > 1 - 1e-6
        pat, vp = unique_rows(mask_array(t.codes[self.var_key], self.var_mask))
        hist = group_sum(vp[one], t.histogram()[self.var_key[one]], pat.shape[0])
        complete = class_verdicts(hist, self.models, t.s_values, t.reference())
        settled = one & complete[vp]
        fixed_key = np.zeros(t.keys, dtype=bool)
        fixed_key[self.var_key[settled]] = True
        return fixed_key[self.var_key] & ~settled

    def relaxation(self, seconds: float) -> Any:
        """The LP relaxation (HiGHS dual simplex), or None if it did not solve in time."""
        lc = self.constraints()
        a = sparse.csr_array(lc.A)
        eq = lc.lb == lc.ub
        up = np.isfinite(lc.ub) & ~eq
        lo = np.isfinite(lc.lb) & ~eq
        res = call_within(partial(
            linprog, self.c, A_ub=sparse.vstack([a[up], -a[lo]]),
            b_ub=np.concatenate([lc.ub[up], -lc.lb[lo]]), A_eq=a[eq], b_eq=lc.lb[eq],
            bounds=np.column_stack([np.zeros(self.n_cols), self.upper()]), method="highs-ds",
            options={"time_limit": _highs_limit(seconds)}), (), seconds)
        return res if res is not TIMED_OUT and res.status == 0 else None

    def solve(self, ub: np.ndarray, seconds: float, *, presolve: bool = False,
              cutoff: float | None = None) -> _Solved:
        """The MILP restricted to the columns with a positive upper bound in ``ub`` (the
        others fixed at 0, left out of the program) within ``seconds``, in a child process
        (:func:`~ldiv_polars.core.limited.call_within`); by default without HiGHS's presolve,
        slow on the whole program (its root cuts are kept); a restricted program (dive, near
        MILP) is presolved (``presolve=True``): it is small once the fixed columns are gone,
        and HiGHS solved it faster so. ``cutoff``: see :meth:`milp_call`."""
        call, keep = self.milp_call(ub, seconds, presolve=presolve, cutoff=cutoff)
        return self.read(call_within(call, (), seconds), keep)

    def milp_call(self, ub: np.ndarray, seconds: float, *, presolve: bool = False,
                  cutoff: float | None = None) -> tuple[Any, np.ndarray]:
        """The call (no arguments) that solves the MILP of :meth:`solve` with HiGHS's limit
        for ``seconds``, and the columns it keeps; ``cutoff``: with the row ``c x <= cutoff``
        (only releases cheaper than the best are searched: an infeasible program proves
        that none exists)."""
        keep = np.flatnonzero(ub > 0)
        lc = self.constraints()
        a, lb, ub_rows = sparse.csc_array(lc.A)[:, keep], lc.lb, lc.ub
        if cutoff is not None:
            a = sparse.vstack([a, sparse.csc_array(self.c[keep][None, :])]).tocsc()
            lb, ub_rows = np.append(lb, -np.inf), np.append(ub_rows, cutoff)
        call = partial(
            milp, self.c[keep], constraints=LinearConstraint(a, lb, ub_rows),
            integrality=self.integrality()[keep], bounds=Bounds(0, ub[keep]),
            options={"time_limit": _highs_limit(seconds), "disp": False,
                     "mip_rel_gap": 0.0, "presolve": presolve})
        return call, keep

    def read(self, res: Any, keep: np.ndarray) -> _Solved:
        """The :class:`_Solved` of HiGHS's answer ``res`` to :meth:`milp_call` (keeping the
        columns ``keep``); :data:`~ldiv_polars.core.limited.TIMED_OUT`: nothing found."""
        if res is TIMED_OUT:
            return _Solved(None, np.inf, False, None)
        masks = None
        if res.x is not None:
            x = np.zeros(self.n_cols)
            x[keep] = res.x
            nx = self.var_key.shape[0]
            chosen = x[:nx] > 0.5
            masks = np.zeros(self.table.keys, dtype=np.int64)
            masks[self.var_key[chosen]] = self.var_mask[chosen]
        bound = getattr(res, "mip_dual_bound", None)
        return _Solved(masks, np.inf if res.x is None else float(res.fun), res.status == 0,
                       None if bound is None else float(bound), res.status == 2,
                       None if res.status in (0, 1, 2) else str(res.message))


@dataclass(frozen=True)
class _Solved:
    masks: np.ndarray | None
    cost: float
    optimal: bool
    bound: float | None
    infeasible: bool = False
    error: str | None = None
    """HiGHS's message when it stopped neither solved, infeasible nor at its limit (e.g.
    "Solve error"): the search then reports ``"solver_error"``, not a time limit."""


def _highs_limit(seconds: float) -> float:
    """HiGHS's own time limit for a call given ``seconds``: :data:`HIGHS_SHARE` of them, so
    that it usually stops itself (returning its best solution and bound) before
    :func:`~ldiv_polars.core.limited.call_within` kills it at ``seconds``."""
    return max(seconds * HIGHS_SHARE, 0.01)


def _proven(cost: float, bound: float, integral: bool) -> bool:
    """Whether ``bound`` proves ``cost`` optimal (integral costs: ``cost <= ceil(bound)``)."""
    if integral:
        return cost <= np.ceil(bound - 1e-6) + 1e-9
    return cost - bound <= 1e-9 * max(1.0, abs(cost))

