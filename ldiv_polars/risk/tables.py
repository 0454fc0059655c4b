"""The small tables every risk statistic reads, and the one pass that builds them.

- a **class-size table**: one row per equivalence class (the QI columns, if any, then the
  sample count ``n`` and, with sampling weights, the weight sum ``weight_sum``);
- its **frequency of frequencies** (:class:`SizeHistogram`): how many classes have each size.

:func:`class_table` builds the class-size table from rows with ONE engine group-by (streaming).
Everything after that works on the collected small table.

>>> import polars as pl
>>> df = pl.DataFrame({"q": [1, 1, 2, 3], "w": [2.0, 3.0, 5.0, 1.5]})
>>> class_table(df, "q", weight="w").sort("q").rows()
[(1, 2, 5.0), (2, 1, 5.0), (3, 1, 1.5)]
>>> h = SizeHistogram.of(class_table(df, "q"))
>>> (h.sizes.tolist(), h.classes.tolist(), h.records, h.n_classes, h.of_size(1))
([1, 2], [2, 1], 4, 3, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, STREAMING, WEIGHT_SUM, FrequencySet
from ldiv_polars.core.inputs import TableLike, to_lazyframe
from ldiv_polars.core.validate import (
    invalid_weight,
    raise_on_bad_weights,
    raise_on_nulls,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import InputFormatError, InvalidParameterError

WEIGHT = WEIGHT_SUM
"""Name of the weight-sum column (the estimated population frequency ``F_k``)."""

RiskNullPolicy = Literal["error", "value", "wildcard"]
"""``"error"``/``"value"`` as everywhere in the library; ``"wildcard"``: a null QI value matches
every value of its column (sdcMicro's semantics, see :mod:`ldiv_polars.risk.wildcard`)."""

SizesLike = Union[pl.DataFrame, Mapping[int, int], Sequence[int], np.ndarray]
"""What the estimators accept: a class-size table (a DataFrame with the count column ``n``), a
frequency-of-frequencies table (a DataFrame with columns ``size`` and ``classes``, or a mapping
size -> number of classes), or the class sizes themselves (a 1-D sequence of integers)."""


def check_risk_null_policy(nulls: str) -> None:
    """Raise :class:`~ldiv_polars.errors.InvalidParameterError` unless ``nulls`` is one of the
    risk functions' null policies: ``error``, ``value`` or ``wildcard``."""
    if nulls not in ("error", "value", "wildcard"):
        raise InvalidParameterError(
            f"nulls must be 'error', 'value' or 'wildcard', got {nulls!r}"
        )


def _weighted_columns(lf: pl.LazyFrame, qi: str | Iterable[str], weight: str) -> tuple[str, ...]:
    """The QI columns of ``lf`` after checking them and the weight column (present, not a QI,
    numeric); raises the typed errors of :func:`class_table`."""
    qi_t, _ = validate_columns(lf, qi, None, reserved=(COUNT, WEIGHT), require_sensitive=False)
    validate_weight(lf.collect_schema(), weight, qi_t)
    return qi_t


def class_table(
    data: TableLike,
    qi: str | Iterable[str],
    *,
    weight: str | None = None,
    nulls: RiskNullPolicy = "error",
    engine: str | None = None,
    separator: str | None = None,
) -> pl.DataFrame:
    """The collected class-size table ``(qi..., n[, weight_sum])`` of ``data``: one
    ``group_by(qi)``, the only pass over the rows, run by Polars' streaming engine or by
    ``engine`` (default: the engine of ``data``'s type, e.g. Spark for a Spark DataFrame; a
    distributed engine collects only the table; ``separator``: a CSV path's separator).

    ``weight`` names a column of sampling weights: each class then also gets the sum of its
    weights (``F_k``, the estimated population frequency). Weights must be finite and positive;
    a null, negative, zero or non-finite weight raises :class:`InvalidParameterError` (checked
    on the grouped result, in the same pass). With ``nulls="wildcard"`` nulls stay keys of their
    own here (the wildcard counts are computed from this table afterwards); ``"error"`` raises
    :class:`~ldiv_polars.errors.NullValuesError` when a QI holds nulls.
    """
    from ldiv_polars.core.engines.base import engine_for

    check_risk_null_policy(nulls)
    reader = engine_for(data, engine)
    if weight is None:
        policy = "error" if nulls == "error" else "value"
        if reader.distributed:
            return reader.frequency_set(data, qi, None, nulls=policy,
                                        separator=separator).frame.collect()
        return FrequencySet.build(data, qi, None, nulls=policy, separator=separator).collect()
    qi_t, table = _weighted_table(reader, data, qi, weight, separator)
    raise_on_bad_weights(int(table[_BAD].sum() or 0), weight)
    if nulls == "error":
        raise_on_nulls(table, qi_t, COUNT)
    return table.drop(_BAD)


_BAD = "__bad"


def _weighted_table(reader: Any, data: TableLike, qi: str | Iterable[str], weight: str,
                    separator: str | None) -> tuple[tuple[str, ...], pl.DataFrame]:
    """The checked QI columns and the grouped ``(qi..., n, weight_sum, __bad)`` (``__bad``: the
    rows whose weight is null, non-finite or not positive), by a distributed ``reader``
    (its ``weighted_counts``) or Polars' streaming engine."""
    if reader.distributed:
        qi_t = _weighted_columns(pl.LazyFrame(schema=reader.schema(data, separator)), qi,
                                 weight)
        return qi_t, reader.weighted_counts(data, qi_t, weight, names=(COUNT, WEIGHT, _BAD),
                                            separator=separator)
    lf = to_lazyframe(data, separator=separator)
    qi_t = _weighted_columns(lf, qi, weight)
    w = pl.col(weight).cast(pl.Float64)
    return qi_t, lf.group_by(list(qi_t)).agg(
        pl.len().cast(pl.Int64).alias(COUNT),
        w.sum().alias(WEIGHT),
        invalid_weight(weight).sum().alias(_BAD),
    ).collect(engine=STREAMING)


def class_size_table(data: TableLike | pl.DataFrame, qi: str | Iterable[str] | None,
                     nulls: str, caller: str) -> pl.DataFrame:
    """The distinct keys ``(qi..., n)``: built from rows by :func:`class_table` when ``qi`` is
    given, else ``data`` itself, which must then be a class-size table (every column but ``n``
    is a key; nulls checked per ``nulls``, ``"error"`` or ``"value"``)."""
    if qi is not None:
        return class_table(data, qi, nulls=nulls)  # type: ignore[arg-type]
    if not isinstance(data, pl.DataFrame) or COUNT not in data.columns:
        raise InputFormatError(f"without qi, {caller} reads a class-size table (column {COUNT!r})")
    if nulls == "error":
        raise_on_nulls(data, [c for c in data.columns if c != COUNT], COUNT)
    return data


@dataclass(frozen=True)
class SizeHistogram:
    """Frequency of frequencies: ``classes[i]`` classes have ``sizes[i]`` records (sizes
    ascending, distinct, positive; both int64 arrays)."""

    sizes: np.ndarray
    classes: np.ndarray

    @property
    def records(self) -> int:
        """Number of records ``n = sum_j j * c_j``."""
        return int(np.dot(self.sizes, self.classes))

    @property
    def n_classes(self) -> int:
        """Number of classes ``u = sum_j c_j``."""
        return int(self.classes.sum())

    def of_size(self, size: int) -> int:
        """Number of classes with exactly ``size`` records (``c_size``)."""
        hit = np.nonzero(self.sizes == size)[0]
        return int(self.classes[hit[0]]) if hit.size else 0

    @classmethod
    def of(cls, table: SizesLike) -> SizeHistogram:
        """Normalize any :data:`SizesLike` input; raises :class:`InputFormatError` for a table
        of the wrong shape and :class:`InvalidParameterError` for sizes or counts < 1."""
        if isinstance(table, SizeHistogram):
            return table
        if isinstance(table, pl.DataFrame):
            return cls._of_frame(table)
        if isinstance(table, Mapping):
            pairs = sorted((int(k), int(v)) for k, v in table.items())
            sizes = np.array([p[0] for p in pairs], dtype=np.int64)
            counts = np.array([p[1] for p in pairs], dtype=np.int64)
            return cls._checked(sizes, counts)
        arr = np.asarray(table)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise InputFormatError(
                "class sizes must be a 1-D sequence of integers, a mapping size -> classes or a "
                "DataFrame with a count column"
            )
        if arr.size and arr.min() < 1:
            raise InvalidParameterError("class sizes must be >= 1")
        sizes, counts = np.unique(arr.astype(np.int64), return_counts=True)
        return cls(sizes, counts.astype(np.int64))

    @classmethod
    def _of_frame(cls, df: pl.DataFrame) -> SizeHistogram:
        if COUNT in df.columns:
            if not df.schema[COUNT].is_integer():
                raise InputFormatError(f"count column {COUNT!r} must hold integers")
            if df.height and (df[COUNT].null_count() or df[COUNT].min() < 1):  # type: ignore[operator]
                raise InvalidParameterError(f"count column {COUNT!r} must hold integers >= 1")
            hist = df.group_by(COUNT).agg(pl.len()).sort(COUNT)
            return cls(hist[COUNT].to_numpy().astype(np.int64),
                       hist["len"].to_numpy().astype(np.int64))
        if {"size", "classes"} <= set(df.columns):
            hist = df.group_by("size").agg(pl.col("classes").sum()).sort("size")
            return cls._checked(hist["size"].to_numpy().astype(np.int64),
                                hist["classes"].to_numpy().astype(np.int64))
        raise InputFormatError(
            f"expected a class-size table (column {COUNT!r}) or a frequency-of-frequencies table "
            f"(columns 'size', 'classes'), got columns {df.columns}"
        )

    @classmethod
    def _checked(cls, sizes: np.ndarray, counts: np.ndarray) -> SizeHistogram:
        if sizes.size and (sizes.min() < 1 or counts.min() < 0):
            raise InvalidParameterError("class sizes must be >= 1 and class counts >= 0")
        keep = counts > 0
        return cls(sizes[keep], counts[keep])
