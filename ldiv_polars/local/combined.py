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
from collections.abc import Iterable, Mapping, Sequence
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
    per node). ``details`` has the node, its loss before suppression and the nodes tried.
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
                  costs, details, t0, verify=verify, separator=separator)


def _best_node(table: KeyTable, costs: CellCosts, lattice: Lattice, hs: Sequence[Hierarchy],
               models: Sequence[Model], weights: np.ndarray, semantics: Semantics,
               method: str, time_limit: float, metric: str
               ) -> tuple[tuple[float, np.ndarray, tuple[int, ...]], int]:
    """The lattice nodes in increasing order of their suppression-free ``metric`` bound, each
    with its cells suppressed, until the next bound reaches the best total: ``((total, key
    levels, node levels), nodes tried)``."""
    bounds = np.array([costs.suite.bound_from_levels(metric, lattice.levels(n))
                       for n in range(lattice.size)])
    best: tuple[float, np.ndarray, tuple[int, ...]] | None = None
    tried = 0
    for node in np.argsort(bounds, kind="stable"):
        if best is not None and bounds[node] >= best[0]:
            break
        levels = lattice.levels(int(node))
        key_levels = _node_levels(table, costs, hs, levels, models, weights, semantics,
                                  method, time_limit)
        cells = costs.costs(metric, key_levels)
        total = float((cells * table.n[:, None]).sum()) if metric == "entropy" else \
            costs.mean(cells)
        tried += 1
        if best is None or total < best[0]:
            best = (total, key_levels, levels)
    assert best is not None  # the lattice has at least its bottom node
    return best, tried


def _node_levels(table: KeyTable, costs: CellCosts, hs: Sequence[Hierarchy],
                 levels: tuple[int, ...], models: Sequence[Model], weights: np.ndarray,
                 semantics: Semantics, method: str, time_limit: float) -> np.ndarray:
    """Each key's level per QI at node ``levels`` with the node's cells suppressed (greedy,
    then the MILP seeded with it for ``method="exact"``)."""
    gen, key_map = node_table(table, costs.raw, costs.level_maps, hs, levels)
    masks, _ = greedy_masks(gen, models, weights, semantics)
    if method == "exact":
        out = exact_masks(gen, models, weights, semantics, time_limit, incumbent=masks)
        masks = out.masks if out.masks is not None else masks
    q = len(levels)
    supp = ((masks[key_map][:, None] >> np.arange(q)) & 1).astype(bool)
    return np.where(supp, SUPPRESSED, np.array(levels)[None, :])
