"""Helpers shared by the CLI subcommands (not a subcommand itself)."""

from __future__ import annotations

import json
import math
from typing import Any

import typer

from ldiv_polars.errors import InvalidParameterError


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
