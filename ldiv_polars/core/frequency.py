"""The frequency set: the only pass over the rows.

``frequency_set(data, qi, sensitive)`` is a lazy ``group_by(qi + sensitive).len()``; every privacy
model of the library is an aggregation over it.

>>> import polars as pl
>>> df = pl.DataFrame({"zip": ["130", "130", "148"], "age": [1, 1, 2], "s": ["a", "b", "a"]})
>>> frequency_set(df, ["zip", "age"], "s").sort("zip", "s").collect().rows()
[('130', 1, 'a', 1), ('130', 1, 'b', 1), ('148', 2, 'a', 1)]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import polars as pl

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.core.inputs import TableLike, to_lazyframe, translate_input_errors
from ldiv_polars.core.validate import (
    NullPolicy,
    as_names,
    check_null_policy,
    invalid_weight,
    raise_on_bad_weights,
    raise_on_nulls,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import InvalidParameterError

COUNT = "n"
"""Default name of the count column of a frequency set (see :func:`count_name`)."""

STREAMING = "streaming"

WEIGHT_SUM = "weight_sum"
"""Default name of a frequency set's weight-sum column (see :func:`weight_name`): per key, the
sum of the rows' sampling weights (sdcMicro's ``F_k`` once summed per class)."""
BAD_WEIGHTS = "__ldiv_bad_weights"
"""The rows of a key whose weight is not a sampling weight, in a weighted group-by before
:func:`check_weighted` drops it."""


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base`` followed by as many ``_`` as needed to differ from every name in
    ``taken`` (for helper columns next to user columns: no user name is reserved).

    >>> unique_name("n", ["age", "n", "n_"])
    'n__'
    """
    names = set(taken)
    out = base
    while out in names:
        out += "_"
    return out


def unique_prefix(base: str, taken: Iterable[str]) -> str:
    """``base``, with ``_`` appended until no name in ``taken`` starts with it: a prefix for a
    family of helper columns next to user columns.

    >>> unique_prefix("__ldiv_", ["age", "__ldiv_row"])
    '__ldiv__'
    """
    names = list(taken)
    out = base
    while any(n.startswith(out) for n in names):
        out += "_"
    return out


def count_name(keys: Iterable[str]) -> str:
    """The count column of a frequency set keyed by ``keys``: ``n``, unless a key is named so."""
    return unique_name(COUNT, keys)


def weight_name(keys: Iterable[str]) -> str:
    """The weight-sum column of a frequency set keyed by ``keys``: ``weight_sum``, unless a key
    (or the count column) is named so."""
    keys = list(keys)
    return unique_name(WEIGHT_SUM, [*keys, count_name(keys)])


def _null_guard(df: pl.DataFrame, columns: tuple[str, ...], count: str) -> pl.DataFrame:
    raise_on_nulls(df, columns, count)
    return df


def guard_nulls(fs: pl.LazyFrame, keys: Iterable[str], count: str) -> pl.LazyFrame:
    """The grouped plan ``fs`` raising :class:`~ldiv_polars.errors.NullValuesError` when
    collected if a key column holds nulls (``count``: its rows per group, in the message)."""
    return fs.map_batches(partial(_null_guard, columns=tuple(keys), count=count),
                          schema=fs.collect_schema(), streamable=False)


def weighted_aggs(weight: str, name: str) -> list[pl.Expr]:
    """The aggregations a weighted frequency set adds to its count: the sum of ``weight``
    (Float64) named ``name``, and the rows whose weight is not a sampling weight
    (:func:`~ldiv_polars.core.validate.invalid_weight`), checked and dropped after the
    group-by."""
    return [pl.col(weight).cast(pl.Float64).sum().alias(name),
            invalid_weight(weight).sum().alias(BAD_WEIGHTS)]


def check_weighted(df: pl.DataFrame, weight: str) -> pl.DataFrame:
    """A collected group-by with :func:`weighted_aggs`: raise
    :class:`~ldiv_polars.errors.InvalidParameterError` when a row's weight was not a sampling
    weight, else the frame without the bad-row count."""
    raise_on_bad_weights(int(df.get_column(BAD_WEIGHTS).sum() or 0), weight)
    return df.drop(BAD_WEIGHTS)


def frequency_set(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    *,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    count: str = COUNT,
) -> pl.LazyFrame:
    """Lazy frequency set ``(qi..., sensitive..., count)`` of ``data``; nothing is collected.

    Columns are validated against the schema at once. With ``nulls="error"`` (default) the plan
    raises :class:`~ldiv_polars.errors.NullValuesError` when collected if a quasi-identifier or
    sensitive column holds nulls (the check reads the small grouped result, not the rows);
    ``nulls="value"`` keeps null as a value of its own. ``sensitive`` may be ``None`` for a
    QI-only frequency set (class sizes). ``count`` names the count column (default ``n``); a
    key column of that name is an :class:`~ldiv_polars.errors.InvalidParameterError` (pass
    another ``count``).
    """
    fs = FrequencySet.build(data, qi, sensitive, nulls=nulls, separator=separator)
    if count in fs.keys:
        raise InvalidParameterError(
            f"column {count!r} clashes with the count column of the frequency set; pass "
            f"count= with another name (e.g. count={unique_name(count, fs.keys)!r})")
    return fs.frame.rename({fs.count: count})


@dataclass(frozen=True)
class FrequencySet:
    """A frequency set with its column roles. ``frame`` may be lazy over the rows or over an
    already collected table (see :meth:`materialize`); ``count`` names its count column
    (``n`` unless a key has that name: :func:`count_name`). ``unique``: no two rows share
    their keys (a group-by's result, as :meth:`build` and :func:`merge_frequency_sets` make
    it), so that a class's rows are its distinct sensitive values (the evaluation then counts
    them without hashing the values); False when not known."""

    frame: pl.LazyFrame
    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    count: str = COUNT
    unique: bool = False
    weight: str | None = None
    """The weight-sum column (Float64: per key, the sum of the rows' sampling weights), when
    the set was built with ``weight=``; None otherwise."""

    @classmethod
    def build(
        cls,
        data: TableLike,
        qi: str | Iterable[str],
        sensitive: str | Iterable[str] | None,
        *,
        nulls: NullPolicy = "error",
        separator: str | None = None,
        require_sensitive: bool = False,
        weight: str | None = None,
    ) -> FrequencySet:
        """The lazy frequency set ``group_by(qi + sensitive).len()`` of ``data`` with its
        column roles.

        ``data`` is any accepted input (path, glob, DataFrame, LazyFrame); columns are
        validated against the schema at once
        (:class:`~ldiv_polars.errors.MissingColumnError` and friends, ``require_sensitive``
        makes a missing sensitive column an error). With ``nulls="error"`` the plan raises
        :class:`~ldiv_polars.errors.NullValuesError` when collected if a key column holds
        nulls; ``nulls="value"`` keeps null as a value. ``weight`` names a numeric column of
        sampling weights: the set then also sums them per key (column :attr:`weight`,
        :func:`weight_name`); a weight that is null, non-finite or not positive raises
        :class:`~ldiv_polars.errors.InvalidParameterError` when collected (a missing or
        non-numeric weight column at once). Nothing is collected here."""
        check_null_policy(nulls)
        lf = to_lazyframe(data, separator=separator)
        qi_t, s_t = validate_columns(lf, qi, sensitive, require_sensitive=require_sensitive)
        keys = [*qi_t, *s_t]
        count = count_name(keys)
        wname = None
        extra: list[pl.Expr] = []
        if weight is not None:
            validate_weight(lf.collect_schema(), weight, keys)
            wname = weight_name(keys)
            extra = weighted_aggs(weight, wname)
        fs = lf.group_by(keys).agg(pl.len().cast(pl.Int64).alias(count), *extra)
        if weight is not None:
            schema = fs.collect_schema()
            schema.pop(BAD_WEIGHTS)
            fs = fs.map_batches(partial(check_weighted, weight=weight), schema=schema,
                                streamable=False)
        if nulls == "error":
            fs = guard_nulls(fs, keys, count)
        return cls(fs, qi_t, s_t, count, unique=True, weight=wname)

    @property
    def keys(self) -> list[str]:
        """The group-by keys: the qi columns, then the sensitive ones."""
        return [*self.qi, *self.sensitive]

    def materialize(self) -> FrequencySet:
        """Collect the frequency set (streaming engine) and return one backed by it. This is
        the pass over the rows: an engine error on unreadable rows is raised as
        :class:`~ldiv_polars.errors.UnreadableInputError`."""
        return FrequencySet(self.collect().lazy(), self.qi, self.sensitive, self.count,
                            self.unique, self.weight)

    def collect(self) -> pl.DataFrame:
        """The frequency set as a DataFrame (see :meth:`materialize`)."""
        with translate_input_errors():
            return self.frame.collect(engine=STREAMING)


def merge_frequency_sets(sets: Iterable[FrequencySet | pl.DataFrame | pl.LazyFrame],
                         qi: str | Iterable[str] | None = None,
                         sensitive: str | Iterable[str] | None = None) -> FrequencySet:
    """One frequency set from several of the same columns (e.g. the counts of several sites
    holding disjoint rows): the union of their keys, each count the sum of the key's counts.
    The result is collected (small).

    ``sets`` are :class:`FrequencySet` objects (their roles must agree) or frames
    ``(qi..., sensitive..., n)``, then ``qi`` and ``sensitive`` name the roles. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` when no set is given, the roles differ,
    or two sets give a column different dtypes (a key must mean the same thing everywhere).

    >>> a = pl.DataFrame({"z": ["1", "2"], "s": ["x", "x"], "n": [2, 1]})
    >>> b = pl.DataFrame({"z": ["2"], "s": ["x"], "n": [4]})
    >>> merge_frequency_sets([a, b], "z", "s").frame.sort("z").collect().rows()
    [('1', 'x', 2), ('2', 'x', 5)]
    """
    items = list(sets)
    if not items:
        raise InvalidParameterError("merge_frequency_sets() needs at least one frequency set")
    roles = {(s.qi, s.sensitive) for s in items if isinstance(s, FrequencySet)}
    if qi is not None:
        roles.add((as_names(qi), as_names(sensitive) if sensitive is not None else ()))
    if len(roles) != 1:
        raise InvalidParameterError(
            "the frequency sets to merge name different columns "
            f"({'; '.join(sorted(str(r) for r in roles)) or 'no roles given'})")
    qi_t, s_t = roles.pop()
    keys = [*qi_t, *s_t]
    frames = [(s.frame if isinstance(s, FrequencySet) else s.lazy()).select([*keys, COUNT])
              for s in items]
    schemas = [f.collect_schema() for f in frames]
    for col in [*keys, COUNT]:
        dtypes = {str(sc[col]) for sc in schemas}
        if len(dtypes) > 1:
            raise InvalidParameterError(
                f"column {col!r} has different dtypes in the frequency sets to merge: "
                f"{', '.join(sorted(dtypes))}")
    with translate_input_errors():
        merged = (pl.concat(frames).group_by(keys)
                  .agg(pl.col(COUNT).sum().cast(pl.Int64)).collect())
    return FrequencySet(merged.lazy(), qi_t, s_t, unique=True)
