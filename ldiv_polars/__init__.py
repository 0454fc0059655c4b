"""ldiv_polars: privacy models checked and enforced inside Polars and DuckDB.

Counts first: the only pass over the rows is a lazy ``group_by(qi + [s]).len()`` in the engine;
every model is an aggregation over that frequency set.

>>> import polars as pl
>>> import ldiv_polars as lp
>>> df = pl.DataFrame({"zip": ["130", "130", "148", "148"], "s": ["a", "b", "a", "b"]})
>>> lp.check(df, ["zip"], "s", [lp.KAnonymity(2), lp.DistinctLDiversity(2)]).passed
True
"""

from ldiv_polars import namespace as _namespace  # noqa: F401  (registers .ldiv)
from ldiv_polars.core import FrequencySet, frequency_set
from ldiv_polars.errors import (
    DuplicateColumnError,
    EmptyQuasiIdentifierError,
    InputFormatError,
    InvalidParameterError,
    LdivError,
    NullValuesError,
    OutputOverwritesInputError,
    OutputPathError,
    OutputWriteError,
    PlanMismatchError,
    SensitiveInQuasiIdentifierError,
    UnknownColumnError,
    UnreadableInputError,
)
from ldiv_polars.models import (
    AlphaKAnonymity,
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    DeltaPresence,
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    KMap,
    KMapPopulation,
    Model,
    ModelResult,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PopulationUniques,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    RiskReport,
    SampleUniques,
    TCloseness,
    WeightedKAnonymity,
    evaluate_classes,
    risk_profile,
)
from ldiv_polars.models.verdict import CheckResult, check, classes, violations
from ldiv_polars.table_summary import SUMMARY_KEYS, summary

__version__ = "0.1.0"

# Transforms and analyses are imported on first use (PEP 562): `import ldiv_polars` and the CLI
# stay fast, and `ldiv_polars.anonymize` etc. still work.
_LAZY = {
    # hierarchies and the lattice search (transforms)
    "Hierarchy": "ldiv_polars.hierarchy",
    "generalize_expr": "ldiv_polars.hierarchy",
    "generalize": "ldiv_polars.hierarchy",
    "check_coverage": "ldiv_polars.hierarchy",
    "interval_hierarchy": "ldiv_polars.hierarchy",
    "masking_hierarchy": "ldiv_polars.hierarchy",
    "date_hierarchy": "ldiv_polars.hierarchy",
    "ordered_hierarchy": "ldiv_polars.hierarchy",
    "taxonomy_hierarchy": "ldiv_polars.hierarchy",
    "HierarchyError": "ldiv_polars.hierarchy",
    "anonymize": "ldiv_polars.search",
    "AnonymizationResult": "ldiv_polars.search",
    "VerificationError": "ldiv_polars.search",
    # cell suppression and local recoding (transforms)
    "suppress_cells": "ldiv_polars.local",
    "generalize_and_suppress": "ldiv_polars.local",
    "local_recode": "ldiv_polars.local",
    "verify_release": "ldiv_polars.local",
    "compare_methods": "ldiv_polars.local",
    # partitioning anonymizers (transforms) and the minimality attack (analyses)
    "mondrian": "ldiv_polars.partition",
    "anatomy": "ldiv_polars.partition",
    "anatomize": "ldiv_polars.partition",
    "greedy_grouping": "ldiv_polars.partition",
    "randomized_greedy_grouping": "ldiv_polars.partition",
    "symmetric_grouping": "ldiv_polars.partition",
    "minimality_attack": "ldiv_polars.attacks",
    # microaggregation (transforms)
    "microaggregate": "ldiv_polars.microagg",
    "effective_anonymity": "ldiv_polars.microagg",
    "mdav": "ldiv_polars.microagg",
    "design_partition": "ldiv_polars.microagg",
    "assign": "ldiv_polars.microagg",
    # linkage and (l,delta)-diversity (analyses)
    "Release": "ldiv_polars.linkage",
    "link": "ldiv_polars.linkage",
    "post_linkage": "ldiv_polars.linkage",
    "worst_case_l": "ldiv_polars.linkage",
    "JointDistribution": "ldiv_polars.linkage",
    "plan_mechanism": "ldiv_polars.linkage",
    "CompositionLedger": "ldiv_polars.linkage",
    # the HTML report (interfaces)
    "report": "ldiv_polars.reporting",
    # disclosure-risk statistics (numpy/scipy over small tables)
    "population_uniqueness": "ldiv_polars.risk",
    "individual_risk": "ldiv_polars.risk",
    "suda2": "ldiv_polars.risk",
    "attribute_risks": "ldiv_polars.risk",
    # datasets
    "synthesize": "ldiv_polars.datasets",
    "write_synthetic": "ldiv_polars.datasets",
}


_LAZY_MODULES = ("duckdb",)
"""Submodules reachable as attributes without an import of their own (``ldiv_polars.duckdb``,
as the README writes it), imported on first use, so that ``import ldiv_polars`` does not
import DuckDB."""


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(f"ldiv_polars.{name}")  # (binds the attribute itself)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ldiv_polars' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_LAZY_MODULES])

__all__ = [
    *_LAZY,
    "SUMMARY_KEYS",
    "AlphaKAnonymity",
    "AverageRisk",
    "BetaLikeness",
    "CheckResult",
    "DeltaDisclosure",
    "DeltaPresence",
    "DistinctLDiversity",
    "DuplicateColumnError",
    "EmptyQuasiIdentifierError",
    "EntropyLDiversity",
    "EntropyLDiversityDontCare",
    "FrequencySet",
    "InputFormatError",
    "InvalidParameterError",
    "KAnonymity",
    "KMap",
    "KMapPopulation",
    "LdivError",
    "Model",
    "ModelResult",
    "MultiAttribute",
    "NegativePositiveDisclosureRecursive",
    "PopulationUniques",
    "NullValuesError",
    "OutputOverwritesInputError",
    "OutputPathError",
    "OutputWriteError",
    "PlanMismatchError",
    "PositiveDisclosureRecursive",
    "RecursiveCLDiversity",
    "RiskReport",
    "SampleUniques",
    "SensitiveInQuasiIdentifierError",
    "TCloseness",
    "UnknownColumnError",
    "UnreadableInputError",
    "WeightedKAnonymity",
    "check",
    "classes",
    "evaluate_classes",
    "frequency_set",
    "risk_profile",
    "summary",
    "violations",
]
