"""``ldiv report``: the HTML report of a table, or of a release beside its input (one
self-contained page; see :mod:`ldiv_polars.reporting` and docs/report.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import Stages, echo_json, split_columns
from ldiv_polars.cli._models import Requirements, RiskFlags
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    KOpt,
    LOpt,
    ModelOpt,
    NullsOpt,
    QiOpt,
    SensitiveOpt,
    TOpt,
    json_option,
    risk_options,
)

if TYPE_CHECKING:
    from ldiv_polars.models.base import Model
    from ldiv_polars.reporting import HtmlReport

InputArg = Annotated[Path, typer.Argument(help="input CSV or Parquet file (or glob)")]
OutOpt = Annotated[Path, typer.Option("--out", help="the report: a .html file")]
ReleaseOpt = Annotated[Path | None, typer.Option(
    "--release", help="the released (anonymized) table, reported beside the input")]
SeparatorOpt = Annotated[str | None, typer.Option(
    "--separator", help="CSV separator of the input")]
ReleaseSeparatorOpt = Annotated[str | None, typer.Option(
    "--release-separator", help="CSV separator of the release")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="the page's title")]
WeightOpt = Annotated[str | None, typer.Option(
    "--weight", help="column of sampling weights: adds sdcMicro's weighted risk (and is "
    "what --weighted-k reads)")]
JsonOpt = Annotated[bool, json_option(
    "print the verdicts as JSON (the page is written all the same)")]


def command_line() -> str:
    """The command line being run, quoted for a shell (shown on the report)."""
    return " ".join(shlex.quote(a) for a in ["ldiv", *sys.argv[1:]])


def register(app: typer.Typer) -> None:
    """Add ``ldiv report`` to ``app``."""
    app.command("report")(risk_options(report_cmd))


def report_cmd(
    path: InputArg, qi: QiOpt, sensitive: SensitiveOpt, out: OutOpt,
    release: ReleaseOpt = None, l: LOpt = None, k: KOpt = None, c: COpt = None,
    model: ModelOpt = None, t: TOpt = None, alpha: AlphaOpt = None, delta: DeltaOpt = None,
    separator: SeparatorOpt = None, release_separator: ReleaseSeparatorOpt = None,
    nulls: NullsOpt = "error", title: TitleOpt = None, as_json: JsonOpt = False,
    weight: WeightOpt = None, risk: RiskFlags = RiskFlags(),
) -> None:
    """Write one self-contained HTML page (no script, no network) with the verdicts, the
    risk, the population model (--population, --weight), the distributions and, with
    --release, the information loss. Exit 1 when a requested model fails on the release (on
    the input without --release)."""
    from ldiv_polars.cli.check import models_for
    from ldiv_polars.models.verdict import require_weights
    from ldiv_polars.reporting import report

    qi_cols = split_columns(qi, "--qi")
    req = Requirements.from_flags(k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta,
                                  risk=risk)
    models, summary_l = models_for(req, path, sensitive, separator)
    require_weights(models, weight)  # (--weight: the risk section's and --weighted-k's)
    with Stages("report") as say:
        page = report(str(path), qi_cols, sensitive, models,
                      release=None if release is None else str(release), out=out,
                      l=summary_l, nulls=nulls, separator=separator,  # type: ignore[arg-type]
                      release_separator=release_separator, title=title,
                      command=command_line(), progress=say,
                      population_size=risk.population, weight=weight)
    _show(page, models, out, as_json=as_json)
    if not page.passed:
        raise typer.Exit(1)


def _show(page: HtmlReport, models: list[Model], out: Path, *, as_json: bool) -> None:
    """The page's size and verdicts: JSON with ``as_json``, one line otherwise."""
    if as_json:
        echo_json({"out": str(out), "bytes": len(page.encode()), "passed": page.passed,
                   "verdict_on": page.verdict_on, "unjudged_rows": page.unjudged_rows,
                   "models": page.verdicts})
        return
    failing = [m.describe() for m, v in zip(models, page.verdicts) if not v["passed"]]
    verdict = (f"FAILS {', '.join(failing)}" if failing else
               "passes every requested model" if models else "(no model requested)")
    typer.echo(f"wrote {out} ({len(page.encode()) / 1024:,.0f} kB): the "
               f"{page.verdict_on} {verdict}")
