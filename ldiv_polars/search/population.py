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

import math
from typing import Any

import numpy as np

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.search.encoding import Encoding, encode_frame
from ldiv_polars.search.snapshot import Rolled


KEY_SPACE_MAX = (1 << 62) - 1
"""Largest key space whose keys are mixed-radix int64 numbers; beyond it the codes are matched
as rows (``np.unique(axis=0)``, slower)."""


DENSE_KEYS_MAX = 1 << 22
"""Key spaces of up to this many keys are counted densely (one ``bincount``); larger ones by
sorting the population's keys."""


class PopulationCounts:
    """The population table ``population`` (anything
    :func:`~ldiv_polars.core.inputs.to_lazyframe` reads, with the QI columns of ``encoding``)
    counted once and encoded with ``encoding``'s hierarchies; ``counted``: its QI-only
    frequency set already built (by an engine), and when that set is weighted
    (:attr:`FrequencySet.weight`) its weight sums stand for the counts (the sample's own
    ``F_k`` per class: :func:`weight_sums`). Raises
    :class:`~ldiv_polars.errors.UnknownColumnError` for a missing QI column and
    :class:`~ldiv_polars.hierarchy.HierarchyValueMissingError` for a population value outside
    its hierarchy."""

    def __init__(self, population: Any, encoding: Encoding, *,
                 counted: FrequencySet | None = None) -> None:
        qi = encoding.qi
        fs = (counted if counted is not None
              else FrequencySet.build(population, qi, None, nulls="value")).materialize()
        base = encode_frame(fs, dict(zip(qi, encoding.hierarchies))).base
        assert base.codes is not None
        self.encoding = encoding
        self.codes = base.codes  # (q, distinct population keys) raw indices
        self.n = base.n if fs.weight is None else \
            fs.frame.collect().get_column(fs.weight).to_numpy().astype(np.float64)
        """Per distinct key: its records (int64), or with ``weight`` the sum of their weights
        (float64, in the order of the codes: :func:`encode_frame` keeps the rows' order)."""
        self.total = self.n.sum().item() if self.n.size else 0
        self._at: dict[tuple[int, int], np.ndarray] = {}

    def codes_at(self, q: int, level: int) -> np.ndarray:
        """The population's distinct keys' codes (int64) of QI ``q`` at ``level`` (mapped
        once per QI and level, then kept)."""
        out = self._at.get((q, level))
        if out is None:
            out = self.encoding.level_maps[q][level][self.codes[q]].astype(np.int64)
            self._at[(q, level)] = out
        return out

    def per_class(self, rolled: Rolled) -> np.ndarray:
        """Population count (int64; float64 weight sums with ``weight``) of each class of the
        node ``rolled`` (0 for a class no population record generalizes to)."""
        levels = rolled.snapshot.levels
        pop = [self.codes_at(q, lv) for q, lv in enumerate(levels)]
        classes = np.asarray(rolled.class_codes, dtype=np.int64).reshape(rolled.classes, -1)
        cards = self.encoding.level_cards(levels)
        if math.prod(cards) <= KEY_SPACE_MAX:  # one mixed-radix int64 key per row
            pop_key = np.zeros(self.codes.shape[1], dtype=np.int64)
            cls_key = np.zeros(rolled.classes, dtype=np.int64)
            for q, card in enumerate(cards):
                pop_key = pop_key * card + pop[q]
                cls_key = cls_key * card + classes[:, q]
            span = math.prod(cards)
            if span <= DENSE_KEYS_MAX:  # a dense count per key: no sort
                return np.bincount(pop_key, weights=self.n, minlength=span
                                   ).astype(self.n.dtype)[cls_key]
            return _matched(pop_key, self.n, cls_key)
        both = np.concatenate([np.stack(pop, axis=1), classes])
        _, inverse = np.unique(both, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        return _matched(inverse[:len(self.n)], self.n, inverse[len(self.n):])


def population_counts(population: Any, encoding: Encoding) -> PopulationCounts:
    """``population`` counted and encoded with ``encoding`` (:class:`PopulationCounts`),
    once per encoding: the result is kept in ``encoding.memo`` (keyed by the population
    object), so every :class:`~ldiv_polars.search.suppression.NodeChecker` of one search (the
    search's, the optimum's re-evaluation) and the QI-only copy of the encoding share it."""
    key = ("population", id(population))
    hit = encoding.memo.get(key)
    if isinstance(hit, tuple) and hit[0] is population:
        return hit[1]
    counts = PopulationCounts(population, encoding)
    encoding.memo[key] = (population, counts)  # holding it keeps its id from being reused
    return counts


WEIGHTS = "weights"
"""The :attr:`Encoding.memo` key of the sample's weight sums per key (:func:`weight_sums`)."""


def weight_sums(engine: Any, data: Any, weight: str, encoding: Encoding) -> PopulationCounts:
    """The sampling weights of ``data`` (the table searched, column ``weight``) summed per raw
    QI key by ``engine`` (:meth:`~ldiv_polars.core.engines.base.Engine.frequency_set`) and
    encoded with ``encoding`` — one more pass over the rows, once per search — and
    kept in ``encoding.memo`` (:data:`WEIGHTS`), where every
    :class:`~ldiv_polars.search.suppression.NodeChecker` of the search finds them to roll
    ``F_k`` up with each node (:meth:`PopulationCounts.per_class`). Raises the typed errors
    of :meth:`~ldiv_polars.core.frequency.FrequencySet.build` for a bad weight column."""
    fs = engine.frequency_set(data, encoding.qi, None, nulls="value", weight=weight)
    sums = PopulationCounts(None, encoding, counted=fs)
    encoding.memo[WEIGHTS] = sums
    return sums


def _matched(pop_key: np.ndarray, n: np.ndarray, cls_key: np.ndarray) -> np.ndarray:
    """Per entry of ``cls_key``: the sum of ``n`` over the equal entries of ``pop_key``."""
    keys, inverse = np.unique(pop_key, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=n, minlength=keys.size).astype(n.dtype)
    at = np.searchsorted(keys, cls_key)
    found = at < keys.size
    found[found] = keys[at[found]] == cls_key[found]
    return np.where(found, sums[np.minimum(at, max(keys.size - 1, 0))] if keys.size else 0, 0)
