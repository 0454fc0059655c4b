"""Missing values as wildcards: a null QI value matches every value of its column.

A record's sample frequency ``f_k`` then counts every record *compatible* with it (equal on each
column where both are non-null), and ``F_k`` sums their weights: sdcMicro's ``freqCalc``
semantics (Templ, Kowarik & Meindl 2015, J. Stat. Softw. 67(4)). Compatibility is not an
equivalence relation, so this is not a group-by; it is computed on the table of distinct keys
(nulls kept as key values), without comparing keys pairwise:

- every key has a *null pattern* (the set of its null columns) and is non-null on the others;
- a key with pattern ``P`` and one with pattern ``Q`` are compatible iff they agree on the
  columns non-null in both (``S_P & S_Q``); so for every pair of patterns the keys of ``Q`` are
  summed by those columns and joined to the keys of ``P`` (a cross join when no column is
  shared). A key's ``f_k`` is the sum over all patterns (its own included: it matches itself).

Cost: ``m^2`` hash joins for ``m`` distinct null patterns, each reading the keys of two
patterns, about ``2 m K`` rows for ``K`` distinct keys in all (:func:`wildcard_cost`). Above
``budget`` the function raises :class:`~ldiv_polars.risk.budget.BudgetExceededError` with the
figure before any join.

One deliberate difference from sdcMicro 5.8.1 (``freqCalc``, ``addAllNAtoKeys = FALSE``): with
several key variables sdcMicro does not add a record whose keys are *all* missing to the counts
of complete keys (while it counts the complete keys for it, and does add it for one key
variable). Here compatibility is symmetric: an all-missing record counts for everybody. Every
case of sdcMicro's tests is reproduced (``tests/test_risk_weights.py``).

>>> import polars as pl
>>> keys = pl.DataFrame({"a": [1, 1, None], "b": ["x", "y", "x"], "n": [2, 1, 1]})
>>> wildcard_counts(keys, ["a", "b"]).sort("a", "b", nulls_last=True).rows()
[(1, 'x', 2, 3, 3.0), (1, 'y', 1, 1, 1.0), (None, 'x', 1, 3, 3.0)]
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk.budget import DEFAULT_BUDGET, check_budget

FK = "fk"
"""Sample frequency of a key: records compatible with it (itself included)."""
FK_POPULATION = "Fk"
"""Estimated population frequency: the weights of the compatible records (``fk`` unweighted)."""

JOIN_OVERHEAD = 20_000
"""Fixed cost of one join, in rows, for :func:`wildcard_cost`."""


_PATTERN = "__pattern"
_ID = "__id"


def _patterns(table: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """``table`` with a row id and its null pattern (bit ``i`` set: ``keys[i]`` is null)."""
    mask = pl.lit(0, dtype=pl.Int64)
    for i, c in enumerate(keys):
        mask = mask + pl.col(c).is_null().cast(pl.Int64) * (1 << i)
    return table.with_columns(mask.alias(_PATTERN), pl.int_range(pl.len()).alias(_ID))


def wildcard_cost(table: pl.DataFrame, keys: Sequence[str]) -> int:
    """The work :func:`wildcard_counts` does on ``table``, in rows: ``2 m K`` rows read by the
    joins plus :data:`JOIN_OVERHEAD` per join, for ``m`` null patterns and ``K`` keys."""
    sizes = _patterns(table, keys).group_by(_PATTERN).len()["len"].to_list()
    m = len(sizes)
    return 2 * m * sum(sizes) + JOIN_OVERHEAD * m * m


def _check_table(table: pl.DataFrame, keys: list[str], budget: int) -> None:
    """The typed errors of :func:`wildcard_counts`: a key named like an output column, keys
    that are not distinct, a cost over ``budget``."""
    clash = [c for c in keys if c in (FK, FK_POPULATION)]
    if clash:
        raise InvalidParameterError(f"key column(s) {clash} clash with the output columns")
    if table.select(keys).is_duplicated().any():
        raise InvalidParameterError("wildcard_counts needs distinct keys (a class-size table)")
    cost = wildcard_cost(table, keys)
    if cost > budget:
        with_nulls = table.select(pl.any_horizontal(pl.col(keys).is_null())).to_series().sum()
        check_budget(cost, budget,
                     f"matching missing values as wildcards over {table.height:,} distinct keys "
                     f"({with_nulls:,} with missing values)",
                     "raise budget=, or generalize or impute the columns with nulls")


def _pattern_joins(tagged: pl.DataFrame, keys: list[str], count: str) -> list[pl.LazyFrame]:
    """For every pair of null patterns (p, q), the records of pattern q compatible with each
    key of pattern p (``(_ID, count, __w)``): joined on the QIs set in both, a cross join when
    none is."""
    by_pattern = {p[0]: frame for p, frame in tagged.group_by(_PATTERN)}
    parts: list[pl.LazyFrame] = []
    for p, rows_p in by_pattern.items():
        left = rows_p.lazy()
        for q, rows_q in by_pattern.items():
            shared = [c for i, c in enumerate(keys) if not (p >> i) & 1 and not (q >> i) & 1]
            if shared:
                right = rows_q.lazy().group_by(shared).agg(pl.col(count).sum(),
                                                           pl.col("__w").sum())
                joined = left.select(_ID, *shared).join(right, on=shared, how="inner")
            else:
                right = rows_q.lazy().select(pl.col(count).sum(), pl.col("__w").sum())
                joined = left.select(_ID).join(right, how="cross")
            parts.append(joined.select(_ID, count, "__w"))
    return parts


def wildcard_counts(
    table: pl.DataFrame,
    keys: Sequence[str],
    *,
    count: str = COUNT,
    weight: str | None = None,
    budget: int = DEFAULT_BUDGET,
) -> pl.DataFrame:
    """The table of distinct ``keys`` (``count`` records each, ``weight`` their weight sum if
    given) with two more columns: ``fk``, the records compatible with the key, and ``Fk``, their
    weight sum (``fk`` as a float when unweighted).

    Raises :class:`~ldiv_polars.risk.budget.BudgetExceededError` when :func:`wildcard_cost` exceeds ``budget`` and
    :class:`InvalidParameterError` when the keys are not distinct or a key is named ``fk`` /
    ``Fk``.
    """
    keys = list(keys)
    _check_table(table, keys, budget)
    w = pl.col(weight).cast(pl.Float64) if weight else pl.col(count).cast(pl.Float64)
    if table.height == 0:
        return table.with_columns(pl.col(count).cast(pl.Int64).alias(FK), w.alias(FK_POPULATION))
    tagged = _patterns(table, keys).with_columns(w.alias("__w"))
    parts = _pattern_joins(tagged, keys, count)
    totals = (
        pl.concat(parts)
        .group_by(_ID)
        .agg(pl.col(count).sum().cast(pl.Int64).alias(FK), pl.col("__w").sum().alias(FK_POPULATION))
        .collect()
    )
    return (
        tagged.join(totals, on=_ID, how="left")
        .sort(_ID)
        .drop(_ID, _PATTERN, "__w")
    )
