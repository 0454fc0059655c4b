"""``ldiv mondrian``: Mondrian multidimensional partitioning (strict or relaxed)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.cli._models import (
    GROUPING_L_MODELS,
    AlphaOpt,
    COpt,
    DeltaOpt,
    LOpt,
    Requirements,
    TOpt,
    build_models,
    model_option,
)


def register(app: typer.Typer) -> None:
    """Add the ``ldiv mondrian`` command (multidimensional partitioning) to ``app``."""
    @app.command("mondrian")
    def mondrian_cmd(
        input: Annotated[Path, typer.Argument(help="input table (CSV or Parquet)")],
        output: Annotated[Path, typer.Argument(help="output file (.csv or .parquet)")],
        qi: Annotated[str, typer.Option("--qi", help="quasi-identifiers, comma-separated")],
        sensitive: Annotated[str, typer.Option("--sensitive", help="sensitive column")],
        k: Annotated[int, typer.Option("--k", help="minimum group size")],
        l: LOpt = None,
        model: Annotated[list[str] | None, model_option(GROUPING_L_MODELS)] = None,
        c: COpt = None,
        t: TOpt = None,
        alpha: AlphaOpt = None,
        delta: DeltaOpt = None,
        positive: Annotated[list[str] | None, typer.Option(
            "--positive", help="positive value(s) for binary l-diversity")] = None,
        relaxed: Annotated[bool, typer.Option("--relaxed", help="even (relaxed) splits")] = False,
        raw: Annotated[bool, typer.Option(
            "--raw", help="write raw rows + group id instead of generalized QIs")] = False,
        group: Annotated[str, typer.Option(
            "--group", help="name of the group id column")] = "group",
        separator: Annotated[str | None, typer.Option("--separator", help="CSV separator")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    ) -> None:
        """Partition a table with Mondrian and write the generalized release (QI ranges /
        category sets, one group id per row). The output is re-verified, then written
        atomically. Exit 1 (nothing written) when the whole table fails a model."""
        from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
        from ldiv_polars.core.output import atomic_output, check_output
        from ldiv_polars.partition.mondrian import PartitionInfeasibleError, mondrian

        qi_cols = split_columns(qi, "--qi")
        models = build_models(
            Requirements(k=k, l=l, models=tuple(model or ()), c=c, t=t, alpha=alpha,
                         delta=delta, positive=tuple(positive or ())),
            choices=GROUPING_L_MODELS)
        check_output(output, inputs=[input])  # before any work
        with translate_input_errors(str(input)):
            lf = to_lazyframe(input, separator=separator)
            try:
                result = mondrian(lf, qi_cols, sensitive, models, relaxed=relaxed, group=group)
            except PartitionInfeasibleError as exc:  # a model fails: exit 1, nothing written
                if as_json:
                    echo_json({"feasible": False, "reason": str(exc), "output": None,
                               "models": [m.describe() for m in models]})
                else:
                    typer.echo(f"mondrian: {exc}; nothing written")
                raise typer.Exit(1) from None
            df = (result.frame if raw else result.generalized()).collect(engine="streaming")
        with atomic_output(output, inputs=[input], separator=separator) as out:
            out.write(df)
            out.check_rows(df.height)
        summary = {**result.to_dict(), "output": str(output),
                   "models": [m.describe() for m in models]}
        if as_json:
            echo_json(summary)
        else:
            typer.echo(f"mondrian ({'relaxed' if relaxed else 'strict'}): {result.groups} groups "
                       f"over {result.rows} rows, aecs {result.metrics['aecs']:.2f}, "
                       f"gcp {result.metrics['gcp']:.4f}, verified -> {output}")
