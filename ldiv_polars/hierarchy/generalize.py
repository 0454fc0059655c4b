"""Generalization as Polars expressions: apply a hierarchy level to a column lazily.

>>> import polars as pl
>>> from ldiv_polars.hierarchy.builders import interval_hierarchy
>>> h = interval_hierarchy(range(0, 100), widths=[10])
>>> pl.DataFrame({"age": [34, 71]}).select(generalize_expr("age", h, 1)).to_series().to_list()
['30-39', '70-79']
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.hierarchy.hierarchy import Hierarchy, HierarchyValueMissingError, as_hierarchy


def generalize_expr(col: str | pl.Expr, hierarchy: Hierarchy | pl.DataFrame, level: int) -> pl.Expr:
    """Expression mapping ``col`` (cast to String) to its level-``level`` generalization.

    A value missing from the hierarchy makes the query raise
    :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` naming the column and (up to
    five of) the values when it is collected; :func:`check_coverage` finds them all first (one
    pass over the distinct values), and :func:`ldiv_polars.anonymize` validates before it
    generalizes. A null stays null. Level 0 returns the value cast to String. The output keeps
    the input column's name.

    >>> import polars as pl
    >>> from ldiv_polars.hierarchy.hierarchy import Hierarchy
    >>> h = Hierarchy([["a", "x"], ["b", "x"]], name="q")
    >>> try:
    ...     pl.DataFrame({"q": ["a", "c"]}).select(generalize_expr("q", h, 1))
    ... except HierarchyValueMissingError as e:
    ...     print(str(e).splitlines()[0])
    column 'q' holds value(s) missing from its hierarchy: 'c' (check_coverage() lists them all)
    """
    h = as_hierarchy(hierarchy)
    lvl = h.check_level(level)
    expr = pl.col(col) if isinstance(col, str) else col
    s = expr.cast(pl.String)
    if lvl == 0:
        return s
    mapping = partial(_generalize_batch, raw=h.column(0), target=h.column(lvl), name=h.name)
    return s.map_batches(mapping, return_dtype=pl.String, is_elementwise=True)


def _generalize_batch(values: pl.Series, *, raw: pl.Series, target: pl.Series,
                      name: str | None) -> pl.Series:
    """One batch of :func:`generalize_expr`: the mapped values, or the typed error naming the
    values of the batch that the hierarchy lacks."""
    out = values.replace_strict(raw, target, default=None, return_dtype=pl.String)
    missing = values.filter(out.is_null() & values.is_not_null()).unique().sort()
    if missing.len():
        # (one batch's values: a streaming query may stop at its first failing batch)
        shown = ", ".join(repr(v) for v in missing.head(5).to_list())
        more = ", ..." if missing.len() > 5 else ""
        raise HierarchyValueMissingError(
            f"column {values.name or name!r} holds value(s) missing from its hierarchy: "
            f"{shown}{more} (check_coverage() lists them all)")
    return out


@reads_input
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
    through). With ``check=True`` coverage is verified first (one pass over distinct values:
    the error of :func:`check_coverage` on a value missing from its hierarchy). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` when a column of ``levels`` has no
    hierarchy.

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
