"""Core layer: reading inputs lazily (and mapping the engines' read errors to typed ones),
writing outputs safely (``core.output``: never over an input, atomically), validating columns,
building frequency sets (and merging them), and the engines (``core.engines``: one module
per query engine).

The core knows no privacy model.
"""

from ldiv_polars.core.frequency import (
    COUNT,
    FrequencySet,
    frequency_set,
    merge_frequency_sets,
)
from ldiv_polars.core.inputs import TableLike, to_lazyframe
from ldiv_polars.core.validate import NullPolicy, validate_columns

__all__ = [
    "COUNT",
    "FrequencySet",
    "NullPolicy",
    "TableLike",
    "frequency_set",
    "merge_frequency_sets",
    "to_lazyframe",
    "validate_columns",
]
