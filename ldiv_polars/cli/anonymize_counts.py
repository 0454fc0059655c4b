"""``ldiv anonymize-counts``: the aggregator's search on several sites' merged counts files
(``ldiv counts``), writing the release plan (levels and suppressed classes, JSON) that each
site applies to its rows with ``ldiv apply-plan`` (docs/spark.md, "Federated counts")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import Stages, find_hierarchy, read_hierarchies
from ldiv_polars.cli._models import Requirements, t_distance_of
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    HierarchiesDirOpt,
    HierarchySeparatorOpt,
    KOpt,
    LOpt,
    ModelOpt,
    TOpt,
)
from ldiv_polars.cli.anonymize import (
    JsonOpt,
    MetricOpt,
    ModeOpt,
    StrategyOpt,
    SuppressionOpt,
    _requested_models,
    _show,
)
from ldiv_polars.cli.check_counts import CountsArg

PlanOutOpt = Annotated[Path, typer.Option("--plan-out", help="release plan to write (.json)")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv anonymize-counts`` command (search on merged counts) to ``app``."""
    app.command("anonymize-counts")(anonymize_counts_cmd)


def anonymize_counts_cmd(
    counts: CountsArg, hierarchies: HierarchiesDirOpt, plan_out: PlanOutOpt,
    k: KOpt = None, l: LOpt = None, model: ModelOpt = None, c: COpt = None, t: TOpt = None,
    alpha: AlphaOpt = None, delta: DeltaOpt = None, suppression: SuppressionOpt = 0.0,
    metric: MetricOpt = None, mode: ModeOpt = "mask", strategy: StrategyOpt = "auto",
    hierarchy_separator: HierarchySeparatorOpt = ";", as_json: JsonOpt = False,
) -> None:
    """Find the least full-domain generalization of the union of the sites (their merged
    counts) satisfying the requirements, re-verify it on the merged counts, and write the
    release plan atomically. Exit 1 when no generalization satisfies them (no plan written);
    exit 2 when the counts files differ in their columns or levels."""
    from ldiv_polars.core.output import atomic_output, check_output
    from ldiv_polars.search.federated import anonymize_counts, read_counts

    started = time.perf_counter()
    fs, levels = read_counts(counts)  # the counts' roles, before any work
    dtype = fs.frame.collect_schema().get(fs.sensitive[0]) if fs.sensitive else None
    models = _requested_models(Requirements.from_flags(
        k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta), t_distance_of(dtype))
    files = {q: find_hierarchy(hierarchies, q) for q in fs.qi}
    check_output(plan_out, inputs=[*counts, *files.values()], suffixes=(".json",))
    hs = read_hierarchies(files, hierarchy_separator)
    with Stages("anonymize-counts") as say:
        say(f"searching the lattice on {len(counts)} merged counts files")
        result, plan = anonymize_counts([fs], hs, models, levels=levels,
                                        suppression=suppression, metric=metric or "aecs",
                                        suppression_mode=mode, strategy=strategy)
        if plan is not None:
            if result.verification is None or not result.verification.passed:
                raise RuntimeError("the optimum failed its re-verification on the merged counts")
            say(f"writing {plan_out}")
            with atomic_output(plan_out, inputs=[*counts, *files.values()],
                               suffixes=(".json",)) as out:
                Path(out.path).write_text(plan.to_json() + "\n", encoding="utf-8")
    _show(result, plan_out, as_json=as_json, wall_s=time.perf_counter() - started,
          exit_code=True)
