"""``ldiv apply-plan``: a site releases its rows under the aggregator's release plan
(``ldiv anonymize-counts``), atomically, and re-verifies its release against the plan
(docs/spark.md, "Federated counts")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ldiv_polars.cli._common import Stages, find_hierarchy, read_hierarchies, start_engine
from ldiv_polars.cli._options import (
    EngineOpt,
    json_option,
    HierarchiesDirOpt,
    HierarchySeparatorOpt,
    InputArg,
    OutArg,
    SparkMasterOpt,
    SparkRemoteOpt,
)
from ldiv_polars.errors import InvalidParameterError

PlanArg = Annotated[Path, typer.Argument(help="release plan (.json, from ldiv anonymize-counts)")]
JsonOpt = Annotated[bool, json_option(
    "print the release's figures as JSON: output, levels, suppressed_rows, mode, verified")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv apply-plan`` command (a site's release under a plan) to ``app``."""
    app.command("apply-plan")(apply_plan_cmd)


def apply_plan_cmd(
    path: InputArg, plan: PlanArg, out: OutArg, hierarchies: HierarchiesDirOpt,
    hierarchy_separator: HierarchySeparatorOpt = ";", engine: EngineOpt = "polars",
    spark_master: SparkMasterOpt = None, spark_remote: SparkRemoteOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Release the site's rows ``PATH`` under ``PLAN`` (each QI generalized to the plan's
    level, the plan's classes masked or dropped) to ``OUT``, atomically, then re-verify that
    the release is the plan applied to these rows (its class sizes against the rows'). That
    proves the site applied the plan faithfully; it cannot prove the models hold on the
    site's release alone (they hold on the union of the sites: the aggregator's check)."""
    from ldiv_polars.core.inputs import to_lazyframe
    from ldiv_polars.core.output import check_output, check_output_dir
    from ldiv_polars.search.anonymize import VerificationError
    from ldiv_polars.search.federated import ReleasePlan, release_site

    rp = ReleasePlan.from_json(_read_text(plan))
    columns = to_lazyframe(path).collect_schema().names()
    missing = [q for q in rp.qi if q not in columns]
    if missing:
        raise InvalidParameterError(f"the plan is for other columns: {', '.join(missing)} "
                                    f"not in {path.name}")
    files = {q: find_hierarchy(hierarchies, q) for q in rp.qi}
    (check_output_dir if engine == "spark" else check_output)(
        out, inputs=[path, plan, *files.values()])
    hs = read_hierarchies(files, hierarchy_separator)
    start_engine(engine, spark_master, spark_remote)
    with Stages("apply-plan") as say:
        say(f"releasing {path.name} ({engine}) and re-verifying it against the plan")
        try:
            suppressed = release_site(str(path), rp, hs, out, engine=engine)
        except VerificationError as exc:  # a bug, not bad input: no release is left
            if engine == "spark":  # (a local engine's release was never renamed into place)
                _remove(out)
            raise RuntimeError(f"re-verification failed, nothing written: {exc}") from None
    _show(out, rp.levels, suppressed, rp.mode, as_json=as_json)


def _show(out: Path, levels: dict[str, int], suppressed: int, mode: str, *,
          as_json: bool) -> None:
    """Print what was released: one line, or with ``as_json`` its figures as JSON (the
    release was re-verified against the plan, else nothing is printed)."""
    if as_json:
        import json

        typer.echo(json.dumps({"output": str(out), "levels": levels,
                               "suppressed_rows": suppressed, "mode": mode, "verified": True},
                              indent=2))
        return
    typer.echo(f"wrote {out}: levels {', '.join(f'{q}={v}' for q, v in levels.items())}; "
               f"{suppressed} rows suppressed ({mode}); release matches the plan")


def _read_text(path: Path) -> str:
    """The plan file's text; :class:`InputFormatError` when it cannot be read."""
    from ldiv_polars.errors import InputFormatError

    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"cannot read the plan {str(path)!r}: {exc}") from None


def _remove(out: Path) -> None:
    """Remove a written release (a file, or the Parquet directory Spark writes)."""
    import shutil

    if out.is_dir():
        shutil.rmtree(out)
    else:
        out.unlink(missing_ok=True)
