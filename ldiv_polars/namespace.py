"""The ``.ldiv`` namespace on Polars LazyFrames, DataFrames and expressions (thin: calls the plain
functions).

Importing :mod:`ldiv_polars` registers it.

>>> import polars as pl
>>> import ldiv_polars  # noqa: F401  (registers .ldiv)
>>> from ldiv_polars.models import KAnonymity
>>> df = pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "c"]})
>>> df.ldiv.check(["q"], "s", KAnonymity(2)).passed
False
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from ldiv_polars.core.frequency import frequency_set
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.models.base import Model
from ldiv_polars.models.risk import RiskReport, risk_profile
from ldiv_polars.models.verdict import CheckResult, check, classes, violations
from ldiv_polars.table_summary import summary

if TYPE_CHECKING:
    from ldiv_polars.attacks import MinimalityReport
    from ldiv_polars.linkage import MechanismPlan, Release
    from ldiv_polars.partition import MondrianResult
    from ldiv_polars.search import AnonymizationResult


class _LdivFrame:
    """Methods shared by the LazyFrame and DataFrame namespaces."""

    def __init__(self, frame: pl.LazyFrame | pl.DataFrame) -> None:
        self._frame = frame

    def frequency_set(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        *, nulls: NullPolicy = "error", count: str = "n",
    ) -> pl.LazyFrame:
        """Lazy frequency set ``(qi..., sensitive..., count)``; see
        :func:`ldiv_polars.frequency_set`."""
        return frequency_set(self._frame, qi, sensitive, nulls=nulls, count=count)

    def check(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model, *, nulls: NullPolicy = "error",
        weight: str | None = None, release: bool | str | None = None,
    ) -> CheckResult:
        """Verdicts of ``models`` (``weight``: sampling weights; ``release=True``: the frame is
        a release, its rows masked to ``*`` in every QI left out and counted); see
        :func:`ldiv_polars.check`."""
        return check(self._frame, qi, sensitive, models, nulls=nulls, weight=weight,
                     release=release)

    def classes(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model = (), *, nulls: NullPolicy = "error",
        weight: str | None = None,
    ) -> pl.LazyFrame:
        """Lazy per-class statistics; see :func:`ldiv_polars.classes`."""
        return classes(self._frame, qi, sensitive, models, nulls=nulls, weight=weight)

    def violations(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model, *, nulls: NullPolicy = "error",
        weight: str | None = None,
    ) -> pl.LazyFrame:
        """Lazy violating classes with reasons; see :func:`ldiv_polars.violations`."""
        return violations(self._frame, qi, sensitive, models, nulls=nulls, weight=weight)

    def summary(
        self, qi: str | Iterable[str], sensitive: str, l: int = 2, *, nulls: NullPolicy = "error"
    ) -> dict[str, object]:
        """Headline statistics; see :func:`ldiv_polars.summary`."""
        return summary(self._frame, qi, sensitive, l, nulls=nulls)

    def risk(
        self, qi: str | Iterable[str], *, population: pl.LazyFrame | pl.DataFrame | None = None,
        threshold: float | None = None, nulls: NullPolicy = "error",
        population_size: int | str | None = None, weight: str | None = None,
        model: str = "dankar",
    ) -> RiskReport:
        """Re-identification risk; see :func:`ldiv_polars.risk_profile`."""
        return risk_profile(self._frame, qi, population=population, threshold=threshold,
                            nulls=nulls, population_size=population_size, weight=weight,
                            model=model)

    def population_uniqueness(self, qi: str | Iterable[str], **kwargs: Any) -> Any:
        """Estimated share of population uniques (Pitman, Zayatz, SNB, Dankar's rule;
        ``population_size=``, ``sampling_fraction=``, ``model=``, ``nulls=``); see
        :func:`ldiv_polars.risk.population_uniqueness`."""
        from ldiv_polars.risk import population_uniqueness

        return population_uniqueness(self._frame, qi, **kwargs)

    def individual_risk(self, qi: str | Iterable[str], **kwargs: Any) -> Any:
        """sdcMicro's individual and global risk (``weight=``, ``method=``, ``threshold=``,
        ...); see :func:`ldiv_polars.risk.individual_risk`."""
        from ldiv_polars.risk import individual_risk

        return individual_risk(self._frame, qi, **kwargs)

    def suda2(self, qi: str | Iterable[str], **kwargs: Any) -> Any:
        """SUDA2: minimal sample uniques, SUDA and DIS scores (``max_size=``,
        ``dis_fraction=``, ...); see :func:`ldiv_polars.risk.suda2`."""
        from ldiv_polars.risk import suda2

        return suda2(self._frame, qi, **kwargs)

    def attribute_risks(self, qi: str | Iterable[str], **kwargs: Any) -> pl.DataFrame:
        """Distinction, separation and uniques of every QI combination up to ``max_size=``;
        see :func:`ldiv_polars.risk.attribute_risks`."""
        from ldiv_polars.risk import attribute_risks

        return attribute_risks(self._frame, qi, **kwargs)

    # -- transforms (imported on first use) ---------------------------------------------------

    def anonymize(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        hierarchies: Mapping[str, Any], models: Sequence[Model] | Model, *,
        suppression: float = 0.0, metric: str = "aecs", suppression_mode: str = "mask",
        strategy: str = "auto", verify: bool = True, nulls: NullPolicy = "error",
        budget: Any = None, weight: str | None = None,
    ) -> AnonymizationResult:
        """Optimal full-domain generalization with suppression, re-verified; see
        :func:`ldiv_polars.search.anonymize`."""
        from ldiv_polars.search import anonymize

        return anonymize(self._frame, qi, sensitive, hierarchies, models,
                         suppression=suppression, metric=metric,
                         suppression_mode=suppression_mode,  # type: ignore[arg-type]
                         strategy=strategy, verify=verify, nulls=nulls,  # type: ignore[arg-type]
                         budget=budget, weight=weight)

    def microaggregate(
        self, columns: str | Iterable[str], *, k: int, pi: float | str | None = None,
        p_bar: float | None = None, cell_column: str = "cell", weights: str | None = None,
    ) -> pl.LazyFrame:
        """MDAV microaggregation: QIs -> cell centroids + cell id, re-verified k-anonymous
        (cells of n_min when pi/p_bar are given); see
        :func:`ldiv_polars.microagg.microaggregate`."""
        from ldiv_polars.microagg import microaggregate

        return microaggregate(self._frame, columns, k=k, pi=pi, p_bar=p_bar,
                              cell_column=cell_column, weights=weights)

    def mondrian(
        self, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
        models: Sequence[Model] | Model, *, relaxed: bool = False, group: str = "group",
    ) -> MondrianResult:
        """Mondrian partitioning (strict or relaxed), re-verified; see
        :func:`ldiv_polars.partition.mondrian`."""
        from ldiv_polars.partition import mondrian

        return mondrian(self._frame, qi, sensitive, models, relaxed=relaxed, group=group)

    def minimality_attack(
        self, *, group: str, sensitive: str, l: float, **kwargs: Any
    ) -> MinimalityReport:
        """Minimality attack on this grouped release; see
        :func:`ldiv_polars.attacks.minimality_attack`."""
        from ldiv_polars.attacks import minimality_attack

        return minimality_attack(self._frame, group=group, sensitive=sensitive, l=l, **kwargs)

    # -- linkage and (l,delta)-diversity --------------------------------------------------------

    def release(
        self, qi: str | Iterable[str], sensitive: str, mapping: Any, **kwargs: Any
    ) -> Release:
        """This anonymized table as a linkage :class:`~ldiv_polars.linkage.Release` with its class
        map; see ``Release.from_mapping``."""
        from ldiv_polars.linkage import Release

        return Release.from_mapping(self._frame, qi, sensitive, mapping, **kwargs)

    def plan_ell_delta(
        self, qi: str | Iterable[str], sensitive: str, *, l: int, delta: float,
        p: Any = None, beta: Any = None, budget: int | None = None,
        method: Literal["greedy", "ind"] = "greedy", order: Any = "lexicographic",
    ) -> MechanismPlan:
        """Plan Mech-(l,delta) with P estimated from this table's frequency set; see
        :func:`ldiv_polars.linkage.plan_mechanism`."""
        from ldiv_polars.linkage import JointDistribution, plan_mechanism

        dist = JointDistribution.from_frequency_set(self._frame, qi, sensitive, order=order)
        return plan_mechanism(dist, l, delta, p=p, beta=beta, budget=budget, method=method)

    def apply_plan(self, plan: MechanismPlan, *, class_column: str = "ec") -> pl.LazyFrame:
        """Add the (l,delta) mechanism's broadcast class column; see ``MechanismPlan.apply``."""
        return plan.apply(self._frame, class_column=class_column)


@pl.api.register_lazyframe_namespace("ldiv")
class LdivLazyFrame(_LdivFrame):
    """``lf.ldiv``: privacy checks on a LazyFrame."""


@pl.api.register_dataframe_namespace("ldiv")
class LdivDataFrame(_LdivFrame):
    """``df.ldiv``: privacy checks on a DataFrame."""


@pl.api.register_expr_namespace("ldiv")
class LdivExpr:
    """``pl.col(c).ldiv``: column-level generalization."""

    def __init__(self, expr: pl.Expr) -> None:
        self._expr = expr

    def generalize(self, hierarchy: Any, level: int) -> pl.Expr:
        """The column generalized to ``level`` of ``hierarchy`` (a String column); see
        :func:`ldiv_polars.hierarchy.generalize_expr`."""
        from ldiv_polars.hierarchy import generalize_expr

        return generalize_expr(self._expr, hierarchy, level)
