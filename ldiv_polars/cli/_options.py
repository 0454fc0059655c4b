"""The options several ``ldiv`` commands declare the same way, as ``Annotated`` aliases (one
declaration, one help text): a command's signature reads ``qi: QiOpt`` instead of repeating the
``typer.Option``. An option whose help differs between commands keeps its own declaration in its
command's module (the help each command prints is part of its interface).

Model flags (``--k``, ``--l``, ``--model``, ``--c``, ``--t``, ``--alpha``, ``--delta``) are turned
into model objects by :mod:`ldiv_polars.cli._models`; a new model flag is declared here and
built there.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ldiv_polars.cli._models import GROUPING_L_MODELS, L_MODELS, RiskFlags
from ldiv_polars.errors import InvalidParameterError

# the input table and the columns
QiOpt = Annotated[str, typer.Option("--qi", help="quasi-identifiers, comma-separated")]
SensitiveOpt = Annotated[str, typer.Option("--sensitive", help="sensitive column")]
SensitivesOpt = Annotated[str | None, typer.Option(
    "--sensitive", help="sensitive column(s), comma-separated")]
SeparatorOpt = Annotated[str | None, typer.Option("--separator", help="CSV separator")]
NullsOpt = Annotated[str, typer.Option("--nulls", help="error, or value: null is a value")]
EngineOpt = Annotated[str, typer.Option("--engine", help="polars, duckdb or spark")]
SparkMasterOpt = Annotated[str | None, typer.Option(
    "--spark-master", help="with --engine spark: the Spark master (local[4], spark://host:7077, "
    "yarn; default: a local session)")]
SparkRemoteOpt = Annotated[str | None, typer.Option(
    "--spark-remote", help="with --engine spark: a Spark Connect URL (sc://host:15002)")]
InputArg = Annotated[Path, typer.Argument(help="input CSV or Parquet file")]

# the model flags (built into models by cli/_models.py)
KOpt = Annotated[int | None, typer.Option("--k", help="k-anonymity: every class has >= k rows")]
LOpt = Annotated[float | None, typer.Option(
    "--l", help="l of the l-diversity model(s) of --model (default: distinct)")]
COpt = Annotated[float | None, typer.Option(
    "--c", help="c of recursive (c,l)-diversity (with --l and --model recursive)")]
TOpt = Annotated[float | None, typer.Option(
    "--t", help="t-closeness: largest EMD allowed (ordered distance for a numeric or temporal "
    "sensitive column, equal distance otherwise)")]
AlphaOpt = Annotated[float | None, typer.Option(
    "--alpha", help="(alpha,1)-anonymity: largest share of one sensitive value in a class "
    "(with --k: (alpha,k)-anonymity, as the two models alpha_k(alpha, k=1) and k_anonymity)")]
DeltaOpt = Annotated[float | None, typer.Option(
    "--delta", help="delta-disclosure: bound on |ln(p(s|class) / p(s))|")]

# outputs and hierarchies
OutArg = Annotated[Path, typer.Argument(help="output .parquet or .csv")]
HierarchySeparatorOpt = Annotated[str, typer.Option(
    "--hierarchy-separator", help="separator of the hierarchy CSVs")]
HierarchiesDirOpt = Annotated[Path, typer.Option(
    "--hierarchies", help="directory with <column>.csv or *_hierarchy_<column>.csv")]

# the risk thresholds (table-level models, cli/_models.py's RiskFlags)
AverageRiskOpt = Annotated[float | None, typer.Option(
    "--average-risk", help="average re-identification risk (classes / records) <= r")]
SampleUniquesOpt = Annotated[float | None, typer.Option(
    "--sample-uniques", help="share of records unique in the table <= x")]
PopulationUniquesOpt = Annotated[float | None, typer.Option(
    "--population-uniques", help="estimated share of population uniques <= x (with "
    "--population)")]
KMapOpt = Annotated[int | None, typer.Option(
    "--k-map", help="k-map: each class stands for >= k population records: counted in "
    "--population-table, or estimated (ARX's k'; with --population)")]
PopulationOpt = Annotated[str | None, typer.Option(
    "--population", help="population size or region (usa, uk, ...) of the population "
    "models")]
PopulationModelOpt = Annotated[str | None, typer.Option(
    "--population-model", help="estimator of --population-uniques: pitman, zayatz, snb or "
    "dankar (default)")]
KMapEstimatorOpt = Annotated[str | None, typer.Option(
    "--k-map-estimator", help="k-map's estimator: poisson (default) or "
    "zero_truncated_poisson")]
SignificanceOpt = Annotated[float | None, typer.Option(
    "--significance", help="k-map's significance level (default 0.01)")]


PopulationTableOpt = Annotated[str | None, typer.Option(
    "--population-table", help="population table (CSV or Parquet, the same QI columns at the "
    "same generalization) of --k-map or --delta-presence")]
DeltaPresenceOpt = Annotated[str | None, typer.Option(
    "--delta-presence", help="delta-presence MIN,MAX: every class's share of its population "
    "class (with --population-table)")]

WeightedKOpt = Annotated[int | None, typer.Option(
    "--weighted-k", help="k-anonymity on F_k: every class's sum of sampling weights (its "
    "estimated population size) >= k (with --weight)")]
SamplingWeightOpt = Annotated[str | None, typer.Option(
    "--weight", help="column of sampling weights (finite, > 0) read by --weighted-k")]

RISK_OPTIONS: dict[str, Any] = {
    "population": PopulationOpt, "average_risk": AverageRiskOpt,
    "sample_uniques": SampleUniquesOpt, "population_uniques": PopulationUniquesOpt,
    "k_map": KMapOpt, "population_model": PopulationModelOpt,
    "k_map_estimator": KMapEstimatorOpt, "significance": SignificanceOpt,
    "population_table": PopulationTableOpt, "delta_presence": DeltaPresenceOpt,
    "weighted_k": WeightedKOpt,
}
"""The risk options every command enforcing or reporting risk declares (:func:`risk_options`),
by parameter name."""


def parse_population(value: str | None) -> int | str | None:
    """``--population``: a positive integer, or a region name of
    :data:`ldiv_polars.risk.REGIONS` (checked here, before any row is read). Raises
    :class:`~ldiv_polars.errors.InvalidParameterError` for a number below 1 or an unknown name."""
    if value is None:
        return None
    text = value.strip().replace("_", "").replace(",", "")
    if text.isdigit():
        if int(text) < 1:
            raise InvalidParameterError("--population must be at least 1")
        return int(text)
    from ldiv_polars.risk.population import REGIONS

    key = value.strip().lower().replace(" ", "_").replace("-", "_")
    if key not in REGIONS:
        raise InvalidParameterError(
            f"--population: {value!r} is neither a number nor a region "
            f"({', '.join(REGIONS)})")
    return key


def risk_flags(*, population: str | None = None, delta_presence: str | None = None,
               **flags: Any) -> RiskFlags:
    """The risk options of a command as :class:`RiskFlags` (``--population`` parsed: a
    number or a region; ``--delta-presence`` as ``MIN,MAX``; checked before any row is
    read).

    >>> risk_flags(k_map=3, population_table="pop.csv", delta_presence="0.1, 0.5")
    ... # doctest: +NORMALIZE_WHITESPACE
    RiskFlags(average_risk=None, sample_uniques=None, population_uniques=None, k_map=3,
              population=None, population_model=None, k_map_estimator=None,
              significance=None, population_table='pop.csv', delta_presence=(0.1, 0.5),
              separator=None, weighted_k=None)
    """
    bounds = None
    if delta_presence is not None:
        parts = delta_presence.split(",")
        try:
            bounds = (float(parts[0]), float(parts[1])) if len(parts) == 2 else None
        except ValueError:
            bounds = None
        if bounds is None:
            raise InvalidParameterError(
                f"--delta-presence must be MIN,MAX (two numbers), got {delta_presence!r}")
    return RiskFlags(population=parse_population(population), delta_presence=bounds, **flags)


def risk_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command whose ``risk`` parameter takes :class:`RiskFlags`: the command
    declares every option of :data:`RISK_OPTIONS` (keyword, default None) in its place, and
    is called with them read into ``risk`` (:func:`risk_flags`), with the command's
    ``separator`` (``--separator``, when it has one) for reading ``--population-table``. One
    declaration for every command (Typer reads the decorated signature)."""
    sig = inspect.signature(command, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "risk"]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                 annotation=ann) for name, ann in RISK_OPTIONS.items()]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        flags = {name: kwargs.pop(name, None) for name in RISK_OPTIONS}
        return command(*args, risk=risk_flags(separator=kwargs.get("separator"), **flags),
                       **kwargs)

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def weights_read(models: list[Any], weight: str | None) -> None:
    """Refuse ``--weight`` without a model reading weights (it would be silently ignored)
    and a model reading weights (``--weighted-k``) without ``--weight``
    (:class:`~ldiv_polars.errors.InvalidParameterError`, before any row is read)."""
    from ldiv_polars.models.verdict import require_weights

    if weight is not None and not any(m.needs_weight for m in models):
        raise InvalidParameterError("--weight is read by --weighted-k only: add --weighted-k")
    require_weights(models, weight)


def model_option(choices: tuple[str, ...]) -> Any:
    """The ``--model`` option (repeatable) listing ``choices``."""
    return typer.Option("--model", help=f"l-diversity model(s) for --l: {', '.join(choices)} "
                                        "(repeat the option for several)")


ModelOpt = Annotated[list[str] | None, model_option(L_MODELS)]
"""``--model`` of check, anonymize and report: distinct, entropy, recursive."""
GroupingModelOpt = Annotated[list[str] | None, model_option(GROUPING_L_MODELS)]
"""``--model`` of mondrian: also simple and binary l-diversity."""


def json_option(help: str) -> Any:
    """The ``--json`` flag with the command's own ``help`` (what it prints)."""
    return typer.Option("--json", help=help)
