"""The exhaustive strategy, for a predicate "node passes" that is not monotone.

Every node that could be minimal or optimal is decided. The only tagging used is sound without
monotonicity under suppression: a node passing with *nothing* suppressed, under models that are
monotone without suppression, has only generalizations that pass with nothing suppressed
(:meth:`~ldiv_polars.search.state.SearchState.check` tags them). Two prunings, both sound:

- with the models' suppression floors (:func:`~ldiv_polars.search.suppression.relaxations`:
  per class, rows that fail at the node and at every specialization of it), Flash over "the
  floors sum within the limit" first: a node whose floors exceed the limit fails the models,
  and so does everything below it;
- going up by height, a node with a passing node strictly below it (so not minimal) whose
  metric lower bound exceeds the best value found is left unchecked (:func:`unprunable`): it
  cannot be the optimum either. The bound is the metric's suppression-free value, monotone
  over the lattice: from the levels alone for ``BOUND_WITHOUT_ROLLUP`` metrics, else from the
  node's roll-up (discernibility, aecs: the roll-up without the models' evaluation), and then
  every generalization of a node beyond the best is beyond it too, with no roll-up.
"""

from __future__ import annotations

import numpy as np

from ldiv_polars.search.flash import flash
from ldiv_polars.search.metrics import HAS_LOWER_BOUND
from ldiv_polars.search.state import SearchState


def exhaustive(state: SearchState, minimal: bool = True) -> None:
    """Decide every node that could be minimal or optimal, height by height, checking the
    nodes of one height in batches of ``state.batch`` (they cannot tag each other; each
    batch is pruned by the bounds just before its checks). ``minimal=False``: the optimum
    only (the ``bounded`` strategy): every node whose bound exceeds the best value found is
    left unchecked, with or without a passing node below it (:func:`unprunable`)."""
    lat = state.lattice
    if state.relaxed:
        flash(state, relaxed=True)
        hard = state.rtags == -1
        state.tags[hard & (state.tags == 0)] = -1
        state.checker.floors_first = False  # what is left is within the floors by its tags
    prune = state.metric in HAS_LOWER_BOUND
    for h in range(lat.max_height + 1):
        level = [int(n) for n in np.flatnonzero(lat.node_height == h)
                 if not state.zero[n] and int(n) not in state.records and state.tags[n] != -1]
        if prune and level:
            state.mark_beyond()
        for i in range(0, len(level), state.batch):
            # a batch at a time: the roll-ups a bound needs are kept for the batch's checks
            part = level[i:i + state.batch]
            if prune:
                part = unprunable(state, part, state.beyond, minimal)
            if part:
                state.check_batch(part)
            state.report()


def unprunable(state: SearchState, level: list[int],
               beyond: np.ndarray | None = None, minimal: bool = True) -> list[int]:
    """The nodes of ``level`` (one height, all lower heights decided) that must be checked.
    A node with a passing node strictly below it is not minimal, whatever its verdict; if
    its metric's lower bound (:meth:`SearchState.bound`) also exceeds the best value found so
    far, or equals it and the node comes later in the optimum's tie order (height, id), it
    cannot be the optimum either: its verdict changes neither result, so it is left undecided
    (counted in ``state.pruned``; the nodes above it keep the passing node below them).
    ``minimal=False`` (the optimum only): the same for every node, a passing node below it
    or not. ``beyond`` (one bool per node, :attr:`SearchState.beyond`): the nodes known to
    be strictly beyond the best value (a bound is monotone and the best only falls), marked
    here with every generalization of a node found beyond it, whose bound is not computed."""
    best_val, best_key = state.best_passing()
    if best_key is None:
        return level
    lat = state.lattice
    above = lat.strictly_above(state.tags == 1) if minimal else None
    out = []
    for node in level:
        if above is None or above[node]:
            if beyond is not None and beyond[node]:
                state.pruned += 1
                continue
            b = state.bound(node, keep=True)
            if b > best_val and beyond is not None:
                beyond.reshape(lat.heights)[lat.box_above(node)] = True
            if b > best_val or (b == best_val and (lat.height(node), node) > best_key):
                state.pruned += 1
                state.drop(node)
                continue
        out.append(node)
    return out
