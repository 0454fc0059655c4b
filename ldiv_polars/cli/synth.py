"""``ldiv synth``: write the deterministic synthetic microdata to Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer



def register(app: typer.Typer) -> None:
    """Add the ``ldiv synth`` command (synthetic microdata to Parquet) to ``app``."""
    @app.command("synth")
    def synth_cmd(
        out: Annotated[Path, typer.Option(
            "--out", help="Parquet file to write (.parquet or .pq; its directory must exist)")],
        rows: Annotated[int, typer.Option("--rows", help="number of rows")] = 100_000,
        seed: Annotated[int, typer.Option("--seed", help="random seed")] = 0,
        chunk_rows: Annotated[int, typer.Option("--chunk-rows", help="rows per chunk")] = 1_000_000,
    ) -> None:
        """Generate census-like synthetic microdata (age, sex, race, zip, education, marital
        status, occupation, disease, income), chunk by chunk with bounded memory, written
        atomically."""
        from ldiv_polars.datasets.synth import write_synthetic
        path = write_synthetic(out, rows, seed, chunk_rows=chunk_rows)
        typer.echo(f"wrote {rows} rows to {path}")
