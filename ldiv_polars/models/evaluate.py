"""The one evaluation routine every model goes through: :func:`evaluate_classes` computes all
requested models in one ``group_by`` over the frequency set (plus, for the few models that need
them, small extra aggregations joined on the class key), with exact verdicts on the boundary.

No column name is reserved: inside, the key columns are renamed to internal names (so that no
key can clash with the helper columns or the models' statistics); the public result names them
back, and an added column whose name is a quasi-identifier's gets ``_`` appended
(:class:`ClassNames`).

>>> import polars as pl
>>> from ldiv_polars.core import FrequencySet
>>> from ldiv_polars.models import KAnonymity, DistinctLDiversity
>>> fs = FrequencySet(pl.LazyFrame({"q": ["a", "a", "b"], "s": ["x", "y", "x"], "n": [2, 1, 3]}),
...                   ("q",), ("s",))
>>> evaluate_classes(fs, [KAnonymity(3), DistinctLDiversity(2)]).sort("q").select(
...     "q", "size", "pass_k_anonymity_3", "pass_distinct_l_2").collect().rows()
[('a', 3, True, True), ('b', 3, True, False)]
>>> size = FrequencySet(pl.LazyFrame({"size": [1, 2], "n": [4, 5]}), ("size",), ())
>>> evaluate_classes(size, [KAnonymity(5)]).sort("size").select(
...     "size", "size_", "pass_k_anonymity_5").collect().rows()
[(1, 4, False), (2, 5, True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet, unique_name
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import (
    DISTINCT,
    ROW_M,
    ROW_P,
    ROW_Q,
    ROW_W,
    SIZE,
    ClassContext,
    Model,
    value_col,
)
from ldiv_polars.models.boundary import (
    ROW_N,
    decide_uncertain,
    exact_pass_col,
    exact_value_col,
    uncertain_col,
)

KEY = "__ldiv_key"
"""Prefix of the key columns inside an evaluation (``__ldiv_key0``, ...)."""

IN_MEMORY = "in-memory"
"""The engine that collects the verdicts of a collected frequency set (:func:`collect_unnamed`):
its fixed cost is lower than the streaming engine's on a table already in memory, and its
per-class sums add the rows in their order, so that a float statistic is the same on every
run (the streaming engine's morsels may add them in another order: the last bit varies)."""


@dataclass(frozen=True)
class ClassNames:
    """The public names of the columns :func:`evaluate_classes` adds next to the
    quasi-identifiers ``qi``: the column's own name, with ``_`` appended while it is a QI's.

    >>> ClassNames(("size", "zip")).size, ClassNames(("zip",)).passed_col("k_2")
    ('size_', 'pass_k_2')
    """

    qi: tuple[str, ...]

    def column(self, name: str) -> str:
        """``name``, with ``_`` appended while it clashes with a quasi-identifier."""
        return unique_name(name, self.qi)

    @property
    def size(self) -> str:
        """The class-size column's name in the result."""
        return self.column(SIZE)

    @property
    def distinct(self) -> str:
        """The distinct-sensitive-values column's name in the result."""
        return self.column(DISTINCT)

    def passed_col(self, key: str) -> str:
        """The pass column of the model with this ``key``."""
        return self.column(f"pass_{key}")


def _reference_from(rows: pl.LazyFrame, s: str, count: str = COUNT) -> pl.LazyFrame:
    return rows.group_by(s).agg(pl.col(count).sum().cast(pl.Int64).alias(ROW_N)).with_columns(
        (pl.col(ROW_N) / pl.col(ROW_N).sum()).alias(ROW_Q),
        pl.len().cast(pl.Int64).alias(ROW_M),
    ).select(s, ROW_Q, ROW_M, ROW_N)


def reference_distribution(
    reference: pl.LazyFrame | pl.DataFrame, s: str
) -> pl.LazyFrame:
    """Normalize a reference table of counts to ``(s, ROW_Q, ROW_M, ROW_N)``: columns ``s`` and
    ``n``, or, when ``s`` is itself named ``n`` (or there is no ``n``), ``s`` and one other
    column.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when those columns are not there."""
    ref = reference.lazy() if isinstance(reference, pl.DataFrame) else reference
    names = ref.collect_schema().names()
    others = [c for c in names if c != s]
    count = COUNT if COUNT in others else (others[0] if len(others) == 1 else None)
    if s not in names or count is None:
        raise InvalidParameterError(
            f"a reference distribution needs columns {s!r} and {COUNT!r}, got {names}"
        )
    return _reference_from(ref.select(s, count), s, count)


def evaluate_classes(
    fs: FrequencySet,
    models: Sequence[Model],
    *,
    reference: pl.LazyFrame | pl.DataFrame | None = None,
) -> pl.LazyFrame:
    """One row per equivalence class of ``fs``: the qi columns, ``size``, ``distinct``, each
    model's statistics, its value ``<key>__value`` and a boolean ``pass_<model.key>`` column
    (an added column named like a QI gets ``_`` appended: :class:`ClassNames`).

    ``reference`` optionally gives the table distribution of the sensitive column as counts
    ``(s, n)`` (default: the distribution of ``fs`` itself). Partitioning algorithms that
    evaluate candidate sub-partitions pass the whole table's distribution here.

    Verdicts are exact: a class whose float statistic lies within its rounding bound of a
    threshold (``Model.uncertain()``) is decided by the model's exact routine
    (``Model.decide``) on its counts, see :mod:`ldiv_polars.models.exact`.
    """
    inner, keys = _internal(fs)
    classes = evaluate_internal(inner, models, reference=_renamed(reference, fs, inner),
                                names=fs.qi)
    names = ClassNames(fs.qi)
    helper = {c for m in models for c in (uncertain_col(m), exact_pass_col(m),
                                            exact_value_col(m))}
    out = [pl.col(c).alias(keys.get(c) or names.column(c))
           for c in classes.collect_schema().names() if c not in helper]
    return classes.select(out)


def evaluate_unnamed(fs: FrequencySet, models: Sequence[Model], *,
                     reference: pl.LazyFrame | pl.DataFrame | None = None) -> pl.LazyFrame:
    """:func:`evaluate_classes` with the key columns left under internal names, so that the
    added columns keep their plain names (``size``, ``pass_<key>``, ``<key>__value``): for
    table-level results, which do not read the keys."""
    inner, _ = _internal(fs)
    return evaluate_internal(inner, models, reference=_renamed(reference, fs, inner),
                                names=fs.qi)


def collect_unnamed(fs: FrequencySet, models: Sequence[Model], *,
                    reference: pl.LazyFrame | pl.DataFrame | None = None) -> pl.DataFrame:
    """:func:`evaluate_unnamed`, collected, for a caller that collects at once (``check``): the
    class table is collected before the exact step, which then runs only when some class is
    within rounding of a threshold (on real data usually none), so that it costs nothing
    otherwise. ``fs`` should be collected (:meth:`FrequencySet.materialize`): its rows are
    read again when a class is uncertain."""
    inner, _ = _internal(fs)
    return evaluate_internal(inner, models, reference=_renamed(reference, fs, inner),
                             collect=True, names=fs.qi)


def internal_keys(fs: FrequencySet) -> list[str]:
    """The names of ``fs``'s keys (qi, then sensitive) inside an evaluation, in order: those
    of :func:`evaluate_unnamed`'s key columns."""
    return [f"{KEY}{i}" for i in range(len(fs.keys))]


def _internal(fs: FrequencySet) -> tuple[FrequencySet, dict[str, str]]:
    """``fs`` with its keys renamed ``__ldiv_key<i>``, its count ``n`` and its weight sums
    (if any) ``ROW_W``, and the map back from the internal quasi-identifier names."""
    internal = internal_keys(fs)
    weight = [pl.col(fs.weight).alias(ROW_W)] if fs.weight else []
    frame = fs.frame.select([pl.col(k).alias(i) for k, i in zip(fs.keys, internal)]
                            + [pl.col(fs.count).alias(COUNT)] + weight)
    q = len(fs.qi)
    inner = FrequencySet(frame, tuple(internal[:q]), tuple(internal[q:]), COUNT, fs.unique,
                         ROW_W if fs.weight else None)
    return inner, dict(zip(internal[:q], fs.qi))


def _renamed(reference: pl.LazyFrame | pl.DataFrame | None, fs: FrequencySet,
             inner: FrequencySet) -> pl.LazyFrame | None:
    if reference is None or not fs.sensitive:
        return None
    s, s_in = fs.sensitive[0], inner.sensitive[0]
    ref = reference.lazy() if isinstance(reference, pl.DataFrame) else reference
    # renamed before it is normalized: a sensitive column named like a helper column of the
    # normalized table (``__ldiv_q``...) cannot clash with it
    return reference_distribution(ref.rename({s: s_in}), s_in)


def evaluate_internal(fs: FrequencySet, models: Sequence[Model], *,
                      reference: pl.LazyFrame | pl.DataFrame | None = None,
                      collect: bool = False, names: tuple[str, ...] = ()
                      ) -> pl.LazyFrame | pl.DataFrame:
    """:func:`evaluate_classes` on a frequency set whose key names clash with nothing of the
    evaluation (its count column named ``n``), named as it is: ``size``, ``distinct``, the
    models' columns, ``pass_<key>``. ``reference``: counts ``(s, n)`` or already normalized
    (:func:`reference_distribution`). ``collect``: a DataFrame, the exact step run only when
    a class needs it (:func:`collect_unnamed`); otherwise a LazyFrame. ``names``: the
    caller's QI names (:attr:`ClassContext.names`).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` on a model requested twice or one
    needing a sensitive column that ``fs`` lacks."""
    plan = _class_plan(fs, models, reference, names, cache=not collect)
    if collect:
        return _collected_verdicts(plan, models)
    classes = plan.classes
    if plan.exact:
        classes = decide_uncertain(classes, plan.rows, plan.ref, plan.qi, plan.s, plan.exact)
    return _verdicts(classes, models, plan.exact)


@dataclass(frozen=True)
class _ClassPlan:
    """An evaluation before its verdicts: the per-class aggregations (``classes``, lazy),
    the frequency-set rows and reference distribution the exact step reads, and the models
    that have one (``exact``; none without a sensitive column, ``s`` then None) with their
    per-class flags (``flags``: :meth:`Model.uncertain` named :func:`uncertain_col`)."""

    classes: pl.LazyFrame
    rows: pl.LazyFrame
    ref: pl.LazyFrame
    qi: list[str]
    s: str | None
    exact: list[Model]
    flags: list[pl.Expr]


def _class_plan(fs: FrequencySet, models: Sequence[Model],
                reference: pl.LazyFrame | pl.DataFrame | None, names: tuple[str, ...], *,
                cache: bool) -> _ClassPlan:
    """The per-class aggregations of :func:`evaluate_internal` (same arguments and errors).
    ``cache``: the rows cached for the lazy exact step, which reads them again in the same
    plan (a collected evaluation reads them in a query of its own)."""
    models = list(models)
    keys = [m.key for m in models]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise InvalidParameterError(f"model(s) requested twice: {', '.join(dup)}")
    qi = list(fs.qi)
    frame = fs.frame if fs.count == COUNT else fs.frame.rename({fs.count: COUNT})
    if not fs.sensitive:
        classes = _without_sensitive(fs, models, frame, names)
        return _ClassPlan(classes, frame, pl.LazyFrame(), qi, None, [], [])
    s = fs.sensitive[0]
    uncertain = [(m, m.uncertain()) for m in models]
    exact = [m for m, u in uncertain if u is not None]
    flags = [u.alias(uncertain_col(m)) for m, u in uncertain if u is not None]
    rows = frame.cache() if exact and cache else frame
    ref = _reference_of(rows, reference, s)
    if any(m.needs_q for m in models):
        rows = rows.with_columns(
            (pl.col(COUNT) / pl.col(COUNT).sum().over(qi)).alias(ROW_P)
        ).join(ref, on=s, how="left", nulls_equal=True)
    ctx = ClassContext(fs.qi, fs.sensitive, rows, ref, names, fs.weight)
    aggs = [e for m in models for e in m.aggs(ctx)]
    # the rows of a class are its distinct values when no two rows share their keys
    distinct = pl.len() if fs.unique and len(fs.sensitive) == 1 else pl.col(s).n_unique()
    classes = rows.group_by(qi).agg(
        pl.col(COUNT).sum().alias(SIZE),
        distinct.alias(DISTINCT),
        *aggs,
    )
    return _ClassPlan(_joined_frames(classes, models, ctx), rows, ref, qi, s, exact, flags)


def _joined_frames(classes: pl.LazyFrame, models: Sequence[Model], ctx: ClassContext
                   ) -> pl.LazyFrame:
    """``classes`` with every model's extra per-class frames (:meth:`Model.frames`) joined on
    the quasi-identifiers."""
    for m in models:
        for extra in m.frames(ctx):
            classes = classes.join(extra, on=list(ctx.qi), how="left", nulls_equal=True)
    return classes


def _without_sensitive(fs: FrequencySet, models: list[Model], frame: pl.LazyFrame,
                       names: tuple[str, ...] = ()) -> pl.LazyFrame:
    """The per-class aggregations of a frequency set without a sensitive column (its count
    named ``n``), before the verdicts; raises :class:`InvalidParameterError` when a model
    needs one."""
    needing = [m.describe() for m in models if m.needs_sensitive]
    if needing:
        raise InvalidParameterError(
            f"{', '.join(needing)} need(s) a sensitive column; none was given"
        )
    ctx = ClassContext(fs.qi, fs.sensitive, frame, pl.LazyFrame(), names, fs.weight)
    aggs = [e for m in models for e in m.aggs(ctx)]
    classes = frame.group_by(list(fs.qi)).agg(pl.col(COUNT).sum().alias(SIZE), *aggs)
    return _joined_frames(classes, models, ctx)


def _reference_of(rows: pl.LazyFrame, reference: pl.LazyFrame | pl.DataFrame | None,
                  s: str) -> pl.LazyFrame:
    """The normalized reference distribution: ``rows``' own, or ``reference`` (counts, or
    already normalized)."""
    if reference is None:
        return _reference_from(rows, s)
    if ROW_N in reference.collect_schema().names():
        return reference.lazy()
    return reference_distribution(reference, s)


def _collected_verdicts(plan: _ClassPlan, models: Sequence[Model]) -> pl.DataFrame:
    """The verdicts of :func:`evaluate_internal` collected: the class table with the exact
    models' flags first; the exact step only when a flag is set (else the float verdicts are
    the exact ones: every class is outside its rounding bound)."""
    exact = plan.exact
    if not exact:
        return _verdicts(plan.classes, models, []).collect(engine=IN_MEMORY)
    # one collect in the common case: the float verdicts with the flags
    table = _verdicts(plan.classes.with_columns(plan.flags), models, []).collect(
        engine=IN_MEMORY)
    if not table.select(pl.any_horizontal(uncertain_col(m) for m in exact).any()).item():
        return table
    floats = dict.fromkeys([value_col(m) for m in models] + [f"pass_{m.key}" for m in models])
    decided = decide_uncertain(table.drop(list(floats)).lazy(), plan.rows, plan.ref, plan.qi,
                               plan.s, exact)  # type: ignore[arg-type]
    return _verdicts(decided, models, exact).collect(engine=IN_MEMORY)


def _verdicts(classes: pl.LazyFrame, models: Sequence[Model], exact: Sequence[Model]
              ) -> pl.LazyFrame:
    """The value and pass columns (the exact ones where a class was decided exactly)."""
    decided = {m.key for m in exact}
    values, passes = [], []
    for m in models:
        v, ok = m.value(), m.passes()
        if m.key in decided:
            unc = pl.col(uncertain_col(m))
            v = pl.when(unc).then(pl.col(exact_value_col(m))).otherwise(v)
            ok = pl.when(unc).then(pl.col(exact_pass_col(m))).otherwise(ok)
        values.append(v.alias(value_col(m)))
        passes.append(ok.alias(f"pass_{m.key}"))
    return classes.with_columns(values).with_columns(passes)
