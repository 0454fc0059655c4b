"""``ldiv mondrian``: Mondrian multidimensional partitioning (strict or relaxed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import Stages, echo_json, split_columns
from ldiv_polars.cli._models import (
    GROUPING_L_MODELS,
    Requirements,
    RiskFlags,
    build_models,
    t_distance_for,
)
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    GroupingModelOpt,
    LOpt,
    QiOpt,
    SensitiveOpt,
    SeparatorOpt,
    TOpt,
    SamplingWeightOpt,
    json_option,
    risk_options,
    weights_read,
)

if TYPE_CHECKING:
    import polars as pl

    from ldiv_polars.models.base import Model
    from ldiv_polars.partition.mondrian import MondrianResult

InputArg = Annotated[Path, typer.Argument(help="input table (CSV or Parquet)")]
OutputArg = Annotated[Path, typer.Argument(help="output file (.csv or .parquet)")]
GroupSizeOpt = Annotated[int, typer.Option("--k", help="minimum group size")]
PositiveOpt = Annotated[list[str] | None, typer.Option(
    "--positive", help="positive value(s) for binary l-diversity")]
RelaxedOpt = Annotated[bool, typer.Option("--relaxed", help="even (relaxed) splits")]
RawOpt = Annotated[bool, typer.Option(
    "--raw", help="write raw rows + group id instead of generalized QIs")]
GroupOpt = Annotated[str, typer.Option("--group", help="name of the group id column")]
JsonOpt = Annotated[bool, json_option("print the summary as JSON")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv mondrian`` command (multidimensional partitioning) to ``app``."""
    app.command("mondrian")(risk_options(mondrian_cmd))


def mondrian_cmd(
    input: InputArg, output: OutputArg, qi: QiOpt, sensitive: SensitiveOpt, k: GroupSizeOpt,
    l: LOpt = None, model: GroupingModelOpt = None, c: COpt = None, t: TOpt = None,
    alpha: AlphaOpt = None, delta: DeltaOpt = None, positive: PositiveOpt = None,
    relaxed: RelaxedOpt = False, raw: RawOpt = False, group: GroupOpt = "group",
    separator: SeparatorOpt = None, as_json: JsonOpt = False,
    risk: RiskFlags = RiskFlags(), weight: SamplingWeightOpt = None,
) -> None:
    """Partition a table with Mondrian and write the generalized release (QI ranges /
    category sets, one group id per row). The output is re-verified, then written
    atomically. Exit 1 (nothing written) when the whole table fails a model. The risk
    thresholds limit the splits: the largest partitions split first, as long as they hold."""
    from ldiv_polars.core.output import atomic_output, check_output
    from ldiv_polars.models.base import model_sources

    qi_cols = split_columns(qi, "--qi")
    models = build_models(
        Requirements.from_flags(k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta,
                                positive=positive, risk=risk),
        choices=GROUPING_L_MODELS,
        t_distance=t_distance_for(t, input, sensitive, separator))
    weights_read(models, weight)  # (--weighted-k with --weight: F_k per group)
    inputs = [input, *model_sources(models)]  # (a population table)
    check_output(output, inputs=inputs)  # before any work
    result, df = _partition(input, qi_cols, sensitive, models, relaxed=relaxed, raw=raw,
                            group=group, separator=separator, as_json=as_json,
                            weight=weight)
    with atomic_output(output, inputs=inputs, separator=separator) as out:
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


def _partition(input: Path, qi: list[str], sensitive: str, models: list[Model], *,
               relaxed: bool, raw: bool, group: str, separator: str | None, as_json: bool,
               weight: str | None = None) -> tuple[MondrianResult, pl.DataFrame]:
    """Mondrian's partition of ``input`` and the release to write (raw rows with their group
    id, or the generalized QIs). When the whole table fails a model: says so (JSON with
    ``as_json``) and exits 1."""
    from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
    from ldiv_polars.partition.mondrian import PartitionInfeasibleError, mondrian

    with translate_input_errors(str(input)), Stages("mondrian") as say:
        say("partitioning")
        lf = to_lazyframe(input, separator=separator)
        try:
            result = mondrian(lf, qi, sensitive, models, relaxed=relaxed, group=group,
                              weight=weight)
        except PartitionInfeasibleError as exc:  # a model fails: exit 1, nothing written
            if as_json:
                echo_json({"feasible": False, "reason": str(exc), "output": None,
                           "models": [m.describe() for m in models]})
            else:
                typer.echo(f"mondrian: {exc}; nothing written")
            raise typer.Exit(1) from None
        say("generalizing and re-verifying the release")
        df = (result.frame if raw else result.generalized()).collect(engine="streaming")
    return result, df
