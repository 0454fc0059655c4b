"""``ldiv check``: headline privacy statistics of a table, with verdicts for requested models."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.report import SUMMARY_KEYS, summary, verdicts

_LABELS = {
    "rows": "rows",
    "classes": "equivalence classes",
    "k": "k (smallest class)",
    "l_distinct": "distinct l (fewest values in a class)",
    "l_entropy": "entropy l (exp of smallest entropy)",
    "recursive_c": "recursive c needed (c must exceed)",
    "alpha": "alpha (largest share of one value)",
    "t": "t (largest EMD)",
    "delta": "delta (largest |ln p/q|; none = inf)",
    "prosecutor_max": "prosecutor risk, max",
    "prosecutor_avg": "prosecutor risk, average",
    "sample_uniques": "sample uniques (rows)",
}


def run_summary(path: str, qi: list[str], sensitive: str, l: int, engine: str,
                separator: str | None, nulls: str) -> dict[str, object]:
    if engine == "polars":
        return summary(path, qi, sensitive, l, nulls=nulls, separator=separator)  # type: ignore[arg-type]
    if engine == "duckdb":
        try:
            from ldiv_polars.duckdb import summary as duckdb_summary
        except ImportError as exc:  # pragma: no cover - the module ships with the package
            raise InvalidParameterError(f"the DuckDB engine is not available: {exc}") from exc
        return duckdb_summary(path, qi, sensitive, l, separator=separator, nulls=nulls)
    raise InvalidParameterError(f"--engine must be 'polars' or 'duckdb', got {engine!r}")


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check_cmd(
        path: Annotated[Path, typer.Argument(help="CSV or Parquet file")],
        qi: Annotated[str, typer.Option("--qi", help="quasi-identifiers, comma-separated")],
        sensitive: Annotated[str, typer.Option("--sensitive", help="sensitive column")],
        l: Annotated[int | None, typer.Option(
            "--l", help="required l (also the L of recursive_c)")] = None,
        k: Annotated[int | None, typer.Option("--k", help="required k")] = None,
        c: Annotated[float | None, typer.Option("--c", help="recursive (c,l): required c")] = None,
        model: Annotated[list[str] | None, typer.Option(
            "--model", help="l-diversity model(s) for --l: distinct, entropy, recursive")] = None,
        t: Annotated[float | None, typer.Option("--t", help="required t (t-closeness)")] = None,
        alpha: Annotated[float | None, typer.Option(
            "--alpha", help="largest allowed share")] = None,
        delta: Annotated[float | None, typer.Option(
            "--delta", help="delta-disclosure bound")] = None,
        separator: Annotated[str | None, typer.Option("--separator", help="CSV separator")] = None,
        engine: Annotated[str, typer.Option("--engine", help="polars or duckdb")] = "polars",
        nulls: Annotated[str, typer.Option(
            "--nulls", help="error, or value: null is a value")] = "error",
        as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    ) -> None:
        """Check a table: k, l (distinct/entropy/recursive), alpha, t, delta and risk."""
        qi_cols = split_columns(qi, "--qi")
        l_models = tuple(model or ["distinct"])
        for m in l_models:
            if m not in ("distinct", "entropy", "recursive"):
                raise InvalidParameterError(
                    f"--model must be distinct, entropy or recursive, got {m!r}")
        stats = run_summary(str(path), qi_cols, sensitive, l or 2, engine, separator, nulls)
        rows = verdicts(stats, k=k, l=l, l_models=l_models, c=c, t=t, alpha=alpha, delta=delta)
        if as_json:
            echo_json({key: stats[key] for key in SUMMARY_KEYS})
        else:
            print_report(stats, rows, title=f"{path.name}: QI {', '.join(qi_cols)}; "
                                           f"sensitive {sensitive}")
        if any(not ok for _, _, ok in rows):
            raise typer.Exit(1)


def print_report(stats: dict[str, object], rows: list[tuple[str, str, bool]], *,
                 title: str, console: Console | None = None) -> None:
    """Readable rich tables of a summary and its verdicts."""
    console = console or Console()
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key in SUMMARY_KEYS:
        v = stats[key]
        shown = "—" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
        table.add_row(_LABELS[key], shown)
    console.print(table)
    if rows:
        vt = Table(show_header=True, header_style="bold")
        vt.add_column("model")
        vt.add_column("requirement")
        vt.add_column("verdict")
        for name, req, ok in rows:
            vt.add_row(name, req, "[green]pass[/green]" if ok else "[red]FAIL[/red]")
        console.print(vt)
