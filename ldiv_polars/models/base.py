"""The model protocol: what a privacy model answers over a frequency set (per-class statistics,
per-class pass/fail, the table's *achieved* value: smallest k, largest l, smallest t, ...) and
everything the engines and the search ask it (array verdict, SQL form, exact routine, search
facts). :func:`~ldiv_polars.models.evaluate_classes` (``models/evaluate.py``) runs the models;
:class:`ModelResult` and :func:`table_results` are the table-level verdicts.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.errors import NoSqlFormError
from ldiv_polars.models.spec_codec import spec_json

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.models.encoded import ClassVerdict, EncodedRows
    from ldiv_polars.models.exact import ClassCounts, Reference
    from ldiv_polars.models.weight_exact import ExactSum

SIZE = "size"
"""Class size column of :func:`evaluate_classes` output."""
DISTINCT = "distinct"
"""Number of distinct sensitive values of the class (first sensitive column)."""

# Columns added to the frequency-set rows before the per-class aggregation.
ROW_P = "__ldiv_p"
ROW_Q = "__ldiv_q"
ROW_M = "__ldiv_m"
ROW_W = "__ldiv_w"
"""The weight-sum column of the frequency-set rows inside an evaluation (a weighted frequency
set, :attr:`~ldiv_polars.core.frequency.FrequencySet.weight`)."""

ENTROPY_TOLERANCE = 1e-12
"""Tolerance (nats) of the *adjusted* entropy of :class:`EntropyLDiversityDontCare`, which
passes when ``H >= ln(l) - ENTROPY_TOLERANCE`` (its Algorithm 1 has no exact form here).
Entropy l-diversity itself is decided exactly (``H = ln l`` passes, see
:mod:`ldiv_polars.models.exact`) and no longer uses it."""


@dataclass(frozen=True)
class ClassContext:
    """What a model may read while building its per-class aggregations."""

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    rows: pl.LazyFrame
    """The frequency set rows; when a model compares classes with the table (``needs_q``) they
    also carry ``ROW_P`` (n / class size, one window over the class) and ``ROW_Q`` (the table
    frequency of the sensitive value, joined from :attr:`reference`)."""
    reference: pl.LazyFrame
    """Table distribution of the first sensitive column: columns ``(s, ROW_Q, ROW_M, ROW_N)``
    (ROW_M: the number of distinct values of the table; ROW_N: the value's table count)."""
    names: tuple[str, ...] = ()
    """The caller's names of the quasi-identifiers, in :attr:`qi`'s order, where the
    evaluation renamed them (a model reading another table by column name, such as a
    population table, reads these); empty when :attr:`qi` are the caller's names."""
    weight: str | None = None
    """The column of :attr:`rows` holding each row's sum of sampling weights, when the
    frequency set was built with weights (``weight=``); None otherwise."""

    @property
    def s(self) -> str:
        """The first sensitive column (the one the models read)."""
        return self.sensitive[0]


@dataclass(frozen=True)
class SqlCall:
    """How the DuckDB engine runs a model: ``macro`` is the per-class table macro of
    ``sql/ldiv.sql`` that reads an extended frequency set (``ldiv__fsx``) and returns
    ``(cid, size, ok, v, unc)``, ``params`` the parameters bound after the relation name;
    ``hierarchy`` is registered as a relation and passed last (hierarchical t-closeness);
    ``population`` (a model judged against a population table) is the population table,
    registered as a relation and passed last with the class key's field names (the macro
    counts it on them: ``ldiv__population_x``).
    ``spec`` is the model as constructor keywords plus ``"model": name``: the exact step
    rebuilds the model from it (:mod:`ldiv_polars.models.spec`) to decide the uncertain
    classes (``unc``) with :meth:`Model.decide`. ``stats_macro``, when the form reads the
    per-class statistics ``ldiv__class_stats_x(x, stats)`` (their columns, or a subset), is
    the same form reading them from a relation passed after ``x``
    (``stats_macro(x, st, *params[, hierarchy])``): an engine judging several models in one
    statement computes them once per ``stats``."""

    macro: str
    params: tuple[object, ...] = ()
    hierarchy: Any = None
    spec: dict[str, Any] = field(default_factory=dict)
    stats_macro: str | None = None
    stats: int = 1
    population: Any = None

    @property
    def spec_json(self) -> str:
        """``spec`` as the JSON text the SQL exact step (``ldiv_decide``) rebuilds the model from."""
        return spec_json(self.spec)


class Model(ABC):
    """A privacy model: per-class statistics, per-class verdict, table verdict, achieved value.

    **Required** (abstract): ``name``, :meth:`params`, :meth:`aggs` (or :meth:`frames`),
    :meth:`value` and :meth:`passes`. Everything else has a default, and the defaults are
    safe: a model that states nothing more is checked by :func:`evaluate_classes`
    everywhere (no numpy fast path: a slower search), is searched without pruning unless it
    declares ``monotone`` (the default, ``True``, must be backed by a proof), is never assumed
    union-closed (with suppression the search is then exhaustive), and has no SQL form.

    Class attributes:

    - ``monotone``: every generalization of a satisfying table satisfies it too (no
      suppression); the lattice search prunes with it.
    - ``higher_is_better``: direction of the achieved value (k and l grow; c, t, alpha, delta,
      beta shrink).
    - ``needs_q``: the class is compared with the table distribution (rows carry ``ROW_P``
      and ``ROW_Q``); ``needs_sensitive``: it reads the sensitive column at all.
    - ``union_closed``: a class that contains a passing class passes (k-anonymity, distinct
      l-diversity); then suppression keeps the search monotone.
    - ``identity_only``: the verdict reads only the identity of sensitive values, not the
      values themselves (the search may then encode them as integer ids).
    - ``sizes_only``: the verdict reads only the class size: a class passes iff
      ``size >= min_class_size`` (the search then skips building rows).
    - ``table_level``: the verdict is on the whole table's class sizes, not per class (risk
      thresholds): every class passes per class and the model answers
      ``table_holds(sizes)`` / ``table_value(sizes)`` on the class sizes of the retained
      records (:class:`~ldiv_polars.models.table_level.TableModel`).
    - ``needs_weight``: the verdict reads each class's sum of sampling weights (the
      frequency set must be built with ``weight=``; :class:`ClassContext.weight`).
    - ``population_based``: each class is judged with its count in a population table
      (:class:`~ldiv_polars.models.population_table.PopulationModel`: k-map with a population,
      delta-presence); the search rolls the population's counts up with each node.
    """

    monotone: ClassVar[bool] = True
    higher_is_better: ClassVar[bool] = True
    needs_q: ClassVar[bool] = False
    needs_sensitive: ClassVar[bool] = True
    union_closed: ClassVar[bool] = False
    identity_only: ClassVar[bool] = False
    sizes_only: ClassVar[bool] = False
    table_level: ClassVar[bool] = False
    population_based: ClassVar[bool] = False
    integer_achieved: ClassVar[bool] = False
    """The achieved value is a count (k, distinct l): an int on every engine, else a float
    (:meth:`achieved_value`)."""
    needs_weight: ClassVar[bool] = False
    name: ClassVar[str] = "model"

    @property
    def key(self) -> str:
        """Unique, parameter-encoding name; used as column prefix (``pass_<key>``)."""
        params = "_".join(_fmt(v) for v in self.params().values())
        return f"{self.name}_{params}" if params else self.name

    def col(self, stat: str) -> str:
        """The column name of this model's statistic ``stat`` (prefixed by :attr:`key`)."""
        return f"{self.key}__{stat}"

    @abstractmethod
    def params(self) -> dict[str, object]:
        """The model's parameters, for keys, reports and JSON."""

    @abstractmethod
    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        """Aggregations evaluated in ``group_by(qi)`` over ``ctx.rows``; output names must use
        :meth:`col`."""

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        """Extra per-class frames keyed by the qi columns (joined onto the classes)."""
        return []

    def for_rows(self, rows: int) -> Model:
        """The model as it judges a table of ``rows`` records: itself, unless a parameter
        depends on the table's size (k-map's estimated k' reads the sampling fraction), then
        the model bound to it. ``check`` and the search bind the models to the table they
        read (with suppression: the records before suppression, as ARX)."""
        return self

    def at_node(self, generalize: Callable[[pl.LazyFrame], pl.LazyFrame]) -> Model:
        """The model as it judges a table generalized by ``generalize`` (a function that
        generalizes any table with the QI columns to the node of an anonymized output, for
        its re-verification): itself, unless it reads another table by the QI values (a
        population table is generalized alike)."""
        return self

    def validate(self, fs: FrequencySet) -> None:  # noqa: B027 - optional hook
        """Check the model against a (materialized) frequency set before evaluation; raise an
        :class:`~ldiv_polars.errors.LdivError` on mismatch (e.g. a value missing from a
        hierarchy). Default: nothing to check."""

    @abstractmethod
    def value(self) -> pl.Expr:
        """The per-class measured value (on the class rows)."""

    @abstractmethod
    def passes(self) -> pl.Expr:
        """Boolean per-class verdict (on the class rows)."""

    def achieved(self) -> pl.Expr:
        """The table's achieved value, aggregated over the class rows of
        :func:`evaluate_classes` (its value column)."""
        v = pl.col(value_col(self))
        return v.min() if self.higher_is_better else v.max()

    def achieved_value(self, raw: float | int | None) -> float | int | None:
        """``raw``, an engine's achieved value, as every engine reports it: None stays None,
        an int when :attr:`integer_achieved` (and ``raw`` is finite), else a float.

        >>> from ldiv_polars.models import KAnonymity, TCloseness
        >>> KAnonymity(2).achieved_value(3.0), TCloseness(0.2).achieved_value(0)
        (3, 0.0)
        """
        if raw is None:
            return None
        if self.integer_achieved and math.isfinite(raw):
            return int(raw)
        return float(raw)

    def uncertain(self) -> pl.Expr | None:
        """Per-class: the float statistic lies within its rounding bound of the threshold, so
        the float verdict may be wrong; such classes are decided by :meth:`decide`. Default:
        None (the verdict is exact: integer statistics)."""
        return None

    def decide(self, cls: ClassCounts, ref: Reference) -> tuple[bool, float]:
        """The exact verdict of one class and its value, correctly rounded but on the
        verdict's side of the threshold (see :func:`~ldiv_polars.models.exact.agreeing`), from
        its integer counts and the table distribution. Required when :meth:`uncertain` or
        :meth:`array_verdict` can mark a class uncertain. Default: raises
        NotImplementedError (no exact routine)."""
        raise NotImplementedError(f"{self.describe()} has no exact routine")

    def weight_uncertain(self) -> pl.Expr | None:
        """Per class (on the class rows): the float sum of sampling weights the verdict reads
        lies within its summation error bound of the threshold, so the verdict may depend on
        the order the engine added the weights in; such classes are decided by
        :meth:`decide_weight_sum` on the exact sum (:mod:`ldiv_polars.models.weight_exact`).
        Default: None (the model reads no weight sum)."""
        return None

    def decide_weight_sum(self, total: ExactSum) -> tuple[bool, float]:
        """The exact verdict of a class whose records' weights sum to ``total`` (exact,
        :class:`~ldiv_polars.models.weight_exact.ExactSum`) and
        its value, a float on the verdict's side of the threshold. Required when
        :meth:`weight_uncertain` is given. Default: raises NotImplementedError."""
        raise NotImplementedError(f"{self.describe()} reads no weight sum")

    def satisfied_by(self, achieved: float | int | None) -> bool:
        """The table-level form of the class test: whether a table whose achieved value is
        ``achieved`` satisfies the model (None: infinite or undefined). Consistent with the
        class verdicts wherever the achieved value is a sufficient statistic of the verdict.
        Default: not available (NotImplementedError)."""
        raise NotImplementedError(f"{self.describe()} has no table-level threshold test")

    def reason(self) -> pl.Expr:
        """A short string explaining a failing class (on the class rows)."""
        return pl.format(f"{self.describe()}: value {{}}", self.value())

    def describe(self) -> str:
        """The model with its parameters, e.g. ``k_anonymity(k=5)``."""
        inner = ", ".join(f"{k}={_fmt(v)}" for k, v in self.params().items())
        return f"{self.name}({inner})"

    def sources(self) -> tuple[str, ...]:
        """The files this model reads besides the table (a population table), for a writer
        to refuse to write over them (:func:`model_sources`); default none."""
        return ()

    # --- optional: what the search and the other engines ask the model ------------------------

    @property
    def min_class_size(self) -> int:
        """Every passing class has at least this many rows (a guaranteed lower bound, the
        model's k where it states one; default 1)."""
        return 1

    @property
    def count_bounds(self) -> tuple[int, int] | None:
        """``(min_size, min_distinct)`` when the verdict is exactly ``size >= min_size and
        distinct sensitive values >= min_distinct`` (0: no such bound), a form linear in the
        records that cell suppression's MILP formulates; default None (not of that form)."""
        return None

    def relaxation(self) -> Model | None:
        """A union-closed *necessary condition* of the model (a class passing the model passes
        it), for models that are not union-closed themselves: the search prunes with it under
        suppression. Default: None (no pruning)."""
        return None

    def suppression_floor(self, rows: EncodedRows, slack: float) -> np.ndarray | None:
        """Per class of ``rows`` (a node's whole roll-up, the table as reference): a lower bound
        (float, rows) of the records of the class that fail the model *however the class is
        split* — at every specialization of the node the class is a union of classes, and at
        least this many of its records lie in failing ones — when the reference distribution
        there (the retained rows) is within ``slack`` of the table's in total variation (the
        suppression limit's share of the rows). The search sums it over the classes: a node
        whose sum exceeds the limit fails, and so does every node below it
        (docs/anonymize.md, "Sound pruning with suppression").

        Default: the class's rows where the model is union-closed and fails it, or where its
        :meth:`relaxation` fails it (every part of such a class fails too); None when the model
        states neither (or the verdict has no array form)."""
        import numpy as np

        from ldiv_polars.models.encoded import class_verdict

        judge = self if self.union_closed else self.relaxation()
        if judge is None:
            return None
        ok = class_verdict(judge, rows)
        if ok is None:
            return None
        return np.where(ok, 0.0, rows.size.astype(np.float64))

    def tighter_floor(self, rows: EncodedRows, slack: float,
                      floor: np.ndarray) -> np.ndarray | None:
        """A tighter (costlier) :meth:`suppression_floor`, asked only when the cheap floors of a
        node do not decide it but could: per class of ``rows``, a lower bound of the same rows
        that is at least ``floor`` (this model's cheap floor), positive only where ``floor``
        is and never above the class's rows. Default: None (the cheap floor is all)."""
        return None

    def array_verdict(self, rows: EncodedRows) -> ClassVerdict | None:
        """The per-class verdict on integer-encoded rows, in numpy (for search loops): one
        entry per class of ``rows`` (classes with no rows pass), with the classes whose float
        statistic is within rounding of the threshold marked ``uncertain`` (decided by
        :meth:`decide`). Default: None, no array form; the search then asks
        :func:`evaluate_classes`."""
        return None

    def sql_call(self) -> SqlCall:
        """The DuckDB form of the model (see :class:`SqlCall`). Default: none (a typed
        error)."""
        raise NoSqlFormError(f"model {self.describe()} has no SQL form; use the Polars engine")

    @property
    def each_attribute(self) -> Model | None:
        """The single-attribute model this model applies to each sensitive column in turn,
        the others joining the quasi-identifier (multi-attribute l-diversity, Def 4.6); None
        for a model of one sensitive column (default)."""
        return None

    def __repr__(self) -> str:
        return self.describe()


def reason_param(v: object) -> str:
    """A parameter as a violation's reason writes it on every engine (as :meth:`Model.describe`
    does: an integral float without its ``.0``); the SQL macros' ``ldiv__reason_param``
    writes the same.

    An integral float of 1e15 or more is written as ``repr`` writes it (``1e+300``: its
    integer would have hundreds of digits, and SQL's integers stop at 64 bits).

    >>> reason_param(2.0), reason_param(0.25), reason_param(5), reason_param(1e300)
    ('2', '0.25', '5', '1e+300')
    """
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1e15:
        return repr(v)
    return _fmt(v)


def reason_number(value: pl.Expr) -> pl.Expr:
    """A measured value (non-negative) as a violation's reason writes it on every engine: six
    decimals, rounded half away from zero, ``inf`` when infinite; the SQL macros'
    ``ldiv__reason_number`` writes the same.

    >>> pl.select(reason_number(pl.lit(2 / 3))).item(), pl.select(reason_number(pl.lit(1e-5))).item()
    ('0.666667', '0.000010')
    """
    micro = (value * 1_000_000).round(0, mode="half_away_from_zero").cast(pl.Int64, strict=False)
    return pl.when(value.is_infinite()).then(pl.lit("inf")).otherwise(pl.format(
        "{}.{}", micro // 1_000_000, (micro % 1_000_000).cast(pl.String).str.zfill(6)))


def _fmt(v: object) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return repr(v) if not v.is_integer() else str(int(v))
    if isinstance(v, (list, tuple, set, frozenset)):
        return "+".join(sorted(str(x) for x in v))
    return str(v)


def model_sources(models: Iterable[Model]) -> tuple[str, ...]:
    """The files the ``models`` read besides the table (:meth:`Model.sources`), in order, each
    once: the inputs a writer must not overwrite along with the table's own."""
    return tuple(dict.fromkeys(p for m in models for p in m.sources()))


def value_col(m: Model) -> str:
    """The column of :func:`~ldiv_polars.models.evaluate_classes` holding ``m``'s per-class
    value (the exact one, agreeing with the verdict, for classes decided exactly)."""
    return m.col("value")


def __getattr__(name: str) -> Any:
    # evaluate_classes and reference_distribution moved to models/evaluate.py (aliases kept)
    # (and table_results, table_level_result to models/results.py): a module __getattr__
    # imports on access only, so these aliases add no import cycle (tests/test_import_cycles.py)
    if name in ("evaluate_classes", "reference_distribution"):
        from ldiv_polars.models import evaluate

        return getattr(evaluate, name)
    if name in ("table_results", "table_level_result"):
        from ldiv_polars.models import results

        return getattr(results, name)
    raise AttributeError(name)


@dataclass(frozen=True)
class ModelResult:
    """The verdict of one model on one table."""

    key: str
    model: str
    params: dict[str, object]
    passed: bool
    achieved: float | int | None
    """The table's achieved value (an int for k and distinct l; inf where unbounded)."""
    failing_classes: int
    failing_rows: int
    details: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The verdict as a JSON-ready dict, the one shape of a verdict on every surface (an
        entry of ``ldiv check --json``'s ``models``, of :meth:`CheckResult.to_dict`'s, of
        ``ldiv_polars.duckdb.check``'s list and of the report's ``verdicts``): ``key``,
        ``model``, ``params``, ``passed``, ``achieved`` (an infinite or NaN value becomes
        None), ``failing_classes``, ``failing_rows``, then the ``details``."""
        achieved = self.achieved
        if achieved is not None and (math.isinf(achieved) or math.isnan(achieved)):
            achieved = None
        return {
            "key": self.key,
            "model": self.model,
            "params": {k: (list(v) if isinstance(v, (set, frozenset, tuple)) else v)
                       for k, v in self.params.items()},
            "passed": self.passed,
            "achieved": achieved,
            "failing_classes": self.failing_classes,
            "failing_rows": self.failing_rows,
            **self.details,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelResult:
        """The verdict of a dict of :meth:`to_dict`'s shape (keys beyond its fields are
        ``details``; an achieved None stays None).

        >>> r = ModelResult("k_anonymity_2", "k_anonymity", {"k": 2}, True, 3, 0, 0)
        >>> ModelResult.from_dict(r.to_dict()) == r
        True
        """
        fields = ("key", "model", "params", "passed", "achieved", "failing_classes",
                  "failing_rows")
        return cls(*(d[f] for f in fields),  # type: ignore[arg-type]
                   details={k: v for k, v in d.items() if k not in fields})
