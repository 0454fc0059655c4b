"""Optimum searches by a lower bound: the ``bounded`` strategy, and the optimum among given nodes.

:func:`best_first` pops nodes by the metric's suppression-free value, a monotone lower bound of
the value with suppression, and stops when the bound reaches the best exact value found: the
optimum over the passing nodes reachable upwards from the start nodes is exact (all nodes from
the bottom: the ``bounded`` strategy for a monotone predicate, which computes no minimal set;
from Flash's minimal nodes when the metric is not monotone with suppression). When "node
passes" is monotone (``probe=True``), a popped node not yet known is first decided by Flash's
search of a path upwards from it (:func:`~ldiv_polars.search.flash.first_passing`): a failing
node is then known without its own roll-up, usually by the check of a much smaller
generalization whose failure tags everything below it. (For a predicate that is not monotone
the ``bounded`` strategy prunes by the same bound inside Flash over the floors and the
exhaustive walk instead: ``strategies._by_bounded``.) :func:`optimum_among` is the optimum of
a given set of nodes (Flash's minimal nodes under a monotone metric, the exhaustive strategy's
passing nodes).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence

from ldiv_polars.search.flash import first_passing, path_from
from ldiv_polars.search.state import SearchState


def best_first(state: SearchState, starts: Sequence[int], probe: bool = False) -> int | None:
    """The optimum (least value, ties to the lower height then the smaller node id, as
    :func:`optimum_among`) over the passing nodes reachable upwards from ``starts``, None if
    none passes. Up to ``state.batch`` nodes below the current best are popped and checked
    together; popping more than strictly needed only checks extra nodes, it never skips one.
    A node whose bound equals the best value is still checked when it would win the tie
    (:func:`_may_win`). ``probe`` (only for a monotone predicate, whose tags ``state.tags``
    then hold): popped nodes not tagged yet are decided first by :func:`_decide`, and the
    ones tagged failing are not checked."""
    heap = [(state.bound(s), s) for s in starts]
    heapq.heapify(heap)
    seen = set(starts)
    best_val, best = math.inf, None
    tags = state.tags
    borders: list[float] = []
    while heap and heap[0][0] <= best_val:
        group = []
        while heap and heap[0][0] <= best_val and len(group) < state.batch:
            bound, node = heapq.heappop(heap)
            if _may_win(state, bound, node, best_val, best):
                group.append(node)  # (else neither it nor a node above it can win)
        if probe:
            for node in group:
                if tags[node] == 0:
                    _decide(state, node, borders)
        need = [n for n in group if n not in state.records and not state.implied(n)
                and not (probe and tags[n] == -1)]
        if len(need) > 1:
            state.check_batch(need)
        for node in group:
            rec = None if probe and tags[node] == -1 else state.exact(node)
            if rec is not None and rec.passed and _may_win(state, rec.value, node, best_val,
                                                           best):
                best_val, best = rec.value, node
            for s in state.lattice.successors(node):
                if s not in seen:
                    seen.add(s)
                    heapq.heappush(heap, (state.bound(s), s))
        state.report()
    return best


def _may_win(state: SearchState, value: float, node: int, best_val: float,
             best: int | None) -> bool:
    """Whether a node of value (or bound) ``value`` beats the best so far: a smaller value,
    or the same value at a lower height, or the same height and a smaller id. (A node whose
    bound ties and which loses the tie cannot win, nor can a node above it: its bound is at
    least as large and its height larger.)"""
    if value != best_val or best is None:
        return value < best_val
    lat = state.lattice
    return (lat.height(node), node) < (lat.height(best), best)


def _decide(state: SearchState, node: int, borders: list[float]) -> None:
    """Tag ``node`` (untagged; the predicate monotone) by Flash's search of a path upwards
    from it (:func:`~ldiv_polars.search.flash.first_passing`, ``borders`` its guesses so far):
    if it passes, it was checked (the first node of its path); if it fails, a node of the path
    at or above it failed and tagged it."""
    path = path_from(state, node, state.tags)
    first = first_passing(state, path, state.tags, False, borders)
    if first < len(path):
        bisect.insort(borders, float(state.path_score[path[first]]))


def optimum_among(state: SearchState, nodes: Sequence[int]) -> int | None:
    """The passing node of ``nodes`` with the least exact value, ties to the lower height then
    the smaller id; None if none passes."""
    best_val, best = math.inf, None
    for node in sorted(nodes, key=lambda n: (state.lattice.height(n), n)):
        rec = state.exact(node)
        if rec.passed and rec.value < best_val:
            best_val, best = rec.value, node
    return best
