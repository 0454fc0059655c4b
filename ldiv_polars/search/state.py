"""What a lattice search knows about each node, and how it learns it: :class:`SearchState`.

A node is *checked* (rolled up, judged by the models within the suppression limit, valued by
the target metric: :meth:`SearchState.check`), or *tagged* from a check elsewhere by
monotonicity (``tags``: 1 passes, -1 fails, 0 unknown). The strategies
(:mod:`~ldiv_polars.search.flash`, :mod:`~ldiv_polars.search.exhaustive`,
:mod:`~ldiv_polars.search.bounded`) decide which nodes to check; every fact they read or write
about a node is here. Two facts are kept apart from the tags: ``zero`` (the node passes with
nothing suppressed: every generalization of a zero-suppression pass under models monotone
without suppression) and ``rtags`` (the tags of "the models' suppression floors sum within
the limit", see :func:`~ldiv_polars.search.suppression.relaxations`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ldiv_polars.models.base import Model
from ldiv_polars.search.lattice import lattice_of
from ldiv_polars.search.metrics import (
    BOUND_WITHOUT_ROLLUP,
    HAS_LOWER_BOUND,
    MONOTONE_WITH_SUPPRESSION,
    MetricSuite,
)
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled
from ldiv_polars.search.suppression import (
    NodeChecker,
    NodeVerdict,
    predicate_monotone,
    relaxations,
)

Progress = Callable[[int, int], None]
"""``progress(decided_nodes, lattice_size)``, called after each check."""


@dataclass
class NodeRecord:
    """What the search learned about one node."""

    passed: bool
    suppressed_rows: int
    classes: int
    """Retained classes (-1 when the node was valued from its levels alone)."""
    value: float
    """The target metric (inf: failing, or passing with a bound beyond the optimum)."""
    checked: bool
    """False when decided by tagging only."""
    relaxed_pass: bool = True
    """The union-closed necessary conditions pass within the limit."""


def _grid_sum(per_level: Sequence[np.ndarray], heights: tuple[int, ...]) -> np.ndarray:
    """Per node (in node-id order), the sum over QIs of ``per_level[i][level_i]``: added on the
    lattice's grid by broadcasting, QI by QI in order (the same float sums as a gather per QI).

    >>> _grid_sum([np.array([0.0, 1.0]), np.array([0.0, 10.0, 20.0])], (2, 3)).tolist()
    [0.0, 10.0, 20.0, 1.0, 11.0, 21.0]
    """
    out = np.zeros(heights)
    for i, values in enumerate(per_level):
        shape = [1] * len(heights)
        shape[i] = -1
        out += values.reshape(shape)
    return out.reshape(-1)


class SearchState:
    """The search of ``efs``'s lattice for ``models`` within ``limit_rows`` suppressed rows,
    optimizing ``metric``: the checker, the metric tables, the tags and the records.
    ``batch``: most nodes checked together by :meth:`check_batch` callers."""

    def __init__(self, efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                 metric: str, progress: Progress | None, batch: int = 32) -> None:
        self.efs = efs
        self.lattice = lattice_of([h.height for h in efs.hierarchies])
        monotone, _ = predicate_monotone(models, limit_rows > 0)
        self.monotone = monotone
        """Whether "node passes" is monotone (Flash's tags then follow from checks)."""
        self.relaxed = [] if monotone else relaxations(models)
        self.checker = NodeChecker(efs, models, limit_rows, self.relaxed)
        efs.codes_only = self.checker.codes_suffice  # the models' rows: codes or values
        self.metrics = MetricSuite(efs)
        self.metric = metric
        self.limit = limit_rows
        self.models = list(models)
        self.all_monotone = all(m.monotone for m in self.models)
        self.metric_monotone = limit_rows == 0 or metric in MONOTONE_WITH_SUPPRESSION
        size = self.lattice.size
        self.tags = np.zeros(size, dtype=np.int8)  # 1 pass, -1 fail, 0 unknown
        self.zero = np.zeros(size, dtype=bool)  # passes with nothing suppressed
        self.rtags = np.zeros(size, dtype=np.int8)  # tags of the floors' predicate
        # Flash's path heuristic: minus the log of the number of generalized value combinations
        self.path_score = -_grid_sum([np.log(np.maximum(np.asarray(c, dtype=np.float64), 1.0))
                                      for c in efs.cards], self.lattice.heights)
        self.path_scores: list[float] = self.path_score.tolist()
        self.records: dict[int, NodeRecord] = {}
        self.checked = 0
        self.progress = progress
        self._bounds: dict[int, float] = {}
        self.batch = batch
        self.pruned = 0
        """Nodes the exhaustive strategy left undecided by the bound."""
        self._best = math.inf  # least value of a passing checked node: bounds the optimum
        self._best_passing: tuple[float, tuple[int, int] | None] = (math.inf, None)
        self.skipped_values = 0
        """Passing nodes whose value was not computed (see :meth:`_value`)."""
        self._kept: dict[int, Rolled] = {}
        """Roll-ups made for a bound and kept for the node's check (:meth:`bound`)."""
        self.beyond = np.zeros(size, dtype=bool)
        """Nodes known to have a metric bound strictly beyond the best value found (kept up
        to date by :meth:`mark_beyond`; the best only falls, so a mark stays true)."""
        self.within_bound = False
        """Whether Flash leaves out the nodes :attr:`beyond` (the ``bounded`` strategy: the
        optimum only, no minimal set)."""
        self._bound_log: list[tuple[int, float]] = []
        self._marked = (math.inf, 0)  # (best value, bounds logged) at the last mark_beyond
        self._bound_grid: np.ndarray | None = None

    def report(self) -> None:
        """Tell ``progress`` how many nodes are decided."""
        if self.progress is not None:
            self.progress(int((self.tags != 0).sum()), self.lattice.size)

    # --- checking nodes -----------------------------------------------------------------------

    def check(self, node: int) -> NodeRecord:
        """The node's record, checking it (roll-up, models, metric) unless it was checked."""
        rec = self.records.get(node)
        if rec is not None and rec.checked:
            return rec
        rolled = self._kept.pop(node, None) or self.efs.rollup(self.lattice.levels(node))
        return self._record(node, rolled, self.checker.check(rolled))

    def check_batch(self, nodes: Sequence[int]) -> list[NodeRecord]:
        """Records of several nodes, checked with one batched roll-up and model evaluation
        (the same records as one by one)."""
        todo = [n for n in nodes if not (n in self.records and self.records[n].checked)]
        if len(todo) <= 1:
            return [self.check(n) for n in nodes]
        rest = [n for n in todo if n not in self._kept]
        fresh = iter(self.efs.rollup_many([self.lattice.levels(n) for n in rest])
                     if rest else [])
        rolleds = [self._kept.pop(n) if n in self._kept else next(fresh) for n in todo]
        verdicts = self.checker.check_many(rolleds)
        for node, rolled, verdict in zip(todo, rolleds, verdicts):
            self._record(node, rolled, verdict)
        return [self.records[n] for n in nodes]

    def _record(self, node: int, rolled: Rolled, verdict: NodeVerdict) -> NodeRecord:
        """Record a checked node, tag it, and tag what a zero-suppression pass implies."""
        self.checked += 1
        if self.metric in HAS_LOWER_BOUND and self.metric not in BOUND_WITHOUT_ROLLUP \
                and node not in self._bounds:
            # the roll-up's bound comes free now (for the pruning of the nodes above it)
            self._set_bound(node, self.metrics.value(self.metric, rolled, None))
        value = self._value(node, rolled, verdict)
        rec = NodeRecord(verdict.passed, verdict.suppressed_rows,
                         verdict.retained_classes, value, True, verdict.relaxed_passed)
        self.records[node] = rec
        if rec.passed:
            best_val, best_key = self._best_passing
            key = (self.lattice.height(node), node)
            if value < best_val or (value == best_val and best_key is not None
                                    and key < best_key):
                self._best_passing = (value, key)
        if self.tags[node] == 0:
            self.tags[node] = 1 if verdict.passed else -1
        if rec.passed and rec.suppressed_rows == 0 and self.all_monotone:
            lat = self.lattice
            box = lat.box_above(node)
            self.zero.reshape(lat.heights)[box] = True
            lat.tag(self.tags, box, 1)
        return rec

    def _value(self, node: int, rolled: Rolled, verdict: NodeVerdict) -> float:
        """The target metric at a checked node: ``inf`` when it fails, and also when it passes
        but its lower bound from the levels alone (:meth:`bound`, no roll-up) already exceeds
        the value of a passing node checked before: it cannot be the optimum, so its exact
        value is not computed. Strictly exceeds: a node that could tie with the optimum is
        always valued."""
        if not verdict.passed:
            return math.inf
        if self.metric in BOUND_WITHOUT_ROLLUP and self.bound(node) > self._best:
            self.skipped_values += 1
            return math.inf
        value = self.metrics.value(self.metric, rolled, verdict.suppressed)
        if value < self._best:
            self._best = value
        return value

    def unsuppressed_record(self, node: int) -> NodeRecord:
        """Record of a node known to pass with nothing suppressed (no model evaluation)."""
        rec = self.records.get(node)
        if rec is not None:
            return rec
        levels = self.lattice.levels(node)
        if self.metric in BOUND_WITHOUT_ROLLUP:
            value = float(self.levels_bounds()[node])
            classes = -1
        else:
            rolled = self.efs.rollup(levels)
            value = self.metrics.value(self.metric, rolled, None)
            classes = rolled.classes
        rec = NodeRecord(True, 0, classes, value, False)
        self.records[node] = rec
        return rec

    def implied(self, node: int) -> bool:
        """Whether the node's exact record follows without a model evaluation: it passes
        with nothing suppressed, or passes and the metric is ``height`` (its levels)."""
        return bool(self.zero[node] or (self.tags[node] == 1 and self.metric == "height"))

    def exact(self, node: int) -> NodeRecord:
        """Exact record of a node, checking it unless that is implied."""
        rec = self.records.get(node)
        if rec is not None:
            return rec
        if self.implied(node):
            return self.unsuppressed_record(node)
        return self.check(node)

    def bound(self, node: int, keep: bool = False) -> float:
        """Suppression-free metric value: a lower bound of the value, monotone over the
        lattice (0 for a metric without one). ``keep``: a roll-up made for it is kept for
        the node's check (:meth:`check`, :meth:`check_batch`) until :meth:`drop`."""
        b = self._bounds.get(node)
        if b is None:
            if self.metric not in HAS_LOWER_BOUND:
                b = 0.0
            elif self.metric in BOUND_WITHOUT_ROLLUP:
                b = float(self.levels_bounds()[node])
            else:
                rolled = self.efs.rollup(self.lattice.levels(node))
                b = self.metrics.value(self.metric, rolled, None)
                if keep:
                    self._kept[node] = rolled
            self._set_bound(node, b)
        return b

    def levels_bounds(self) -> np.ndarray:
        """Every node's bound from its levels alone (a metric of ``BOUND_WITHOUT_ROLLUP``;
        :meth:`MetricSuite.bounds_from_levels`, the same floats as one node's), computed once."""
        if self._bound_grid is None:
            self._bound_grid = self.metrics.bounds_from_levels(self.metric)
        return self._bound_grid

    def _set_bound(self, node: int, b: float) -> None:
        self._bounds[node] = b
        self._bound_log.append((node, b))

    def mark_beyond(self) -> np.ndarray:
        """:attr:`beyond` brought up to date and returned: the nodes whose bound exceeds the
        best value found. For a bound from the levels alone, every node's (computed once
        for the whole lattice); else the bounds computed so far, each with every
        generalization (the bound is monotone). Only what changed since the last call is
        looked at."""
        best_val, best_key = self._best_passing
        if best_key is None or self.metric not in HAS_LOWER_BOUND:
            return self.beyond
        last_val, seen = self._marked
        if self.metric in BOUND_WITHOUT_ROLLUP:
            if best_val < last_val:
                self.beyond |= self.levels_bounds() > best_val
        else:
            lat = self.lattice
            grid = self.beyond.reshape(lat.heights)
            for node, b in self._bound_log[0 if best_val < last_val else seen:]:
                if b > best_val and not self.beyond[node]:  # (else marked with its box)
                    grid[lat.box_above(node)] = True
        self._marked = (best_val, len(self._bound_log))
        return self.beyond

    def drop(self, node: int) -> None:
        """Forget the roll-up :meth:`bound` kept for ``node`` (it will not be checked)."""
        self._kept.pop(node, None)

    def best_passing(self) -> tuple[float, tuple[int, int] | None]:
        """The least value of a checked passing node and its tie order ``(height, id)``
        (``(inf, None)`` when none passed; kept up to date by every check)."""
        return self._best_passing
