"""The Polars engine: lazy plans over paths, globs, Parquet directories, Polars frames and
pyarrow tables, collected by the streaming engine (an in-memory DataFrame by the in-memory
one, whose fixed cost is lower).

>>> import polars as pl
>>> df = pl.DataFrame({"zip": ["b", "a", "b"], "s": ["x", "y", "x"]})
>>> ENGINE.frequency_set(df, "zip", "s").frame.sort("zip").collect().rows()
[('a', 'y', 1), ('b', 'x', 2)]
>>> enc = ENGINE.encoded_counts(df, ("zip",), (), {"zip": pl.Series(["a", "b"])},
...                             order_from=0)
>>> enc.form, enc.keys.tolist(), enc.n.tolist()
('keys', [0, 1], [1, 2])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ldiv_polars.core.engines.base import (
    EncodedCounts,
    OutputPlan,
    Release,
    fits_key,
    held_enum,
    key_runs,
    places,
)
from ldiv_polars.core.engines.raw_codes import leaf_enum, raw_index
from ldiv_polars.core.engines.small_frame import SMALL_FRAME_MAX_ROWS, small_frame_counts
from ldiv_polars.core.frequency import (
    COUNT,
    STREAMING,
    FrequencySet,
    count_name,
    guard_nulls,
    unique_name,
)
from ldiv_polars.core.inputs import (
    input_paths,
    CSV_SUFFIXES,
    sniff_separator,
    to_lazyframe,
    translate_input_errors,
)
from ldiv_polars.core.output import atomic_output
from ldiv_polars.core.validate import NullPolicy, raise_on_nulls

_KEY = "__ldiv_key"
_FLAG = "__ldiv_suppressed"


class PolarsEngine:
    """The Polars engine (see the module docstring)."""

    name = "polars"
    distributed = False

    def accepts(self, data: object) -> bool:
        """Polars frames are this engine's own."""
        return isinstance(data, (pl.DataFrame, pl.LazyFrame))

    def frequency_set(self, data: Any, qi: Any, sensitive: Any, *, nulls: NullPolicy = "error",
                      separator: str | None = None, weight: str | None = None
                      ) -> FrequencySet:
        """The collected frequency set (see :meth:`FrequencySet.build` for the errors)."""
        return FrequencySet.build(data, qi, sensitive, nulls=nulls, separator=separator,
                                  weight=weight).materialize()

    def encoded_counts(self, data: Any, qi: Sequence[str], sensitive: Sequence[str],
                       leaves: Mapping[str, pl.Series], *, nulls: NullPolicy = "error",
                       qi_only: bool = False, order_from: int | None = None
                       ) -> EncodedCounts | None:
        """The counts grouped on each QI's raw-value index (an Enum cast in the engine)
        instead of its values: the same classes, a cheaper group-by. Without a sensitive
        column the engine groups on one Int64 key per row (:func:`keyed_counts`); otherwise
        the result is a frame with Int32 QI codes and the sensitive values (also under
        ``qi_only``: the search sums them out itself, counting that roll-up). ``None``
        when a QI value is null or not a raw value. A DataFrame of up to
        ``SMALL_FRAME_MAX_ROWS`` rows is grouped in numpy (:mod:`.small_frame`: the keys or
        the cells, with each raw value's rows), a larger one by the in-memory engine,
        anything else streams. ``order_from``: keys of at least this many rows are returned
        in ascending order (never when None)."""
        with translate_input_errors(data if isinstance(data, (str, Path)) else None):
            return _encoded_counts(data, tuple(qi), tuple(sensitive), leaves, nulls, order_from)

    def release(self, data: Any, plan: OutputPlan) -> Release:
        """Generalize, then mask or drop the suppressed classes: lazy plans that stream."""
        return _release(to_lazyframe(data), plan)

    def write(self, output: Any, path: str | Path, *, inputs: Iterable[object] = (),
              expected_rows: int | None = None, check: Callable[[Path], object] | None = None,
              metadata: dict[str, str] | None = None) -> None:
        """Stream ``output`` (a LazyFrame) to ``path`` (Parquet or CSV by its suffix) through
        :func:`~ldiv_polars.core.output.atomic_output` (``check`` and ``metadata`` as
        :meth:`Engine.write <ldiv_polars.core.engines.base.Engine.write>` says)."""
        with atomic_output(path, inputs=inputs, metadata=metadata) as out:
            out.write(output)
            if expected_rows is not None:
                out.check_rows(expected_rows)
            if check is not None:
                check(out.path)

    def input_paths(self, data: Any) -> tuple[str, ...]:
        """The files ``data`` reads (:func:`~ldiv_polars.core.inputs.input_paths`)."""
        return input_paths(data)

    def schema(self, data: Any, separator: str | None = None) -> pl.Schema:
        """The schema of the lazy scan (a path's header or footer only)."""
        return to_lazyframe(data, separator=separator).collect_schema()

    def plan_frequency_set(self, data: Any, qi: Any, sensitive: Any, *,
                           nulls: NullPolicy = "error", separator: str | None = None,
                           require_sensitive: bool = False, weight: str | None = None
                           ) -> FrequencySet:
        """:meth:`FrequencySet.build` (a lazy plan that streams)."""
        return FrequencySet.build(data, qi, sensitive, nulls=nulls, separator=separator,
                                  require_sensitive=require_sensitive, weight=weight)


ENGINE = PolarsEngine()


def _encoded_counts(data: Any, qi: tuple[str, ...], sensitive: tuple[str, ...],
                    leaves: Mapping[str, pl.Series], nulls: NullPolicy,
                    order_from: int | None) -> EncodedCounts | None:
    """:meth:`PolarsEngine.encoded_counts` (engine errors not yet translated); a small
    DataFrame grouped in numpy (:func:`~ldiv_polars.core.engines.small_frame.small_frame_counts`)
    when that path applies."""
    if isinstance(data, pl.DataFrame) and data.height <= SMALL_FRAME_MAX_ROWS:
        small = small_frame_counts(data, qi, sensitive, leaves)
        if small is not None:
            return small
    collect = "in-memory" if isinstance(data, pl.DataFrame) else STREAMING
    lf = to_lazyframe(data)
    schema = lf.collect_schema()
    codes = []
    for q in qi:
        c = raw_index(q, leaves[q], schema, strict=False)
        if c is None:
            return None
        codes.append(c)
    cards = [len(leaves[q]) for q in qi]
    if not sensitive and fits_key(cards):
        return keyed_counts(lf, qi, codes, cards, collect, order_from)
    exprs = [c.cast(pl.Int32).fill_null(-1).alias(q) for c, q in zip(codes, qi)]
    # the encoded QI columns are never null (a null or unknown value is -1, and the caller
    # then raises the typed error): the null guard is needed for sensitive columns only
    enc = FrequencySet.build(lf.with_columns(exprs), qi, sensitive,
                             nulls=nulls if sensitive else "value").materialize()
    df = enc.frame.collect()
    if df.height and bool(df.select(pl.min_horizontal(pl.col(q).min() for q in qi) < 0)
                          .item()):
        return None
    return EncodedCounts(qi, sensitive, frame=enc)


def encode_counted(frame: pl.DataFrame, qi: Sequence[str], sensitive: Sequence[str],
                   count: str, leaves: Mapping[str, pl.Series], *, keyed: bool,
                   nulls: NullPolicy = "error", order_from: int | None = None
                   ) -> EncodedCounts | None:
    """A frequency set counted elsewhere on the raw values (``frame``: ``qi``, ``sensitive``
    unless ``keyed``, and the rows per group in ``count``; e.g. collected from Spark) encoded as
    :meth:`PolarsEngine.encoded_counts` encodes rows, each QI value matched to its raw-value
    index as this engine matches it (:func:`raw_index`): with ``keyed``, one Int64 key per
    class (:func:`keyed_counts`, the counts summed); otherwise the frame of Int32 codes with
    the sensitive values (null sensitive values raise under ``nulls="error"``). ``None`` when
    a QI value is null or not a raw value.

    >>> f = pl.DataFrame({"zip": ["b", "a"], "s": ["x", "y"], "n": [2, 1]})
    >>> enc = encode_counted(f, ("zip",), ("s",), "n", {"zip": pl.Series(["a", "b"])},
    ...                      keyed=False)
    >>> enc.frame.frame.sort("zip").collect().rows()
    [(0, 'y', 1), (1, 'x', 2)]
    """
    qi, sensitive = tuple(qi), tuple(sensitive)
    codes = []
    for q in qi:
        c = raw_index(q, leaves[q], frame.schema, strict=False)
        if c is None:
            return None
        codes.append(c)
    if keyed:
        cards = [len(leaves[q]) for q in qi]
        return keyed_counts(frame.lazy(), qi, codes, cards, "in-memory", order_from,
                            weight=count)
    coded = frame.select([c.cast(pl.Int32).alias(q) for c, q in zip(codes, qi)]
                         + [pl.col(s) for s in sensitive] + [pl.col(count).cast(pl.Int64)])
    if coded.height and coded.select(pl.sum_horizontal(pl.col(q).null_count() for q in qi)
                                     ).item():
        return None
    if nulls == "error":
        raise_on_nulls(coded, sensitive, count)
    # distinct values have distinct codes, but values Spark grouped apart may share a string
    # form (-0.0 and 0.0): summed again so each class is one row
    coded = coded.group_by([*qi, *sensitive]).agg(pl.col(count).sum())
    return EncodedCounts(qi, sensitive, frame=FrequencySet(coded.lazy(), qi, sensitive, count))


def _release(lf: pl.LazyFrame, plan: OutputPlan) -> Release:
    """The release of ``plan`` over ``lf`` (see :meth:`PolarsEngine.release`)."""
    schema = lf.collect_schema()
    qi = list(plan.qi)
    gen = lf.with_columns([generalize(q, plan.leaves[q], plan.labels[q], schema).alias(q)
                           for q in qi])
    # the written Enums: only the labels (values) released rows hold; a column not a QI is
    # cast only when it is an Enum (a plan made on another site's counts may name it)
    casts = {c: dt for c, dt in plan.output_casts().items()
             if c in plan.qi or isinstance(schema.get(c), pl.Enum)}
    if plan.suppressed is None:
        return Release(_cast(gen, casts), gen)
    # suppressed classes as one set tested row by row: an elementwise expression, so the
    # output plan streams (a left join with maintain_order buffered the table)
    flag = _suppressed_flag(plan)
    retained = gen.filter(~flag)
    if plan.mode == "drop":
        casts = {**_held_enums(retained, schema, [*qi, *casts]), **casts}
        return Release(_cast(retained, casts), retained)
    name = unique_name(_FLAG, schema.names())  # never a column of the input
    masked = gen.with_columns(flag.alias(name)).with_columns(
        [pl.when(pl.col(name)).then(pl.lit(plan.mask, dtype=plan.labels[q].dtype))
         .otherwise(pl.col(q)).alias(q) for q in qi]
    ).drop(name)
    return Release(_cast(masked, casts), retained)


def _held_enums(retained: pl.LazyFrame, schema: pl.Schema, skip: Sequence[str]
                ) -> dict[str, pl.DataType]:
    """The Enum columns of ``schema`` but ``skip`` (a drop-mode release's other columns,
    passed through) narrowed to the values the ``retained`` rows hold, in their order: the
    written dictionary then names no value only dropped rows held. One pass over those
    columns of the retained rows, made only when there are such columns.

    >>> e = pl.Enum(["a", "b", "c"])
    >>> lf = pl.LazyFrame({"q": [1, 2], "o": ["c", "a"]}, schema={"q": pl.Int64, "o": e})
    >>> _held_enums(lf, lf.collect_schema(), ["q"])
    {'o': Enum(categories=['a', 'c'])}
    """
    enums = [c for c, dt in schema.items() if c not in skip and isinstance(dt, pl.Enum)]
    if not enums:
        return {}
    held = retained.select(pl.col(c).unique().implode() for c in enums).collect().row(0)
    return {c: held_enum(schema[c], values) for c, values in zip(enums, held)}


def _cast(lf: pl.LazyFrame, casts: Mapping[str, pl.DataType]) -> pl.LazyFrame:
    """``lf`` with the columns of ``casts`` cast to their dtype (strict: every value is one of
    the new dtype's), unchanged without casts."""
    return lf.with_columns(pl.col(c).cast(dt) for c, dt in casts.items()) if casts else lf


def _suppressed_flag(plan: OutputPlan) -> pl.Expr:
    """Whether a generalized row belongs to a suppressed class of ``plan``: its class key
    (:func:`enum_key` over the output's Enum labels) in the suppressed classes' keys, or,
    when the labels give no key, its struct of QI labels in the suppressed structs."""
    qi = list(plan.qi)
    assert plan.suppressed is not None
    dtypes = [plan.labels[q].dtype for q in qi]
    key = enum_key(qi, dtypes)
    supp = plan.suppressed.struct.unnest()
    if key is not None and [supp.schema.get(q) for q in qi] == dtypes:
        keys = supp.select(key).to_series()
        if not keys.null_count():  # (a row with a null label is in no suppressed class)
            return key.is_in(keys.implode()).fill_null(False)
    return pl.struct(qi).is_in(plan.suppressed.implode())


def enum_key(columns: Sequence[str], dtypes: Sequence[pl.DataType]) -> pl.Expr | None:
    """One Int64 per row naming the combination of the Enum ``columns`` (of these
    ``dtypes``): the mixed-radix number of their physical codes, radix each Enum's number
    of categories (:func:`~ldiv_polars.core.engines.base.places`), so equal keys are equal
    label tuples (null when a label is null). None when a column is not an Enum or the
    combinations do not fit a key.

    >>> e = pl.Enum(["a", "b", "c"])
    >>> df = pl.DataFrame({"x": ["c", "a"], "y": ["b", "b"]}, schema={"x": e, "y": e})
    >>> df.select(enum_key(["x", "y"], [e, e])).to_series().to_list()
    [7, 1]
    """
    if not all(isinstance(d, pl.Enum) for d in dtypes):
        return None
    cards = [max(len(d.categories), 1) for d in dtypes]  # type: ignore[attr-defined]
    if not fits_key(cards):
        return None
    key = pl.lit(0, pl.Int64)
    for c, m in zip(columns, places(cards)):  # (`+`: a null digit makes the key null)
        key = key + pl.col(c).to_physical().cast(pl.Int64) * m
    return key


def keyed_frequency_set(lf: pl.LazyFrame, qi: Sequence[str]) -> FrequencySet | None:
    """The lazy QI-only frequency set of ``lf`` when its QI columns are Enums (a release's):
    the rows grouped on one Int64 key (:func:`enum_key`), each key read back into its QI
    labels (the same classes and counts as ``FrequencySet.build(lf, qi, None)``, a cheaper
    group-by than on the QI columns' rows); it raises
    :class:`~ldiv_polars.errors.NullValuesError` when collected if a QI value is null.
    None when a QI column is not an Enum or the key would not fit.

    >>> e = pl.Enum(["a", "b"])
    >>> lf = pl.LazyFrame({"x": ["b", "a", "b"]}, schema={"x": e})
    >>> keyed_frequency_set(lf, ["x"]).frame.sort("x").collect().rows()
    [('a', 1), ('b', 2)]
    """
    schema = lf.collect_schema()
    dtypes = [schema[q] for q in qi]
    key = enum_key(qi, dtypes)
    if key is None:
        return None
    cards = [max(len(d.categories), 1) for d in dtypes]  # type: ignore[attr-defined]
    count = count_name(qi)
    k = unique_name(_KEY, [*qi, count])
    labels = [pl.lit(pl.Series(q, d.categories, dtype=d))  # type: ignore[attr-defined]
              .gather(pl.col(k) // m % c).alias(q)
              for q, d, m, c in zip(qi, dtypes, places(cards), cards)]
    counted = lf.select(key.alias(k)).group_by(k).agg(pl.len().cast(pl.Int64).alias(count))
    frame = guard_nulls(counted.select(*labels, pl.col(count)), qi, count)
    return FrequencySet(frame, tuple(qi), (), count, unique=True)


def generalize(q: str, leaves: pl.Series, labels: pl.Series, schema: pl.Schema) -> pl.Expr:
    """QI ``q``'s output values: a gather of ``labels`` (one per raw value, of the output
    dtype) by each row's raw index (:func:`raw_index`, strict: the values were validated
    against the hierarchy), so the streaming engine hashes no string per row."""
    idx = raw_index(q, leaves, schema, strict=True)
    if idx is None:  # pragma: no cover - validated hierarchies have unique raw values
        return pl.col(q).cast(pl.String).replace_strict(leaves.cast(pl.String), labels)
    return pl.lit(labels).gather(idx)


def keyed_counts(lf: pl.LazyFrame, qi: Sequence[str], codes: Sequence[pl.Expr],
                 cards: Sequence[int], collect: str, order_from: int | None = None,
                 weight: str | None = None) -> EncodedCounts | None:
    """QI-only counts grouped by the engine on one Int64 key per row, the mixed-radix number of
    the QIs' raw-value indices (``codes``; :func:`~ldiv_polars.core.engines.base.places`):
    one key column is grouped faster than one column per QI. Each row counts once, or
    ``weight`` times (the count column of a frequency set already grouped on the raw values).
    Sorted by key when there are ``order_from`` keys or more (the search merges runs of
    ordered keys). ``None`` when a QI value is null or not a raw value (its key is null).
    Rows in memory (``collect="in-memory"``, no ``weight``) are grouped by one sort of their
    keys (:func:`_sorted_key_counts`): the keys then come out ascending whatever
    ``order_from``."""
    key: pl.Expr | None = None
    for c, m in zip(codes, places(cards)):
        digit = c.cast(pl.Int64) * m
        key = digit if key is None else key + digit
    if key is None:
        key = pl.lit(0, pl.Int64)
    if collect == "in-memory" and weight is None:
        return _sorted_key_counts(lf.select(key.alias(_KEY)).collect().to_series(), qi,
                                  order_from)
    n = pl.len() if weight is None else pl.col(weight).sum()
    cols = [key.alias(_KEY)] + ([] if weight is None else [pl.col(weight)])
    df = (lf.select(cols).group_by(_KEY).agg(n.cast(pl.Int64).alias(COUNT))
          .collect(engine=collect))
    ordered = order_from is not None and df.height >= order_from
    if ordered:
        df = df.sort(_KEY)
    keys = df.get_column(_KEY)
    if keys.null_count():
        return None
    import numpy as np  # here only: `ldiv check` never needs numpy

    return EncodedCounts(tuple(qi), (), keys=keys.to_numpy().astype(np.int64, copy=False),
                         n=df.get_column(COUNT).to_numpy().astype(np.int64, copy=False),
                         ordered=ordered)


def _sorted_key_counts(keys: pl.Series, qi: Sequence[str], order_from: int | None
                       ) -> EncodedCounts | None:
    """The ``keys`` form of :func:`keyed_counts` from every row's key (``keys``, Int64):
    numpy sorts them and each run of equal keys is one class, its length the class's rows
    (:func:`~ldiv_polars.core.engines.base.key_runs`, as a small frame is counted: a sort
    of the in-memory rows' keys costs less than the engine's hash group-by followed by the
    sort of its groups). ``ordered`` as there: at least ``order_from`` classes.
    ``None`` when a key is null.

    >>> enc = _sorted_key_counts(pl.Series([5, 2, 5, 5, 9]), ("q",), 2)
    >>> enc.keys.tolist(), enc.n.tolist(), enc.ordered
    ([2, 5, 9], [1, 3, 1], True)
    """
    if keys.null_count():
        return None
    uniq, n = key_runs(keys.to_numpy())
    return EncodedCounts(tuple(qi), (), keys=uniq, n=n,
                         ordered=order_from is not None and uniq.shape[0] >= order_from)


def read_coded(path: str | Path, separator: str | None, lf: pl.LazyFrame, qi: Sequence[str],
               leaves: Mapping[str, pl.Series]) -> pl.DataFrame:
    """The CSV at ``path`` read into memory with each QI column parsed straight into the Enum
    of its raw values (:func:`leaf_enum`) instead of strings: the frequency-set pass and the
    output read the codes. Only when every QI value is a raw value and none is null;
    otherwise ``lf`` (the same file, scanned as usual) collected, and the string path names
    the values or applies the null policy."""
    enums = {q: leaf_enum(leaves[q]) for q in qi}
    if any(e is None for e in enums.values()):
        return lf.collect()
    p = Path(path)
    sep = separator or sniff_separator(p, p.suffix.lower())
    try:
        coded = pl.scan_csv(p, separator=sep, schema_overrides=enums).collect()
    except pl.exceptions.ComputeError:  # a value that is not a raw value of its hierarchy
        return lf.collect()
    if coded.select(pl.sum_horizontal(pl.col(q).null_count() for q in qi)).item():
        return lf.collect()
    return coded


def small_csv(data: object, limit: int) -> bool:
    """Whether ``data`` is the path of one CSV file of at most ``limit`` bytes."""
    if not isinstance(data, (str, Path)):
        return False
    path = Path(data)
    return path.suffix.lower() in CSV_SUFFIXES and path.is_file() \
        and path.stat().st_size <= limit


def sensitive_enums(retained: pl.LazyFrame, values: pl.DataFrame
                    ) -> tuple[pl.LazyFrame, dict[str, pl.DataType]]:
    """The retained rows with each String sensitive column cast to an Enum of its distinct
    values (all of the table's are in ``values``, the distinct sensitive tuples), and the
    dtypes to cast the verification's frequency set back to: the re-verification's streaming
    group-by then keys on small integers (less memory). Other dtypes are kept."""
    schema = retained.collect_schema()
    casts: list[pl.Expr] = []
    restore: dict[str, pl.DataType] = {}
    for c in values.columns:
        if schema.get(c) != pl.String:
            continue
        cats = values.get_column(c).drop_nulls()
        if values.width > 1:  # one column of distinct tuples may repeat a value
            cats = cats.unique().sort()
        casts.append(pl.col(c).cast(pl.Enum(cats)))
        restore[c] = pl.String()
    return (retained.with_columns(casts) if casts else retained), restore

