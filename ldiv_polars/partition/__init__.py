"""Partitioning anonymizers (transforms layer): Mondrian, Anatomy, GG / RGG / SG groupers."""

from ldiv_polars.partition.grouping import (
    AnatomyResult,
    Grouping,
    GroupingError,
    anatomize,
    anatomy,
    greedy_grouping,
    randomized_greedy_grouping,
    symmetric_grouping,
)
from ldiv_polars.partition.models import BinaryLDiversity, simple_l_diversity

__all__ = [
    "AnatomyResult",
    "BinaryLDiversity",
    "Grouping",
    "GroupingError",
    "anatomize",
    "anatomy",
    "greedy_grouping",
    "randomized_greedy_grouping",
    "simple_l_diversity",
    "symmetric_grouping",
]
