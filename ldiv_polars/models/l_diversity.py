"""The l-diversity family of Machanavajjhala et al. (TKDD 2007), exact to the definitions.

- :class:`DistinctLDiversity`: at least l distinct sensitive values per class (an extension:
  the paper does not define it, see paper-notes §2.11).
- :class:`EntropyLDiversity` (Def 4.1): ``-sum p ln p >= ln l`` (natural log, ``>=``; decided
  exactly: a class spread uniformly over l values passes).
- :class:`RecursiveCLDiversity` (Def 4.2): ``r1 < c (r_l + ... + r_m)``, strict; a class with
  fewer than l values fails; l = 1 always passes (the definition's own last sentence, "We say
  that 1-diversity is always satisfied", not the formula with l = 1).
- :class:`PositiveDisclosureRecursive` (Def 4.3) with a don't-care set Y, and
  :class:`NegativePositiveDisclosureRecursive` (Def 4.4) adding the c2-percent rule for W.
- :class:`EntropyLDiversityDontCare`: adjusted entropy (Def 4.5, Algorithm 1) >= ln l.

Thresholds are read as the decimals they were written as (``c=3.3`` is 33/10) and the classes
within rounding of a threshold are decided exactly (:mod:`ldiv_polars.models.exact`).

>>> import polars as pl
>>> from ldiv_polars import check
>>> fig4 = pl.DataFrame({"q": [1] * 4 + [2] * 4 + [3] * 4,
...                      "s": ["HD", "VI", "C", "C", "C", "HD", "VI", "VI", "HD", "VI", "C", "C"]})
>>> round(check(fig4, ["q"], "s", [EntropyLDiversity(2.8)]).models[0].achieved, 4)
2.8284
>>> check(fig4, ["q"], "s", [EntropyLDiversity(2.9)]).passed
False
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import localcontext
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.core.validate import require_real
from ldiv_polars.models.base import (
    DISTINCT,
    ENTROPY_TOLERANCE,
    SIZE,
    ClassContext,
    Model,
    SqlCall,
)
from ldiv_polars.models.exact import (
    EPS,
    START_DIGITS,
    ClassCounts,
    Reference,
    agreeing,
    decimal,
    dyadic_odd,
    entropy_exp,
    entropy_sign,
    int64_ratio,
    near_product,
)
from ldiv_polars.models.entropy_floor import capped_entropy_floor, entropy_band

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.core.frequency import FrequencySet

    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


L_MAX = 10**6
"""The largest l of the l-diversity models, on every engine: the recursive models sum the
l - 1 largest counts of a class, and DuckDB's ``max(n, k)`` takes ``k < 10^6`` (Polars'
``top_k`` a 32-bit k); a class with more distinct sensitive values than that is beyond any
real l."""


def _require_l(l: float, *, integer: bool, model: str = "this model") -> float:
    # the engines' common domain: an infinite l has no exact value, and L_MAX bounds what the
    # engines can rank; refused here, typed, on every engine
    v = require_real("l", l, low=1.0, high=float(L_MAX), finite=True)
    if integer and not float(v).is_integer():
        from ldiv_polars.errors import InvalidParameterError

        raise InvalidParameterError(
            f"l must be an integer >= 1 for {model}, got {l!r} (entropy l-diversity takes a "
            "fractional l)")
    return int(v) if float(v).is_integer() else v


def class_entropy(rows: EncodedRows) -> tuple[np.ndarray, np.ndarray]:
    """``(H, band)`` per class of ``rows``: the entropy in nats ``ln N - (sum n ln n) / N``
    (0 for a class with no rows) and the rounding bound of it (:func:`entropy_band`)."""
    import numpy as np

    hit = rows._get("entropy"), rows._get("entropy_band")
    if hit[0] is not None and hit[1] is not None:
        return hit[0], hit[1]
    size = np.maximum(rows.size, 1).astype(np.float64)
    h = np.maximum(np.log(size) - rows.nlogn / size, 0.0)
    band = entropy_band(rows.distinct, np.log(size))
    rows._cache["entropy"], rows._cache["entropy_band"] = h, band
    return h, band


class DistinctLDiversity(Model):
    """At least ``l`` distinct sensitive values in every class. Achieved: the smallest count.

    Union-closed: a class containing one with l values has l values."""

    name = "distinct_l"
    higher_is_better = True
    union_closed = True
    identity_only = True

    def __init__(self, l: int) -> None:
        self.l = int(_require_l(l, integer=True, model=self.name))

    def params(self) -> dict[str, object]:
        return {"l": self.l}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def value(self) -> pl.Expr:
        return pl.col(DISTINCT)

    def passes(self) -> pl.Expr:
        return pl.col(DISTINCT) >= self.l

    def reason(self) -> pl.Expr:
        return pl.format(f"{{}} distinct sensitive value(s) < l={self.l}", pl.col(DISTINCT))

    @property
    def count_bounds(self) -> tuple[int, int]:
        return (0, self.l)

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved >= self.l

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        from ldiv_polars.models.encoded import ClassVerdict

        return ClassVerdict((rows.distinct >= self.l) | ~rows.present)

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__distinct_l_classes_x", (self.l,),
                       spec={"model": self.name, "l": self.l},
                       stats_macro="ldiv__distinct_l_classes_st")


def top_sum(j: int) -> pl.Expr:
    """Sum of the ``j`` largest counts of the class (0 for j <= 0), in the aggregation."""
    if j <= 0:
        return pl.lit(0, dtype=pl.Int64)
    if j == 1:  # the common l = 2: a plain max is several times cheaper than top_k
        return pl.col(COUNT).max()
    return pl.col(COUNT).top_k(j).sum()


def entropy_expr() -> pl.Expr:
    """Class entropy in nats, ``-sum p ln p = ln N - (sum n ln n) / N`` (plain aggregations)."""
    n = pl.col(COUNT)
    # clipped at 0: a one-value class must give exactly 0 (not -4e-16, whose exp floors to 0)
    return (n.sum().log() - (n * n.log()).sum() / n.sum()).clip(lower_bound=0.0)


class EntropyLDiversity(Model):
    """Entropy l-diversity (Def 4.1): ``H >= ln l``. Achieved: ``exp(min over classes of H)``
    (e.g. 2.83 for Fig. 4). ``l`` may be fractional.

    Exact: ``H = ln l`` (e.g. a class spread uniformly over l values) passes. A uniform class
    (every count equal) has ``H = ln m`` for its m values exactly, so it passes iff
    ``m >= l`` and reports ``exp(H) = m``; another class within rounding of ``ln l`` is decided
    by comparing ``N^N b^N`` with ``a^N prod n^n`` for ``l = a/b``
    (:func:`~ldiv_polars.models.exact.entropy_sign`)."""

    name = "entropy_l"
    higher_is_better = True
    identity_only = True

    def __init__(self, l: float) -> None:
        self.l = _require_l(l, integer=False)
        self._exact_l = decimal(l)

    @property
    def union_closed(self) -> bool:  # type: ignore[override]
        """Only for l = 1, which every class passes (``H >= 0``); for l > 1 a passing class
        merged with a one-value class can fail."""
        return self.l == 1

    def params(self) -> dict[str, object]:
        return {"l": self.l}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        n = pl.col(COUNT)
        return [entropy_expr().alias(self.col("H")),
                (n.max() == n.min()).alias(self.col("uniform"))]

    def value(self) -> pl.Expr:
        return pl.when(pl.col(self.col("uniform"))).then(pl.col(DISTINCT).cast(pl.Float64)) \
            .otherwise(pl.col(self.col("H")).exp())

    def passes(self) -> pl.Expr:
        if self.l == 1:  # H >= 0 = ln 1
            return pl.lit(True)
        return pl.when(pl.col(self.col("uniform"))).then(
            pl.col(DISTINCT) >= math.ceil(self._exact_l)).otherwise(
            pl.col(self.col("H")) >= math.log(self.l))

    def uncertain(self) -> pl.Expr | None:
        if self.l == 1:
            return None
        band = entropy_band(pl.col(DISTINCT), pl.col(SIZE).cast(pl.Float64).log())
        return ~pl.col(self.col("uniform")) & (
            (pl.col(self.col("H")) - math.log(self.l)).abs() <= band)

    def reason(self) -> pl.Expr:
        return pl.format(
            f"entropy {{}} nats < ln({self.l})", pl.col(self.col("H")).round(6)
        )

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved >= self.l

    @property
    def min_distinct(self) -> int:
        """Distinct values every passing class has: ``H <= ln(distinct values)``, so at least
        ``ceil(l)``."""
        return math.ceil(self._exact_l)

    def relaxation(self) -> Model | None:
        need = self.min_distinct
        return DistinctLDiversity(need) if need >= 2 else None

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        absent = ~rows.present
        if self.l == 1:
            return ClassVerdict(np.ones(rows.classes, dtype=bool))
        h, band = class_entropy(rows)
        thr = math.log(self.l)
        passed = (h >= thr) | absent
        uncertain = (np.abs(h - thr) <= band) & ~absent
        unsure = np.flatnonzero(uncertain)
        if unsure.shape[0]:  # a uniform class has H = ln(distinct) exactly: decided here
            uniform = unsure[rows.uniform(unsure)]
            passed[uniform] = rows.distinct[uniform] >= math.ceil(self._exact_l)
            uncertain[uniform] = False
        return ClassVerdict(passed, uncertain)

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # concavity: |C| H(C) >= sum |C_i| H(C_i) over any split of C, and a passing part has
        # H >= ln l, a failing one H >= 0: the passing parts hold at most |C| H(C) / ln l rows
        import numpy as np

        if self.l == 1:
            return None
        h, band = class_entropy(rows)
        size = rows.size.astype(np.float64)
        floor = np.maximum(size * (1.0 - (h + band) / math.log(self.l)), 0.0)
        # a class with fewer values fails in every split: all its rows
        return np.where(rows.distinct < self.min_distinct, size, floor)

    def tighter_floor(self, rows: EncodedRows, slack: float,
                      floor: np.ndarray) -> np.ndarray | None:
        # the passing parts pass together (concavity), so they hold at most the largest
        # sub-multiset with H >= ln l (models/entropy_floor.py)
        import numpy as np

        if self.l == 1:
            return None
        # (a class with too few values has its rows as floor already: kept by the maximum)
        return np.maximum(floor, capped_entropy_floor(rows, self.l, floor > 0))

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        sign = entropy_sign(cls.counts, self._exact_l)
        passed = sign >= 0
        if sign == 0:
            return True, float(self.l)
        with localcontext() as ctx:
            ctx.prec = START_DIGITS
            value = entropy_exp(cls.counts)
        return passed, agreeing(value, passed, float(self.l), ">=")

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__entropy_l_classes_x", (float(self.l),),
                       spec={"model": self.name, "l": self._exact_l},
                       stats_macro="ldiv__entropy_l_classes_st")


def _sorted_counts(cls: ClassCounts) -> list[int]:
    return sorted(cls.counts, reverse=True)


class RecursiveCLDiversity(Model):
    """Recursive (c,l)-diversity (Def 4.2): ``r1 < c * (r_l + ... + r_m)`` (strict).

    Achieved value: the largest ``r1 / (r_l + ... + r_m)`` over classes (the table passes iff
    ``c`` exceeds it); infinite when some class has fewer than l distinct values.

    ``l = 1``: every class passes whatever c, achieved 0, as Def 4.2 stipulates ("We say that
    1-diversity is always satisfied"); the bare formula ``r1 < c * n`` would fail a one-value
    class for ``c <= 1`` (ARX applies it; docs/models.md). ``l`` and ``c`` are finite, ``c > 0``
    (else :class:`~ldiv_polars.errors.InvalidParameterError`).

    >>> import polars as pl
    >>> from ldiv_polars import check
    >>> one_value = pl.DataFrame({"q": [1, 1, 1], "s": ["a", "a", "a"]})
    >>> r = check(one_value, ["q"], "s", [RecursiveCLDiversity(0.5, 1)]).models[0]
    >>> r.passed, r.achieved
    (True, 0.0)
    """

    name = "recursive_cl"
    higher_is_better = False
    identity_only = True

    @property
    def union_closed(self) -> bool:  # type: ignore[override]
        """Only for l = 1, which every class passes (Def 4.2: "1-diversity is always
        satisfied"); for l >= 2 a passing class merged with a one-value class can fail."""
        return self.l == 1

    def __init__(self, c: float, l: int) -> None:
        self.c = require_real("c", c, low=0.0, low_open=True, finite=True)
        self.l = int(_require_l(l, integer=True, model=self.name))
        self._exact_c = decimal(c)
        self._odd_c = dyadic_odd(self.c, self._exact_c)
        self._ratio = int64_ratio(self._exact_c)
        """c's decimal as ``(num, den)``: the verdict is then an integer comparison,
        ``r1 * den < num * tail``, exact for every class at once."""

    def params(self) -> dict[str, object]:
        return {"c": self.c, "l": self.l}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return [
            pl.col(COUNT).max().alias(self.col("r1")),
            (pl.col(COUNT).sum() - top_sum(self.l - 1)).alias(self.col("tail")),
        ]

    def value(self) -> pl.Expr:
        if self.l == 1:  # every class passes whatever c: 0 per class
            return pl.col(SIZE).cast(pl.Float64) * 0.0
        r1, tail = pl.col(self.col("r1")), pl.col(self.col("tail"))
        return pl.when(tail > 0).then(r1 / tail).otherwise(float("inf"))

    def passes(self) -> pl.Expr:
        """Per class: ``r1 < c * tail``, on integers (c's decimal ``num / den``, compared in
        128 bits) when c's decimal fits 64-bit integers, else on floats with the near classes
        flagged by :meth:`uncertain`."""
        if self.l == 1:
            return pl.lit(True)
        if self._ratio is None:
            return pl.col(self.col("r1")) < self.c * pl.col(self.col("tail"))
        num, den = self._ratio
        wide = pl.Int128
        return (pl.col(self.col("r1")).cast(wide) * pl.lit(den, dtype=wide)
                < pl.col(self.col("tail")).cast(wide) * pl.lit(num, dtype=wide))

    def uncertain(self) -> pl.Expr | None:
        """Per class: decided by :meth:`decide`. With the integer verdict, only a class whose
        float ratio lies on the other side of c than its verdict (its value is then made to
        agree); else the classes within rounding of ``c * tail``."""
        if self.l == 1:
            return None
        if self._ratio is not None:
            float_ok = pl.col(self.col("r1")) < self.c * pl.col(self.col("tail"))
            return float_ok != self.passes()
        tail = pl.col(self.col("tail")).cast(pl.Float64)
        return near_product(pl.col(self.col("r1")), self.c, tail, self._odd_c)

    def reason(self) -> pl.Expr:
        return pl.format(
            f"r1={{}} not < c={self.c} * (r_{self.l}+...+r_m)={{}}",
            pl.col(self.col("r1")),
            pl.col(self.col("tail")),
        )

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and self.c > achieved

    def relaxation(self) -> Model | None:
        # a class with fewer than l values fails
        return DistinctLDiversity(self.l) if self.l >= 2 else None

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # g = c * tail - r1 is superadditive over any split of a class (r1 and the l-1 largest
        # counts are at most the sums of the parts'); a passing part has g > 0, a failing one
        # g >= -r1 >= -its rows: the failing parts hold at least r1 - c * tail rows
        import numpy as np

        if self.l == 1:
            return None
        r1, top = rows.top(self.l - 1)
        size = rows.size.astype(np.float64)
        floor = np.maximum(r1 - self.c * (size - top), 0.0)
        # fewer than l values: no tail, the class fails in every split (its relaxation)
        return np.where(rows.distinct < self.l, size, floor)

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        if self.l == 1:
            return ClassVerdict(np.ones(rows.classes, dtype=bool))
        r1, top = rows.top(self.l - 1)
        tail = (rows.size - top).astype(np.float64)
        present = rows.present
        float_ok = r1 < self.c * tail
        ratio = self._ratio
        if ratio is not None and int(rows.size.max(initial=0)) * max(ratio) < 2**62:
            exact_ok = (r1.astype(np.int64) * ratio[1]
                        < (rows.size - top).astype(np.int64) * ratio[0])
            return ClassVerdict(exact_ok | ~present, (exact_ok != float_ok) & present)
        return ClassVerdict(float_ok | ~present,
                            near_product(r1, self.c, tail, self._odd_c) & present)

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        if self.l == 1:
            return True, 0.0
        r = _sorted_counts(cls)
        tail = sum(r[self.l - 1:])
        if tail == 0:
            return False, math.inf
        ratio = Fraction(r[0], tail)
        passed = ratio < self._exact_c
        return passed, agreeing(ratio, passed, self.c, "<")

    def sql_call(self) -> SqlCall:
        spec = {"model": self.name, "c": self._exact_c, "l": self.l}
        ratio = int64_ratio(self._exact_c)  # the exact test on integers, every class at once
        if ratio is not None:
            return SqlCall("ldiv__recursive_cl_exact_classes_x", (self.c, self.l, *ratio),
                           spec=spec, stats_macro="ldiv__recursive_cl_exact_classes_st",
                           stats=self.l)
        return SqlCall("ldiv__recursive_cl_classes_x", (self.c, self.l), spec=spec,
                       stats_macro="ldiv__recursive_cl_classes_st", stats=self.l)


def _value_set(values: Iterable[object] | None) -> list[object]:
    if values is None:
        return []
    if isinstance(values, (str, bytes)):
        return [values]
    out = sorted(set(values), key=repr)
    if None in out:
        from ldiv_polars.errors import InvalidParameterError

        raise InvalidParameterError(
            "a value set (Y or W) cannot hold None: with nulls='value' a null sensitive value "
            "is a value outside every set; fill the nulls with a value to name them")
    return out


def in_set(col: pl.Expr, values: Sequence[object]) -> pl.Expr:
    """Whether ``col``'s value is in ``values`` (a don't-care set Y or a protected set W),
    never null: with ``nulls="value"`` a null sensitive value is a value, and it is in no set
    (:func:`_value_set` refuses None in one). The frame forms, the array forms (through
    :meth:`~ldiv_polars.models.encoded.SensitiveDomain.matches`) and :func:`label_in` agree.

    >>> pl.DataFrame({"s": ["a", None, "b"]}).select(in_set(pl.col("s"), ["a"]))["s"].to_list()
    [True, False, False]
    """
    return col.is_in(values).fill_null(False)


def check_value_set(fs: FrequencySet, label: str, values: Sequence[object]) -> None:
    """Raise :class:`~ldiv_polars.errors.InvalidParameterError` when ``values`` (a model's Y, W
    or positive set) cannot be compared with the values of ``fs``'s sensitive column: Polars
    compares only values of the column's type (strings with an integer column fail, and so
    does ``1`` with a float column). Nothing to check without values or without exactly one
    sensitive column (the models' ``validate`` hook)."""
    if not values or len(fs.sensitive) != 1:
        return
    s = fs.sensitive[0]
    dtype = fs.frame.collect_schema()[s]
    try:
        pl.DataFrame(schema={s: dtype}).select(in_set(pl.col(s), values))
    except (pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        from ldiv_polars.errors import InvalidParameterError

        raise InvalidParameterError(
            f"{label} {list(values)!r} cannot be compared with the values of {s!r} ({dtype}); "
            f"give them as {dtype} values") from exc


def label_in(values: Sequence[object], label: object) -> bool:
    """``label in values`` for one class's label, as :func:`in_set` answers it (a null is in no
    set)."""
    return label is not None and label in values


def _pd_tail(counts: Sequence[int], not_y: Sequence[bool], l: int) -> tuple[int, int]:
    """``(r_y, tail)`` of a class (Def 4.3, the single formula of paper-notes §2.7), as the
    aggregation of :class:`PositiveDisclosureRecursive` computes them."""
    r_y = max((c for c, ok in zip(counts, not_y) if ok), default=0)
    top = sorted(counts, reverse=True)
    if l <= 1:
        top_other = -r_y
    elif r_y and r_y >= top[:l - 1][-1]:
        top_other = sum(top[:l - 1]) - r_y
    else:
        top_other = sum(top[:max(l - 2, 0)])
    return r_y, sum(counts) - r_y - top_other


class PositiveDisclosureRecursive(Model):
    """Positive-disclosure-recursive (c,l)-diversity with a don't-care set Y (Def 4.3).

    Let s_y be the most frequent value not in Y, r_y its count; tail(s_y) is the class total
    minus r_y minus the l-2 largest other counts (the single-formula form of the two cases,
    paper-notes §2.7). A class passes iff ``r_y < c * tail``; a class holding only don't-care
    values (r_y = 0) passes; l = 1 always passes (achieved 0). Achieved: the largest
    ``r_y / tail``.

    >>> import polars as pl
    >>> from ldiv_polars import check
    >>> df = pl.DataFrame({"sex": ["M"] * 1000 + ["F"] * 1000,
    ...     "s": ["Healthy"] * 700 + ["Hepatitis"] * 300 + ["Healthy"] * 700 + ["Cancer"] * 300})
    >>> check(df, ["sex"], "s", [PositiveDisclosureRecursive(0.43, 2, {"Healthy"})]).passed
    True
    >>> check(df, ["sex"], "s", [PositiveDisclosureRecursive(3 / 7, 2, {"Healthy"})]).passed
    False
    """

    name = "pd_recursive_cl"
    higher_is_better = False

    @property
    def union_closed(self) -> bool:  # type: ignore[override]
        """Only for l = 1, which every class passes (as recursive (c,1)-diversity)."""
        return self.l == 1

    def __init__(self, c: float, l: int, dont_care: Iterable[object] | None = None) -> None:
        self.c = require_real("c", c, low=0.0, low_open=True, finite=True)
        self.l = int(_require_l(l, integer=True, model=self.name))
        self.dont_care = _value_set(dont_care)
        self._exact_c = decimal(c)
        self._odd_c = dyadic_odd(self.c, self._exact_c)

    def params(self) -> dict[str, object]:
        return {"c": self.c, "l": self.l, "Y": self.dont_care}

    def validate(self, fs: FrequencySet) -> None:
        check_value_set(fs, "the don't-care set Y", self.dont_care)

    def _not_y(self, s: str) -> pl.Expr:
        if not self.dont_care:
            return pl.lit(True)
        return ~in_set(pl.col(s), self.dont_care)

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        s = ctx.s
        not_y = self._not_y(s)
        n = pl.col(COUNT)
        r_y = n.filter(not_y).max().fill_null(0)
        l = self.l
        # the (l-1)-th largest count of the class: s_y can be placed among the l-1 largest
        # values iff r_y reaches it (ties included); then the l-2 largest *other* counts are
        # the l-1 largest minus r_y, otherwise they are the l-2 largest of all
        kth = n.top_k(max(l - 1, 1)).min()
        if l <= 1:
            # l = 1: the tail is the whole class (plain recursive (c,1)'s r_1 < c * total,
            # which pd-recursive reduces to with Y empty), whichever value leads it
            top_other = -r_y
        else:
            top_other = pl.when(r_y >= kth).then(top_sum(l - 1) - r_y).otherwise(
                top_sum(l - 2))
        tail = (n.sum() - r_y - top_other).fill_null(0)
        return [r_y.alias(self.col("r_y")), tail.alias(self.col("tail"))]

    def value(self) -> pl.Expr:
        if self.l == 1:  # every class passes whatever c: 0 per class
            return pl.col(SIZE).cast(pl.Float64) * 0.0
        r_y, tail = pl.col(self.col("r_y")), pl.col(self.col("tail"))
        return (
            pl.when(r_y == 0).then(0.0).when(tail > 0).then(r_y / tail).otherwise(float("inf"))
        )

    def passes(self) -> pl.Expr:
        if self.l == 1:
            return pl.lit(True)
        r_y, tail = pl.col(self.col("r_y")), pl.col(self.col("tail"))
        return (r_y == 0) | (r_y < self.c * tail)

    def uncertain(self) -> pl.Expr | None:
        if self.l == 1:
            return None
        r_y = pl.col(self.col("r_y"))
        tail = pl.col(self.col("tail")).cast(pl.Float64)
        return (r_y > 0) & near_product(r_y, self.c, tail, self._odd_c)

    def reason(self) -> pl.Expr:
        return pl.format(
            f"r_y={{}} not < c={self.c} * tail={{}}",
            pl.col(self.col("r_y")),
            pl.col(self.col("tail")),
        )

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and self.c > achieved

    def _decide_pd(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        if self.l == 1:
            return True, 0.0
        labels = cls.labels(ref)
        not_y = [not label_in(self.dont_care, v) for v in labels]
        r_y, tail = _pd_tail(cls.counts, not_y, self.l)
        if r_y == 0:
            return True, 0.0
        if tail <= 0:
            return False, math.inf
        ratio = Fraction(r_y, tail)
        passed = ratio < self._exact_c
        return passed, agreeing(ratio, passed, self.c, "<")

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        return self._decide_pd(cls, ref)

    def _pd_arrays(self, rows: EncodedRows) -> tuple[Any, Any] | None:
        """``(r_y, tail)`` per class on encoded rows, as :meth:`aggs` computes them; None
        when a don't-care set needs the values and the rows carry no one-column domain."""
        import numpy as np

        if self.dont_care:
            dom = rows.domain
            if dom is None or dom.width != 1:
                return None
            y = self.dont_care
            not_y = dom.derived(self, "not_y", lambda: dom.matches(lambda c: ~in_set(c, y)))
            counts = np.where(not_y[rows.s], rows.n, 0)
        else:
            counts = rows.n
        r_y = rows.class_max(counts).astype(np.int64)
        l = self.l
        if l <= 1:
            top_other = -r_y
        else:
            top1 = rows.top(l - 1)[1]
            top2 = rows.top(l - 2)[1] if l >= 3 else np.zeros_like(top1)
            # the (l-1)-th largest count (0 when the class has fewer values: then r_y > 0
            # reaches it as it reaches the smallest count, the same branch as top_k's)
            top_other = np.where(r_y >= top1 - top2, top1 - r_y, top2)
        return r_y, rows.size - r_y - top_other

    def _pd_verdict(self, rows: EncodedRows) -> tuple[Any, Any] | None:
        """``(passed, uncertain)`` of the pd-recursive part per class (None: no array form)."""
        import numpy as np

        if self.l == 1:
            return np.ones(rows.classes, dtype=bool), np.zeros(rows.classes, dtype=bool)
        parts = self._pd_arrays(rows)
        if parts is None:
            return None
        r_y, tail = parts
        tail_f = tail.astype(np.float64)
        present = rows.present
        passed = (r_y == 0) | (r_y < self.c * tail_f) | ~present
        uncertain = (r_y > 0) & near_product(r_y, self.c, tail_f, self._odd_c) & present
        return passed, uncertain

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # g = c * tail - r_y is superadditive over any split of a class: r_y is at most the
        # sum of the parts' r_y, and the class's r_y plus its l-2 largest other counts at
        # most the sum of the parts' (each part's is the largest such sum led by its own
        # s_y); a passing part has g >= 0 (r_y = 0 or r_y < c tail), a failing one
        # g >= -r_y >= -its rows: the failing parts hold at least r_y - c * tail rows
        import numpy as np

        if self.l == 1:
            return None
        parts = self._pd_arrays(rows)
        if parts is None:
            return None
        r_y, tail = parts
        return np.maximum(r_y - self.c * tail.astype(np.float64), 0.0)

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        from ldiv_polars.models.encoded import ClassVerdict

        v = self._pd_verdict(rows)
        return None if v is None else ClassVerdict(*v)

    def sql_call(self) -> SqlCall:
        y = [str(v) for v in self.dont_care]
        return SqlCall("ldiv__pd_recursive_cl_classes_x", (self.c, self.l, y),
                       spec={"model": self.name, "c": self._exact_c, "l": self.l,
                             "dont_care": y})


class NegativePositiveDisclosureRecursive(PositiveDisclosureRecursive):
    """npd-recursive (c1,c2,l)-diversity (Def 4.4): pd-recursive (c1,l) with don't-care set Y,
    and every value of W at ``>= c2`` percent of every class (a missing value is 0%).

    Achieved value: as for pd-recursive (the c1 needed); the smallest W share is reported in
    the class statistics (``<key>__w_pct``)."""

    name = "npd_recursive_cl"

    @property
    def union_closed(self) -> bool:  # type: ignore[override]
        """As pd-recursive's when no share of W is required (l = 1 with no W or c2 = 0); else
        never: a class containing a passing one can hold a value of W below c2 percent."""
        return super().union_closed and (not self.protected or self.c2 == 0)

    def __init__(
        self,
        c1: float,
        c2: float,
        l: int,
        dont_care: Iterable[object] | None = None,
        protected: Iterable[object] | None = None,
    ) -> None:
        super().__init__(c1, l, dont_care)
        self.c2 = require_real("c2", c2, low=0.0, high=100.0, high_open=True)
        self.protected = _value_set(protected)
        self._exact_c2 = decimal(c2)

    def params(self) -> dict[str, object]:
        return {"c1": self.c, "c2": self.c2, "l": self.l, "Y": self.dont_care, "W": self.protected}

    def validate(self, fs: FrequencySet) -> None:
        super().validate(fs)
        check_value_set(fs, "the protected set W", self.protected)

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        out = super().aggs(ctx)
        if self.protected:
            s = ctx.s
            shares = [
                (pl.col(COUNT).filter(pl.col(s) == w).sum() * 100.0 / pl.col(COUNT).sum())
                for w in self.protected
            ]
            out.append(pl.min_horizontal(shares).alias(self.col("w_pct")))
        else:
            out.append(pl.lit(100.0).alias(self.col("w_pct")))
        return out

    def passes(self) -> pl.Expr:
        return super().passes() & (pl.col(self.col("w_pct")) >= self.c2)

    def uncertain(self) -> pl.Expr | None:
        pd = super().uncertain()
        if not self.protected or self.c2 == 0:
            return pd
        w = pl.col(self.col("w_pct"))
        near = (w - self.c2).abs() <= 8 * EPS * (w + self.c2)
        return near if pd is None else (pd | near)

    def reason(self) -> pl.Expr:
        return pl.format(
            f"r_y={{}}, tail={{}} (c1={self.c}); smallest W share {{}}% (c2={self.c2})",
            pl.col(self.col("r_y")),
            pl.col(self.col("tail")),
            pl.col(self.col("w_pct")).round(4),
        )

    def satisfied_by(self, achieved: float | int | None) -> bool:
        raise NotImplementedError(
            f"{self.describe()}: the achieved c1 does not decide the W shares (c2)")

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        passed, value = self._decide_pd(cls, ref)
        if self.protected:
            labels = cls.labels(ref)
            w_min = min(sum(c for c, v in zip(cls.counts, labels) if v is not None and v == w)
                        for w in self.protected)
            passed = passed and w_min * 100 >= self._exact_c2 * cls.size
        return passed, value

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        # a passing part passes pd-recursive and holds each value of W at >= c2 percent of
        # its rows (models/floors.py): the larger of the two floors
        import numpy as np

        from ldiv_polars.models.floors import least_floor

        floor = super().suppression_floor(rows, slack)
        dom = rows.domain
        if not self.protected or self.c2 <= 0 or dom is None or dom.width != 1:
            return floor
        least = self.c2 / 100.0 * (1.0 - 1e-12)
        for w in self.protected:
            is_w = dom.derived(self, f"w{w!r}", lambda w=w: dom.matches(lambda c: c == w))
            cnt = np.bincount(rows.cls, weights=np.where(is_w[rows.s], rows.n, 0),
                              minlength=rows.classes)
            each = least_floor(cnt, rows.size, least)
            floor = each if floor is None else np.maximum(floor, each)
        return floor

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict

        v = self._pd_verdict(rows)
        if v is None or not self.protected:
            return None if v is None else ClassVerdict(*v)
        dom = rows.domain
        if dom is None or dom.width != 1:
            return None
        passed, uncertain = v
        share = np.full(rows.classes, np.inf)
        for w in self.protected:
            is_w = dom.derived(self, f"w{w!r}", lambda w=w: dom.matches(lambda c: c == w))
            cnt = np.bincount(rows.cls, weights=np.where(is_w[rows.s], rows.n, 0),
                              minlength=rows.classes)
            share = np.minimum(share, cnt * 100.0 / np.maximum(rows.size, 1))
        present = rows.present
        passed = passed & ((share >= self.c2) | ~present)
        if self.c2 != 0:
            near = np.abs(share - self.c2) <= 8 * EPS * (share + self.c2)
            uncertain = uncertain | (near & present)
        return ClassVerdict(passed, uncertain)

    def sql_call(self) -> SqlCall:
        y, w = [str(v) for v in self.dont_care], [str(v) for v in self.protected]
        return SqlCall("ldiv__npd_recursive_cl_classes_x", (self.c, self.c2, self.l, y, w),
                       spec={"model": self.name, "c1": self._exact_c, "c2": self._exact_c2,
                             "l": self.l, "dont_care": y, "protected": w})


def _dont_care_fixed(rows: pl.LazyFrame, base: pl.LazyFrame, qi: list[str],
                     s: str) -> pl.LazyFrame:
    """Per class of ``rows`` (flagged ``__y`` on don't-care values), Algorithm 1's loop over
    its don't-care counts in ascending order, as running sums: ``__fA`` and ``__fB`` (the sum
    of ``phi`` and ``phi ln phi`` of the counts fixed while ``ln phi < B / A``, ``base`` holding
    the other values' ``__A0``, ``__B0``) and ``__K`` (the counts not fixed)."""
    n = pl.col(COUNT).cast(pl.Float64)
    nlogn = (n * n.log()).alias("__nlogn")
    phis = rows.filter(pl.col("__y")).with_columns(nlogn, n.alias("__phi"))
    # running sums over the don't-care counts sorted ascending (ties: any order, the test
    # below is the same for equal counts)
    phis = phis.join(base, on=qi, how="left", nulls_equal=True).with_columns(
        pl.col("__A0").fill_null(0.0), pl.col("__B0").fill_null(0.0)
    )
    order = [pl.col("__phi"), pl.col(s)]
    phis = phis.with_columns(
        (pl.col("__phi").cum_sum().over(qi, order_by=order) - pl.col("__phi")).alias("__cA"),
        (pl.col("__nlogn").cum_sum().over(qi, order_by=order) - pl.col("__nlogn")).alias(
            "__cB"
        ),
    ).with_columns(
        # fixed before this phi: A = A0 + cA, B = B0 + cB; loop continues while ln(phi) < B/A
        ((pl.col("__A0") + pl.col("__cA")) > 0).alias("__defined"),
    ).with_columns(
        (
            pl.col("__defined")
            & (pl.col("__phi").log() * (pl.col("__A0") + pl.col("__cA"))
               < (pl.col("__B0") + pl.col("__cB")))
        ).alias("__fix")
    ).with_columns(
        # fixed = leading run of True in ascending order
        ((~pl.col("__fix")).cast(pl.Int64).cum_sum().over(qi, order_by=order) == 0).alias(
            "__fixed"
        )
    )
    fixed = phis.group_by(qi).agg(
        pl.col("__phi").filter(pl.col("__fixed")).sum().alias("__fA"),
        pl.col("__nlogn").filter(pl.col("__fixed")).sum().alias("__fB"),
        (~pl.col("__fixed")).sum().alias("__K"),
    )
    return fixed


class EntropyLDiversityDontCare(Model):
    """Entropy l-diversity with a don't-care set Y: the adjusted entropy (Def 4.5, computed by
    the paper's Algorithm 1 in closed form) must be ``>= ln l``.

    Algorithm 1 fixes don't-care counts in ascending order while ``ln(phi) < M(fixed)`` (M is
    the log-entropic mean) and lowers the rest to ``exp(M)``; here the loop is the number of
    leading don't-care counts (sorted ascending) whose log is below the running mean, computed
    with cumulative sums per class. A class with only don't-care values passes (the paper's
    ``r_y = 0`` case). Achieved: ``exp(min adjusted entropy)``.
    """

    name = "entropy_l_dont_care"
    higher_is_better = True

    def __init__(self, l: float, dont_care: Iterable[object]) -> None:
        self.l = _require_l(l, integer=False)
        self.dont_care = _value_set(dont_care)

    def params(self) -> dict[str, object]:
        return {"l": self.l, "Y": self.dont_care}

    def validate(self, fs: FrequencySet) -> None:
        check_value_set(fs, "the don't-care set Y", self.dont_care)

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and math.log(achieved) >= math.log(self.l) - ENTROPY_TOLERANCE

    def sql_call(self) -> SqlCall:
        y = [str(v) for v in self.dont_care]
        return SqlCall("ldiv__entropy_l_dont_care_classes_x", (float(self.l), y),
                       spec={"model": self.name, "l": self.l, "dont_care": y})

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        qi, s = list(ctx.qi), ctx.s
        n = pl.col(COUNT).cast(pl.Float64)
        is_y = in_set(pl.col(s), self.dont_care) if self.dont_care else pl.lit(False)
        rows = ctx.rows.select(*qi, s, COUNT).with_columns(is_y.alias("__y"))
        base = rows.filter(~pl.col("__y")).group_by(qi).agg(
            n.sum().alias("__A0"), (n * n.log()).sum().alias("__B0")
        )
        fixed = _dont_care_fixed(rows, base, qi, s)
        classes = rows.select(qi).unique().join(base, on=qi, how="left", nulls_equal=True).join(
            fixed, on=qi, how="left", nulls_equal=True
        ).with_columns(
            pl.col("__A0").fill_null(0.0),
            pl.col("__B0").fill_null(0.0),
            pl.col("__fA").fill_null(0.0),
            pl.col("__fB").fill_null(0.0),
            pl.col("__K").fill_null(0).cast(pl.Float64),
        )
        A = pl.col("__A0") + pl.col("__fA")
        B = pl.col("__B0") + pl.col("__fB")
        M = B / A
        v = M.exp()
        T = A + pl.col("__K") * v
        H = T.log() - (B + pl.col("__K") * v * M) / T
        return [
            classes.select(
                *qi,
                pl.when(pl.col("__A0") > 0).then(H).otherwise(None).alias(self.col("H")),
            )
        ]

    def value(self) -> pl.Expr:
        return pl.col(self.col("H")).exp().fill_null(float("inf"))

    def passes(self) -> pl.Expr:
        h = pl.col(self.col("H"))
        return h.is_null() | (h >= math.log(self.l) - ENTROPY_TOLERANCE)

    def uncertain(self) -> pl.Expr | None:
        from ldiv_polars.models.adjusted_entropy import adjusted_entropy_band

        h = pl.col(self.col("H"))
        band = adjusted_entropy_band(pl.col(DISTINCT), pl.col(SIZE).cast(pl.Float64).log())
        return h.is_not_null() & ((h - (math.log(self.l) - ENTROPY_TOLERANCE)).abs() <= band)

    def _y_flags(self, rows: EncodedRows) -> tuple[Any, Any] | None:
        """Per sensitive id: in Y, not in Y (a null is not in Y: :func:`in_set`); None without
        a one-column domain."""
        import numpy as np

        if not self.dont_care:
            ones = np.ones(rows.n_sensitive, dtype=bool)
            return ~ones, ones
        dom = rows.domain
        if dom is None or dom.width != 1:
            return None
        y = self.dont_care
        return (dom.derived(self, "y", lambda: dom.matches(lambda c: in_set(c, y))),
                dom.derived(self, "not_y", lambda: dom.matches(lambda c: ~in_set(c, y))))

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        import numpy as np

        from ldiv_polars.models.adjusted_entropy import (
            adjusted_entropy_band,
            adjusted_entropy_rows,
            settle_uniform,
        )
        from ldiv_polars.models.encoded import ClassVerdict

        flags = self._y_flags(rows)
        if flags is None:
            return None
        h = adjusted_entropy_rows(rows, *flags)
        defined = ~np.isnan(h)
        thr = math.log(self.l) - ENTROPY_TOLERANCE
        with np.errstate(invalid="ignore"):
            band = adjusted_entropy_band(rows.distinct, np.log(np.maximum(rows.size, 1)))
            passed, uncertain = ~defined | (h >= thr), defined & (np.abs(h - thr) <= band)
        # a class spread uniformly (e.g. over l values outside Y) sits on ln l exactly
        settle_uniform(rows, *flags, passed, uncertain, decimal(self.l),
                       decimal(ENTROPY_TOLERANCE))
        return ClassVerdict(passed, uncertain)

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        from ldiv_polars.models.adjusted_entropy import adjusted_entropy, adjusted_entropy_at_least

        labels = cls.labels(ref)
        # a null value is outside Y (in_set), so it is one of the counts p
        phis = [c for c, v in zip(cls.counts, labels) if label_in(self.dont_care, v)]
        rest = [c for c, v in zip(cls.counts, labels) if not label_in(self.dont_care, v)]
        passed = adjusted_entropy_at_least(phis, rest, decimal(self.l),
                                           decimal(ENTROPY_TOLERANCE))
        with localcontext() as ctx:
            ctx.prec = START_DIGITS
            h = adjusted_entropy(phis, rest)
        value = math.inf if h is None else float(h.exp())
        while self.satisfied_by(value) != passed:  # the reported value agrees with the verdict
            value = math.nextafter(value, math.inf if passed else -math.inf)
        return passed, value

    def reason(self) -> pl.Expr:
        return pl.format(
            f"adjusted entropy {{}} nats < ln({self.l})", pl.col(self.col("H")).round(6)
        )


__all__ = [
    "DistinctLDiversity",
    "EntropyLDiversity",
    "EntropyLDiversityDontCare",
    "NegativePositiveDisclosureRecursive",
    "PositiveDisclosureRecursive",
    "RecursiveCLDiversity",
    "entropy_expr",
]

