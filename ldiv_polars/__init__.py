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
from ldiv_polars.checking import CheckResult, check, classes, violations
from ldiv_polars.core import FrequencySet, frequency_set
from ldiv_polars.errors import (
    DuplicateColumnError,
    EmptyQuasiIdentifierError,
    InputFormatError,
    InvalidParameterError,
    LdivError,
    NullValuesError,
    SensitiveInQuasiIdentifierError,
    UnknownColumnError,
)
from ldiv_polars.models import (
    AlphaKAnonymity,
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    KAnonymity,
    Model,
    ModelResult,
    MultiAttribute,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
    RiskReport,
    TCloseness,
    evaluate_classes,
    risk_profile,
)
from ldiv_polars.report import SUMMARY_KEYS, summary

__version__ = "0.1.0"

__all__ = [
    "SUMMARY_KEYS",
    "AlphaKAnonymity",
    "BetaLikeness",
    "CheckResult",
    "DeltaDisclosure",
    "DistinctLDiversity",
    "DuplicateColumnError",
    "EmptyQuasiIdentifierError",
    "EntropyLDiversity",
    "EntropyLDiversityDontCare",
    "FrequencySet",
    "InputFormatError",
    "InvalidParameterError",
    "KAnonymity",
    "LdivError",
    "Model",
    "ModelResult",
    "MultiAttribute",
    "NegativePositiveDisclosureRecursive",
    "NullValuesError",
    "PositiveDisclosureRecursive",
    "RecursiveCLDiversity",
    "RiskReport",
    "SensitiveInQuasiIdentifierError",
    "TCloseness",
    "UnknownColumnError",
    "check",
    "classes",
    "evaluate_classes",
    "frequency_set",
    "risk_profile",
    "summary",
    "violations",
]
