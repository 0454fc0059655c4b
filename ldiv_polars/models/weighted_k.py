"""k-anonymity on the estimated population class size: with sampling weights, each class's
``F_k`` — the sum of its records' weights, sdcMicro's ``freqCalc`` ``Fk`` — must be at least
``k`` (docs/risk.md, "Weighted k-anonymity").

Every other model judges sample counts ``f_k``; this one alone reads the weights, so the
frequency set must be built with them (``check(..., weight="w")``, ``ldiv check --weight w``).

Weights are sampling weights: finite and positive (the frequency set refuses anything else,
:func:`~ldiv_polars.core.validate.raise_on_bad_weights`). Then merging classes adds their weight
sums, so the model is monotone and union-closed like k-anonymity. ``F_k`` is a float sum,
whose value depends on the order the engine adds the weights in; a class whose ``F_k`` lies
within the summation error bound of ``k`` (:meth:`WeightedKAnonymity.weight_uncertain`) is
decided on the exact real sum of its records' weights, read again from the input
(:mod:`ldiv_polars.models.weight_exact`): ten weights 0.1 sum to more than 1 exactly, so they
pass k=1 although a sequential float sum gives 0.9999999999999999.

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"zip": ["130", "130", "148"], "w": [2.5, 2.5, 9.0]})
>>> r = check(df, "zip", None, WeightedKAnonymity(6), weight="w")
>>> r.passed, r.models[0].achieved   # class 130: F_k = 5 < 6
(False, 5.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import SIZE, ClassContext, Model

UNIT_ROUNDOFF = 2.0 ** -53
"""``u``, the relative rounding error of one float64 operation (round to nearest)."""

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows
    from ldiv_polars.models.weight_exact import ExactSum


class WeightedKAnonymity(Model):
    """Every equivalence class has an estimated population size ``F_k >= k``, ``F_k`` the sum
    of its records' sampling weights. Achieved value: the smallest ``F_k`` (a float).

    A class of its own rather than an option of :class:`~ldiv_polars.models.KAnonymity`:
    the statistic is another (a float weight sum, not the integer size), so none of
    k-anonymity's size facts hold (a passing class may hold one record: no
    ``min_class_size``, no ``count_bounds``, not ``sizes_only``). Monotone and union-closed
    (weights are positive: a union's sum is at least each part's).

    >>> m = WeightedKAnonymity(10)
    >>> m.describe(), m.needs_weight, m.union_closed
    ('weighted_k_anonymity(k=10)', True, True)
    """

    name = "weighted_k_anonymity"
    monotone = True
    higher_is_better = True
    needs_sensitive = False
    union_closed = True
    identity_only = True
    needs_weight = True

    def __init__(self, k: int) -> None:
        self.k = require_int_at_least("k", k, 1)

    def params(self) -> dict[str, object]:
        return {"k": self.k}

    @property
    def fk_col(self) -> str:
        """The per-class column holding ``F_k``."""
        return self.col("fk")

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        """``F_k``: the class's sum of the rows' weight sums; a typed error when the frequency
        set has no weights."""
        if ctx.weight is None:
            raise InvalidParameterError(
                f"{self.describe()} reads sampling weights: pass weight= (CLI: --weight)")
        return [pl.col(ctx.weight).sum().cast(pl.Float64).alias(self.fk_col)]

    def value(self) -> pl.Expr:
        return pl.col(self.fk_col)

    def passes(self) -> pl.Expr:
        return pl.col(self.fk_col) >= self.k

    def weight_uncertain(self) -> pl.Expr:
        """Per class: ``|F_k - k| <= 4 n u max(F_k, k)``, ``n`` the class's records (``size``),
        ``u = 2^-53``. Proof that outside it the float verdict is the exact one: the engine's
        ``F_k`` is the n weights added by n - 1 float additions in some tree (any order:
        sequential, pairwise, per frequency-set row then per class), so
        ``|F_k - S| <= g S`` with ``g = (n-1)u / (1-(n-1)u)`` and ``S`` the exact sum of the
        (positive) weights (Higham, *Accuracy and Stability*, §4.2); an integer weight above
        2^53 cast to float adds at most ``u S``. For ``n u <= 1/100``, ``S <= 1.02 F_k`` and
        the error is below ``1.05 n u F_k``, well inside the bound; ``F_k - k`` is computed
        exactly there (Sterbenz) and the bound's own rounding is absorbed by its factor 4.
        A generous bound only costs exact work on a few more classes."""
        fk = pl.col(self.fk_col)
        bound = pl.col(SIZE).cast(pl.Float64) * (4 * UNIT_ROUNDOFF) * pl.max_horizontal(
            fk, pl.lit(float(self.k)))
        return (fk - self.k).abs() <= bound

    def decide_weight_sum(self, total: ExactSum) -> tuple[bool, float]:
        """``total >= k`` exactly, and ``F_k`` as the float nearest ``total`` moved to the
        verdict's side of ``k`` (a failing class whose sum rounds to ``k`` reports the float
        just below it).

        >>> from ldiv_polars.models.weight_exact import ExactSum
        >>> m = WeightedKAnonymity(1)
        >>> m.decide_weight_sum(ExactSum([0.1] * 10))
        (True, 1.0)
        >>> m.decide_weight_sum(ExactSum([1 - 2**-53] + [2**-55] * 3))
        (False, 0.9999999999999999)
        """
        import math

        passed = total.compare(self.k) >= 0
        value = float(total)
        if not passed and value >= self.k:
            value = math.nextafter(float(self.k), -math.inf)
        return passed, value

    def reason(self) -> pl.Expr:
        return pl.format(f"estimated population size F_k {{}} < k={self.k}",
                         pl.col(self.fk_col))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved >= self.k

    def class_ok(self, fk: np.ndarray) -> np.ndarray:
        """Per class (numpy): whether a class of weight sum ``fk`` passes (what
        :meth:`passes` states in Polars).

        >>> import numpy as np
        >>> WeightedKAnonymity(5).class_ok(np.array([4.75, 5.0])).tolist()
        [False, True]
        """
        return fk >= self.k

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        """Per class of ``rows``: :meth:`class_ok` on the rows' weight sums
        (:attr:`EncodedRows.weight_sum`); None when ``rows`` carry no weights. A float
        verdict: the rolled-up sums do not keep the records' weights, so a class within
        rounding of ``k`` is not decided exactly here (the search's final re-verification,
        :func:`~ldiv_polars.check`-like, is exact and refuses a release failing exactly)."""
        from ldiv_polars.models.encoded import ClassVerdict

        fk = rows.weight_sum
        if fk is None:
            return None
        return ClassVerdict(self.class_ok(fk) | ~rows.present)
