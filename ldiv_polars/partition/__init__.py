"""Partitioning anonymizers (transforms layer): Mondrian, Anatomy, GG / RGG / SG groupers."""

from ldiv_polars.models.binary import BinaryLDiversity, simple_l_diversity
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
from ldiv_polars.partition.metrics import (
    CountQuery,
    average_relative_error,
    compare_are,
    count_query_workload,
    grouping_metrics,
)
from ldiv_polars.partition.mondrian import MondrianResult, PartitionInfeasibleError, mondrian

__all__ = [
    "AnatomyResult",
    "BinaryLDiversity",
    "CountQuery",
    "MondrianResult",
    "PartitionInfeasibleError",
    "average_relative_error",
    "compare_are",
    "count_query_workload",
    "grouping_metrics",
    "mondrian",
    "Grouping",
    "GroupingError",
    "anatomize",
    "anatomy",
    "greedy_grouping",
    "randomized_greedy_grouping",
    "simple_l_diversity",
    "symmetric_grouping",
]
