"""The release plan: one row per distinct key saying how its records are released.

A plan is a plain table (no code): the raw QI values of each key, the *level* each QI is
released at (0: the raw value; ``h >= 1``: the label of level ``h`` of the QI's hierarchy;
:data:`SUPPRESSED`: null) and the released value itself. :meth:`ReleasePlan.apply` releases any
table holding those keys with one lazy left join on the raw QI values, so the rows stream
through and any engine with a join (DuckDB: ``SELECT ... FROM data JOIN plan USING (qi...)``,
:func:`plan_sql`; Spark: :func:`apply_spark`) applies the same plan. Counts of suppressed cells and touched records come from the plan and
are re-counted on the output by :mod:`ldiv_polars.local.verify`.

>>> import numpy as np, polars as pl
>>> from ldiv_polars.local.keys import KeyTable
>>> df = pl.DataFrame({"zip": ["a", "a", "b"], "age": [1, 1, 2], "s": ["x", "y", "x"]})
>>> t = KeyTable.build(df, ["zip", "age"], "s")
>>> plan = build_plan(t, np.array([[0, 0], [0, SUPPRESSED]]))
>>> plan.suppressed_cells, plan.records_touched
({'zip': 0, 'age': 1}, 1)
>>> plan.apply(df).sort("zip").collect().rows()
[('a', 1, 'x'), ('a', 1, 'y'), ('b', None, 'x')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.engines.base import held_enum
from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.inputs import TableLike, to_lazyframe
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.keys import KeyTable

SUPPRESSED = -1
"""The level of a suppressed cell (released as null)."""
LEVEL_PREFIX = "ldiv_level_"
"""Per-record level columns added by :meth:`ReleasePlan.apply` with ``levels=True``."""
_OUT = "__ldiv_out_"
_LEVEL = "__ldiv_level_"


@dataclass(frozen=True)
class ReleasePlan:
    """Per distinct key: raw QI values, released values (``__ldiv_out_<i>``), levels
    (``__ldiv_level_<i>``, Int8) and the key's rows ``n``."""

    qi: tuple[str, ...]
    table: pl.DataFrame

    def level_array(self) -> np.ndarray:
        """``(keys, q)`` levels."""
        return np.column_stack([self.table.get_column(f"{_LEVEL}{i}").to_numpy()
                                for i in range(len(self.qi))]).astype(np.int64)

    @property
    def rows(self) -> int:
        """The number of records the plan releases."""
        return int(self.table.get_column(COUNT).sum())

    @property
    def suppressed_cells(self) -> dict[str, int]:
        """Suppressed (null) cells per QI."""
        lv, n = self.level_array(), self.table.get_column(COUNT).to_numpy()
        return {q: int(n[lv[:, i] == SUPPRESSED].sum()) for i, q in enumerate(self.qi)}

    @property
    def records_touched(self) -> int:
        """Records with at least one QI not released as its raw value."""
        lv, n = self.level_array(), self.table.get_column(COUNT).to_numpy()
        return int(n[(lv != 0).any(axis=1)].sum())

    @property
    def records_suppressed(self) -> int:
        """Records with every QI suppressed."""
        lv, n = self.level_array(), self.table.get_column(COUNT).to_numpy()
        return int(n[(lv == SUPPRESSED).all(axis=1)].sum()) if lv.size else 0

    def apply(self, data: TableLike, *, levels: bool = False,
              separator: str | None = None) -> pl.LazyFrame:
        """``data`` released: a lazy left join on the raw QI values replaces each QI by its
        released value (same column order; ``levels=True`` appends ``ldiv_level_<qi>``
        Int8 columns, null where suppressed). Every row is kept (the plan holds every key of
        the table it was built from; a key missing from it would come out with every QI
        null, which the verifier's counts catch). Row order is not preserved. Raises
        :class:`~ldiv_polars.errors.InvalidParameterError` when ``levels=True`` and the input
        already has a ``ldiv_level_<qi>`` column, and the input errors of reading ``data``."""
        lf = to_lazyframe(data, separator=separator)
        names = lf.collect_schema().names()
        clash = [f"{LEVEL_PREFIX}{q}" for q in self.qi if f"{LEVEL_PREFIX}{q}" in names]
        if levels and clash:
            raise InvalidParameterError(f"the input already has column(s) {clash}")
        q = len(self.qi)
        side = [*self.qi, *(f"{_OUT}{i}" for i in range(q))]
        if levels:
            side += [f"{_LEVEL}{i}" for i in range(q)]
        joined = lf.join(self.table.select(side).lazy(), on=list(self.qi), how="left")
        out = [pl.col(f"{_OUT}{self.qi.index(c)}").alias(c) if c in self.qi else pl.col(c)
               for c in names]
        if levels:
            out += [pl.when(pl.col(f"{_LEVEL}{i}") >= 0).then(pl.col(f"{_LEVEL}{i}"))
                    .alias(f"{LEVEL_PREFIX}{c}") for i, c in enumerate(self.qi)]
        return joined.select(out)


def apply_spark(plan: ReleasePlan, data: Any, *, levels: bool = False) -> Any:
    """``data`` (a Spark DataFrame, a path or a frame Spark reads:
    :func:`ldiv_polars.core.engines.spark.read`) released by Spark: the plan (broadcast, it is
    one row per key) left-joined on the raw QI values, each QI replaced by its released
    value, in ``data``'s column order (``levels=True``: the ``ldiv_level_<qi>`` columns
    appended, null where suppressed) -- the rows of :meth:`ReleasePlan.apply` (tested). Needs
    the ``spark`` extra; returns a lazy Spark DataFrame."""
    from pyspark.sql import functions as F

    from ldiv_polars.core.engines import spark as sp

    df = sp.read(data)
    q = len(plan.qi)
    side = [*plan.qi, *(f"{_OUT}{i}" for i in range(q))]
    if levels:
        side += [f"{_LEVEL}{i}" for i in range(q)]
    names = list(df.columns)
    keyed = plan.table.select(side).rename({c: f"{_OUT}key{i}" for i, c in enumerate(plan.qi)})
    right = F.broadcast(sp.session_of(df).createDataFrame(keyed.to_arrow()))
    on = None
    for i, c in enumerate(plan.qi):
        term = sp.col(c) == F.col(f"{_OUT}key{i}")
        on = term if on is None else on & term
    joined = df.join(right, on, "left")
    out = [F.col(f"{_OUT}{plan.qi.index(c)}").alias(c) if c in plan.qi else sp.col(c)
           for c in names]
    if levels:
        out += [F.when(F.col(f"{_LEVEL}{i}") >= 0, F.col(f"{_LEVEL}{i}"))
                .alias(f"{LEVEL_PREFIX}{c}") for i, c in enumerate(plan.qi)]
    return joined.select(*out)


def plan_sql(plan: ReleasePlan, columns: Sequence[str], data: str = "data",
             table: str = "plan") -> str:
    """The SQL (DuckDB, any engine with ``JOIN ... USING``) releasing the relation ``data``
    (columns ``columns``) with the plan registered as the relation ``table``: the same rows
    as :meth:`ReleasePlan.apply`, in ``columns`` order.

    >>> import numpy as np, polars as pl
    >>> from ldiv_polars.local.keys import KeyTable
    >>> t = KeyTable.build(pl.DataFrame({"a": [1, 2], "s": ["x", "y"]}), ["a"], "s")
    >>> plan_sql(build_plan(t, np.zeros((2, 1))), ["a", "s"])
    'SELECT p."__ldiv_out_0" AS "a", d."s" FROM data AS d JOIN plan AS p USING ("a")'
    """
    quote = lambda name: '"' + name.replace('"', '""') + '"'  # noqa: E731
    out = [f'p.{quote(_OUT + str(plan.qi.index(c)))} AS {quote(c)}' if c in plan.qi
           else f"d.{quote(c)}" for c in columns]
    using = ", ".join(quote(q) for q in plan.qi)
    return f"SELECT {', '.join(out)} FROM {data} AS d JOIN {table} AS p USING ({using})"


def released_codes(plan: ReleasePlan) -> np.ndarray:
    """``(keys, q)`` integer codes of the released values (equal codes: equal values; a
    suppressed cell is -1)."""
    cols = [plan.table.get_column(f"{_OUT}{i}") for i in range(len(plan.qi))]
    if not plan.table.height:
        return np.zeros((0, len(cols)), dtype=np.int64)
    return np.column_stack([c.rank("dense").fill_null(0).cast(pl.Int64).to_numpy() - 1
                            for c in cols])


def build_plan(table: KeyTable, levels: np.ndarray,
               hierarchies: Mapping[str, Hierarchy] | None = None) -> ReleasePlan:
    """The plan releasing key ``k``'s QI ``i`` at ``levels[k, i]`` (:data:`SUPPRESSED`, 0 or a
    level of ``hierarchies[qi]``). A QI released at level 0 or suppressed only keeps its
    dtype (an Enum narrowed to the values released cells hold); one with a generalized level
    becomes a String column of labels. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` when ``levels`` is not one row per key
    and one column per QI, or a generalized QI has no hierarchy."""
    levels = np.asarray(levels, dtype=np.int64)
    if levels.shape != (table.keys, len(table.qi)):
        raise InvalidParameterError("levels must have one row per key and one column per QI")
    cols: list[pl.Series] = []
    for i, q in enumerate(table.qi):
        raw = table.values[i].gather(table.codes[:, i])
        lv = levels[:, i]
        if (lv > 0).any():
            if hierarchies is None or q not in hierarchies:
                raise InvalidParameterError(f"a generalized level for {q!r} needs a hierarchy")
            out = _labels(raw, lv, hierarchies[q])
        else:
            out = raw
        if (lv == SUPPRESSED).any():
            out = pl.Series(f"{_OUT}{i}", out).set(pl.Series(lv == SUPPRESSED), None)
        cols.append(_held_only(out).alias(f"{_OUT}{i}"))
        cols.append(pl.Series(f"{_LEVEL}{i}", lv, dtype=pl.Int8))
    frame = table.key_frame().hstack(cols)
    return ReleasePlan(table.qi, frame)


def _held_only(out: pl.Series) -> pl.Series:
    """A released column ``out`` of an Enum dtype (the input's, kept at level 0) cast to an
    Enum of only the values it holds, in the same order: the release's dtype (a Parquet
    file's dictionary) then names no value whose every cell was suppressed. Other dtypes
    are returned as they are (a Categorical is written with the values it holds).

    >>> e = pl.Enum(["a", "b", "c"])
    >>> _held_only(pl.Series(["c", None, "a"], dtype=e)).dtype.categories.to_list()
    ['a', 'c']
    """
    if not isinstance(out.dtype, pl.Enum):
        return out
    return out.cast(held_enum(out.dtype, out.drop_nulls().cast(pl.String).to_list()))


def _labels(raw: pl.Series, lv: np.ndarray, h: Hierarchy) -> pl.Series:
    """Each raw value's label at its level (level 0: the value as a string)."""
    out = raw.cast(pl.String)
    for level in np.unique(lv[lv > 0]):
        mapping = h.mapping(int(level))
        at = pl.Series(lv == level)
        out = pl.select(pl.when(at).then(out.replace_strict(mapping, default=None))
                        .otherwise(out)).to_series()
    return out
