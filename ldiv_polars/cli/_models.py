"""Flags to privacy models: the one place where ``ldiv check``, ``ldiv anonymize`` and ``ldiv
mondrian`` turn ``--k``, ``--l``, ``--model``, ``--c``, ``--t``, ``--alpha``, ``--delta``,
``--positive`` and the risk thresholds (:class:`RiskFlags`) into the library's model objects (whose constructors validate every parameter,
exactly as the Python API does). A flag that would be silently ignored is an error instead.

>>> [m.describe() for m in build_models(Requirements(k=5, l=3, models=("entropy",)))]
['k_anonymity(k=5)', 'entropy_l(l=3)']
>>> try:
...     build_models(Requirements(c=3.0))
... except InvalidParameterError as e:
...     print(e)
--c needs --l (the l of the l-diversity model)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:
    from ldiv_polars.models.base import Model

L_MODELS = ("distinct", "entropy", "recursive")
"""The l-diversity models of ``--model`` in check and anonymize."""
GROUPING_L_MODELS = (*L_MODELS, "simple", "binary")
"""``--model`` in mondrian: also simple and binary l-diversity (``--positive``)."""


@dataclass(frozen=True)
class RiskFlags:
    """The risk-threshold flags of one command line (issue 19 item 5; None: not given):
    ``--average-risk``, ``--sample-uniques``, ``--population-uniques`` (with ``--population``
    and ``--population-model``), ``--k-map`` (estimated with ``--population``,
    ``--k-map-estimator``, ``--significance``; or against ``--population-table``) and
    ``--delta-presence`` (with ``--population-table``); ``--weighted-k`` (k-anonymity on the
    classes' sums of sampling weights, read from ``--weight``). ``population`` is parsed (a size or a
    region name), ``delta_presence`` is ``(min, max)``; ``separator`` is the command's
    ``--separator``, with which ``--population-table`` is read as the main table is."""

    average_risk: float | None = None
    sample_uniques: float | None = None
    population_uniques: float | None = None
    k_map: int | None = None
    population: int | str | None = None
    population_model: str | None = None
    k_map_estimator: str | None = None
    significance: float | None = None
    population_table: str | None = None
    delta_presence: tuple[float, float] | None = None
    separator: str | None = None
    weighted_k: int | None = None

    @property
    def empty(self) -> bool:
        """No risk threshold asked for."""
        return all(v is None for v in (self.average_risk, self.sample_uniques,
                                       self.population_uniques, self.k_map,
                                       self.delta_presence, self.weighted_k))

    def models(self) -> list[Model]:
        """The table-level risk models, k-map and delta-presence these flags ask for, in flag
        order. A companion flag without its model (``--population-model`` without
        ``--population-uniques``; ``--k-map-estimator``/``--significance`` without an
        estimated ``--k-map``; ``--population-table`` without ``--k-map`` or
        ``--delta-presence``) and a model without its population are refused
        (:class:`~ldiv_polars.errors.InvalidParameterError`). With ``--population-table``,
        ``--k-map`` is judged against that table (ARX's k-map with a population).

        >>> [m.describe() for m in RiskFlags(average_risk=0.1, k_map=5, population=1000
        ...                                  ).models()]
        ['average_risk(r=0.1)', 'k_map(k=5, population=1000, estimator=poisson, significance=0.01)']
        """
        from ldiv_polars import models as M

        self._refuse_orphans()
        out: list[Model] = []
        if self.average_risk is not None:
            out.append(M.AverageRisk(self.average_risk))
        if self.sample_uniques is not None:
            out.append(M.SampleUniques(self.sample_uniques))
        if self.population_uniques is not None:
            out.append(M.PopulationUniques(self.population_uniques, self._population("uniques"),
                                           self.population_model or "dankar"))
        if self.k_map is not None and self.population_table is not None:
            out.append(M.KMapPopulation(self.k_map, self._population_table()))
        elif self.k_map is not None:
            out.append(M.KMap(self.k_map, self._population("k-map"),
                              estimator=self.k_map_estimator or "poisson",
                              significance=0.01 if self.significance is None
                              else self.significance))
        if self.delta_presence is not None:
            if self.population_table is None:
                raise InvalidParameterError("--delta-presence needs --population-table (the "
                                            "population the table is a research subset of)")
            out.append(M.DeltaPresence(*self.delta_presence, self._population_table()))
        if self.weighted_k is not None:
            out.append(M.WeightedKAnonymity(self.weighted_k))
        return out

    def _population_table(self) -> object:
        """``--population-table`` read by the function and with the options that read the
        main table (:func:`~ldiv_polars.core.inputs.to_lazyframe`, ``--separator``)."""
        from ldiv_polars.core.inputs import to_lazyframe

        assert self.population_table is not None
        return to_lazyframe(self.population_table, separator=self.separator)

    def _population(self, flag: str) -> int | str:
        if self.population is None:
            raise InvalidParameterError(f"--{flag.replace('uniques', 'population-uniques')} "
                                        "needs --population (a size or a region)")
        return self.population

    def _refuse_orphans(self) -> None:
        if self.population_model is not None and self.population_uniques is None:
            raise InvalidParameterError("--population-model is the estimator of "
                                        "--population-uniques: add --population-uniques")
        estimated = self.k_map is not None and self.population_table is None
        for flag, v in (("--k-map-estimator", self.k_map_estimator),
                        ("--significance", self.significance)):
            if v is not None and not estimated:
                raise InvalidParameterError(
                    f"{flag} belongs to the estimated --k-map (with --population, without "
                    "--population-table)")
        if self.population_table is not None and self.k_map is None \
                and self.delta_presence is None:
            raise InvalidParameterError("--population-table is the population of --k-map or "
                                        "--delta-presence: add one of them")


@dataclass(frozen=True)
class Requirements:
    """The model flags of one command line (None / empty: not given)."""

    k: int | None = None
    l: float | None = None
    models: tuple[str, ...] = ()
    c: float | None = None
    t: float | None = None
    alpha: float | None = None
    delta: float | None = None
    positive: tuple[str, ...] = ()
    risk: RiskFlags = RiskFlags()

    @classmethod
    def from_flags(cls, *, k: int | None = None, l: float | None = None,
                   model: list[str] | None = None, c: float | None = None,
                   t: float | None = None, alpha: float | None = None,
                   delta: float | None = None, positive: list[str] | None = None,
                   risk: RiskFlags | None = None) -> Requirements:
        """The requirements of a command's model flags as typer passes them (a repeatable
        option not given is None).

        >>> Requirements.from_flags(k=5, model=None).models
        ()
        """
        return cls(k=k, l=l, models=tuple(model or ()), c=c, t=t, alpha=alpha, delta=delta,
                   positive=tuple(positive or ()), risk=risk or RiskFlags())

    @property
    def empty(self) -> bool:
        """No model asked for."""
        return all(v is None for v in (self.k, self.l, self.t, self.alpha, self.delta)) \
            and self.risk.empty


def t_distance_of(dtype: object) -> str:
    """The EMD distance ``--t`` means for a sensitive column of ``dtype`` (None: unknown), in
    every command, the one the summary's ``t`` reports: ordered for a numeric or temporal
    column, equal otherwise.

    >>> import polars as pl
    >>> t_distance_of(pl.Int64), t_distance_of(pl.String), t_distance_of(None)
    ('ordered', 'equal', 'equal')
    """
    from ldiv_polars.table_summary import is_ordered_dtype

    ordered = dtype is not None and is_ordered_dtype(dtype)  # type: ignore[arg-type]
    return "ordered" if ordered else "equal"


def t_distance_for(t: float | None, data: Any, sensitive: str | None,
                   separator: str | None) -> str:
    """The distance of ``--t`` (``t``; None: not asked): :func:`t_distance_of` the column
    ``sensitive`` of ``data`` (read from the schema, no rows), ``equal`` without ``--t`` or a
    sensitive column (nothing read). Raises the input errors of
    :func:`~ldiv_polars.core.inputs.to_lazyframe`."""
    from ldiv_polars.core.inputs import to_lazyframe

    if t is None or sensitive is None:
        return "equal"
    return t_distance_of(to_lazyframe(data, separator=separator).collect_schema().get(sensitive))


def build_models(req: Requirements, *, choices: tuple[str, ...] = L_MODELS,
                 t_distance: str = "equal") -> list[Model]:
    """The model objects ``req`` asks for, in the order k, l-diversity, alpha, t, delta, then
    the risk thresholds (:meth:`RiskFlags.models`).

    ``--l`` gives one model per ``--model`` (default ``distinct``, or ``binary`` with
    ``--positive``); ``--c`` belongs to ``recursive`` and ``--positive`` to ``binary``, and
    each is refused without its model (and the model without it); ``--model`` outside
    ``choices`` and ``--model``/``--c``/``--positive`` without ``--l`` are refused. ``--t``
    is t-closeness with ``t_distance``; ``--alpha`` is (alpha, 1)-anonymity (the share
    bound alone; ``--k`` gives the size bound). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError`.
    """
    from ldiv_polars import models as M

    out: list[Model] = []
    if req.k is not None:
        out.append(M.KAnonymity(req.k))
    out += _l_models(req, choices)
    if req.alpha is not None:
        out.append(M.AlphaKAnonymity(req.alpha, 1))
    if req.t is not None:
        out.append(M.TCloseness(req.t, t_distance))  # type: ignore[arg-type]
    if req.delta is not None:
        out.append(M.DeltaDisclosure(req.delta))
    return out + req.risk.models()


def _l_models(req: Requirements, choices: tuple[str, ...]) -> list[Model]:
    from ldiv_polars import models as M

    unknown = [m for m in req.models if m not in choices]
    if unknown:
        raise InvalidParameterError(
            f"--model must be one of {', '.join(choices)}, got {', '.join(map(repr, unknown))}")
    if req.l is None:
        given = [flag for flag, v in (("--model", req.models), ("--c", req.c),
                                      ("--positive", req.positive)) if v]
        if given:
            raise InvalidParameterError(
                f"{'/'.join(given)} need{'s' if len(given) == 1 else ''} --l (the l of the "
                "l-diversity model)")
        return []
    names = list(dict.fromkeys(req.models)) or (["binary"] if req.positive else ["distinct"])
    if req.c is not None and "recursive" not in names:
        raise InvalidParameterError(
            "--c is the c of recursive (c,l)-diversity: add --model recursive")
    if req.positive and "binary" not in names:
        raise InvalidParameterError(
            "--positive gives the positive values of binary l-diversity: add --model binary")
    out: list[Model] = []
    for name in names:
        if name == "distinct":
            out.append(M.DistinctLDiversity(req.l))  # type: ignore[arg-type]
        elif name == "entropy":
            out.append(M.EntropyLDiversity(req.l))
        elif name == "recursive":
            if req.c is None:
                raise InvalidParameterError("--model recursive needs --c")
            out.append(M.RecursiveCLDiversity(req.c, req.l))  # type: ignore[arg-type]
        elif name == "simple":
            out.append(M.simple_l_diversity(req.l))
        else:
            if not req.positive:
                raise InvalidParameterError("--model binary needs --positive")
            out.append(M.BinaryLDiversity(req.l, list(req.positive)))
    return out
