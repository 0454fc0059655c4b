"""Models judged against an explicit population table: k-map (Sweeney 2002; ARX ``KMap`` with a
population) and delta-presence (Nergiz, Atzori and Clifton 2007; ARX ``DPresence``).

The table checked is a sample (a research subset) of ``population``; both tables carry the
quasi-identifiers at the **same generalization**. Each class of the sample is matched with the
population records of the same key, counted by one ``group_by`` of the population (``check``),
or, in the lattice search, by rolling the population's encoded frequency set up to the node's
levels with the same hierarchies (:class:`~ldiv_polars.search.population.PopulationCounts`).
The verdict is the model's (:meth:`PopulationModel.class_ok`), whatever the engine:

- :class:`KMapPopulation`: a class fails iff its population count is below ``k``;
- :class:`DeltaPresence`: a class fails iff ``size / population count`` (IEEE division, as
  ARX) is outside ``[delta_min, delta_max]`` (a class absent from the population fails).

Only classes holding sample records are judged (they are the ones released). The DuckDB
form (:meth:`PopulationModel.sql_call`) is the macros ``ldiv__k_map_population_classes_x`` and
``ldiv__delta_presence_classes_x`` of ``sql/ldiv.sql`` (public: ``ldiv_k_map_population``,
``ldiv_delta_presence``; docs/sql.md).

>>> import polars as pl
>>> from ldiv_polars import check
>>> pop = pl.DataFrame({"zip": ["130"] * 3 + ["140"] * 5})
>>> sample = pl.DataFrame({"zip": ["130", "140", "140"]})
>>> check(sample, "zip", None, KMapPopulation(4, pop)).passed   # class 130: 3 < 4
False
>>> check(sample, "zip", None, DeltaPresence(0.3, 0.5, pop)).passed   # 1/3 and 2/5
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from ldiv_polars.core.validate import reject_nested, require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError, UnknownColumnError
from ldiv_polars.models.base import SIZE, ClassContext, Model, SqlCall

if TYPE_CHECKING:
    import numpy as np

    from ldiv_polars.core.frequency import FrequencySet


def check_population_columns(schema: pl.Schema, qi: Sequence[str]) -> None:
    """Raise :class:`UnknownColumnError` when a population table of ``schema`` lacks a QI
    column, :class:`InvalidParameterError` when one is a list, array or struct.

    >>> check_population_columns(pl.Schema({"zip": pl.String}), ["zip"])
    """
    names = schema.names()
    missing = [q for q in qi if q not in names]
    if missing:
        raise UnknownColumnError(missing, names)
    reject_nested(schema, qi, "the population table")


class PopulationModel(Model):
    """A per-class model reading each class's count in a population table (see the module).

    ``population`` is any table :func:`ldiv_polars.core.io.to_lazyframe` reads (a frame, a
    lazy frame, a path). Subclasses give :meth:`class_ok` (numpy) and :meth:`passes` (Polars)
    on the class size and the population count, the same comparison."""

    population_based: ClassVar[bool] = True
    needs_sensitive = False
    identity_only = True

    def __init__(self, population: Any) -> None:
        from ldiv_polars.core.inputs import to_lazyframe

        self.population: pl.LazyFrame = to_lazyframe(population)
        self.population_source: Any = population
        """The population as given (a path is read by the DuckDB engine itself)."""

    def sources(self) -> tuple[str, ...]:
        """The files of the population table (a path, or the scans of a LazyFrame)."""
        from ldiv_polars.core.inputs import input_paths

        return input_paths(self.population_source)

    @property
    def pop_col(self) -> str:
        """The per-class column holding the class's population count."""
        return self.col("population")

    def population_columns(self, qi: tuple[str, ...] | list[str]) -> None:
        """Raise :class:`UnknownColumnError` when the population table lacks a QI column,
        :class:`InvalidParameterError` when one is a list, array or struct (its keys are
        compared as strings)."""
        check_population_columns(self.population.collect_schema(), qi)

    def at_node(self, generalize: Callable[[pl.LazyFrame], pl.LazyFrame]) -> PopulationModel:
        """A copy whose population table is generalized by ``generalize`` (as the anonymized
        sample is), for re-verifying the output."""
        import copy

        out = copy.copy(self)
        out.population = generalize(self.population)
        out.population_source = out.population  # (the SQL form reads the generalized table)
        return out

    def validate(self, fs: FrequencySet) -> None:
        """The population table must hold every quasi-identifier of ``fs``."""
        self.population_columns(fs.qi)

    def aggs(self, ctx: ClassContext) -> list[pl.Expr]:
        return []

    def frames(self, ctx: ClassContext) -> list[pl.LazyFrame]:
        """Per class of the sample: its population count (0 when absent), the keys compared
        as strings (the sample's may be Enums or numbers, the population's anything)."""
        qi, names = list(ctx.qi), list(ctx.names or ctx.qi)
        self.population_columns(names)
        tmp = [f"__ldiv_pk{i}" for i in range(len(qi))]
        counts = self.population.group_by(
            [pl.col(q).cast(pl.String).alias(t) for q, t in zip(names, tmp)]
        ).agg(pl.len().cast(pl.Int64).alias(self.pop_col))
        keys = ctx.rows.select(qi).unique().with_columns(
            pl.col(q).cast(pl.String).alias(t) for q, t in zip(qi, tmp))
        joined = keys.join(counts, on=tmp, how="left", nulls_equal=True)
        return [joined.select(*qi, pl.col(self.pop_col).fill_null(0))]

    def class_ok(self, size: np.ndarray, population: np.ndarray) -> np.ndarray:
        """Per class (numpy): whether a class of ``size`` sample records and ``population``
        population records passes (the verdict :meth:`passes` states in Polars)."""
        raise NotImplementedError  # pragma: no cover - every subclass gives it

    def sql_call(self) -> SqlCall:
        """The DuckDB form: the per-class macro ``ldiv__<name>_classes_x`` with the model's
        parameters, the population table passed last (the macro counts it on the class key
        and joins the counts, keys compared as text: ``ldiv__population_x``)."""
        params = self.params()
        return SqlCall(f"ldiv__{self.name}_classes_x", tuple(params.values()),
                       spec={"model": self.name, **params}, population=self.population_source)


class KMapPopulation(PopulationModel):
    """k-map against a population table: every class of the sample matches at least ``k``
    records of ``population`` (ARX ``KMap`` with a population). Monotone and union-closed: a
    class's population count is the sum of its parts' (docs/risk.md).

    >>> import numpy as np
    >>> KMapPopulation(3, pl.DataFrame({"a": [1]})).class_ok(np.array([1, 2]), np.array([3, 2]))
    array([ True, False])
    """

    name = "k_map_population"
    monotone = True
    union_closed = True

    def __init__(self, k: int, population: Any) -> None:
        self.k = require_int_at_least("k", k, 1)
        super().__init__(population)

    def params(self) -> dict[str, object]:
        return {"k": self.k}

    def value(self) -> pl.Expr:
        return pl.col(self.pop_col)

    def passes(self) -> pl.Expr:
        return pl.col(self.pop_col) >= self.k

    def class_ok(self, size: np.ndarray, population: np.ndarray) -> np.ndarray:
        return population >= self.k

    def reason(self) -> pl.Expr:
        return pl.format(f"population count {{}} < k={self.k}", pl.col(self.pop_col))

    def satisfied_by(self, achieved: float | int | None) -> bool:
        return achieved is not None and achieved >= self.k


class DeltaPresence(PopulationModel):
    """delta-presence: every class of the sample (a research subset of ``population``) has
    ``delta_min <= size / population count <= delta_max`` (Nergiz et al. 2007; ARX
    ``DPresence``). Not monotone (``False``): merging a class above ``delta_max`` with one
    below ``delta_min`` can pass, and merging a passing class with a failing one can fail
    (docs/risk.md).

    >>> import numpy as np
    >>> m = DeltaPresence(0.2, 0.5, pl.DataFrame({"a": [1]}))
    >>> m.class_ok(np.array([1, 3, 1]), np.array([5, 4, 0])).tolist()
    [True, False, False]
    """

    name = "delta_presence"
    monotone = False
    union_closed = False
    higher_is_better = False

    def __init__(self, delta_min: float, delta_max: float, population: Any) -> None:
        self.delta_min = require_real("delta_min", delta_min, low=0.0, high=1.0)
        self.delta_max = require_real("delta_max", delta_max, low=0.0, high=1.0)
        if self.delta_min > self.delta_max:
            raise InvalidParameterError(
                f"delta_min {delta_min} must not exceed delta_max {delta_max}")
        super().__init__(population)

    def params(self) -> dict[str, object]:
        return {"delta_min": self.delta_min, "delta_max": self.delta_max}

    def value(self) -> pl.Expr:
        """Per class: size / population count (inf for a class absent from the population)."""
        pop = pl.col(self.pop_col)
        return pl.when(pop > 0).then(pl.col(SIZE) / pop).otherwise(float("inf"))

    def passes(self) -> pl.Expr:
        v = self.value()
        return (v >= self.delta_min) & (v <= self.delta_max)

    def class_ok(self, size: np.ndarray, population: np.ndarray) -> np.ndarray:
        import numpy as np

        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(population > 0, size / np.maximum(population, 1), np.inf)
        return (ratio >= self.delta_min) & (ratio <= self.delta_max)

    def reason(self) -> pl.Expr:
        return pl.format(f"size/population {{}} outside [{self.delta_min}, {self.delta_max}]",
                         self.value())

    def satisfied_by(self, achieved: float | int | None) -> bool:
        raise NotImplementedError(
            "delta-presence has two bounds: its verdict is per class, not one achieved value")


def population_models(models: list[Model] | tuple[Model, ...]) -> list[PopulationModel]:
    """The models among ``models`` judged against a population table."""
    return [m for m in models if m.population_based]  # type: ignore[misc]
