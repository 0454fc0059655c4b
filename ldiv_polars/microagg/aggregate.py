"""Polars-facing microaggregation: QIs replaced by cell centroids, plus a cell id column.

MDAV is a row-level algorithm on numeric data, so this transform collects the numeric
quasi-identifier columns (and only those) into one ``(n, m)`` float64 matrix; every other
column stays in the lazy plan. The output is a LazyFrame over the input plan with the QI
columns replaced by the centroids (Float64) and a ``cell`` column; no row is dropped or
reordered. Before returning, the output is re-verified with the library's checker: every
combination of the new QI values must occur at least ``n_min`` (>= ``k``) times.

>>> import polars as pl
>>> df = pl.DataFrame({"age": [21, 22, 23, 40, 41, 42, 60, 61, 62], "disease": list("abcdefghi")})
>>> out = microaggregate(df, ["age"], k=3).collect()
>>> out["age"].to_list()
[22.0, 22.0, 22.0, 41.0, 41.0, 41.0, 61.0, 61.0, 61.0]
>>> out["cell"].to_list(), out["disease"].to_list() == list("abcdefghi")
([1, 1, 1, 2, 2, 2, 0, 0, 0], True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import polars as pl

from ldiv_polars.core import to_lazyframe
from ldiv_polars.core.inputs import TableLike, reads_input
from ldiv_polars.core.validate import as_names, require_int_at_least, require_real, validate_columns
from ldiv_polars.errors import InvalidParameterError, LdivError, NullValuesError
from ldiv_polars.microagg.mdav import MdavResult, mdav
from ldiv_polars.microagg.participation import EffectiveAnonymity, effective_anonymity
from ldiv_polars.microagg.probabilistic import p_probabilistic_mdav

__all__ = [
    "InsufficientRecordsError",
    "Microaggregation",
    "microaggregate",
    "microaggregate_details",
]


class InsufficientRecordsError(InvalidParameterError):
    """The table has fewer records than one cell needs (``k``, or ``n_min`` under participation)."""


class VerificationError(LdivError, RuntimeError):
    """The anonymized output failed its re-verification (a library bug; never expected)."""


@dataclass(frozen=True)
class Microaggregation:
    """Output of :func:`microaggregate_details`.

    Attributes:
        frame: the anonymized lazy table (what :func:`microaggregate` returns).
        n_min: the cell size used (``k`` without ``pi``; ``k``, the floor of the variable
            cell sizes, with per-record ``pi``).
        participation: Algorithm A's result (``None`` without ``pi``).
        mdav: the MDAV run (labels, centroids, distortion ``D``, weighted ``D``).
        smallest_class: smallest equivalence class of the output on the QI columns
            (re-verified with the checker).
    """

    frame: pl.LazyFrame
    n_min: int
    participation: EffectiveAnonymity | None
    mdav: MdavResult
    smallest_class: int
    cell_failure: np.ndarray | None = None
    p_bar: float | None = None

    def summary(self) -> dict[str, object]:
        """JSON-ready headline figures."""
        out: dict[str, object] = {
            "rows": int(self.mdav.labels.size),
            "k": self.mdav.k if self.participation is None else self.participation.k,
            "n_min": self.n_min,
            "cells": self.mdav.n_cells,
            "smallest_cell": int(self.mdav.sizes.min()),
            "largest_cell": int(self.mdav.sizes.max()),
            "smallest_class": self.smallest_class,
            "distortion": self.mdav.distortion,
            "weighted_distortion": self.mdav.weighted_distortion,
        }
        if self.participation is not None:
            out.update(q_bar=self.participation.q_bar, p_bar=self.participation.p_bar)
        if self.cell_failure is not None:  # per-record pi: variable cells, no single n_min
            out["n_min"] = None
            out.update(
                max_cell_failure=float(self.cell_failure.max()),
                p_bar=self.p_bar,
                cells_above_p_bar=int((self.cell_failure > (self.p_bar or 0.0)).sum()),
            )
        return out


def _numeric_columns(lf: pl.LazyFrame, columns: tuple[str, ...],
                     role: str = "quasi-identifiers") -> None:
    """Raise :class:`InvalidParameterError` naming the ``columns`` (in their ``role``) that are
    not numeric."""
    schema = lf.collect_schema()
    bad = [f"{c!r} ({schema[c]})" for c in columns if not schema[c].is_numeric()]
    if bad:
        raise InvalidParameterError(
            f"microaggregation needs numeric {role}; not numeric: {', '.join(bad)}"
        )


def _check_weights(df: pl.DataFrame, weights: str | None) -> None:
    """Raise :class:`InvalidParameterError` when the ``weights`` column of the rows read holds
    a NaN, an infinite or a negative value (a centroid weighted by it means nothing)."""
    if weights is None:
        return
    w = df.get_column(weights).cast(pl.Float64)
    bad = int((~w.is_finite() | (w < 0)).sum())
    if bad:
        raise InvalidParameterError(
            f"the weights column {weights!r} holds {bad} NaN, infinite or negative value(s); "
            "weights must be finite and >= 0")


@reads_input
def microaggregate_details(
    data: TableLike,
    columns: str | Iterable[str],
    *,
    k: int,
    pi: float | str | None = None,
    p_bar: float | None = None,
    cell_column: str = "cell",
    weights: str | None = None,
    standardize: bool = True,
) -> Microaggregation:
    """:func:`microaggregate` with the run's figures (``n_min``, ``q_bar``, ``D`` ...).
    Raises the errors of :func:`microaggregate`, among them :class:`InsufficientRecordsError` when
    the table is smaller than one cell."""
    lf = to_lazyframe(data)
    cols, _ = validate_columns(lf, columns, None, require_sensitive=False)
    k = require_int_at_least("k", k, 1)
    names = _checked_names(lf, cols, cell_column, weights)
    part, n_min, pi_col, pi, p_bar = _participation(lf, names, cols, k, pi, p_bar)
    if pi_col is not None and weights is None:
        weights = pi_col

    extra = [c for c in dict.fromkeys([weights, pi_col]) if c is not None]
    df = _read_columns(lf, [*cols, *extra])
    _check_weights(df, weights)
    if df.height < n_min:
        need = f"n_min = {n_min} (k = {k}, pi = {pi}, p_bar = {p_bar})" if part else f"k = {k}"
        raise InsufficientRecordsError(
            f"the table has {df.height} record(s); one cell needs {need}")
    res, failures = _cells(df, cols, k, n_min, weights, pi_col, p_bar, standardize)
    per_row = res.centroids[res.labels]
    replaced = [pl.lit(pl.Series(c, per_row[:, j], dtype=pl.Float64)) for j, c in enumerate(cols)]
    out = lf.with_columns(*replaced, pl.lit(pl.Series(cell_column, res.labels, dtype=pl.Int64)))

    smallest = _verify(out, cols, n_min)
    return Microaggregation(
        frame=out,
        n_min=n_min,
        participation=part,
        mdav=res,
        smallest_class=smallest,
        cell_failure=failures,
        p_bar=p_bar if pi_col is not None else None,
    )


def _checked_names(lf: pl.LazyFrame, cols: tuple[str, ...], cell_column: str,
                   weights: str | None) -> list[str]:
    """The table's column names, after checking that ``cell_column`` is a new name,
    ``weights`` an extra column and ``cols`` numeric (:class:`InvalidParameterError`)."""
    if not isinstance(cell_column, str) or not cell_column:
        raise InvalidParameterError(f"cell_column must be a non-empty string, got {cell_column!r}")
    names = lf.collect_schema().names()
    if cell_column in names:
        raise InvalidParameterError(
            f"cell_column {cell_column!r} already exists in the data; pass another cell_column"
        )
    if weights is not None:
        (w_col,) = as_names(weights) or (None,)
        _check_extra_column(str(w_col), "weights", names, cols)
        _numeric_columns(lf, (str(w_col),), "weights")
    _numeric_columns(lf, cols)
    return names


def _cells(df: pl.DataFrame, cols: tuple[str, ...], k: int, n_min: int, weights: str | None,
           pi_col: str | None, p_bar: float | None, standardize: bool
           ) -> tuple[MdavResult, np.ndarray | None]:
    """MDAV's cells of the rows ``df`` (cells of ``n_min`` records; with per-record
    participation ``pi_col``, cells grown until each meets ``p_bar``) and, in that case, the
    per-cell failure probabilities."""
    x = df.select(cols).to_numpy().astype(np.float64, copy=False)
    w = df.get_column(weights).to_numpy().astype(np.float64) if weights is not None else None
    if pi_col is None:
        return mdav(x, n_min, weights=w, standardize=standardize), None
    pis = df.get_column(pi_col).to_numpy().astype(np.float64)
    return _variable_cells(x, k, pis, pi_col, float(p_bar),  # type: ignore[arg-type]
                           w if weights != pi_col else None, standardize)


def _participation(lf: pl.LazyFrame, names: list[str], qi: tuple[str, ...], k: int,
                   pi: float | str | None, p_bar: float | None
                   ) -> tuple[EffectiveAnonymity | None, int, str | None, object, float | None]:
    """Check the participation arguments: ``(Algorithm A's result for a constant pi, the cell
    size n_min, the column of per-record pi, pi and p_bar as validated)``; without ``pi`` the
    cell size is ``k``. Raises :class:`InvalidParameterError` for ``pi`` without ``p_bar`` (or
    the reverse), values out of range, or a pi column that is missing, a QI or not numeric."""
    if pi is None and p_bar is None:
        return None, k, None, None, None
    if pi is None or p_bar is None:
        raise InvalidParameterError("pi and p_bar go together: give both or neither")
    p_bar = require_real("p_bar", p_bar, low=0.0, high=1.0, low_open=True)
    if isinstance(pi, str):  # per-record participation probabilities
        _check_extra_column(pi, "pi", names, qi)
        _numeric_columns(lf, (pi,), "participation probabilities")
        return None, k, pi, pi, p_bar
    pi = require_real("pi", pi, low=0.0, high=1.0, low_open=True)
    part = effective_anonymity(k, pi, p_bar)
    return part, part.n_min, None, pi, p_bar


def _read_columns(lf: pl.LazyFrame, columns: list[str]) -> pl.DataFrame:
    """The given columns collected (streaming); raises
    :class:`~ldiv_polars.errors.NullValuesError` when any holds nulls."""
    df = lf.select(columns).collect(engine="streaming")
    nulls = {c: int(n) for c, n in zip(df.columns, df.null_count().row(0)) if n}
    if nulls:
        raise NullValuesError(nulls)
    return df


def _check_extra_column(column: str, role: str, names: list[str], qi: tuple[str, ...]) -> None:
    """Raise unless ``column`` (the ``role`` argument: weights or pi) is a column of the data
    other than the quasi-identifiers."""
    if column not in names:
        from ldiv_polars.errors import UnknownColumnError

        raise UnknownColumnError([column], names)
    if column in qi:
        raise InvalidParameterError(f"the {role} column {column!r} is also a quasi-identifier")


def _variable_cells(x: np.ndarray, k: int, pis: np.ndarray, pi_col: str, p_bar: float,
                    weights: np.ndarray | None, standardize: bool
                    ) -> tuple[MdavResult, np.ndarray]:
    """p-probabilistic MDAV under per-record participation ``pis``: the cells (centroids
    weighted by ``weights`` when given) and each cell's failure probability. Raises
    :class:`InsufficientRecordsError` when not even one cell reaches ``p_bar``."""
    prob = p_probabilistic_mdav(x, k, pis, p_bar, standardize=standardize)
    failures = prob.cell_failure
    if not prob.satisfied:
        raise InsufficientRecordsError(
            f"the {x.shape[0]} record(s) cannot form even one cell with P{{0 < K < {k}}} <= "
            f"p_bar = {p_bar} (attained {float(failures.max()):.3g}) given the participation "
            f"probabilities in {pi_col!r}"
        )
    res = prob.mdav
    if weights is not None:
        from ldiv_polars.microagg.mdav import weighted_centroids

        res = dataclasses.replace(res, centroids=weighted_centroids(x, res.labels, weights))
    return res, failures


def _verify(out: pl.LazyFrame, cols: tuple[str, ...], n_min: int) -> int:
    from ldiv_polars.models import KAnonymity
    from ldiv_polars.models.verdict import check

    result = check(out, list(cols), None, [KAnonymity(n_min)])
    model = result.models[0]
    if not result.passed:
        raise VerificationError(
            f"microaggregated output failed re-verification: {model.failing_classes} class(es) "
            f"below {n_min} records"
        )
    return int(model.achieved)


@reads_input
def microaggregate(
    data: TableLike,
    columns: str | Iterable[str],
    *,
    k: int,
    pi: float | str | None = None,
    p_bar: float | None = None,
    cell_column: str = "cell",
    weights: str | None = None,
    standardize: bool = True,
) -> pl.LazyFrame:
    """k-anonymous (or p-probabilistically k-anonymous) MDAV microaggregation.

    Args:
        data: LazyFrame, DataFrame or CSV/Parquet path.
        columns: the numeric quasi-identifiers to aggregate.
        k: minimum number of records per cell.
        pi, p_bar: participation probability and acceptable cell failure. A number gives
            cells of ``n_min`` records (Algorithm A), each k-anonymous among the respondents
            who actually take part with probability at least ``1 - p_bar``. A column name
            gives per-record probabilities: variable-size cells grown by Algorithm A along the
            distance order (:func:`~ldiv_polars.microagg.p_probabilistic_mdav`) and
            ``pi``-weighted centroids.
        cell_column: name of the added cell id column (must not exist yet).
        weights: optional column of per-record participation probabilities: centroids become
            ``sum pi x / sum pi`` (§VI.B). It does not change the cell sizes.
        standardize: columnwise zero mean / unit variance before MDAV (the paper's choice).

    Returns a LazyFrame: every input row, the QI columns replaced by their cell's centroid
    and the cell id added. The input plan must have a deterministic row order (it is
    evaluated twice: once for the QI matrix, once when the result is collected).
    """
    return microaggregate_details(
        data,
        columns,
        k=k,
        pi=pi,
        p_bar=p_bar,
        cell_column=cell_column,
        weights=weights,
        standardize=standardize,
    ).frame
