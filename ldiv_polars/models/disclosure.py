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

Thresholds are read as the decimals they were written as and the classes within rounding of a
threshold are decided exactly on their counts (:mod:`ldiv_polars.models.exact`): a gain of
exactly 1 passes beta = 1.

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
>>> check(df, ["q"], "s", [DeltaDisclosure(10.0)]).models[0].achieved
inf
"""

from __future__ import annotations

import math
from decimal import localcontext
from fractions import Fraction
from typing import TYPE_CHECKING

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
    reason_number,
    reason_param,
)
from ldiv_polars.models.exact import (
    EPS,
    START_DIGITS,
    ClassCounts,
    Reference,
    agreeing,
    decimal,
    dyadic_odd,
    int64_ratio,
    ln,
    log_sign,
    near_product,
    neg_log_sign,
)

if TYPE_CHECKING:
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


def ratio_band(value: object) -> object:
    """Rounding bound of a ratio of shares ``p/q`` or ``(p - q)/q`` (or its log), computed from
    counts with a few roundings: ``16 eps (|value| + 2)``."""
    return 16 * EPS * (abs(value) + 2)


class AlphaKAnonymity(Model):
    """(alpha,k)-anonymity: ``size >= k`` and ``max n <= alpha * size`` in every class.
    Achieved value: the largest ``n/size`` (alpha); the k part is read from the class sizes
    (:meth:`satisfied_by` tests the alpha part)."""

    name = "alpha_k"
    higher_is_better = False
    identity_only = True

    def __init__(self, alpha: float, k: int) -> None:
        self.alpha = require_real("alpha", alpha, low=0.0, high=1.0, low_open=True)
        self.k = require_int_at_least("k", k, 1)
        self._exact_alpha = decimal(alpha)
        self._odd_alpha = dyadic_odd(self.alpha, self._exact_alpha)
        self._ratio = int64_ratio(self._exact_alpha)
        """alpha's decimal as ``(num, den)``: the verdict is then an integer comparison,
        ``max n * den <= num * size``, exact for every class at once."""

    def params(self) -> dict[str, object]:
        return {"alpha": self.alpha, "k": self.k}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [pl.col(COUNT).max().alias(self.col("max_n"))]

    def value(self) -> pl.Expr:
        return pl.col(self.col("max_n")) / pl.col(SIZE)

    def _float_passes(self) -> pl.Expr:
        return pl.col(self.col("max_n")) <= self.alpha * pl.col(SIZE)

    def passes(self) -> pl.Expr:
        """Per class: ``size >= k`` and ``max n <= alpha * size``, on integers (alpha's
        decimal ``num / den``, compared in 128 bits) when alpha's decimal fits 64-bit
        integers, else on floats with the near classes flagged by :meth:`uncertain`."""
        if self._ratio is None:
            return (pl.col(SIZE) >= self.k) & self._float_passes()
        num, den = self._ratio
        wide = pl.Int128
        exact = (pl.col(self.col("max_n")).cast(wide) * pl.lit(den, dtype=wide)
                 <= pl.col(SIZE).cast(wide) * pl.lit(num, dtype=wide))
        return (pl.col(SIZE) >= self.k) & exact

    def uncertain(self) -> pl.Expr | None:
        """Per class: decided by :meth:`decide`. With the integer verdict, only a class whose
        float share lies on the other side of alpha than its verdict (its value is then made
        to agree); else the classes within rounding of ``alpha * size``."""
        if self._ratio is not None:
            return (pl.col(SIZE) >= self.k) & (self._float_passes() != self.passes())
        size = pl.col(SIZE).cast(pl.Float64)
        return (pl.col(SIZE) >= self.k) & near_product(
            pl.col(self.col("max_n")), self.alpha, size, self._odd_alpha)

    def reason(self) -> pl.Expr:
        return pl.format(
            f"size {{}} (k={reason_param(self.k)}), top share {{}} "
            f"(alpha={reason_param(self.alpha)})",
            pl.col(SIZE),
            reason_number(self.value()),
        )

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= self.alpha

    @property
    def min_class_size(self) -> int:
        return self.k

    def relaxation(self) -> Model | None:
        from ldiv_polars.models.k_anonymity import KAnonymity

        return KAnonymity(self.k) if self.k >= 2 else None

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # g = alpha * size - max n is superadditive over any split of a class; a passing part
        # has g >= 0, a failing one g >= (alpha - 1) * its rows: the failing parts hold at
        # least (max n - alpha * size) / (1 - alpha) rows
        import numpy as np

        small = super().suppression_floor(rows, slack)  # fewer than k rows: all of them
        if self.alpha >= 1.0:
            return small
        r1, _ = rows.top(1)
        floor = np.maximum((r1 - self.alpha * rows.size) / (1.0 - self.alpha), 0.0)
        return floor if small is None else np.maximum(floor, small)

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        r1, _ = rows.top(1)
        size = rows.size
        big = (size >= self.k) & rows.present
        float_ok = r1 <= self.alpha * size
        ratio = self._ratio
        if ratio is not None and int(size.max(initial=0)) * max(ratio) < 2**62:
            exact_ok = r1.astype(np.int64) * ratio[1] <= size.astype(np.int64) * ratio[0]
            return ClassVerdict(((size >= self.k) & exact_ok) | ~rows.present,
                                big & (exact_ok != float_ok))
        return ClassVerdict(((size >= self.k) & float_ok) | ~rows.present,
                            big & near_product(r1, self.alpha, size.astype(np.float64),
                                               self._odd_alpha))

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        share = Fraction(max(cls.counts), cls.size)
        ok = share <= self._exact_alpha
        return ok and cls.size >= self.k, agreeing(share, ok, self.alpha, "<=")

    def sql_call(self) -> SqlCall:
        spec = {"model": self.name, "alpha": self._exact_alpha, "k": self.k}
        ratio = int64_ratio(self._exact_alpha)  # the exact test on integers, every class at once
        if ratio is not None:
            return SqlCall("ldiv__alpha_k_exact_classes_x", (self.alpha, self.k, *ratio),
                           spec=spec, stats_macro="ldiv__alpha_k_exact_classes_st")
        return SqlCall("ldiv__alpha_k_classes_x", (self.alpha, self.k), spec=spec,
                       stats_macro="ldiv__alpha_k_classes_st")


def _ratios(cls: ClassCounts, ref: Reference) -> list[tuple[Fraction, int]]:
    """``(p/q, table count)`` of each value of the class, from counts: ``n N / (n_s N_c)``."""
    total, size = ref.total, cls.size
    return [(Fraction(n * total, ref.counts[r] * size), ref.counts[r])
            for r, n in zip(cls.ranks, cls.counts)]


class DeltaDisclosure(Model):
    """delta-disclosure privacy: ``|ln(p/q)| < delta`` for every value of the table in every
    class. Achieved value: the largest ``|ln(p/q)|`` (inf when a class misses a value of the
    table). No class is ever exactly at the threshold (``e`` to a rational power is
    transcendental); the near ones are decided in high precision."""

    name = "delta_disclosure"
    higher_is_better = False
    needs_q = True
    identity_only = True

    def __init__(self, delta: float) -> None:
        self.delta = require_real("delta", delta, low=0.0, low_open=True)
        self._exact_delta = None if math.isinf(self.delta) else decimal(delta)

    def params(self) -> dict[str, object]:
        return {"delta": self.delta}

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

    def uncertain(self) -> pl.Expr | None:
        if self._exact_delta is None:
            return None
        v = pl.col(self.col("max_log"))
        return (pl.col(DISTINCT) >= pl.col(self.col("m"))) & (
            (v - self.delta).abs() <= ratio_band(v))

    def reason(self) -> pl.Expr:
        return pl.format(f"max |ln(p/q)| {{}} not < delta={reason_param(self.delta)}",
                         reason_number(self.value()))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved < self.delta

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        if len(cls.ranks) < len(ref):
            return False, math.inf
        assert self._exact_delta is not None
        ratios = [x for x, _ in _ratios(cls, ref)]
        passed = all(log_sign(x, self._exact_delta) < 0 for x in ratios)
        with localcontext() as ctx:
            ctx.prec = START_DIGITS
            worst = max(abs(ln(x)) for x in ratios)
        return passed, agreeing(worst, passed, self.delta, "<")

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        absent = ~rows.present
        m = int(np.count_nonzero(rows.table_counts > 0))
        with np.errstate(divide="ignore"):
            logs = np.abs(np.log(rows.p / rows.q))
        worst = rows.class_max(logs)
        complete = rows.distinct >= m
        passed = (complete & (worst < self.delta)) | absent
        if self._exact_delta is None:
            return ClassVerdict(passed)
        return ClassVerdict(passed, complete & ~absent
                            & (np.abs(worst - self.delta) <= ratio_band(worst)))

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # a passing part holds every value of the retained rows, each at a share in
        # (q' e^-delta, q' e^delta); q' is bounded from q and the slack (models/floors.py)
        import numpy as np

        from ldiv_polars.models.floors import cap_floor, least_floor, retained_share_bounds

        grow = math.exp(self.delta) if self.delta < 700.0 else math.inf
        low, high = retained_share_bounds(rows.q, slack)
        table = rows.table_counts
        # a value with more than the slack's rows in the table is retained somewhere
        sure = retained_share_bounds(table / float(table.sum()), slack)[0] > 0
        held = np.bincount(rows.cls, weights=sure[rows.s], minlength=rows.classes)
        size = rows.size.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            least = np.where(sure[rows.s], least_floor(rows.n, size[rows.cls], low / grow), 0.0)
            floor = np.maximum(cap_floor(rows, high * grow), rows.class_max(least))
        # a class missing such a value misses it in every part: every part fails
        return np.where(held < int(sure.sum()), size, floor)

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__delta_disclosure_classes_x", (self.delta,),
                       spec={"model": self.name, "delta": self._exact_delta or self.delta},
                       stats_macro="ldiv__delta_disclosure_classes_st")


class BetaLikeness(Model):
    """Basic (default) or enhanced beta-likeness: every value with ``p > q`` has
    ``(p - q)/q <= beta`` (enhanced: ``<= min(beta, -ln q)``). Achieved value: the largest
    relative gain ``(p - q)/q`` over values more frequent in the class than in the table
    (enhanced: inf when a gain exceeds its own cap ``-ln q``, whatever beta)."""

    name = "beta_likeness"
    higher_is_better = False
    needs_q = True
    identity_only = True

    def __init__(self, beta: float, enhanced: bool = False) -> None:
        self.beta = require_real("beta", beta, low=0.0, low_open=True)
        self.enhanced = bool(enhanced)
        self._exact_beta = None if math.isinf(self.beta) else decimal(beta)

    def params(self) -> dict[str, object]:
        return {"beta": self.beta, "enhanced": self.enhanced}

    @property
    def key(self) -> str:
        return f"{'enhanced' if self.enhanced else 'basic'}_beta_likeness_{self.beta:g}"

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        p, q = pl.col(ROW_P), pl.col(ROW_Q)
        g = (p - q) / q
        gain = g.filter(p > q)
        out = [gain.max().fill_null(0.0).alias(self.col("gain"))]
        near = (g - self.beta).abs() <= ratio_band(g)
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
            near = near | ((g + q.log()).abs() <= 16 * EPS * (g.abs() + q.log().abs() + 2))
        # the class holds a value whose gain is within rounding of beta (or of -ln q)
        out.append(near.any().alias(self.col("near")))
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

    def uncertain(self) -> pl.Expr | None:
        return None if self._exact_beta is None else pl.col(self.col("near"))

    def reason(self) -> pl.Expr:
        beta, v = reason_param(self.beta), self.value()
        return pl.when(v.is_infinite()).then(pl.lit(
            f"a relative gain (p-q)/q > -ln q (enhanced, beta={beta})")).otherwise(
            pl.format(f"largest relative gain (p-q)/q {{}} > beta={beta}", reason_number(v)))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved <= self.beta

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        total = ref.total
        gains = [(x - 1, tn) for x, tn in _ratios(cls, ref) if x > 1]
        if self.enhanced and any(neg_log_sign(Fraction(tn, total), g) < 0 for g, tn in gains):
            return False, math.inf
        assert self._exact_beta is not None
        top = max((g for g, _ in gains), default=Fraction(0))
        passed = top <= self._exact_beta
        return passed, agreeing(top, passed, self.beta, "<=")

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        p, q = rows.p, rows.q
        g = (p - q) / q
        more = p > q
        near = np.abs(g - self.beta) <= ratio_band(g)
        if self.enhanced:
            cap = -np.log(q)
            over = np.where(more, g - np.minimum(self.beta, cap), -np.inf)
            fails = rows.class_any(over > 0.0)
            near |= np.abs(g - cap) <= 16 * EPS * (np.abs(g) + np.abs(cap) + 2)
        else:
            fails = rows.class_any(more & (g > self.beta))
        passed = ~fails | ~rows.present
        if self._exact_beta is None:
            return ClassVerdict(passed)
        return ClassVerdict(passed, rows.class_any(near))

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # a passing part holds each value at a share p <= q' (1 + beta) (enhanced:
        # q' (1 + min(beta, -ln q')), increasing in q'), q' <= its bound from q and the slack
        import numpy as np

        from ldiv_polars.models.floors import cap_floor, retained_share_bounds

        high = retained_share_bounds(rows.q, slack)[1]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            gain = np.full_like(high, self.beta)
            if self.enhanced:
                gain = np.minimum(gain, -np.log(np.minimum(high, 1.0)))
            return cap_floor(rows, high * (1.0 + gain))

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__beta_likeness_classes_x", (self.beta, self.enhanced),
                       spec={"model": self.name, "beta": self._exact_beta or self.beta,
                             "enhanced": self.enhanced})
