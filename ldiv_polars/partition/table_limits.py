"""Mondrian under table-level models (risk thresholds, :mod:`ldiv_polars.models.table_level`):
which of a round's allowed splits to make so that the table still satisfies them.

A table-level model judges the class sizes of the whole release, not a partition, so a split
allowed by the per-class models may still push the table over a threshold (splitting a class
raises the average risk and can make uniques). Each round, the splits the per-class models
allow are taken largest partition first, as many as keep every table-level model holding on
the class sizes the release would have (the partitions already final, those staying whole,
and the children of the splits made); the others become final. The count is found by a
binary search over that order (exact for the average risk and the sample uniques, whose
figures only grow as more splits are made; ARX's rule for the others, see docs/risk.md §5).
The table before the round holds (the whole table is checked first), so the release does.

>>> import numpy as np
>>> from ldiv_polars.models.risk_thresholds import AverageRisk
>>> chosen = np.array([0, 0])                      # both partitions may split
>>> sizes = np.array([4, 6]); children = np.array([[2, 2], [3, 3]])
>>> limit_splits([AverageRisk(0.35)], chosen, sizes, children, np.array([], dtype=np.int64))
array([-1,  0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.table_level import TableModel


def limit_splits(tables: Sequence[TableModel], chosen: np.ndarray, sizes: np.ndarray,
                 children: np.ndarray, final: np.ndarray) -> np.ndarray:
    """``chosen`` (per partition: the dimension to split on, -1 for none) with the splits
    that would break a table-level model set to -1. ``sizes`` are the partitions' sizes,
    ``children[i]`` the two children's sizes of partition ``i``'s chosen split, ``final`` the
    sizes of the groups already final. Largest partitions split first (ties by index)."""
    import numpy as np

    split = np.flatnonzero(chosen >= 0)
    order = split[np.argsort(-sizes[split], kind="stable")]

    def holds(count: int) -> bool:
        made = np.zeros(len(sizes), dtype=bool)
        made[order[:count]] = True
        release = np.concatenate([final, sizes[~made], children[made].ravel()])
        return all(m.table_holds(release) for m in tables)

    if holds(len(order)):
        return chosen
    low, high = 0, len(order) - 1  # holds(low) (the table before the round), not len(order)
    while low < high:
        mid = (low + high + 1) // 2
        if holds(mid):
            low = mid
        else:
            high = mid - 1
    out = chosen.copy()
    out[order[low:]] = -1
    return out
