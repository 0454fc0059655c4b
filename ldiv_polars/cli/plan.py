"""``ldiv plan``: plan the (l,delta) mechanism (Algorithm 1) over an ordered QI domain.

P_{Q,S} is estimated from a reference table (``PATH --qi --sensitive``) or taken from the
paper's §5 setting (``--paper uniform|geometric``). Give exactly one of ``--p``, ``--beta``
(p = beta p_l) or ``--budget`` (a sample budget N: the p maximizing the number of classes with
N(p) <= budget). ``--json`` prints ``p``, ``p_l``, ``beta``, ``m``, ``N``, ``classes``,
``class_bounds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.cli._options import SeparatorOpt, json_option
from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:
    from ldiv_polars.linkage.distribution import JointDistribution


PathArg = Annotated[Path | None, typer.Argument(help="reference table (CSV or Parquet)")]
DomainQiOpt = Annotated[str | None, typer.Option(
    "--qi", help="QI columns, comma-separated (their lexicographic order is the domain order)")]
SensitiveColumnOpt = Annotated[str | None, typer.Option("--sensitive", help="sensitive column")]
PaperOpt = Annotated[str | None, typer.Option(
    "--paper", help="use the paper's §5 setting: uniform or geometric")]
PlanLOpt = Annotated[int, typer.Option("--l", help="l of (l,delta)-diversity")]
FailureOpt = Annotated[float, typer.Option("--delta", help="failure probability delta")]
POpt = Annotated[str | None, typer.Option("--p", help="threshold p in (0, p_l]")]
BetaOpt = Annotated[str | None, typer.Option("--beta", help="p / p_l in (0, 1]")]
BudgetOpt = Annotated[int | None, typer.Option("--budget", help="sample budget N")]
MethodOpt = Annotated[str, typer.Option("--method", help="greedy (Alg. 2) or ind (Alg. 3)")]
JsonOpt = Annotated[bool, json_option("print the plan as JSON")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv plan`` command (the (l,delta)-diversity mechanism plan) to ``app``."""
    app.command("plan")(plan_cmd)


def plan_cmd(
    path: PathArg = None, qi: DomainQiOpt = None, sensitive: SensitiveColumnOpt = None,
    paper: PaperOpt = None, l: PlanLOpt = 2, delta: FailureOpt = 0.01, p: POpt = None,
    beta: BetaOpt = None, budget: BudgetOpt = None, method: MethodOpt = "greedy",
    separator: SeparatorOpt = None, as_json: JsonOpt = False,
) -> None:
    """Plan Mech-(l,delta): classes, p, N (Algorithm 1 with Greedy-Generalize)."""
    from ldiv_polars.linkage.mechanism import plan_mechanism

    dist = _distribution(path, paper, qi, sensitive, separator)
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


def _distribution(path: Path | None, paper: str | None, qi: str | None,
                  sensitive: str | None, separator: str | None) -> JointDistribution:
    """P_{Q,S} of the reference table ``path`` (with ``qi`` and ``sensitive``) or of the
    paper's setting ``paper``: exactly one of the two."""
    from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
    from ldiv_polars.linkage.distribution import JointDistribution

    if (path is None) == (paper is None):
        raise InvalidParameterError("give a reference table PATH or --paper, not both")
    if paper is not None:
        return JointDistribution.paper_setting(paper)  # type: ignore[arg-type]
    if not qi or not sensitive:
        raise InvalidParameterError("a reference table needs --qi and --sensitive")
    with translate_input_errors(str(path)):
        lf = to_lazyframe(str(path), separator=separator)
        return JointDistribution.from_frequency_set(lf, split_columns(qi, "--qi"), sensitive)
