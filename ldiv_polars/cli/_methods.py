"""``ldiv anonymize --method cells|gencells|local|mondrian|auto`` and ``--compare``: the release
methods of :mod:`ldiv_polars.local.compare` on one input, the chosen release written atomically
and re-verified, with its figures (cells suppressed per QI, records touched, loss) and, with
``--compare`` or ``auto``, the comparison table of every method.

>>> parse_importance("age,sex")
['age', 'sex']
>>> parse_importance("age=3, sex=1.5")
{'age': 3.0, 'sex': 1.5}
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:
    from ldiv_polars.local.compare import MethodComparison, MethodOutcome
    from ldiv_polars.models.base import Model

CHOICES = ("global", "cells", "gencells", "local", "mondrian", "auto")
"""``--method``: the methods of :data:`ldiv_polars.local.compare.METHODS`, and ``auto``."""


def parse_importance(value: str | None) -> list[str] | dict[str, float] | None:
    """``--importance``: QIs from the most to the least important (``a,b,c``) or weights
    (``a=2,b=1``)."""
    if value is None:
        return None
    parts = split_columns(value, "--importance")
    if not any("=" in p for p in parts):
        return parts
    out: dict[str, float] = {}
    for p in parts:
        name, _, weight = p.partition("=")
        try:
            out[name.strip()] = float(weight)
        except ValueError:
            raise InvalidParameterError(
                f"--importance: give 'qi=weight' pairs or a list of QIs, got {p!r}") from None
    return out


def refuse_ignored(method: str, compare: bool, *, mode: str, strategy: str, no_verify: bool,
                   importance: str | None, semantics: str, exact: bool,
                   time_limit: float, budget: float | None = None) -> None:
    """A flag that the chosen method(s) would ignore is an error (before any work).

    >>> try:
    ...     refuse_ignored("global", False, mode="mask", strategy="auto", no_verify=False,
    ...                    importance="a,b", semantics="value", exact=False, time_limit=60.0)
    ... except InvalidParameterError as e:
    ...     print(e)
    --importance is for --method cells or gencells (or --compare, auto)
    """
    cells = compare or method in ("auto", "cells", "gencells")
    given = [flag for flag, on in (("--importance", importance is not None),
                                   ("--semantics", semantics != "value"),
                                   ("--exact", exact), ("--time-limit", time_limit != 60.0))
             if on]
    if given and not cells:
        raise InvalidParameterError(
            f"{'/'.join(given)} {'is' if len(given) == 1 else 'are'} for --method cells or "
            "gencells (or --compare, auto)")
    if method != "global" or compare:
        given = [flag for flag, on in (("--mode", mode != "mask"),
                                       ("--strategy", strategy != "auto"),
                                       ("--no-verify", no_verify),
                                       ("--budget", budget is not None)) if on]
        if given:
            raise InvalidParameterError(
                f"{'/'.join(given)} {'is' if len(given) == 1 else 'are'} for --method global "
                "without --compare (every other release is verified; compared releases mask "
                "suppressed rows)")


def _refuse_risk_models(models: list[Model], method: str, compare: bool) -> None:
    """Raise :class:`InvalidParameterError` for the risk models a method does not enforce:
    the risk thresholds and the models judged against a population table are enforced by
    the global search and mondrian, never by cell suppression or local recoding."""
    sized = [m.describe() for m in models
             if m.table_level or m.population_based or m.for_rows(1) is not m]
    if sized and (compare or method not in ("mondrian",)):
        raise InvalidParameterError(
            f"{', '.join(sized)}: the risk thresholds are enforced by the global search and "
            "--method mondrian, not by cell suppression or local recoding")


def run_methods(*, path: Path, out: Path, qi: list[str], sensitive: list[str],
                models: list[Model], hierarchies: dict[str, Any] | None, method: str,
                compare: bool, importance: str | None, semantics: str, exact: bool,
                time_limit: float, suppression: float, metric: str | None,
                separator: str | None, as_json: bool) -> None:
    """Run ``method`` (or every method, for ``auto`` or ``compare``), write the chosen release
    to ``out`` (atomic, re-verified) and report. Exit 1, nothing written, when the method (for
    ``auto``: every method) cannot meet the models; typed errors (exit 2) before any work."""
    from ldiv_polars.local.compare import (
        NEEDS_HIERARCHIES,
        MethodInputs,
        compare_inputs,
        run_method,
    )

    if method not in CHOICES:
        raise InvalidParameterError(f"--method must be one of {', '.join(CHOICES)}, "
                                    f"got {method!r}")
    if method in NEEDS_HIERARCHIES and hierarchies is None:
        raise InvalidParameterError(f"--method {method} needs --hierarchies")
    _refuse_risk_models(models, method, compare)
    if semantics != "value" and (compare or method not in ("cells", "gencells")):
        raise InvalidParameterError(
            "--semantics wildcard is for --method cells or gencells without --compare "
            "(a wildcard release is not comparable with the others: docs/local.md)")
    inputs = MethodInputs.build(
        str(path), qi, sensitive or None, models, hierarchies=hierarchies,
        importance=parse_importance(importance), semantics=semantics, exact=exact,
        time_limit=time_limit, suppression=suppression, metric=metric or "loss",
        separator=separator)
    comparison = compare_inputs(inputs) if compare or method == "auto" else None
    chosen = (comparison.chosen if method == "auto" else method) if comparison else method
    outcome = None if chosen is None else (
        comparison.outcomes[chosen] if comparison else run_method(inputs, chosen))
    if outcome is not None and outcome.meets:
        outcome.sink(out)
    if as_json:
        echo_json({"method": chosen, "written": str(out) if outcome and outcome.meets else None,
                   "verified": bool(outcome and outcome.meets),
                   "release": outcome.to_dict() if outcome else None,
                   "comparison": comparison.to_dict() if comparison else None})
    else:
        _print(comparison, outcome, out, qi)
    if outcome is None or not outcome.meets:
        raise typer.Exit(1)


def _print(comparison: MethodComparison | None, outcome: MethodOutcome | None, out: Path,
           qi: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if comparison is not None:
        cmp = Table(title=f"methods compared ({comparison.measure} per QI cell; * chosen)")
        for col in ("method", "status", "cells", "touched", "rows suppr.",
                    comparison.measure, "s"):
            cmp.add_column(col, justify="left" if col in ("method", "status") else "right",
                           no_wrap=True)
        notes = []
        for row in comparison.table().iter_rows(named=True):
            mark = " *" if row["method"] == comparison.chosen else ""
            cmp.add_row(row["method"] + mark, row["status"],
                        *(_fmt(row[c]) for c in ("cells_suppressed", "records_touched",
                                                 "records_suppressed")),
                        "—" if row[comparison.measure] is None
                        else f"{row[comparison.measure]:.4f}", f"{row['seconds']:.2f}")
            notes.append(f"{row['method']}: {row['detail']}")
        console.print(cmp)
        for note in notes:
            console.print(note, markup=False, highlight=False)
    if outcome is None:
        console.print("[red]no method meets the models: nothing written[/red]")
        return
    if not outcome.meets:
        console.print(f"[red]{outcome.method}: {outcome.reason}; nothing written[/red]")
        return
    t = Table(title=f"ldiv anonymize --method {outcome.method}", show_header=False)
    t.add_column("")
    t.add_column("", justify="right")
    for q in qi:
        t.add_row(f"cells suppressed: {q}", f"{outcome.cells_suppressed.get(q, 0):,}")
    t.add_row("records touched", _fmt(outcome.records_touched))
    t.add_row("records fully suppressed", _fmt(outcome.records_suppressed))
    t.add_row("loss (per QI cell)", f"{outcome.loss:.6f}")
    t.add_row("detail", outcome.detail)
    t.add_row("written", str(out))
    t.add_row("re-verified", "pass")
    t.add_row("elapsed", f"{outcome.elapsed_s:.3f} s")
    console.print(t)


def _fmt(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
