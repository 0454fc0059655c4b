"""Table-level privacy models: a verdict on the whole table, read from its class sizes.

Risk thresholds (average re-identification risk, the share of sample or population uniques) do
not judge one class at a time: they judge the distribution of class sizes of the table. A
:class:`TableModel` answers every per-class question of the :class:`~ldiv_polars.models.base.Model`
protocol with "pass" (so the engines, :func:`~ldiv_polars.models.evaluate_classes` and the
search's array verdicts run it unchanged) and states its real verdict through
:meth:`TableModel.table_holds` and :meth:`TableModel.table_value` on the class sizes of the
**retained** records.

Suppression (ARX's semantics, ``HashGroupifyDistribution``): the classes failing the per-class
models are suppressed first; then, when a table-level model still fails, the smallest retained
classes (ascending size) are suppressed, as few as make it hold, within the suppression limit
(:func:`classes_to_suppress`, a binary search over that prefix as ARX's
``suppressWhileNotFulfilledBinary``). For the average risk and the sample uniques the figure
only falls as that prefix grows, so the binary search finds the smallest prefix, and a prefix
exists within the limit iff *some* set of classes within the limit does (docs/risk.md,
"Risk thresholds as privacy models").

>>> import numpy as np
>>> from ldiv_polars.models.risk_thresholds import AverageRisk
>>> m = AverageRisk(0.4)
>>> sizes = np.array([1, 1, 4, 4])          # 4 classes, 10 rows: average risk 0.4
>>> m.table_holds(sizes), m.table_value(sizes)
(True, 0.4)
>>> classes_to_suppress(AverageRisk(0.25), sizes, budget=2)   # drop both singletons: 2/8
2
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from ldiv_polars.models.base import SIZE, ClassContext, Model, SqlCall

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


class TableModel(Model):
    """A model whose verdict is on the table's class sizes, not per class (see the module).

    Subclasses give :meth:`table_value` (the achieved figure on the class sizes of the
    retained records, None for an empty table) and :meth:`table_holds` (the exact verdict).
    Every class passes the per-class verdict; ``union_closed`` is True only where a proof says
    the search stays monotone with suppression (docs/risk.md)."""

    table_level: ClassVar[bool] = True
    needs_sensitive = False
    identity_only = True
    higher_is_better = False

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def value(self) -> pl.Expr:
        """Per class: its size (the table-level figure is :meth:`table_value`)."""
        return pl.col(SIZE)

    def passes(self) -> pl.Expr:
        """Per class: always true (the verdict is :meth:`table_holds`)."""
        return pl.lit(True)

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        """Every class passes (the verdict is table-level)."""
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        return ClassVerdict(np.ones(rows.classes, dtype=bool))

    def sql_call(self) -> SqlCall:
        """The DuckDB form: ``ldiv__class_sizes_x`` gives the frequencies of the class sizes
        of an extended frequency set, on which the engine asks :meth:`table_holds` (exact,
        in Python, on a table of at most a few thousand rows)."""
        return SqlCall("ldiv__class_sizes_x", spec={"model": self.name, **self.params()})

    @abstractmethod
    def table_value(self, sizes: np.ndarray) -> float | None:
        """The achieved figure on the class sizes ``sizes`` (None: empty or not estimable)."""

    @abstractmethod
    def table_holds(self, sizes: np.ndarray) -> bool:
        """Whether a table with these class sizes satisfies the model (exact)."""

    def satisfied_by(self, achieved: float | int | None) -> bool:
        """Whether an achieved figure meets the threshold (None: an empty table, passes)."""
        from fractions import Fraction

        threshold = next(iter(self.params().values()))
        return achieved is None or Fraction(achieved) <= Fraction(threshold)  # type: ignore[arg-type]


def classes_to_suppress(model: TableModel, sizes: np.ndarray, budget: int) -> int | None:
    """How many of the smallest classes of ``sizes`` (ascending size) must be suppressed for
    ``model`` to hold on the rest, suppressing at most ``budget`` rows: 0 when it holds as is,
    None when no prefix within the budget makes it hold. A binary search over the prefix
    length, as ARX's ``suppressWhileNotFulfilledBinary`` (exact where the model's figure falls
    monotonically along the prefix: docs/risk.md).

    >>> import numpy as np
    >>> from ldiv_polars.models.risk_thresholds import SampleUniques
    >>> classes_to_suppress(SampleUniques(0.0), np.array([3, 1, 2, 1]), budget=1) is None
    True
    >>> classes_to_suppress(SampleUniques(0.0), np.array([3, 1, 2, 1]), budget=2)
    2
    """
    import numpy as np

    if model.table_holds(sizes):
        return 0
    ordered = np.sort(np.asarray(sizes, dtype=np.int64), kind="stable")
    within = int(np.searchsorted(np.cumsum(ordered), budget, side="right"))
    if within == 0 or not model.table_holds(ordered[within:]):
        return None
    low, high = 1, within  # holds at ``high``, not at ``low - 1``
    while low < high:
        mid = (low + high) // 2
        if model.table_holds(ordered[mid:]):
            high = mid
        else:
            low = mid + 1
    return high


def table_models(models: list[Model] | tuple[Model, ...]) -> list[TableModel]:
    """The table-level models among ``models``."""
    return [m for m in models if getattr(m, "table_level", False)]  # type: ignore[misc]
