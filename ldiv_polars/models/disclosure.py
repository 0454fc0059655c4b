"""Attribute-disclosure bounds relative to the table distribution: (alpha,k)-anonymity,
delta-disclosure privacy and basic/enhanced beta-likeness.

- (alpha,k)-anonymity (Wong et al. 2006): every class has ``size >= k`` and no sensitive value
  above ``alpha`` of the class. Achieved: the largest relative frequency.
- delta-disclosure privacy (Brickell & Shmatikov 2008): ``|ln(p(s|class) / p(s))| < delta`` for
  every class and every value of the table; a class missing a value of the table has
  ``ln 0 = -inf``, so delta is infinite. Achieved: the largest ``|ln(p/q)|`` (inf if a value is
  missing somewhere).
- beta-likeness (Cao & Karras 2012): for every value with ``p > q`` in a class,
  ``(p - q)/q <= beta`` (basic) or ``<= min(beta, -ln q)`` (enhanced). Achieved: the largest
  ``(p - q)/q`` over ``p > q`` (enhanced: inf when a value breaks ``-ln q`` whatever beta).

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
>>> check(df, ["q"], "s", [DeltaDisclosure(10.0)]).models[0].achieved
inf
"""

from __future__ import annotations

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.models.base import (
    DISTINCT,
    ROW_M,
    ROW_P,
    ROW_Q,
    SIZE,
    ClassContext,
    Model,
    SqlCall,
)
from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


class AlphaKAnonymity(Model):
    """(alpha,k)-anonymity. Achieved value: the largest ``n/size`` (alpha); the k part is read
    from the class sizes (:meth:`satisfied_by` tests the alpha part)."""

    name = "alpha_k"
    higher_is_better = False
    identity_only = True

    def __init__(self, alpha: float, k: int) -> None:
        self.alpha = require_real("alpha", alpha, low=0.0, high=1.0, low_open=True)
        self.k = require_int_at_least("k", k, 1)

    def params(self) -> dict[str, object]:
        return {"alpha": self.alpha, "k": self.k}

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= self.alpha

    @property
    def min_class_size(self) -> int:
        return self.k

    def relaxation(self) -> Model | None:
        from ldiv_polars.models.k_anonymity import KAnonymity

        return KAnonymity(self.k) if self.k >= 2 else None

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        r1, _ = rows.top(1)
        size = rows.size
        ok = (size >= self.k) & (r1 <= self.alpha * size * (1 + 1e-15))
        return ClassVerdict(ok | ~rows.present)

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__alpha_k_x", (self.alpha, self.k))

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [pl.col(COUNT).max().alias(self.col("max_n"))]

    def value(self) -> pl.Expr:
        return pl.col(self.col("max_n")) / pl.col(SIZE)

    def passes(self) -> pl.Expr:
        # integer comparison: max_n <= alpha * size, exact for alpha given as a decimal fraction
        return (pl.col(SIZE) >= self.k) & (
            pl.col(self.col("max_n")) <= self.alpha * pl.col(SIZE) * (1 + 1e-15)
        )

    def reason(self) -> pl.Expr:
        return pl.format(
            f"size {{}} (k={self.k}), top share {{}} (alpha={self.alpha})",
            pl.col(SIZE),
            self.value().round(6),
        )


class DeltaDisclosure(Model):
    """delta-disclosure privacy. Achieved value: the largest ``|ln(p/q)|`` (inf when a class
    misses a value of the table)."""

    name = "delta_disclosure"
    higher_is_better = False
    needs_q = True
    identity_only = True

    def __init__(self, delta: float) -> None:
        self.delta = require_real("delta", delta, low=0.0, low_open=True)

    def params(self) -> dict[str, object]:
        return {"delta": self.delta}

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved < self.delta

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__delta_disclosure_x", (self.delta,))

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [
            (pl.col(ROW_P) / pl.col(ROW_Q)).log().abs().max().alias(self.col("max_log")),
            pl.col(ROW_M).first().alias(self.col("m")),
        ]

    def value(self) -> pl.Expr:
        return pl.when(pl.col(DISTINCT) < pl.col(self.col("m"))).then(float("inf")).otherwise(
            pl.col(self.col("max_log"))
        )

    def passes(self) -> pl.Expr:
        return self.value() < self.delta

    def reason(self) -> pl.Expr:
        return pl.format(f"max |ln(p/q)| {{}} not < delta={self.delta}", self.value().round(6))


class BetaLikeness(Model):
    """Basic (default) or enhanced beta-likeness. Achieved value: the largest relative gain
    ``(p - q)/q`` over values more frequent in the class than in the table."""

    name = "beta_likeness"
    higher_is_better = False
    needs_q = True
    identity_only = True

    def __init__(self, beta: float, enhanced: bool = False) -> None:
        self.beta = require_real("beta", beta, low=0.0, low_open=True)
        self.enhanced = bool(enhanced)

    def params(self) -> dict[str, object]:
        return {"beta": self.beta, "enhanced": self.enhanced}

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= self.beta

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__beta_likeness_x", (self.beta, self.enhanced))

    @property
    def key(self) -> str:
        return f"{'enhanced' if self.enhanced else 'basic'}_beta_likeness_{self.beta:g}"

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        p, q = pl.col(ROW_P), pl.col(ROW_Q)
        gain = ((p - q) / q).filter(p > q)
        out = [gain.max().fill_null(0.0).alias(self.col("gain"))]
        if self.enhanced:
            # largest gain relative to its own cap -ln q (> 1 means no beta can satisfy it)
            out.append(
                (gain / (-q.filter(p > q).log())).max().fill_null(0.0).alias(self.col("cap"))
            )
            out.append(
                (gain - pl.min_horizontal(pl.lit(self.beta), -q.filter(p > q).log()))
                .max()
                .fill_null(-1.0)
                .alias(self.col("excess"))
            )
        return out

    def value(self) -> pl.Expr:
        if self.enhanced:
            return pl.when(pl.col(self.col("cap")) > 1.0).then(float("inf")).otherwise(
                pl.col(self.col("gain"))
            )
        return pl.col(self.col("gain"))

    def passes(self) -> pl.Expr:
        if self.enhanced:
            return pl.col(self.col("excess")) <= 0.0
        return pl.col(self.col("gain")) <= self.beta

    def reason(self) -> pl.Expr:
        return pl.format(
            f"largest relative gain (p-q)/q {{}} > beta={self.beta}"
            + (" or -ln q" if self.enhanced else ""),
            pl.col(self.col("gain")).round(6),
        )

