"""What every engine provides, and which engine reads an input.

An engine is one module of this package exposing an object that satisfies :class:`Engine`:

- :meth:`Engine.frequency_set`: the frequency set ``(qi..., sensitive..., n)`` of the input,
  collected as a small Polars DataFrame (the one pass over the rows), under the null policy
  of :func:`~ldiv_polars.core.validate.raise_on_nulls` and with the engine's read errors
  mapped by :func:`~ldiv_polars.core.inputs.translate_input_errors`;
- :meth:`Engine.encoded_counts`: the same counts keyed on each QI's index among the raw
  values of its hierarchy (:class:`EncodedCounts`), what the lattice search rolls up;
- :meth:`Engine.release`: the output of an :class:`OutputPlan` (each QI replaced by its
  label at the chosen level, the suppressed classes masked or dropped) and its retained rows,
  whose frequency set (:meth:`Engine.plan_frequency_set`, by the same engine) re-verifies
  the release; :meth:`Engine.write` writes the output;
- :meth:`Engine.schema` and :meth:`Engine.plan_frequency_set`: the input's columns (no rows
  read) and its frequency set as a lazy Polars plan, columns checked at once and counted by
  the engine when collected (what ``check``, ``summary`` and ``anonymize`` build on).

:func:`engine_for` picks the engine from the input's type or an explicit name.

>>> import polars as pl
>>> engine_for(pl.DataFrame({"a": [1]})).name, engine_for("t.parquet", "duckdb").name
('polars', 'duckdb')
>>> import numpy as np
>>> places([4, 3, 2]), decode_keys(np.array([23, 5]), [4, 3, 2]).tolist()
([6, 2, 1], [[3, 2, 1], [0, 2, 1]])
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import polars as pl

from ldiv_polars.core.frequency import FrequencySet, count_name, weight_name
from ldiv_polars.core.suppressed import MASK
from ldiv_polars.core.validate import (
    NullPolicy,
    check_null_policy,
    validate_columns,
    validate_weight,
)
from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:  # numpy is imported where keys are decoded: `ldiv check` never needs it
    import numpy as np

EngineName = Literal["polars", "duckdb", "spark"]
ENGINES: tuple[str, ...] = ("polars", "duckdb", "spark")

KEY_LIMIT = 2**62
"""Mixed-radix keys stay below this bound (int64 with headroom for sums of place values)."""


def places(cards: Sequence[int]) -> list[int]:
    """Place value of each digit of a mixed-radix number with these digit cardinalities, the
    first digit most significant: the key of a QI combination is ``sum(code_i * places[i])``
    (the encoded counts' keys, the search's class keys).

    >>> places([4, 3, 2])
    [6, 2, 1]
    """
    return [math.prod(cards[i + 1:]) for i in range(len(cards))]


def fits_key(cards: Sequence[int]) -> bool:
    """Whether every combination of codes with these cardinalities has a key below
    :data:`KEY_LIMIT`."""
    return math.prod(max(int(c), 1) for c in cards) < KEY_LIMIT


def key_runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group rows by their int64 ``keys`` with one sort: the distinct keys, ascending, and the
    rows of each (the length of its run in the sorted keys). The one grouping of rows the
    engines do in numpy: the Polars engine's in-memory QI-only keys
    (:func:`~ldiv_polars.core.engines.polars.keyed_counts`) and a small frame's keys or cells
    (:mod:`~ldiv_polars.core.engines.small_frame`).

    >>> import numpy as np
    >>> uniq, n = key_runs(np.array([5, 2, 5, 5, 9]))
    >>> uniq.tolist(), n.tolist()
    ([2, 5, 9], [1, 3, 1])
    """
    import numpy as np

    ordered = np.sort(keys)
    rows = ordered.shape[0]
    first = np.empty(rows, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    del first
    n = np.diff(starts, append=rows).astype(np.int64, copy=False)
    return ordered[starts].astype(np.int64, copy=False), n


def decode_keys(keys: np.ndarray, cards: Sequence[int]) -> np.ndarray:
    """The codes of mixed-radix ``keys`` (see :func:`places`): ``(rows, q)`` int32 in Fortran
    order (each QI's codes contiguous; ``.T`` is the C-contiguous ``(q, rows)``). Digits are
    taken from the least significant one, dividing the rest down (one division per QI), in
    int32 when the keys fit; ``v % c`` as ``v - v // c * c`` (numpy divides by a scalar with
    libdivide but not its remainder)."""
    import numpy as np

    q = len(cards)
    out = np.empty((keys.shape[0], q), np.int32, order="F")
    if not q:
        return out
    dt = np.int32 if math.prod(int(c) for c in cards) <= 2**31 else np.int64
    rest = keys.astype(dt, copy=False)
    t = np.empty(keys.shape[0], dt)
    quo = [np.empty(keys.shape[0], dt) for _ in range(min(q - 1, 2))]
    for j, i in enumerate(range(q - 1, 0, -1)):
        c = cards[i]
        np.floor_divide(rest, c, out=quo[j % 2])
        np.multiply(quo[j % 2], c, out=t)
        np.subtract(rest, t, out=out[:, i], casting="unsafe")  # < c: fits int32
        rest = quo[j % 2]
    out[:, 0] = rest
    return out


@dataclass
class EncodedCounts:
    """A frequency set keyed on the QIs' raw-value indices (a QI value's *code* is its index
    among the raw values of its hierarchy, in hierarchy order), in one of three forms:

    - ``keys``/``n``: the QI-only form, one mixed-radix key per QI combination
      (:func:`places`; ``ordered`` when ascending);
    - ``frame``: a collected :class:`~ldiv_polars.core.frequency.FrequencySet` whose QI
      columns hold the codes (Int32) and whose sensitive columns hold the values;
    - ``codes``/``sensitive_ids``/``n`` with ``sensitive_values``: the ``(QI, sensitive)``
      cells as arrays, ``(q, rows)`` codes and each sensitive value's id (its position in
      ``sensitive_values``). Cells in ``(class, sensitive id)`` order may come as
      ``class_keys`` instead of ``codes``: each cell's mixed-radix class key (:func:`places`
      over each QI's number of raw values), ascending; :meth:`cell_codes` decodes them.

    ``raw_counts`` (per QI, the rows of each raw value) is set when the engine counted them in
    its pass; ``rollups`` is the number of groupings the engine did beyond the pass (summing
    the sensitive column out). ``source`` is an open engine handle for counts read after the
    search (:meth:`close` releases it)."""

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    keys: np.ndarray | None = None
    n: np.ndarray | None = None
    ordered: bool = False
    frame: FrequencySet | None = None
    codes: np.ndarray | None = None
    sensitive_ids: np.ndarray | None = None
    sensitive_values: pl.Series | None = None
    raw_counts: list[np.ndarray] | None = None
    rollups: int = 0
    source: Any = field(default=None, repr=False)
    class_keys: np.ndarray | None = None
    raw_cards: tuple[int, ...] = ()
    """The number of raw values of each QI (the radix of ``class_keys``)."""

    def cell_codes(self) -> np.ndarray | None:
        """The cells' ``(q, rows)`` codes: ``codes``, or ``class_keys`` decoded
        (C-contiguous int32); None in the other forms.

        >>> import numpy as np
        >>> EncodedCounts(("a", "b"), ("s",), class_keys=np.array([1, 5, 5]),
        ...               raw_cards=(2, 3)).cell_codes().tolist()
        [[0, 1, 1], [1, 2, 2]]
        """
        if self.codes is not None or self.class_keys is None:
            return self.codes
        return decode_keys(self.class_keys, self.raw_cards).T

    @property
    def form(self) -> str:
        """``"keys"``, ``"frame"`` or ``"cells"``."""
        if self.frame is not None:
            return "frame"
        return "keys" if self.keys is not None else "cells"

    def close(self) -> None:
        """Release the engine handle, if any."""
        if self.source is not None:
            self.source.close()
            self.source = None


def held_enum(dtype: pl.DataType, held: Iterable[object]) -> pl.Enum:
    """The Enum ``dtype`` narrowed to the categories in ``held``, in its own order: a release
    written with it names no value its rows do not hold (a Parquet dictionary lists every
    category of the column's dtype).

    >>> held_enum(pl.Enum(["a", "b", "c"]), ["c", "a", "c"]).categories.to_list()
    ['a', 'c']
    """
    have = set(held)
    return pl.Enum([v for v in dtype.categories.to_list()  # type: ignore[attr-defined]
                    if v in have])


@dataclass(frozen=True)
class OutputPlan:
    """A full-domain release: per QI, its raw values (``leaves``, in hierarchy order) and the
    label each one takes at the chosen level (``labels``, aligned with ``leaves``, of the
    output's dtype); ``suppressed`` the output labels of the suppressed classes (a Series of
    structs over the QI columns, None when none is), masked with ``mask`` or dropped
    (``mode``). ``dtypes``: per QI, the dtype the written output takes when narrower than the
    labels' (an Enum of only the labels some retained row holds, so the release's dictionary
    names no value that only suppressed rows held); None or a missing QI: the labels' dtype.
    It may also name other columns of the input, cast alike when they are Enums."""

    qi: tuple[str, ...]
    leaves: Mapping[str, pl.Series]
    labels: Mapping[str, pl.Series]
    suppressed: pl.Series | None
    mode: Literal["mask", "drop"] = "mask"
    mask: str = MASK
    dtypes: Mapping[str, pl.DataType] | None = None

    def output_casts(self) -> dict[str, pl.DataType]:
        """The columns whose written dtype differs from the release's (:attr:`dtypes`; a QI's
        labels' dtype, another column's as read), with it.

        >>> e = pl.Enum(["a", "b", "*"])
        >>> p = OutputPlan(("z",), {"z": pl.Series(["a"])}, {"z": pl.Series(["a"], dtype=e)},
        ...                None, dtypes={"z": pl.Enum(["a", "*"])})
        >>> p.output_casts()
        {'z': Enum(categories=['a', '*'])}
        """
        if not self.dtypes:
            return {}
        return {q: dt for q, dt in self.dtypes.items()
                if q not in self.labels or dt != self.labels[q].dtype}

    def retained_classes(self, written: pl.DataFrame) -> pl.DataFrame | None:
        """The rows of ``written`` (a frequency set of this plan's *output*, QI columns as
        written) that are retained classes: all of them when nothing is masked; else all but
        the masked rows' class (every QI equal to ``mask``). None when that class cannot be
        told from a retained one (every QI has ``mask`` among its labels): the retained rows
        must then be counted from the input.

        >>> p = OutputPlan(("z",), {"z": pl.Series(["a"])}, {"z": pl.Series(["a*"])},
        ...                pl.Series([{"z": "a*"}]))
        >>> p.retained_classes(pl.DataFrame({"z": ["a*", "*"], "n": [3, 2]})).rows()
        [('a*', 3)]
        """
        if self.mode == "drop" or self.suppressed is None or self.suppressed.len() == 0:
            return written
        if all(self.labels[q].cast(pl.String).eq(self.mask).any() for q in self.qi):
            return None
        masked = pl.all_horizontal(pl.col(q).cast(pl.String) == self.mask for q in self.qi)
        return written.filter(~masked.fill_null(False))


@dataclass
class Release:
    """An engine's release of an :class:`OutputPlan`: ``output`` (lazy, not yet written) and
    ``retained`` (the rows not suppressed), both plans over the input in the engine's own
    form (Polars LazyFrames; Spark DataFrames)."""

    output: Any
    retained: Any


@runtime_checkable
class Engine(Protocol):
    """One query engine. Implementations live in one module each and are stateless (a
    per-call handle, e.g. a connection, is opened and closed inside a call)."""

    name: str
    distributed: bool
    """Whether the engine keeps the rows where they are (Spark): it reads the input itself,
    releases and writes in place, and only frequency sets reach this process."""

    def accepts(self, data: object) -> bool:
        """Whether ``data`` is an input this engine reads natively (its own frame or
        relation type)."""

    def frequency_set(self, data: Any, qi: Any, sensitive: Any, *, nulls: NullPolicy = "error",
                      separator: str | None = None, weight: str | None = None
                      ) -> FrequencySet:
        """The collected frequency set ``(qi..., sensitive..., n)`` of ``data`` (columns
        validated first; typed errors for bad input, unreadable rows and nulls under
        ``nulls="error"``); with ``weight`` also the sum of that column per key
        (:attr:`FrequencySet.weight`, the errors of :meth:`FrequencySet.build`)."""

    def encoded_counts(self, data: Any, qi: Sequence[str], sensitive: Sequence[str],
                       leaves: Mapping[str, pl.Series], *, nulls: NullPolicy = "error",
                       qi_only: bool = False, order_from: int | None = None
                       ) -> EncodedCounts | None:
        """The counts keyed on raw-value codes (``leaves[q]``: QI ``q``'s raw values in
        hierarchy order); ``qi_only`` sums the sensitive columns out; keys of at least
        ``order_from`` rows are returned ascending (``ordered``). ``None`` when a QI value is
        null or not a raw value (the caller then builds the typed error from the plain
        frequency set)."""

    def release(self, data: Any, plan: OutputPlan) -> Release:
        """The output of ``plan`` over ``data`` and its retained rows."""

    def write(self, output: Any, path: Any, *, inputs: Any = (),
              expected_rows: int | None = None, check: Any = None,
              metadata: dict[str, str] | None = None) -> None:
        """Write a release's ``output`` to ``path`` atomically (never over one of ``inputs``;
        its rows counted back against ``expected_rows``; ``check``, when given, called with
        the written temporary file or directory before it is renamed into place: raising
        there leaves ``path`` untouched, an existing file or directory included;
        ``metadata``: what a Parquet file records, where the engine can write it)."""

    def input_paths(self, data: Any) -> tuple[str, ...]:
        """The files ``data`` reads (a writer refuses to overwrite them)."""

    def schema(self, data: Any, separator: str | None = None) -> pl.Schema:
        """The input's column names and dtypes, read without reading rows (typed errors for
        a bad path)."""

    def plan_frequency_set(self, data: Any, qi: Any, sensitive: Any, *,
                           nulls: NullPolicy = "error", separator: str | None = None,
                           require_sensitive: bool = False, weight: str | None = None
                           ) -> FrequencySet:
        """The frequency set as a lazy plan: columns (and the ``weight`` column) validated
        now, rows read when it is collected."""


def deferred_frequency_set(engine: Engine, data: Any, qi: Any, sensitive: Any, *,
                           nulls: NullPolicy = "error", separator: str | None = None,
                           require_sensitive: bool = False, weight: str | None = None
                           ) -> FrequencySet:
    """:meth:`Engine.plan_frequency_set` for an engine that collects its frequency set itself
    (DuckDB, Spark): the columns validated on :meth:`Engine.schema` at once, the engine's
    :meth:`Engine.frequency_set` run when the plan is collected (``pl.defer``), so the
    layers above read one lazy Polars frame whatever the engine."""
    check_null_policy(nulls)
    schema = engine.schema(data, separator)
    qi_t, s_t = validate_columns(pl.LazyFrame(schema=schema), qi, sensitive,
                                 require_sensitive=require_sensitive)
    keys = [*qi_t, *s_t]
    count = count_name(keys)
    columns = {**{k: schema[k] for k in keys}, count: pl.Int64}
    wname = None
    if weight is not None:
        validate_weight(schema, weight, keys)
        wname = weight_name(keys)
        columns[wname] = pl.Float64

    def run() -> pl.DataFrame:
        fs = engine.frequency_set(data, qi_t, s_t, nulls=nulls, separator=separator,
                                  weight=weight)
        names = {fs.count: count, **({fs.weight: wname} if fs.weight and wname else {})}
        return fs.frame.collect().rename(names)

    frame = pl.defer(run, schema=columns)
    return FrequencySet(frame, qi_t, s_t, count, weight=wname)


def engine_for(data: object, engine: str | None = None) -> Engine:
    """The engine reading ``data``: the one named by ``engine`` (``polars``, ``duckdb``,
    ``spark``), else the engine whose native type ``data`` is (a DuckDB relation: DuckDB; a
    PySpark DataFrame: Spark), else Polars (paths, Polars frames, pyarrow tables). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for an unknown name or an engine that
    is not installed."""
    if engine is not None:
        if engine not in ENGINES:
            raise InvalidParameterError(
                f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        return _load(engine)
    module = type(data).__module__ or ""
    if module.startswith(("duckdb", "_duckdb")):
        return _load("duckdb")
    if module.startswith("pyspark"):
        return _load("spark")
    return _load("polars")


def _load(name: str) -> Engine:
    try:
        mod = importlib.import_module(f"ldiv_polars.core.engines.{name}")
    except ImportError as exc:
        raise InvalidParameterError(
            f"the {name} engine is not available ({exc}); install its extra, e.g. "
            f"pip install 'ldiv_polars[{name}]'") from None
    return mod.ENGINE


__all__ = [
    "ENGINES",
    "Engine",
    "EncodedCounts",
    "KEY_LIMIT",
    "OutputPlan",
    "Release",
    "decode_keys",
    "deferred_frequency_set",
    "engine_for",
    "fits_key",
    "held_enum",
    "places",
]
