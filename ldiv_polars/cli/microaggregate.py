"""``ldiv microaggregate``: MDAV microaggregation of numeric QIs (k or p-probabilistic k)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.core import to_lazyframe
from ldiv_polars.errors import InputFormatError, InvalidParameterError
from ldiv_polars.microagg.aggregate import microaggregate_details


def _check_output(out: Path) -> str:
    suffix = out.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv", ".tsv", ".txt"):
        raise InputFormatError(
            f"cannot tell the output format of {str(out)!r}: use .csv or .parquet"
        )
    return suffix


def _sink(lf, out: Path, separator: str) -> None:  # type: ignore[no-untyped-def]
    suffix = _check_output(out)
    if suffix in (".parquet", ".pq"):
        lf.sink_parquet(out)
    else:
        lf.sink_csv(out, separator="\t" if suffix == ".tsv" else separator)


def register(app: typer.Typer) -> None:
    @app.command("microaggregate")
    def microaggregate_cmd(
        path: Annotated[Path, typer.Argument(help="input CSV or Parquet file")],
        out: Annotated[Path, typer.Argument(help="output .csv or .parquet")],
        columns: Annotated[str, typer.Option("--columns", help="numeric QIs, comma-separated")],
        k: Annotated[int, typer.Option("--k", help="minimum records per cell")],
        pi: Annotated[float | None, typer.Option("--pi", help="participation probability")] = None,
        pi_column: Annotated[
            str | None,
            typer.Option("--pi-column", help="column of per-record participation probabilities"),
        ] = None,
        p_bar: Annotated[
            float | None, typer.Option("--p-bar", help="acceptable cell failure")
        ] = None,
        cell_column: Annotated[
            str, typer.Option("--cell-column", help="name of the cell id column")
        ] = "cell",
        weights: Annotated[
            str | None,
            typer.Option("--weights", help="column of per-record pi (weighted centroids)"),
        ] = None,
        separator: Annotated[str | None, typer.Option("--separator", help="CSV separator")] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="print the run's figures as JSON")
        ] = False,
    ) -> None:
        """Replace the QIs by MDAV cell centroids (cells of k, or n_min under participation)."""
        cols = split_columns(columns, "--columns")
        _check_output(out)  # before any work
        lf = to_lazyframe(path, separator=separator)
        if pi is not None and pi_column is not None:
            raise InvalidParameterError("give --pi or --pi-column, not both")
        res = microaggregate_details(
            lf,
            cols,
            k=k,
            pi=pi_column if pi_column else pi,
            p_bar=p_bar,
            cell_column=cell_column,
            weights=weights,
        )
        _sink(res.frame, out, separator or ",")
        info = {**res.summary(), "output": str(out)}
        if as_json:
            echo_json(info)
        else:
            for key, v in info.items():
                typer.echo(f"{key:<22} {v:.6g}" if isinstance(v, float) else f"{key:<22} {v}")
