"""Exact arithmetic for the classes whose float statistic lies within rounding of a threshold.

Every engine (Polars, the numpy array verdicts, the DuckDB macros) computes a model's statistic
in floating point together with a rigorous bound of its rounding error. A class farther than
that bound from the threshold is decided by the float comparison; the few within it are decided
here, by the model's own exact routine (:meth:`Model.decide
<ldiv_polars.models.Model.decide>`) on the class's integer counts — so the three engines give
the same verdict, the exact one, on every boundary.

- **Thresholds are decimals.** A float parameter is read as the rational it was written as:
  :func:`decimal` gives ``Fraction(repr(x))`` (the shortest decimal that round-trips), so
  ``t=0.2`` means exactly 1/5 and an EMD of exactly 1/5 passes it.
- Rational statistics (EMD, beta's gain, shares, ``r1 / tail``) are compared as fractions of
  integers. Transcendental comparisons (entropy against ``ln l``, ``|ln(p/q)|`` against delta,
  a gain against ``-ln q``) are decided in :mod:`decimal` arithmetic at increasing precision
  (:func:`sign`); the one equality that can hold, entropy ``H = ln l``, is detected exactly by
  :func:`entropy_equals_log` (prime exponents, no huge powers).
- The value reported for such a class (its contribution to the table's *achieved* value) is
  the exact statistic correctly rounded, moved by one ulp to the verdict's side of the
  threshold when rounding would put it on the other (:func:`agreeing`): the achieved value
  then agrees with the verdict (``model.satisfied_by(achieved) == passed``).

>>> decimal(0.2)
Fraction(1, 5)
>>> agreeing(Fraction(1, 5), True, 0.2, "<=")
0.2
>>> entropy_equals_log([1, 1, 1], Fraction(3))
True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from math import gcd

Op = str
"""A comparison that passes: ``"<="``, ``"<"``, ``">="`` or ``">"`` (value OP threshold)."""

EPS = 2.0 ** -52
"""The float64 machine epsilon, the unit of the engines' rounding bounds."""

START_DIGITS = 40
MAX_DIGITS = 20_000


def decimal(x: float | int | Fraction) -> Fraction:
    """The rational a threshold was written as: ints and fractions as they are, a float as its
    shortest round-trip decimal (``0.2`` -> 1/5, ``3.3`` -> 33/10). Infinite or NaN values
    raise ValueError.

    >>> decimal(3.3), decimal(2), decimal(1e-9)
    (Fraction(33, 10), Fraction(2, 1), Fraction(1, 1000000000))
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, numbers.Integral):
        return Fraction(int(x))
    f = float(x)
    if not math.isfinite(f):
        raise ValueError(f"no exact value for {x!r}")
    return Fraction(repr(f))


def dyadic_odd(x: float, exact: Fraction) -> int | None:
    """When a threshold is exactly its float (a dyadic rational ``p / 2^e``, e.g. 3, 1.5,
    0.25), its odd numerator ``p``: then ``x * n`` is computed exactly for integers
    ``0 <= n`` with ``p * n < 2**53``, and so is its comparison with an integer. None when the
    decimal threshold is not a float (0.3, 3.3).

    >>> dyadic_odd(3.0, Fraction(3)), dyadic_odd(1.5, Fraction(3, 2))
    (3, 3)
    >>> dyadic_odd(0.3, Fraction(3, 10)) is None
    True
    """
    if not math.isfinite(x) or Fraction(x) != exact:
        return None
    p = abs(exact.numerator)
    while p and p % 2 == 0:
        p //= 2
    return p


def near_product(lhs: object, x: float, n: object, odd: int | None) -> object:
    """Whether the integer ``lhs`` compared with ``x * n`` (``n`` an integer) is within the
    rounding of that product and of ``x``'s own decimal-to-binary error, ``4 eps x n``; never
    when the product is exact (:func:`dyadic_odd`). Works on numbers, numpy arrays and Polars
    expressions alike."""
    near = abs(lhs - x * n) <= 4 * EPS * x * n
    return near if odd is None else near & (n * odd >= 2.0 ** 53)


def int64_ratio(x: Fraction) -> tuple[int, int] | None:
    """``(numerator, denominator)`` of a nonnegative rational when both fit a signed 64-bit
    integer (SQL ``BIGINT``), else None: the form an engine compares counts with exactly
    (``count * den <= num * size`` in 128-bit integers).

    >>> int64_ratio(Fraction(1, 2)), int64_ratio(Fraction(1, 10**30))
    ((1, 2), None)
    """
    limit = 2**63 - 1
    if x < 0 or x.numerator > limit or x.denominator > limit:
        return None
    return x.numerator, x.denominator


def holds(value: float | Fraction, op: Op, threshold: float | Fraction) -> bool:
    """``value OP threshold``; raises ValueError for an unknown ``op``."""
    if op == "<=":
        return value <= threshold
    if op == "<":
        return value < threshold
    if op == ">=":
        return value >= threshold
    if op == ">":
        return value > threshold
    raise ValueError(f"unknown comparison {op!r}")


def agreeing(value: Fraction | Decimal | float, passed: bool, threshold: float, op: Op) -> float:
    """``value`` as the nearest float, moved one ulp at a time toward the verdict's side of
    ``threshold`` (a float) while ``float OP threshold`` disagrees with ``passed``.

    >>> agreeing(Fraction(3, 10) + Fraction(1, 10**30), False, 0.3, "<=") > 0.3
    True
    """
    v = float(value)
    up = (op in (">=", ">")) == passed
    while holds(v, op, threshold) != passed:
        v = math.nextafter(v, math.inf if up else -math.inf)
    return v


def sign(approx: Callable[[], tuple[Decimal, Decimal]]) -> int:
    """The sign of a nonzero real given ``approx() -> (a, e)`` with ``|a - x| <= e`` at the
    current :mod:`decimal` precision; the precision doubles until ``|a| > e``. Raises
    ArithmeticError if the value looks zero at :data:`MAX_DIGITS` digits (callers exclude the
    equalities that can hold)."""
    digits = START_DIGITS
    while digits <= MAX_DIGITS:
        with localcontext() as ctx:
            ctx.prec = digits
            a, e = approx()
            if a > e:
                return 1
            if a < -e:
                return -1
        digits *= 2
    raise ArithmeticError("the sign is not decided at the largest precision")


def ulps(terms: int) -> Decimal:
    """A bound of the accumulated rounding error of ``terms`` correctly rounded decimal
    operations, relative to the magnitudes involved, at the current precision."""
    with localcontext() as ctx:
        prec = ctx.prec
    return Decimal(terms + 4) * Decimal(10) ** (2 - prec)


def ln(x: Fraction | int) -> Decimal:
    """Natural log of a positive rational at the current precision (two correctly rounded
    logs and a subtraction)."""
    x = Fraction(x)
    return Decimal(x.numerator).ln() - Decimal(x.denominator).ln()


def log_sign(x: Fraction, y: Fraction) -> int:
    """The sign of ``|ln x| - y`` for positive rationals ``x`` and ``y`` (never zero: ``e``
    to a nonzero rational power is transcendental).

    >>> log_sign(Fraction(2), Fraction(1, 2)), log_sign(Fraction(1, 2), Fraction(1))
    (1, -1)
    """
    def approx() -> tuple[Decimal, Decimal]:
        v = abs(ln(x)) - Decimal(y.numerator) / Decimal(y.denominator)
        return v, ulps(6) * (abs(ln(x)) + Decimal(y.numerator) / Decimal(y.denominator) + 1)

    if x == 1:
        return -1 if y > 0 else 0
    return sign(approx)


def neg_log_sign(q: Fraction, g: Fraction) -> int:
    """The sign of ``-ln q - g`` for a rational ``0 < q < 1`` and a rational ``g`` (never
    zero: ``ln q`` is transcendental)."""
    def approx() -> tuple[Decimal, Decimal]:
        lq = ln(q)
        gd = Decimal(g.numerator) / Decimal(g.denominator)
        return -lq - gd, ulps(6) * (abs(lq) + abs(gd) + 1)

    return sign(approx)


# --- entropy ----------------------------------------------------------------------------------


def _coprime_base(nums: Sequence[int]) -> list[int]:
    """Pairwise coprime integers > 1 of which every ``nums`` entry is a product of powers
    (gcd refinement; no factorization)."""
    base: list[int] = []
    stack = [x for x in nums if x > 1]
    while stack:
        y = stack.pop()
        if y == 1:
            continue
        for i, b in enumerate(base):
            g = gcd(y, b)
            if g > 1:
                base.pop(i)
                stack.extend(v for v in (g, b // g, y // g) if v > 1)
                break
        else:
            base.append(y)
    return base


def _valuation(x: int, p: int) -> int:
    k = 0
    while x % p == 0:
        x //= p
        k += 1
    return k


def entropy_equals_log(counts: Sequence[int], l: Fraction) -> bool:
    """Whether a class with ``counts`` has entropy exactly ``ln l``:
    ``N ln N - sum n ln n = N ln l``, i.e. ``N^N b^N = a^N prod n^n`` for ``l = a/b``,
    compared by the exponents of a coprime base of ``N, a, b`` and the counts."""
    counts = [int(c) for c in counts if c > 0]
    total = sum(counts)
    a, b = l.numerator, l.denominator
    for p in _coprime_base([total, a, b, *counts]):
        left = total * (_valuation(total, p) + _valuation(b, p))
        right = total * _valuation(a, p) + sum(c * _valuation(c, p) for c in counts)
        if left != right:
            return False
    return True


def entropy_sign(counts: Sequence[int], l: Fraction) -> int:
    """The sign of ``H - ln l`` for a class with ``counts`` (0 exactly when equal)."""
    counts = [int(c) for c in counts if c > 0]
    if entropy_equals_log(counts, l):
        return 0
    total = sum(counts)

    def approx() -> tuple[Decimal, Decimal]:
        t = Decimal(total)
        nlogn = sum(Decimal(c) * Decimal(c).ln() for c in counts)
        v = t * t.ln() - nlogn - t * ln(l)
        return v, ulps(3 * len(counts) + 8) * (t * t.ln() + nlogn + t * abs(ln(l)) + 1)

    return sign(approx)


def entropy_exp(counts: Sequence[int]) -> Decimal:
    """``exp(H)`` of a class at the current precision (``N / prod n^(n/N)``)."""
    counts = [int(c) for c in counts if c > 0]
    total = Decimal(sum(counts))
    nlogn = sum(Decimal(c) * Decimal(c).ln() for c in counts)
    return (total.ln() - nlogn / total).exp()


@dataclass(frozen=True)
class Reference:
    """The table distribution of the sensitive column, in the engine's domain order (ascending,
    nulls first): ``labels[i]`` has ``counts[i]`` rows. ``text`` optionally gives the labels as
    the engine casts them to strings (hierarchy leaves are matched on them)."""

    labels: tuple[object, ...]
    counts: tuple[int, ...]
    text: tuple[str | None, ...] | None = None

    @property
    def total(self) -> int:
        """The number of rows of the reference distribution (the table)."""
        return sum(self.counts)

    def __len__(self) -> int:
        return len(self.counts)


@dataclass(frozen=True)
class ClassCounts:
    """One class: ``counts[i]`` rows with the value at ``ranks[i]`` of the :class:`Reference`."""

    ranks: tuple[int, ...]
    counts: tuple[int, ...]

    @property
    def size(self) -> int:
        """The number of rows of the class."""
        return sum(self.counts)

    def labels(self, ref: Reference) -> list[object]:
        """The class's values as the reference names them."""
        return [ref.labels[r] for r in self.ranks]
