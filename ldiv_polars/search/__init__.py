"""Lattice search (transforms layer): roll-ups of an encoded frequency set, a globally optimal
Flash-like search with suppression, utility metrics, and :func:`anonymize`."""

from ldiv_polars.search.anonymize import (
    AnonymizationResult,
    VerificationError,
    anonymize,
    prepare_hierarchies,
)
from ldiv_polars.search.flash import STRATEGIES, SearchOutcome, search_lattice
from ldiv_polars.search.lattice import Lattice
from ldiv_polars.search.metrics import METRICS, MONOTONE_WITH_SUPPRESSION, MetricSuite
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled, Snapshot
from ldiv_polars.search.suppression import (
    NodeChecker,
    predicate_monotone,
    suppression_limit_rows,
)

__all__ = [
    "METRICS",
    "MONOTONE_WITH_SUPPRESSION",
    "STRATEGIES",
    "AnonymizationResult",
    "EncodedFrequencySet",
    "Lattice",
    "MetricSuite",
    "NodeChecker",
    "Rolled",
    "SearchOutcome",
    "Snapshot",
    "VerificationError",
    "anonymize",
    "predicate_monotone",
    "prepare_hierarchies",
    "search_lattice",
    "suppression_limit_rows",
]
