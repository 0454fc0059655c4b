"""Multi-attribute l-diversity (Def 4.6): with sensitive attributes S_1..S_m, the table is
l-diverse when, for every i, it is l-diverse with S_i as the sole sensitive attribute and the
other S_j added to the quasi-identifier. Any single-attribute model can be plugged in.

No monotonicity result is stated for it (paper-notes §3), so ``monotone`` is False and a lattice
search will not prune with it.

>>> import polars as pl
>>> from ldiv_polars import check
>>> from ldiv_polars.models import DistinctLDiversity
>>> block = pl.DataFrame({"q": [1] * 4, "S": ["s1", "s1", "s2", "s3"],
...                       "V": ["v1", "v2", "v3", "v3"]})
>>> check(block, ["q"], ["S", "V"], [MultiAttribute(DistinctLDiversity(2))]).passed
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models.base import ClassContext, Model, value_col
from ldiv_polars.models.evaluate import evaluate_classes

if TYPE_CHECKING:
    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows


def _codes(values: pl.DataFrame, cols: list[str]) -> tuple[Any, pl.DataFrame]:
    """Per row of ``values``, the code of its ``cols`` among their distinct combinations
    (codes in order of first appearance), and those combinations."""
    uniq = values.select(cols).unique(maintain_order=True)
    codes = values.select(cols).with_row_index("__r").join(
        uniq.with_row_index("__c"), on=cols, how="left", nulls_equal=True).sort("__r")
    return codes.get_column("__c").to_numpy().astype("int64"), uniq


def _attributes(values: pl.DataFrame) -> list[tuple[Any, Any, int, Any]]:
    """For each sensitive attribute: per sensitive-tuple id, the code of its own value and
    of the other attributes' values, the number of the latter, and the attribute's values
    as a :class:`~ldiv_polars.models.encoded.SensitiveDomain` (row = code)."""
    from ldiv_polars.models.encoded import SensitiveDomain

    out = []
    for col in values.columns:
        own, uniq = _codes(values, [col])
        other, combos = _codes(values, [c for c in values.columns if c != col])
        out.append((own, other, max(combos.height, 1), SensitiveDomain(uniq)))
    return out


class MultiAttribute(Model):
    """Def 4.6 around ``inner``. Per class: passes iff every sub-class (class x values of the
    other sensitive columns) passes ``inner`` for every sensitive column. Achieved: the worst
    of ``inner``'s achieved values over all attributes."""

    name = "multi_attribute"
    monotone = False

    def __init__(self, inner: Model) -> None:
        if not isinstance(inner, Model) or isinstance(inner, MultiAttribute):
            raise InvalidParameterError("MultiAttribute wraps one single-attribute model")
        if not inner.needs_sensitive:
            raise InvalidParameterError(
                f"{inner.describe()} does not read the sensitive column; nothing to wrap"
            )
        self.inner = inner
        self.higher_is_better = inner.higher_is_better  # type: ignore[misc]
        self.integer_achieved = inner.integer_achieved  # type: ignore[misc]

    def params(self) -> dict[str, object]:
        return {"model": self.inner.key}

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return self.inner.satisfied_by(achieved)

    @property
    def each_attribute(self) -> Model:
        return self.inner

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        import numpy as np

        from ldiv_polars.models.encoded import ClassVerdict, class_verdict

        subs = self._sub_rows(rows)
        if subs is None:
            return None
        ok = np.ones(rows.classes, dtype=bool)
        for parent, sub in subs:
            v = class_verdict(self.inner, sub)
            if v is None:
                return None
            ok[parent[~v]] = False
        return ClassVerdict(ok)

    def suppression_floor(self, rows: EncodedRows, slack: float) -> Any:
        # A part of a class passing Def 4.6 passes the inner model in each of its sub-classes
        # (the part x the other attributes' values), and those parts split the class's own
        # sub-classes: for each attribute, the rows of the class in failing parts are at
        # least the inner model's floors summed over the class's sub-classes (the attribute's
        # retained distribution is within the slack too: a marginal moves no more than the
        # joint). The largest over the attributes (docs/anonymize.md).
        import numpy as np

        subs = self._sub_rows(rows)
        if subs is None:
            return None
        out = np.zeros(rows.classes)
        for parent, sub in subs:
            f = self.inner.suppression_floor(sub, slack)
            if f is None:
                return None
            out = np.maximum(out, np.bincount(parent, weights=f, minlength=rows.classes))
        return out

    def _sub_rows(self, rows: EncodedRows) -> list[tuple[Any, EncodedRows]] | None:
        """Per sensitive attribute: the rows' sub-classes (class x the other attributes'
        values) as encoded rows over the attribute's own values, with each sub-class's
        parent class; the reference is the attribute's share of ``rows``'s reference. None
        without a domain of at least two attributes."""
        import numpy as np

        from ldiv_polars.models.encoded import EncodedRows

        dom = rows.domain
        if dom is None or dom.width < 2:
            return None
        out = []
        for own, other, n_other, sub_domain in dom.derived(self, "parts",
                                                           lambda: _attributes(dom.values)):
            key = rows.cls * n_other + other[rows.s]
            s = own[rows.s]
            order = np.lexsort((s, key))
            keys, sub_cls = np.unique(key[order], return_inverse=True)
            n_own = sub_domain.values.height
            ref = None if rows.reference is None else np.bincount(
                own, weights=rows.table_counts, minlength=n_own).astype(np.int64)
            out.append((keys // n_other, EncodedRows(
                sub_cls.astype(np.int64), s[order], rows.n[order], classes=keys.shape[0],
                n_sensitive=n_own, reference=ref, domain=sub_domain)))
        return out

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        """Extra per-class frames keyed by the qi columns (joined onto the classes): each
        sensitive column's model with the others joining the quasi-identifier. Raises
        :class:`~ldiv_polars.errors.InvalidParameterError` with fewer than two sensitive
        columns."""
        if len(ctx.sensitive) < 2:
            raise InvalidParameterError(
                "multi-attribute l-diversity needs at least two sensitive columns"
            )
        qi = list(ctx.qi)
        base = ctx.rows.select(*qi, *ctx.sensitive, COUNT)
        parts = []
        inner = self.inner
        for s in ctx.sensitive:
            others = [o for o in ctx.sensitive if o != s]
            sub = FrequencySet(base, (*ctx.qi, *others), (s,))
            parts.append(
                evaluate_classes(sub, [inner]).select(
                    *qi,
                    pl.col(f"pass_{inner.key}").alias("__ok"),
                    pl.col(value_col(inner)).cast(pl.Float64).alias("__v"),
                )
            )
        worst = pl.col("__v").min() if inner.higher_is_better else pl.col("__v").max()
        return [
            pl.concat(parts)
            .group_by(qi)
            .agg(pl.col("__ok").all().alias(self.col("ok")), worst.alias(self.col("value")))
        ]

    def value(self) -> pl.Expr:
        return pl.col(self.col("value"))

    def passes(self) -> pl.Expr:
        return pl.col(self.col("ok"))

    def reason(self) -> pl.Expr:
        return pl.format(
            f"some sensitive attribute fails {self.inner.describe()} given the others: {{}}",
            pl.col(self.col("value")),
        )
