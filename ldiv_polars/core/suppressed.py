"""A release's suppressed rows: the rows an anonymizer masked to ``*`` in every
quasi-identifier are suppressed records, which belong to no class (docs/anonymize.md,
"Suppression semantics"). Every surface that judges a release (``ldiv check --release``,
``ldiv_polars.check(release=...)``, the report's release, the anonymizer's re-verification)
leaves them out of the verdicts and counts them, with the functions here.

A Parquet release written by :func:`~ldiv_polars.anonymize` (``sink``) records its mask in
the file's metadata (:data:`RELEASE_META_KEY`), so that a check of the file finds it
(:func:`recorded_mask`) without being told.

>>> import polars as pl
>>> from ldiv_polars.core.frequency import FrequencySet
>>> df = pl.DataFrame({"z": ["a", "a", "*"], "s": ["x", "y", "x"]})
>>> kept, left_out = split_masked(FrequencySet.build(df, "z", "s"))
>>> kept.frame.collect().height, left_out
(2, 1)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import polars as pl

from ldiv_polars.core.frequency import FrequencySet

MASK = "*"
"""The value of every QI of a masked (suppressed) row."""

RELEASE_META_KEY = "ldiv_release"
"""The Parquet metadata key of a release: JSON ``{"qi", "mask", "mode"}``."""
RELEASE_META_FILE = "_ldiv_release.json"
"""The file a release directory (Spark's part files) records its metadata in: the JSON of the
metadata dict (Spark's and Hadoop's readers skip names starting with ``_``)."""


def release_metadata(qi: Sequence[str], *, mode: str = "mask", mask: str = MASK
                     ) -> dict[str, str]:
    """The Parquet metadata a release's file records: its QIs, the mask of its suppressed
    rows and the suppression mode (``mask`` or ``drop``).

    >>> release_metadata(["zip"])
    {'ldiv_release': '{"qi": ["zip"], "mask": "*", "mode": "mask"}'}
    """
    return {RELEASE_META_KEY: json.dumps({"qi": list(qi), "mask": mask, "mode": mode})}


def write_directory_metadata(directory: str | Path, metadata: dict[str, str]) -> None:
    """Record ``metadata`` in a release directory (:data:`RELEASE_META_FILE`), where a
    distributed engine cannot write a Parquet footer's."""
    Path(directory, RELEASE_META_FILE).write_text(json.dumps(metadata), encoding="utf-8")


def recorded_mask(data: object) -> str | None:
    """The mask a release records (:func:`release_metadata`) when ``data`` is the path of a
    Parquet file recording it in its metadata or of a directory recording it in
    :data:`RELEASE_META_FILE`; None for anything else (a CSV file, a glob, a frame, a file
    that records none or cannot be read: the check that follows reports an unreadable file).

    >>> recorded_mask("t.csv") is None
    True
    """
    if not isinstance(data, (str, Path)):
        return None
    path = Path(data)
    try:
        if path.is_dir() and (path / RELEASE_META_FILE).is_file():
            raw = json.loads((path / RELEASE_META_FILE).read_text("utf-8")).get(RELEASE_META_KEY)
        elif path.is_file() and path.suffix.lower() in (".parquet", ".pq"):
            raw = pl.read_parquet_metadata(path).get(RELEASE_META_KEY)
        else:
            return None
        mask = json.loads(raw)["mask"] if raw is not None else None
    except Exception:  # noqa: BLE001 - not a release's metadata: nothing recorded
        return None
    return mask if isinstance(mask, str) else None


def release_mask(data: object, release: bool | str | None) -> str | None:
    """The mask whose rows a check of ``data`` leaves out: ``release`` itself when it is a
    string (the mask), :data:`MASK` (or the recorded one) when True, None (judge every row)
    when False, and when None the mask ``data``'s metadata records (:func:`recorded_mask`).

    >>> release_mask("t.csv", None), release_mask("t.csv", True), release_mask("t.csv", False)
    (None, '*', None)
    """
    if isinstance(release, str):
        return release
    if release is False:
        return None
    recorded = recorded_mask(data)
    return recorded if recorded is not None or release is None else MASK


def masked_expr(qi: Sequence[str], mask: str = MASK) -> pl.Expr:
    """Whether a row's every quasi-identifier is ``mask`` (False for a row with a null QI
    cell: a cell-suppressed record is judged, not left out)."""
    return pl.all_horizontal([(pl.col(q).cast(pl.String) == mask).fill_null(False)
                              for q in qi])


def masked_rows(fs: FrequencySet, mask: str = MASK) -> int:
    """How many rows of ``fs`` (collected) a release's check leaves out: those masked to
    ``mask`` in every QI, or 0 when every row is (nothing tells suppressed rows apart).

    >>> import polars as pl
    >>> from ldiv_polars.core.frequency import FrequencySet
    >>> fs = FrequencySet.build(pl.DataFrame({"z": ["*", "*", "a"]}), "z", None)
    >>> masked_rows(fs), masked_rows(FrequencySet.build(pl.DataFrame({"z": ["*"]}), "z", None))
    (2, 0)
    """
    counts = fs.frame.select(
        pl.col(fs.count).filter(masked_expr(fs.qi, mask)).sum().alias("masked"),
        pl.col(fs.count).sum().alias("total")).collect().row(0)
    masked, total = int(counts[0] or 0), int(counts[1] or 0)
    return 0 if masked == total else masked


def split_masked(fs: FrequencySet, mask: str = MASK) -> tuple[FrequencySet, int]:
    """The collected frequency set of ``fs``'s retained rows (outside the class masked to
    ``mask`` in every QI) and the number of rows that leaves out. Unchanged (and 0) when no
    row, or every row, is masked: then the class of ``mask`` is all there is and nothing
    tells suppressed rows apart (a release generalized to the top with suppression)."""
    fs = fs.materialize()
    masked = masked_rows(fs, mask)
    if masked == 0:
        return fs, 0
    return replace(fs, frame=fs.frame.filter(~masked_expr(fs.qi, mask))).materialize(), masked
