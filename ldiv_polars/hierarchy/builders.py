"""Builders for the common kinds of hierarchies; all return a validated :class:`Hierarchy`.

Raw values are labelled the way ``pl.Series(values).cast(pl.String)`` prints them, so a built
hierarchy matches the data column it was built from (``generalize_expr`` casts the same way).

>>> interval_hierarchy([3, 7, 12], widths=[5, 10]).frame.rows()
[('3', '0-4', '0-9', '*'), ('7', '5-9', '0-9', '*'), ('12', '10-14', '10-19', '*')]
>>> masking_hierarchy(["13053", "14850"]).mapping(2)
{'13053': '130**', '14850': '148**'}
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy

TOP = "*"


def _raw_labels(values: Iterable[object] | pl.Series) -> tuple[list[object], list[str]]:
    s = values if isinstance(values, pl.Series) else pl.Series("v", list(values), strict=False)
    s = s.drop_nulls().unique(maintain_order=True)
    if s.len() == 0:
        raise InvalidParameterError("a hierarchy needs at least one value")
    return s.to_list(), s.cast(pl.String).to_list()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _check_intervals(raw: Sequence[object], widths: Sequence[float], bottom: float | None,
                     top: float | None) -> None:
    """Raise :class:`InvalidParameterError` unless the values are numbers (no NaN), the widths
    positive and each a multiple of the previous one, and ``bottom < top``."""
    for v in raw:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(float(v)):
            raise InvalidParameterError(f"interval_hierarchy needs numeric values, got {v!r}")
    if not widths:
        raise InvalidParameterError("widths must name at least one interval width")
    prev = None
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0:
            raise InvalidParameterError(f"interval widths must be positive numbers, got {w!r}")
        if prev is not None:
            ratio = w / prev
            if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
                raise InvalidParameterError(
                    f"each interval width must be a multiple of the previous one so the levels "
                    f"nest; {w!r} is not a multiple of {prev!r}"
                )
        prev = w
    if bottom is not None and top is not None and not bottom < top:
        raise InvalidParameterError(f"bottom ({bottom!r}) must be below top ({top!r})")


def interval_hierarchy(
    values: Iterable[float] | pl.Series,
    widths: Sequence[float],
    *,
    bottom: float | None = None,
    top: float | None = None,
    origin: float = 0,
    name: str | None = None,
) -> Hierarchy:
    """Numeric intervals: level j groups values into intervals of width ``widths[j-1]`` starting
    at ``origin``; the last level is ``*``. Each width must be a multiple of the previous one
    (so the intervals nest). Values below ``bottom`` are labelled ``<bottom`` and values at or
    above ``top`` ``>=top`` at every level >= 1 (bottom/top coding).

    Integer intervals are labelled ``lo-hi`` inclusive (ARX style, e.g. ``20-24``); for
    non-integer widths or values the label is ``[lo, hi)``. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on no value, a value that is not a
    number (or NaN), no width, a width that is not positive or not a multiple of the previous
    one, or ``bottom >= top``.

    >>> interval_hierarchy([17, 25, 95], widths=[10], bottom=20, top=90).mapping(1)
    {'17': '<20', '25': '20-29', '95': '>=90'}
    """
    raw, labels = _raw_labels(values)
    _check_intervals(raw, widths, bottom, top)
    integral = (all(float(v).is_integer() for v in raw)
                and all(float(w).is_integer() for w in widths)
                and float(origin).is_integer())
    rows = []
    for v, lab in zip(raw, labels):
        row = [lab]
        for w in widths:
            if bottom is not None and v < bottom:
                row.append(f"<{_num(bottom)}")
            elif top is not None and v >= top:
                row.append(f">={_num(top)}")
            else:
                lo = origin + math.floor((v - origin) / w) * w
                if integral:
                    row.append(f"{int(lo)}-{int(lo + w - 1)}")
                else:
                    row.append(f"[{_num(lo)}, {_num(lo + w)})")
        row.append(TOP)
        rows.append(row)
    return Hierarchy(rows, name=name)


def masking_hierarchy(
    values: Iterable[object] | pl.Series,
    *,
    levels: int | None = None,
    mask: str = "*",
    name: str | None = None,
) -> Hierarchy:
    """Right-to-left masking: level j replaces the last j characters by ``mask``
    (``13053`` -> ``1305*`` -> ``130**`` ...); ``levels`` masked levels (default: the length
    of the longest value minus one), then a top level ``*``. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on no value, a negative ``levels`` or a
    ``mask`` that is not one character.

    >>> masking_hierarchy(["13053"], levels=2).frame.row(0)
    ('13053', '1305*', '130**', '*')
    """
    _, labels = _raw_labels(values)
    longest = max(len(v) for v in labels)
    n = max(longest - 1, 0) if levels is None else levels
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidParameterError(f"levels must be a non-negative integer, got {levels!r}")
    if len(mask) != 1:
        raise InvalidParameterError(f"mask must be one character, got {mask!r}")
    rows = []
    for v in labels:
        row = [v]
        for j in range(1, n + 1):
            keep = max(len(v) - j, 0)
            row.append(v[:keep] + mask * (len(v) - keep))
        row.append(TOP)
        rows.append(row)
    return Hierarchy(rows, name=name)


_DATE_LEVELS = ("month", "quarter", "year", "decade", "century")


def _date_label(d: dt.date, unit: str) -> str:
    if unit == "month":
        return f"{d.year:04d}-{d.month:02d}"
    if unit == "quarter":
        return f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}"
    if unit == "year":
        return f"{d.year:04d}"
    if unit == "decade":
        return f"{d.year // 10 * 10:04d}s"
    return f"{d.year // 100 * 100:04d}-{d.year // 100 * 100 + 99:04d}"


def date_hierarchy(
    values: Iterable[dt.date] | pl.Series,
    granularities: Sequence[str] = ("month", "year", "decade"),
    *,
    name: str | None = None,
) -> Hierarchy:
    """Date truncation: day -> ``granularities`` (any increasing subsequence of month, quarter,
    year, decade, century) -> ``*``. Values may be dates, datetimes or ISO date strings.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` on an unknown or out-of-order
    granularity, no value, or a value that is not a date.

    >>> date_hierarchy([dt.date(1994, 3, 7)]).frame.row(0)
    ('1994-03-07', '1994-03', '1994', '1990s', '*')
    """
    idx = []
    for g in granularities:
        if g not in _DATE_LEVELS:
            raise InvalidParameterError(
                f"unknown date granularity {g!r} (use {', '.join(_DATE_LEVELS)})"
            )
        idx.append(_DATE_LEVELS.index(g))
    if idx != sorted(set(idx)):
        raise InvalidParameterError(
            f"date granularities must be increasing and distinct, got {list(granularities)}"
        )
    raw, labels = _raw_labels(values)
    rows = []
    for v, lab in zip(raw, labels):
        if isinstance(v, str):
            try:
                d = dt.date.fromisoformat(v[:10])
            except ValueError as exc:
                raise InvalidParameterError(f"not an ISO date: {v!r}") from exc
        elif isinstance(v, (dt.date, dt.datetime)):
            d = v
        else:
            raise InvalidParameterError(f"date_hierarchy needs dates, got {v!r}")
        rows.append([lab, *(_date_label(d, g) for g in granularities), TOP])
    return Hierarchy(rows, name=name)


def ordered_hierarchy(
    order: Sequence[object],
    sizes: Sequence[int],
    *,
    fmt: str = "{first}..{last}",
    name: str | None = None,
) -> Hierarchy:
    """Ordered grouping of an ordinal list: level j groups ``sizes[j-1]`` consecutive values
    (each size a multiple of the previous one), labelled ``fmt`` with ``first``/``last``;
    then ``*``. Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``order`` is
    empty or lists a value twice or a null, or a size is not a positive multiple of the
    previous one.

    >>> ordered_hierarchy(["low", "mid", "high", "top"], [2]).mapping(1)
    {'low': 'low..mid', 'mid': 'low..mid', 'high': 'high..top', 'top': 'high..top'}
    """
    _, labels = _raw_labels(order)
    if len(labels) != len(order):
        raise InvalidParameterError("ordered_hierarchy: the order lists a value twice or a null")
    prev = 1
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, int) or s < 1 or s % prev:
            raise InvalidParameterError(
                f"group sizes must be positive integers, each a multiple of the previous one; "
                f"got {list(sizes)}"
            )
        prev = s
    rows = []
    for i, v in enumerate(labels):
        row = [v]
        for s in sizes:
            lo = i // s * s
            hi = min(lo + s, len(labels)) - 1
            row.append(labels[lo] if lo == hi else fmt.format(first=labels[lo], last=labels[hi]))
        row.append(TOP)
        rows.append(row)
    return Hierarchy(rows, name=name)


def taxonomy_hierarchy(tree: Mapping[str, object], *, name: str | None = None) -> Hierarchy:
    """A taxonomy given as a nested dict (inner nodes are keys; leaves are list items or keys
    mapped to ``None``/empty); the root ``*`` is added on top. Leaves shallower than the deepest
    one are repeated at the missing lower levels, so every row has the same height. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on an empty tree or a child that is
    neither a dict, a list nor ``None``.

    >>> t = taxonomy_hierarchy({"Europe": ["England", "France"], "Asia": {"East": ["Japan"]}})
    >>> t.frame.rows()  # doctest: +NORMALIZE_WHITESPACE
    [('England', 'England', 'Europe', '*'), ('France', 'France', 'Europe', '*'),
     ('Japan', 'East', 'Asia', '*')]
    """
    if not isinstance(tree, Mapping) or not tree:
        raise InvalidParameterError("taxonomy_hierarchy needs a non-empty dict")
    paths: list[list[str]] = []

    def walk(node: object, ancestors: list[str]) -> None:
        if node is None or (isinstance(node, (Mapping, list, tuple, set)) and not node):
            paths.append(ancestors)
        elif isinstance(node, Mapping):
            for k, child in node.items():
                walk(child, [*ancestors, str(k)])
        elif isinstance(node, (list, tuple)):
            for leaf in node:
                if isinstance(leaf, Mapping):
                    walk(leaf, ancestors)
                else:
                    paths.append([*ancestors, str(leaf)])
        else:
            raise InvalidParameterError(f"unexpected taxonomy node {node!r}")

    walk(tree, [])
    depth = max(len(p) for p in paths)
    rows = []
    for p in paths:
        leaf = p[-1]
        pad = [leaf] * (depth - len(p))
        rows.append([leaf, *pad, *reversed(p[:-1]), TOP])
    return Hierarchy(rows, name=name)
