"""``local_recode``: ARX-style local recoding, every record released at a level of its own.

Round 1 runs the lattice search (:func:`~ldiv_polars.search.search_lattice`, the optimum under
``metric`` with at most ``suppression`` of the round's records suppressed) on the whole table;
the classes that pass at the chosen node are released at it, the records of the failing
(suppressed) classes form the next round's table, which gets a node of its own, and so on until
every record is released, a round releases nothing, or ``max_rounds`` is reached. What is left
is suppressed (every QI null). Each released class passes on its own; classes of different
rounds that carry the same labels merge, which keeps them passing for the union-closed models
this accepts (k-anonymity, distinct/entropy/recursive l-diversity, alpha-k); if the residue's
all-null class fails, the smallest released classes join it until it passes. The output is then
re-verified as a whole by :func:`ldiv_polars.check`'s routine (nulls as values), and each
record carries the levels it was released at (``ldiv_level_<qi>``; null where suppressed).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.batches import single_parquet_file
from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.classes import STAR, class_verdicts, group_sum, unique_rows
from ldiv_polars.local.combined import node_table
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.local.plan import SUPPRESSED, build_plan, released_codes
from ldiv_polars.local.result import LocalResult, finish, require_feasible
from ldiv_polars.local.utility import CellCosts
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import check_models
from ldiv_polars.search import (
    METRICS,
    EncodedFrequencySet,
    prepare_hierarchies,
    search_lattice,
    suppression_limit_rows,
)


@reads_input
def local_recode(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    hierarchies: Mapping[str, Hierarchy | pl.DataFrame | str | Any],
    models: Sequence[Model] | Model,
    *,
    suppression: float = 0.1,
    metric: str = "loss",
    max_rounds: int = 10,
    verify: bool = True,
    separator: str | None = None,
) -> LocalResult:
    """Local recoding by rounds of optimal full-domain generalization (see the module
    docstring). ``details["rounds"]`` lists each round's node and records released. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for an unknown ``metric``, a
    ``suppression`` outside [0, 1], ``max_rounds`` below 1, a model comparing classes with the
    table (``needs_q``), and the input errors of reading ``data``."""
    t0 = time.perf_counter()
    if metric not in METRICS:
        raise InvalidParameterError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    require_real("suppression", suppression, low=0.0, high=1.0)
    max_rounds = require_int_at_least("max_rounds", max_rounds, 1)
    lf = to_lazyframe(data, separator=separator)
    table = KeyTable.build(lf, qi, sensitive, parquet=single_parquet_file(data))
    models = check_models(models, table.sensitive, required_by="local_recode()")
    global_ = [m.describe() for m in models if m.needs_q]
    if global_:
        raise InvalidParameterError(
            f"local_recode() does not take models comparing classes with the table "
            f"({', '.join(global_)}): each round's table is a part of it")
    hs = prepare_hierarchies(table.qi, hierarchies)
    require_feasible(table, models)
    costs = CellCosts(table, hs)
    levels, open_keys, rounds = _rounds(table, costs, hs, models, suppression, metric,
                                        max_rounds)
    absorbed = _close(table, levels, hs, models)
    details = {"rounds": rounds, "records_left": int(table.n[open_keys].sum()),
               "records_absorbed": absorbed, "suppression": suppression, "metric": metric}
    return finish("local-recoding", lf, table, levels, models, "value", hs, costs, details,
                  t0, verify=verify, separator=separator, level_columns=True,
                  source=data)


def _rounds(table: KeyTable, costs: CellCosts, hs: Mapping[str, Hierarchy],
            models: Sequence[Model], suppression: float, metric: str, max_rounds: int
            ) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """The rounds: each releases the keys passing at the optimal node of those still open.
    Returns the keys' levels (:data:`SUPPRESSED` for the keys left open), the open keys and
    each round's node and records."""
    levels = np.full((table.keys, len(table.qi)), SUPPRESSED, dtype=np.int64)
    open_keys = np.arange(table.keys)
    rounds: list[dict[str, Any]] = []
    while open_keys.size and len(rounds) < max_rounds:
        node = _round_node(table.subset(open_keys), hs, models, suppression, metric)
        if node is None:
            break
        released = passing_at(table, costs, hs, open_keys, node, models)
        if not released.size:
            break
        levels[released] = node
        open_keys = np.setdiff1d(open_keys, released)
        rounds.append({"node": dict(zip(table.qi, (int(v) for v in node))),
                       "records": int(table.n[released].sum())})
    return levels, open_keys, rounds


def _round_node(part: KeyTable, hs: Mapping[str, Hierarchy], models: Sequence[Model],
                suppression: float, metric: str) -> tuple[int, ...] | None:
    """The lattice search's optimum on ``part`` (None when no node meets the limit)."""
    fs = FrequencySet(part.cells_frame().lazy(), part.qi, part.sensitive)
    efs = EncodedFrequencySet(fs, hs)
    outcome = search_lattice(efs, models, suppression_limit_rows(suppression, part.total),
                             metric)
    return None if outcome.optimum is None else outcome.lattice.levels(outcome.optimum)


def passing_at(table: KeyTable, costs: CellCosts, hs: Mapping[str, Hierarchy],
                keys: np.ndarray, node: Sequence[int], models: Sequence[Model]) -> np.ndarray:
    """The keys among ``keys`` whose class at ``node`` (among ``keys``) passes."""
    gen, key_map = node_table(table.subset(keys), costs.raw[keys], costs.level_maps,
                              list(hs.values()), node)
    ok = class_verdicts(gen.histogram(), models, table.s_values, table.reference())
    return keys[ok[key_map]]


def _close(table: KeyTable, levels: np.ndarray, hs: Mapping[str, Hierarchy],
           models: Sequence[Model]) -> int:
    """Make every class of the release pass (own value: a class is a released tuple of labels
    and nulls): a failing class other than the all-null one is suppressed; a failing all-null
    class takes the smallest other class; until every class passes (at worst everything is
    suppressed: the whole table, which passes). Returns the records moved."""
    moved = 0
    while True:
        pcodes, kp = unique_rows(released_codes(build_plan(table, levels, hs)))
        hist = group_sum(kp, table.histogram(), pcodes.shape[0])
        ok = class_verdicts(hist, models, table.s_values, table.reference())
        if ok.all():
            return moved
        null = np.flatnonzero((pcodes == STAR).all(axis=1))
        bad = [int(p) for p in np.flatnonzero(~ok) if not (null.size and p == null[0])]
        if not bad:
            size = hist.sum(axis=1).astype(np.float64)
            size[null[0]] = np.inf
            bad = [int(np.argmin(size))]
        for p in bad:
            keys = np.flatnonzero(kp == p)
            levels[keys] = SUPPRESSED
            moved += int(table.n[keys].sum())
