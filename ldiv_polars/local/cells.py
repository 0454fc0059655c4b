"""``suppress_cells``: the fewest (weighted) QI cells suppressed so that every class passes.

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> df = pl.DataFrame({"zip": ["a", "a", "a", "b"], "age": [1, 1, 2, 2], "s": list("xyzx")})
>>> res = suppress_cells(df, ["zip", "age"], "s", KAnonymity(2), method="exact")
>>> res.cells_suppressed, res.utility["cells_suppressed"], res.verification.passed
(2, {'zip': 2, 'age': 0}, True)
>>> sorted(res.output.collect().rows(), key=str)
[('a', 1, 'x'), ('a', 1, 'y'), (None, 2, 'x'), (None, 2, 'z')]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl

from ldiv_polars.core.batches import single_parquet_file
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.local.classes import Semantics, check_semantics
from ldiv_polars.local.greedy import greedy_masks, mask_costs
from ldiv_polars.local.keys import Importance, KeyTable
from ldiv_polars.local.milp import exact_masks, exact_supported
from ldiv_polars.local.plan import SUPPRESSED
from ldiv_polars.local.result import LocalResult, finish, require_feasible
from ldiv_polars.local.utility import CellCosts, flat_hierarchies
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import check_models

METHODS = ("greedy", "exact")


def prepare(data: TableLike, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
            models: Sequence[Model] | Model, semantics: str, method: str, time_limit: float,
            caller: str, separator: str | None
            ) -> tuple[pl.LazyFrame, KeyTable, list[Model], Semantics]:
    """The arguments every cell-suppression entry point shares, validated (typed errors), and
    the key table (one pass)."""
    semantics_ = check_semantics(semantics)
    if method not in METHODS:
        raise InvalidParameterError(f"method must be 'greedy' or 'exact', got {method!r}")
    require_real("time_limit", time_limit, low=0.0)
    lf = to_lazyframe(data, separator=separator)
    table = KeyTable.build(lf, qi, sensitive, parquet=single_parquet_file(data))
    checked = check_models(models, table.sensitive, required_by=caller)
    if method == "exact":
        exact_supported(checked, semantics_)
    return lf, table, checked, semantics_


@reads_input
def suppress_cells(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    importance: Importance = None,
    semantics: Semantics = "value",
    method: str = "greedy",
    time_limit: float = 60.0,
    verify: bool = True,
    separator: str | None = None,
) -> LocalResult:
    """Suppress (write as null) the fewest weighted QI cells so that every class of the
    release satisfies every model; every row is kept.

    ``semantics``: ``"value"`` (a suppressed cell is a value of its own) or ``"wildcard"``
    (it matches any value; a record's class is every record compatible with it); see
    ``docs/local.md``. ``importance``: see :data:`~ldiv_polars.local.keys.Importance`.
    ``method``: ``"greedy"`` (any model) or ``"exact"`` (a MILP solved by HiGHS within
    ``time_limit`` seconds, seeded with the greedy release; k-anonymity, and distinct
    l-diversity under own-value semantics; ``details`` has its status, bound and gap).
    The release is re-verified from its rows (``verify=False``: :meth:`LocalResult.sink`
    verifies what it writes). Raises :class:`~ldiv_polars.local.result.InfeasibleError` when
    the whole table fails a model.
    """
    t0 = time.perf_counter()
    lf, table, models, semantics = prepare(data, qi, sensitive, models, semantics, method,
                                           time_limit, "suppress_cells()", separator)
    weights = table.weights(importance)
    require_feasible(table, models)
    masks, rounds = greedy_masks(table, models, weights, semantics)
    cost = mask_costs(weights)
    details: dict[str, object] = {"greedy_cost": float(table.n @ cost[masks]),
                                  "greedy_rounds": rounds, "keys": table.keys}
    if method == "exact":
        out = exact_masks(table, models, weights, semantics, time_limit, incumbent=masks)
        if out.masks is not None:
            masks = out.masks
        details.update(status=out.status, objective=out.objective, bound=out.bound,
                       gap=out.gap, solve_s=round(out.seconds, 3), variables=out.variables,
                       constraints=out.constraints, space=out.space, steps=out.steps,
                       release_from=_source(out.steps.get("found_by")))
    details["cost"] = float(table.n @ cost[masks])
    q = len(table.qi)
    levels = np.where(((masks[:, None] >> np.arange(q)) & 1).astype(bool), SUPPRESSED, 0)
    return finish(f"cells-{method}", lf, table, levels, models, semantics, None,
                  CellCosts(table, flat_hierarchies(table)), details, t0, verify=verify,
                  separator=separator, source=data)


def _source(found_by: object) -> str:
    """The method that found the exact method's release: ``"greedy"`` (the incumbent it was
    seeded with, e.g. when the time limit left no solver phase), ``"dive"``, ``"near"`` or
    ``"milp"``."""
    return "greedy" if found_by in (None, "incumbent") else str(found_by)
