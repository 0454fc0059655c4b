"""The numbers a report shows, gathered from frequency sets (never from rows).

:func:`table_facts` builds one table's frequency set ``(qi..., sensitive, n)`` in one streaming
pass (the pass ``ldiv check`` makes) and derives everything else from it: the summary of
:func:`~ldiv_polars.table_summary.frequency_set_summary`, the models' verdicts, the failing
classes, the class-size and risk distributions and the value distribution of every column. The
input files are hashed (SHA-256) in a thread while the engine reads them.

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> df = pl.DataFrame({"q": [1, 1, 2], "s": ["a", "b", "a"]})
>>> f = table_facts(df, ["q"], "s", [KAnonymity(2)])
>>> f.summary["k"], f.verdicts[0].passed, f.at_risk[0.5]
(1, False, 1)
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any
from pathlib import Path

import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.core.inputs import TableLike, input_paths, reads_input
from ldiv_polars.core.validate import NullPolicy
from ldiv_polars.models.base import SIZE, Model, ModelResult
from ldiv_polars.models.evaluate import evaluate_classes
from ldiv_polars.models.results import table_results
from ldiv_polars.models.verdict import bind_models, check_models
from ldiv_polars.search.anonymize import MASK
from ldiv_polars.table_summary import frequency_set_summary

RISK_THRESHOLDS = (0.5, 0.2, 0.1, 0.05)
"""Prosecutor-risk thresholds of the "records at risk" table (a record's risk is 1/its class
size; 0.2 and 0.1 are the usual thresholds of disclosure-review practice, 0.05 a strict one)."""
SIZE_BUCKETS = ((1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, 999),
                (1000, None))
"""Class-size buckets of the class-size and risk charts (inclusive bounds; None: no bound)."""
TOP_VALUES = 20
"""Columns with more distinct values show the most frequent ones and an "other" bar."""
FAILING_SHOWN = 25
"""Failing classes listed per model (the smallest first); the counts cover all of them."""
OTHER = "(other values)"


@dataclass(frozen=True)
class TableFacts:
    """What a report shows about one table (the input or a release)."""

    source: str
    """How the table was given: its path(s), or "a DataFrame"."""
    files: dict[str, str | None]
    """SHA-256 of each file read (None: not a regular file)."""
    qi: tuple[str, ...]
    sensitive: str
    summary: dict[str, object]
    """:func:`~ldiv_polars.table_summary.frequency_set_summary` of the table."""
    models: list[Model]
    verdicts: list[ModelResult]
    failing: dict[str, pl.DataFrame]
    """Per failing model key: up to :data:`FAILING_SHOWN` failing classes (qi..., size,
    reason), the smallest first."""
    size_buckets: pl.DataFrame
    """One row per :data:`SIZE_BUCKETS` entry: ``bucket``, ``classes``, ``rows``."""
    at_risk: dict[float, int]
    """Per :data:`RISK_THRESHOLDS` entry: rows whose prosecutor risk (1/class size) exceeds it."""
    distributions: dict[str, pl.DataFrame]
    """Per column (QIs, then the sensitive one): ``value`` (string), ``n``; at most
    :data:`TOP_VALUES` values and an :data:`OTHER` row."""
    distinct: dict[str, int] = field(default_factory=dict)
    """Per column: its number of distinct values."""
    discernibility: int = 0
    """Sum of squared class sizes (the discernibility metric of the table's classes)."""
    masked_rows: int = 0
    """Rows whose every quasi-identifier is ``*`` (suppressed by masking)."""
    unjudged_rows: int = 0
    """Rows the verdicts leave out: with ``suppressed=True``, the :attr:`masked_rows` (the
    suppressed records of a masked release, judged as no class, as ``anonymize``'s
    re-verification and ARX judge them); 0 otherwise."""
    population: dict[str, object] = field(default_factory=dict)
    """With a population size: :data:`~ldiv_polars.models.risk.POPULATION_KEYS`; with sampling
    weights also ``weight``, ``individual_risk_max``, ``expected_reidentifications`` and
    ``global_risk`` (:func:`population_facts`). Empty without either."""

    @property
    def passed(self) -> bool:
        """Whether every model holds on the table (True when none was requested)."""
        return all(v.passed for v in self.verdicts)


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    """Hex SHA-256 of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def hierarchy_digest(hierarchy: Any) -> str:
    """Hex SHA-256 of a hierarchy's ARX CSV text (``Hierarchy.to_csv()``: ``;``-separated,
    ``\n``-terminated rows), which is the hash of the file it was read from when that file is
    in this layout, so a report can be matched to the hierarchies that made the release."""
    return hashlib.sha256(hierarchy.to_csv().encode("utf-8")).hexdigest()


def _files(data: TableLike) -> list[str]:
    """The regular files behind ``data`` (a glob expanded, a directory walked), sorted."""
    out: list[str] = []
    for p in input_paths(data):
        if os.path.isdir(p):
            out += [str(f) for f in sorted(Path(p).rglob("*")) if f.is_file()]
        elif any(ch in p for ch in "*?["):
            out += sorted(glob.glob(p, recursive=True))
        else:
            out.append(p)
    return out


def _bucket_expr(col: str) -> pl.Expr:
    expr: pl.Expr = pl.lit(None, dtype=pl.String)
    for lo, hi in reversed(SIZE_BUCKETS):
        label = f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
        cond = pl.col(col) >= lo if hi is None else pl.col(col).is_between(lo, hi)
        expr = pl.when(cond).then(pl.lit(label)).otherwise(expr)
    return expr


def bucket_labels() -> list[str]:
    """The labels of :data:`SIZE_BUCKETS` in order ("1", "2", "3-4", ..., "1000+")."""
    return [f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
            for lo, hi in SIZE_BUCKETS]


def _distribution(fs: pl.LazyFrame, col: str) -> pl.LazyFrame:
    """``(col, n)``: the records per value, in the column's order (nulls last)."""
    return fs.group_by(col).agg(pl.col(COUNT).sum().alias("n")).sort(col, nulls_last=True)


def _top(counts: pl.DataFrame) -> pl.DataFrame:
    """``(value, n)`` with at most :data:`TOP_VALUES` rows: every value when few; else, for a
    numeric column, :data:`TOP_VALUES` equal-width ranges; for any other, the most frequent
    values (in the column's order) and an :data:`OTHER` row with the rest."""
    col = counts.columns[0]
    if counts.height > TOP_VALUES and counts.schema[col].is_numeric():
        return _ranges(counts, col)
    counts = counts.select(
        pl.col(col).cast(pl.String).fill_null("(null)").alias("value"), "n")
    if counts.height <= TOP_VALUES:
        return counts
    ranked = counts.with_row_index("order")
    top = ranked.sort(["n", "order"], descending=[True, False]).head(TOP_VALUES - 1) \
        .sort("order").drop("order")
    rest = int(counts.get_column("n").sum()) - int(top.get_column("n").sum())
    return pl.concat([top, pl.DataFrame({"value": [OTHER], "n": [rest]},
                                        schema=top.schema)])


def _ranges(counts: pl.DataFrame, col: str) -> pl.DataFrame:
    """Records per equal-width range ``lo–hi`` of a numeric column (integer bounds for an
    integer column); nulls, if any, last."""
    values = counts.filter(pl.col(col).is_not_null())
    lo, hi = values.get_column(col).min(), values.get_column(col).max()
    integer = counts.schema[col].is_integer()
    width = max(-(-(hi - lo + 1) // TOP_VALUES), 1) if integer else (hi - lo) / TOP_VALUES or 1
    binned = values.group_by(((pl.col(col) - lo) // width).clip(0, TOP_VALUES - 1).alias("b")) \
        .agg(pl.col("n").sum()).sort("b")

    def label(b: int) -> str:
        a = lo + b * width
        return f"{a:g}–{a + width - 1:g}" if integer else f"{a:.4g}–{a + width:.4g}"

    out = pl.DataFrame({"value": [label(b) for b in binned.get_column("b")],
                        "n": binned.get_column("n")})
    nulls = counts.filter(pl.col(col).is_null())
    if nulls.height:
        out = pl.concat([out, pl.DataFrame({"value": ["(null)"], "n": nulls.get_column("n")},
                                           schema=out.schema)])
    return out


def _failing(classes: pl.DataFrame, qi: Sequence[str], models: list[Model],
             verdicts: list[ModelResult]) -> dict[str, pl.DataFrame]:
    bad = [m for m, v in zip(models, verdicts) if not v.passed]
    return {m.key: classes.filter(~pl.col(f"pass_{m.key}")).sort(SIZE).head(FAILING_SHOWN)
            .select(*qi, SIZE, m.reason().alias("reason")) for m in bad}


def _verdicts(fs: FrequencySet, models: list[Model]
              ) -> tuple[pl.DataFrame, list[ModelResult]]:
    """The evaluated classes (qi..., size, statistics, pass columns) and the verdicts: what
    :func:`~ldiv_polars.models.verdict.check_frequency_set` computes, with the classes kept
    for the failing ones and the class sizes (``models`` bound to the table's rows,
    :func:`~ldiv_polars.models.verdict.bind_models`)."""
    for m in models:
        m.validate(fs)
    classes = evaluate_classes(fs, models).collect()
    return classes, table_results(classes, models)


def _masked(qi: Sequence[str]) -> pl.Expr:
    """Whether a row's every quasi-identifier is the suppression mask ``*`` (False for a row
    with a null QI cell: a cell-suppressed record is judged, not left out)."""
    return pl.all_horizontal([(pl.col(q).cast(pl.String) == MASK).fill_null(False)
                              for q in qi])


def _judged(fs: FrequencySet, models: Sequence[Model], classes: pl.DataFrame,
            verdicts: list[ModelResult], masked: int
            ) -> tuple[list[Model], pl.DataFrame, list[ModelResult], int]:
    """The models, classes and verdicts of the rows outside the masked class (``masked``
    rows, every QI ``*``), and how many rows that leaves out: a suppressed row belongs to no
    class (docs/anonymize.md, "Suppression semantics"). Unchanged when nothing or every row
    is masked (then the class of ``*`` is all there is: nothing tells suppressed rows apart)."""
    total = int(classes.get_column(SIZE).sum() or 0)
    if masked == 0 or masked == total:
        return list(models), classes, verdicts, 0
    kept = replace(fs, frame=fs.frame.filter(~_masked(fs.qi))).materialize()
    bound = bind_models(models, kept)
    return (bound, *_verdicts(kept, bound), masked)


def population_facts(data: TableLike, qi: Sequence[str], classes: pl.DataFrame,
                     population_size: int | str | None, weight: str | None, *,
                     nulls: NullPolicy = "error", separator: str | None = None
                     ) -> dict[str, object]:
    """The population figures of :class:`TableFacts`: the estimated population uniques from
    the evaluated classes' sizes (no pass over the rows), and with ``weight`` sdcMicro's
    weighted risk from :func:`~ldiv_polars.models.risk.risk_profile` (one more pass: the
    weight sums per class)."""
    from ldiv_polars.core.frequency import COUNT
    from ldiv_polars.core.inputs import to_lazyframe
    from ldiv_polars.models.risk import population_figures, risk_profile

    out: dict[str, object] = {}
    if population_size is not None:
        out |= population_figures(classes.select(pl.col(SIZE).alias(COUNT)), population_size)
    if weight is not None:
        prof = risk_profile(to_lazyframe(data, separator=separator), list(qi), weight=weight,
                            nulls=nulls)
        out |= {k: getattr(prof, k) for k in ("weight", "individual_risk_max",
                                              "expected_reidentifications", "global_risk")}
    return out


def _class_figures(classes: pl.DataFrame, qi: Sequence[str]
                   ) -> tuple[pl.DataFrame, dict[str, object]]:
    """From the evaluated classes: the rows and classes per :data:`SIZE_BUCKETS` entry, and
    one row of the rows above each risk threshold, the discernibility and the masked rows."""
    f = pl.col(SIZE)
    per_size = classes.group_by(_bucket_expr(SIZE).alias("bucket")).agg(
        pl.len().alias("classes"), f.sum().alias("rows"))
    risk_row = classes.select(
        *[f.filter(1.0 / f > t).sum().alias(str(t)) for t in RISK_THRESHOLDS],
        (f * f).sum().alias("discernibility"),
        f.filter(_masked(qi)).sum().alias("masked")).row(0, named=True)
    buckets = pl.DataFrame({"bucket": bucket_labels()}).join(
        per_size, on="bucket", how="left").fill_null(0)
    return buckets, risk_row


@reads_input
def table_facts(data: TableLike, qi: Sequence[str], sensitive: str,
                models: Sequence[Model] = (), *, l: int = 2, nulls: NullPolicy = "error",
                separator: str | None = None, hash_files: bool = True,
                population_size: int | str | None = None, weight: str | None = None,
                suppressed: bool = False) -> TableFacts:
    """Every figure of the report for one table (see :class:`TableFacts`), from one pass over
    its rows (with ``weight``, one more: :func:`population_facts`; a model reading weights
    reads their sums from the first). ``suppressed``: the table is a release whose rows
    masked to ``*`` in every QI are suppressed records, which the verdicts and the failing
    classes leave out (:attr:`TableFacts.unjudged_rows`); the statistics count every row.
    Raises :func:`~ldiv_polars.check`'s typed errors first."""
    fs = FrequencySet.build(data, qi, sensitive, nulls=nulls, separator=separator,
                            require_sensitive=True,
                            weight=weight if any(m.needs_weight for m in models) else None)
    models = check_models(models, fs.sensitive)
    files = _files(data) if hash_files else []
    with ThreadPoolExecutor(max_workers=1) as pool:  # hashing overlaps the engine's pass
        hashes = pool.map(lambda p: sha256_file(p) if os.path.isfile(p) else None, files)
        fs = fs.materialize()
        digests = dict(zip(files, hashes))
    stats = frequency_set_summary(fs, l)
    unbound, models = models, bind_models(models, fs)
    classes, verdicts = _verdicts(fs, models)
    columns = [*fs.qi, fs.sensitive[0]]
    buckets, risk_row = _class_figures(classes, fs.qi)
    masked = int(risk_row["masked"] or 0)
    judged, judged_classes, judged_verdicts, unjudged = (
        _judged(fs, unbound, classes, verdicts, masked) if suppressed
        else (models, classes, verdicts, 0))
    counts = pl.collect_all([_distribution(fs.frame, c) for c in columns])
    return TableFacts(
        source=", ".join(input_paths(data)) or f"a {type(data).__name__}",
        files=digests,
        qi=fs.qi,
        sensitive=fs.sensitive[0],
        summary=stats,
        models=judged,
        verdicts=judged_verdicts,
        failing=_failing(judged_classes, fs.qi, judged, judged_verdicts),
        size_buckets=buckets,
        at_risk={t: int(risk_row[str(t)] or 0) for t in RISK_THRESHOLDS},
        distributions={c: _top(d) for c, d in zip(columns, counts)},
        distinct={c: d.height for c, d in zip(columns, counts)},
        discernibility=int(risk_row["discernibility"] or 0),
        masked_rows=masked,
        unjudged_rows=unjudged,
        population=population_facts(data, qi, classes, population_size, weight, nulls=nulls,
                                    separator=separator))
