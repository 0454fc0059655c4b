"""``generalize_and_suppress``: a lattice node, then cell suppression of what still fails,
choosing the node of least total loss.

Each node of the full-domain lattice is tried in increasing order of its loss *without*
suppression (the metric at the node's levels, :meth:`MetricSuite.bound_from_levels`), a lower
bound of its total loss since a suppressed cell costs at least its generalized value. At each
node the keys are generalized (their cells summed) and cell suppression runs on them; the node's
total loss is read per cell (:class:`~ldiv_polars.local.utility.CellCosts`). The search stops
when the next node's bound reaches the best total found: the node returned is optimal for the
chosen cell-suppression method.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.inputs import TableLike, reads_input
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.cells import prepare
from ldiv_polars.local.classes import Semantics
from ldiv_polars.local.greedy import greedy_masks
from ldiv_polars.local.keys import Importance, KeyTable
from ldiv_polars.local.milp import exact_masks
from ldiv_polars.local.plan import SUPPRESSED
from ldiv_polars.local.result import LocalResult, finish, require_feasible
from ldiv_polars.local.utility import CellCosts
from ldiv_polars.models.base import Model
from ldiv_polars.search import Lattice, prepare_hierarchies

CELL_METRICS = ("loss", "precision", "entropy")
"""Metrics summed over cells (with a level-only lower bound): the ones the node choice
minimizes."""


def node_table(table: KeyTable, raw: np.ndarray, level_maps: Sequence[Sequence[np.ndarray]],
               hs: Sequence[Hierarchy], levels: Sequence[int]) -> tuple[KeyTable, np.ndarray]:
    """The key table generalized to ``levels`` (labels as values) and each key's node key;
    ``raw``: each key's raw-value index per QI, ``level_maps``: per QI and level, raw index ->
    group code (see :class:`~ldiv_polars.local.utility.CellCosts`)."""
    codes = np.column_stack([level_maps[i][lv][raw[:, i]]
                             for i, lv in enumerate(levels)]) if table.keys else \
        np.zeros((0, len(levels)), dtype=np.int64)
    values = [pl.Series(q, h.level_codes()[lv][1], dtype=pl.String)
              for q, h, lv in zip(table.qi, hs, levels)]
    return table.coarsen(codes, values)


@reads_input
def generalize_and_suppress(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    hierarchies: Mapping[str, Hierarchy | pl.DataFrame | str | Any],
    models: Sequence[Model] | Model,
    *,
    metric: str = "loss",
    importance: Importance = None,
    semantics: Semantics = "value",
    method: str = "greedy",
    time_limit: float = 60.0,
    verify: bool = True,
    separator: str | None = None,
) -> LocalResult:
    """Full-domain generalization to a lattice node plus cell suppression, the node chosen to
    minimize the total ``metric`` (``loss``, ``precision`` or ``entropy``) of the release.
    ``method="exact"`` solves each node's suppression with the MILP (``time_limit`` seconds
    in all, shared among the nodes). ``details`` has the node, its loss before suppression
    and the nodes tried.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for an unknown ``metric``, and
    the input and parameter errors of :func:`prepare`."""
    t0 = time.perf_counter()
    if metric not in CELL_METRICS:
        raise InvalidParameterError(
            f"metric must be one of {', '.join(CELL_METRICS)}, got {metric!r}")
    lf, table, models, semantics = prepare(data, qi, sensitive, models, semantics, method,
                                           time_limit, "generalize_and_suppress()", separator)
    hs = prepare_hierarchies(table.qi, hierarchies)
    require_feasible(table, models)
    costs = CellCosts(table, hs)
    lattice = Lattice([h.height for h in hs.values()])
    best, tried = _best_node(table, costs, lattice, list(hs.values()), models,
                             table.weights(importance), semantics, method, time_limit, metric)
    total, key_levels, levels = best
    details = {"node": dict(zip(table.qi, levels)), "metric": metric, "value": total,
               "node_bound": float(costs.suite.bound_from_levels(metric, levels)),
               "nodes_tried": tried, "lattice_size": lattice.size}
    return finish(f"generalize+cells-{method}", lf, table, key_levels, models, semantics, hs,
                  costs, details, t0, verify=verify, separator=separator, source=data)


@dataclass
class _Node:
    """One node of the search: its levels and suppression-free bound, the generalized key
    table and key map, the cell masks (greedy, then exact) and the node's total metric."""

    levels: tuple[int, ...]
    bound: float
    gen: KeyTable
    key_map: np.ndarray
    masks: np.ndarray
    total: float = np.inf


def _best_node(table: KeyTable, costs: CellCosts, lattice: Lattice, hs: Sequence[Hierarchy],
               models: Sequence[Model], weights: np.ndarray, semantics: Semantics,
               method: str, time_limit: float, metric: str, *,
               clock: Callable[[], float] = time.perf_counter
               ) -> tuple[tuple[float, np.ndarray, tuple[int, ...]], int]:
    """The lattice nodes in increasing order of their suppression-free ``metric`` bound, each
    with its cells suppressed, until the next bound reaches the best total: ``((total, key
    levels, node levels), nodes tried)``. ``method="exact"``: the greedy pass first (its nodes
    include every node the exact pass visits, since the MILP, seeded with the greedy release,
    never costs more), then the MILP on those nodes within ``time_limit`` seconds *in all*
    (:func:`_exact_pass`; ``clock`` reads the time)."""
    bounds = np.array([costs.suite.bound_from_levels(metric, lattice.levels(n))
                       for n in range(lattice.size)])
    nodes: list[_Node] = []
    best = np.inf
    for node in np.argsort(bounds, kind="stable"):
        if bounds[node] >= best:
            break
        levels = lattice.levels(int(node))
        gen, key_map = node_table(table, costs.raw, costs.level_maps, hs, levels)
        masks, _ = greedy_masks(gen, models, weights, semantics)
        nodes.append(_Node(levels, float(bounds[node]), gen, key_map, masks))
        nodes[-1].total = _total(table, costs, nodes[-1], metric)
        best = min(best, nodes[-1].total)
    if method == "exact":
        nodes = _exact_pass(table, costs, nodes, models, weights, semantics, time_limit,
                            metric, clock)
    top = min(nodes, key=lambda nd: nd.total)  # first of the least: the bound order's
    return (top.total, _key_levels(top), top.levels), len(nodes)


def _exact_pass(table: KeyTable, costs: CellCosts, nodes: list[_Node], models: Sequence[Model],
                weights: np.ndarray, semantics: Semantics, time_limit: float, metric: str,
                clock: Callable[[], float]) -> list[_Node]:
    """The MILP (seeded with the node's greedy masks) on ``nodes`` in bound order, until the
    next bound reaches the best total; the nodes solved are returned. The budget is shared:
    each node gets the seconds left divided by the nodes that may still be solved (those
    whose bound is below the best total so far), so the limits passed add up to at most
    ``time_limit`` and the time a node leaves unspent goes to the next ones."""
    deadline = clock() + time_limit
    best = np.inf
    for i, nd in enumerate(nodes):
        if nd.bound >= best:
            return nodes[:i]
        pending = sum(1 for m in nodes[i:] if m.bound < best)
        share = max(deadline - clock(), 0.0) / pending
        out = exact_masks(nd.gen, models, weights, semantics, share, incumbent=nd.masks)
        if out.masks is not None:
            nd.masks = out.masks
            nd.total = _total(table, costs, nd, metric)
        best = min(best, nd.total)
    return nodes


def _key_levels(nd: _Node) -> np.ndarray:
    """Each input key's level per QI at node ``nd``, its suppressed cells at
    :data:`~ldiv_polars.local.plan.SUPPRESSED`."""
    q = len(nd.levels)
    supp = ((nd.masks[nd.key_map][:, None] >> np.arange(q)) & 1).astype(bool)
    return np.where(supp, SUPPRESSED, np.array(nd.levels)[None, :])


def _total(table: KeyTable, costs: CellCosts, nd: _Node, metric: str) -> float:
    """The node's total ``metric`` over every cell of the release."""
    cells = costs.costs(metric, _key_levels(nd))
    return float((cells * table.n[:, None]).sum()) if metric == "entropy" else \
        costs.mean(cells)
