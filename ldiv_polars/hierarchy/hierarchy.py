"""Generalization hierarchies: one row per raw value, one column per level (the ARX layout).

A :class:`Hierarchy` holds, for every raw value of an attribute (level 0), its generalization at
every level ``1 .. height-1`` (the last level is usually ``*``). Values are kept as strings, the
way ARX stores them in its CSV files; data columns are compared through ``cast(pl.String)``.

>>> h = Hierarchy([["13053", "1305*", "130**", "*"], ["13068", "1306*", "130**", "*"]])
>>> h.height, h.generalize_value("13068", 2)
(4, '130**')
>>> h.frame.columns
['level_0', 'level_1', 'level_2', 'level_3']
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from ldiv_polars.errors import (
    InputFormatError,
    InvalidParameterError,
    LdivError,
    UnreadableInputError,
)


class HierarchyError(LdivError, ValueError):
    """Base class of the errors about a generalization hierarchy."""


class HierarchyRaggedError(HierarchyError):
    """Rows of a hierarchy have different numbers of levels."""


class HierarchyDuplicateValueError(HierarchyError):
    """A raw value (level 0) appears on more than one row of a hierarchy."""


class HierarchyNotCoarseningError(HierarchyError):
    """A group at level j is split at level j+1, so the levels are not successive coarsenings."""


class HierarchyValueMissingError(HierarchyError):
    """A value of the data is not a raw value (level 0) of the hierarchy."""

    def __init__(self, column: str | None, missing: Sequence[str] | None = None,
                 total_missing: int | None = None) -> None:
        if missing is None or total_missing is None:
            # a message alone: raised so by generalize_expr, and Polars re-raises an error of
            # an expression's Python function as ``type(error)(message + context)``
            super().__init__(column)
            self.column, self.missing, self.total_missing = None, [], 0
            return
        self.column = column
        self.missing = list(missing)
        self.total_missing = int(total_missing)
        shown = ", ".join(repr(v) for v in self.missing[:5])
        more = f" and {total_missing - len(self.missing[:5])} more" if total_missing > 5 else ""
        where = f" of column {column!r}" if column is not None else ""
        super().__init__(
            f"{total_missing} value(s){where} missing from its hierarchy: {shown}{more}"
        )


def _level_name(j: int) -> str:
    return f"level_{j}"


class Hierarchy:
    """A full-domain generalization hierarchy of one attribute.

    ``rows`` is a sequence of rows ``[raw, level1, ..., top]`` (all rows the same length) or a
    ``pl.DataFrame`` in that layout (first column the raw value, one column per level). The
    hierarchy is validated on construction: no ragged rows, no duplicated raw value, and every
    level a coarsening of the previous one (each level-j group maps to one level-(j+1) group).

    >>> h = Hierarchy.from_rows({"a": ["x", "*"], "b": ["x", "*"], "c": ["y", "*"]})
    >>> h.mapping(1)
    {'a': 'x', 'b': 'x', 'c': 'y'}
    >>> h.leaves_under(1)
    {'x': 2, 'y': 1}
    """

    __slots__ = ("_frame", "name", "_codes")

    def __init__(self, rows: Sequence[Sequence[object]] | pl.DataFrame, *, name: str | None = None,
                 validate: bool = True) -> None:
        self.name = name
        if isinstance(rows, pl.DataFrame):
            if rows.width < 1:
                raise HierarchyError("a hierarchy needs at least one column (the raw values)")
            df = rows.select(
                [pl.col(c).cast(pl.String).alias(_level_name(j))
                 for j, c in enumerate(rows.columns)]
            )
            if validate and df.null_count().sum_horizontal().item() > 0:
                bad = [c for c, n in zip(df.columns, df.null_count().row(0)) if n]
                raise HierarchyRaggedError(
                    f"hierarchy{self._label()} has empty cells in level(s) "
                    f"{', '.join(bad)} (ragged rows?)"
                )
        else:
            rows = [list(r) for r in rows]
            if not rows:
                raise HierarchyError(f"hierarchy{self._label()} has no rows")
            widths = {len(r) for r in rows}
            if len(widths) != 1:
                counts: dict[int, int] = {}
                for r in rows:
                    counts[len(r)] = counts.get(len(r), 0) + 1
                common = max(counts, key=lambda w: counts[w])
                bad_rows = [i for i, r in enumerate(rows) if len(r) != common][:5]
                raise HierarchyRaggedError(
                    f"hierarchy{self._label()} has ragged rows: lengths "
                    f"{sorted(widths)}; most rows have {common} levels, rows "
                    f"{', '.join(str(i + 1) for i in bad_rows)} (1-based) do not"
                )
            width = widths.pop()
            if width < 1:
                raise HierarchyError(f"hierarchy{self._label()} has empty rows")
            cols = list(zip(*rows))
            df = pl.DataFrame(
                {_level_name(j): [None if v is None else str(v) for v in col]
                 for j, col in enumerate(cols)},
                schema={_level_name(j): pl.String for j in range(width)},
            )
        self._frame = df
        self._codes: list[tuple[np.ndarray, list[str]]] | None = None
        if validate:
            self.validate()

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def from_rows(cls, mapping: dict[object, Sequence[object]], *,
                  name: str | None = None) -> Hierarchy:
        """Build from ``{raw: [level1, level2, ...]}``."""
        return cls([[k, *v] for k, v in mapping.items()], name=name)

    @classmethod
    def from_csv(cls, path: str | Path, *, separator: str = ";", name: str | None = None,
                 encoding: str = "utf-8-sig") -> Hierarchy:
        """Read an ARX hierarchy CSV (no header, one row per raw value, one column per level).

        Rows are parsed with :mod:`csv` so quoted cells containing the separator work; blank
        lines are skipped; a row with a different number of cells raises
        :class:`HierarchyRaggedError` naming it.
        """
        p = Path(path)
        if not p.exists():
            raise InputFormatError(f"no such hierarchy file: {str(path)!r}")
        if not p.is_file():
            raise InputFormatError(f"the hierarchy {str(path)!r} is not a regular file")
        if len(separator) != 1:
            raise InvalidParameterError(f"separator must be one character, got {separator!r}")
        try:
            text = p.read_text(encoding=encoding)
        except UnicodeDecodeError:
            raise UnreadableInputError(f"the hierarchy file is not {encoding} text",
                                       str(path)) from None
        except OSError as exc:
            raise UnreadableInputError(str(exc.strerror or exc), str(path)) from None
        rows = [r for r in csv.reader(io.StringIO(text), delimiter=separator) if r]
        if not rows:
            raise HierarchyError(f"hierarchy file {str(path)!r} is empty")
        _check_separator(rows, separator, str(path))
        return cls(rows, name=name if name is not None else p.stem)

    def to_csv(self, path: str | Path | None = None, *, separator: str = ";") -> str | None:
        """Write the ARX CSV layout (no header), atomically; returns the text when ``path`` is
        None."""
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=separator, lineterminator="\n")
        writer.writerows(self._frame.rows())
        if path is None:
            return buf.getvalue()
        from ldiv_polars.core.output import atomic_output

        with atomic_output(path, suffixes=(Path(path).suffix.lower(),)) as out:
            out.path.write_text(buf.getvalue(), encoding="utf-8")
        return None

    # --- accessors ----------------------------------------------------------------------------

    def _label(self) -> str:
        return f" {self.name!r}" if getattr(self, "name", None) else ""

    @property
    def frame(self) -> pl.DataFrame:
        """The hierarchy as a DataFrame in ARX layout: ``level_0`` (raw) .. ``level_{h-1}``."""
        return self._frame

    @property
    def height(self) -> int:
        """Number of levels, counting level 0 (ARX's "height"); valid levels are 0..height-1."""
        return self._frame.width

    @property
    def max_level(self) -> int:
        """The highest level (0 is the original values)."""
        return self._frame.width - 1

    @property
    def values(self) -> list[str]:
        """The raw values (level 0)."""
        return self._frame.get_column(_level_name(0)).to_list()

    def __len__(self) -> int:
        return self._frame.height

    def __repr__(self) -> str:
        label = self._label().strip() or "unnamed"
        return f"Hierarchy({label}, values={len(self)}, height={self.height})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hierarchy) and self._frame.equals(other._frame)

    __hash__ = None  # type: ignore[assignment]

    def check_level(self, level: int) -> int:
        """``level`` as an int, checked to be a level of this hierarchy (0 ..
        :attr:`max_level`); else :class:`~ldiv_polars.errors.InvalidParameterError`."""
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise InvalidParameterError(f"level must be an integer, got {level!r}")
        if not 0 <= int(level) < self.height:
            raise InvalidParameterError(
                f"level {level} out of range for hierarchy{self._label()} "
                f"(levels 0..{self.max_level})"
            )
        return int(level)

    def column(self, level: int) -> pl.Series:
        """The values at ``level``, one per leaf (row order of the hierarchy); raises as
        :meth:`check_level`."""
        return self._frame.get_column(_level_name(self.check_level(level)))

    def mapping(self, level: int) -> dict[str, str]:
        """``{raw: generalized}`` at ``level``."""
        return dict(zip(self.values, self.column(level).to_list()))

    def generalize_value(self, value: object, level: int) -> str:
        """The generalization of one value (compared as a string) at ``level``; raises
        :class:`~ldiv_polars.errors.HierarchyValueMissingError` when the value is not a
        leaf."""
        m = self.mapping(level)
        key = str(value)
        if key not in m:
            raise HierarchyValueMissingError(self.name, [key], 1)
        return m[key]

    def leaves_under(self, level: int) -> dict[str, int]:
        """Number of raw values under each level-``level`` value (its "area")."""
        col = _level_name(self.check_level(level))
        counts = self._frame.group_by(col, maintain_order=True).len()
        return dict(zip(counts.get_column(col).to_list(), counts.get_column("len").to_list()))

    def level_codes(self) -> list[tuple[np.ndarray, list[str]]]:
        """Per level: (int32 array raw-index -> group code, labels of the codes).

        Codes are dense, in order of first appearance; code ``c`` at level j is the group
        labelled ``labels[c]``.
        """
        if self._codes is None:
            out = []
            for j in range(self.height):
                s = self._frame.get_column(_level_name(j))
                labels = s.unique(maintain_order=True)
                codes = s.replace_strict(
                    labels, pl.arange(0, labels.len(), eager=True), return_dtype=pl.Int32
                ).to_numpy()
                out.append((np.ascontiguousarray(codes, dtype=np.int32), labels.to_list()))
            self._codes = out
        return self._codes

    # --- validation ---------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise a :class:`HierarchyError` subclass unless the hierarchy is well formed."""
        df = self._frame
        if df.height == 0:
            raise HierarchyError(f"hierarchy{self._label()} has no rows")
        raw = df.get_column(_level_name(0))
        if raw.null_count():
            raise HierarchyRaggedError(f"hierarchy{self._label()} has empty raw values")
        dup = raw.filter(raw.is_duplicated()).unique(maintain_order=True)
        if dup.len():
            shown = ", ".join(repr(v) for v in dup.head(5).to_list())
            raise HierarchyDuplicateValueError(
                f"hierarchy{self._label()} lists raw value(s) more than once: {shown}"
                + (f" and {dup.len() - 5} more" if dup.len() > 5 else "")
            )
        for j in range(1, df.width):
            lo, hi = _level_name(j - 1), _level_name(j)
            split = (
                df.group_by(lo, maintain_order=True)
                .agg(pl.col(hi).unique(maintain_order=True).alias("parents"))
                .filter(pl.col("parents").list.len() > 1)
            )
            if split.height:
                value, parents = split.row(0)
                raise HierarchyNotCoarseningError(
                    f"hierarchy{self._label()}: level {j} does not coarsen level {j - 1}: "
                    f"{value!r} at level {j - 1} maps to {len(parents)} different level-{j} "
                    f"values ({', '.join(repr(p) for p in parents[:4])})"
                    + (f"; {split.height} such value(s) in all" if split.height > 1 else "")
                )

    def missing_values(self, values: Iterable[object] | pl.Series) -> list[str]:
        """The values (as strings) that are not raw values of the hierarchy, sorted."""
        s = pl.Series("v", values if not isinstance(values, pl.Series) else values).cast(pl.String)
        s = s.unique()
        known = self._frame.get_column(_level_name(0))
        bad = s.filter(~s.is_in(known.implode()) | s.is_null())
        return sorted(bad.fill_null("<null>").to_list())

    def check_covers(self, values: Iterable[object] | pl.Series, column: str | None = None) -> None:
        """Raise :class:`HierarchyValueMissingError` (naming up to five) if values are missing."""
        missing = self.missing_values(values)
        if missing:
            raise HierarchyValueMissingError(column or self.name, missing[:5], len(missing))


_SEPARATORS = (",", ";", "\t", "|")


def _check_separator(rows: list[list[str]], separator: str, path: str) -> None:
    """A file read as one column whose every line holds the same number (>= 1) of another
    usual separator was written with that separator: say which one to pass."""
    if any(len(r) != 1 for r in rows):
        return
    for sep in _SEPARATORS:
        counts = {r[0].count(sep) for r in rows}
        if sep != separator and len(counts) == 1 and counts.pop() >= 1:
            shown = "\\t" if sep == "\t" else sep
            raise HierarchyError(
                f"hierarchy file {path!r} read with separator {separator!r} has one column, "
                f"and every line contains {sep!r}: it looks {sep!r}-separated; pass "
                f"separator={sep!r} (ldiv: --hierarchy-separator '{shown}')"
            )


def as_hierarchy(obj: Hierarchy | pl.DataFrame | str | Path | Sequence[Sequence[object]] | dict,
                 *, name: str | None = None, separator: str = ";") -> Hierarchy:
    """Coerce what a caller may hand over (a Hierarchy, a DataFrame in ARX layout, a CSV path,
    rows, or ``{raw: [levels...]}``) into a :class:`Hierarchy`. Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` on any other type, and the errors of
    :class:`Hierarchy` and :meth:`Hierarchy.from_csv` on a malformed one."""
    if isinstance(obj, Hierarchy):
        return obj
    if isinstance(obj, pl.DataFrame):
        return Hierarchy(obj, name=name)
    if isinstance(obj, (str, Path)):
        return Hierarchy.from_csv(obj, separator=separator, name=name)
    if isinstance(obj, dict):
        return Hierarchy.from_rows(obj, name=name)
    if isinstance(obj, Sequence):
        return Hierarchy(obj, name=name)
    raise InvalidParameterError(
        f"cannot use a {type(obj).__name__} as a hierarchy (give a Hierarchy, a DataFrame in ARX "
        f"layout, a CSV path, rows, or a dict raw -> levels)"
    )
