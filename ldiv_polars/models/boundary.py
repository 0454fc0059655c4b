"""The Polars engine's exact step: the classes whose float statistic is within rounding of a
threshold (``Model.uncertain()``) are decided by the model's exact routine
(``Model.decide``) on their integer counts.

Only those classes' rows are grouped into lists and handed to Python (a small table: on real
data usually none); every other class keeps its float verdict, which is exact outside the
rounding bound. See :mod:`ldiv_polars.models.exact` for the arithmetic and
``docs/models.md`` for the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import polars as pl

from ldiv_polars.core.frequency import COUNT
from ldiv_polars.models.exact import ClassCounts, Reference

if TYPE_CHECKING:
    from ldiv_polars.models.base import Model

ROW_N = "__ldiv_tn"
"""Table count of the sensitive value, in the reference distribution frame."""

_VALUES = "__ldiv_xv"
_COUNTS = "__ldiv_xn"
_REF = "__ldiv_xr"
_REF_N = "__ldiv_xrn"
_REF_TEXT = "__ldiv_xrt"


def uncertain_col(m: Model) -> str:
    """The class-table column flagging ``m``'s classes within rounding of its threshold."""
    return m.col("uncertain")


def exact_pass_col(m: Model) -> str:
    """The class-table column holding ``m``'s exact verdict of an uncertain class."""
    return m.col("exact_pass")


def exact_value_col(m: Model) -> str:
    """The class-table column holding ``m``'s exact statistic of an uncertain class."""
    return m.col("exact_value")


def _key(v: object) -> object:
    """Dictionary key of a sensitive value as the engine groups it (NaN equals NaN)."""
    if isinstance(v, float) and math.isnan(v):
        return ("__nan__",)
    return v


def reference_of(labels: Sequence[object], counts: Sequence[int],
                 text: Sequence[str | None] | None) -> tuple[Reference, dict[object, int]]:
    """The :class:`Reference` of a domain (labels in the engine's order) and its rank map."""
    ref = Reference(tuple(labels), tuple(int(c) for c in counts),
                    None if text is None else tuple(text))
    return ref, {_key(v): i for i, v in enumerate(ref.labels)}


def _decide_batch(df: pl.DataFrame, *, models: Sequence[Model], qi: Sequence[str],
                  text: bool) -> pl.DataFrame:
    # column names once (a model's key is rebuilt from its parameters on every call)
    cols = [(m, uncertain_col(m), exact_pass_col(m), exact_value_col(m)) for m in models]
    out: dict[str, list[object]] = {q: df.get_column(q).to_list() for q in qi}
    for _, _, pass_c, value_c in cols:
        out[pass_c] = []
        out[value_c] = []
    if df.height:
        first = df.row(0, named=True)
        ref, rank = reference_of(first[_REF], first[_REF_N], first[_REF_TEXT] if text else None)
        for row in df.iter_rows(named=True):
            cc = ClassCounts(tuple(rank[_key(v)] for v in row[_VALUES]),
                             tuple(int(c) for c in row[_COUNTS]))
            for m, unc_c, pass_c, value_c in cols:
                passed, value = m.decide(cc, ref) if row[unc_c] else (None, None)
                out[pass_c].append(passed)
                out[value_c].append(value)
    schema = {q: df.schema[q] for q in qi}
    schema |= {pass_c: pl.Boolean for _, _, pass_c, _ in cols}
    schema |= {value_c: pl.Float64 for _, _, _, value_c in cols}
    return pl.DataFrame(out, schema=schema)


def decide_uncertain(classes: pl.LazyFrame, rows: pl.LazyFrame, reference: pl.LazyFrame,
                     qi: Sequence[str], s: str, models: Sequence[Model]) -> pl.LazyFrame:
    """``classes`` with, for each of ``models`` (those with an ``uncertain()`` expression), the
    columns ``<key>__uncertain``, ``<key>__exact_pass`` and ``<key>__exact_value`` (null where
    the class is not uncertain). ``rows`` are the frequency-set rows ``(qi, s, COUNT, ...)``,
    ``reference`` the table distribution ``(s, ROW_N, ...)``."""
    qi = list(qi)
    classes = classes.with_columns(
        [m.uncertain().alias(uncertain_col(m)) for m in models]  # type: ignore[union-attr]
    ).cache()  # read twice (the uncertain classes, the result): aggregated once
    flags = [uncertain_col(m) for m in models]
    need = classes.filter(pl.any_horizontal(flags)).select(*qi, *flags)
    text = any(getattr(m, "exact_needs_text", False) for m in models)
    ordered = reference.sort(s, nulls_last=False)
    ref_lists = ordered.select(
        pl.col(s).implode().alias(_REF), pl.col(ROW_N).implode().alias(_REF_N),
        *([pl.col(s).cast(pl.String).implode().alias(_REF_TEXT)] if text else []))
    grouped = (
        rows.select(*qi, s, COUNT).join(need.select(qi), on=qi, how="semi", nulls_equal=True)
        .group_by(qi).agg(pl.col(s).alias(_VALUES), pl.col(COUNT).alias(_COUNTS))
        .join(need, on=qi, how="inner", nulls_equal=True)
        .join(ref_lists, how="cross")
    )
    schema = {q: dt for q, dt in classes.collect_schema().items() if q in qi}
    schema |= {exact_pass_col(m): pl.Boolean for m in models}
    schema |= {exact_value_col(m): pl.Float64 for m in models}
    decided = grouped.map_batches(
        partial(_decide_batch, models=list(models), qi=qi, text=text),
        schema=pl.Schema(schema), streamable=False)
    return classes.join(decided, on=qi, how="left", nulls_equal=True)
