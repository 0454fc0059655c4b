"""Typed errors. Every error the library raises on bad input derives from :class:`LdivError`.

The CLI maps any ``LdivError`` to exit code 2 with a one-line message (``docs/errors.md`` lists
the classes of bad input and the error each raises).

>>> try:
...     raise UnknownColumnError(["agee"], ["age", "sex"])
... except LdivError as e:
...     print(e)
unknown column(s): 'agee' (available: 'age', 'sex')
"""

from __future__ import annotations

from collections.abc import Sequence


class LdivError(Exception):
    """Base class of every error raised by ldiv_polars on bad input or parameters."""


class UnknownColumnError(LdivError, KeyError):
    """A column named by the caller is not in the data."""

    def __init__(self, missing: Sequence[str], available: Sequence[str]) -> None:
        self.missing = list(missing)
        self.available = list(available)
        shown = ", ".join(repr(c) for c in self.available[:20])
        if len(self.available) > 20:
            shown += ", ..."
        super().__init__(
            f"unknown column(s): {', '.join(repr(c) for c in self.missing)} (available: {shown})"
        )

    def __str__(self) -> str:  # KeyError would add quotes around the message
        return str(self.args[0])


class EmptyQuasiIdentifierError(LdivError, ValueError):
    """The list of quasi-identifier columns is empty."""


class SensitiveInQuasiIdentifierError(LdivError, ValueError):
    """A sensitive column is also listed as a quasi-identifier."""


class DuplicateColumnError(LdivError, ValueError):
    """A column is named twice."""


class NullValuesError(LdivError, ValueError):
    """Nulls in a quasi-identifier or sensitive column and no null policy was chosen."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = dict(counts)
        parts = ", ".join(f"{c!r}: {n} null(s)" for c, n in self.counts.items())
        super().__init__(
            f"null values in {parts}; pass nulls='value' (--nulls value in ldiv check, report, "
            "risk, counts) to treat null as a value of its own"
        )


class InvalidParameterError(LdivError, ValueError):
    """A model or algorithm parameter is out of its domain (k < 1, c <= 0, t outside [0, 1],
    ...)."""


class InputFormatError(LdivError, ValueError):
    """An input path or object cannot be read as a table."""


class UnreadableInputError(InputFormatError):
    """The engine (Polars, DuckDB, pyarrow) or the OS failed while reading an input: a
    truncated or corrupt Parquet file, a CSV row with more fields than the header, bytes that
    are not UTF-8, a permission denied, ... The message names the input (``source``, a path,
    when known) and the ``reason`` (the engine's own one-line message).

    >>> print(UnreadableInputError("invalid utf-8 sequence", "t.csv"))
    cannot read 't.csv': invalid utf-8 sequence
    """

    def __init__(self, reason: str, source: str | tuple[str, ...] | None = None) -> None:
        self.reason = reason
        self.source = source
        if source is None:
            where = "the input"
        elif isinstance(source, str):
            where = repr(source)
        else:
            where = "one of " + ", ".join(map(repr, source))
        super().__init__(f"cannot read {where}: {reason}")


class PlanMismatchError(InvalidParameterError):
    """A site's rows hold a value its federated release plan cannot release: a value outside
    the plan's hierarchy, or a label (a sensitive value) in rows the plan releases that no
    released row of the union holds (the site's rows differ from the counts it sent). Raised
    before anything is written; ``column`` and ``values`` (up to five) name what differs.

    >>> e = PlanMismatchError("zip", ["c"], "not a value of its hierarchy")
    >>> print(str(e).split(": ", 1)[1])  # doctest: +ELLIPSIS
    column 'zip' holds 'c' (not a value of its hierarchy); nothing was written ...
    """

    def __init__(self, column: str, values: Sequence[object], why: str) -> None:
        self.column = column
        self.values = list(values)
        shown = ", ".join(repr(v) for v in self.values)
        super().__init__(
            f"the site's rows differ from the counts the plan was made from: column "
            f"{column!r} holds {shown} ({why}); nothing was written (count the rows again "
            "with ldiv counts and plan again; verify_site_release checks a release against "
            "its plan)")


class OutputPathError(LdivError, ValueError):
    """An output path cannot be written: its directory is missing or not writable, it is a
    directory, or its suffix names no format the writer knows. Raised before any work."""


class OutputOverwritesInputError(OutputPathError):
    """An output path resolves to one of the inputs (the same path, a symbolic or hard link to
    it, or a file inside an input directory or matched by an input glob): writing it would
    destroy the input."""


class OutputWriteError(OutputPathError):
    """Writing an output failed part way (no space left, an I/O error): the temporary file is
    removed and nothing at the output path was touched."""


class FrequencySetTooLargeError(LdivError, ValueError):
    """A frequency set would exceed the driver budget of a distributed engine (Spark's
    ``max_groups``): found before it is collected. Generalize the quasi-identifiers first (a
    coarser bottom level of their hierarchies) or raise the budget."""


class NoSqlFormError(InvalidParameterError):
    """A model has no SQL form: the DuckDB engine cannot evaluate it (use the Polars engine)."""
