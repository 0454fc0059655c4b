"""Zayatz's model of population uniqueness (Zayatz 1991), as ARX's ``ModelZayatz``.

The share of sample classes of each size estimates the share of population classes of that
size; with ``P(1 | j)`` the hypergeometric probability that a sample of ``n`` drawn from ``N``
holds exactly one record of a population class of size ``j``, the probability that a sample
unique is a population unique is

    P(unique) = (c_1 / u) P(1 | 1) / sum_j (c_j / u) P(1 | j)

and the expected number of population uniques is ``c_1 * P(unique) / (n / N)``.

>>> from ldiv_polars.risk.tables import SizeHistogram
>>> round(zayatz(SizeHistogram.of({1: 60, 2: 20, 3: 10, 5: 4}), 10_000).uniques / 10_000, 4)
0.1629
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ldiv_polars.risk.estimate import Estimate
from ldiv_polars.risk.tables import SizeHistogram


def zayatz(h: SizeHistogram, population: int) -> Estimate:
    """Expected number of population uniques under Zayatz's model. ARX passes the population
    size to commons-math as an ``int`` and clamps it at 2^31 - 1; here it is exact."""
    n, u, c1 = h.records, h.n_classes, h.of_size(1)
    hit = stats.hypergeom.pmf(1, population, h.sizes, n)
    denominator = float(np.dot(h.classes / u, hit))
    if not (np.isfinite(denominator) and denominator > 0.0):
        return Estimate(None, "Zayatz's model: no class size has a positive probability of "
                              "one sampled record")
    p_unique = (c1 / u) * float(stats.hypergeom.pmf(1, population, 1, n)) / denominator
    return Estimate(c1 * p_unique / (n / population), None, {"p_unique": p_unique})
