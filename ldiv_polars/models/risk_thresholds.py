"""Risk thresholds as privacy models (issue 19 item 5, ARX's ``AverageReidentificationRisk``,
``SampleUniqueness`` and ``PopulationUniqueness`` criteria): table-level models
(:class:`~ldiv_polars.models.table_level.TableModel`) judged on the class sizes of the retained
records.

- :class:`AverageRisk`: the average prosecutor re-identification risk, ``J / n`` (classes over
  records), is at most ``r``;
- :class:`SampleUniques`: the share of records that are alone in their class is at most ``x``;
- :class:`PopulationUniques`: the estimated share of population-unique records
  (:func:`ldiv_polars.risk.population_uniqueness`, ARX's semantics) is at most ``x``.

The first two are decided in exact rational arithmetic (the threshold as the exact value of the
float given) and are monotone under generalization, with suppression too; the third is an
estimate (a float) and is not monotone (docs/risk.md, "Risk thresholds as privacy models").

>>> import numpy as np
>>> sizes = np.array([1, 2, 3, 4])
>>> AverageRisk(0.4).table_holds(sizes), SampleUniques(0.1).table_holds(sizes)
(True, True)
>>> AverageRisk(0.39).table_holds(sizes), SampleUniques(0.09).table_holds(sizes)
(False, False)
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from ldiv_polars.core.validate import require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.table_level import TableModel

if TYPE_CHECKING:
    import numpy as np


def _share(value: float, name: str) -> float:
    return require_real(name, value, low=0.0, high=1.0)


class AverageRisk(TableModel):
    """Average prosecutor re-identification risk ``J / n <= r`` (J classes, n records).

    Monotone: merging classes lowers J and keeps n. Union-closed for the search's purpose:
    with suppression a node passing by suppressing a set S of classes has a generalization
    passing by suppressing the classes made only of S's rows (docs/risk.md)."""

    name = "average_risk"
    monotone = True
    union_closed = True

    def __init__(self, r: float) -> None:
        self.r = _share(r, "r")

    def params(self) -> dict[str, object]:
        return {"r": self.r}

    def table_value(self, sizes: np.ndarray) -> float | None:
        n = int(sizes.sum())
        return None if n == 0 else len(sizes) / n

    def table_holds(self, sizes: np.ndarray) -> bool:
        n = int(sizes.sum())
        return n == 0 or Fraction(len(sizes), n) <= Fraction(self.r)


class SampleUniques(TableModel):
    """Share of sample uniques ``u / n <= x`` (u records alone in their class, n records).

    Monotone: a merged class is never unique, and merging two classes of two or more records
    makes no unique; union-closed for the search with suppression like
    :class:`AverageRisk` (docs/risk.md)."""

    name = "sample_uniques"
    monotone = True
    union_closed = True

    def __init__(self, x: float) -> None:
        self.x = _share(x, "x")

    def params(self) -> dict[str, object]:
        return {"x": self.x}

    def table_value(self, sizes: np.ndarray) -> float | None:
        n = int(sizes.sum())
        return None if n == 0 else int((sizes == 1).sum()) / n

    def table_holds(self, sizes: np.ndarray) -> bool:
        n = int(sizes.sum())
        return n == 0 or Fraction(int((sizes == 1).sum()), n) <= Fraction(self.x)


class PopulationUniques(TableModel):
    """Estimated share of population uniques ``<= x``, by ``model`` (``pitman``, ``zayatz``,
    ``snb`` or ``dankar``) for a population of ``population_size`` records (a number or a
    region of :data:`ldiv_polars.risk.REGIONS`). A table for which the model has no estimate
    fails (the reason is the estimator's); an empty table passes.

    Not monotone (the estimators are not monotone in the class sizes), so searched
    exhaustively; with suppression the smallest classes go first and the number suppressed is
    found by ARX's binary search."""

    name = "population_uniques"
    monotone = False
    union_closed = False

    def __init__(self, x: float, population_size: int | str, model: str = "dankar") -> None:
        from ldiv_polars.risk.population import MODELS, resolve_population

        self.x = _share(x, "x")
        if model not in (*MODELS, "dankar"):
            raise InvalidParameterError(
                f"population model must be one of pitman, zayatz, snb, dankar, got {model!r}")
        self.model = model
        self.population_size = resolve_population(0, population_size, None)

    def params(self) -> dict[str, object]:
        return {"x": self.x, "population": self.population_size, "model": self.model}

    def table_value(self, sizes: np.ndarray) -> float | None:
        """The estimated share of population uniques on the class sizes ``sizes`` (None:
        empty or not estimable). Raises :class:`~ldiv_polars.errors.InvalidParameterError`
        when the sample has more records than the population."""
        from ldiv_polars.risk.population import population_uniqueness

        if int(sizes.sum()) == 0:
            return None
        if int(sizes.sum()) > self.population_size:
            raise InvalidParameterError(
                f"the population ({self.population_size}) is smaller than the sample "
                f"({int(sizes.sum())} records)")
        return population_uniqueness(sizes.astype("int64"),
                                     population_size=self.population_size,
                                     model=self.model).fraction  # type: ignore[arg-type]

    def table_holds(self, sizes: np.ndarray) -> bool:
        if int(sizes.sum()) == 0:
            return True
        share = self.table_value(sizes)
        return share is not None and share <= self.x
