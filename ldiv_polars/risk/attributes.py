"""Which attributes identify: for every combination of quasi-identifiers up to a size, how well
it tells the records apart (ARX's ``RiskModelAttributes``; Motwani & Xu, *Efficient algorithms
for masking and finding quasi-identifiers*, 2007).

For a combination with ``u`` classes of sizes ``n_k`` over ``N`` records:

- ``distinction = u / N`` (ARX's alpha-distinction);
- ``separation`` = the share of the ``N (N - 1) / 2`` record pairs that differ on the
  combination, ``1 - sum_k n_k (n_k - 1) / (N (N - 1))`` (ARX's alpha-separation; 0 for
  ``N < 2``, as ARX's NaN is reported);
- ``uniques``, records alone in their class, and their share ``unique_share``.

All of them from ONE frequency set: the distinct keys over all the QIs are built by one engine
group-by, and each combination is a roll-up of that small table (cost ``keys x`` the number of
combinations, :func:`attribute_cost`, bounded by ``budget``).

>>> import polars as pl
>>> df = pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 3, 3]})
>>> r = attribute_risks(df, ["a", "b"])
>>> r.select("attributes", "distinction", pl.col("separation").round(4), "uniques").rows()
[('b', 0.75, 0.8333, 2), ('a, b', 0.75, 0.8333, 2), ('a', 0.5, 0.6667, 0)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import combinations

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike
from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk.budget import DEFAULT_BUDGET, check_budget
from ldiv_polars.risk.tables import class_size_table

SCHEMA = {
    "attributes": pl.String,
    "size": pl.Int64,
    "classes": pl.Int64,
    "distinction": pl.Float64,
    "separation": pl.Float64,
    "uniques": pl.Int64,
    "unique_share": pl.Float64,
}


def attribute_cost(keys: int, attributes: int, max_size: int) -> int:
    """Rows rolled up: ``keys x`` the number of combinations of size ``<= max_size``."""
    return keys * sum(math.comb(attributes, k) for k in range(1, max_size + 1))


def _figures(sizes: pl.Series, records: int) -> tuple[int, float, float, int]:
    """Classes, distinction, separation and uniques of one combination's class sizes."""
    classes = sizes.len()
    pairs = records * (records - 1)
    same = int((sizes * (sizes - 1)).sum())
    uniques = int((sizes == 1).sum())
    return (classes, classes / records if records else 0.0,
            1.0 - same / pairs if pairs else 0.0, uniques)


def attribute_risks(
    data: TableLike | pl.DataFrame,
    qi: str | Iterable[str] | None = None,
    *,
    max_size: int | None = None,
    nulls: str = "error",
    budget: int = DEFAULT_BUDGET,
) -> pl.DataFrame:
    """One row per combination of ``qi`` of up to ``max_size`` attributes (default all):
    ``attributes`` (names joined by ``", "`` in the order of ``qi``), ``size``, ``classes``,
    ``distinction``, ``separation``, ``uniques``, ``unique_share``; ranked from the most
    identifying (highest ``unique_share``, then ``separation``, then the smaller combination).

    With ``qi``, ``data`` holds rows (one engine group-by builds the distinct keys; ``nulls`` as
    in :func:`~ldiv_polars.risk.tables.class_table`, ``"error"`` or ``"value"``); without,
    ``data`` is a class-size table (column ``n``; every other column is a QI).
    Raises :class:`InvalidParameterError` for bad parameters and
    :class:`~ldiv_polars.risk.budget.BudgetExceededError` over ``budget``.
    """
    if nulls not in ("error", "value"):
        raise InvalidParameterError(f"nulls must be 'error' or 'value', got {nulls!r}")
    keys_table = class_size_table(data, qi, nulls, "attribute_risks")
    names = [c for c in keys_table.columns if c != COUNT]
    m = len(names)
    max_size = m if max_size is None else min(require_int_at_least("max_size", max_size, 1), m)
    check_budget(attribute_cost(keys_table.height, m, max_size), budget,
                 f"attribute risks over {keys_table.height:,} distinct keys and the "
                 f"combinations of up to {max_size} of {m} attributes",
                 "lower max_size or raise budget=")
    records = int(keys_table[COUNT].sum())
    rows = []
    for size in range(1, max_size + 1):
        for combo in combinations(names, size):
            sizes = keys_table.group_by(list(combo)).agg(pl.col(COUNT).sum())[COUNT]
            classes, distinction, separation, uniques = _figures(sizes, records)
            rows.append((", ".join(combo), size, classes, distinction, separation, uniques,
                         uniques / records if records else 0.0))
    return pl.DataFrame(rows, schema=SCHEMA, orient="row").sort(
        ["unique_share", "separation", "size"], descending=[True, True, False],
        maintain_order=True)
