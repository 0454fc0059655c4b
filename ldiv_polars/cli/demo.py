"""``ldiv demo``: generate the built-in synthetic data, check it, anonymize it with the optimal
lattice search (k-anonymity + distinct l-diversity, 1% suppression), check the result again."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.errors import InvalidParameterError

QI = ["age", "sex", "zip"]
SENSITIVE = "disease"


def register(app: typer.Typer) -> None:
    """Add the ``ldiv demo`` command (synthesize, check, anonymize, re-check) to ``app``."""
    @app.command("demo")
    def demo_cmd(
        rows: Annotated[int, typer.Option("--rows", help="rows of demo data")] = 200_000,
        seed: Annotated[int, typer.Option("--seed", help="random seed")] = 0,
        k: Annotated[int, typer.Option("--k", help="k to require")] = 5,
        l: Annotated[int, typer.Option("--l", help="distinct l to require")] = 3,
    ) -> None:
        """Run the whole job on built-in demo data: synthesize, check, anonymize, re-check."""
        from rich.console import Console
        from ldiv_polars.cli.anonymize import demo_models, demo_step
        from ldiv_polars.cli.check import check_table, print_report
        from ldiv_polars.datasets.synth import write_synthetic
        if rows < 1:
            raise InvalidParameterError(f"--rows must be at least 1, got {rows}")
        console = Console()
        models = demo_models(k, l)
        with tempfile.TemporaryDirectory() as tmp:
            path = write_synthetic(Path(tmp) / "demo.parquet", rows, seed)
            console.print(f"[bold]Demo data[/bold]: {rows:,} synthetic census-like rows "
                          f"(seed {seed}) in {path.name}; QI = {', '.join(QI)}; "
                          f"sensitive = {SENSITIVE}\n")
            before, verdicts = check_table(path, QI, SENSITIVE, models, l=l)
            print_report(before, verdicts, models, console=console, title="Raw data")
            console.print()
            result = demo_step(path, QI, SENSITIVE, k, l, console=console)
            if not result.found:  # e.g. k above the rows: a model that cannot hold
                console.print(f"no generalization satisfies k={k}, distinct l={l} with at "
                              "most 1% of the rows suppressed")
                raise typer.Exit(1)
            after, verdicts = check_table(result.output, QI, SENSITIVE, models, l=l)
            console.print()
            print_report(after, verdicts, models, console=console,
                         title=f"After anonymization ({result.suppressed_rows:,} rows "
                               f"suppressed and dropped; output re-verified)")
