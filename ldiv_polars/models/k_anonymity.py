"""k-anonymity (Def 2.2 of the l-diversity paper): every class has at least k rows.

>>> import polars as pl
>>> from ldiv_polars import check
>>> df = pl.DataFrame({"zip": ["130", "130", "148"], "s": ["a", "b", "a"]})
>>> check(df, ["zip"], None, [KAnonymity(2)]).passed
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ldiv_polars.core.validate import require_int_at_least
from ldiv_polars.models.base import SIZE, ClassContext, Model, SqlCall, reason_param

if TYPE_CHECKING:
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


class KAnonymity(Model):
    """Every equivalence class has ``size >= k``. Achieved value: the smallest class size.

    Union-closed (a class containing one of k rows has k rows) and read from class sizes
    alone."""

    name = "k_anonymity"
    monotone = True
    higher_is_better = True
    integer_achieved = True
    needs_sensitive = False
    union_closed = True
    identity_only = True
    sizes_only = True

    def __init__(self, k: int) -> None:
        self.k = require_int_at_least("k", k, 1)

    def params(self) -> dict[str, object]:
        return {"k": self.k}

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def value(self) -> pl.Expr:
        return pl.col(SIZE)

    def passes(self) -> pl.Expr:
        return pl.col(SIZE) >= self.k

    def reason(self) -> pl.Expr:
        return pl.format(f"class size {{}} < k={reason_param(self.k)}", pl.col(SIZE))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved >= self.k

    @property
    def min_class_size(self) -> int:
        return self.k

    @property
    def count_bounds(self) -> tuple[int, int]:
        return (self.k, 0)

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict:
        from ldiv_polars.models.encoded import ClassVerdict

        return ClassVerdict((rows.size >= self.k) | ~rows.present)

    def sql_call(self) -> SqlCall:
        return SqlCall("ldiv__k_anonymity_classes_x", (self.k,),
                       spec={"model": self.name, "k": self.k},
                       stats_macro="ldiv__k_anonymity_classes_st")
