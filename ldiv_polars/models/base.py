"""The model protocol and the one evaluation routine every model goes through.

A privacy model answers three questions over a frequency set: per-class statistics, per-class
pass/fail, and the table's *achieved* value (smallest k, largest l, smallest t, ...).
:func:`evaluate_classes` computes all requested models in one ``group_by`` over the frequency set
(plus, for the few models that need them, small extra aggregations joined on the class key).

>>> import polars as pl
>>> from ldiv_polars.core import FrequencySet
>>> from ldiv_polars.models import KAnonymity, DistinctLDiversity
>>> fs = FrequencySet(pl.LazyFrame({"q": ["a", "a", "b"], "s": ["x", "y", "x"], "n": [2, 1, 3]}),
...                   ("q",), ("s",))
>>> evaluate_classes(fs, [KAnonymity(3), DistinctLDiversity(2)]).sort("q").select(
...     "q", "size", "pass_k_anonymity_3", "pass_distinct_l_2").collect().rows()
[('a', 3, True, True), ('b', 3, True, False)]
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError

SIZE = "size"
"""Class size column of :func:`evaluate_classes` output."""
DISTINCT = "distinct"
"""Number of distinct sensitive values of the class (first sensitive column)."""

# Columns added to the frequency-set rows before the per-class aggregation.
ROW_P = "__ldiv_p"
ROW_Q = "__ldiv_q"
ROW_M = "__ldiv_m"

ENTROPY_TOLERANCE = 1e-12
"""Entropy l-diversity passes when ``H >= ln(l) - ENTROPY_TOLERANCE`` (nats): a class spread
exactly uniformly over l values has entropy ln l, which float arithmetic may land a few ulps
below; the tolerance keeps it passing, as the definition (``>=``) requires."""


@dataclass(frozen=True)
class ClassContext:
    """What a model may read while building its per-class aggregations."""

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    rows: pl.LazyFrame
    """The frequency set rows; when a model compares classes with the table (``needs_q``) they
    also carry ``ROW_P`` (n / class size, one window over the class) and ``ROW_Q`` (the table
    frequency of the sensitive value, joined from :attr:`reference`)."""
    reference: pl.LazyFrame
    """Table distribution of the first sensitive column: columns ``(s, ROW_Q, ROW_M)`` (ROW_M:
    the number of distinct values of the table)."""

    @property
    def s(self) -> str:
        """The first sensitive column (the one the models read)."""
        return self.sensitive[0]


class Model(ABC):
    """A privacy model: per-class statistics, per-class verdict, table verdict, achieved value.

    Subclasses set ``monotone`` (whether every generalization of a satisfying table satisfies it
    too, with no suppression; the lattice search reads it) and ``higher_is_better`` (direction
    of the achieved value: k and l grow, c, t, alpha, delta, beta shrink).
    """

    monotone: ClassVar[bool] = True
    higher_is_better: ClassVar[bool] = True
    needs_q: ClassVar[bool] = False
    needs_sensitive: ClassVar[bool] = True
    name: ClassVar[str] = "model"

    @property
    def key(self) -> str:
        """Unique, parameter-encoding name; used as column prefix (``pass_<key>``)."""
        params = "_".join(_fmt(v) for v in self.params().values())
        return f"{self.name}_{params}" if params else self.name

    def col(self, stat: str) -> str:
        """The column name of this model's statistic ``stat`` (prefixed by :attr:`key`)."""
        return f"{self.key}__{stat}"

    @abstractmethod
    def params(self) -> dict[str, object]:
        """The model's parameters, for keys, reports and JSON."""

    @abstractmethod
    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        """Aggregations evaluated in ``group_by(qi)`` over ``ctx.rows``; output names must use
        :meth:`col`."""

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        """Extra per-class frames keyed by the qi columns (joined onto the classes)."""
        return []

    def validate(self, fs: FrequencySet) -> None:  # noqa: B027 - optional hook
        """Check the model against a (materialized) frequency set before evaluation; raise an
        :class:`~ldiv_polars.errors.LdivError` on mismatch (e.g. a value missing from a
        hierarchy). Default: nothing to check."""

    @abstractmethod
    def value(self) -> pl.Expr:
        """The per-class measured value (on the class rows)."""

    @abstractmethod
    def passes(self) -> pl.Expr:
        """Boolean per-class verdict (on the class rows)."""

    def achieved(self) -> pl.Expr:
        """The table's achieved value, aggregated over class rows."""
        v = self.value()
        return v.min() if self.higher_is_better else v.max()

    def reason(self) -> pl.Expr:
        """A short string explaining a failing class (on the class rows)."""
        return pl.format(f"{self.describe()}: value {{}}", self.value())

    def describe(self) -> str:
        """The model with its parameters, e.g. ``k_anonymity(k=5)``."""
        inner = ", ".join(f"{k}={_fmt(v)}" for k, v in self.params().items())
        return f"{self.name}({inner})"

    def __repr__(self) -> str:
        return self.describe()


def _fmt(v: object) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return repr(v) if not v.is_integer() else str(int(v))
    if isinstance(v, (list, tuple, set, frozenset)):
        return "+".join(sorted(str(x) for x in v))
    return str(v)


def _reference_from(rows: pl.LazyFrame, s: str) -> pl.LazyFrame:
    return rows.group_by(s).agg(pl.col(COUNT).sum()).with_columns(
        (pl.col(COUNT) / pl.col(COUNT).sum()).alias(ROW_Q),
        pl.len().cast(pl.Int64).alias(ROW_M),
    ).select(s, ROW_Q, ROW_M)


def reference_distribution(
    reference: pl.LazyFrame | pl.DataFrame, s: str
) -> pl.LazyFrame:
    """Normalize a reference table ``(s, n)`` (counts) to ``(s, ROW_Q, ROW_M)``."""
    ref = reference.lazy() if isinstance(reference, pl.DataFrame) else reference
    names = ref.collect_schema().names()
    if s not in names or COUNT not in names:
        raise InvalidParameterError(
            f"a reference distribution needs columns {s!r} and {COUNT!r}, got {names}"
        )
    return _reference_from(ref.select(s, COUNT), s)


def evaluate_classes(
    fs: FrequencySet,
    models: Sequence[Model],
    *,
    reference: pl.LazyFrame | pl.DataFrame | None = None,
) -> pl.LazyFrame:
    """One row per equivalence class of ``fs``: the qi columns, ``size``, ``distinct``, each
    model's statistics and a boolean ``pass_<model.key>`` column.

    ``reference`` optionally gives the table distribution of the sensitive column as counts
    ``(s, n)`` (default: the distribution of ``fs`` itself). Partitioning algorithms that
    evaluate candidate sub-partitions pass the whole table's distribution here.
    """
    models = list(models)
    keys = [m.key for m in models]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise InvalidParameterError(f"model(s) requested twice: {', '.join(dup)}")
    qi = list(fs.qi)
    if not fs.sensitive:
        needing = [m.describe() for m in models if m.needs_sensitive]
        if needing:
            raise InvalidParameterError(
                f"{', '.join(needing)} need(s) a sensitive column; none was given"
            )
        ctx = ClassContext(fs.qi, fs.sensitive, fs.frame, pl.LazyFrame())
        aggs = [e for m in models for e in m.aggs(ctx)]
        classes = fs.frame.group_by(qi).agg(pl.col(COUNT).sum().alias(SIZE), *aggs)
        return classes.with_columns([m.passes().alias(f"pass_{m.key}") for m in models])

    s = fs.sensitive[0]
    rows = fs.frame
    ref = (
        reference_distribution(reference, s)
        if reference is not None
        else _reference_from(fs.frame, s)
    )
    if any(m.needs_q for m in models):
        rows = rows.with_columns(
            (pl.col(COUNT) / pl.col(COUNT).sum().over(qi)).alias(ROW_P)
        ).join(ref, on=s, how="left", nulls_equal=True)
    ctx = ClassContext(fs.qi, fs.sensitive, rows, ref)
    aggs = [e for m in models for e in m.aggs(ctx)]
    classes = rows.group_by(qi).agg(
        pl.col(COUNT).sum().alias(SIZE),
        pl.col(s).n_unique().alias(DISTINCT),
        *aggs,
    )
    for m in models:
        for frame in m.frames(ctx):
            classes = classes.join(frame, on=qi, how="left", nulls_equal=True)
    return classes.with_columns([m.passes().alias(f"pass_{m.key}") for m in models])


@dataclass(frozen=True)
class ModelResult:
    """The verdict of one model on one table."""

    key: str
    model: str
    params: dict[str, object]
    passed: bool
    achieved: float | int | None
    """The table's achieved value (an int for k and distinct l; inf where unbounded)."""
    failing_classes: int
    failing_rows: int
    details: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The verdict as a JSON-ready dict (an infinite or NaN achieved value becomes
        None)."""
        achieved = self.achieved
        if achieved is not None and (math.isinf(achieved) or math.isnan(achieved)):
            achieved = None
        return {
            "model": self.model,
            "params": {k: (list(v) if isinstance(v, (set, frozenset, tuple)) else v)
                       for k, v in self.params.items()},
            "passed": self.passed,
            "achieved": achieved,
            "failing_classes": self.failing_classes,
            "failing_rows": self.failing_rows,
            **self.details,
        }


def table_results(classes: pl.DataFrame, models: Sequence[Model]) -> list[ModelResult]:
    """Table-level verdicts from an evaluated classes table (one small select)."""
    if not models:
        return []
    exprs: list[pl.Expr] = []
    for m in models:
        ok = pl.col(f"pass_{m.key}")
        exprs += [
            m.achieved().alias(f"{m.key}::achieved"),
            (~ok).sum().alias(f"{m.key}::fc"),
            pl.col(SIZE).filter(~ok).sum().alias(f"{m.key}::fr"),
        ]
    row = classes.select(exprs).row(0, named=True)
    out = []
    for m in models:
        fc = int(row[f"{m.key}::fc"] or 0)
        ach = row[f"{m.key}::achieved"]
        out.append(
            ModelResult(
                key=m.key,
                model=m.name,
                params=m.params(),
                passed=fc == 0,
                achieved=None if ach is None else (ach if isinstance(ach, int) else float(ach)),
                failing_classes=fc,
                failing_rows=int(row[f"{m.key}::fr"] or 0),
            )
        )
    return out
