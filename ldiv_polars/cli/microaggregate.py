"""``ldiv microaggregate``: MDAV microaggregation of numeric QIs (k or p-probabilistic k)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import Stages, echo_json, split_columns
from ldiv_polars.cli._options import InputArg, SeparatorOpt, json_option
from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
from ldiv_polars.core.output import atomic_output, check_output
from ldiv_polars.errors import InvalidParameterError


OutArg = Annotated[Path, typer.Argument(help="output .csv or .parquet")]
ColumnsOpt = Annotated[str, typer.Option("--columns", help="numeric QIs, comma-separated")]
CellSizeOpt = Annotated[int, typer.Option("--k", help="minimum records per cell")]
PiOpt = Annotated[float | None, typer.Option("--pi", help="participation probability")]
PiColumnOpt = Annotated[str | None, typer.Option(
    "--pi-column", help="column of per-record participation probabilities")]
PBarOpt = Annotated[float | None, typer.Option("--p-bar", help="acceptable cell failure")]
CellColumnOpt = Annotated[str, typer.Option("--cell-column", help="name of the cell id column")]
WeightsOpt = Annotated[str | None, typer.Option(
    "--weights", help="column of per-record pi (weighted centroids)")]
JsonOpt = Annotated[bool, json_option("print the run's figures as JSON")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv microaggregate`` command (MDAV cells, optionally under participation) to
    ``app``."""
    app.command("microaggregate")(microaggregate_cmd)


def microaggregate_cmd(
    path: InputArg, out: OutArg, columns: ColumnsOpt, k: CellSizeOpt, pi: PiOpt = None,
    pi_column: PiColumnOpt = None, p_bar: PBarOpt = None, cell_column: CellColumnOpt = "cell",
    weights: WeightsOpt = None, separator: SeparatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Replace the QIs by MDAV cell centroids (cells of k, or n_min under participation);
    the output is re-verified and written atomically."""
    from ldiv_polars.microagg.aggregate import microaggregate_details

    cols = split_columns(columns, "--columns")
    if pi is not None and pi_column is not None:
        raise InvalidParameterError("give --pi or --pi-column, not both")
    check_output(out, inputs=[path])  # before any work
    with translate_input_errors(str(path)), Stages("microaggregate") as say:
        say("building MDAV cells")
        lf = to_lazyframe(path, separator=separator)
        res = microaggregate_details(lf, cols, k=k, pi=pi_column if pi_column else pi,
                                     p_bar=p_bar, cell_column=cell_column, weights=weights)
    with atomic_output(out, inputs=[path], separator=separator) as written:
        written.write(res.frame)
        written.check_rows(int(res.mdav.labels.size))
    info = {**res.summary(), "output": str(out)}
    if as_json:
        echo_json(info)
    else:
        for key, v in info.items():
            typer.echo(f"{key:<22} {v:.6g}" if isinstance(v, float) else f"{key:<22} {v}")
