"""``ldiv plan``: plan the (l,delta) mechanism (Algorithm 1) over an ordered QI domain.

P_{Q,S} is estimated from a reference table (``PATH --qi --sensitive``) or taken from the
paper's §5 setting (``--paper uniform|geometric``). Give exactly one of ``--p``, ``--beta``
(p = beta p_l) or ``--budget`` (a sample budget N: the p maximizing the number of classes with
N(p) <= budget). ``--json`` prints ``p``, ``p_l``, ``beta``, ``m``, ``N``, ``classes``,
``class_bounds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.errors import InvalidParameterError


def register(app: typer.Typer) -> None:
    """Add the ``ldiv plan`` command (the (l,delta)-diversity mechanism plan) to ``app``."""
    @app.command("plan")
    def plan_cmd(
        path: Annotated[Path | None, typer.Argument(
            help="reference table (CSV or Parquet)")] = None,
        qi: Annotated[str | None, typer.Option("--qi", help="QI columns, comma-separated (their "
                                               "lexicographic order is the domain order)")] = None,
        sensitive: Annotated[str | None, typer.Option(
            "--sensitive", help="sensitive column")] = None,
        paper: Annotated[str | None, typer.Option(
            "--paper", help="use the paper's §5 setting: uniform or geometric")] = None,
        l: Annotated[int, typer.Option("--l", help="l of (l,delta)-diversity")] = 2,
        delta: Annotated[float, typer.Option("--delta", help="failure probability delta")] = 0.01,
        p: Annotated[str | None, typer.Option("--p", help="threshold p in (0, p_l]")] = None,
        beta: Annotated[str | None, typer.Option("--beta", help="p / p_l in (0, 1]")] = None,
        budget: Annotated[int | None, typer.Option("--budget", help="sample budget N")] = None,
        method: Annotated[str, typer.Option(
            "--method", help="greedy (Alg. 2) or ind (Alg. 3)")] = "greedy",
        separator: Annotated[str | None, typer.Option("--separator", help="CSV separator")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    ) -> None:
        """Plan Mech-(l,delta): classes, p, N (Algorithm 1 with Greedy-Generalize)."""
        from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
        from ldiv_polars.linkage.distribution import JointDistribution
        from ldiv_polars.linkage.mechanism import plan_mechanism

        if (path is None) == (paper is None):
            raise InvalidParameterError("give a reference table PATH or --paper, not both")
        if paper is not None:
            dist = JointDistribution.paper_setting(paper)  # type: ignore[arg-type]
        else:
            if not qi or not sensitive:
                raise InvalidParameterError("a reference table needs --qi and --sensitive")
            with translate_input_errors(str(path)):
                lf = to_lazyframe(str(path), separator=separator)
                dist = JointDistribution.from_frequency_set(lf, split_columns(qi, "--qi"),
                                                            sensitive)
        plan = plan_mechanism(dist, l, delta, p=p, beta=beta, budget=budget,
                              method=method)  # type: ignore[arg-type]
        out = plan.to_dict()
        if as_json:
            echo_json(out)
            return
        typer.echo(f"(l, delta) = ({plan.l}, {plan.delta}); |Q| = {dist.n_qi}, "
                   f"|S| = {dist.n_sensitive}")
        typer.echo(f"p = {out['p']:.6g}  p_l = {out['p_l']:.6g}  beta = {out['beta']:.6g}  "
                   f"m = {out['m']:.6g}")
        typer.echo(f"N = {plan.N} samples per data owner; {plan.classes} classes")
        for k, (first, last) in enumerate(out["class_bounds"][:20]):
            typer.echo(f"  class {k}: {first} .. {last}")
        if plan.classes > 20:
            typer.echo(f"  ... {plan.classes - 20} more")
