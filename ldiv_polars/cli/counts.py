"""``ldiv counts``: a site's frequency set, for a trusted aggregator that merges the counts of
several sites (``ldiv_polars.search.federated``; docs/spark.md, "Federated counts")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import (
    Stages,
    find_hierarchy,
    read_hierarchies,
    split_columns,
    start_engine,
)
from ldiv_polars.cli._options import (
    EngineOpt,
    HierarchySeparatorOpt,
    InputArg,
    NullsOpt,
    QiOpt,
    SensitivesOpt,
    SeparatorOpt,
    SparkMasterOpt,
    SparkRemoteOpt,
)
from ldiv_polars.errors import InvalidParameterError

OutOpt = Annotated[Path, typer.Option("--out", help="counts file to write (.parquet)")]
HierarchiesOpt = Annotated[Path | None, typer.Option(
    "--hierarchies", help="directory with <column>.csv or *_hierarchy_<column>.csv (for "
    "--levels)")]
LevelsOpt = Annotated[str | None, typer.Option(
    "--levels", help="count QIs generalized to these levels, e.g. zip=2,age=1 (coarser counts "
    "disclose less)")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv counts`` command (a frequency set written to Parquet) to ``app``."""
    app.command("counts")(counts_cmd)


def parse_levels(text: str | None) -> dict[str, int]:
    """``zip=2,age=1`` as ``{"zip": 2, "age": 1}``; :class:`InvalidParameterError` otherwise.

    >>> parse_levels("zip=2, age=1")
    {'zip': 2, 'age': 1}
    """
    out: dict[str, int] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        if not sep or not value.strip().isdigit():
            raise InvalidParameterError(f"--levels: expected column=level, got {part.strip()!r}")
        if name.strip() in out:
            raise InvalidParameterError(f"--levels: {name.strip()!r} given twice")
        out[name.strip()] = int(value)
    return out


def counts_cmd(
    path: InputArg, qi: QiOpt, out: OutOpt, sensitive: SensitivesOpt = None,
    hierarchies: HierarchiesOpt = None, levels: LevelsOpt = None,
    hierarchy_separator: HierarchySeparatorOpt = ";",
    separator: SeparatorOpt = None, nulls: NullsOpt = "error", engine: EngineOpt = "polars",
    spark_master: SparkMasterOpt = None, spark_remote: SparkRemoteOpt = None,
) -> None:
    """Write the frequency set of a table (its QI/sensitive columns and levels in the file's
    metadata): what a site sends to the trusted aggregator instead of its rows. Counts are
    disclosive themselves: send them to a trusted party only."""
    from ldiv_polars.core.output import check_output
    from ldiv_polars.search.federated import site_counts, write_counts

    qi_cols = split_columns(qi, "--qi")
    lv = parse_levels(levels)
    if lv and hierarchies is None:
        raise InvalidParameterError("--levels needs --hierarchies")
    start_engine(engine, spark_master, spark_remote)
    files = {q: find_hierarchy(hierarchies, q) for q in lv} if hierarchies else {}
    check_output(out, inputs=[path, *files.values()], suffixes=(".parquet", ".pq"))
    hs = read_hierarchies(files, hierarchy_separator)
    with Stages("counts") as say:
        say(f"counting {path.name} ({engine})")
        fs = site_counts(str(path), qi_cols, split_columns(sensitive, "--sensitive") or None,
                         hierarchies=hs, levels=lv, engine=engine, nulls=nulls,  # type: ignore[arg-type]
                         separator=separator)
        write_counts(fs, out, levels=lv, inputs=[path])
    typer.echo(f"wrote {fs.frame.collect().height} counts to {out}")
