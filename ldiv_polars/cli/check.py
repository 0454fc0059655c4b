"""``ldiv check``: headline privacy statistics of a table, with the verdicts of the requested
models (built by :mod:`ldiv_polars.cli._models`, judged by the library's ``check`` on the same
frequency set: one pass over the rows for both)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import Stages, echo_json, split_columns, start_engine
from ldiv_polars.cli._models import Requirements, RiskFlags, build_models, t_distance_for
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    EngineOpt,
    KOpt,
    LOpt,
    ModelOpt,
    NullsOpt,
    QiOpt,
    SensitiveOpt,
    SeparatorOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    TOpt,
    json_option,
    SamplingWeightOpt,
    risk_options,
    weights_read,
)
from ldiv_polars.cli.risk import POPULATION_LABELS

if TYPE_CHECKING:
    from rich.console import Console

    from ldiv_polars.core.frequency import FrequencySet
    from ldiv_polars.core.inputs import TableLike
    from ldiv_polars.models.base import Model

EMPTY_NOTE = "the table is empty (a header and no rows): every model holds vacuously"


def check_table(data: TableLike, qi: list[str], sensitive: str, models: list[Model], *,
                l: int = 2, engine: str = "polars", separator: str | None = None,
                nulls: str = "error", population: int | str | None = None,
                weight: str | None = None
                ) -> tuple[dict[str, object], list[dict[str, object]]]:
    """The summary of ``data`` (:data:`~ldiv_polars.SUMMARY_KEYS`) and one verdict per model
    (``key``, ``model``, ``params``, ``passed``, ``achieved``, ``failing_classes``,
    ``failing_rows``), both from one frequency set built by one pass over the rows, in the
    Polars engine, DuckDB's (its SQL macros) or Spark's (its frequency set). With ``population`` (a size or a region), the summary also has
    the population figures (:data:`~ldiv_polars.models.risk.POPULATION_KEYS`), rolled up from
    the same frequency set (with DuckDB: from a second pass, by Polars). ``weight``: the
    column of sampling weights the frequency set also sums per class (for the models reading
    them; with DuckDB the frequency set is then DuckDB's, judged by Polars: the SQL macros read
    no weights)."""
    from ldiv_polars.models.base import ModelResult

    sql = engine == "duckdb" and weight is None
    if sql:
        from ldiv_polars.duckdb import report

        stats, rows = report(data, qi, sensitive, models, l, separator=separator,
                             nulls=nulls)  # type: ignore[arg-type]
        results = [ModelResult(m.key, m.name, m.params(), bool(r["passed"]),
                               r["achieved"], int(r["failing_classes"]),  # type: ignore[arg-type]
                               int(r["failing_rows"]),  # type: ignore[call-overload]
                               details={k: v for k, v in r.items() if k not in _SQL_ROW})
                   for m, r in zip(models, rows)]
    else:
        from ldiv_polars.core.engines.base import engine_for
        from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
        from ldiv_polars.models.verdict import WeightRows, check_frequency_set, check_models
        from ldiv_polars.table_summary import frequency_set_summary

        with translate_input_errors(data):
            fs = engine_for(data, engine).plan_frequency_set(
                data, qi, sensitive, nulls=nulls, separator=separator, require_sensitive=True,
                weight=weight)
            models = check_models(models, fs.sensitive)
            fs = fs.materialize()
        stats = frequency_set_summary(fs, l)
        exact = None if weight is None else WeightRows(  # weight sums near k: exact
            lambda: to_lazyframe(data, separator=separator), weight)
        with translate_input_errors(data):
            results = check_frequency_set(fs, models, weight_rows=exact).models
    if population is not None:
        stats |= _population_summary(data, qi, None if sql else fs, population,
                                     separator, nulls)
    return stats, [{"key": m.key, **m.to_dict()} for m in results]


_SQL_ROW = ("model", "key", "passed", "achieved", "failing_classes", "failing_rows")
"""The keys of a verdict of :func:`ldiv_polars.duckdb.report` that :class:`ModelResult` has
as fields; any other (``table_level``) is one of its ``details``."""


def _population_summary(data: TableLike, qi: list[str], fs: object, population: int | str,
                        separator: str | None, nulls: str) -> dict[str, object]:
    """The population figures from the frequency set ``fs`` (:func:`population_summary`),
    or, when ``fs`` is None (DuckDB), from a class-size table built by Polars."""
    from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
    from ldiv_polars.models.risk import population_figures
    from ldiv_polars.risk.tables import class_table

    if fs is not None:
        return population_summary(fs, population)  # type: ignore[arg-type]
    with translate_input_errors(data):
        sizes = class_table(to_lazyframe(data, separator=separator), qi,
                            nulls=nulls)  # type: ignore[arg-type]
    return population_figures(sizes, population)


def population_summary(fs: FrequencySet, population: int | str) -> dict[str, object]:
    """The population figures (:data:`~ldiv_polars.models.risk.POPULATION_KEYS`) of a
    frequency set's classes (its counts summed over the sensitive values), for a population
    of ``population`` (a size or a region): what ``check`` and ``check-counts`` add to the
    summary with ``--population``."""
    import polars as pl

    from ldiv_polars.core.frequency import COUNT
    from ldiv_polars.models.risk import population_figures

    sizes = fs.frame.lazy().group_by(list(fs.qi)).agg(pl.col(fs.count).sum()) \
        .select(pl.col(fs.count).alias(COUNT)).collect()
    return population_figures(sizes, population)


def models_for(req: Requirements, data: TableLike, sensitive: str, separator: str | None
               ) -> tuple[list[Model], int]:
    """The models a check's flags ask for (``--t`` with
    :func:`~ldiv_polars.cli._models.t_distance_for`'s distance)
    and the ``l`` of the summary's ``recursive_c``: the requested l when it is an integer,
    else 2."""
    distance = t_distance_for(req.t, data, sensitive, separator)
    return build_models(req, t_distance=distance), summary_l(req.l)


def summary_l(l: float | None) -> int:
    """The ``l`` of the summary's ``recursive_c``: the requested l when it is an integer in
    [1, :data:`~ldiv_polars.models.l_diversity.L_MAX`], else 2.

    >>> summary_l(3.0), summary_l(2.5), summary_l(None), summary_l(2e6)
    (3, 2, 2, 2)
    """
    from ldiv_polars.models.l_diversity import L_MAX

    if l is None or not float(l).is_integer() or not 1 <= l <= L_MAX:
        return 2
    return int(l)


TableArg = Annotated[Path, typer.Argument(help="CSV or Parquet file")]
PopulationOpt = Annotated[str | None, typer.Option(
    "--population", help="population size or region (usa, uk, ...): adds the "
    "estimated share of population uniques (Dankar et al.'s rule); the population of "
    "--population-uniques and --k-map")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv check`` command (summary and model verdicts of a table) to ``app``."""
    app.command("check")(risk_options(check_cmd))


def check_cmd(
    path: TableArg, qi: QiOpt, sensitive: SensitiveOpt, l: LOpt = None, k: KOpt = None,
    c: COpt = None, model: ModelOpt = None, t: TOpt = None, alpha: AlphaOpt = None,
    delta: DeltaOpt = None, separator: SeparatorOpt = None, engine: EngineOpt = "polars",
    nulls: NullsOpt = "error", spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None,
    as_json: Annotated[bool, json_option("print the summary and the verdicts as JSON")] = False,
    weight: SamplingWeightOpt = None, risk: RiskFlags = RiskFlags(),
) -> None:
    """Check a table: k, l (distinct/entropy/recursive), alpha, t, delta, risk and the risk
    thresholds, k on weights (--weighted-k with --weight), with a verdict per requested model.
    Exit 1 when a requested model fails."""
    qi_cols = split_columns(qi, "--qi")
    pop = risk.population
    start_engine(engine, spark_master, spark_remote)
    req = Requirements.from_flags(k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta,
                                  risk=risk)
    models, summary_l = models_for(req, path, sensitive, separator)
    weights_read(models, weight)
    with Stages("check") as say:
        say(f"reading {path.name} ({engine})")
        stats, verdicts = check_table(path, qi_cols, sensitive, models, l=summary_l,
                                      engine=engine, separator=separator, nulls=nulls,
                                      population=pop, weight=weight)
    emit(stats, verdicts, models, as_json=as_json,
         title=f"{path.name}: QI {', '.join(qi_cols)}; sensitive {sensitive}")


def emit(stats: dict[str, object], verdicts: list[dict[str, object]], models: list[Model], *,
         as_json: bool, title: str) -> None:
    """Print a check's summary and verdicts (JSON with ``as_json``, else
    :func:`print_report`'s tables under ``title``); raise ``typer.Exit(1)`` when a model
    fails."""
    passed = all(v["passed"] for v in verdicts)
    if as_json:
        echo_json({**stats, "passed": passed, "models": verdicts})
    else:
        print_report(stats, verdicts, models, title=title)
    if not passed:
        raise typer.Exit(1)


def _shown(v: object) -> str:
    return "—" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))


def print_report(stats: dict[str, object], verdicts: list[dict[str, object]],
                 models: list[Model], *, title: str, console: Console | None = None) -> None:
    """Readable rich tables of a summary and the models' verdicts (``verdicts[i]`` of
    ``models[i]``, as :func:`check_table` returns them)."""
    from ldiv_polars.table_summary import SUMMARY_KEYS, SUMMARY_LABELS
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key in SUMMARY_KEYS:
        table.add_row(SUMMARY_LABELS[key], _shown(stats[key]))
    for key, label in POPULATION_LABELS.items():
        if stats.get(key) is not None:
            table.add_row(label, _shown(stats[key]))
    console.print(table)
    if stats["rows"] == 0:
        console.print(f"[yellow]note[/yellow]: {EMPTY_NOTE}")
    if verdicts:
        vt = Table(show_header=True, header_style="bold")
        vt.add_column("model", overflow="fold", min_width=24)  # wraps, never cut
        for col, justify in (("achieved", "right"), ("failing\nclasses", "right"),
                             ("failing\nrows", "right"), ("verdict", "left")):
            vt.add_column(col, justify=justify)  # type: ignore[arg-type]
        for m, v in zip(models, verdicts):
            vt.add_row(m.describe(), _shown(v["achieved"]), str(v["failing_classes"]),
                       str(v["failing_rows"]),
                       "[green]pass[/green]" if v["passed"] else "[red]FAIL[/red]")
        console.print(vt)
