"""Core layer: reading inputs lazily, validating columns, building frequency sets.

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
