"""Privacy models over a frequency set (the ``models`` layer: knows no search, prints nothing)."""

from ldiv_polars.models.base import (
    DISTINCT,
    ENTROPY_TOLERANCE,
    SIZE,
    ClassContext,
    Model,
    ModelResult,
    SqlCall,
)
from ldiv_polars.models.binary import BinaryLDiversity, simple_l_diversity
from ldiv_polars.models.disclosure import AlphaKAnonymity, BetaLikeness, DeltaDisclosure
from ldiv_polars.models.evaluate import ClassNames, evaluate_classes
from ldiv_polars.models.k_anonymity import KAnonymity
from ldiv_polars.models.k_map import KMap
from ldiv_polars.models.l_diversity import (
    DistinctLDiversity,
    EntropyLDiversity,
    EntropyLDiversityDontCare,
    NegativePositiveDisclosureRecursive,
    PositiveDisclosureRecursive,
    RecursiveCLDiversity,
)
from ldiv_polars.models.multi_attribute import MultiAttribute
from ldiv_polars.models.population_table import DeltaPresence, KMapPopulation
from ldiv_polars.models.results import table_results
from ldiv_polars.models.risk import RiskReport, class_sizes, risk_profile
from ldiv_polars.models.risk_thresholds import AverageRisk, PopulationUniques, SampleUniques
from ldiv_polars.models.table_level import TableModel
from ldiv_polars.models.t_closeness import TCloseness
from ldiv_polars.models.verdict import CheckResult, check, classes, violations
from ldiv_polars.models.weighted_k import WeightedKAnonymity

__all__ = [
    "DISTINCT",
    "ENTROPY_TOLERANCE",
    "SIZE",
    "AlphaKAnonymity",
    "AverageRisk",
    "BetaLikeness",
    "BinaryLDiversity",
    "CheckResult",
    "ClassContext",
    "ClassNames",
    "ClassVerdict",
    "DeltaDisclosure",
    "DeltaPresence",
    "DistinctLDiversity",
    "EncodedRows",
    "EntropyLDiversity",
    "EntropyLDiversityDontCare",
    "KAnonymity",
    "KMap",
    "KMapPopulation",
    "Model",
    "ModelResult",
    "MultiAttribute",
    "NegativePositiveDisclosureRecursive",
    "PopulationUniques",
    "PositiveDisclosureRecursive",
    "RecursiveCLDiversity",
    "RiskReport",
    "SampleUniques",
    "SqlCall",
    "TCloseness",
    "TableModel",
    "WeightedKAnonymity",
    "check",
    "class_verdict",
    "class_sizes",
    "classes",
    "evaluate_classes",
    "risk_profile",
    "simple_l_diversity",
    "table_results",
    "violations",
]


def __getattr__(name: str) -> object:
    # the numpy side (array verdicts of the search) is imported when it is used
    if name in ("ClassVerdict", "EncodedRows", "class_verdict"):
        from ldiv_polars.models import encoded

        return getattr(encoded, name)
    raise AttributeError(f"module 'ldiv_polars.models' has no attribute {name!r}")
