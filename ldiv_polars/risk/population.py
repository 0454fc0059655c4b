"""Population uniqueness estimated from a sample: Pitman, Zayatz, SNB and Dankar et al.'s
decision rule, with ARX's semantics (``RiskModelPopulationUniqueness``).

The figure is the estimated **fraction of the population's records that are unique** in the
population on the quasi-identifiers: the estimated number of population uniques divided by the
population size. It only needs the sample's frequency of frequencies (how many classes of each
size) and the population size, so it is computed on the small class-size table.

Conventions shared with ARX: a sample without sample uniques estimates 0 population uniques (for
every model); Dankar et al.'s rule (BMC Med Inform Decis Mak 12:66, 2012) takes Pitman's model
for a sampling fraction ``<= 0.1`` (Zayatz's when Pitman's has no solution), otherwise the
smaller of SNB and Zayatz (Zayatz when SNB has no solution). Unlike ARX, a model without an
admissible solution returns ``fraction=None`` and a ``reason``, never 0.

>>> import polars as pl
>>> sizes = {1: 60, 2: 20, 3: 10, 5: 4}          # 60 classes of size 1, 20 of size 2, ...
>>> r = population_uniqueness(sizes, population_size=10_000, model="zayatz")
>>> (r.model, r.used, r.sample_uniques, round(r.fraction, 4))
('zayatz', 'zayatz', 60, 0.1629)
>>> r = population_uniqueness(sizes, population_size=10_000)   # Dankar: f = 1.5% -> Pitman
>>> (r.used, round(r.fraction, 5))
('pitman', 0.00124)
>>> population_uniqueness(sizes, population_size="usa").population_size
317238626
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Literal

from ldiv_polars.core.inputs import TableLike
from ldiv_polars.core.validate import require_int_at_least, require_real
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.risk.estimate import Estimate
from ldiv_polars.risk.pitman import pitman
from ldiv_polars.risk.snb import snb
from ldiv_polars.risk.tables import RiskNullPolicy, SizeHistogram, SizesLike, class_table
from ldiv_polars.risk.zayatz import zayatz

UniquenessModel = Literal["pitman", "zayatz", "snb", "dankar"]

MODELS: dict[str, Callable[[SizeHistogram, int], Estimate]] = {
    "pitman": pitman,
    "zayatz": zayatz,
    "snb": snb,
}

DANKAR_PITMAN_LIMIT = 0.1
"""Dankar et al.'s rule uses Pitman's model up to this sampling fraction."""

REGIONS: dict[str, int] = {
    "africa": 1_100_000_000,
    "australia": 23_130_900,
    "europe": 740_000_000,
    "north_america": 565_265_000,
    "south_america": 385_742_554,
    "european_union": 507_420_000,
    "brasil": 202_656_788,
    "canada": 34_834_841,
    "china": 1_366_040_000,
    "france": 65_820_916,
    "germany": 80_767_000,
    "india": 1_210_569_573,
    "uk": 63_705_000,
    "usa": 317_238_626,
}
"""Population sizes of ARX's named regions (``ARXPopulationModel.Region``, ARX 3.9.2), by
lower-case name."""


@dataclass(frozen=True)
class PopulationUniqueness:
    """Estimated share of population-unique records.

    ``model`` is the model asked for, ``used`` the one whose estimate is reported (Dankar's rule
    picks one; ``None`` when no model applies). ``fraction`` is ``uniques / population_size``, or
    ``None`` with a ``reason``. ``estimates`` holds every model the answer consulted (its
    estimated number of uniques or ``None``) and ``params`` the fitted parameters of ``used``.
    """

    model: str
    used: str | None
    fraction: float | None
    uniques: float | None
    population_size: int
    sample_size: int
    sampling_fraction: float
    classes: int
    sample_uniques: int
    reason: str | None = None
    estimates: dict[str, float | None] = field(default_factory=dict)
    params: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The estimate as plain JSON values (every field, ``None`` where not estimated)."""
        return asdict(self)


def resolve_population(
    sample_size: int, population_size: int | str | None, sampling_fraction: float | None
) -> int:
    """The population size from exactly one of ``population_size`` (a number or a name of
    :data:`REGIONS`) and ``sampling_fraction`` (ARX: ``round(n / f)``); it must be at least the
    sample size. Raises :class:`InvalidParameterError` otherwise."""
    if (population_size is None) == (sampling_fraction is None):
        raise InvalidParameterError("give exactly one of population_size and sampling_fraction")
    if sampling_fraction is not None:
        f = require_real("sampling_fraction", sampling_fraction, low=0.0, high=1.0,
                         low_open=True)
        population = math.floor(sample_size / f + 0.5)  # Java's Math.round, as ARX
    elif isinstance(population_size, str):
        key = population_size.strip().lower().replace(" ", "_").replace("-", "_")
        if key not in REGIONS:
            raise InvalidParameterError(
                f"unknown population region {population_size!r} (known: {', '.join(REGIONS)})"
            )
        population = REGIONS[key]
    else:
        population = require_int_at_least("population_size", population_size, 1)
    if population < sample_size:
        raise InvalidParameterError(
            f"the population ({population}) is smaller than the sample ({sample_size} records)"
        )
    return population


def _dankar(h: SizeHistogram, population: int) -> tuple[str | None, dict[str, Estimate]]:
    """Dankar et al.'s decision rule (ARX's implementation): the chosen model and every
    estimate it consulted."""
    seen: dict[str, Estimate] = {}
    if h.records / population <= DANKAR_PITMAN_LIMIT:
        seen["pitman"] = pitman(h, population)
        if seen["pitman"].uniques:
            return "pitman", seen
        seen["zayatz"] = zayatz(h, population)
        return ("zayatz" if seen["zayatz"].uniques is not None else None), seen
    seen["snb"] = snb(h, population)
    seen["zayatz"] = zayatz(h, population)
    z, s = seen["zayatz"].uniques, seen["snb"].uniques
    if s and (z is None or s <= z):
        return "snb", seen
    return ("zayatz" if z is not None else None), seen


def population_uniqueness(
    table: TableLike | SizesLike,
    qi: str | Iterable[str] | None = None,
    *,
    population_size: int | str | None = None,
    sampling_fraction: float | None = None,
    model: UniquenessModel = "dankar",
    nulls: RiskNullPolicy = "error",
) -> PopulationUniqueness:
    """Estimated fraction of population-unique records (ARX's semantics, see the module).

    ``table`` is either a table of rows with ``qi`` naming its quasi-identifiers (the class sizes
    are then built by one engine group-by, nulls per ``nulls``; ``"wildcard"`` is not
    meaningful here and is treated as ``"value"``), or, with ``qi=None``, any
    :data:`~ldiv_polars.risk.tables.SizesLike` (a class-size table, a frequency-of-frequencies
    table or mapping, or the class sizes). The population is ``population_size`` (a number or
    a region name of :data:`REGIONS`, e.g. ``"usa"``) or ``sample size / sampling_fraction``.

    Raises :class:`InvalidParameterError` for an unknown model or region, a population smaller
    than the sample, or both/neither population arguments.
    """
    if model not in (*MODELS, "dankar"):
        raise InvalidParameterError(
            f"model must be one of 'pitman', 'zayatz', 'snb', 'dankar', got {model!r}"
        )
    if qi is not None:
        policy = "value" if nulls == "wildcard" else nulls
        table = class_table(table, qi, nulls=policy)  # type: ignore[arg-type]
    h = SizeHistogram.of(table)  # type: ignore[arg-type]
    n = h.records
    population = resolve_population(n, population_size, sampling_fraction)
    base = dict(model=model, population_size=population, sample_size=n,
                sampling_fraction=n / population, classes=h.n_classes,
                sample_uniques=h.of_size(1))
    if n == 0:
        return PopulationUniqueness(used=None, fraction=None, uniques=None,
                                    reason="the sample is empty", **base)  # type: ignore[arg-type]
    if h.of_size(1) == 0:  # ARX: no sample uniques, no population uniques
        return PopulationUniqueness(used=model, fraction=0.0, uniques=0.0, **base)  # type: ignore[arg-type]
    return _estimated(h, population, model, base)


def _estimated(h: SizeHistogram, population: int, model: str, base: dict[str, object]
               ) -> PopulationUniqueness:
    """The answer of :func:`population_uniqueness` once the sample has uniques: the model
    asked for (Dankar's rule picks one) and its estimate, or None with the reasons."""
    if model == "dankar":
        used, seen = _dankar(h, population)
    else:
        used, seen = model, {model: MODELS[model](h, population)}
    estimates = {name: est.uniques for name, est in seen.items()}
    if used is None or seen[used].uniques is None:
        reasons = "; ".join(f"{k}: {e.reason}" for k, e in seen.items() if e.reason)
        return PopulationUniqueness(used=None, fraction=None, uniques=None, reason=reasons,
                                    estimates=estimates, **base)  # type: ignore[arg-type]
    chosen = seen[used]
    uniques = float(chosen.uniques)  # type: ignore[arg-type]
    return PopulationUniqueness(used=used, fraction=uniques / population, uniques=uniques,
                                estimates=estimates, params=dict(chosen.params),
                                **base)  # type: ignore[arg-type]

