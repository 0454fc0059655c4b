"""``ldiv attack``: the minimality attack on a grouped release (Cormode et al. 2010)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.attacks import ALGORITHMS
from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.cli._options import SensitiveOpt, SeparatorOpt, json_option
from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
from ldiv_polars.errors import InvalidParameterError


ReleaseArg = Annotated[Path, typer.Argument(help="grouped release (CSV or Parquet): one row "
                                                "per tuple, rows in the grouper's order")]
GroupOpt = Annotated[str, typer.Option("--group", help="group id column")]
EnforcedLOpt = Annotated[float, typer.Option("--l", help="the l the grouper enforced")]
AlgorithmOpt = Annotated[str, typer.Option(
    "--algorithm", help=f"grouper: {', '.join(ALGORITHMS)}")]
PositiveOpt = Annotated[list[str] | None, typer.Option(
    "--positive", help="positive sensitive value(s): binary l-diversity")]
RequirementOpt = Annotated[str, typer.Option(
    "--requirement", help="without --positive: simple, distinct or entropy")]
POpt = Annotated[float, typer.Option("--p", help="RGG merge probability")]
GroupSizeOpt = Annotated[int, typer.Option("--k", help="minimum group size the grouper used")]
QiColumnsOpt = Annotated[str | None, typer.Option(
    "--qi", help="QI columns (mondrian-*), comma-separated")]
OrderOpt = Annotated[str | None, typer.Option(
    "--order", help="column giving the grouper's scan order (default: file order)")]
SamplesOpt = Annotated[int, typer.Option("--samples", help="Monte Carlo worlds per group")]
SeedOpt = Annotated[int, typer.Option("--seed", help="random seed")]
DetailsOpt = Annotated[bool, typer.Option("--details", help="per-group details")]
JsonOpt = Annotated[bool, json_option("print the report as JSON")]
REQUIREMENTS = ("simple", "distinct", "entropy")


def register(app: typer.Typer) -> None:
    """Add the ``ldiv attack`` command (minimality attack on a grouped release) to ``app``."""
    app.command("attack")(attack_cmd)


def attack_cmd(
    release: ReleaseArg, group: GroupOpt, sensitive: SensitiveOpt, l: EnforcedLOpt,
    algorithm: AlgorithmOpt = "gg", positive: PositiveOpt = None,
    requirement: RequirementOpt = "simple", p: POpt = 0.0, k: GroupSizeOpt = 1,
    qi: QiColumnsOpt = None, order: OrderOpt = None, samples: SamplesOpt = 4000,
    seed: SeedOpt = 0, details: DetailsOpt = False, separator: SeparatorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Minimality attack: per-tuple posterior, vulnerable fraction (posterior > 1/l) and max
    risk as a multiple of 1/l. Exit code 1 when some tuple is vulnerable."""
    from ldiv_polars.attacks.minimality import minimality_attack

    if algorithm not in ALGORITHMS:
        raise InvalidParameterError(
            f"--algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if requirement not in REQUIREMENTS:
        raise InvalidParameterError(
            f"--requirement must be simple, distinct or entropy, got {requirement!r}")
    with translate_input_errors(str(release)):
        lf = to_lazyframe(release, separator=separator)
        report = minimality_attack(
            lf, group=group, sensitive=sensitive, l=l,
            algorithm=algorithm,  # type: ignore[arg-type]
            positive=positive or None, p=p, k=k, qi=split_columns(qi, "--qi") or None,
            order=order, requirement=requirement,  # type: ignore[arg-type]
            samples=samples, seed=seed,
        )
    out = report.to_dict(details=details)
    if as_json:
        echo_json(out)
    else:
        _print(out, f"minimality attack on {release.name} ({algorithm}, l={l:g})",
               details=details)
    if report.vulnerable_groups:
        raise typer.Exit(1)


def _print(out: dict[str, object], title: str, *, details: bool) -> None:
    """The attack's statistics as a table and, with ``details``, its vulnerable groups."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=title)
    t.add_column("statistic")
    t.add_column("value", justify="right")
    for key in ("tuples", "groups", "vulnerable_fraction", "vulnerable_groups",
                "max_risk", "max_risk_times_l"):
        v = out[key]
        t.add_row(key, f"{v:.6g}" if isinstance(v, float) else str(v))
    console.print(t)
    if details:
        gt = Table(show_header=True)
        for c in ("group", "size", "max_risk_times_l", "vulnerable_tuples", "method"):
            gt.add_column(c)
        for g in out["group_details"]:  # type: ignore[attr-defined]
            if g["vulnerable"]:
                gt.add_row(str(g["group"]), str(g["size"]),
                           f"{g['max_risk_times_l']:.4g}", str(g["vulnerable_tuples"]),
                           str(g["method"]))
        console.print(gt)
