"""Mondrian multidimensional partitioning (LeFevre et al. 2006), strict and relaxed, with any
foundation model as the allowed-split constraint.

Every round considers *all* current partitions at once, in the engine:

1. one ``group_by(partition)`` gives each partition's size, per-dimension min/max and median
   split point (the upper median ``sorted[n // 2]`` of the value for strict splits; for
   relaxed splits the lower median of a global ordinal rank, so that the left child gets the
   first ``ceil(n/2)`` rows in (value, row order): children differ in size by at most 1);
2. one ``group_by(partition, side_0, ..., side_{d-1}, s)`` counts the rows of every candidate
   child of every dimension; per dimension it is rolled up to ``(partition, dim, side, s, n)``
   and all candidate children of all partitions are evaluated by **one**
   :func:`~ldiv_polars.models.evaluate_classes` call, the reference distribution (t-closeness,
   delta, beta) being the whole table's;
3. each partition splits on the widest normalized dimension (``(max - min) / table range``)
   whose split is allowed (both children pass every model), falling back to narrower ones;
   partitions with no allowed split become final groups.

Python touches only per-partition tables; rows are only ever processed by Polars expressions.
The result (rows + group id, generalized view, metrics) is re-verified with
:func:`ldiv_polars.check` before it is returned.

Strict splits put all rows equal to the median on the same side; Cormode et al. (App. B,
Fig. 6b) show this leaks under the minimality attack. Relaxed (even) splits are "effectively
immune" (Theorem 5).

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> df = pl.DataFrame({"age": [21, 22, 23, 24, 31, 32, 33, 34], "s": list("abababab")})
>>> m = mondrian(df, ["age"], "s", [KAnonymity(2)])
>>> m.groups, m.ranges.sort("group")["age_min"].to_list()
(4, [21, 23, 31, 33])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import validate_columns
from ldiv_polars.errors import InvalidParameterError, LdivError, NullValuesError
from ldiv_polars.models import KAnonymity, evaluate_classes
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import CheckResult, check, check_models

__all__ = ["MondrianResult", "PartitionInfeasibleError", "mondrian"]

GROUP = "group"
_ROW = "__ldiv_row"
_PID = "__ldiv_pid"
_DIM = "__ldiv_dim"
_SIDE = "__ldiv_side"


class PartitionInfeasibleError(LdivError, ValueError):
    """The whole table does not satisfy the requested models, so no partition can."""


@dataclass
class MondrianResult:
    """Mondrian's output.

    ``frame``: the input rows (input order) with the group id column ``group``.
    ``ranges``: one row per group: ``size`` and, per QI, ``<qi>_min``/``<qi>_max`` (numeric
    QIs) or ``<qi>_set`` (sorted list of categories).
    ``metrics``: discernibility, aecs (= N / groups), cavg (= aecs / k), ncp per QI, gcp.
    ``verification``: the foundation checker's verdict on ``frame`` grouped by ``group``.
    """

    frame: pl.LazyFrame
    ranges: pl.DataFrame
    group: str
    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    relaxed: bool
    groups: int
    rows: int
    rounds: int
    verification: CheckResult
    metrics: dict[str, object] = field(default_factory=dict)
    numeric: tuple[str, ...] = ()

    def generalized(self) -> pl.LazyFrame:
        """The released table: every QI replaced by its group's range ``"lo-hi"`` (numeric;
        the value itself when lo == hi) or category set ``"{a,b}"``, plus the group id and the
        untouched other columns (input order)."""
        exprs = []
        for c in self.qi:
            if c in self.numeric:
                lo, hi = pl.col(f"{c}_min").cast(pl.String), pl.col(f"{c}_max").cast(pl.String)
                exprs.append(pl.when(lo == hi).then(lo).otherwise(pl.format("{}-{}", lo, hi))
                             .alias(f"__g_{c}"))
            else:
                s = pl.col(f"{c}_set")
                exprs.append(pl.when(s.list.len() == 1).then(s.list.first().cast(pl.String))
                             .otherwise(pl.format("{{{}}}", s.cast(pl.List(pl.String))
                                                  .list.join(",")))
                             .alias(f"__g_{c}"))
        summary = self.ranges.lazy().select(self.group, *exprs)
        names = self.frame.collect_schema().names()
        return (
            self.frame.join(summary, on=self.group, how="left", maintain_order="left")
            .with_columns([pl.col(f"__g_{c}").alias(c) for c in self.qi])
            .select(names)
        )

    def to_dict(self) -> dict[str, object]:
        """The headline figures and utility metrics as a JSON-ready dict."""
        return {
            "algorithm": "mondrian-relaxed" if self.relaxed else "mondrian-strict",
            "rows": self.rows,
            "groups": self.groups,
            "rounds": self.rounds,
            "suppressed": 0,
            "verified": self.verification.passed,
            **self.metrics,
        }


@reads_input
def mondrian(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    relaxed: bool = False,
    group: str = GROUP,
) -> MondrianResult:
    """Partition ``data`` with Mondrian so that every group satisfies all ``models``.

    QIs may be numeric (split on value) or anything else (split on the sorted order of the
    distinct values; released as category sets). ``relaxed=True`` gives the even-split variant
    (children differ by at most one row). Raises :class:`PartitionInfeasibleError` when the
    whole table fails a model and :class:`~ldiv_polars.errors.NullValuesError` on nulls. An
    empty table (no rows) is partitioned into zero groups (every model holds vacuously).

    >>> import polars as pl
    >>> from ldiv_polars.models import KAnonymity
    >>> df = pl.DataFrame({"q": ["a", "b", "c", "c", "c", "d"], "s": list("++----")})
    >>> mondrian(df, ["q"], "s", [KAnonymity(2)]).ranges.sort("group")["q_set"].to_list()
    [['a', 'b'], ['c', 'd']]
    >>> mondrian(df, ["q"], "s", [KAnonymity(2)], relaxed=True).groups
    2
    """
    model_list = check_models(models, required_by="mondrian")
    lf = to_lazyframe(data)
    needs_s = any(m.needs_sensitive for m in model_list)
    qi_t, s_t = validate_columns(lf, qi, sensitive, reserved=(COUNT, group),
                                 require_sensitive=needs_s)
    schema = lf.collect_schema()
    if group in schema:
        raise InvalidParameterError(f"the group column name {group!r} is already a column")
    numeric = tuple(c for c in qi_t if schema[c].is_numeric())
    layout = _Layout(len(qi_t), s_t, relaxed)
    work = _encoded_rows(lf, qi_t, numeric, layout)
    n = work.height  # an empty table (no rows) holds every model vacuously: zero groups
    reference = (work.group_by(s_t[0]).agg(pl.len().cast(pl.Int64).alias(COUNT))
                 if s_t else None)
    judge = _SplitJudge(model_list, s_t, reference)
    judge.require_whole_table(work)
    done, rounds = _partition(work, layout, judge, group)

    assign = pl.concat(done).sort(_ROW) if done else \
        pl.DataFrame(schema={_ROW: pl.Int64, group: pl.Int64})
    frame = (
        lf.with_row_index(_ROW)
        .with_columns(pl.col(_ROW).cast(pl.Int64))
        .join(assign.lazy(), on=_ROW, how="left", maintain_order="left")
        .drop(_ROW)
    )
    verification = check(frame, [group], s_t if s_t else None, model_list,
                         reference=reference)
    if not verification.passed:  # pragma: no cover - would be a bug
        raise LdivError(f"mondrian output failed re-verification: "
                        f"{[m.to_dict() for m in verification.models if not m.passed]}")
    ranges = _group_ranges(frame, group, qi_t, numeric)
    k = max((m.k for m in model_list if isinstance(m, KAnonymity)), default=1)
    metrics = _metrics(frame, ranges, qi_t, numeric, n, k)
    return MondrianResult(frame, ranges, group, qi_t, s_t, relaxed, ranges.height, n, rounds,
                          verification, metrics, numeric)


@dataclass(frozen=True)
class _Layout:
    """The working columns of the rows being partitioned: per QI dimension ``j`` its encoded
    value ``dims[j]`` (float: the value, or the dense rank of a category), its ordinal rank
    ``ords[j]`` (relaxed splits only) and the candidate side of the current round
    ``sides[j]``; the sensitive columns ``s``."""

    d: int
    s: tuple[str, ...]
    relaxed: bool

    @property
    def dims(self) -> list[str]:
        return [f"__ldiv_d{j}" for j in range(self.d)]

    @property
    def ords(self) -> list[str]:
        return [f"__ldiv_o{j}" for j in range(self.d)]

    @property
    def sides(self) -> list[str]:
        return [f"__ldiv_side{j}" for j in range(self.d)]


def _encoded_rows(lf: pl.LazyFrame, qi: tuple[str, ...], numeric: tuple[str, ...],
                  layout: _Layout) -> pl.DataFrame:
    """The rows as the partitioning reads them (row number, encoded dimensions, sensitive
    columns, ordinal ranks when relaxed), collected once; raises
    :class:`~ldiv_polars.errors.NullValuesError` when a QI or sensitive column holds nulls."""
    dims, s_t = layout.dims, layout.s
    enc = [
        (pl.col(c).cast(pl.Float64) if c in numeric else pl.col(c).rank("dense").cast(pl.Float64))
        .alias(dims[j])
        for j, c in enumerate(qi)
    ]
    work_cols = [pl.int_range(pl.len(), dtype=pl.Int64).alias(_ROW), *enc,
                 *[pl.col(x) for x in s_t]]
    if layout.relaxed:
        work_cols += [pl.col(c).rank("ordinal").cast(pl.Int64).alias(layout.ords[j])
                      for j, c in enumerate(qi)]
    work = lf.select(work_cols).collect(engine="streaming")
    nulls = {c: int(work[x].null_count()) for c, x in zip((*qi, *s_t), (*dims, *s_t))
             if work[x].null_count()}
    if nulls:
        raise NullValuesError(nulls)
    return work


class _SplitJudge:
    """Whether candidate groups satisfy every model, the reference distribution (t-closeness,
    delta, beta) being the whole table's."""

    def __init__(self, models: list[Model], s: tuple[str, ...],
                 reference: pl.DataFrame | None) -> None:
        self.models, self.s, self.reference = models, s, reference

    def evaluate(self, frame: pl.LazyFrame, keys: tuple[str, ...]) -> pl.DataFrame:
        """One row per class of the frequency set ``frame`` keyed by ``keys``: the keys and
        ``__ok`` (every model passes)."""
        fs = FrequencySet(frame, keys, self.s)
        out = evaluate_classes(fs, self.models, reference=self.reference)
        ok = pl.all_horizontal([pl.col(f"pass_{m.key}") for m in self.models])
        return out.select(*keys, ok.alias("__ok")).collect()

    def require_whole_table(self, work: pl.DataFrame) -> None:
        """Raise :class:`PartitionInfeasibleError` unless the whole table passes."""
        whole = work.lazy().with_columns(pl.lit(0, dtype=pl.Int64).alias(_PID)).group_by(
            [_PID, *self.s]).agg(pl.len().cast(pl.Int64).alias(COUNT))
        if not self.evaluate(whole, (_PID,))["__ok"].all():
            raise PartitionInfeasibleError(
                "the whole table does not satisfy "
                f"{', '.join(m.describe() for m in self.models)}: no partition can"
            )


def _partition(work: pl.DataFrame, layout: _Layout, judge: _SplitJudge,
               group: str) -> tuple[list[pl.DataFrame], int]:
    """Split every partition, round after round, until none can split: returns the ``(_ROW,
    group)`` frames of the final groups (group ids dense from 0) and the number of rounds."""
    dims = layout.dims
    ranges_row = work.select([(pl.col(x).max() - pl.col(x).min()).alias(x) for x in dims]).row(0)
    table_range = [float(v) if v else 0.0 for v in ranges_row]
    work = work.with_columns(pl.lit(0, dtype=pl.Int64).alias(_PID))
    done: list[pl.DataFrame] = []
    next_gid = 0
    rounds = 0
    while work.height:
        rounds += 1
        stats = _partition_stats(work, layout)
        work = work.with_columns(_candidate_sides(stats, layout))
        allowed = _allowed_splits(work, layout, judge)
        chosen_dim = _chosen_dimensions(stats, allowed, table_range, layout.d)
        finished, work = _split(work, chosen_dim, next_gid, layout, group)
        next_gid += int((chosen_dim == -1).sum())
        if finished.height:
            done.append(finished)
    return done, rounds


def _partition_stats(work: pl.DataFrame, layout: _Layout) -> pl.DataFrame:
    """Per partition (dense pids 0..P-1, sorted): size and, per dimension ``j``, min, max and
    the split threshold ``__thr{j}`` (upper median of the value; lower median of the ordinal
    rank when relaxed)."""
    aggs: list[pl.Expr] = [pl.len().alias("__size")]
    for j in range(layout.d):
        x = pl.col(layout.dims[j])
        aggs += [x.min().alias(f"__min{j}"), x.max().alias(f"__max{j}")]
        if layout.relaxed:
            thr_agg = pl.col(layout.ords[j]).quantile(0.5, interpolation="lower")
        else:
            thr_agg = x.quantile(0.5, interpolation="higher")
        aggs.append(thr_agg.alias(f"__thr{j}"))
    return work.group_by(_PID).agg(aggs).sort(_PID)


def _candidate_sides(stats: pl.DataFrame, layout: _Layout) -> list[pl.Expr]:
    """Per dimension, the row's side (True: left) if its partition split on that dimension;
    strict splits keep every row equal to the median on one side."""
    side_exprs = []
    for j in range(layout.d):
        thr = pl.lit(stats[f"__thr{j}"]).gather(pl.col(_PID))
        if layout.relaxed:
            side = pl.col(layout.ords[j]) <= thr
        else:
            mn = pl.lit(stats[f"__min{j}"]).gather(pl.col(_PID))
            x = pl.col(layout.dims[j])
            side = pl.when(thr == mn).then(x <= thr).otherwise(x < thr)
        side_exprs.append(side.alias(layout.sides[j]))
    return side_exprs


def _allowed_splits(work: pl.DataFrame, layout: _Layout, judge: _SplitJudge) -> pl.DataFrame:
    """``(_PID, _DIM, __two, __ok)``: whether the split of each partition on each dimension
    has two children (``__two``) that both pass every model (``__ok``); every candidate child
    of every partition counted in one group-by and judged in one evaluation."""
    s_t, sides = layout.s, layout.sides
    freq = work.lazy().group_by([_PID, *sides, *s_t]).agg(pl.len().cast(pl.Int64).alias(COUNT))
    freq = freq.collect().lazy()
    per_dim = [
        freq.group_by([_PID, sides[j], *s_t]).agg(pl.col(COUNT).sum())
        .select(_PID, pl.lit(j, dtype=pl.Int32).alias(_DIM), pl.col(sides[j]).alias(_SIDE),
                *s_t, COUNT)
        for j in range(layout.d)
    ]
    verdict = judge.evaluate(pl.concat(per_dim), (_PID, _DIM, _SIDE))
    return verdict.group_by(_PID, _DIM).agg(
        (pl.len() == 2).alias("__two"), pl.col("__ok").all().alias("__ok"))


def _chosen_dimensions(stats: pl.DataFrame, allowed: pl.DataFrame, table_range: list[float],
                       d: int) -> pl.Series:
    """Per partition (by pid), the widest allowed dimension by normalized width
    ``(max - min) / table range`` (ties: the lower dimension), or -1 when none is allowed."""
    width = pl.concat([
        stats.select(_PID, pl.lit(j, dtype=pl.Int32).alias(_DIM),
                     ((pl.col(f"__max{j}") - pl.col(f"__min{j}")) /
                      (table_range[j] if table_range[j] else 1.0)).alias("__w"))
        for j in range(d)
    ])
    choice = (
        width.filter(pl.col("__w") > 0)
        .join(allowed, on=[_PID, _DIM], how="inner")
        .filter(pl.col("__two") & pl.col("__ok"))
        .sort([_PID, "__w", _DIM], descending=[False, True, False])
        .group_by(_PID, maintain_order=True).first()
        .select(_PID, _DIM)
    )
    chosen_dim = pl.Series(_DIM, [-1] * stats.height, dtype=pl.Int32)
    if choice.height:
        chosen_dim = chosen_dim.scatter(choice[_PID], choice[_DIM])
    return chosen_dim


def _split(work: pl.DataFrame, chosen_dim: pl.Series, next_gid: int, layout: _Layout,
           group: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Apply one round's choice: the ``(_ROW, group)`` rows of the partitions that stay final
    (group ids from ``next_gid`` in pid order) and the remaining rows, whose split
    partitions get new dense pids ``2 * index + side``."""
    is_final = chosen_dim == -1
    final_gid = (is_final.cast(pl.Int64).cum_sum() - 1 + next_gid).cast(pl.Int64)
    split_idx = ((~is_final).cast(pl.Int64).cum_sum() - 1).cast(pl.Int64)
    dim_of_row = pl.lit(chosen_dim).gather(pl.col(_PID))
    side_of_row = pl.lit(False)
    for j in range(layout.d):
        side_of_row = pl.when(dim_of_row == j).then(pl.col(layout.sides[j])).otherwise(
            side_of_row)
    final_mask = pl.lit(is_final).gather(pl.col(_PID))
    finished = work.filter(final_mask).select(
        _ROW, pl.lit(final_gid).gather(pl.col(_PID)).alias(group))
    rest = work.filter(~final_mask).with_columns(
        (pl.lit(split_idx).gather(pl.col(_PID)) * 2 + (~side_of_row).cast(pl.Int64))
        .alias(_PID)
    ).drop(layout.sides)
    return finished, rest


def _group_ranges(frame: pl.LazyFrame, group: str, qi: tuple[str, ...],
                  numeric: tuple[str, ...]) -> pl.DataFrame:
    """One row per group: ``size`` and per QI ``<qi>_min``/``<qi>_max`` (numeric) or the
    sorted ``<qi>_set`` of its categories."""
    range_aggs: list[pl.Expr] = [pl.len().alias("size")]
    for c in qi:
        if c in numeric:
            range_aggs += [pl.col(c).min().alias(f"{c}_min"), pl.col(c).max().alias(f"{c}_max")]
        else:
            range_aggs.append(pl.col(c).unique().sort().alias(f"{c}_set"))
    return frame.group_by(group).agg(range_aggs).sort(group).collect()


def _metrics(frame: pl.LazyFrame, ranges: pl.DataFrame, qi: tuple[str, ...],
             numeric: tuple[str, ...], n: int, k: int) -> dict[str, object]:
    from ldiv_polars.partition.metrics import grouping_metrics

    return grouping_metrics(frame, ranges, qi, numeric, n, k)
