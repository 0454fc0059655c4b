"""``ldiv link``: the linkage attack across releases.

Each release is an anonymized table (``--release PATH``, class columns + sensitive column) with
its class map (``--mapping PATH``: the raw QI columns and the class columns, a class column named
like a QI column appearing as ``<name>_class``). With ``--target col=value,...`` the JSON is the
target's linkage (``target``, ``linkage``, ``diversity``); without it, every distinct QI vector
of ``--universe`` (default: the first mapping's raw vectors) is linked and the JSON gives
``l_t`` and the number of ``collapsed`` targets. ``--l`` makes the command exit 1 when the
(post-)linkage diversity is below l.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ldiv_polars.cli._common import echo_json, split_columns
from ldiv_polars.cli._options import SensitiveOpt, SeparatorOpt, json_option
from ldiv_polars.errors import InvalidParameterError

if TYPE_CHECKING:
    from ldiv_polars.linkage.attack import Linkage, PostLinkage
    from ldiv_polars.linkage.release import Release


def parse_target(text: str) -> dict[str, str]:
    """Parse ``--target col=value,...`` into a dict of column to value (strings, stripped).

    Raises :class:`~ldiv_polars.errors.InvalidParameterError` for a part without ``=`` or with
    an empty column name.

    >>> parse_target("age=30, sex=F")
    {'age': '30', 'sex': 'F'}"""
    out: dict[str, str] = {}
    for part in text.split(","):
        if "=" not in part:
            raise InvalidParameterError(f"--target: expected col=value, got {part!r}")
        k, v = part.split("=", 1)
        k = k.strip()
        if not k:
            raise InvalidParameterError(f"--target: empty column name in {text!r}")
        out[k] = v.strip()
    return out


ReleaseOpt = Annotated[list[Path], typer.Option("--release", help="anonymized table (repeat)")]
MappingOpt = Annotated[list[Path], typer.Option("--mapping", help="its class map (repeat)")]
RawQiOpt = Annotated[str, typer.Option("--qi", help="raw QI columns, comma-separated")]
ClassColumnsOpt = Annotated[str | None, typer.Option(
    "--class-columns", help="class columns of the tables (default: the QI names)")]
TargetOpt = Annotated[str | None, typer.Option("--target", help="col=value,... of one user")]
UniverseOpt = Annotated[Path | None, typer.Option("--universe", help="table of QI vectors")]
BoundOpt = Annotated[int | None, typer.Option("--l", help="exit 1 when diversity < l")]
JsonOpt = Annotated[bool, json_option("print JSON")]


def register(app: typer.Typer) -> None:
    """Add the ``ldiv link`` command (linkage of several releases) to ``app``."""
    app.command("link")(link_cmd)


def link_cmd(
    release: ReleaseOpt, mapping: MappingOpt, qi: RawQiOpt, sensitive: SensitiveOpt,
    class_columns: ClassColumnsOpt = None, target: TargetOpt = None,
    universe: UniverseOpt = None, l: BoundOpt = None, separator: SeparatorOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Link releases on a target (or on every QI vector) and report the diversity left."""
    from ldiv_polars.core.inputs import to_lazyframe, translate_input_errors
    from ldiv_polars.linkage.attack import link, post_linkage

    if len(release) != len(mapping):
        raise InvalidParameterError(
            f"{len(release)} --release but {len(mapping)} --mapping: give one map per release")
    if l is not None and l < 1:
        raise InvalidParameterError(f"--l must be >= 1, got {l}")
    qi_cols = split_columns(qi, "--qi")
    cc = split_columns(class_columns, "--class-columns") if class_columns else None
    if target is not None and universe is not None:
        raise InvalidParameterError("give --target or --universe, not both")
    inputs = [str(p) for p in (*release, *mapping)] + ([str(universe)] if universe else [])
    with translate_input_errors(inputs):
        rels = _releases(release, mapping, qi_cols, sensitive, cc, separator)
        if target is not None:
            lk = link(rels, parse_target(target))
        else:
            u = None if universe is None else to_lazyframe(str(universe), separator=separator)
            post = post_linkage(rels, u)
    value = _show_target(lk, as_json) if target is not None else _show_post(post, as_json)
    if l is not None and value < l:
        raise typer.Exit(1)


def _releases(tables: list[Path], mappings: list[Path], qi: list[str], sensitive: str,
              class_columns: list[str] | None, separator: str | None) -> list[Release]:
    """One :class:`~ldiv_polars.linkage.release.Release` per table and its class map, named
    after the table's file."""
    from ldiv_polars.core.inputs import to_lazyframe
    from ldiv_polars.linkage.release import Release

    rels = []
    for j, (tp, mp) in enumerate(zip(tables, mappings)):
        table = to_lazyframe(str(tp), separator=separator)
        mframe = to_lazyframe(str(mp), separator=separator)
        rels.append(Release.from_mapping(
            table, qi, sensitive, mframe, class_columns=class_columns,
            name=tp.stem if tp.stem else f"release_{j + 1}", source=str(tp),
            mapping_source=str(mp)))
    return rels


def _show_target(lk: Linkage, as_json: bool) -> int:
    """Print one target's linkage; returns its diversity."""
    out = lk.to_dict()
    if as_json:
        echo_json({"target": out["target"], "linkage": out["linkage"],
                   "diversity": out["diversity"]})
    else:
        typer.echo(f"target {out['target']}: diversity {lk.diversity}")
        for row in out["linkage"]:
            typer.echo(f"  {row['s']}: {row['n']}")
    return lk.diversity


def _show_post(post: PostLinkage, as_json: bool) -> int:
    """Print the linkage of every QI vector: ``l_t`` and the collapsed targets; returns
    ``l_t`` (0 when no target is covered)."""
    import polars as pl

    d = post.to_dict()
    if as_json:
        echo_json({"l_t": d["l_t"], "collapsed": d["collapsed"],
                   "targets": d["targets"], "uncovered": d["uncovered"]})
    else:
        typer.echo(f"l_t = {d['l_t']} over {d['targets'] - d['uncovered']} covered "
                   f"target(s); {d['collapsed']} collapse to one value")
        show = post.collapsed.select(*post.qi, "revealed").head(20)
        if show.height:
            with pl.Config(tbl_rows=20):
                typer.echo(str(show))
    return d["l_t"] if d["l_t"] is not None else 0
