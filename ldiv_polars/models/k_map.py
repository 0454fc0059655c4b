"""k-map estimated from the sample (Sweeney's k-map with El Emam and Dankar's estimators, as
ARX's ``KMap`` with a ``CellSizeEstimator``): every record's class is expected to hold at least
``k`` records of the *population*. With a sampling fraction ``pi = n / N`` a class of ``f``
sample records stands for a population class whose size is modelled as Poisson (D3, Pannekoek
1999) or zero-truncated Poisson (D4) with mean ``pi * k``; ARX derives from it a class size
``k'`` such that a population class of ``k`` records shows fewer than ``k'`` sample records
with probability at least ``1 - significance``, and the model becomes k'-anonymity of the
sample, with ``k' = min(k, n, derived)`` (``KMap.initialize``).

``k'`` depends on the number of records ``n`` of the table, so a :class:`KMap` is *bound* to a
table before it is judged (:meth:`~ldiv_polars.models.base.Model.for_rows`, done by ``check``
and the search from the table they read: with suppression, ARX's data length, the records
before suppression).

>>> m = KMap(5, population_size=100_000).for_rows(1_000)   # pi = 1%: lambda = 0.05
>>> m.derived_k
3
>>> KMap(5, population_size=2_000).for_rows(1_000).derived_k    # pi = 50%: lambda = 2.5
5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import SIZE, ClassContext, Model, SqlCall
from ldiv_polars.models.k_anonymity import KAnonymity

if TYPE_CHECKING:
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows

ESTIMATORS = ("poisson", "zero_truncated_poisson")
"""The cell-size estimators of ARX's ``KMap.CellSizeEstimator`` (D3 and D4)."""


def derived_k(k: int, sampling_fraction: float, significance: float, estimator: str) -> int:
    """ARX's ``k'`` before its bounds: for the Poisson estimator, ``c + 2`` where ``c`` is the
    smallest count whose Poisson CDF at mean ``lambda = pi * k`` reaches ``1 - significance``
    (``calculateKPoisson``); for the zero-truncated one, ``c + 1`` with ``c >= 1`` the smallest
    count whose zero-truncated CDF reaches it (``calculateKZeroPoisson``). Quantiles from
    scipy, capped at ``k`` as ARX's loops are (so significance 0, where no finite count
    reaches the level, gives more than ``k``: the caller's bound ``min(k, rows, ...)``).

    >>> derived_k(5, 0.01, 0.01, "poisson"), derived_k(5, 0.01, 0.01, "zero_truncated_poisson")
    (3, 3)
    """
    from scipy.stats import poisson

    lam = sampling_fraction * k
    level = 1.0 - significance
    # ARX's loops stop at the count k (the result is then at least k + 1, above every bound):
    # the quantile is capped there, which also keeps it finite at significance 0 (level 1)
    if estimator == "poisson":
        return int(min(poisson.ppf(level, lam), k)) + 2
    p0 = float(poisson.pmf(0, lam))
    # zero-truncated CDF(c) = (CDF(c) - p0) / (1 - p0) >= level  <=>  CDF(c) >= level (1-p0) + p0
    c = int(min(poisson.ppf(min(1.0, level * (1.0 - p0) + p0), lam), k))
    return max(c, 1) + 1


class KMap(Model):
    """k-map estimated from the sample: every class has ``size >= k'`` (:func:`derived_k`,
    bounded by ``k`` and the table's records). ``population_size`` is a number or a region of
    :data:`ldiv_polars.risk.REGIONS`; ``estimator`` one of :data:`ESTIMATORS`; ``significance``
    ARX's significance level in [0, 1]. Monotone and union-closed (k'-anonymity)."""

    name = "k_map"
    monotone = True
    higher_is_better = True
    needs_sensitive = False
    union_closed = True
    identity_only = True
    sizes_only = True

    def __init__(self, k: int, population_size: int | str, *, estimator: str = "poisson",
                 significance: float = 0.01, rows: int | None = None) -> None:
        from ldiv_polars.risk.population import resolve_population

        self.k = require_int_at_least("k", k, 1)
        if estimator not in ESTIMATORS:
            raise InvalidParameterError(
                f"k-map estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
        self.estimator = estimator
        self.significance = require_real("significance", significance, low=0.0, high=1.0)
        self.population_size = resolve_population(rows or 0, population_size, None)
        self.rows = None if rows is None else require_int_at_least("rows", rows, 0)

    def params(self) -> dict[str, object]:
        return {"k": self.k, "population": self.population_size, "estimator": self.estimator,
                "significance": self.significance}

    def for_rows(self, rows: int) -> KMap:
        """This model bound to a table of ``rows`` records (itself when already bound)."""
        if self.rows is not None:
            return self
        return KMap(self.k, self.population_size, estimator=self.estimator,
                    significance=self.significance, rows=rows)

    @property
    def derived_k(self) -> int:
        """ARX's ``k'``: ``min(k, rows, derived_k(...))`` (at least 1). Raises
        :class:`InvalidParameterError` when the model is not bound to a table."""
        if self.rows is None:
            raise InvalidParameterError(
                f"{self.describe()} is not bound to a table: call for_rows(n) first")
        pi = self.rows / self.population_size
        return max(1, min(self.k, self.rows,
                          derived_k(self.k, pi, self.significance, self.estimator)))

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def value(self) -> pl.Expr:
        return pl.col(SIZE)

    @property
    def as_k_anonymity(self) -> KAnonymity:
        """k'-anonymity with the derived ``k'``: the owner of every size-threshold fact below
        (verdict, bounds, array verdict, SQL form)."""
        return KAnonymity(self.derived_k)

    def passes(self) -> pl.Expr:
        return self.as_k_anonymity.passes()

    def reason(self) -> pl.Expr:
        return pl.format(f"class size {{}} < k'={self.derived_k} (k-map {self.k})",
                         pl.col(SIZE))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return self.as_k_anonymity.satisfied_by(achieved)

    @property
    def min_class_size(self) -> int:
        return self.derived_k

    @property
    def count_bounds(self) -> tuple[int, int]:
        return self.as_k_anonymity.count_bounds

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        return self.as_k_anonymity.array_verdict(rows)

    def sql_call(self) -> SqlCall:
        """k'-anonymity's macro with the derived k'."""
        return self.as_k_anonymity.sql_call()
