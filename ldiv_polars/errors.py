"""Typed errors. Every error the library raises on bad input derives from :class:`LdivError`.

The CLI maps any ``LdivError`` to exit code 2 with a one-line message.

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
            f"null values in {parts}; pass nulls='value' to treat null as a value of its own"
        )


class InvalidParameterError(LdivError, ValueError):
    """A model or algorithm parameter is out of its domain (k < 1, c <= 0, t outside [0, 1],
    ...)."""


class InputFormatError(LdivError, ValueError):
    """An input path or object cannot be read as a table."""


class NoSqlFormError(InvalidParameterError):
    """A model has no SQL form: the DuckDB engine cannot evaluate it (use the Polars engine)."""
