"""Generalization hierarchies (transforms layer): the :class:`Hierarchy` object in ARX layout,
builders for the common kinds, and generalization as Polars expressions."""

from ldiv_polars.hierarchy.builders import (
    date_hierarchy,
    interval_hierarchy,
    masking_hierarchy,
    ordered_hierarchy,
    taxonomy_hierarchy,
)
from ldiv_polars.hierarchy.generalize import check_coverage, generalize, generalize_expr
from ldiv_polars.hierarchy.hierarchy import (
    Hierarchy,
    HierarchyDuplicateValueError,
    HierarchyError,
    HierarchyNotCoarseningError,
    HierarchyRaggedError,
    HierarchyValueMissingError,
    as_hierarchy,
)

__all__ = [
    "Hierarchy",
    "HierarchyDuplicateValueError",
    "HierarchyError",
    "HierarchyNotCoarseningError",
    "HierarchyRaggedError",
    "HierarchyValueMissingError",
    "as_hierarchy",
    "check_coverage",
    "date_hierarchy",
    "generalize",
    "generalize_expr",
    "interval_hierarchy",
    "masking_hierarchy",
    "ordered_hierarchy",
    "taxonomy_hierarchy",
]
