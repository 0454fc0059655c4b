"""Independent re-verification of a release, read from the released rows.

One pass over the output builds its frequency set with nulls as values (the suppressed cells).
From it:

- the counts: rows, and null cells per QI, compared with what the plan promised;
- own-value semantics: :func:`ldiv_polars.check`'s routine on that frequency set (a null is a
  value of its own, as ``nulls="value"``);
- wildcard semantics: for every pattern (distinct QI tuple, nulls included) the records
  compatible with it (equal wherever neither is null), counted by one join per pair of null
  masks over the output's distinct patterns: the pattern's class. The models are then checked
  on these classes (against the table's sensitive distribution). This shares no code with the
  algorithms' numpy computation (:mod:`ldiv_polars.local.classes`).

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> out = pl.DataFrame({"a": ["x", None, "y"], "b": [1, 1, None], "s": ["p", "q", "p"]})
>>> verify_release(out, ["a", "b"], "s", [KAnonymity(2)], "wildcard").passed
True
>>> verify_release(out, ["a", "b"], "s", [KAnonymity(2)], "value").passed
False
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike
from ldiv_polars.errors import LdivError
from ldiv_polars.local.keys import require_count_n
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import CheckResult, check_frequency_set, check_models

_MASK = "__ldiv_mask"


class ReleaseVerificationError(LdivError, RuntimeError):
    """A release failed its re-verification (a bug; please report)."""


@dataclass(frozen=True)
class ReleaseVerification:
    """The verifier's reading of a released table. Under the wildcard semantics the classes of
    ``check`` are the distinct patterns and their sizes count compatible records."""

    semantics: str
    rows: int
    suppressed_cells: dict[str, int]
    check: CheckResult

    @property
    def passed(self) -> bool:
        """Whether the released table satisfies every model."""
        return self.check.passed

    def to_dict(self) -> dict[str, object]:
        """The verification as a JSON-ready dict."""
        return {"semantics": self.semantics, "rows": self.rows, "passed": self.passed,
                "suppressed_cells": self.suppressed_cells, "check": self.check.to_dict()}


def verify_release(output: TableLike, qi: str | Iterable[str],
                   sensitive: str | Iterable[str] | None, models: Sequence[Model] | Model,
                   semantics: str, *, parquet_file: Path | None = None) -> ReleaseVerification:
    """Read ``output`` once and check ``models`` on it under ``semantics``. ``parquet_file``:
    the Parquet file ``output`` is (whatever its name, e.g. a temporary file), grouped by the
    DuckDB engine instead of Polars (less memory on a large file; the same counts)."""
    fs = _release_counts(output, qi, sensitive, parquet_file)
    models = check_models(models, fs.sensitive)
    df = fs.collect()
    rows = int(df.get_column(COUNT).sum()) if df.height else 0
    nulls = {q: int(df.filter(pl.col(q).is_null()).get_column(COUNT).sum()) for q in fs.qi}
    if semantics == "value":
        result = check_frequency_set(fs, models)
    else:
        ref = df.group_by(list(fs.sensitive)).agg(pl.col(COUNT).sum()) if fs.sensitive \
            else None
        wild = FrequencySet(wildcard_classes(df, fs.qi, fs.sensitive).lazy(), fs.qi,
                            fs.sensitive)
        result = check_frequency_set(wild, models, reference=ref)
    return ReleaseVerification(semantics, rows, nulls, result)


def _release_counts(output: TableLike, qi: str | Iterable[str],
                    sensitive: str | Iterable[str] | None, parquet_file: Path | None
                    ) -> FrequencySet:
    """The release's collected frequency set, nulls as values: DuckDB's of ``parquet_file``
    when given, else Polars' of ``output``."""
    if parquet_file is None:
        return require_count_n(FrequencySet.build(output, qi, sensitive, nulls="value")
                               ).materialize()
    import duckdb

    from ldiv_polars.core.engines.duckdb import ENGINE as DUCKDB

    con = duckdb.connect()
    try:
        return require_count_n(DUCKDB.frequency_set(con.read_parquet(str(parquet_file)), qi,
                                                    sensitive, nulls="value", con=con))
    finally:
        con.close()


def wildcard_classes(df: pl.DataFrame, qi: Sequence[str], sensitive: Sequence[str]
                     ) -> pl.DataFrame:
    """``(qi..., sensitive..., n)``: for each distinct pattern of ``df`` (a frequency set with
    nulls), the records compatible with it, per sensitive value."""
    qi = list(qi)
    sens = list(sensitive)
    mask = pl.sum_horizontal(pl.col(q).is_null().cast(pl.Int64) * (1 << i)
                             for i, q in enumerate(qi)).alias(_MASK)
    rows = df.with_columns(mask)
    pats = rows.select(*qi, _MASK).unique()
    masks = sorted(rows.get_column(_MASK).unique().to_list())
    parts = []
    for a in masks:
        left = pats.filter(pl.col(_MASK) == a).drop(_MASK)
        for b in masks:
            on = [q for i, q in enumerate(qi) if not ((a | b) >> i) & 1]
            right = rows.filter(pl.col(_MASK) == b).select(*on, *sens, COUNT)
            pairs = left.join(right, on=on, how="inner") if on else left.join(right,
                                                                               how="cross")
            parts.append(pairs.select(*qi, *sens, COUNT))
    return pl.concat(parts).group_by([*qi, *sens]).agg(pl.col(COUNT).sum())
