"""Optimum searches by a lower bound, and the optimum among given nodes.

:func:`best_first` pops nodes by the metric's suppression-free value, a monotone lower bound of
the value with suppression, and stops when the bound reaches the best exact value found: the
optimum over the passing nodes reachable upwards from the start nodes is exact (from Flash's
minimal nodes when the metric is not monotone with suppression; the ``bounded`` strategy prunes
by the same bound inside Flash and the exhaustive walk instead: ``strategies._by_bounded``).
:func:`optimum_among` is the optimum of a
given set of nodes (Flash's minimal nodes under a monotone metric, the exhaustive strategy's
passing nodes).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ldiv_polars.search.state import SearchState


def best_first(state: SearchState, starts: Sequence[int]) -> int | None:
    """The optimum (least value, ties to the smaller node id) over the passing nodes reachable
    upwards from ``starts``, None if none passes. Up to ``state.batch`` nodes below the
    current best are popped and checked together; popping more than strictly needed only
    checks extra nodes, it never skips one."""
    heap = [(state.bound(s), s) for s in starts]
    heapq.heapify(heap)
    seen = set(starts)
    best_val, best = math.inf, None
    while heap and heap[0][0] < best_val:
        group = []
        while heap and heap[0][0] < best_val and len(group) < state.batch:
            group.append(heapq.heappop(heap)[1])
        need = [n for n in group if n not in state.records and not state.implied(n)]
        if len(need) > 1:
            state.check_batch(need)
        for node in group:
            rec = state.exact(node)
            if rec.passed and (rec.value < best_val or (rec.value == best_val and best
                                                        is not None and node < best)):
                best_val, best = rec.value, node
            for s in state.lattice.successors(node):
                if s not in seen:
                    seen.add(s)
                    heapq.heappush(heap, (state.bound(s), s))
        state.report()
    return best


def optimum_among(state: SearchState, nodes: Sequence[int]) -> int | None:
    """The passing node of ``nodes`` with the least exact value, ties to the lower height then
    the smaller id; None if none passes."""
    best_val, best = math.inf, None
    for node in sorted(nodes, key=lambda n: (state.lattice.height(n), n)):
        rec = state.exact(node)
        if rec.passed and rec.value < best_val:
            best_val, best = rec.value, node
    return best
