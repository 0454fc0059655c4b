"""The anytime search's decomposition bound: the optimum of the problem projected onto a group of
QIs bounds the cost of those QIs at the whole problem's optimum.

For a separable metric (``height``, ``precision``, ``loss``, ``entropy``) the value at a passing
node ``x`` with suppressed rows ``R`` is a sum over the QIs, ``v(x) = sum_j v_j(x)``, where
``v_j`` sums QI ``j``'s cell costs over the retained rows plus its cost of a suppressed cell
over ``R`` (a suppressed cell never costs less than a generalized one). Project the table onto a
group ``S`` of QIs (the others summed out: :meth:`EncodedFrequencySet.project
<ldiv_polars.search.rollup.EncodedFrequencySet.project>`). When the predicate is monotone (every
model union-closed, or nothing suppressed: :func:`~ldiv_polars.search.suppression.
predicate_monotone`), ``x_S`` passes on the projection with suppressed rows ``R_S`` within
``R`` (each class of ``x_S`` is a union of classes of ``x``; a failing one contains no passing
class of ``x``), so its value there, in the whole table's units, is at most
``v_S(x) = sum_{j in S} v_j(x)`` — and at least the projection's optimum ``opt_S``. Hence the
whole optimum ``o`` satisfies ``b_S(o) + e_S(o) >= opt_S``, with ``b_S`` the group's
suppression-free cost and ``e_S = v_S - b_S`` its suppression cost, ``0 <= e_j <=``
:meth:`~ldiv_polars.search.metrics.MetricSuite.suppression_cost_max` per QI. Those are the
linear constraints :meth:`CutRelaxation.add_group
<ldiv_polars.search.anytime_cuts.CutRelaxation.add_group>` adds (docs/anonymize.md, "The
decomposition bound", states the proof). ``opt_S`` is any *proven* lower bound of the
projection's optimum: the bound of an anytime search of the projection, exact when it completes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ldiv_polars.models.base import Model
from ldiv_polars.search.metrics import entropy_bits
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.suppression import predicate_monotone

GROUP_SIZES = (4, 6, 8)
"""The sizes of the groups, one partition of the QIs per size, smallest first (small groups are
solved in well under a second; groups of 8 can take tens of seconds on 10^6 rows)."""


@dataclass(frozen=True)
class GroupBound:
    """A proven lower bound ``lower`` (in the projection's own units) of the optimum of the
    problem projected onto the QIs ``cols``; ``proven``: ``lower`` is that optimum."""

    cols: tuple[int, ...]
    lower: float
    proven: bool
    checked: int
    failures: np.ndarray | None = None
    """The projection's maximal down-set failures found (levels of ``cols``)."""


def decomposition_applies(models: Sequence[Model], limit_rows: int) -> bool:
    """Whether a passing node's projection onto any group of QIs passes on the projected table:
    the predicate is monotone (see the module docstring) and no model reads the QI values
    themselves (a population table keyed by them) or row weights.

    >>> from ldiv_polars.models import KAnonymity
    >>> decomposition_applies([KAnonymity(5)], 10)
    True
    """
    monotone, _ = predicate_monotone(models, limit_rows > 0)
    return monotone and not any(m.population_based or m.needs_weight for m in models)


def partition(order: Sequence[int], size: int) -> list[tuple[int, ...]]:
    """``order`` cut into consecutive groups of ``size``; a last group of fewer than half that
    is joined to the one before it (a small group's optimum is near 0), unless that would make
    one group of every QI.

    >>> partition([3, 1, 0, 2, 4], 2), partition([3, 1, 0, 2, 4], 4)
    ([(3, 1), (0, 2), (4,)], [(3, 1, 0, 2), (4,)])
    >>> partition([5, 3, 1, 0, 2, 4, 6], 3)
    [(5, 3, 1), (0, 2, 4, 6)]
    """
    groups = [tuple(order[i:i + size]) for i in range(0, len(order), size)]
    if len(groups) > 2 and 2 * len(groups[-1]) < size:
        groups[-2:] = [groups[-2] + groups[-1]]
    return groups


def entropy_order(efs: EncodedFrequencySet) -> list[int]:
    """The QIs by the entropy of their raw values, highest first (ties by position): QIs that
    make rows unique together land in the same group, whose projection then needs the most
    generalization (the sum of the groups' optima is highest when the need is concentrated).

    >>> import polars as pl
    >>> from ldiv_polars.core.frequency import FrequencySet
    >>> from ldiv_polars.hierarchy import Hierarchy
    >>> h = {c: Hierarchy([["a", "*"], ["b", "*"]], name=c) for c in ("x", "y")}
    >>> df = pl.DataFrame({"x": ["a", "a", "a"], "y": ["a", "b", "b"]})
    >>> entropy_order(EncodedFrequencySet.from_frame(
    ...     FrequencySet.build(df, ["x", "y"], None).materialize(), h))
    [1, 0]
    """
    ent = [entropy_bits(efs.raw_counts(i)) for i in range(len(efs.qi))]
    return sorted(range(len(ent)), key=lambda i: (-ent[i], i))


def solve_groups(efs: EncodedFrequencySet, groups: Sequence[tuple[int, ...]],
                 seconds: float,
                 solve: Callable[[EncodedFrequencySet, tuple[int, ...], float],
                                 tuple[float, bool, int, np.ndarray | None]],
                 stop: Callable[[], bool]) -> Iterator[GroupBound]:
    """Each group's :class:`GroupBound`, one at a time (the caller may use one before the next
    is solved): ``solve(projection, group, seconds)`` returns ``(proven lower bound, proven,
    nodes checked, maximal down-set failures or None)`` of the projection's optimum; the
    ``seconds`` are shared among the groups not yet solved (a group solved early leaves its
    time to the rest). Stops when ``stop()`` is true.

    >>> import polars as pl
    >>> from ldiv_polars.core.frequency import FrequencySet
    >>> from ldiv_polars.hierarchy import Hierarchy
    >>> h = {c: Hierarchy([["a", "*"], ["b", "*"]], name=c) for c in ("x", "y")}
    >>> df = pl.DataFrame({"x": ["a", "a", "b"], "y": ["a", "b", "b"]})
    >>> efs = EncodedFrequencySet.from_frame(FrequencySet.build(df, ["x", "y"], None)
    ...                                      .materialize(), h)
    >>> [g.lower for g in solve_groups(efs, [(0,), (1,)], 1.0,
    ...                                lambda p, g, s: (float(p.rollup((0,)).classes), True, 1,
    ...                                                 None),
    ...                                lambda: False)]
    [2.0, 2.0]
    """
    import time

    t0 = time.perf_counter()
    for idx, cols in enumerate(groups):
        left = seconds - (time.perf_counter() - t0)
        if stop() or left <= 0:
            return
        yield GroupBound(tuple(cols), *solve(efs.project(cols), tuple(cols),
                                             left / (len(groups) - idx)))


def maximal(levels: np.ndarray) -> np.ndarray:
    """The rows of ``levels`` (``(count, q)``) below no other row (of duplicates the first),
    in their order.

    >>> maximal(np.array([[0, 1], [1, 1], [2, 0], [1, 1]])).tolist()
    [[1, 1], [2, 0]]
    """
    keep: list[int] = []
    for i in np.argsort(-levels.sum(axis=1), kind="stable"):  # dominators come first
        if not keep or not (levels[keep] >= levels[i]).all(axis=1).any():
            keep.append(int(i))
    return levels[sorted(keep)]


def embed(failures: np.ndarray | None, cols: Sequence[int], heights: Sequence[int]
          ) -> list[tuple[int, ...]]:
    """The down-set failures of a projection onto positions ``cols`` of a larger lattice
    (``heights``) as its nodes: their levels on ``cols``, every other QI at its top. Each is a
    down-set failure there when :func:`decomposition_applies`: a node at or below it projects
    to a node at or below the failure, which fails, and a passing node's projection passes.

    >>> embed(np.array([[1, 0]]), [2, 0], [3, 4, 5])
    [(0, 3, 1)]
    """
    if failures is None:
        return []
    out = []
    for f in failures:
        x = [h - 1 for h in heights]
        for j, v in zip(cols, f):
            x[j] = int(v)
        out.append(tuple(x))
    return out
