"""Helpers shared by the CLI subcommands (not a subcommand itself)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from ldiv_polars.errors import InputFormatError, InvalidParameterError


def split_columns(value: str | None, option: str) -> list[str]:
    """Parse a comma-separated column list (``--qi a,b,c``)."""
    if value is None:
        return []
    cols = [c.strip() for c in value.split(",")]
    if any(not c for c in cols):
        raise InvalidParameterError(f"{option}: empty column name in {value!r}")
    return cols


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isinf(obj) or math.isnan(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def echo_json(obj: Any) -> None:
    """Print one JSON object (inf/nan become null)."""
    typer.echo(json.dumps(_clean(obj), indent=2, default=str))


class Stages:
    """What a long-running command is doing, on stderr (never on stdout: ``--json`` output
    stays clean JSON): a spinner with the current stage when stderr is a terminal; one plain
    line per stage (``ldiv <command>: <stage>``) when ``LDIV_PROGRESS=1`` (logs, CI); nothing
    otherwise. Use as a context manager and call it with each stage's description.

    >>> with Stages("check") as say:  # (stderr is no terminal here: nothing is shown)
    ...     say("reading the input")
    """

    def __init__(self, command: str) -> None:
        import os
        import sys

        self.command = command
        self.lines = os.environ.get("LDIV_PROGRESS", "") not in ("", "0")
        self.spinner = sys.stderr.isatty() and not self.lines
        self._status: Any = None

    def __call__(self, stage: str) -> None:
        import sys

        if self.lines:
            sys.stderr.write(f"ldiv {self.command}: {stage}\n")
            sys.stderr.flush()
        elif self.spinner:
            if self._status is None:
                from rich.console import Console

                self._status = Console(stderr=True).status(stage)
                self._status.start()
            else:
                self._status.update(stage)

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def start_engine(engine: str, master: str | None, remote: str | None,
                 allowed: tuple[str, ...] = ("polars", "duckdb", "spark")) -> None:
    """Check ``--engine`` against ``allowed`` and, for ``spark``, start the session its rows
    are read with (``--spark-master`` or ``--spark-remote``; a local one by default; pyspark is
    imported only then). Raises :class:`InvalidParameterError` for another engine, both
    Spark options at once, or a Spark option without ``--engine spark``."""
    if engine not in allowed:
        raise InvalidParameterError(
            f"--engine must be one of {', '.join(allowed)}, got {engine!r}")
    if engine != "spark":
        if master is not None or remote is not None:
            raise InvalidParameterError("--spark-master and --spark-remote need --engine spark")
        return
    if master is not None and remote is not None:
        raise InvalidParameterError("give --spark-master or --spark-remote, not both")
    from ldiv_polars.core.engines.base import engine_for

    spark = engine_for(None, "spark")  # a typed error when pyspark is not installed
    spark.session(master, remote)  # type: ignore[attr-defined]


def find_hierarchy(directory: Path, column: str) -> Path:
    """``DIR/*_hierarchy_<column>.csv`` or ``DIR/<column>.csv``. Raises
    :class:`~ldiv_polars.errors.InputFormatError` when ``directory`` is not a directory or
    holds no such file, or several ``*_hierarchy_<column>.csv``."""
    if not directory.is_dir():
        raise InputFormatError(f"--hierarchies: not a directory: {str(directory)!r}")
    exact = directory / f"{column}.csv"
    if exact.exists():
        return exact
    found = sorted(directory.glob(f"*_hierarchy_{column}.csv"))
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise InputFormatError(
            f"several hierarchy files for {column!r} in {str(directory)!r}: "
            f"{', '.join(p.name for p in found)}"
        )
    raise InputFormatError(
        f"no hierarchy for column {column!r} in {str(directory)!r} (expected "
        f"'*_hierarchy_{column}.csv' or '{column}.csv')"
    )


def read_hierarchies(files: Mapping[str, Path], separator: str = ";") -> dict[str, Any]:
    """One :class:`~ldiv_polars.hierarchy.Hierarchy` per QI from the files
    :func:`find_hierarchy` found (read after the output paths were checked). Raises the
    hierarchy reader's typed errors."""
    from ldiv_polars.hierarchy import Hierarchy

    return {q: Hierarchy.from_csv(f, separator=separator, name=q) for q, f in files.items()}
