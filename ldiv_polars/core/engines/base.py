"""What every engine provides, and which engine reads an input.

An engine is one module of this package exposing an object that satisfies :class:`Engine`:

- :meth:`Engine.frequency_set`: the frequency set ``(qi..., sensitive..., n)`` of the input,
  collected as a small Polars DataFrame (the one pass over the rows), under the null policy
  of :func:`~ldiv_polars.core.validate.raise_on_nulls` and with the engine's read errors
  mapped by :func:`~ldiv_polars.core.inputs.translate_input_errors`;
- :meth:`Engine.encoded_counts`: the same counts keyed on each QI's index among the raw
  values of its hierarchy (:class:`EncodedCounts`), what the lattice search rolls up;
- :meth:`Engine.release`: the output of an :class:`OutputPlan` (each QI replaced by its
  label at the chosen level, the suppressed classes masked or dropped) and the frequency set
  of its retained rows, from which the release is re-verified.

:func:`engine_for` picks the engine from the input's type or an explicit name.

>>> import polars as pl
>>> engine_for(pl.DataFrame({"a": [1]})).name, engine_for("t.parquet", "duckdb").name
('polars', 'duckdb')
>>> places([4, 3, 2]), decode_keys(np.array([23, 5]), [4, 3, 2]).tolist()
([6, 2, 1], [[3, 2, 1], [0, 2, 1]])
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.errors import InvalidParameterError

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


def decode_keys(keys: np.ndarray, cards: Sequence[int]) -> np.ndarray:
    """The codes of mixed-radix ``keys`` (see :func:`places`): ``(rows, q)`` int32 in Fortran
    order (each QI's codes contiguous; ``.T`` is the C-contiguous ``(q, rows)``). Digits are
    taken from the least significant one, dividing the rest down (one division per QI), in
    int32 when the keys fit; ``v % c`` as ``v - v // c * c`` (numpy divides by a scalar with
    libdivide but not its remainder)."""
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
      ``sensitive_values``).

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


@dataclass(frozen=True)
class OutputPlan:
    """A full-domain release: per QI, its raw values (``leaves``, in hierarchy order) and the
    label each one takes at the chosen level (``labels``, aligned with ``leaves``, of the
    output's dtype); ``suppressed`` the output labels of the suppressed classes (a Series of
    structs over the QI columns, None when none is), masked with ``mask`` or dropped
    (``mode``)."""

    qi: tuple[str, ...]
    leaves: Mapping[str, pl.Series]
    labels: Mapping[str, pl.Series]
    suppressed: pl.Series | None
    mode: Literal["mask", "drop"] = "mask"
    mask: str = "*"


@dataclass
class Release:
    """An engine's release of an :class:`OutputPlan`: ``output`` (lazy, not yet written) and
    ``retained`` (the rows not suppressed), both plans over the input."""

    output: pl.LazyFrame
    retained: pl.LazyFrame


@runtime_checkable
class Engine(Protocol):
    """One query engine. Implementations live in one module each and are stateless (a
    per-call handle, e.g. a connection, is opened and closed inside a call)."""

    name: str

    def accepts(self, data: object) -> bool:
        """Whether ``data`` is an input this engine reads natively (its own frame or
        relation type)."""

    def frequency_set(self, data: Any, qi: Any, sensitive: Any, *, nulls: NullPolicy = "error",
                      separator: str | None = None) -> FrequencySet:
        """The collected frequency set ``(qi..., sensitive..., n)`` of ``data`` (columns
        validated first; typed errors for bad input, unreadable rows and nulls under
        ``nulls="error"``)."""

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
    "engine_for",
    "fits_key",
    "places",
]
