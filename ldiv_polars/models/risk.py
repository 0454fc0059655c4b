"""Re-identification risk from class sizes (El Emam's prosecutor / journalist / marketer models).

With f_j the size of sample class j, n the number of rows, J the number of classes and, when a
population table is given, F_j the size of the matching population class:

- prosecutor: a record's risk is ``1/f_j``; max ``1/min f_j``, average ``J/n``;
- journalist (needs the population): max ``1/min F_j``, average ``(1/n) sum_j f_j/F_j``;
- marketer: expected share of records re-identified by matching everybody: ``J/n`` against the
  sample itself, ``(1/n) sum_j f_j/F_j`` against the population;
- sample uniques: rows in classes of size 1; records at risk: share of rows whose prosecutor risk
  exceeds a threshold;
- with ``population_size``: the estimated share of population-unique records (Pitman, Zayatz,
  SNB or Dankar et al.'s rule, :func:`ldiv_polars.risk.population_uniqueness`);
- with ``weight`` (sampling weights): sdcMicro's individual risk, its maximum, the expected
  number of re-identifications and their share (:func:`ldiv_polars.risk.individual_risk`).

The statistics themselves live in :mod:`ldiv_polars.risk`; this function gathers them from one
class-size table built by one pass over the rows.

>>> import polars as pl
>>> r = risk_profile(pl.DataFrame({"q": [1, 1, 2]}), ["q"])
>>> (r.prosecutor_max, round(r.prosecutor_avg, 4), r.sample_uniques)
(1.0, 0.6667, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet, unique_name, unique_prefix
from ldiv_polars.core.inputs import TableLike, reads_input, to_lazyframe
from ldiv_polars.core.validate import NullPolicy, require_real, validate_columns
from ldiv_polars.errors import InvalidParameterError, NullValuesError


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
    population_size: int | None = None
    population_model: str | None = None
    population_uniques: float | None = None
    population_unique_share: float | None = None
    population_reason: str | None = None
    weight: str | None = None
    individual_risk_max: float | None = None
    expected_reidentifications: float | None = None
    global_risk: float | None = None

    def to_dict(self) -> dict[str, object]:
        """Every field as a JSON-ready dict."""
        return asdict(self)


def class_sizes(data: TableLike, qi: str | Iterable[str], *, nulls: NullPolicy = "error"
                ) -> pl.LazyFrame:
    """Lazy ``(qi..., n)``: the size of every equivalence class (the count column is ``n``
    unless a QI is named so: then ``n_``, see :func:`~ldiv_polars.core.frequency.count_name`)."""
    return FrequencySet.build(data, qi, None, nulls=nulls).frame


@reads_input
def risk_profile(
    data: TableLike,
    qi: str | Iterable[str],
    *,
    population: TableLike | None = None,
    threshold: float | None = None,
    nulls: NullPolicy = "error",
    population_size: int | str | None = None,
    weight: str | None = None,
    model: str = "dankar",
    engine: str | None = None,
) -> RiskReport:
    """Prosecutor, journalist (with ``population``, a table of the population's rows) and
    marketer risk, sample uniques and the share of records whose prosecutor risk exceeds
    ``threshold``; with ``population_size`` (a number or a region of
    :data:`ldiv_polars.risk.REGIONS`) the estimated share of population uniques by ``model``;
    with ``weight`` (a column of sampling weights) sdcMicro's individual and global risk.

    Raises :class:`InvalidParameterError` for bad parameters (see also
    :func:`ldiv_polars.risk.population_uniqueness` and :func:`ldiv_polars.risk.individual_risk`).
    """
    from ldiv_polars.core.engines.base import engine_for
    from ldiv_polars.risk.tables import WEIGHT, class_table

    if threshold is not None:
        threshold = require_real("threshold", threshold, low=0.0, high=1.0)
    if (reader := engine_for(data, engine)).distributed:
        return _distributed_profile(reader, data, qi, threshold, nulls, population,
                                    population_size, weight, model)
    # the QIs under internal names: no QI name (``n``, ``weight_sum``...) clashes with the
    # class table's own columns
    lf = to_lazyframe(data)
    qi_user, _ = validate_columns(lf, qi, None, require_sensitive=False)
    if weight is not None and weight in qi_user:
        raise InvalidParameterError(f"weight column {weight!r} is also a quasi-identifier")
    prefix = unique_prefix("__ldiv_q", [*lf.collect_schema().names(), COUNT, WEIGHT])
    internal = {q: f"{prefix}{i}" for i, q in enumerate(qi_user)}
    try:
        sizes = class_table(lf.rename(internal), list(internal.values()), weight=weight,
                            nulls=nulls)
    except NullValuesError as err:  # named by the user's column names
        back = {v: k for k, v in internal.items()}
        raise NullValuesError({back.get(c, c): n for c, n in err.counts.items()}) from None
    qi_t = list(internal.values())
    report = profile_classes(sizes, threshold=threshold, population_size=population_size,
                             model=model, weight=weight)
    if population is not None:
        report |= _journalist_marketer(sizes, population, qi_user, internal, report["rows"])
    return RiskReport(**report)  # type: ignore[arg-type]


def _distributed_profile(reader: Any, data: object, qi: str | Iterable[str],
                         threshold: float | None, nulls: NullPolicy, population: object,
                         population_size: int | str | None, weight: str | None,
                         model: str) -> RiskReport:
    """:func:`risk_profile` by a distributed engine (Spark): the class sizes (with the weight
    sums under ``weight``) are its class table (:func:`~ldiv_polars.risk.tables.class_table`,
    grouped by the engine), the QIs under internal names as :func:`risk_profile` names them.
    A population table is refused (it is read row by row here)."""
    from ldiv_polars.risk.tables import WEIGHT, class_table

    if population is not None:
        raise InvalidParameterError(
            f"risk_profile with the {reader.name} engine takes no population table: use the "
            "Polars engine for it")
    frame = class_table(data, qi, weight=weight, nulls=nulls,  # type: ignore[arg-type]
                        engine=reader.name)
    tail = 1 if weight is None else 2  # (qi..., n[, weight_sum])
    qi_t, count = frame.columns[:-tail], frame.columns[-tail]
    prefix = unique_prefix("__ldiv_q", [*frame.columns, COUNT, WEIGHT])
    sizes = frame.rename({**{q: f"{prefix}{i}" for i, q in enumerate(qi_t)}, count: COUNT})
    report = profile_classes(sizes, threshold=threshold, population_size=population_size,
                             model=model, weight=weight)
    return RiskReport(**report)  # type: ignore[arg-type]


def _journalist_marketer(sizes: pl.DataFrame, population: TableLike, qi_user: Sequence[str],
                         internal: dict[str, str], rows: int) -> dict[str, float]:
    """``journalist_max``, ``journalist_avg`` and ``marketer`` of the sample classes ``sizes``
    (QIs under their ``internal`` names) against the ``population`` table's classes (none
    when the sample has no ``rows``). Raises :class:`InvalidParameterError` when a sample
    class is missing from the population or larger than its population class."""
    f = pl.col(COUNT)
    qi_t = list(internal.values())
    pop = to_lazyframe(population)
    validate_columns(pop, qi_user, None, require_sensitive=False)
    pop = pop.select(pl.col(q).alias(internal[q]) for q in qi_user)
    big_f = unique_name("__F", [*qi_t, COUNT])
    pop_sizes = pop.group_by(qi_t).agg(pl.len().cast(pl.Int64).alias(big_f))
    joined = sizes.lazy().join(pop_sizes, on=qi_t, how="left", nulls_equal=True)
    stats = joined.select(
        pl.col(big_f).is_null().sum().alias("missing"),
        (pl.col(big_f) < f).sum().alias("smaller"),
        pl.col(big_f).min().alias("Fmin"),
        (f / pl.col(big_f)).sum().alias("ratio"),
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
    if not rows:
        return {}
    return {"journalist_max": 1.0 / stats["Fmin"], "journalist_avg": stats["ratio"] / rows,
            "marketer": stats["ratio"] / rows}


def profile_classes(
    sizes: pl.DataFrame,
    *,
    threshold: float | None = None,
    population_size: int | str | None = None,
    model: str = "dankar",
    weight: str | None = None,
) -> dict[str, object]:
    """The fields of :class:`RiskReport` but the journalist ones, from a collected class-size
    table ``(qi..., n[, weight_sum])`` (``weight`` names the weight column the sums came from;
    it is only reported)."""
    from ldiv_polars.risk import WEIGHT, individual_risk

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
    report: dict[str, object] = dict(
        rows=rows,
        classes=classes,
        prosecutor_max=None if empty else 1.0 / row["kmin"],
        prosecutor_avg=None if empty else classes / rows,
        marketer=None if empty else classes / rows,
        sample_uniques=int(row["uniq"] or 0),
        records_at_risk=None if (empty or threshold is None) else int(row["risky"] or 0) / rows,
        threshold=threshold,
    )
    if population_size is not None:
        report |= population_figures(sizes, population_size, model)
    if weight is not None:
        ir = individual_risk(sizes, weight=WEIGHT, nulls="value")  # nulls judged upstream
        report |= dict(weight=weight, individual_risk_max=ir.max_risk,
                       expected_reidentifications=ir.expected_reidentifications,
                       global_risk=ir.global_risk)
    return report


POPULATION_KEYS = ("population_size", "population_model", "population_unique_share",
                   "population_uniques", "population_reason")
"""The population figures :func:`population_figures` adds to a report or a summary."""


def population_figures(sizes: pl.DataFrame, population_size: int | str, model: str = "dankar"
                       ) -> dict[str, object]:
    """:data:`POPULATION_KEYS` from a class-size table (column ``n``): the population size,
    the model used, the estimated share and number of population uniques, and why there is no
    estimate when there is none (:func:`ldiv_polars.risk.population_uniqueness`)."""
    from ldiv_polars.risk import population_uniqueness

    pu = population_uniqueness(sizes.select(COUNT), population_size=population_size,
                               model=model)  # type: ignore[arg-type]
    return dict(zip(POPULATION_KEYS, (pu.population_size, pu.used, pu.fraction, pu.uniques,
                                      pu.reason)))
