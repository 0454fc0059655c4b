"""The options several ``ldiv`` commands declare the same way, as ``Annotated`` aliases (one
declaration, one help text): a command's signature reads ``qi: QiOpt`` instead of repeating the
``typer.Option``. An option whose help differs between commands keeps its own declaration in its
command's module (the help each command prints is part of its interface).

Model flags (``--k``, ``--l``, ``--model``, ``--c``, ``--t``, ``--alpha``, ``--delta``) are turned
into model objects by :mod:`ldiv_polars.cli._models`; a new model flag is declared here and
built there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ldiv_polars.cli._models import GROUPING_L_MODELS, L_MODELS, RiskFlags

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
TOpt = Annotated[float | None, typer.Option("--t", help="t-closeness: largest EMD allowed")]
AlphaOpt = Annotated[float | None, typer.Option(
    "--alpha", help="(alpha,k)-anonymity: largest share of one sensitive value in a class")]
DeltaOpt = Annotated[float | None, typer.Option(
    "--delta", help="delta-disclosure: bound on |ln(p(s|class) / p(s))|")]

# the risk thresholds (table-level models, cli/_models.py's RiskFlags)
AverageRiskOpt = Annotated[float | None, typer.Option(
    "--average-risk", help="average re-identification risk (classes / records) <= r")]
SampleUniquesOpt = Annotated[float | None, typer.Option(
    "--sample-uniques", help="share of records unique in the table <= x")]
PopulationUniquesOpt = Annotated[float | None, typer.Option(
    "--population-uniques", help="estimated share of population uniques <= x (with "
    "--population)")]
KMapOpt = Annotated[int | None, typer.Option(
    "--k-map", help="k-map: each class stands for >= k population records, estimated "
    "(ARX's k'; with --population)")]
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


def risk_flags(average_risk: float | None, sample_uniques: float | None,
               population_uniques: float | None, k_map: int | None, population: str | None,
               population_model: str | None, k_map_estimator: str | None,
               significance: float | None) -> RiskFlags:
    """The risk-threshold flags of a command as :class:`RiskFlags` (``--population``
    parsed: a number or a region, checked before any row is read)."""
    from ldiv_polars.cli.risk import parse_population

    return RiskFlags(average_risk, sample_uniques, population_uniques, k_map,
                     parse_population(population), population_model, k_map_estimator,
                     significance)


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
