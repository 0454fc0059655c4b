"""``ldiv check-counts``: the aggregator's check of several sites' counts files (written by
``ldiv counts``), merged by summing: the summary and the verdicts of the union of the sites'
rows, without the rows (docs/spark.md, "Federated counts")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import Stages
from ldiv_polars.cli._models import Requirements, RiskFlags, build_models, t_distance_of
from ldiv_polars.cli._options import (
    AlphaOpt,
    COpt,
    DeltaOpt,
    KOpt,
    LOpt,
    ModelOpt,
    TOpt,
    json_option,
    risk_options,
    weights_read,
)

CountsArg = Annotated[list[Path], typer.Argument(help="counts files of the sites (.parquet)")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv check-counts`` command (verdicts of merged counts files) to ``app``."""
    app.command("check-counts")(risk_options(check_counts_cmd))


def check_counts_cmd(
    counts: CountsArg, l: LOpt = None, k: KOpt = None, c: COpt = None, model: ModelOpt = None,
    t: TOpt = None, alpha: AlphaOpt = None, delta: DeltaOpt = None,
    as_json: Annotated[bool, json_option("print the summary and the verdicts as JSON")] = False,
    risk: RiskFlags = RiskFlags(),
) -> None:
    """Check the union of the sites whose counts files are given: the summary and a verdict
    per requested model, as ``ldiv check`` gives for the whole table (the same model, risk
    and threshold flags; ``--population`` adds the population figures). Exit 1 when a model
    fails; exit 2 when the files differ in their columns or levels."""
    from ldiv_polars.cli.check import emit, population_summary, summary_l
    from ldiv_polars.models.verdict import check_frequency_set, check_models
    from ldiv_polars.search.federated import read_counts
    from ldiv_polars.table_summary import frequency_set_summary

    req = Requirements.from_flags(k=k, l=l, model=model, c=c, t=t, alpha=alpha, delta=delta,
                                  risk=risk)
    with Stages("check-counts") as say:
        say(f"merging {len(counts)} counts files")
        fs, _ = read_counts(counts)
        fs = fs.materialize()
        dtype = fs.frame.collect_schema().get(fs.sensitive[0]) if fs.sensitive else None
        models = check_models(build_models(req, t_distance=t_distance_of(dtype)), fs.sensitive)
        weights_read(models, None)  # a counts file holds no weights
        stats = frequency_set_summary(fs, summary_l(l))
        if risk.population is not None:
            stats |= population_summary(fs, risk.population)
        results = check_frequency_set(fs, models).models
    verdicts = [{"key": m.key, **m.to_dict()} for m in results]
    emit(stats, verdicts, models, as_json=as_json, title=f"{len(counts)} sites: QI "
         f"{', '.join(fs.qi)}; sensitive {', '.join(fs.sensitive)}")
