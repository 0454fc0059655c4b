"""Linkage across releases and (l,delta)-diversity (analyses layer).

* :mod:`.release` / :mod:`.attack` — releases with class maps; the linkage attack
  (``link``, ``post_linkage``) as joins of count tables in the engine;
* :mod:`.worst_case` — Prop. 3.1 (``worst_case_l``), the eq. (3) construction as real tables
  and a brute-force checker;
* :mod:`.distribution` / :mod:`.mechanism` — Mech-(l,delta) (Algorithm 1), Greedy-Generalize
  (Algorithm 2), Generalize-Ind (Algorithm 3), ``sample_size``, planning in both directions,
  applying the broadcast classes to a table;
* :mod:`.ledger` — the composition ledger (Thm 4.5);
* :mod:`.simulate` — Monte Carlo of the guarantee.
"""

from ldiv_polars.linkage.attack import Linkage, PostLinkage, link, post_linkage
from ldiv_polars.linkage.distribution import DistributionError, JointDistribution, as_fraction
from ldiv_polars.linkage.ledger import CompositionLedger, Guarantee, classes_fingerprint
from ldiv_polars.linkage.mechanism import (
    AnonymizedTable,
    MechanismPlan,
    Partition,
    admissible_counts,
    generalize_ind,
    greedy_generalize,
    m_value,
    p_for_budget,
    plan_mechanism,
    sample_size,
    sample_size_real,
)
from ldiv_polars.linkage.release import Release, ReleaseError, check_counts
from ldiv_polars.linkage.simulate import (
    EngineResult,
    PureResult,
    SimulationResult,
    dataset_frame,
    draw_dataset,
    simulate_engine,
    simulate_mechanism,
    simulate_pure,
)
from ldiv_polars.linkage.worst_case import (
    brute_force_worst_case_l,
    worst_case_construction,
    worst_case_l,
    worst_case_releases,
)

__all__ = [
    "AnonymizedTable",
    "CompositionLedger",
    "DistributionError",
    "EngineResult",
    "Guarantee",
    "JointDistribution",
    "Linkage",
    "MechanismPlan",
    "Partition",
    "PostLinkage",
    "PureResult",
    "Release",
    "ReleaseError",
    "SimulationResult",
    "admissible_counts",
    "as_fraction",
    "brute_force_worst_case_l",
    "check_counts",
    "classes_fingerprint",
    "dataset_frame",
    "draw_dataset",
    "generalize_ind",
    "greedy_generalize",
    "link",
    "m_value",
    "p_for_budget",
    "plan_mechanism",
    "post_linkage",
    "sample_size",
    "sample_size_real",
    "simulate_engine",
    "simulate_mechanism",
    "simulate_pure",
    "worst_case_construction",
    "worst_case_l",
    "worst_case_releases",
]
