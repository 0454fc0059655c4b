"""Globally optimal, exact lattice search (Flash-like), with sound fallbacks.

Three strategies, chosen from the models' monotonicity and the suppression limit:

``flash`` (the predicate "node passes" is monotone)
    Bottom-up over the lattice by height; from every untagged node, a path is built upwards
    through untagged nodes and searched for its first passing node (Kohlmayer et al.'s Flash
    binary-searches it; here, once earlier paths have shown where passing starts, the search
    starts at the predicted node and gallops from it, see ``_Search._search_path``). A passing
    node tags all its generalizations as passing, a failing node all its specializations as
    failing (*predictive tagging*); every tag follows from monotonicity, so the set of minimal
    satisfying nodes is exact. The optimum: with a monotone metric it is one of the minimal
    nodes; otherwise (suppression > 0 and a metric other than height) a best-first walk upwards
    from the minimal nodes, ordered by the metric's suppression-free lower bound (monotone), stops
    once the bound reaches the best exact value found — sound pruning by a bound.
``exhaustive`` (predicate not monotone; default then)
    Every node that could be minimal or optimal is decided. The only tagging used is sound
    without suppression-monotonicity: a node passing with *nothing* suppressed, under models
    that are monotone without suppression, has only generalizations that pass with nothing
    suppressed (their metric is then the suppression-free value). Going up by height, a node
    with a passing node strictly below it (hence not minimal) whose metric lower bound from its
    levels exceeds the best value found is left unchecked (it cannot be the optimum either).
    Minimal set and optimum are exact.
``bounded`` (predicate not monotone, optimum only)
    Best-first from the bottom by the metric's lower bound, checking each popped node, stopping
    when the bound reaches the best exact value: the optimum is exact, the minimal set is not
    computed (``minimal_complete=False``).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import Model
from ldiv_polars.search.lattice import Lattice
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

BORDER_QUANTILE = 0.1
"""Flash's guess of where passing starts on a path: this quantile of the scores of the first
passing nodes found so far (a low one: measured over 19 Adult and synthetic configurations,
0.1 checked 10% fewer nodes than binary search, 0.5 about 4% fewer; 25-45% fewer without
suppression). Negative: plain binary search."""

PRIME_MIN_NODES = 2000
"""The pinned hubs of :meth:`EncodedFrequencySet.prime` (roll-ups of the whole base, or of
each other) are made only for lattices of at least this many nodes: they paid off on Adult's
6,480-node lattice (1M-row sample: search 2.3 s with them, 2.8 s without) and cost more than
they saved on the 480-node lattice of the synthetic census (10M rows: 3.4-4.1 s with them,
1.9 s without; 1M rows: 0.82 vs 0.68 s)."""

STRATEGIES = ("auto", "flash", "exhaustive", "bounded")

Progress = Callable[[int, int], None]
"""``progress(decided_nodes, lattice_size)``, called after each check."""


@dataclass
class NodeRecord:
    passed: bool
    suppressed_rows: int
    classes: int  # retained classes
    value: float  # target metric (inf: failing, or passing with a bound beyond the optimum)
    checked: bool  # False when decided by tagging only
    relaxed_pass: bool = True  # union-closed necessary conditions pass within the limit


@dataclass
class SearchOutcome:
    lattice: Lattice
    strategy: str
    monotone: bool
    reason: str
    checked: int
    evaluations: int
    rollups: int
    records: dict[int, NodeRecord]
    passing: np.ndarray  # boolean over nodes: the passing nodes decided (not every one for
    # "bounded", nor for "exhaustive" when nodes were pruned by the bound)
    minimal: list[int] | None
    optimum: int | None
    metric: str
    limit_rows: int
    notes: list[str] = field(default_factory=list)
    metrics: MetricSuite | None = None  # the search's metric tables (of the searched efs)


class _Search:
    def __init__(self, efs: EncodedFrequencySet, models: Sequence[Model], limit_rows: int,
                 metric: str, progress: Progress | None, batch: int = 32) -> None:
        self.efs = efs
        self.lattice = Lattice([h.height for h in efs.hierarchies])
        monotone, _ = predicate_monotone(models, limit_rows > 0)
        self.relaxed = [] if monotone else relaxations(models)
        self.checker = NodeChecker(efs, models, limit_rows, self.relaxed)
        efs.codes_only = self.checker.codes_suffice  # the models' rows: codes or values
        self.metrics = MetricSuite(efs)
        self.metric = metric
        self.limit = limit_rows
        self.models = list(models)
        self.all_monotone = all(m.monotone for m in self.models)
        self.metric_monotone = limit_rows == 0 or metric in MONOTONE_WITH_SUPPRESSION
        self.tags = np.zeros(self.lattice.size, dtype=np.int8)  # 1 pass, -1 fail, 0 unknown
        # nodes known to pass with nothing suppressed (above a zero-suppression pass)
        self.zero = np.zeros(self.lattice.size, dtype=bool)
        self.rtags = np.zeros(self.lattice.size, dtype=np.int8)  # tags of the relaxation
        # path heuristic: minus the log of the number of generalized value combinations
        logc = [np.log(np.maximum(np.asarray(c, dtype=np.float64), 1.0)) for c in efs.cards]
        self._path_score = -sum(logc[i][self.lattice.nodes[:, i]] for i in range(len(logc)))
        self._path_scores: list[float] = self._path_score.tolist()
        self.records: dict[int, NodeRecord] = {}
        self.checked = 0
        self.progress = progress
        self._bounds: dict[int, float] = {}
        self.batch = batch
        self.pruned = 0  # exhaustive: nodes left undecided by the bound (see _unprunable)
        # the least metric value of a passing checked node: an upper bound of the optimum
        self._best = math.inf
        self.skipped_values = 0  # passing nodes whose value was not computed (see _value)

    # --- node evaluation ----------------------------------------------------------------------

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(int((self.tags != 0).sum()), self.lattice.size)

    def check(self, node: int) -> NodeRecord:
        rec = self.records.get(node)
        if rec is not None and rec.checked:
            return rec
        rolled = self.efs.rollup(self.lattice.levels(node))
        verdict: NodeVerdict = self.checker.check(rolled)
        self.checked += 1
        value = self._value(node, rolled, verdict)
        rec = NodeRecord(verdict.passed, verdict.suppressed_rows,
                         int((~verdict.suppressed).sum()), value, True, verdict.relaxed_passed)
        self.records[node] = rec
        if self.tags[node] == 0:
            self.tags[node] = 1 if verdict.passed else -1
        self._after_check(node, rec)
        return rec

    def _value(self, node: int, rolled: Rolled, verdict: NodeVerdict) -> float:
        """The target metric at a checked node: ``inf`` when it fails, and also when it passes
        but its lower bound from the levels alone (:meth:`bound`, no roll-up) already exceeds
        the value of a passing node checked before — it cannot be the optimum (the optimum is
        at most that value), so its exact value, ~0.4 ms on a 1M-row table, is not computed.
        Strictly exceeds: a node that could tie with the optimum is always evaluated."""
        if not verdict.passed:
            return math.inf
        if self.metric in BOUND_WITHOUT_ROLLUP and self.bound(node) > self._best:
            self.skipped_values += 1
            return math.inf
        value = self.metrics.value(self.metric, rolled, verdict.suppressed)
        if value < self._best:
            self._best = value
        return value

    def check_batch(self, nodes: Sequence[int]) -> list[NodeRecord]:
        """Check several nodes with one batched model evaluation (same results as one by one)."""
        todo = [n for n in nodes if not (n in self.records and self.records[n].checked)]
        if len(todo) <= 1:
            return [self.check(n) for n in nodes]
        rolleds = self.efs.rollup_many([self.lattice.levels(n) for n in todo])
        verdicts = self.checker.check_many(rolleds)
        for node, rolled, verdict in zip(todo, rolleds, verdicts):
            self.checked += 1
            value = self._value(node, rolled, verdict)
            rec = NodeRecord(verdict.passed, verdict.suppressed_rows,
                             int((~verdict.suppressed).sum()), value, True,
                             verdict.relaxed_passed)
            self.records[node] = rec
            if self.tags[node] == 0:
                self.tags[node] = 1 if verdict.passed else -1
            self._after_check(node, rec)
        return [self.records[n] for n in nodes]

    def unsuppressed_record(self, node: int) -> NodeRecord:
        """Record of a node known to pass with nothing suppressed (no model evaluation)."""
        rec = self.records.get(node)
        if rec is not None:
            return rec
        levels = self.lattice.levels(node)
        if self.metric in BOUND_WITHOUT_ROLLUP:
            value = self.metrics.bound_from_levels(self.metric, levels)
            classes = -1
        else:
            rolled = self.efs.rollup(levels)
            value = self.metrics.value(self.metric, rolled, None)
            classes = rolled.classes
        rec = NodeRecord(True, 0, classes, value, False)
        self.records[node] = rec
        return rec

    def exact(self, node: int) -> NodeRecord:
        """Exact record of a node, checking it unless that is implied."""
        rec = self.records.get(node)
        if rec is not None:
            return rec
        if self.zero[node] or (self.tags[node] == 1 and self.metric == "height"):
            return self.unsuppressed_record(node)
        return self.check(node)

    def _after_check(self, node: int, rec: NodeRecord) -> None:
        if rec.checked and rec.passed and rec.suppressed_rows == 0 and self.all_monotone:
            lat = self.lattice
            box = lat.box_above(node)
            self.zero.reshape(lat.heights)[box] = True
            lat.tag(self.tags, box, 1)

    def bound(self, node: int) -> float:
        """Suppression-free metric value: a lower bound of the value, monotone over the lattice."""
        b = self._bounds.get(node)
        if b is None:
            if self.metric not in HAS_LOWER_BOUND:
                b = 0.0
            elif self.metric in BOUND_WITHOUT_ROLLUP:
                b = self.metrics.bound_from_levels(self.metric, self.lattice.levels(node))
            else:
                rolled = self.efs.rollup(self.lattice.levels(node))
                b = self.metrics.value(self.metric, rolled, None)
            self._bounds[node] = b
        return b

    # --- strategies ---------------------------------------------------------------------------

    def _path(self, start: int, tags: np.ndarray) -> list[int]:
        lat = self.lattice
        score = self._path_scores  # a list: indexing a numpy array per candidate costs more
        path = [start]
        node = start
        while True:
            nxt = [s for s in lat.successors(node) if tags[s] == 0]
            if not nxt:
                return path
            # generalize first the QI whose step keeps the most distinct values (ARX-like;
            # measured on Adult k=5 with binary search: 143 checks vs 195 for "smallest relative
            # level")
            node = min(nxt, key=lambda s: (score[s], s))
            path.append(node)


    def flash(self, relaxed: bool = False) -> None:
        """Flash over the models (``relaxed=False``) or over their union-closed relaxation
        (``relaxed=True``: tags go to ``self.rtags``; the real models are evaluated in the same
        call and recorded)."""
        lat = self.lattice
        tags = self.rtags if relaxed else self.tags
        order = np.lexsort((np.arange(lat.size), lat.node_height))
        borders: list[float] = []
        for at in range(0, lat.size, 256):
            chunk = order[at:at + 256]
            # most nodes are tagged by the time they come up: skip them a chunk at a time
            for start in chunk[tags[chunk] == 0].tolist():
                if tags[start] != 0:
                    continue
                path = self._path(start, tags)
                first = self._search_path(path, tags, relaxed, borders)
                if first < len(path):
                    bisect.insort(borders, float(self._path_score[path[first]]))

    def _probe(self, node: int, tags: np.ndarray, relaxed: bool) -> bool:
        """Whether ``node`` passes: from its tag, else checked (and tags set both ways)."""
        tag = tags[node]
        if tag != 0:
            return bool(tag == 1)
        rec = self.check(node)
        passed = rec.relaxed_pass if relaxed else rec.passed
        lat = self.lattice
        if passed:
            lat.tag(tags, lat.box_above(node), 1)
        else:
            lat.tag(tags, lat.box_below(node), -1)
        self._report()
        return passed

    def _search_path(self, path: list[int], tags: np.ndarray, relaxed: bool,
                     borders: list[float]) -> int:
        """Index of the first passing node of ``path`` (``len(path)`` if none; passing is
        monotone along a path). Flash binary-searches the path; here, once earlier paths have
        shown where passing starts, the search first probes the node predicted to be the first
        passing one — the first whose score (minus the log of its number of value
        combinations, increasing along the path) reaches the ``BORDER_QUANTILE`` quantile of
        the (sorted) scores of the first passing nodes found so far — and gallops away from it
        (1, 2, 4, ... steps) until the answer is bracketed, then binary-searches the bracket.
        Any probe order gives the same tags (each follows from monotonicity); a good guess
        only saves checks of nodes far from the border (on Adult k=5 with 0% suppression most
        checks were such nodes)."""
        lo, hi = 0, len(path) - 1  # the answer lies in [lo, hi + 1]
        if borders and len(path) > 2 and BORDER_QUANTILE >= 0:
            scores = self._path_score[path]
            guess = borders[int(BORDER_QUANTILE * (len(borders) - 1))]  # borders is sorted
            g = min(max(int(np.searchsorted(scores, guess)), lo), hi)
            if self._probe(path[g], tags, relaxed):
                hi, step = g - 1, 1
                while lo <= hi:
                    p = max(g - step, lo)
                    if self._probe(path[p], tags, relaxed):
                        hi = p - 1
                        step *= 2
                    else:
                        lo = p + 1
                        break
            else:
                lo, step = g + 1, 1
                while lo <= hi:
                    p = min(g + step, hi)
                    if self._probe(path[p], tags, relaxed):
                        hi = p - 1
                        break
                    lo = p + 1
                    step *= 2
        while lo <= hi:
            mid = (lo + hi) // 2
            if self._probe(path[mid], tags, relaxed):
                hi = mid - 1
            else:
                lo = mid + 1
        return lo

    def exhaustive(self) -> None:
        lat = self.lattice
        if self.relaxed:
            # phase 1: Flash over the union-closed relaxation; a node failing it fails the
            # models, and so does everything below it
            self.flash(relaxed=True)
            hard = self.rtags == -1
            self.tags[hard & (self.tags == 0)] = -1
        prune = self.metric in BOUND_WITHOUT_ROLLUP
        for h in range(lat.max_height + 1):
            # nodes of one height cannot tag each other: check them in batches
            level = [int(n) for n in np.flatnonzero(lat.node_height == h)
                     if not self.zero[n] and int(n) not in self.records and self.tags[n] != -1]
            if prune and level:
                level = self._unprunable(level)
            for i in range(0, len(level), self.batch):
                self.check_batch(level[i:i + self.batch])
                self._report()

    def _unprunable(self, level: list[int]) -> list[int]:
        """The nodes of ``level`` (one height, all lower heights decided) that must be checked.
        A node with a passing node strictly below it is not minimal, whatever its verdict; if
        its metric's lower bound (from its levels alone) also exceeds the best value found so
        far — or equals it and the node comes later in the optimum's tie order (height, id) —
        it cannot be the optimum either: its verdict changes neither result, so it is left
        undecided (sound pruning by a bound; the nodes above it keep the passing node below
        them)."""
        lat = self.lattice
        best_val, best_key = math.inf, None
        for node, rec in self.records.items():
            if rec.passed and rec.checked:
                key = (lat.height(node), node)
                if rec.value < best_val or (rec.value == best_val and best_key is not None
                                            and key < best_key):
                    best_val, best_key = rec.value, key
        if best_key is None:
            return level
        above = lat.strictly_above(self.tags == 1)
        out = []
        for node in level:
            if above[node]:
                b = self.bound(node)
                if b > best_val or (b == best_val and (lat.height(node), node) > best_key):
                    self.pruned += 1
                    continue
            out.append(node)
        return out

    def best_first(self, starts: Sequence[int]) -> int | None:
        """Best-first by the lower bound from ``starts``; exact optimum over the passing nodes
        reachable upwards from them (all of them when starting at the bottom). Up to
        ``batch`` nodes below the current best are popped and checked together; popping more
        than strictly needed only checks extra nodes, it never skips one."""
        heap = [(self.bound(s), s) for s in starts]
        heapq.heapify(heap)
        seen = set(starts)
        best_val, best = math.inf, None
        while heap and heap[0][0] < best_val:
            group = []
            while heap and heap[0][0] < best_val and len(group) < self.batch:
                group.append(heapq.heappop(heap)[1])
            need = [n for n in group if n not in self.records and not (
                self.zero[n] or (self.tags[n] == 1 and self.metric == "height"))]
            if len(need) > 1:
                self.check_batch(need)
            for node in group:
                rec = self.exact(node)
                if rec.passed and (rec.value < best_val or (rec.value == best_val and best
                                                            is not None and node < best)):
                    best_val, best = rec.value, node
                for s in self.lattice.successors(node):
                    if s not in seen:
                        seen.add(s)
                        heapq.heappush(heap, (self.bound(s), s))
            self._report()
        return best

    def optimum_among(self, nodes: Sequence[int]) -> int | None:
        best_val, best = math.inf, None
        for node in sorted(nodes, key=lambda n: (self.lattice.height(n), n)):
            rec = self.exact(node)
            if rec.passed and rec.value < best_val:
                best_val, best = rec.value, node
        return best


def search_lattice(
    efs: EncodedFrequencySet,
    models: Sequence[Model],
    limit_rows: int,
    metric: str,
    *,
    strategy: str = "auto",
    progress: Progress | None = None,
    batch: int = 32,
) -> SearchOutcome:
    """Search the lattice of ``efs``'s hierarchies for the minimal satisfying nodes and the
    optimum under ``metric`` (see the module docstring for the strategies)."""
    if strategy not in STRATEGIES:
        raise InvalidParameterError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if math.prod(h.height for h in efs.hierarchies) >= PRIME_MIN_NODES:
        efs.prime()  # hub snapshots when the frequency set is large (no-op on small ones)
    # more hubs are made on demand (EncodedFrequencySet._hub)
    s = _Search(efs, models, limit_rows, metric, progress, batch=max(int(batch), 1))
    monotone, reason = predicate_monotone(models, limit_rows > 0)
    if strategy == "auto":
        strategy = "flash" if monotone else "exhaustive"
    if strategy == "flash" and not monotone:
        raise InvalidParameterError(f"strategy 'flash' needs a monotone predicate; {reason}")
    notes: list[str] = []
    minimal: list[int] | None
    if strategy == "flash":
        s.flash()
        passing = s.tags == 1
        minimal = s.lattice.minimal_of(passing)
        if s.metric_monotone:
            optimum = s.optimum_among(minimal)
            notes.append(f"metric {metric!r} is monotone here: the optimum is a minimal node")
        else:
            optimum = s.best_first(minimal) if minimal else None
            notes.append(f"metric {metric!r} is not monotone with suppression: best-first from "
                         f"the minimal nodes, pruned by its suppression-free lower bound")
    elif strategy == "exhaustive":
        s.exhaustive()
        passing = s.tags == 1
        minimal = s.lattice.minimal_of(passing)
        cand = [int(i) for i in np.flatnonzero(passing)]
        optimum = s.optimum_among(cand) if cand else None
        notes.append("predicate not monotone: every node that could be minimal or optimal "
                     "decided (zero-suppression passes tagged upwards only)")
        if s.pruned:
            notes.append(f"{s.pruned} node(s) with a passing node below them and a metric lower "
                         f"bound beyond the optimum were left unchecked (neither minimal nor "
                         f"optimal)")
        if s.relaxed:
            notes.append("nodes failing the union-closed relaxation ("
                         + ", ".join(m.describe() for m in s.relaxed)
                         + ") beyond the limit were tagged failing with everything below them "
                         "(Flash over the relaxation)")
    else:
        optimum = s.best_first([s.lattice.bottom])
        passing = s.tags == 1
        minimal = None
        notes.append("bounded: optimum exact by lower-bound pruning; minimal nodes not computed")
    return SearchOutcome(
        lattice=s.lattice, strategy=strategy, monotone=monotone, reason=reason,
        checked=s.checked, evaluations=s.checker.evaluations, rollups=efs.rollups,
        records=s.records, passing=passing, minimal=minimal, optimum=optimum, metric=metric,
        limit_rows=limit_rows, notes=notes, metrics=s.metrics,
    )
