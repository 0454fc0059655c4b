"""Utility (information-loss) metrics of a generalized table; lower is better for all of them.

All are computed from a node's rolled-up frequency set plus per-QI, per-level arrays built once
(number of raw values under each group, row count of each group) — never from the rows.
``N`` is the number of input rows and ``q`` the number of quasi-identifiers. Suppressed rows
are the rows of suppressed classes; they are treated as generalized to ``*`` in every QI.

- ``height``: sum of the node's levels (Machanavajjhala et al. §6: generalization height).
- ``precision``: Sweeney's Prec as a loss, ``sum over cells of level/max_level / (N q)``;
  a suppressed cell costs 1 (Sweeney's Prec is ``1 - precision``).
- ``loss``: Iyengar's LM (NCP for categorical hierarchies), ``sum over cells of
  (leaves(g) - 1)/(|domain| - 1) / (N q)``; a suppressed cell costs 1.
- ``discernibility``: ``sum over retained classes |E|^2 + |suppressed rows| * N`` (Bayardo &
  Agrawal; the ``|D|`` penalty for suppressed rows).
- ``aecs``: average equivalence class size ``N / classes``, the suppressed rows counting as one
  class (the all-``*`` class of the masked output).
- ``entropy``: non-uniform entropy (Gionis & Tassa), ``sum over cells of
  log2(N_g / N_v)`` with ``N_g`` the rows generalizing to the published group and ``N_v`` the
  rows with the raw value; a suppressed cell costs ``log2(N / N_v)``.
- ``kl``: KL-divergence of Machanavajjhala et al. §6 over ``Q x S`` (natural log): the
  empirical distribution against the one spreading each published cell's count uniformly over
  its area (product of the raw values under each generalized QI value, the domain being the
  hierarchy's raw values); suppressed rows are spread over the whole QI domain (per
  sensitive value).

Without suppression every metric is monotone (never decreases under generalization). With
suppression only ``height`` stays monotone; for the others the value without suppression is a
monotone *lower bound* (suppressing a row never lowers its cost), which the search uses to prune
soundly (``kl`` has no such bound; it is searched exhaustively).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled

METRICS = ("aecs", "discernibility", "entropy", "height", "kl", "loss", "precision")
"""Names accepted as the optimization target (``metric=``)."""

MONOTONE_WITH_SUPPRESSION = frozenset({"height"})
"""Metrics that stay monotone when rows are suppressed."""

BOUND_WITHOUT_ROLLUP = frozenset({"height", "precision", "loss", "entropy"})
"""Metrics whose suppression-free lower bound needs only the node's levels (O(q))."""

HAS_LOWER_BOUND = frozenset(METRICS) - {"kl"}


def check_metric(name: str) -> str:
    """``name`` if it is one of :data:`METRICS`, else
    :class:`~ldiv_polars.errors.InvalidParameterError` listing them."""
    if name not in METRICS:
        raise InvalidParameterError(f"unknown metric {name!r} (use one of {', '.join(METRICS)})")
    return name


def leaf_loss(leaves: np.ndarray, domain: int) -> np.ndarray:
    """Iyengar's loss of released cells that each stand for ``leaves`` of the ``domain`` values
    of their QI: ``(leaves - 1) / (domain - 1)``, in [0, 1] (0: a raw value; 1: every value, as
    a suppressed cell); 0 when the domain has one value.

    >>> leaf_loss(np.array([1, 3, 5]), 5).tolist()
    [0.0, 0.5, 1.0]
    """
    leaves = np.asarray(leaves, dtype=np.float64)
    return (leaves - 1) / (domain - 1) if domain > 1 else np.zeros(leaves.shape)


def _xlog2x(x: np.ndarray) -> float:
    x = x[x > 0].astype(np.float64)
    return float((x * np.log2(x)).sum())


def entropy_bits(counts: np.ndarray) -> float:
    """Shannon entropy (bits) of the distribution these counts make (rows over classes by the
    classes' sizes, rows over a QI's raw values, ...); 0 for no rows.

    >>> entropy_bits(np.array([2, 2])), entropy_bits(np.array([5]))
    (1.0, 0.0)
    """
    n = counts[counts > 0].astype(np.float64)
    total = float(n.sum())
    if total <= 0:
        return 0.0
    return float(np.log2(total) - (n * np.log2(n)).sum() / total)


class _PerLevel:
    """One of :class:`MetricSuite`'s tables read as ``table[qi][level]`` (made on first read)."""

    __slots__ = ("suite", "k", "i")

    def __init__(self, suite: MetricSuite, k: int, i: int | None = None) -> None:
        self.suite, self.k, self.i = suite, k, i

    def __getitem__(self, index: int) -> Any:
        if self.i is None:
            return _PerLevel(self.suite, self.k, index)
        return self.suite.level_tables(self.i, index)[self.k]


class MetricSuite:
    """Per-QI, per-level tables for the metrics of one encoded frequency set."""

    def __init__(self, efs: EncodedFrequencySet) -> None:
        self.efs = efs
        self.N = efs.total
        self.q = len(efs.qi)
        self.max_level = [h.height - 1 for h in efs.hierarchies]
        self.dom = [len(h) for h in efs.hierarchies]
        # rows per raw value (counted by the frequency set's builder, or one pass over the
        # frequency set per QI); each level's tables are summed from them when first read
        # (a search reads a few levels of each QI: most are never needed)
        self._raw = [efs.raw_counts(i) for i in range(self.q)]
        self._maps = efs.level_maps
        self._cards = efs.cards
        self._tables: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.leaves = _PerLevel(self, 0)
        """``leaves[i][j]``: raw values per group of QI ``i`` at level ``j``."""
        self.marg = _PerLevel(self, 1)
        """``marg[i][j]``: rows per group of QI ``i`` at level ``j`` (float64)."""
        self.xlogx = _PerLevel(self, 2)
        """``xlogx[i][j]``: ``sum marg log2 marg`` at that level."""
        self.loss_cost = _PerLevel(self, 3)
        """``loss_cost[i][j]``: Iyengar's loss of one cell of each group."""
        self.loss_total = _PerLevel(self, 4)
        """``loss_total[i][j]``: the loss of every row at that level, summed."""
        self._kl_const: float | None = None
        self.log_dom = float(sum(math.log(d) for d in self.dom))

    def level_tables(self, i: int, j: int) -> tuple[Any, ...]:
        """QI ``i``'s tables at level ``j`` (leaves, rows, ``sum x log2 x``, loss per cell,
        loss summed over the rows), summed once from the raw values' rows and kept."""
        t = self._tables.get((i, j))
        if t is None:
            m = self._maps[i][j]
            leaves = np.bincount(m, minlength=self._cards[i][j]).astype(np.int64)
            marg = np.bincount(m, weights=self._raw[i], minlength=self._cards[i][j])
            cost = leaf_loss(leaves, self.dom[i])
            t = self._tables[i, j] = (leaves, marg, _xlog2x(marg), cost,
                                      float((marg * cost).sum()))
        return t

    @property
    def kl_const(self) -> float:
        """``sum p log p`` over the base's cells (``kl``'s constant term; summed when first
        read: most searches report ``kl`` once, for the chosen node)."""
        if self._kl_const is None:
            base = self.efs.base
            p = base.n[base.n > 0] / self.N if self.N else np.zeros(0)
            self._kl_const = float((p * np.log(p)).sum())
        return self._kl_const

    @kl_const.setter
    def kl_const(self, value: float) -> None:
        """Set the constant when it was summed elsewhere (e.g. by DuckDB over its cells)."""
        self._kl_const = value

    # --- bounds -------------------------------------------------------------------------------

    def bound_from_levels(self, name: str, levels: Sequence[int]) -> float:
        """Suppression-free value of ``height``/``precision``/``loss``/``entropy`` from the levels
        alone (a lower bound of the value with suppression).
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` for a metric whose bound needs
        the roll-up."""
        if name == "height":
            return float(sum(levels))
        if self.N == 0:
            return 0.0
        if name == "precision":
            return sum(lv / m if m else 0.0 for lv, m in zip(levels, self.max_level)) / self.q
        if name == "loss":
            return sum(self.level_tables(i, lv)[4] for i, lv in enumerate(levels)) / (
                self.N * self.q)
        if name == "entropy":
            return sum(self.level_tables(i, lv)[2] - self.level_tables(i, 0)[2]
                       for i, lv in enumerate(levels))
        raise InvalidParameterError(f"{name!r} needs the roll-up for its bound")

    def bounds_from_levels(self, name: str) -> np.ndarray:
        """:meth:`bound_from_levels` of every node of the lattice at once, in node-id order
        (the last QI's level varying fastest): the same float sums in the same order, so
        the same values. Raises :class:`~ldiv_polars.errors.InvalidParameterError` as it.

        >>> import polars as pl
        >>> from ldiv_polars.core.frequency import FrequencySet
        >>> from ldiv_polars.hierarchy import Hierarchy
        >>> h = {c: Hierarchy([["a", "*"], ["b", "*"]], name=c) for c in "xy"}
        >>> df = pl.DataFrame({"x": ["a", "b"], "y": ["a", "a"]})
        >>> s = MetricSuite(EncodedFrequencySet.from_frame(
        ...     FrequencySet.build(df, ["x", "y"], None).materialize(), h))
        >>> s.bounds_from_levels("loss").tolist()
        [0.0, 0.5, 0.5, 1.0]
        """
        heights = [m + 1 for m in self.max_level]
        if name == "height":
            terms = [np.arange(h, dtype=np.float64) for h in heights]
        elif self.N == 0:
            return np.zeros(math.prod(heights))
        elif name == "precision":
            terms = [np.array([lv / m if m else 0.0 for lv in range(h)])
                     for h, m in zip(heights, self.max_level)]
        elif name == "loss":
            terms = [np.array([self.level_tables(i, lv)[4] for lv in range(h)])
                     for i, h in enumerate(heights)]
        elif name == "entropy":
            terms = [np.array([self.level_tables(i, lv)[2] - self.level_tables(i, 0)[2]
                               for lv in range(h)]) for i, h in enumerate(heights)]
        else:
            raise InvalidParameterError(f"{name!r} needs the roll-up for its bound")
        out = np.zeros(heights)
        for i, values in enumerate(terms):  # QI by QI in order, as bound_from_levels sums
            shape = [1] * len(heights)
            shape[i] = -1
            out = out + values.reshape(shape)
        out = out.reshape(-1)
        if name == "precision":
            return out / self.q
        return out / (self.N * self.q) if name == "loss" else out

    def projection_scale(self, name: str, qis: int) -> float:
        """The factor taking a value of the separable metric ``name`` (of
        :data:`BOUND_WITHOUT_ROLLUP`) on this table projected onto ``qis`` of its QIs to this
        table's units, the same cells' cost: ``precision`` and ``loss`` average over ``N q``
        cells (``qis / q``); ``height`` and ``entropy`` are sums (1).

        >>> import polars as pl
        >>> from ldiv_polars.core.frequency import FrequencySet
        >>> from ldiv_polars.hierarchy import Hierarchy
        >>> h = {c: Hierarchy([["a", "*"], ["b", "*"]], name=c) for c in "xyz"}
        >>> df = pl.DataFrame({c: ["a", "b"] for c in "xyz"})
        >>> s = MetricSuite(EncodedFrequencySet.from_frame(
        ...     FrequencySet.build(df, list("xyz"), None).materialize(), h))
        >>> s.projection_scale("loss", 2), s.projection_scale("height", 2)
        (0.6666666666666666, 1.0)
        """
        if name in ("precision", "loss"):
            return qis / self.q if self.q else 1.0
        if name in ("height", "entropy"):
            return 1.0
        raise InvalidParameterError(f"{name!r} is not a separable metric")

    def suppression_cost_max(self, name: str, i: int, rows: int) -> float:
        """The most that suppressing ``rows`` rows can add to QI ``i``'s part of the separable
        metric ``name`` over its suppression-free value: a suppressed cell costs 1 in
        ``precision`` and ``loss`` (``rows / (N q)``), ``log2(N / N_v)`` in ``entropy`` (at most
        the rarest raw value's), nothing in ``height``."""
        if name == "height" or self.N == 0 or rows <= 0:
            return 0.0
        if name in ("precision", "loss"):
            return rows / (self.N * self.q)
        if name == "entropy":
            raw = self.marg[i][0]
            return rows * math.log2(self.N / float(raw[raw > 0].min()))
        raise InvalidParameterError(f"{name!r} is not a separable metric")

    # --- values -------------------------------------------------------------------------------

    def value(self, name: str, rolled: Rolled, suppressed: np.ndarray | None = None) -> float:
        """The metric at a node; ``suppressed`` is a boolean mask over the node's classes.
        Raises :class:`~ldiv_polars.errors.InvalidParameterError` on an unknown metric."""
        levels = rolled.snapshot.levels
        size = rolled.class_size
        if name == "discernibility":  # (integer sums: exact, in any order; 0 on no rows)
            size = size.astype(np.int64, copy=False)
            if suppressed is None:
                return float(np.dot(size, size))
            kept = np.where(suppressed, 0, size)
            n_supp = int(size.sum()) - int(kept.sum())
            return float(np.dot(kept, kept)) + n_supp * float(self.N)
        supp = np.zeros(size.shape[0], dtype=bool) if suppressed is None else suppressed
        n_supp = int(size[supp].sum())
        N = self.N
        if name == "height":
            return float(sum(levels))
        if N == 0:
            return 0.0
        if name in ("precision", "loss", "entropy"):
            base = self.bound_from_levels(name, levels)
            if not n_supp:
                return base
            codes = rolled.codes_of(supp)
            w = size[supp].astype(np.float64)
            if name == "precision":
                extra = sum(float(w.sum()) * (1 - (lv / m if m else 0.0))
                            for lv, m in zip(levels, self.max_level))
                return base + extra / (N * self.q)
            if name == "loss":
                extra = sum(float((w * (1 - self.loss_cost[i][lv][codes[:, i]])).sum())
                            for i, lv in enumerate(levels))
                return base + extra / (N * self.q)
            extra = sum(float((w * np.log2(N / self.marg[i][lv][codes[:, i]])).sum())
                        for i, lv in enumerate(levels))
            return base + extra
        if name == "aecs":
            classes = int((~supp).sum()) + (1 if n_supp else 0)
            return N / classes if classes else 0.0
        if name == "kl":
            return self._kl(rolled, supp)
        raise InvalidParameterError(f"unknown metric {name!r}")

    def values(self, rolled: Rolled, suppressed: np.ndarray | None = None) -> dict[str, float]:
        """Every metric of :data:`METRICS` at the node (see :meth:`value`)."""
        return {m: self.value(m, rolled, suppressed) for m in METRICS}

    def _kl(self, rolled: Rolled, supp: np.ndarray) -> float:
        N = float(self.N)
        snap = rolled.snapshot
        n = snap.n.astype(np.float64)
        row_supp = supp[rolled.row_class]
        log_area_class = np.zeros(rolled.classes)
        for i, lv in enumerate(snap.levels):
            log_area_class += np.log(
                self.leaves[i][lv][rolled.class_codes[:, i]].astype(np.float64))
        log_area = log_area_class[rolled.row_class]
        # published density of each row's cell, plus the suppressed rows of its sensitive
        # value spread over the whole QI domain
        dens = np.where(row_supp, 0.0, n / N * np.exp(-log_area))
        if row_supp.any():
            s_supp = np.bincount(snap.s[row_supp], weights=n[row_supp],
                                 minlength=self.efs.n_sensitive)
            dens = dens + s_supp[snap.s] / N * math.exp(-self.log_dom)
        return self.kl_const - float((n / N * np.log(dens)).sum())
