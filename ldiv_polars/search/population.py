"""A population table's counts per class of a lattice node, for the models judged against it
(:class:`~ldiv_polars.models.population_table.PopulationModel`: k-map with a population table,
delta-presence).

The population's frequency set on the quasi-identifiers is counted **once** by the engine and
encoded with the search's hierarchies: its level-0 codes are raw indices in the same
hierarchies as the sample's, so at a node both tables' codes come from the same level maps.
:meth:`PopulationCounts.per_class` rolls the population's distinct keys up to the node's levels
and matches them with the node's class codes, giving each class's population count; the model
then decides each class from its size and that count. The cost per node is a sort of the
population's distinct keys and the node's classes (no pass over the records).

>>> import polars as pl
>>> from ldiv_polars.core.frequency import FrequencySet
>>> from ldiv_polars.hierarchy import Hierarchy
>>> from ldiv_polars.search.rollup import EncodedFrequencySet
>>> h = {"zip": Hierarchy([["130", "13*"], ["131", "13*"], ["140", "14*"]], name="zip")}
>>> sample = FrequencySet.build(pl.DataFrame({"zip": ["130", "140"]}), "zip", None)
>>> efs = EncodedFrequencySet.from_frame(sample.materialize(), h)
>>> pop = PopulationCounts(pl.DataFrame({"zip": ["130", "131", "131", "140"]}), efs.encoding)
>>> pop.per_class(efs.rollup([0])).tolist(), pop.per_class(efs.rollup([1])).tolist()
([1, 1], [3, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.search.encoding import Encoding, encode_frame
from ldiv_polars.search.snapshot import Rolled


class PopulationCounts:
    """The population table ``population`` (anything
    :func:`~ldiv_polars.core.inputs.to_lazyframe` reads, with the QI columns of ``encoding``)
    counted once and encoded with ``encoding``'s hierarchies. Raises
    :class:`~ldiv_polars.errors.UnknownColumnError` for a missing QI column and
    :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` for a population value outside
    its hierarchy."""

    def __init__(self, population: Any, encoding: Encoding) -> None:
        qi = encoding.qi
        fs = FrequencySet.build(population, qi, None, nulls="value").materialize()
        base = encode_frame(fs, dict(zip(qi, encoding.hierarchies))).base
        assert base.codes is not None
        self.encoding = encoding
        self.codes = base.codes  # (q, distinct population keys) raw indices
        self.n = base.n
        self.total = int(self.n.sum())

    def per_class(self, rolled: Rolled) -> np.ndarray:
        """Population count (int64) of each class of the node ``rolled`` (0 for a class no
        population record generalizes to)."""
        levels = rolled.snapshot.levels
        maps = self.encoding.level_maps
        pop = np.stack([maps[q][lv][self.codes[q]] for q, lv in enumerate(levels)], axis=1) \
            if len(levels) else np.zeros((self.codes.shape[1], 0), dtype=np.int32)
        classes = np.asarray(rolled.class_codes, dtype=pop.dtype).reshape(rolled.classes, -1)
        both = np.concatenate([pop, classes])
        _, inverse = np.unique(both, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        counts = np.bincount(inverse[:pop.shape[0]], weights=self.n,
                             minlength=int(inverse.max()) + 1 if inverse.size else 0)
        return counts[inverse[pop.shape[0]:]].astype(np.int64)
