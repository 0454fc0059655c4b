"""Disclosure-risk statistics the way statistical agencies measure them, computed on small
tables (class sizes, their frequency of frequencies, the distinct keys) built by one engine
group-by.

- :func:`population_uniqueness`: Pitman, Zayatz, SNB and Dankar et al.'s rule (ARX);
- :func:`individual_risk`: sampling weights, Benedetti-Franconi individual risk, global risk
  and the records above a risk threshold (sdcMicro's ``freqCalc`` / ``indivRisk`` /
  ``measure_risk``), optionally with missing values as wildcards (:func:`wildcard_counts`);
- :func:`suda2`: minimal sample uniques, SUDA and DIS scores, attribute contributions;
- :func:`attribute_risks`: distinction, separation and uniques of every QI combination (ARX).

This package imports nothing from models/, search/ or cli/: the models can build on it.
Definitions, citations and costs: docs/risk.md.
"""

from ldiv_polars.risk.attributes import attribute_risks
from ldiv_polars.risk.budget import BudgetExceededError
from ldiv_polars.risk.individual import IndividualRisk, individual_risk
from ldiv_polars.risk.population import (
    REGIONS,
    PopulationUniqueness,
    population_uniqueness,
)
from ldiv_polars.risk.suda import Suda, suda2
from ldiv_polars.risk.tables import WEIGHT, SizeHistogram, class_table
from ldiv_polars.risk.wildcard import wildcard_counts

__all__ = [
    "REGIONS",
    "WEIGHT",
    "BudgetExceededError",
    "IndividualRisk",
    "PopulationUniqueness",
    "SizeHistogram",
    "Suda",
    "attribute_risks",
    "class_table",
    "individual_risk",
    "population_uniqueness",
    "suda2",
    "wildcard_counts",
]
