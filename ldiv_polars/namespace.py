"""The ``.ldiv`` namespace on Polars LazyFrames and DataFrames (thin: calls the plain functions).

Importing :mod:`ldiv_polars` registers it.

>>> import polars as pl
>>> import ldiv_polars  # noqa: F401  (registers .ldiv)
>>> from ldiv_polars.models import KAnonymity
>>> pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "c"]}).ldiv.check(["q"], "s", KAnonymity(2)).passed
False
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from ldiv_polars.checking import CheckResult, check, classes, violations
from ldiv_polars.core.frequency import frequency_set
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.models.base import Model
from ldiv_polars.models.risk import RiskReport, risk_profile
from ldiv_polars.report import summary


class _LdivFrame:
    """Methods shared by the LazyFrame and DataFrame namespaces."""

    def __init__(self, frame: pl.LazyFrame | pl.DataFrame) -> None:
        self._frame = frame

    def frequency_set(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        *, nulls: NullPolicy = "error",
    ) -> pl.LazyFrame:
        """Lazy frequency set ``(qi..., sensitive..., n)``; see :func:`ldiv_polars.frequency_set`."""
        return frequency_set(self._frame, qi, sensitive, nulls=nulls)

    def check(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model, *, nulls: NullPolicy = "error",
    ) -> CheckResult:
        """Verdicts of ``models``; see :func:`ldiv_polars.check`."""
        return check(self._frame, qi, sensitive, models, nulls=nulls)

    def classes(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model = (), *, nulls: NullPolicy = "error",
    ) -> pl.LazyFrame:
        """Lazy per-class statistics; see :func:`ldiv_polars.classes`."""
        return classes(self._frame, qi, sensitive, models, nulls=nulls)

    def violations(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model, *, nulls: NullPolicy = "error",
    ) -> pl.LazyFrame:
        """Lazy violating classes with reasons; see :func:`ldiv_polars.violations`."""
        return violations(self._frame, qi, sensitive, models, nulls=nulls)

    def summary(
        self, qi: str | Iterable[str], sensitive: str, l: int = 2, *, nulls: NullPolicy = "error"
    ) -> dict[str, object]:
        """Headline statistics; see :func:`ldiv_polars.summary`."""
        return summary(self._frame, qi, sensitive, l, nulls=nulls)

    def risk(
        self, qi: str | Iterable[str], *, population: pl.LazyFrame | pl.DataFrame | None = None,
        threshold: float | None = None, nulls: NullPolicy = "error",
    ) -> RiskReport:
        """Re-identification risk; see :func:`ldiv_polars.risk_profile`."""
        return risk_profile(self._frame, qi, population=population, threshold=threshold,
                            nulls=nulls)


@pl.api.register_lazyframe_namespace("ldiv")
class LdivLazyFrame(_LdivFrame):
    """``lf.ldiv``: privacy checks on a LazyFrame."""


@pl.api.register_dataframe_namespace("ldiv")
class LdivDataFrame(_LdivFrame):
    """``df.ldiv``: privacy checks on a DataFrame."""
