"""``ldiv report``: the HTML report of a table, or of a release beside its input (one
self-contained page; see :mod:`ldiv_polars.reporting` and docs/report.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import Stages, echo_json, split_columns
from ldiv_polars.cli._models import (
    L_MODELS,
    AlphaOpt,
    COpt,
    DeltaOpt,
    KOpt,
    LOpt,
    Requirements,
    TOpt,
    model_option,
)


def command_line() -> str:
    """The command line being run, quoted for a shell (shown on the report)."""
    return " ".join(shlex.quote(a) for a in ["ldiv", *sys.argv[1:]])


def register(app: typer.Typer) -> None:
    """Add ``ldiv report`` to ``app``."""

    @app.command("report")
    def report_cmd(
        path: Annotated[Path, typer.Argument(help="input CSV or Parquet file (or glob)")],
        qi: Annotated[str, typer.Option("--qi", help="quasi-identifiers, comma-separated")],
        sensitive: Annotated[str, typer.Option("--sensitive", help="sensitive column")],
        out: Annotated[Path, typer.Option("--out", help="the report: a .html file")],
        release: Annotated[Path | None, typer.Option(
            "--release", help="the released (anonymized) table, reported beside the input")
        ] = None,
        l: LOpt = None,
        k: KOpt = None,
        c: COpt = None,
        model: Annotated[list[str] | None, model_option(L_MODELS)] = None,
        t: TOpt = None,
        alpha: AlphaOpt = None,
        delta: DeltaOpt = None,
        separator: Annotated[str | None, typer.Option(
            "--separator", help="CSV separator of the input")] = None,
        release_separator: Annotated[str | None, typer.Option(
            "--release-separator", help="CSV separator of the release")] = None,
        nulls: Annotated[str, typer.Option(
            "--nulls", help="error, or value: null is a value")] = "error",
        title: Annotated[str | None, typer.Option("--title", help="the page's title")] = None,
        as_json: Annotated[bool, typer.Option(
            "--json", help="print the verdicts as JSON (the page is written all the same)")
        ] = False,
    ) -> None:
        """Write one self-contained HTML page (no script, no network) with the verdicts, the
        risk, the distributions and, with --release, the information loss. Exit 1 when a
        requested model fails on the release (on the input without --release)."""
        from ldiv_polars.cli.check import models_for
        from ldiv_polars.reporting import report

        qi_cols = split_columns(qi, "--qi")
        req = Requirements(k=k, l=l, models=tuple(model or ()), c=c, t=t, alpha=alpha,
                           delta=delta)
        models, summary_l = models_for(req, path, sensitive, separator)
        with Stages("report") as say:
            page = report(str(path), qi_cols, sensitive, models,
                          release=None if release is None else str(release), out=out,
                          l=summary_l, nulls=nulls, separator=separator,  # type: ignore[arg-type]
                          release_separator=release_separator, title=title,
                          command=command_line(), progress=say)
        passed = page.passed
        if as_json:
            echo_json({"out": str(out), "bytes": len(page.encode()), "passed": passed,
                       "verdict_on": page.verdict_on, "models": page.verdicts})
        else:
            failing = [m.describe() for m, v in zip(models, page.verdicts) if not v["passed"]]
            verdict = (f"FAILS {', '.join(failing)}" if failing else
                       "passes every requested model" if models else "(no model requested)")
            typer.echo(f"wrote {out} ({len(page.encode()) / 1024:,.0f} kB): the "
                       f"{page.verdict_on} {verdict}")
        if not passed:
            raise typer.Exit(1)
