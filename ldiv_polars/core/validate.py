"""Column and parameter validation, done on the schema before any row is read.

>>> import polars as pl
>>> lf = pl.LazyFrame({"age": [30], "zip": ["13053"], "disease": ["flu"]})
>>> validate_columns(lf, ["age", "zip"], ["disease"])
(('age', 'zip'), ('disease',))
>>> validate_columns(lf, ["age", "zipp"], ["disease"])
Traceback (most recent call last):
...
ldiv_polars.errors.UnknownColumnError: unknown column(s): 'zipp' (available: ...)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import polars as pl

from ldiv_polars.errors import (
    DuplicateColumnError,
    EmptyQuasiIdentifierError,
    InvalidParameterError,
    NullValuesError,
    SensitiveInQuasiIdentifierError,
    UnknownColumnError,
)

NullPolicy = Literal["error", "value"]
"""How nulls in a quasi-identifier or sensitive column are handled: ``"error"`` raises
:class:`~ldiv_polars.errors.NullValuesError` naming each column and its null count;
``"value"`` treats null as a value of its own (one more equivalence class / sensitive value)."""


def as_names(columns: str | Iterable[str] | None) -> tuple[str, ...]:
    """Normalize a column argument (one name, a comma-free iterable, or None) to a tuple;
    raises :class:`~ldiv_polars.errors.InvalidParameterError` on a name that is not a string."""
    if columns is None:
        return ()
    if isinstance(columns, str):
        return (columns,)
    names = tuple(columns)
    for c in names:
        if not isinstance(c, str):
            raise InvalidParameterError(f"column names must be strings, got {c!r}")
    return names


def validate_columns(
    lf: pl.LazyFrame,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    *,
    reserved: Sequence[str] = (),
    require_sensitive: bool = True,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Check the column lists against ``lf``'s schema and return them as tuples.

    Raises :class:`EmptyQuasiIdentifierError`, :class:`DuplicateColumnError`,
    :class:`SensitiveInQuasiIdentifierError`, :class:`UnknownColumnError`, or
    :class:`InvalidParameterError` for a column of a nested type (list, array, struct).
    ``reserved`` names columns the caller will create under a name the user chose (e.g. an
    output column), which therefore may not be used; the library's own helper columns never
    need it (they pick names that do not clash,
    :func:`~ldiv_polars.core.frequency.unique_name`).
    """
    qi_t = as_names(qi)
    s_t = as_names(sensitive)
    if not qi_t:
        raise EmptyQuasiIdentifierError("the list of quasi-identifier columns is empty")
    if require_sensitive and not s_t:
        raise InvalidParameterError("a sensitive column is required")
    for group, label in ((qi_t, "quasi-identifier"), (s_t, "sensitive")):
        dup = sorted({c for c in group if group.count(c) > 1})
        if dup:
            names = ", ".join(map(repr, dup))
            raise DuplicateColumnError(f"{label} column(s) named twice: {names}")
    both = [c for c in s_t if c in qi_t]
    if both:
        raise SensitiveInQuasiIdentifierError(
            f"sensitive column(s) {', '.join(map(repr, both))} also listed as quasi-identifier"
        )
    schema = lf.collect_schema()
    names = schema.names()
    missing = [c for c in (*qi_t, *s_t) if c not in schema]
    if missing:
        raise UnknownColumnError(missing, names)
    clash = [c for c in (*qi_t, *s_t) if c in reserved]
    if clash:
        raise InvalidParameterError(
            f"column(s) {', '.join(map(repr, clash))} clash with a column name the caller "
            f"creates ({', '.join(map(repr, reserved))}); rename them or pick another name"
        )
    reject_nested(schema, (*qi_t, *s_t))
    return qi_t, s_t


def reject_nested(schema: pl.Schema, columns: Iterable[str], where: str = "") -> None:
    """Raise :class:`InvalidParameterError` naming the ``columns`` of ``schema`` whose type is
    nested (list, array, struct) or an object: a quasi-identifier, sensitive or group column
    holds one value per row. ``where``: the table named in the message, when not the data.

    >>> reject_nested(pl.Schema({"a": pl.Int64, "b": pl.List(pl.String)}), ["a"])
    >>> try:
    ...     reject_nested(pl.Schema({"a": pl.Int64, "b": pl.List(pl.String)}), ["a", "b"])
    ... except InvalidParameterError as e:
    ...     print(str(e)[-32:])
    not a list, array or struct: 'b'
    """
    nested = [repr(c) for c in columns if schema[c].is_nested() or schema[c] == pl.Object]
    if nested:
        raise InvalidParameterError(
            "a quasi-identifier, sensitive or group column holds one value per row (a string, "
            f"a number, a date, ...), not a list, array or struct: {', '.join(nested)}"
            + (f" (in {where})" if where else ""))


def check_null_policy(nulls: str) -> None:
    """Raise :class:`~ldiv_polars.errors.InvalidParameterError` unless ``nulls`` is ``"error"``
    or ``"value"``."""
    if nulls not in ("error", "value"):
        raise InvalidParameterError(f"nulls must be 'error' or 'value', got {nulls!r}")


def null_counts_in(df: pl.DataFrame, columns: Sequence[str], count: str) -> dict[str, int]:
    """Rows with a null in each of ``columns`` of a frequency set (weighted by ``count``)."""
    out: dict[str, int] = {}
    if df.height == 0:
        return out
    row = df.select(
        [pl.col(count).filter(pl.col(c).is_null()).sum().alias(c) for c in columns]
    ).row(0)
    for c, n in zip(columns, row):
        if n:
            out[c] = int(n)
    return out


def raise_null_counts(counts: Mapping[str, int], order: Sequence[str]) -> None:
    """The error of the null policy ``"error"``, made here only (every engine counts its nulls
    and calls this): raise :class:`~ldiv_polars.errors.NullValuesError` naming, in ``order``,
    each column of ``counts`` with a nonzero number of rows; nothing when there is none.

    >>> raise_null_counts({"s": 0, "zip": 2}, ["zip", "s"])
    Traceback (most recent call last):
    ...
    ldiv_polars.errors.NullValuesError: null values in 'zip': 2 null(s); ...
    """
    found = {c: int(counts[c]) for c in order if counts.get(c)}
    if found:
        raise NullValuesError(found)


def raise_on_nulls(df: pl.DataFrame, columns: Sequence[str], count: str) -> None:
    """Raise :class:`~ldiv_polars.errors.NullValuesError` (with the rows per column, weighted by
    the ``count`` column) when any of ``columns`` of the frequency set ``df`` holds a null."""
    raise_null_counts(null_counts_in(df, columns, count), columns)


def validate_weight(schema: pl.Schema, weight: str, keys: Sequence[str]) -> str:
    """``weight``, after checking it names a numeric column of ``schema`` that is not one of
    the group-by ``keys`` (a quasi-identifier or sensitive column): the sampling weights a
    frequency set sums per key. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` otherwise (before any row is read).

    >>> validate_weight(pl.Schema({"q": pl.Int64, "w": pl.Float64}), "w", ["q"])
    'w'
    >>> validate_weight(pl.Schema({"q": pl.Int64}), "q", ["q"])
    Traceback (most recent call last):
    ...
    ldiv_polars.errors.InvalidParameterError: weight column 'q' is also a quasi-identifier or sensitive column
    """
    if not isinstance(weight, str) or weight not in schema:
        raise InvalidParameterError(
            f"weight column {weight!r} is not in the data (columns: {', '.join(schema.names())})")
    if weight in keys:
        raise InvalidParameterError(
            f"weight column {weight!r} is also a quasi-identifier or sensitive column")
    if not schema[weight].is_numeric():
        raise InvalidParameterError(
            f"weight column {weight!r} must be numeric, got {schema[weight]}")
    return weight


def invalid_weight(weight: str) -> pl.Expr:
    """Per row: the weight in column ``weight`` (cast to Float64) is null, NaN, infinite or
    not positive, i.e. not a sampling weight (sum it per key to count the bad rows in the
    same pass that groups them; :func:`raise_on_bad_weights` reads the sum)."""
    w = pl.col(weight).cast(pl.Float64)
    return w.is_null() | ~w.is_finite() | (w <= 0)


def raise_on_bad_weights(bad: int, weight: str) -> None:
    """The one error for rows whose sampling weight is null, non-finite or not positive
    (``bad`` of them; nothing when 0): :class:`~ldiv_polars.errors.InvalidParameterError`.

    >>> raise_on_bad_weights(2, "w")
    Traceback (most recent call last):
    ...
    ldiv_polars.errors.InvalidParameterError: weight column 'w' holds 2 null, non-finite or non-positive value(s); sampling weights must be finite and > 0
    """
    if bad:
        raise InvalidParameterError(
            f"weight column {weight!r} holds {bad} null, non-finite or non-positive value(s); "
            "sampling weights must be finite and > 0")


# --- parameters -------------------------------------------------------------------------------


def require_int_at_least(name: str, value: object, low: int) -> int:
    """``value`` as an int ``>= low`` (any integral number, numpy's included, or an integral
    float); otherwise :class:`InvalidParameterError`."""
    if isinstance(value, bool) or not (
        isinstance(value, numbers.Integral)
        or (isinstance(value, numbers.Real) and float(value).is_integer())
    ):
        raise InvalidParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    v = int(value)  # type: ignore[call-overload]
    if v < low:
        raise InvalidParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    return v


def require_real(name: str, value: object, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, finite: bool = False) -> float:
    """``value`` as a float, checked to be a real number (not bool, not NaN; not infinite when
    ``finite``) in the given range (bounds inclusive unless ``low_open``/``high_open``); else
    :class:`~ldiv_polars.errors.InvalidParameterError` naming ``name``.

    >>> require_real("t", 0.5, low=0.0, high=1.0)
    0.5
    >>> try:
    ...     require_real("c", float("inf"), low=0.0, finite=True)
    ... except ValueError as e:
    ...     print(e)
    c must be a finite number, got inf"""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(float(value)):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if finite and math.isinf(v):
        raise InvalidParameterError(f"{name} must be a finite number, got {value!r}")
    bad = False
    if low is not None and (v < low or (low_open and v == low)):
        bad = True
    if high is not None and (v > high or (high_open and v == high)):
        bad = True
    if bad:
        lo = "(" if low_open else "["
        hi = ")" if high_open or (high is None and finite) else "]"
        rng = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
        raise InvalidParameterError(f"{name} must be in {rng}, got {value!r}")
    return v
