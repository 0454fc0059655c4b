"""Core layer: reading inputs lazily (and mapping the engines' read errors to typed ones),
writing outputs safely (``core.output``: never over an input, atomically), validating columns,
building frequency sets.

The core knows no privacy model.
"""

from ldiv_polars.core.frequency import COUNT, FrequencySet, frequency_set
from ldiv_polars.core.inputs import TableLike, to_lazyframe
from ldiv_polars.core.validate import NullPolicy, validate_columns

__all__ = [
    "COUNT",
    "FrequencySet",
    "NullPolicy",
    "TableLike",
    "frequency_set",
    "to_lazyframe",
    "validate_columns",
]
