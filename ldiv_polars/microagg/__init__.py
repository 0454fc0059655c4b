"""Microaggregation: MDAV and p-probabilistic k-anonymity under uncertain participation.

Rebollo-Monedero, Forné, Soriano, Puiggalí, "p-Probabilistic k-Anonymous Microaggregation for
the Anonymization of Surveys with Uncertain Participation", Inform. Sci. (2017).

* :func:`effective_anonymity` (Algorithm A), :func:`table_failure`, :func:`naive_failure`;
* bounds and approximations (:mod:`ldiv_polars.microagg.approximations`);
* :func:`simulate_participation` (Monte Carlo check, Table II);
* :func:`mdav` (exact MDAV, weighted centroids, distortion), :func:`p_probabilistic_mdav`
  (cells of n_min, or variable-size cells for per-record pi);
* :func:`microaggregate` (Polars in, Polars out, re-verified);
* :func:`design_partition` / :func:`assign` (the data-independent design).
"""

from ldiv_polars.microagg.aggregate import (
    InsufficientRecordsError,
    Microaggregation,
    microaggregate,
    microaggregate_details,
)
from ldiv_polars.microagg.approximations import (
    asymptotic_table_failure,
    effective_anonymity_k2,
    k2_log_approximations,
    kl_approximation,
    lambert_w_k2,
    limit_approximation,
    log_approximation,
    markov_bound,
    quadratic_approximation,
    quadratic_approximation_simple,
)
from ldiv_polars.microagg.design import PartitionSpec, assign, design_partition
from ldiv_polars.microagg.mdav import MdavResult, distortion, mdav, mdav_reference, standardize
from ldiv_polars.microagg.participation import (
    EffectiveAnonymity,
    attained_failure,
    effective_anonymity,
    failure_vector,
    leave_one_out_failure,
    naive_failure,
    pmf_vector,
    table_failure,
)
from ldiv_polars.microagg.probabilistic import (
    ProbabilisticMdav,
    cell_failures,
    p_probabilistic_mdav,
)
from ldiv_polars.microagg.simulate import ParticipationSimulation, simulate_participation

__all__ = [
    "EffectiveAnonymity",
    "InsufficientRecordsError",
    "MdavResult",
    "Microaggregation",
    "ParticipationSimulation",
    "ProbabilisticMdav",
    "PartitionSpec",
    "assign",
    "asymptotic_table_failure",
    "attained_failure",
    "cell_failures",
    "design_partition",
    "distortion",
    "effective_anonymity",
    "effective_anonymity_k2",
    "failure_vector",
    "k2_log_approximations",
    "kl_approximation",
    "lambert_w_k2",
    "leave_one_out_failure",
    "limit_approximation",
    "log_approximation",
    "markov_bound",
    "mdav",
    "mdav_reference",
    "microaggregate",
    "microaggregate_details",
    "naive_failure",
    "p_probabilistic_mdav",
    "pmf_vector",
    "quadratic_approximation",
    "quadratic_approximation_simple",
    "simulate_participation",
    "standardize",
    "table_failure",
]
