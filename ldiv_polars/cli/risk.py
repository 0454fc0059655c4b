"""``ldiv risk``: disclosure-risk figures of a table from ONE pass over its rows (the class-size
table, with weight sums when ``--weight`` is given); every statistic after that works on that
small table (:mod:`ldiv_polars.risk`, definitions in docs/risk.md).

The command reports; it does not judge: exit 0 whatever the figures, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns, start_engine
from ldiv_polars.cli._options import (
    QiOpt,
    SeparatorOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    parse_population,
)
from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:
    import polars as pl

MODELS = ("dankar", "pitman", "zayatz", "snb")
NULLS = ("error", "value", "wildcard")

POPULATION_LABELS = {
    "population_size": "population size",
    "population_model": "population model used",
    "population_unique_share": "population uniques, share",
    "population_uniques": "population uniques, estimated",
    "population_reason": "population model: no estimate because",
}
"""Labels of :data:`ldiv_polars.models.risk.POPULATION_KEYS` (``ldiv risk`` and ``ldiv check``)."""

_LABELS = {
    "rows": "rows",
    "classes": "equivalence classes",
    "sample_uniques": "sample uniques (rows)",
    "prosecutor_max": "prosecutor risk, max",
    "prosecutor_avg": "prosecutor risk, average",
    "records_at_risk": "share of rows above the threshold",
    **POPULATION_LABELS,
    "individual_risk_max": "individual risk, max",
    "expected_reidentifications": "expected re-identifications",
    "global_risk": "global risk (share)",
}


def _check_choice(value: str, option: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidParameterError(f"{option} must be one of {', '.join(choices)}, got {value!r}")


def risk_figures(path: Path, qi: list[str], *, population: int | str | None, model: str,
                 weight: str | None, threshold: float | None, nulls: str, suda: bool,
                 attributes: bool, max_size: int | None, separator: str | None,
                 engine: str = "polars") -> dict[str, object]:
    """Every figure ``ldiv risk`` prints, as one JSON-ready dict (``profile``, and when asked
    ``individual``, ``suda``, ``attributes``). The class table is the one pass over the rows,
    by ``engine`` (Polars or Spark: :func:`~ldiv_polars.risk.tables.class_table`); every
    figure after it is computed from that table."""
    from ldiv_polars.core.inputs import translate_input_errors
    from ldiv_polars.models.risk import RiskReport, profile_classes
    from ldiv_polars.risk import WEIGHT, attribute_risks, individual_risk, suda2
    from ldiv_polars.risk.tables import class_table

    with translate_input_errors(path):
        table = class_table(path, qi, weight=weight, nulls=nulls,  # type: ignore[arg-type]
                            engine=engine, separator=separator)
    profile = RiskReport(**profile_classes(  # type: ignore[arg-type]
        table, threshold=threshold, population_size=population, model=model, weight=weight))
    out: dict[str, object] = {"qi": qi, "profile": profile.to_dict()}
    if weight is not None or nulls == "wildcard":
        out["individual"] = individual_risk(table, weight=WEIGHT if weight else None,
                                            threshold=threshold, nulls=nulls).to_dict()
    keys = table.drop(WEIGHT) if weight else table
    key_nulls = "value" if nulls != "error" else "error"
    if suda:
        out["suda"] = suda2(keys, max_size=max_size, nulls=key_nulls).to_dict()
    if attributes:
        out["attributes"] = attribute_risks(keys, max_size=max_size,
                                            nulls=key_nulls).to_dicts()
    return out


RiskEngineOpt = Annotated[str, typer.Option(
    "--engine", help="polars or spark: the engine of the one pass over the rows")]


def _check_bounds(max_size: int | None, threshold: float | None, top: int = 0) -> None:
    """``--max-size`` at least 1, ``--threshold`` within [0, 1], ``--top`` at least 0; else
    :class:`~ldiv_polars.errors.InvalidParameterError`."""
    if top < 0:
        raise InvalidParameterError(f"--top must be >= 0, got {top}")
    if max_size is not None and max_size < 1:
        raise InvalidParameterError("--max-size must be at least 1")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise InvalidParameterError("--threshold must be within [0, 1]")


def register(app: typer.Typer) -> None:
    """Add the ``ldiv risk`` command (disclosure-risk figures of a table) to ``app``."""
    @app.command("risk")
    def risk_cmd(
        path: Annotated[Path, typer.Argument(help="CSV or Parquet file")],
        qi: QiOpt,
        population: Annotated[str | None, typer.Option(
            "--population", help="population size, or a region (usa, uk, germany, ...): "
            "adds the estimated share of population uniques")] = None,
        model: Annotated[str, typer.Option(
            "--model", "--population-model",
            help="population-uniqueness model: dankar, pitman, zayatz, snb (--population-model "
                 "as in ldiv check)")
        ] = "dankar",
        weight: Annotated[str | None, typer.Option(
            "--weight", help="column of sampling weights: individual and global risk "
            "(sdcMicro)")] = None,
        threshold: Annotated[float | None, typer.Option(
            "--threshold", help="count the records whose risk exceeds this")] = None,
        suda: Annotated[bool, typer.Option("--suda", help="SUDA2 scores")] = False,
        attributes: Annotated[bool, typer.Option(
            "--attributes", help="rank the QI combinations by how well they identify")
        ] = False,
        max_size: Annotated[int | None, typer.Option(
            "--max-size", help="largest QI combination for --suda and --attributes")] = None,
        top: Annotated[int, typer.Option("--top", help="rows of --attributes shown")] = 15,
        separator: SeparatorOpt = None,
        nulls: Annotated[str, typer.Option(
            "--nulls", help="error; value: null is a value; wildcard: a null matches any "
            "value (individual risk, sdcMicro)")] = "error",
        as_json: Annotated[bool, typer.Option("--json", help="print the figures as JSON")] = False,
        engine: RiskEngineOpt = "polars", spark_master: SparkMasterOpt = None, spark_remote: SparkRemoteOpt = None,
    ) -> None:
        """Disclosure risk of a table: prosecutor/marketer risk, population uniqueness
        (--population), individual and global risk with sampling weights (--weight), SUDA2
        (--suda) and the identifying QI combinations (--attributes). Exit 0 (it reports)."""
        qi_cols = split_columns(qi, "--qi")
        start_engine(engine, spark_master, spark_remote, allowed=("polars", "spark"))
        _check_choice(model, "--model", MODELS)
        _check_choice(nulls, "--nulls", NULLS)
        pop = parse_population(population)
        _check_bounds(max_size, threshold, top)
        figures = risk_figures(path, qi_cols, population=pop, model=model, weight=weight,
                               threshold=threshold, nulls=nulls, suda=suda,
                               attributes=attributes, max_size=max_size, separator=separator,
                               engine=engine)
        if as_json:
            echo_json(figures)
        else:
            print_figures(figures, title=f"{path.name}: QI {', '.join(qi_cols)}", top=top)


def _shown(v: object) -> str:
    return "—" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))


def print_figures(figures: dict[str, object], *, title: str, top: int) -> None:
    """Readable rich tables of :func:`risk_figures`' result."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    profile: dict = figures["profile"]  # type: ignore[assignment]
    for key, label in _LABELS.items():
        if profile.get(key) is not None:
            table.add_row(label, _shown(profile[key]))
    individual: dict | None = figures.get("individual")  # type: ignore[assignment]
    if individual is not None:
        for key in ("expected_reidentifications", "global_risk", "max_risk",
                    "records_above", "risky_records", "global_threshold"):
            table.add_row(f"individual: {key.replace('_', ' ')}", _shown(individual[key]))
    console.print(table)
    if "suda" in figures:
        _print_suda(console, figures["suda"])  # type: ignore[arg-type]
    if "attributes" in figures:
        _print_attributes(console, figures["attributes"], top)  # type: ignore[arg-type]


def _print_suda(console: object, suda: dict) -> None:
    from rich.table import Table

    t = Table(title=f"SUDA2 (MSUs of up to {suda['max_size']} attributes): "
                    f"{suda['records_with_msus']} records with MSUs, max score "
                    f"{_shown(suda['max_score'])}", header_style="bold")
    t.add_column("attribute")
    t.add_column("contribution %", justify="right")
    for name, share in sorted(suda["attribute_contributions"].items(), key=lambda kv: -kv[1]):
        t.add_row(name, f"{share:.2f}")
    console.print(t)  # type: ignore[attr-defined]


def _print_attributes(console: object, rows: list[dict], top: int) -> None:
    from rich.table import Table

    t = Table(title=f"identifying QI combinations (top {min(top, len(rows))} of {len(rows)})",
              header_style="bold")
    for col in ("attributes", "unique share", "separation", "distinction"):
        t.add_column(col, justify="left" if col == "attributes" else "right")
    for row in rows[:top]:
        t.add_row(row["attributes"], _shown(row["unique_share"]), _shown(row["separation"]),
                  _shown(row["distinction"]))
    console.print(t)  # type: ignore[attr-defined]
