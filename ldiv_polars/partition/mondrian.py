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

Models judged against a population table (k-map with a population, delta-presence) read each
candidate child's count of population records inside its box (its numeric ranges and category
sets): the population's frequency set is counted once and matched with every round's boxes
(:mod:`~ldiv_polars.partition.population`). k-map is monotone under splitting (a child's box
lies in its parent's, so it matches fewer population records), so "split only when both
children pass" is Mondrian's usual rule; delta-presence is not monotone: every released group
satisfies it (each split was checked, the release is re-verified against the population
matched with the released ranges and sets), but a group whose split fails may hold a finer
valid partition (docs/risk.md).

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

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import FrequencySet, count_name, unique_prefix
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import (
    invalid_weight,
    raise_on_bad_weights,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import InvalidParameterError, LdivError, NullValuesError
from ldiv_polars.models import evaluate_classes
from ldiv_polars.models.base import SIZE, Model
from ldiv_polars.models.population_table import population_models
from ldiv_polars.models.table_level import TableModel, table_models
from ldiv_polars.models.weight_exact import decide_weight_sums
from ldiv_polars.models.verdict import (
    CheckResult,
    bind_models,
    check,
    check_models,
    require_weights,
)
from ldiv_polars.partition.population import PopulationBoxes, child_pid, population_at_groups

__all__ = ["MondrianResult", "PartitionInfeasibleError", "mondrian"]

GROUP = "group"
_PREFIX = "__ldiv_"


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
    ``verified_models``: the models as they judge the release grouped by ``group`` (a model
    judged against a population table reads the population matched with the groups' ranges
    and sets: :func:`~ldiv_polars.partition.population.population_at_groups`); re-verify a
    written release with them.
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
    verified_models: tuple[Model, ...] = ()

    def generalized(self) -> pl.LazyFrame:
        """The released table: every QI replaced by its group's range ``"lo-hi"`` (numeric;
        the value itself when lo == hi) or category set ``"{a,b}"``, plus the group id and the
        untouched other columns (input order)."""
        names = self.frame.collect_schema().names()
        g = unique_prefix("__g_", names)
        exprs = []
        for c in self.qi:
            if c in self.numeric:
                lo, hi = pl.col(f"{c}_min").cast(pl.String), pl.col(f"{c}_max").cast(pl.String)
                exprs.append(pl.when(lo == hi).then(lo).otherwise(pl.format("{}-{}", lo, hi))
                             .alias(f"{g}{c}"))
            else:
                s = pl.col(f"{c}_set")
                exprs.append(pl.when(s.list.len() == 1).then(s.list.first().cast(pl.String))
                             .otherwise(pl.format("{{{}}}", s.cast(pl.List(pl.String))
                                                  .list.join(",")))
                             .alias(f"{g}{c}"))
        summary = self.ranges.lazy().select(self.group, *exprs)
        names = self.frame.collect_schema().names()
        return (
            self.frame.join(summary, on=self.group, how="left", maintain_order="left")
            .with_columns([pl.col(f"{g}{c}").alias(c) for c in self.qi])
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


@dataclass(frozen=True)
class _Plan:
    """What one Mondrian run reads: the columns, their helper names and the models."""

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    numeric: tuple[str, ...]
    models: tuple[Model, ...]
    relaxed: bool
    group: str
    prefix: str
    count: str
    weight: str | None = None
    """The input's column of sampling weights (None: no model reads weights)."""

    def name(self, what: str) -> str:
        """The helper column ``what`` under the run's unique prefix."""
        return f"{self.prefix}{what}"

    @property
    def wsum(self) -> str | None:
        """The work table's weight column, summed in the candidate frequency sets (None
        without weights)."""
        return None if self.weight is None else self.name("w")

    def weight_rows(self, records: pl.LazyFrame, keys: Sequence[str]
                    ) -> Callable[[], pl.LazyFrame] | None:
        """The records' ``keys`` and weights, for the exact step of the classes whose weight
        sum is within rounding of a threshold (None without weights)."""
        w = self.wsum
        return None if w is None else (lambda: records.select(*keys, w))

    def weight_sums(self) -> list[pl.Expr]:
        """The aggregation of the weights beside a count (none without weights)."""
        return [] if self.wsum is None else [pl.col(self.wsum).sum()]

    @property
    def dims(self) -> list[str]:
        """The encoded (Float64) value of each QI."""
        return [self.name(f"d{j}") for j in range(len(self.qi))]

    @property
    def ords(self) -> list[str]:
        """The global ordinal rank of each QI (relaxed splits only)."""
        return [self.name(f"o{j}") for j in range(len(self.qi))]

    @property
    def sides(self) -> list[str]:
        """The candidate side (left = True) of each QI in the current round."""
        return [self.name(f"side{j}") for j in range(len(self.qi))]


def _plan(lf: pl.LazyFrame, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
          model_list: list[Model], relaxed: bool, group: str,
          weight: str | None = None) -> _Plan:
    """Validate the columns (and the weight column) and name the helper columns (no input
    name is reserved)."""
    needs_s = any(m.needs_sensitive for m in model_list)
    qi_t, s_t = validate_columns(lf, qi, sensitive, reserved=(group,),
                                 require_sensitive=needs_s)
    schema = lf.collect_schema()
    if group in schema:
        raise InvalidParameterError(f"the group column name {group!r} is already a column")
    numeric = tuple(c for c in qi_t if schema[c].is_numeric())
    if weight is not None:
        validate_weight(schema, weight, [*qi_t, *s_t])
    return _Plan(qi_t, s_t, numeric, tuple(model_list), relaxed, group,
                 unique_prefix(_PREFIX, schema.names()), count_name(s_t), weight)


def _work_table(lf: pl.LazyFrame, plan: _Plan) -> pl.DataFrame:
    """The rows Mondrian partitions: row id, encoded QIs, sensitive values (and ordinal ranks
    when relaxed), collected once. Raises :class:`NullValuesError` on a null QI or sensitive,
    :class:`InvalidParameterError` on a non-finite numeric QI."""
    enc = [
        (pl.col(c).cast(pl.Float64) if c in plan.numeric
         else pl.col(c).rank("dense").cast(pl.Float64)).alias(x)
        for c, x in zip(plan.qi, plan.dims)
    ]
    cols = [pl.int_range(pl.len(), dtype=pl.Int64).alias(plan.name("row")), *enc,
            *[pl.col(x) for x in plan.sensitive]]
    if plan.relaxed:
        cols += [pl.col(c).rank("ordinal").cast(pl.Int64).alias(o)
                 for c, o in zip(plan.qi, plan.ords)]
    if plan.weight is not None:  # the weights, checked in the same pass
        cols += [pl.col(plan.weight).cast(pl.Float64).alias(plan.wsum),
                 invalid_weight(plan.weight).alias(plan.name("bad"))]
    work = lf.select(cols).collect(engine="streaming")
    if plan.weight is not None:
        raise_on_bad_weights(int(work[plan.name("bad")].sum()), plan.weight)
        work = work.drop(plan.name("bad"))
    nulls = {c: int(work[x].null_count())
             for c, x in zip((*plan.qi, *plan.sensitive), (*plan.dims, *plan.sensitive))
             if work[x].null_count()}
    if nulls:
        raise NullValuesError(nulls)
    _raise_on_non_finite(work, plan)
    return work


def _raise_on_non_finite(work: pl.DataFrame, plan: _Plan) -> None:
    """Raise :class:`InvalidParameterError` when a numeric QI holds NaN or an infinity: a
    split on value cannot place NaN, and a group's range ``lo-hi`` would not contain it (an
    infinite bound has no certainty penalty either)."""
    bad = {c: int((~work[x].is_finite()).sum()) for c, x in zip(plan.qi, plan.dims)
           if c in plan.numeric}
    bad = {c: n for c, n in bad.items() if n}
    if bad:
        parts = ", ".join(f"{c!r}: {n}" for c, n in bad.items())
        raise InvalidParameterError(
            f"Mondrian needs finite numeric quasi-identifiers; NaN or infinite values in "
            f"{parts}; drop or impute them (or cast the column to strings: categories)")


class _Judge:
    """Evaluates candidate classes against every model, the reference distribution being the
    whole table's; the models judged against a population table read each class's count of
    matching population records (:class:`~ldiv_polars.partition.population.PopulationBoxes`,
    one per population table) and decide with :meth:`class_ok
    <ldiv_polars.models.population_table.PopulationModel.class_ok>`."""

    def __init__(self, plan: _Plan, work: pl.DataFrame, lf: pl.LazyFrame) -> None:
        self.plan = plan
        s_t = plan.sensitive
        self.reference = (work.group_by(s_t[0]).agg(pl.len().cast(pl.Int64).alias(plan.count))
                          if s_t else None)
        self.class_models = [m for m in plan.models if not m.population_based]
        self.population = population_models(plan.models)
        self.boxes = {id(m.population): PopulationBoxes(
            m.population, lf, plan.qi, plan.numeric, plan.dims, plan.name("pid"), work)
            for m in self.population}

    def passes(self, frame: pl.LazyFrame, keys: tuple[str, ...],
               counts: dict[int, pl.DataFrame] | None = None,
               rows: Callable[[], pl.LazyFrame] | None = None) -> pl.DataFrame:
        """``keys`` plus ``__ok``: whether each class of the frequency set ``frame`` passes
        every model; ``counts``: per population table (by ``id``), the classes' population
        counts (``keys`` and a count column; absent classes count 0). ``rows()``: the records
        (``keys`` and the weight column), read again for the classes whose weight sum is
        within rounding of a threshold, decided exactly
        (:mod:`ldiv_polars.models.weight_exact`)."""
        fs = FrequencySet(frame, keys, self.plan.sensitive, self.plan.count,
                          weight=self.plan.wsum)
        out = evaluate_classes(fs, self.class_models, reference=self.reference).collect()
        if rows is not None and self.plan.wsum is not None:
            out = decide_weight_sums(out, self.class_models, rows, keys, self.plan.wsum)
        ok = pl.all_horizontal([pl.col(f"pass_{m.key}") for m in self.class_models]) \
            if self.class_models else pl.lit(True)
        res = out.select(*keys, pl.col(SIZE).alias("__size"), ok.alias("__ok"))
        for m in self.population:
            assert counts is not None
            c = counts[id(m.population)]
            pop = res.select(keys).join(c.rename({c.columns[-1]: "__pop"}), on=list(keys),
                                        how="left", maintain_order="left")["__pop"]
            good = m.class_ok(res["__size"].to_numpy(), pop.fill_null(0).to_numpy())
            res = res.with_columns(pl.col("__ok") & pl.Series(good))
        return res

    def require_whole_table(self, work: pl.DataFrame) -> None:
        """Raise :class:`PartitionInfeasibleError` when the whole table fails a model."""
        pid, s_t = self.plan.name("pid"), self.plan.sensitive
        whole = work.lazy().with_columns(pl.lit(0, dtype=pl.Int64).alias(pid)).group_by(
            [pid, *s_t]).agg(pl.len().cast(pl.Int64).alias(self.plan.count),
                             *self.plan.weight_sums())
        one = np.array([work.height] if work.height else [], dtype=np.int64)
        counts = {key: pl.DataFrame({pid: [0], "__pop": [b.whole]})
                  for key, b in self.boxes.items()}
        rows = self.plan.weight_rows(work.lazy().with_columns(pl.lit(0, dtype=pl.Int64)
                                                              .alias(pid)), (pid,))
        if not (self.passes(whole, (pid,), counts, rows)["__ok"].all()
                and all(m.table_holds(one) for m in table_models(list(self.plan.models)))):
            raise PartitionInfeasibleError(
                "the whole table does not satisfy "
                f"{', '.join(m.describe() for m in self.plan.models)}: no partition can"
            )

    def candidate_counts(self, work: pl.DataFrame) -> dict[int, pl.DataFrame]:
        """Per population table: the population count of every candidate child of this
        round (``(pid, dim, side, count)``)."""
        dim, side = self.plan.name("dim"), self.plan.name("side")
        return {key: b.candidate_counts(work, self.plan.sides, dim, side)
                for key, b in self.boxes.items()}

    def advance(self, chosen: pl.Series, index: pl.Series) -> None:
        """Keep, per population table, the keys matching the chosen children."""
        for b in self.boxes.values():
            b.advance(chosen, index, self.plan.name("dim"), self.plan.name("side"))


def _partition_stats(work: pl.DataFrame, plan: _Plan) -> pl.DataFrame:
    """Step 1: per partition (dense pids 0..P-1, sorted) its size and, per dimension, min, max
    and split threshold (upper median of the value; lower median of the ordinal rank when
    relaxed)."""
    aggs: list[pl.Expr] = [pl.len().alias("__size")]
    for j, (x, o) in enumerate(zip(plan.dims, plan.ords)):
        aggs += [pl.col(x).min().alias(f"__min{j}"), pl.col(x).max().alias(f"__max{j}")]
        if plan.relaxed:
            thr_agg = pl.col(o).quantile(0.5, interpolation="lower")
        else:
            thr_agg = pl.col(x).quantile(0.5, interpolation="higher")
        aggs.append(thr_agg.alias(f"__thr{j}"))
    return work.group_by(plan.name("pid")).agg(aggs).sort(plan.name("pid"))


def _with_sides(work: pl.DataFrame, stats: pl.DataFrame, plan: _Plan) -> pl.DataFrame:
    """Step 2a: each row's side (left = True) of its partition's split on every dimension;
    strict splits put the rows equal to the median on one side."""
    pid = pl.col(plan.name("pid"))
    exprs = []
    for j, (x, o, side) in enumerate(zip(plan.dims, plan.ords, plan.sides)):
        thr = pl.lit(stats[f"__thr{j}"]).gather(pid)
        if plan.relaxed:
            left = pl.col(o) <= thr
        else:
            mn = pl.lit(stats[f"__min{j}"]).gather(pid)
            left = pl.when(thr == mn).then(pl.col(x) <= thr).otherwise(pl.col(x) < thr)
        exprs.append(left.alias(side))
    return work.with_columns(exprs)


def _allowed_splits(work: pl.DataFrame, plan: _Plan, judge: _Judge) -> pl.DataFrame:
    """Step 2b: ``(pid, dim, __two, __ok, __left, __right)``: whether the split of each
    partition on each dimension has two children and both pass every model (one evaluation
    for all), and the children's sizes."""
    pid, dim, side_col = (plan.name(x) for x in ("pid", "dim", "side"))
    cnt, s_t = plan.count, plan.sensitive
    freq = (work.lazy().group_by([pid, *plan.sides, *s_t])
            .agg(pl.len().cast(pl.Int64).alias(cnt), *plan.weight_sums()).collect().lazy())
    per_dim = [
        freq.group_by([pid, side, *s_t]).agg(pl.col(cnt).sum(), *plan.weight_sums())
        .select(pid, pl.lit(j, dtype=pl.Int32).alias(dim), pl.col(side).alias(side_col),
                *s_t, cnt, *([plan.wsum] if plan.wsum else []))
        for j, side in enumerate(plan.sides)
    ]
    counts = judge.candidate_counts(work) if judge.boxes else None
    rows = None if plan.wsum is None else plan.weight_rows(pl.concat([  # each child's rows
        work.lazy().select(pid, pl.lit(j, dtype=pl.Int32).alias(dim),
                           pl.col(side).alias(side_col), plan.wsum)
        for j, side in enumerate(plan.sides)]), (pid, dim, side_col))
    verdict = judge.passes(pl.concat(per_dim), (pid, dim, side_col), counts, rows)
    size, left = pl.col("__size"), pl.col(side_col)
    return verdict.group_by(pid, dim).agg(
        (pl.len() == 2).alias("__two"), pl.col("__ok").all().alias("__ok"),
        size.filter(left).sum().alias("__left"), size.filter(~left).sum().alias("__right"))


def _chosen_dims(stats: pl.DataFrame, allowed: pl.DataFrame, plan: _Plan,
                 table_range: list[float]) -> pl.Series:
    """Step 3: per partition the widest normalized dimension whose split is allowed (ties to
    the lower dimension), -1 when none is: the partition is final."""
    pid, dim = plan.name("pid"), plan.name("dim")
    width = pl.concat([
        stats.select(pid, pl.lit(j, dtype=pl.Int32).alias(dim),
                     ((pl.col(f"__max{j}") - pl.col(f"__min{j}")) /
                      (span if span else 1.0)).alias("__w"))
        for j, span in enumerate(table_range)
    ])
    choice = (
        width.filter(pl.col("__w") > 0)
        .join(allowed, on=[pid, dim], how="inner")
        .filter(pl.col("__two") & pl.col("__ok"))
        .sort([pid, "__w", dim], descending=[False, True, False])
        .group_by(pid, maintain_order=True).first()
        .select(pid, dim)
    )
    chosen = pl.Series(dim, [-1] * stats.height, dtype=pl.Int32)
    return chosen.scatter(choice[pid], choice[dim]) if choice.height else chosen


def _split(work: pl.DataFrame, chosen: pl.Series, next_gid: int,
           plan: _Plan) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Give the final partitions group ids from ``next_gid`` on (``(row, group)`` rows) and the
    split ones new dense pids ``2 * index + side``; returns (finished rows, remaining work)."""
    pid = pl.col(plan.name("pid"))
    is_final = chosen == -1
    final_gid = (is_final.cast(pl.Int64).cum_sum() - 1 + next_gid).cast(pl.Int64)
    split_idx = split_index(chosen)
    dim_of_row = pl.lit(chosen).gather(pid)
    side_of_row = pl.lit(False)
    for j, side in enumerate(plan.sides):
        side_of_row = pl.when(dim_of_row == j).then(pl.col(side)).otherwise(side_of_row)
    final_mask = pl.lit(is_final).gather(pid)
    finished = work.filter(final_mask).select(
        plan.name("row"), pl.lit(final_gid).gather(pid).alias(plan.group))
    rest = work.filter(~final_mask).with_columns(
        child_pid(pl.lit(split_idx).gather(pid), side_of_row).alias(plan.name("pid"))
    ).drop(plan.sides)
    return finished, rest


def split_index(chosen: pl.Series) -> pl.Series:
    """Per partition (``chosen``: its split dimension, -1 when final): its rank among the
    partitions that split (the parent index of :func:`child_pid`)."""
    return ((chosen != -1).cast(pl.Int64).cum_sum() - 1).cast(pl.Int64)


def _partition(work: pl.DataFrame, plan: _Plan, judge: _Judge) -> tuple[pl.DataFrame, int]:
    """Split every partition round by round until none can split; returns the ``(row,
    group)`` assignment sorted by row and the number of rounds."""
    ranges_row = work.select([(pl.col(x).max() - pl.col(x).min()).alias(x)
                              for x in plan.dims]).row(0)
    table_range = [float(v) if v else 0.0 for v in ranges_row]
    work = work.with_columns(pl.lit(0, dtype=pl.Int64).alias(plan.name("pid")))
    done: list[pl.DataFrame] = []
    next_gid = rounds = 0
    tables, final = table_models(list(plan.models)), [np.zeros(0, dtype=np.int64)]
    while work.height:
        rounds += 1
        stats = _partition_stats(work, plan)
        work = _with_sides(work, stats, plan)
        allowed = _allowed_splits(work, plan, judge)
        chosen = _chosen_dims(stats, allowed, plan, table_range)
        if tables:  # the splits the table-level models still allow
            chosen = _table_limited(tables, chosen, stats, allowed, np.concatenate(final), plan)
            final.append(stats["__size"].filter(chosen == -1).to_numpy().astype(np.int64))
        if judge.boxes:
            judge.advance(chosen, split_index(chosen))
        finished, work = _split(work, chosen, next_gid, plan)
        next_gid += int((chosen == -1).sum())
        if finished.height:
            done.append(finished)
    row_id = plan.name("row")
    assign = (pl.concat(done).sort(row_id) if done
              else pl.DataFrame(schema={row_id: pl.Int64, plan.group: pl.Int64}))
    return assign, rounds


def _grouped_frame(lf: pl.LazyFrame, assign: pl.DataFrame, plan: _Plan) -> pl.LazyFrame:
    """The input rows (input order) with their group id."""
    row_id = plan.name("row")
    return (
        lf.with_row_index(row_id)
        .with_columns(pl.col(row_id).cast(pl.Int64))
        .join(assign.lazy(), on=row_id, how="left", maintain_order="left")
        .drop(row_id)
    )


def _verify(frame: pl.LazyFrame, ranges: pl.DataFrame, plan: _Plan,
            judge: _Judge) -> tuple[CheckResult, list[Model]]:
    """``frame`` (rows with their group id) re-verified with :func:`check`, a model judged
    against a population table reading the population matched with the released ranges and
    sets (:func:`~ldiv_polars.partition.population.population_at_groups`); a failure is a
    bug and raises :class:`LdivError`."""
    def at_groups(population: pl.LazyFrame) -> pl.LazyFrame:
        return population_at_groups(population, ranges, plan.qi, plan.numeric, plan.group)

    models = [m.at_node(at_groups) for m in plan.models]
    s_t = plan.sensitive
    verification = check(frame, [plan.group], s_t if s_t else None, models,
                         reference=judge.reference, weight=plan.weight)
    if not verification.passed:  # pragma: no cover - would be a bug
        raise LdivError(f"mondrian output failed re-verification: "
                        f"{[m.to_dict() for m in verification.models if not m.passed]}")
    return verification, models


def _group_ranges(frame: pl.LazyFrame, plan: _Plan) -> pl.DataFrame:
    """One row per group: its size and each QI's min/max (numeric) or sorted category set."""
    aggs: list[pl.Expr] = [pl.len().alias("size")]
    for c in plan.qi:
        if c in plan.numeric:
            aggs += [pl.col(c).min().alias(f"{c}_min"), pl.col(c).max().alias(f"{c}_max")]
        else:
            aggs.append(pl.col(c).unique().sort().alias(f"{c}_set"))
    return frame.group_by(plan.group).agg(aggs).sort(plan.group).collect()


@reads_input
def mondrian(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    relaxed: bool = False,
    group: str = GROUP,
    weight: str | None = None,
) -> MondrianResult:
    """Partition ``data`` with Mondrian so that every group satisfies all ``models``.

    QIs may be numeric (split on value) or anything else (split on the sorted order of the
    distinct values; released as category sets). ``relaxed=True`` gives the even-split variant
    (children differ by at most one row). A model judged against a population table counts
    the population records inside each group's ranges and sets (see the module). Raises
    :class:`PartitionInfeasibleError` when the whole table fails a model, ``NullValuesError``
    on nulls, ``InvalidParameterError`` on a NaN or an infinity in a numeric QI and
    ``UnknownColumnError`` when a population table lacks a QI (:mod:`ldiv_polars.errors`).
    ``weight``: sampling weights (finite, > 0), summed per candidate child for the models
    reading them. An empty table (no rows) has zero groups (every model holds vacuously).

    >>> import polars as pl
    >>> from ldiv_polars.models import KAnonymity
    >>> df = pl.DataFrame({"q": ["a", "b", "c", "c", "c", "d"], "s": list("++----")})
    >>> mondrian(df, ["q"], "s", [KAnonymity(2)]).ranges.sort("group")["q_set"].to_list()
    [['a', 'b'], ['c', 'd']]
    >>> mondrian(df, ["q"], "s", [KAnonymity(2)], relaxed=True).groups
    2
    """
    model_list = check_models(models, required_by="mondrian")
    require_weights(model_list, weight)
    lf = to_lazyframe(data)
    plan = _plan(lf, qi, sensitive, model_list, relaxed, group, weight)
    work = _work_table(lf, plan)
    n = work.height  # an empty table (no rows) holds every model vacuously: zero groups
    model_list = bind_models(model_list, n)  # (k-map's k' from the table's records)
    plan = dataclasses.replace(plan, models=tuple(model_list))
    judge = _Judge(plan, work, lf)
    judge.require_whole_table(work)
    assign, rounds = _partition(work, plan, judge)
    frame = _grouped_frame(lf, assign, plan)
    ranges = _group_ranges(frame, plan)
    verification, verified_models = _verify(frame, ranges, plan, judge)
    k = max(m.min_class_size for m in model_list)  # the k that C_avg normalizes by
    metrics = _metrics(frame, ranges, plan.qi, plan.numeric, n, k)
    return MondrianResult(frame, ranges, group, plan.qi, plan.sensitive, relaxed,
                          ranges.height, n, rounds, verification, metrics, plan.numeric,
                          tuple(verified_models))


def _table_limited(tables: list[TableModel], chosen: pl.Series, stats: pl.DataFrame,
                   allowed: pl.DataFrame, final: np.ndarray, plan: _Plan) -> pl.Series:
    """``chosen`` (the dimension each partition splits on, -1: none) without the splits that
    would break a table-level model (:func:`~ldiv_polars.partition.table_limits.limit_splits`:
    the largest partitions split first); ``allowed`` gives the children's sizes
    (:func:`_allowed_splits`), ``final`` the sizes of the groups already final."""
    from ldiv_polars.partition.table_limits import limit_splits

    pid, dim = plan.name("pid"), plan.name("dim")
    picked = pl.DataFrame({pid: np.arange(len(chosen), dtype=np.int64), dim: chosen})
    kids = allowed.join(picked, on=[pid, dim]).sort(pid)
    children = np.zeros((len(chosen), 2), dtype=np.int64)
    children[kids[pid].to_numpy()] = kids.select("__left", "__right").to_numpy()
    out = limit_splits(tables, chosen.to_numpy(), stats["__size"].to_numpy().astype(np.int64),
                       children, final)
    return pl.Series(chosen.name, out, dtype=chosen.dtype)


def _metrics(frame: pl.LazyFrame, ranges: pl.DataFrame, qi: tuple[str, ...],
             numeric: tuple[str, ...], n: int, k: int) -> dict[str, object]:
    from ldiv_polars.partition.metrics import grouping_metrics

    return grouping_metrics(frame, ranges, qi, numeric, n, k)
