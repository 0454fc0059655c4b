"""Re-identification risk from class sizes (El Emam's prosecutor / journalist / marketer models).

With f_j the size of sample class j, n the number of rows, J the number of classes and, when a
population table is given, F_j the size of the matching population class:

- prosecutor: a record's risk is ``1/f_j``; max ``1/min f_j``, average ``J/n``;
- journalist (needs the population): max ``1/min F_j``, average ``(1/n) sum_j f_j/F_j``;
- marketer: expected share of records re-identified by matching everybody: ``J/n`` against the
  sample itself, ``(1/n) sum_j f_j/F_j`` against the population;
- sample uniques: rows in classes of size 1; records at risk: share of rows whose prosecutor risk
  exceeds a threshold.

>>> import polars as pl
>>> r = risk_profile(pl.DataFrame({"q": [1, 1, 2]}), ["q"])
>>> (r.prosecutor_max, round(r.prosecutor_avg, 4), r.sample_uniques)
(1.0, 0.6667, 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import NullPolicy, require_real, validate_columns
from ldiv_polars.errors import InvalidParameterError


@dataclass(frozen=True)
class RiskReport:
    rows: int
    classes: int
    prosecutor_max: float | None
    prosecutor_avg: float | None
    marketer: float | None
    sample_uniques: int
    records_at_risk: float | None
    threshold: float | None
    journalist_max: float | None = None
    journalist_avg: float | None = None

    def to_dict(self) -> dict[str, object]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def class_sizes(data: TableLike, qi: str | Iterable[str], *, nulls: NullPolicy = "error"
                ) -> pl.LazyFrame:
    """Lazy ``(qi..., n)``: the size of every equivalence class."""
    return FrequencySet.build(data, qi, None, nulls=nulls).frame


@reads_input
def risk_profile(
    data: TableLike,
    qi: str | Iterable[str],
    *,
    population: TableLike | None = None,
    threshold: float | None = None,
    nulls: NullPolicy = "error",
) -> RiskReport:
    """Prosecutor, journalist (with ``population``) and marketer risk, sample uniques and the
    share of records whose prosecutor risk exceeds ``threshold``."""
    if threshold is not None:
        threshold = require_real("threshold", threshold, low=0.0, high=1.0)
    fs = FrequencySet.build(data, qi, None, nulls=nulls)
    sizes = fs.frame.collect(engine="streaming")
    f = pl.col(COUNT)
    agg = [
        f.sum().alias("rows"),
        pl.len().alias("classes"),
        f.min().alias("kmin"),
        f.filter(f == 1).sum().alias("uniq"),
    ]
    if threshold is not None:
        agg.append(f.filter((1.0 / f) > threshold).sum().alias("risky"))
    row = sizes.select(agg).row(0, named=True)
    rows, classes = int(row["rows"] or 0), int(row["classes"])
    empty = rows == 0
    report = dict(
        rows=rows,
        classes=classes,
        prosecutor_max=None if empty else 1.0 / row["kmin"],
        prosecutor_avg=None if empty else classes / rows,
        marketer=None if empty else classes / rows,
        sample_uniques=int(row["uniq"] or 0),
        records_at_risk=None if (empty or threshold is None) else int(row["risky"] or 0) / rows,
        threshold=threshold,
    )
    if population is not None:
        pop = to_lazyframe(population)
        validate_columns(pop, fs.qi, None, require_sensitive=False)
        pop_sizes = pop.group_by(list(fs.qi)).agg(pl.len().cast(pl.Int64).alias("__F"))
        joined = sizes.lazy().join(pop_sizes, on=list(fs.qi), how="left", nulls_equal=True)
        stats = joined.select(
            pl.col("__F").is_null().sum().alias("missing"),
            (pl.col("__F") < f).sum().alias("smaller"),
            pl.col("__F").min().alias("Fmin"),
            (f / pl.col("__F")).sum().alias("ratio"),
        ).collect().row(0, named=True)
        if stats["missing"]:
            raise InvalidParameterError(
                f"{stats['missing']} sample class(es) do not occur in the population table"
            )
        if stats["smaller"]:
            raise InvalidParameterError(
                f"{stats['smaller']} population class(es) are smaller than the sample class: "
                "the sample must be drawn from the population"
            )
        if not empty:
            report["journalist_max"] = 1.0 / stats["Fmin"]
            report["journalist_avg"] = stats["ratio"] / rows
            report["marketer"] = stats["ratio"] / rows
    return RiskReport(**report)  # type: ignore[arg-type]
