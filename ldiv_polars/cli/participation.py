"""``ldiv participation``: effective anonymity n_min and failure metrics (Algorithm A)."""

from __future__ import annotations

from typing import Annotated

import typer

from ldiv_polars.cli._common import echo_json

KEYS = ("n_min", "q_bar", "u", "r_bar", "r_bar_active", "t_bar")
_LABELS = {
    "n_min": "effective anonymity n_min (cell size)",
    "q_bar": "cell failure q_bar = P{0 < K < k}",
    "u": "unprotected records given failure u",
    "r_bar": "record failure r_bar",
    "r_bar_active": "record failure given participation r_bar'",
    "t_bar": "table failure t_bar",
}


def register(app: typer.Typer) -> None:
    """Add the ``ldiv participation`` command (cell size needed under random participation) to
    ``app``."""
    @app.command("participation")
    def participation_cmd(
        k: Annotated[int, typer.Option("--k", help="required anonymity among participants")],
        pi: Annotated[float, typer.Option("--pi", help="participation probability")],
        p_bar: Annotated[
            float, typer.Option("--p-bar", help="acceptable cell failure probability")
        ],
        n: Annotated[
            int | None, typer.Option("--N", help="table size: caps n_min, gives t_bar")
        ] = None,
        method: Annotated[
            str, typer.Option("--method", help="recursion, paper or binom")
        ] = "recursion",
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    ) -> None:
        """Cell size n_min so that a cell is k-anonymous with probability >= 1 - p_bar."""
        from ldiv_polars.microagg.participation import effective_anonymity
        r = effective_anonymity(k, pi, p_bar, n, method=method)  # type: ignore[arg-type]
        values = {key: getattr(r, key) for key in KEYS}
        if as_json:
            echo_json(
                {**values, "satisfied": r.satisfied, "k": r.k, "pi": pi, "p_bar": r.p_bar, "N": r.N}
            )
        else:
            for key in KEYS:
                v = values[key]
                shown = "-" if v is None else (str(v) if isinstance(v, int) else f"{v:.6g}")
                typer.echo(f"{_LABELS[key]:<45} {shown}")
            if not r.satisfied:
                typer.echo(f"warning: q_bar > p_bar; the table of N = {n} records is too small")
        if not r.satisfied:
            raise typer.Exit(1)
