"""The exact step of the models that read sampling weights: a class whose float weight sum
(``F_k``) lies within the summation error bound of the threshold (``Model.weight_uncertain``)
is decided on the exact real sum of its records' weights (``Model.decide_weight_sum``).

The engine adds a class's weights in an order of its own (per frequency-set row, then per
class; sequential, pairwise or chunked), so near the threshold the float verdict depends on
that order. Only the flagged classes' weights are read again from the input — a semi-join of
the input on their keys, in Polars — and compared exactly (:class:`ExactSum`: ``math.fsum``,
correctly rounded, for floats; :class:`fractions.Fraction` otherwise); on real data few
classes are flagged and the input is usually not read again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from ldiv_polars.models.base import Model

_IDX = "__ldiv_widx"
_WS = "__ldiv_wlist"


class ExactSum:
    """The exact real sum of a class's weights (floats or integers), compared with a threshold
    without rounding.

    For float weights and a float threshold ``t``, :func:`math.fsum` of the weights and
    ``-t`` is the correctly rounded value of the exact ``S - t`` (Shewchuk's algorithm: exact
    partial sums, one final rounding to nearest); rounding to nearest keeps the sign and gives
    0 only for an exact 0 (every nonzero sum of doubles is at least the smallest subnormal),
    so its sign is the sign of ``S - t``. Otherwise (integers, a threshold beyond 2^53, mixed)
    the sum is taken in :class:`fractions.Fraction`.

    >>> s = ExactSum([0.1] * 10)
    >>> s.compare(1), float(s), ExactSum([0.3, 0.7]).compare(1)
    (1, 1.0, -1)
    """

    def __init__(self, values: Sequence[float | int]) -> None:
        self.values = list(values)
        self._floats = all(isinstance(v, float) for v in self.values)

    def compare(self, t: float | int) -> int:
        """-1, 0 or 1: the sign of ``sum - t``, exactly."""
        if self._floats and float(t) == t and math.isfinite(t):
            d = math.fsum([*self.values, -float(t)])
        else:
            d = sum((Fraction(v) for v in self.values), Fraction(0)) - Fraction(t)
        return (d > 0) - (d < 0)

    def __float__(self) -> float:
        """The float nearest the exact sum."""
        if self._floats:
            return math.fsum(self.values)
        return float(sum((Fraction(v) for v in self.values), Fraction(0)))


def exact_weight_sums(rows: pl.LazyFrame, keys: pl.DataFrame, qi: Sequence[str],
                      weight: str) -> dict[int, ExactSum]:
    """Per row index of ``keys`` (columns ``qi`` and ``__ldiv_widx``): the exact sum of the
    ``weight`` values of the ``rows`` whose ``qi`` equal that key (nulls equal nulls).

    >>> rows = pl.LazyFrame({"z": ["a", "a", "b"], "w": [0.1, 0.2, 5]})
    >>> keys = pl.DataFrame({"z": ["a"], "__ldiv_widx": [7]})
    >>> exact_weight_sums(rows, keys, ["z"], "w")[7].values
    [0.1, 0.2]
    """
    qi = list(qi)
    grouped = (rows.select(*qi, pl.col(weight))
               .join(keys.lazy().select(qi), on=qi, how="semi", nulls_equal=True)
               .group_by(qi).agg(pl.col(weight).alias(_WS))
               .join(keys.lazy(), on=qi, how="inner", nulls_equal=True)
               .select(_IDX, _WS).collect())
    return {int(i): ExactSum(ws) for i, ws in grouped.iter_rows()}


def decide_weight_sums(classes: pl.DataFrame, models: Sequence[Model],
                       rows: Callable[[], pl.LazyFrame], qi: Sequence[str],
                       weight: str) -> pl.DataFrame:
    """``classes`` (an evaluated class table: ``qi``, ``size``, each model's value column and
    ``pass_<key>``) with the verdict and value of every class that one of ``models`` flags
    (``weight_uncertain``) replaced by the exact ones (``decide_weight_sum``). ``rows()``
    gives the input rows (``qi`` and ``weight`` columns); it is called only when some class
    is flagged."""
    from ldiv_polars.models.base import value_col

    judged = [(m, e) for m in models if (e := m.weight_uncertain()) is not None]
    if not judged or classes.height == 0:
        return classes
    flags = classes.select([e.alias(f"f{i}") for i, (_, e) in enumerate(judged)])
    mask = flags.select(pl.any_horizontal(pl.all())).to_series()
    if not mask.any():
        return classes
    keys = classes.with_row_index(_IDX).filter(mask).select(*qi, _IDX)
    sums = exact_weight_sums(rows(), keys, qi, weight)
    out = classes
    for i, (m, _) in enumerate(judged):
        idx = [j for j in flags.get_column(f"f{i}").arg_true().to_list() if j in sums]
        if not idx:
            continue
        decided = [m.decide_weight_sum(sums[j]) for j in idx]
        out = out.with_columns(
            out.get_column(f"pass_{m.key}").scatter(idx, [d[0] for d in decided]),
            out.get_column(value_col(m)).scatter(idx, [d[1] for d in decided]))
    return out
