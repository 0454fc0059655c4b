"""Generalization as Polars expressions: apply a hierarchy level to a column lazily.

>>> import polars as pl
>>> from ldiv_polars.hierarchy.builders import interval_hierarchy
>>> h = interval_hierarchy(range(0, 100), widths=[10])
>>> pl.DataFrame({"age": [34, 71]}).select(generalize_expr("age", h, 1)).to_series().to_list()
['30-39', '70-79']
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from ldiv_polars.core.inputs import TableLike, to_lazyframe
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.hierarchy.hierarchy import Hierarchy, as_hierarchy


def generalize_expr(col: str | pl.Expr, hierarchy: Hierarchy | pl.DataFrame, level: int) -> pl.Expr:
    """Expression mapping ``col`` (cast to String) to its level-``level`` generalization.

    Uses ``replace_strict``, so a value missing from the hierarchy makes the query fail when
    collected; call :func:`check_coverage` (or go through :func:`ldiv_polars.anonymize`, which
    validates first) to get a :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError`
    naming the values instead. Level 0 returns the value cast to String. The output keeps the
    input column's name.
    """
    h = as_hierarchy(hierarchy)
    lvl = h.check_level(level)
    expr = pl.col(col) if isinstance(col, str) else col
    s = expr.cast(pl.String)
    if lvl == 0:
        return s
    return s.replace_strict(h.column(0), h.column(lvl), return_dtype=pl.String)


def check_coverage(data: TableLike, hierarchies: Mapping[str, Hierarchy]) -> None:
    """Raise :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` when a column holds a
    value that is not a raw value of its hierarchy (reads the distinct values only)."""
    lf = to_lazyframe(data)
    names = lf.collect_schema().names()
    missing_cols = [c for c in hierarchies if c not in names]
    if missing_cols:
        raise UnknownColumnError(missing_cols, names)
    for col, h in hierarchies.items():
        distinct = lf.select(pl.col(col).cast(pl.String).unique()).collect(engine="streaming")
        as_hierarchy(h).check_covers(distinct.to_series(), column=col)


def generalize(
    data: TableLike,
    hierarchies: Mapping[str, Hierarchy | pl.DataFrame],
    levels: Mapping[str, int],
    *,
    check: bool = True,
) -> pl.LazyFrame:
    """Lazily generalize the columns in ``levels`` with their hierarchies (other columns pass
    through). With ``check=True`` coverage is verified first (one pass over distinct values).

    >>> import polars as pl
    >>> from ldiv_polars.hierarchy.builders import masking_hierarchy
    >>> df = pl.DataFrame({"zip": ["13053", "13068"], "x": [1, 2]})
    >>> generalize(df, {"zip": masking_hierarchy(df["zip"])}, {"zip": 2}).collect().rows()
    [('130**', 1), ('130**', 2)]
    """
    lf = to_lazyframe(data)
    unknown = [c for c in levels if c not in hierarchies]
    if unknown:
        raise InvalidParameterError(
            f"no hierarchy given for column(s) {', '.join(map(repr, unknown))}")
    hs = {c: as_hierarchy(hierarchies[c], name=c) for c in levels}
    if check:
        check_coverage(lf, hs)
    return lf.with_columns([generalize_expr(c, hs[c], lvl).alias(c) for c, lvl in levels.items()])
