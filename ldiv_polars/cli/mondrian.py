"""``ldiv mondrian``: Mondrian multidimensional partitioning (strict or relaxed)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.core.inputs import to_lazyframe
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)
from ldiv_polars.models.base import Model
from ldiv_polars.models.binary import BinaryLDiversity, simple_l_diversity
from ldiv_polars.partition.mondrian import mondrian

L_MODELS = ("distinct", "entropy", "recursive", "simple", "binary")


def build_models(k: int, l: float | None, model: list[str], c: float | None, t: float | None,
                 positive: list[str]) -> list[Model]:
    """The constraint list of ``ldiv mondrian`` from its options."""
    models: list[Model] = [KAnonymity(k)]
    for name in model:
        if name not in L_MODELS:
            raise InvalidParameterError(f"--model must be one of {', '.join(L_MODELS)}, "
                                        f"got {name!r}")
    if l is None:
        if model or positive or c is not None:
            raise InvalidParameterError("--model/--positive/--c need --l")
    else:
        names = model or (["binary"] if positive else ["distinct"])
        for name in names:
            if name == "distinct":
                models.append(DistinctLDiversity(int(l)) if float(l).is_integer()
                              else _bad_l(l))
            elif name == "entropy":
                models.append(EntropyLDiversity(l))
            elif name == "recursive":
                if c is None:
                    raise InvalidParameterError("--model recursive needs --c")
                models.append(RecursiveCLDiversity(c, int(l)))
            elif name == "simple":
                models.append(simple_l_diversity(l))
            else:
                if not positive:
                    raise InvalidParameterError("--model binary needs --positive")
                models.append(BinaryLDiversity(l, positive))
    if t is not None:
        models.append(TCloseness(t))
    return models


def _bad_l(l: float) -> Model:
    raise InvalidParameterError(f"distinct l-diversity needs an integer l, got {l}")


def register(app: typer.Typer) -> None:
    @app.command("mondrian")
    def mondrian_cmd(
        input: Annotated[Path, typer.Argument(help="input table (CSV or Parquet)")],
        output: Annotated[Path, typer.Argument(help="output file (.csv or .parquet)")],
        qi: Annotated[str, typer.Option("--qi", help="quasi-identifiers, comma-separated")],
        sensitive: Annotated[str, typer.Option("--sensitive", help="sensitive column")],
        k: Annotated[int, typer.Option("--k", help="minimum group size")],
        l: Annotated[float | None, typer.Option("--l", help="l for the l-diversity model")] = None,
        model: Annotated[list[str] | None, typer.Option(
            "--model", help=f"l-diversity model(s): {', '.join(L_MODELS)}")] = None,
        c: Annotated[float | None, typer.Option("--c", help="c of recursive (c,l)")] = None,
        t: Annotated[float | None, typer.Option("--t", help="t-closeness (equal distance)")] = None,
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
        category sets, one group id per row). The output is re-verified before writing."""
        suffix = output.suffix.lower()
        if suffix not in (".csv", ".parquet", ".pq"):
            raise InvalidParameterError(f"output must end in .csv or .parquet, got {output.name!r}")
        models = build_models(k, l, list(model or []), c, t, list(positive or []))
        lf = to_lazyframe(input, separator=separator)
        result = mondrian(lf, split_columns(qi, "--qi"), sensitive, models, relaxed=relaxed,
                          group=group)
        frame = result.frame if raw else result.generalized()
        df = frame.collect(engine="streaming")
        if suffix == ".csv":
            df.write_csv(output, separator=separator or ",")
        else:
            df.write_parquet(output)
        summary = {**result.to_dict(), "output": str(output),
                   "models": [m.describe() for m in models]}
        if as_json:
            echo_json(summary)
        else:
            typer.echo(f"mondrian ({'relaxed' if relaxed else 'strict'}): {result.groups} groups "
                       f"over {result.rows} rows, aecs {result.metrics['aecs']:.2f}, "
                       f"gcp {result.metrics['gcp']:.4f}, verified -> {output}")
