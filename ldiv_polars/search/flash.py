"""The Flash strategy (Kohlmayer et al.), for a monotone predicate "node passes".

Bottom-up over the lattice by height; from every untagged node a path is built upwards through
untagged nodes (:func:`path_from`) and searched for its first passing node
(:func:`first_passing`). A passing node tags all its generalizations as passing, a failing node
all its specializations as failing (*predictive tagging*); every tag follows from monotonicity,
so the set of minimal passing nodes is exact. Flash binary-searches each path; here, once
earlier paths have shown where passing starts, the search first probes the node predicted to be
the first passing one and gallops from it: any probe order gives the same tags, a good guess
only spares checks of nodes far from the border.

The same search runs over "the models' suppression floors sum within the limit"
(``relaxed=True``, tags in ``state.rtags``): the first phase of :func:`~ldiv_polars.search.exhaustive.exhaustive`.
"""

from __future__ import annotations

import bisect

import numpy as np

from ldiv_polars.search.state import SearchState
from ldiv_polars.search.tuning import TUNING


def flash(state: SearchState, relaxed: bool = False) -> None:
    """Tag every node of the lattice by Flash over the models (``relaxed=False``: tags in
    ``state.tags``) or over their suppression floors (``relaxed=True``: tags in
    ``state.rtags``; the real models are evaluated in the same checks and recorded).
    With ``state.within_bound`` the nodes whose metric bound exceeds the best value found
    (:meth:`~ldiv_polars.search.state.SearchState.mark_beyond`) are left out: neither
    started from nor on a path (the optimum only; their tags stay unknown)."""
    lat = state.lattice
    tags = state.rtags if relaxed else state.tags
    beyond = state.beyond if state.within_bound else None
    # by height, then id (a stable sort; as int16, heights small, numpy's radix sort)
    order = np.argsort(lat.node_height.astype(np.int16), kind="stable")
    borders: list[float] = []
    for at in range(0, lat.size, 256):
        chunk = order[at:at + 256]
        # most nodes are tagged by the time they come up: skip them a chunk at a time
        todo = tags[chunk] == 0
        if beyond is not None:
            todo &= ~state.mark_beyond()[chunk]
        for start in chunk[todo].tolist():
            if tags[start] != 0 or (beyond is not None and state.mark_beyond()[start]):
                continue
            path = path_from(state, start, tags, beyond)
            first = first_passing(state, path, tags, relaxed, borders)
            if first < len(path):
                bisect.insort(borders, float(state.path_score[path[first]]))


def path_from(state: SearchState, start: int, tags: np.ndarray,
              beyond: np.ndarray | None = None) -> list[int]:
    """A path upwards from ``start`` through untagged nodes (and not ``beyond``, when
    given): each step generalizes the QI whose step keeps the most value combinations
    (ARX-like; ties by node id)."""
    lat = state.lattice
    score = state.path_scores  # a list: indexing a numpy array per candidate costs more
    path = [start]
    node = start
    while True:
        nxt = [s for s in lat.successors(node)
               if tags[s] == 0 and (beyond is None or not beyond[s])]
        if not nxt:
            return path
        node = min(nxt, key=lambda s: (score[s], s))
        path.append(node)


def probe(state: SearchState, node: int, tags: np.ndarray, relaxed: bool) -> bool:
    """Whether ``node`` passes: from its tag, else checked, and the tags it implies set (a
    pass tags its generalizations, a failure its specializations)."""
    tag = tags[node]
    if tag != 0:
        return bool(tag == 1)
    rec = state.check(node)
    passed = rec.relaxed_pass if relaxed else rec.passed
    lat = state.lattice
    if passed:
        lat.tag(tags, lat.box_above(node), 1)
    else:
        lat.tag(tags, lat.box_below(node), -1)
    state.report()
    return passed


def first_passing(state: SearchState, path: list[int], tags: np.ndarray, relaxed: bool,
                  borders: list[float]) -> int:
    """Index of the first passing node of ``path`` (``len(path)`` if none; passing is
    monotone along a path). ``borders``: the sorted scores of the first passing nodes of
    earlier paths. With some, the node predicted to be the first passing one (the first whose
    score reaches their ``TUNING.border_quantile`` quantile; the score, minus the log of the
    number of value combinations, increases along a path) is probed first, then the search
    gallops away from it (1, 2, 4, ... steps) until the answer is bracketed; the bracket is
    binary-searched."""
    lo, hi = 0, len(path) - 1  # the answer lies in [lo, hi + 1]
    quantile = TUNING.border_quantile
    if borders and len(path) > 2 and quantile >= 0:
        scores = state.path_score[path]
        guess = borders[int(quantile * (len(borders) - 1))]
        g = min(max(int(np.searchsorted(scores, guess)), lo), hi)
        lo, hi = _gallop(state, path, tags, relaxed, g, lo, hi)
    while lo <= hi:
        mid = (lo + hi) // 2
        if probe(state, path[mid], tags, relaxed):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _gallop(state: SearchState, path: list[int], tags: np.ndarray, relaxed: bool, g: int,
            lo: int, hi: int) -> tuple[int, int]:
    """Narrow ``[lo, hi + 1]`` (where the first passing node of ``path`` lies) by probing the
    guess ``g``, then 1, 2, 4, ... steps away from it, down if it passes, up if it fails."""
    if probe(state, path[g], tags, relaxed):
        hi, step = g - 1, 1
        while lo <= hi:
            p = max(g - step, lo)
            if probe(state, path[p], tags, relaxed):
                hi = p - 1
                step *= 2
            else:
                return p + 1, hi
        return lo, hi
    lo, step = g + 1, 1
    while lo <= hi:
        p = min(g + step, hi)
        if probe(state, path[p], tags, relaxed):
            return lo, p - 1
        lo = p + 1
        step *= 2
    return lo, hi

