"""Lattice search (transforms layer): roll-ups of an encoded frequency set, a globally optimal
Flash-like search with suppression, utility metrics, and :func:`anonymize`.

The parts, by job (``docs/anonymize.md``, "The search's parts"): :mod:`.encoding` (values to
codes and back), :mod:`.store` (the snapshot store: which roll-ups are kept, which one a node
is rolled up from), :mod:`.rolling` with :mod:`.keys`, :mod:`.grouping` and :mod:`.counting`
(the roll-up kernels), :mod:`.rollup` (:class:`EncodedFrequencySet`, which wires them),
:mod:`.state` (what the search knows about each node), :mod:`.flash`, :mod:`.exhaustive` and
:mod:`.bounded` (the strategies), :mod:`.anytime` (the budgeted search of large lattices, with
a bound on its gap), :mod:`.strategies` (:func:`search_lattice`), :mod:`.tuning`
(every threshold the machinery chooses by).
"""

from ldiv_polars.search.anonymize import (
    AnonymizationResult,
    VerificationError,
    anonymize,
    prepare_hierarchies,
)
from ldiv_polars.search.anytime import Budget, anytime_search
from ldiv_polars.search.lattice import Lattice
from ldiv_polars.search.metrics import METRICS, MONOTONE_WITH_SUPPRESSION, MetricSuite
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled, Snapshot
from ldiv_polars.search.strategies import STRATEGIES, SearchOutcome, search_lattice
from ldiv_polars.search.suppression import (
    NodeChecker,
    predicate_monotone,
    suppression_limit_rows,
)
from ldiv_polars.search.tuning import TUNING, SearchTuning

__all__ = [
    "METRICS",
    "MONOTONE_WITH_SUPPRESSION",
    "STRATEGIES",
    "TUNING",
    "AnonymizationResult",
    "Budget",
    "EncodedFrequencySet",
    "Lattice",
    "MetricSuite",
    "NodeChecker",
    "Rolled",
    "SearchOutcome",
    "SearchTuning",
    "Snapshot",
    "VerificationError",
    "anonymize",
    "anytime_search",
    "predicate_monotone",
    "prepare_hierarchies",
    "search_lattice",
    "suppression_limit_rows",
]
