"""Cell suppression and local recoding (transforms layer), on the distinct keys of a table.

- :func:`suppress_cells`: the fewest (weighted) QI cells written as null so that every class
  passes, greedy or exact (MILP), under own-value or wildcard semantics;
- :func:`generalize_and_suppress`: a lattice node, then cell suppression, the node of least total
  loss;
- :func:`local_recode`: rounds of optimal full-domain generalization, each record released at the
  node of its round.

Each returns a :class:`LocalResult`: the :class:`ReleasePlan` (one row per distinct key), the lazy
output (a join of the rows with the plan), the independent verification and utility figures.
See ``docs/local.md``.
"""

from ldiv_polars.local.cells import suppress_cells
from ldiv_polars.local.combined import generalize_and_suppress
from ldiv_polars.local.plan import ReleasePlan, build_plan
from ldiv_polars.local.recode import local_recode
from ldiv_polars.local.result import InfeasibleError, LocalResult
from ldiv_polars.local.verify import (
    ReleaseVerification,
    ReleaseVerificationError,
    verify_release,
)

__all__ = [
    "InfeasibleError",
    "LocalResult",
    "ReleasePlan",
    "ReleaseVerification",
    "ReleaseVerificationError",
    "build_plan",
    "generalize_and_suppress",
    "local_recode",
    "suppress_cells",
    "verify_release",
]
