"""``ldiv anonymize``: optimal full-domain generalization (with suppression) of a table, written
to Parquet or CSV, with the search's figures (nodes checked, roll-ups, optimum, minimal nodes)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:  # rich is imported when something is printed (not in --json mode)
    from rich.console import Console

from ldiv_polars.cli._common import (
    Stages,
    echo_json,
    find_hierarchy,
    read_hierarchies,
    split_columns,
    start_engine,
)
from ldiv_polars.cli._models import Requirements, RiskFlags, build_models, t_distance_for
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    EngineOpt,
    HierarchySeparatorOpt,
    InputArg,
    KOpt,
    LOpt,
    ModelOpt,
    OutArg,
    QiOpt,
    TOpt,
    json_option,
    SensitivesOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
    SamplingWeightOpt,
    risk_options,
    weights_read,
)
from ldiv_polars.errors import InvalidParameterError


def demo_hierarchies(path: Path | str, qi: list[str]) -> dict[str, Any]:
    """Hierarchies for the synthetic demo data, built from its distinct values (one small pass):
    age -> 5/10/20-year intervals (bottom-coded below 20, top-coded from 80), zip -> right-to-left
    masking, any other column -> suppression only (value, ``*``)."""
    import polars as pl

    from ldiv_polars.core import to_lazyframe
    from ldiv_polars.hierarchy import Hierarchy, interval_hierarchy, masking_hierarchy

    lf = to_lazyframe(path)
    distinct = {c: lf.select(pl.col(c).unique().sort()).collect().to_series() for c in qi}
    out: dict[str, Any] = {}
    for c, values in distinct.items():
        if c == "age":
            out[c] = interval_hierarchy(values, [5, 10, 20], bottom=20, top=80, name=c)
        elif c == "zip":
            out[c] = masking_hierarchy(values, name=c)
        else:
            out[c] = Hierarchy([[v, "*"] for v in values.cast(pl.String).to_list()], name=c)
    return out


def demo_models(k: int, l: int) -> list[Any]:
    """The models of ``ldiv demo``: k-anonymity and distinct l-diversity."""
    from ldiv_polars.models import DistinctLDiversity, KAnonymity

    return [KAnonymity(k), DistinctLDiversity(l)]


def demo_step(path: Path | str, qi: list[str], sensitive: str, k: int, l: int,
              console: Console | None = None, suppression: float = 0.01) -> Any:
    """The ``ldiv demo`` anonymization step: optimal generalization for :func:`demo_models`
    (1% suppression, dropped; loss metric), printed with the search's figures; returns the
    :class:`~ldiv_polars.search.AnonymizationResult` (its ``output`` is the "after" table: the
    retained rows, exactly what was re-verified)."""
    from rich.console import Console

    from ldiv_polars.search import anonymize

    console = console or Console()
    hs = demo_hierarchies(path, qi)
    result = anonymize(path, qi, sensitive, hs, demo_models(k, l), suppression=suppression,
                       metric="loss", suppression_mode="drop")
    _print(result, None, console=console,
           title=f"Anonymized: optimal generalization for k={k}, distinct l={l}")
    return result


# the options of ldiv anonymize alone
HierarchiesOpt = Annotated[Path | None, typer.Option(
    "--hierarchies", help="directory with <column>.csv or *_hierarchy_<column>.csv "
    "(needed by --method global, gencells, local)")]
SuppressionOpt = Annotated[float, typer.Option(
    "--suppression", help="largest fraction of rows that may be suppressed")]
MetricOpt = Annotated[str | None, typer.Option(
    "--metric", help="aecs, discernibility, loss, precision, height, entropy, kl "
    "(default: aecs for --method global, else loss)")]
ModeOpt = Annotated[str, typer.Option(
    "--mode", help="suppressed rows: mask (QIs set to *) or drop")]
StrategyOpt = Annotated[str, typer.Option(
    "--strategy", help="auto, flash, exhaustive, bounded or anytime")]
BudgetOpt = Annotated[float | None, typer.Option(
    "--budget", help="seconds the anytime search may run (it reports its gap)")]
InputSeparatorOpt = Annotated[str | None, typer.Option(
    "--separator", help="input CSV separator")]
NoVerifyOpt = Annotated[bool, typer.Option(
    "--no-verify", help="skip re-verifying the output with the checker")]
JsonOpt = Annotated[bool, json_option("print the result as JSON")]
MethodOpt = Annotated[str, typer.Option(
    "--method", help="global (full-domain generalization), cells (cell suppression), "
    "gencells (generalization + cells), local (local recoding), mondrian, or auto "
    "(the least loss among those meeting the models)")]
CompareOpt = Annotated[bool, typer.Option(
    "--compare", help="run every method and print the comparison table")]
ImportanceOpt = Annotated[str | None, typer.Option(
    "--importance", help="cells: QIs most important first (a,b,c) or weights "
    "(a=2,b=1)")]
SemanticsOpt = Annotated[str, typer.Option(
    "--semantics", help="cells: a suppressed cell is a value of its own (value) or "
    "matches any value (wildcard)")]
ExactOpt = Annotated[bool, typer.Option(
    "--exact", help="cells: the exact MILP instead of the greedy")]
TimeLimitOpt = Annotated[float, typer.Option(
    "--time-limit", help="cells --exact: seconds for the MILP")]
ReportOpt = Annotated[Path | None, typer.Option(
    "--report", help="also write the HTML report of the release (see ldiv report)")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv anonymize`` command (full-domain generalization search) to ``app``."""
    app.command("anonymize")(risk_options(anonymize_cmd))


def anonymize_cmd(
    path: InputArg, out: OutArg, qi: QiOpt, hierarchies: HierarchiesOpt = None,
    sensitive: SensitivesOpt = None, k: KOpt = None, l: LOpt = None, model: ModelOpt = None,
    c: COpt = None, t: TOpt = None, alpha: AlphaOpt = None, delta: DeltaOpt = None,
    suppression: SuppressionOpt = 0.0, metric: MetricOpt = None, mode: ModeOpt = "mask",
    strategy: StrategyOpt = "auto", budget: BudgetOpt = None,
    separator: InputSeparatorOpt = None, hierarchy_separator: HierarchySeparatorOpt = ";",
    no_verify: NoVerifyOpt = False, as_json: JsonOpt = False, method: MethodOpt = "global",
    compare: CompareOpt = False, importance: ImportanceOpt = None,
    semantics: SemanticsOpt = "value", exact: ExactOpt = False, time_limit: TimeLimitOpt = 60.0,
    report: ReportOpt = None, risk: RiskFlags = RiskFlags(),
    engine: EngineOpt = "polars", spark_master: SparkMasterOpt = None,
    spark_remote: SparkRemoteOpt = None, weight: SamplingWeightOpt = None,
) -> None:
    """Find the least generalization satisfying the requirements and write the table
    (atomically, after re-verifying it). Exit 1 when no generalization satisfies them.
    ``--method``/``--compare``: cell suppression, local recoding, Mondrian (docs/local.md);
    ``--engine spark``: counted, released and re-verified by Spark (docs/spark.md);
    ``--weighted-k`` with ``--weight``: k on the classes' sums of sampling weights (the
    global search only)."""
    from ldiv_polars.cli._methods import refuse_ignored, run_methods

    started = time.perf_counter()
    qi_cols, s_cols = split_columns(qi, "--qi"), split_columns(sensitive, "--sensitive")
    models = _requested_models(Requirements.from_flags(
        k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta, risk=risk),
        t_distance_for(t, path, s_cols[0] if s_cols else None, separator))
    _refuse_weight(models, weight, method != "global" or compare)
    refuse_ignored(method, compare, mode=mode, strategy=strategy, no_verify=no_verify,
                   importance=importance, semantics=semantics, exact=exact,
                   time_limit=time_limit, budget=budget)
    _start_engine(engine, spark_master, spark_remote, (method, compare, report))
    hs = _checked_paths_and_hierarchies(
        path, out, qi_cols, s_cols, hierarchies, hierarchy_separator, report, models=models,
        global_search=(method, compare) == ("global", False), directory=engine == "spark")
    if method != "global" or compare:
        return run_methods(
            path=path, out=out, qi=qi_cols, sensitive=s_cols, models=models,
            hierarchies=hs or None, method=method, compare=compare, importance=importance,
            semantics=semantics, exact=exact, time_limit=time_limit,
            suppression=suppression, metric=metric, separator=separator, as_json=as_json)
    # re-verified while written (one pass over the input for both), not by anonymize()
    result = _search(path, qi_cols, s_cols, hs, models, suppression=suppression,
                     metric=metric or "aecs", suppression_mode=mode, strategy=strategy,
                     separator=separator, verify=False, budget=budget, engine=engine,
                     weight=weight)
    _write(result, out, verify=not no_verify, report=report, report_args=dict(
        data=str(path), qi=qi_cols, sensitive=s_cols[:1], models=models, hierarchies=hs,
        separator=separator, weight=weight))
    _show(result, out, as_json=as_json, wall_s=time.perf_counter() - started, exit_code=True)


def _start_engine(engine: str, master: str | None, remote: str | None,
                  method: tuple[str, bool, Path | None]) -> None:
    """Refuse ``--engine`` other than Polars with another method than the global search
    (``method``: ``--method``, ``--compare``, ``--report``), then start it
    (:func:`~ldiv_polars.cli._common.start_engine`)."""
    if engine != "polars" and (method[0] != "global" or method[1] or method[2] is not None):
        raise InvalidParameterError("--engine is available with --method global only, "
                                    "without --report")
    start_engine(engine, master, remote)


def _refuse_weight(models: list[Any], weight: str | None, other_method: bool) -> None:
    """``--weight`` without a model reading it, or such a model without it (as ``check``:
    :func:`~ldiv_polars.cli._options.weights_read`), and weights with another method than
    the global search (``other_method``: ``--method`` or ``--compare``) are refused
    (:class:`InvalidParameterError`)."""
    weights_read(models, weight)
    if weight is not None and other_method:
        raise InvalidParameterError("--weight/--weighted-k are enforced by --method global "
                                    "only, without --compare")


def _requested_models(req: Requirements, t_distance: str = "equal") -> list[Any]:
    """The models of the flags (``--t`` with ``t_distance``: the sensitive column's, as
    :func:`~ldiv_polars.cli._models.t_distance_of` says); at least one is required."""
    if req.empty:
        raise InvalidParameterError(
            "give at least one requirement: --k, --l, --t, --alpha, --delta, --average-risk, "
            "--sample-uniques, --population-uniques, --k-map, --delta-presence or "
            "--weighted-k")
    return build_models(req, t_distance=t_distance)


def _checked_paths_and_hierarchies(
        path: Path, out: Path, qi: list[str], s_cols: list[str], hierarchies: Path | None,
        separator: str, report: Path | None, *, global_search: bool,
        directory: bool = False, models: Sequence[Any] = ()) -> dict[str, Any]:
    """Check the output paths before any work (``out`` and ``--report`` write over no input:
    the table, the hierarchies, the files the ``models`` read such as a population table) and
    read one hierarchy per QI from the ``--hierarchies`` directory (empty without it).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when ``--report`` comes with
    another method than the global search or ``--hierarchies`` is missing for it.
    ``directory``: ``out`` is a Parquet directory (what Spark writes)."""
    from ldiv_polars.core.output import check_output, check_output_dir
    from ldiv_polars.models.base import model_sources

    if report is not None and not global_search:
        raise InvalidParameterError("--report is available with --method global only "
                                    "(run ldiv report on the release of another method)")
    if hierarchies is None and global_search:
        raise InvalidParameterError("--method global needs --hierarchies")
    files = {q: find_hierarchy(hierarchies, q) for q in qi} if hierarchies else {}
    inputs = model_sources(models)
    (check_output_dir if directory else check_output)(
        out, inputs=[path, *files.values(), *inputs])  # before any work
    _check_report_path(report, s_cols, [path, out, *files.values(), *inputs])
    return read_hierarchies(files, separator)


def _search(path: Path, qi: list[str], s_cols: list[str], hs: dict[str, Any],
            models: list[Any], **kwargs: Any) -> Any:
    """:func:`ldiv_polars.search.anonymize` with ``kwargs``, showing a progress bar on
    stderr when a person watches it (a terminal), a stage line otherwise."""
    from ldiv_polars.search import anonymize

    if kwargs.get("engine") == "polars":
        kwargs["engine"] = None  # (the default: Polars, with DuckDB counting big Parquet)
    if not sys.stderr.isatty():  # a progress bar (on stderr) only for a person watching
        with Stages("anonymize") as say:
            say("searching the lattice")
        return anonymize(str(path), qi, s_cols or None, hs, models, **kwargs)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), transient=True,
                  console=Console(stderr=True)) as bar:
        task = bar.add_task("searching the lattice", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return anonymize(str(path), qi, s_cols or None, hs, models, progress=progress,
                         **kwargs)


def _show(result: Any, out: Path, *, as_json: bool, wall_s: float,
          exit_code: bool = False) -> None:
    """The search's figures: JSON with ``--json``, a table otherwise; with ``exit_code``,
    exit 1 when no node satisfies the models."""
    if as_json:
        echo_json({**result.to_dict(), "wall_s": round(wall_s, 4)})
    else:
        _print(result, out, wall_s=wall_s)
    if exit_code and not result.found:
        raise typer.Exit(1)


def _check_report_path(report: Path | None, s_cols: list[str], inputs: list[Any]) -> None:
    """Check ``--report``'s path before any work (it needs exactly one sensitive column)."""
    if report is None:
        return
    if len(s_cols) != 1:
        raise InvalidParameterError("--report needs exactly one --sensitive column")
    from ldiv_polars.core.output import check_output
    from ldiv_polars.reporting import REPORT_SUFFIXES

    check_output(report, inputs=inputs, suffixes=REPORT_SUFFIXES)


def _write(result: Any, out: Path, *, verify: bool, report: Path | None,
           report_args: dict[str, Any]) -> None:
    """Write the release (re-verified with ``verify``) and, with ``report``, its HTML report
    (:func:`ldiv_polars.reporting.report` with ``report_args``), saying so on stderr."""
    with Stages("anonymize") as say:
        if result.output is not None:
            say(f"writing {out}" + (" and re-verifying it" if verify else ""))
            result.sink(out, verify=verify)
        if report is not None and result.found:
            from ldiv_polars.cli.report import command_line
            from ldiv_polars.reporting import report as html_report

            sensitive = report_args.pop("sensitive")[0]
            html_report(sensitive=sensitive, release=str(out), anonymization=result, out=report,
                        command=command_line(), progress=say, **report_args)


def _print(result: Any, out: Path | None, *, console: Console | None = None,
           title: str = "ldiv anonymize", wall_s: float | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_header=False)
    table.add_column("")
    table.add_column("", justify="right")
    table.add_row("lattice nodes", f"{result.lattice_size:,}")
    table.add_row("nodes checked", f"{result.checked:,}")
    table.add_row("roll-ups", f"{result.rollups:,}")
    table.add_row("strategy", result.strategy)
    if result.found:
        table.add_row("optimum", ", ".join(f"{q}={v}" for q, v in result.levels.items()))
        table.add_row(f"{result.metric}", f"{result.value:.6g}")
        if result.strategy == "anytime":
            table.add_row("lower bound", "—" if result.bound is None else f"{result.bound:.6g}")
            table.add_row("gap", "—" if result.gap is None else f"{result.gap:.2%}")
        table.add_row("classes", f"{result.classes:,}")
        table.add_row("suppressed rows",
                      f"{result.suppressed_rows:,} (limit {result.suppression_limit_rows:,}, "
                      f"{result.suppression_mode})")
        table.add_row("minimal nodes", f"not computed by {result.strategy} (--strategy flash "
                      f"or exhaustive lists them)" if result.minimal is None
                      else str(len(result.minimal)))
        if out is not None:
            table.add_row("written", str(out))
        if result.verification is not None:
            table.add_row("re-verified", "pass" if result.verification.passed else "FAIL")
    else:
        table.add_row("optimum", "[red]no node satisfies the requirements[/red]")
    table.add_row("elapsed (search)", f"{result.elapsed_s:.3f} s")
    if wall_s is not None:
        table.add_row("wall time (all, write and re-verification included)", f"{wall_s:.3f} s")
    console.print(table)
