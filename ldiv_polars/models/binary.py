"""The two l-diversity flavours of the minimality-attack paper (Cormode et al. 2010, §2.2), as
foundation models so that groupings are verified by :func:`ldiv_polars.check`.

- :class:`BinaryLDiversity`: the sensitive values listed as *positive* make up at most 1/l of
  every class (negatives are not sensitive).
- :func:`simple_l_diversity`: no value occurs more than 1/l of the time, i.e. (1/l, 1)-anonymity
  (:class:`~ldiv_polars.models.AlphaKAnonymity`).

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"g": [1, 1, 1, 1], "s": ["+", "-", "-", "+"]})
>>> check(df, ["g"], "s", [BinaryLDiversity(2, ["+"])]).passed
True
>>> check(df, ["g"], "s", [BinaryLDiversity(3, ["+"])]).passed
False
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.validate import require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import SIZE, ClassContext, Model
from ldiv_polars.models.disclosure import AlphaKAnonymity
from ldiv_polars.models.exact import (
    ClassCounts,
    Reference,
    agreeing,
    decimal,
    dyadic_odd,
    near_product,
)

if TYPE_CHECKING:
    from ldiv_polars.core.frequency import FrequencySet
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


class BinaryLDiversity(Model):
    """Binary l-diversity: ``positives * l <= size`` in every class (exact: ``l`` is read as
    the decimal it was written as). Achieved value: the largest positive share (lower is
    better; the table passes iff it is at most ``1/l``)."""

    name = "binary_l"
    higher_is_better = False
    monotone = True

    def __init__(self, l: float, positive: Iterable[object]) -> None:
        self.l = require_real("l", l, low=1.0, finite=True)
        if isinstance(positive, (str, bytes)):
            positive = [positive]
        self.positive = tuple(sorted(set(positive), key=str))
        if not self.positive:
            raise InvalidParameterError("binary l-diversity needs at least one positive value")
        self._max_share = Fraction(1) / decimal(l)
        self._odd_l = dyadic_odd(self.l, decimal(l))

    def params(self) -> dict[str, object]:
        return {"l": self.l, "positive": self.positive}

    def validate(self, fs: FrequencySet) -> None:
        from ldiv_polars.models.l_diversity import check_value_set

        check_value_set(fs, "the positive set", self.positive)

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= float(self._max_share)

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        positive = set(self.positive)
        pos = sum(c for c, v in zip(cls.counts, cls.labels(ref)) if v is not None and v in positive)
        share = Fraction(pos, cls.size)
        passed = share <= self._max_share
        return passed, agreeing(share, passed, float(self._max_share), "<=")

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        dom = rows.domain
        if dom is None or dom.width != 1:
            return None
        positive = list(self.positive)
        is_pos = dom.derived(self, "positive", lambda: dom.matches(lambda c: c.is_in(positive)))
        pos = np.bincount(rows.cls, weights=np.where(is_pos[rows.s], rows.n, 0),
                          minlength=rows.classes)
        size = rows.size
        present = rows.present
        return ClassVerdict((pos * self.l <= size) | ~present,
                            near_product(size, self.l, pos, self._odd_l) & present)

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [
            pl.col(COUNT)
            .filter(pl.col(ctx.s).is_in(list(self.positive)))
            .sum()
            .alias(self.col("pos"))
        ]

    def value(self) -> pl.Expr:
        return pl.col(self.col("pos")) / pl.col(SIZE)

    def passes(self) -> pl.Expr:
        return pl.col(self.col("pos")) * self.l <= pl.col(SIZE)

    def uncertain(self) -> pl.Expr | None:
        pos = pl.col(self.col("pos")).cast(pl.Float64)
        return near_product(pl.col(SIZE), self.l, pos, self._odd_l)

    def reason(self) -> pl.Expr:
        return pl.format(f"{{}} positive(s) of {{}} > 1/l (l={self.l})", pl.col(self.col("pos")),
                         pl.col(SIZE))


def simple_l_diversity(l: float, k: int = 1) -> AlphaKAnonymity:
    """Simple l-diversity of the paper: every sensitive value at most 1/l of each class
    ((1/l, k)-anonymity with alpha the exact fraction 1/l: a class holding 1 of 3 rows of a
    value passes l = 3)."""
    require_real("l", l, low=1.0, finite=True)
    return AlphaKAnonymity(Fraction(1) / decimal(l), k)
