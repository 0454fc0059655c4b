"""Anytime search of lattices too large to hold (15 to 50 QIs): the best valid node found within
a budget, with a lower bound on the optimum's value, so the result states its gap.

The lattice is never materialized (:class:`VirtualLattice` numbers nodes in mixed radix with
Python integers); a node check is the exact search's check — a roll-up of the frequency set
(:meth:`~ldiv_polars.search.rollup.EncodedFrequencySet.rollup`, snapshots and kernels as
usual) judged by :class:`~ldiv_polars.search.suppression.NodeChecker` and valued by
:class:`~ldiv_polars.search.metrics.MetricSuite`.

**Search.** Best-first by the metric's suppression-free value ``b(x)`` (a lower bound of the
value at ``x`` and of every node above it: see docs/anonymize.md, "The anytime search"). A
node is *refuted* when it lies below a recorded *failure that implies its down-set* (any
failure when the predicate is monotone; otherwise a failure of the models' union-closed
relaxation beyond the limit). An incumbent comes first: the top is checked and descended
from (roll-ups of high nodes have small key spaces: cheap even from the base). Popping ``x``:

- refuted by a failure ``f``: every node above ``x`` not below ``f`` is above one of
  ``x | f_i + 1`` (``x`` with QI ``i`` raised just past ``f``); those are pushed, nothing is
  checked;
- else ``x`` is checked. A failure implying its down-set is first *climbed* (each QI raised as
  far as the node still fails so, by bisection): the higher failure refutes more. A pass
  becomes the incumbent if it is better, is *descended* greedily towards a minimal pass (a
  cheaper incumbent early), and its successors are pushed unless its value equals ``b(x)``
  (then nothing above it is better). Any other failure pushes its successors.

Every node is always refuted, decided, above a pass whose value is its bound, or above a node in
the heap; so the optimum's value is at least ``min(incumbent, least key in the heap)``: the
``bound``. When the heap's least key reaches the incumbent the optimum is proven (gap 0).
Metrics whose bound needs a roll-up (``aecs``, ``discernibility``) are pushed with their
parent's key (a valid lower bound, as ``b`` is monotone) and re-keyed when popped; ``kl`` has
no bound (0: the gap is None unless the search completes).

**Decomposition bound** (the cut loop, :meth:`_Search.add_groups`): the optima of the table
projected onto groups of QIs (:mod:`~ldiv_polars.search.anytime_groups`), each searched by
this module's best-first search, become constraints of the cut relaxation.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.search.anytime_cuts import CutRelaxation
from ldiv_polars.search.anytime_groups import (
    GROUP_SIZES,
    GroupBound,
    decomposition_applies,
    embed,
    entropy_order,
    maximal,
    partition,
    solve_groups,
)
from ldiv_polars.search.metrics import (
    BOUND_WITHOUT_ROLLUP,
    HAS_LOWER_BOUND,
    MetricSuite,
    entropy_bits,
)
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.suppression import NodeChecker, predicate_monotone, relaxations

Levels = tuple[int, ...]

MIN_SOLVE_SECONDS = 0.5
"""The least time a MILP solve is given, even past the budget (a solve cut short reports a weak
dual bound)."""

RATIO_DESCENT_SHARE = 0.5
"""The ratio descent (:meth:`_Search.descend_by_ratio`) stops once this share of a seconds
budget is spent: on a large frequency set it checks every predecessor at each step and could
leave the bound nothing."""

RANDOM_LIFTS = 4
"""Lifts in random QI orders of each MILP node that fails, after the two by cost
(:meth:`_Search.more_lifts`): more cuts per solve."""

CUT_LOOP_MIN_NODES = 10 ** 6
"""Lattices of at least this many nodes are searched by the cut loop (:meth:`_Search.run_cuts`)
when the metric is separable; smaller ones best-first (:meth:`_Search.run`), which proves
their optimum with fewer solver calls."""


GROUP_SHARE = 0.7
"""The share of the seconds left after the incumbent that the decomposition bound's searches of
projections may take (:meth:`_Search.add_groups`); the cut loop has the rest."""


@dataclass(frozen=True)
class Budget:
    """How long the anytime search may run: ``seconds`` of wall time and/or ``nodes`` checked
    (None: no limit on that; both None: until the optimum is proven). It is looked at
    between checks: one slow roll-up can overrun ``seconds``."""

    seconds: float | None = None
    nodes: int | None = None

    def __post_init__(self) -> None:
        for name, v in (("seconds", self.seconds), ("nodes", self.nodes)):
            if v is not None and (isinstance(v, bool) or not v > 0):
                raise InvalidParameterError(f"budget {name} must be positive, got {v!r}")

    @classmethod
    def of(cls, budget: Budget | float | None) -> Budget:
        """A :class:`Budget` from itself, a number of seconds, or None (no limit). Raises
        :class:`~ldiv_polars.errors.InvalidParameterError` for anything else."""
        if budget is None or isinstance(budget, Budget):
            return budget or cls()
        if isinstance(budget, bool) or not isinstance(budget, (int, float)):
            raise InvalidParameterError(f"budget must be seconds or a Budget, got {budget!r}")
        return cls(seconds=float(budget))


class VirtualLattice:
    """The lattice over ``heights`` without its node array: ids in mixed radix (the last QI
    varying fastest, as :class:`~ldiv_polars.search.lattice.Lattice`), Python integers.

    >>> lat = VirtualLattice([2, 3])
    >>> lat.size, lat.levels(lat.id_of((1, 1))), lat.height(4)
    (6, (1, 1), 2)
    """

    def __init__(self, heights: Sequence[int]) -> None:
        self.heights = tuple(int(h) for h in heights)
        self.size = math.prod(self.heights)
        self.radix = [math.prod(self.heights[i + 1:]) for i in range(len(self.heights))]
        self.bottom = 0
        self.top = self.size - 1

    def id_of(self, levels: Sequence[int]) -> int:
        """The node id of a level vector (mixed-radix, as the lattice numbers nodes)."""
        return sum(int(v) * r for v, r in zip(levels, self.radix))

    def levels(self, node: int) -> Levels:
        """The level vector of node id ``node`` (inverse of :meth:`id_of`)."""
        return tuple((node // r) % h for r, h in zip(self.radix, self.heights))

    def height(self, node: int) -> int:
        """The node's height: the sum of its levels."""
        return sum(self.levels(node))


@dataclass
class AnytimeOutcome:
    """What :func:`anytime_search` found."""

    best: Levels | None
    value: float
    """The incumbent's value (inf when no passing node was found)."""
    bound: float | None
    """A lower bound of the optimum's value (None: the metric has none, ``kl``)."""
    proven: bool
    checked: int
    evaluations: int
    stopped: str
    """``proven`` (optimum proven), ``exhausted`` (no node passes), ``seconds`` or ``nodes``."""
    notes: list[str] = field(default_factory=list)
    failures: np.ndarray | None = None
    """The maximal down-set failures recorded (``(count, q)`` levels; every node at or below one
    fails): the decomposition bound hands a projection's to the search of a larger one."""

    @property
    def gap(self) -> float | None:
        """``(value - bound) / value``: at most this fraction above the optimum (0 when proven,
        None without a bound or an incumbent)."""
        if self.proven:
            return 0.0
        if self.best is None or self.bound is None:
            return None
        if self.value <= self.bound:
            return 0.0
        return (self.value - self.bound) / self.value if self.value > 0 else 0.0


class _Search:
    """The state of one anytime search (see the module docstring)."""

    def __init__(self, efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                 metric: str, budget: Budget, metrics: MetricSuite | None = None) -> None:
        self.efs = efs
        self.models, self.limit_rows = list(models), limit_rows
        self.heights = [h.height for h in efs.hierarchies]
        self.q = len(self.heights)
        monotone, _ = predicate_monotone(models, limit_rows > 0)
        self.monotone = monotone
        self.checker = NodeChecker(efs, models, limit_rows, [] if monotone else
                                   relaxations(models))
        self.metrics = metrics if metrics is not None else MetricSuite(efs)
        self.metric = metric
        self.cheap = metric in BOUND_WITHOUT_ROLLUP
        self.has_bound = metric in HAS_LOWER_BOUND
        self.budget = budget
        self.t0 = time.perf_counter()
        self.checked = 0
        self.records: dict[Levels, tuple[bool, float, float, bool]] = {}
        """levels -> (passed, value, suppression-free value, failure implies the down-set)."""
        self.fails = np.zeros((64, self.q), dtype=np.int16)
        self.n_fails = 0
        self.best: Levels | None = None
        self.best_val = math.inf
        self.stopped = ""
        self.costs: list[list[float]] = []
        self.rng = np.random.default_rng(0)
        """The random QI orders of :meth:`more_lifts` (seeded: a search is reproducible)."""
        self.floors: list[tuple[tuple[int, ...], float]] = []
        """Groups of QIs with a proven bound of their share of the optimum (:meth:`key`)."""
        self.groups: list[GroupBound] = []
        """The decomposition bound's projections solved (:meth:`add_groups`)."""
        self.info: dict[Levels, float] = {}
        """levels -> the entropy (bits) of the node's class sizes: the information it releases
        (:meth:`descend_by_ratio`)."""
        self.record_info = True
        """Whether :meth:`check` records :attr:`info` (only the incumbent's descents read it;
        on a 10^6-row projection it was a tenth of each later check's time)."""

    # --- budget and checks --------------------------------------------------------------------

    def past_share(self, share: float) -> bool:
        """Whether ``share`` of the seconds budget is spent, or the budget is (False without a
        seconds budget until the budget itself runs out)."""
        s = self.budget.seconds
        return self.out_of_budget() or (s is not None and
                                        time.perf_counter() - self.t0 >= share * s)

    def out_of_budget(self) -> bool:
        b = self.budget
        if b.nodes is not None and self.checked >= b.nodes:
            self.stopped = "nodes"
        elif b.seconds is not None and time.perf_counter() - self.t0 >= b.seconds:
            self.stopped = "seconds"
        return bool(self.stopped)

    def check(self, x: Levels) -> tuple[bool, float, float, bool]:
        """``(passed, value, suppression-free value, failure implies its down-set)`` of ``x``,
        checking it (one roll-up) unless it was checked."""
        rec = self.records.get(x)
        if rec is not None:
            return rec
        rolled = self.efs.rollup(x)
        verdict = self.checker.check(rolled)
        self.checked += 1
        if self.record_info:
            self.info[x] = entropy_bits(rolled.class_size)
        free = self.free_value(x, rolled)
        if verdict.passed:
            value = free if verdict.suppressed_rows == 0 and self.has_bound else \
                self.metrics.value(self.metric, rolled, verdict.suppressed)
            if value < self.best_val or (value == self.best_val and self.best is not None
                                         and x < self.best):
                self.best_val, self.best = value, x
        else:
            value = math.inf
        downset = not verdict.passed and (self.monotone or not verdict.relaxed_passed)
        rec = (verdict.passed, value, free, downset)
        self.records[x] = rec
        if downset:
            self._add_fail(x)
        return rec

    def free_value(self, x: Levels, rolled: object = None) -> float:
        """The suppression-free value at ``x`` (0 for ``kl``)."""
        if not self.has_bound:
            return 0.0
        if self.cheap:
            return self.metrics.bound_from_levels(self.metric, x)
        if rolled is None:
            return self.check(x)[2]
        return self.metrics.value(self.metric, rolled, None)  # type: ignore[arg-type]

    # --- refutation ---------------------------------------------------------------------------

    def _add_fail(self, x: Levels) -> None:
        if self.n_fails == self.fails.shape[0]:
            self.fails = np.concatenate([self.fails, np.zeros_like(self.fails)])
        self.fails[self.n_fails] = x
        self.n_fails += 1

    def refuter(self, x: Levels) -> np.ndarray | None:
        """The highest recorded down-set failure at or above ``x``, None if there is none."""
        if not self.n_fails:
            return None
        f = self.fails[:self.n_fails]
        hit = np.flatnonzero((f >= np.asarray(x, dtype=np.int16)).all(axis=1))
        if not hit.size:
            return None
        return f[hit[np.argmax(f[hit].sum(axis=1, dtype=np.int64))]]

    def climb(self, x: Levels) -> Levels:
        """From a down-set failure ``x``, raise each QI (cheapest first) as far as the node
        still fails so, by bisection; each failure found is recorded. Returns the last (the
        highest) failure: maximal unless the budget ran out."""
        cur = list(x)
        for i in self._order(cur):
            lo, hi = cur[i], self.heights[i] - 1  # lo fails; find the highest failing level
            while lo < hi and not self.out_of_budget():
                mid = (lo + hi + 1) // 2
                cur[i] = mid
                if self.check(tuple(cur))[3]:
                    lo = mid
                else:
                    hi = mid - 1
            cur[i] = lo
        return tuple(cur)

    def _order(self, x: Sequence[int]) -> list[int]:
        """QIs by the bound's increase for one level up (cheapest first)."""
        def step(i: int) -> float:
            if x[i] + 1 >= self.heights[i]:
                return math.inf
            if not self.cheap:
                return float(self.heights[i] - x[i])
            y = list(x)
            y[i] += 1
            return self.metrics.bound_from_levels(self.metric, y)
        return sorted(range(self.q), key=step)

    def incumbent(self, top: Levels) -> None:
        """An incumbent first: if the top passes, :meth:`descend` from it, then
        :meth:`descend_by_ratio` (the better of the two is the incumbent)."""
        if self.check(top)[0]:
            self.descend(top)
            self.descend_by_ratio(top)
        self.record_info = False

    def descend(self, x: Levels) -> None:
        """From a pass, step down (the predecessor with the least value first) while a
        predecessor passes with a lower value: a cheaper incumbent early. Failing predecessors
        are climbed: failures near the frontier refute much of what lies below it."""
        cur, val = x, self.check(x)[1]
        while not self.out_of_budget():
            preds = [cur[:i] + (cur[i] - 1,) + cur[i + 1:] for i in range(self.q) if cur[i]]
            preds = [p for p in preds if self.refuter(p) is None]
            preds.sort(key=lambda p: self.free_value(p) if self.cheap else 0.0)
            nxt = None
            for p in preds:
                passed, value, _, downset = self.check(p)
                if downset:
                    self.climb(p)  # a failure near the frontier: refutes much below it
                if passed and value < val:
                    nxt, val = p, value
                    break
                if self.out_of_budget():
                    return
            if nxt is None:
                return
            cur = nxt

    def descend_by_ratio(self, x: Levels) -> Levels:
        """From a pass, step to the passing predecessor that lowers the value most per bit of
        information released (the entropy of the class sizes, :attr:`info`), while one
        lowers it: every predecessor is checked at each step (a knapsack's greedy: value given
        up per unit of the capacity k-anonymity leaves). A second incumbent, often cheaper than
        :meth:`descend`'s (largest drop first) on wide lattices. It stops once
        :data:`RATIO_DESCENT_SHARE` of the seconds budget is spent (the rest is the bound's).
        Returns the pass it stopped at (no predecessor of it passes with a lower value, unless
        it was stopped so)."""
        cur, val = x, self.check(x)[1]
        while not self.past_share(RATIO_DESCENT_SHARE):
            best: tuple[float, Levels, float] | None = None
            for i in range(self.q):
                if not cur[i] or self.past_share(RATIO_DESCENT_SHARE):
                    continue
                p = cur[:i] + (cur[i] - 1,) + cur[i + 1:]
                if self.refuter(p) is not None:
                    continue
                passed, value = self.check(p)[:2]
                if passed and value < val:
                    ratio = (val - value) / max(self.info[p] - self.info[cur], 1e-9)
                    if best is None or ratio > best[0]:
                        best = (ratio, p, value)
            if best is None:
                return cur
            _, cur, val = best
        return cur

    # --- the best-first loop ------------------------------------------------------------------

    def run(self) -> float:
        """Search until proven or out of budget; return the lower bound (see module docstring)."""
        top = tuple(h - 1 for h in self.heights)
        self.incumbent(top)  # roll-ups high up are cheap
        bottom = (0,) * self.q
        heap: list[tuple[float, bool, Levels]] = [(self.key(bottom), self.cheap, bottom)]
        seen = {bottom}
        while heap and heap[0][0] < self.best_val and not self.out_of_budget():
            key, exact, x = heapq.heappop(heap)
            if not exact:
                heapq.heappush(heap, (self.free_value(x), True, x))
                continue
            f = self.refuter(x)
            if f is not None:
                kids = [x[:i] + (int(f[i]) + 1,) + x[i + 1:] for i in range(self.q)
                        if f[i] + 1 < self.heights[i]]
                self._push(heap, seen, kids, key)
                continue
            passed, value, free, downset = self.check(x)
            if downset:
                self.climb(x)
                heapq.heappush(heap, (key, True, x))  # popped again: refuted, jumps
                continue
            if passed:
                self.descend(x)
                if value <= free:
                    continue  # nothing above x is better than x
            self._push(heap, seen, [x[:i] + (x[i] + 1,) + x[i + 1:] for i in range(self.q)
                                    if x[i] + 1 < self.heights[i]], key)
        if not heap or heap[0][0] >= self.best_val:
            self.stopped = "proven" if self.best is not None else "exhausted"
            return self.best_val
        return min(self.best_val, heap[0][0])

    def key(self, x: Levels) -> float:
        """The heap key of ``x``: a lower bound of the value of every passing node at or above
        it. ``b(x)`` (0 for metrics whose bound needs a roll-up), where each floor's group
        ``T`` counts ``max(b_T(x), floor)``: a passing ``y >= x`` has ``v_T(y) >= b_T(y) >=
        b_T(x)``, and ``v_T(y) >=`` the projection's optimum (docs/anonymize.md, "The
        decomposition bound")."""
        if not self.cheap:
            return 0.0
        b = self.free_value(x)
        for cols, lower in self.floors:
            part = sum(self.costs[j][x[j]] for j in cols)
            b += max(lower - part, 0.0)
        return b

    def set_known(self, floors: Sequence[tuple[Sequence[int], float]],
                  failures: Sequence[Sequence[int]] = ()) -> None:
        """Record ``failures``, nodes known to fail with every node below them (they refute
        what lies below them unchecked), and keep ``floors``: disjoint groups of QIs
        (positions), each with a proven lower bound of the optimum of the table projected onto
        it (in that projection's units), kept in this table's units with the separable costs
        they are compared with (:meth:`key`; only for the separable metrics)."""
        for f in failures:
            self._add_fail(tuple(int(v) for v in f))
        if not floors or not self.cheap:
            return
        self.costs = self.separable_costs()
        self.floors = [(tuple(cols), lower * self.metrics.projection_scale(self.metric,
                                                                           len(cols)))
                       for cols, lower in floors]

    # --- the cut loop (separable metrics) -----------------------------------------------------

    def separable_costs(self) -> list[list[float]]:
        """Per QI and level, the metric's suppression-free cost (its value at the node with
        that QI at that level and every other at 0, less its value at the bottom; the metrics
        of ``BOUND_WITHOUT_ROLLUP`` are sums over the QIs)."""
        zero = [0] * self.q
        at0 = self.metrics.bound_from_levels(self.metric, zero)
        out = []
        for j, h in enumerate(self.heights):
            row = []
            for lv in range(h):
                x = list(zero)
                x[j] = lv
                row.append(self.metrics.bound_from_levels(self.metric, x) - at0)
            out.append(row)
        out[0] = [c + at0 for c in out[0]]
        return out

    def run_cuts(self, groups: bool = False) -> float:
        """The implicit-hitting-set loop (docs/anonymize.md, "The anytime search"): an
        incumbent by descent from the top; with ``groups``, the decomposition bound's
        constraints (:meth:`add_groups`); then, until proven or out of budget, the least-cost
        node above no recorded failure (:class:`CutRelaxation`) is probed: a failure is lifted
        to a maximal one and cut, anything else checked is excluded. Returns the lower bound."""
        self.costs = self.separable_costs()
        relax = CutRelaxation(self.costs)
        top = tuple(h - 1 for h in self.heights)
        self.incumbent(top)
        if groups:
            self.add_groups(relax)
        fed, bound = 0, -math.inf
        while True:
            for f in self.fails[fed:self.n_fails]:
                relax.add_failure(tuple(int(v) for v in f))
            fed = self.n_fails
            lb, x = relax.solve(self._seconds_left())
            bound = max(bound, min(lb, self.best_val))
            if lb >= self.best_val - 1e-9 * max(1.0, abs(self.best_val)):
                self.stopped = "proven" if self.best is not None else "exhausted"
                return self.best_val
            if self.out_of_budget() or x is None:
                self.stopped = self.stopped or "seconds"  # the solver ran out of time
                return bound
            if self.lift(x) is None:
                relax.exclude(x)  # checked: a pass (incumbent or worse) or an upward failure
            else:
                self.more_lifts(x)

    def add_groups(self, relax: CutRelaxation) -> None:
        """The decomposition bound (:mod:`~ldiv_polars.search.anytime_groups`): for each size
        of :data:`GROUP_SIZES` below the QI count, the QIs (by :func:`entropy_order`) cut into
        groups of that size; each group's projection is searched (best-first, its own anytime
        search) and its proven bound, in this table's units, becomes the constraint
        :meth:`CutRelaxation.add_group`. Takes at most :data:`GROUP_SHARE` of the seconds left
        (nothing without a seconds budget), shared among the sizes not yet done."""
        if self.budget.seconds is None:
            return
        total = GROUP_SHARE * (self.budget.seconds - (time.perf_counter() - self.t0))
        t0, order = time.perf_counter(), entropy_order(self.efs)
        slack = [self.metrics.suppression_cost_max(self.metric, j, self.limit_rows)
                 for j in range(self.q)]
        sizes = [g for g in GROUP_SIZES if g < self.q]
        for idx, size in enumerate(sizes):
            left = total - (time.perf_counter() - t0)
            if left <= 0 or self.out_of_budget():
                return
            for g in solve_groups(self.efs, partition(order, size), left / (len(sizes) - idx),
                                  self._solve_projection, self.out_of_budget):
                if math.isfinite(g.lower):
                    scale = self.metrics.projection_scale(self.metric, len(g.cols))
                    relax.add_group(g.cols, g.lower * scale, slack)
                    self.groups.append(g)

    def _solve_projection(self, proj: EncodedFrequencySet, cols: tuple[int, ...],
                          seconds: float) -> tuple[float, bool, int, np.ndarray | None]:
        """``(proven bound, proven, checked, maximal down-set failures)`` of the anytime search
        of the projection onto ``cols``, its keys floored by the groups solved so far that lie
        within ``cols`` (disjoint, largest bounds in this table's units first), their failures
        recorded as its own."""
        where = {j: p for p, j in enumerate(cols)}
        floors: list[tuple[list[int], float]] = []
        fails: list[tuple[int, ...]] = []
        heights = [h.height for h in proj.hierarchies]
        for g in self.groups:  # a smaller group's failures fail here too (its QIs' levels)
            if set(g.cols) <= where.keys():
                fails += embed(g.failures, [where[j] for j in g.cols], heights)
        used: set[int] = set()
        share = self.metrics.projection_scale  # a group's bound in this table's units
        for g in sorted(self.groups, key=lambda g: -g.lower * share(self.metric, len(g.cols))):
            if set(g.cols) <= where.keys() and not used & set(g.cols) and g.lower > 0:
                floors.append(([where[j] for j in g.cols], g.lower))
                used |= set(g.cols)
        out = anytime_search(proj, self.models, self.limit_rows, self.metric,
                             Budget(seconds=seconds), cuts=False, floors=floors,
                             failures=fails)
        lower = out.bound if out.bound is not None else 0.0
        return lower, out.proven, out.checked, out.failures

    def cut_bound(self) -> float:
        """The bound of the cut relaxation over what the search knows: every recorded down-set
        failure cut, every other checked node excluded (it fails, or its value is at least the
        incumbent's); ``min`` with the incumbent."""
        relax = CutRelaxation(self.separable_costs())
        for f in self.fails[:self.n_fails]:
            relax.add_failure(tuple(int(v) for v in f))
        for x, rec in self.records.items():
            if not rec[3]:
                relax.exclude(x)
        return min(relax.solve(self._seconds_left())[0], self.best_val)

    def _seconds_left(self) -> float | None:
        if self.budget.seconds is None:
            return None
        return max(self.budget.seconds - (time.perf_counter() - self.t0), MIN_SOLVE_SECONDS)

    def more_lifts(self, x: Levels) -> None:
        """After the first lift of the MILP's node ``x`` (most expensive QIs first), more
        different cuts from it: a lift with the cheapest QIs first, then
        :data:`RANDOM_LIFTS` in random QI orders (seeded: the same search makes the same
        cuts). Each costs a few coarse roll-ups, against a MILP solve per node."""
        if self.out_of_budget():
            return
        self.lift(x, cheap_first=True)
        for _ in range(RANDOM_LIFTS):
            if self.out_of_budget():
                return
            self.lift(x, rank=self.rng.random(self.q).tolist())

    def lift(self, x: Levels, cheap_first: bool = False,
             rank: Sequence[float] | None = None) -> Levels | None:
        """A maximal down-set failure at or above ``x``, found from the top: the fewest QIs
        (most expensive to raise one level first; cheapest first with ``cheap_first``; by
        increasing ``rank[j]`` when given) set to their level in ``x``, the others at the
        top, that fail (exponential then binary search on that count: coarse roll-ups,
        cheap); QIs whose top level still fails are dropped (in the opposite order), then each
        is climbed. None when ``x`` itself is no down-set failure (it was checked)."""
        rec = self.records.get(x)
        if rec is not None and not rec[3]:
            return None
        top = tuple(h - 1 for h in self.heights)
        if rank is None:
            sign = 1.0 if cheap_first else -1.0
            rank = [sign * self._raise_cost(j, x[j]) for j in range(self.q)]
        order = sorted((j for j in range(self.q) if x[j] < top[j]), key=lambda j: rank[j])

        def node(m: int) -> Levels:
            z = list(top)
            for j in order[:m]:
                z[j] = x[j]
            return tuple(z)

        hi = self._least_failing(node, len(order))
        if hi is None:
            return None
        z = list(node(hi))
        for j in sorted(order[:hi - 1], key=lambda j: -rank[j]):
            if self.out_of_budget():
                break
            z[j] = top[j]
            if not self.check(tuple(z))[3]:
                z[j] = x[j]
        return self.climb(tuple(z))

    def _least_failing(self, node: Callable[[int], Levels], n: int) -> int | None:
        """The least ``m`` in 1..n whose ``node(m)`` is a down-set failure, given that these
        failures are monotone in ``m`` (``node(m)`` descends); None if ``node(n)`` is none."""
        lo, m = 0, 1
        while m < n and not self.check(node(m))[3]:
            lo, m = m, 2 * m
        hi = min(m, n)
        if hi == n and not self.check(node(n))[3]:
            return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.check(node(mid))[3]:
                hi = mid
            else:
                lo = mid
        return hi

    def _raise_cost(self, j: int, level: int) -> float:
        """The separable cost of raising QI ``j`` one level above ``level``."""
        c = self.costs[j]
        return c[min(level + 1, len(c) - 1)] - c[level]

    def _push(self, heap: list, seen: set, kids: list[Levels], parent_key: float) -> None:
        for y in kids:
            if y not in seen:
                seen.add(y)
                heapq.heappush(heap, (self.key(y) if self.cheap else parent_key,
                                      self.cheap, y))


def anytime_search(efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                   metric: str, budget: Budget | float | None = None, *,
                   metrics: MetricSuite | None = None,
                   progress: Callable[[int, int], None] | None = None, cuts: bool | None = None,
                   groups: bool | None = None, floors: Sequence[tuple[Sequence[int], float]] = (),
                   failures: Sequence[Sequence[int]] = ()) -> AnytimeOutcome:
    """The best node found within ``budget`` (see :class:`Budget`) where every model passes
    with at most ``limit_rows`` rows suppressed, the least ``metric`` value among those
    checked, with a lower bound of the optimum's value (the module docstring says how; the
    proof is in docs/anonymize.md). ``progress(checked, checked)`` is called at the end.
    ``cuts``: search by the cut loop (True; only for the separable metrics of
    ``BOUND_WITHOUT_ROLLUP``) or best-first (False); None: the cut loop on lattices of at least
    :data:`CUT_LOOP_MIN_NODES` nodes. ``groups``: the cut loop adds the decomposition bound
    (:meth:`_Search.add_groups`; only with a seconds budget and when
    :func:`~ldiv_polars.search.anytime_groups.decomposition_applies`); None: whenever it may.
    ``floors``, ``failures``: what the caller knows and vouches for (:meth:`_Search.set_known`;
    the decomposition bound passes a smaller group's to the search of a larger one).

    >>> import polars as pl
    >>> from ldiv_polars.core.frequency import FrequencySet
    >>> from ldiv_polars.hierarchy import Hierarchy
    >>> from ldiv_polars.models import KAnonymity
    >>> h = {"zip": Hierarchy([["130", "13*", "*"], ["131", "13*", "*"], ["140", "14*", "*"]],
    ...                       name="zip")}
    >>> fs = FrequencySet.build(pl.DataFrame({"zip": ["130", "131", "140", "140"]}), "zip", None)
    >>> out = anytime_search(EncodedFrequencySet.from_frame(fs.materialize(), h),
    ...                      [KAnonymity(2)], 0, "height")
    >>> out.best, out.value, out.bound, out.gap, out.stopped
    ((1,), 1.0, 1.0, 0.0, 'proven')
    """
    budget = Budget.of(budget)
    if metric in BOUND_WITHOUT_ROLLUP:
        import scipy.optimize  # noqa: F401  (the cut relaxation's solver: loaded before the clock)
    s = _Search(efs, models, limit_rows, metric, budget, metrics)
    s.set_known(floors, failures)
    if cuts is None:
        cuts = math.prod(s.heights) >= CUT_LOOP_MIN_NODES
    cuts = cuts and s.cheap
    groups = (groups is not False) and cuts and decomposition_applies(models, limit_rows)
    bound = s.run_cuts(groups) if cuts else s.run()
    proven = s.stopped in ("proven", "exhausted")
    if s.cheap and not proven and not cuts:
        bound = max(bound, s.cut_bound())
    if progress is not None:
        progress(s.checked, s.checked)
    return AnytimeOutcome(
        best=s.best, value=s.best_val, bound=bound if (s.has_bound or proven) else None,
        proven=proven, checked=s.checked, evaluations=s.checker.evaluations,
        stopped=s.stopped, notes=_notes(s, cuts, metric),
        failures=maximal(s.fails[:s.n_fails]))


def _notes(s: _Search, cuts: bool, metric: str) -> list[str]:
    """The outcome's notes: how the search ran, and the decomposition bound's projections."""
    how = ("cut loop: least separable cost above no recorded failure (MILP)" if cuts else
           f"best-first by the suppression-free {metric!r} bound")
    notes = [f"anytime: {how}, {s.n_fails} down-set failure(s) recorded; "
             f"stopped: {s.stopped}"]
    if s.groups:
        notes.append(f"anytime: decomposition bound over {len(s.groups)} projection(s) "
                     f"({sum(g.proven for g in s.groups)} solved exactly, "
                     f"{sum(g.checked for g in s.groups)} nodes checked in them)")
    return notes
