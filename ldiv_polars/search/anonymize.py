"""``anonymize``: least generalization (full-domain, with optional record suppression) satisfying
every requested privacy model, optimal under a utility metric, re-verified before it is returned.

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> from ldiv_polars.hierarchy import masking_hierarchy, interval_hierarchy
>>> df = pl.DataFrame({"zip": ["13053", "13068", "13053", "13068"], "age": [28, 29, 21, 23],
...                    "disease": ["flu", "cold", "flu", "cold"]})
>>> hs = {"zip": masking_hierarchy(df["zip"]), "age": interval_hierarchy(df["age"], [10])}
>>> res = anonymize(df, ["zip", "age"], "disease", hs, [KAnonymity(2)], metric="height")
>>> res.levels, res.classes, res.suppressed_rows
({'zip': 0, 'age': 1}, 2, 0)
>>> res.output.collect().rows()  # doctest: +NORMALIZE_WHITESPACE
[('13053', '20-29', 'flu'), ('13068', '20-29', 'cold'), ('13053', '20-29', 'flu'),
 ('13068', '20-29', 'cold')]
"""

from __future__ import annotations

import copy
import functools
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, STREAMING, FrequencySet
from ldiv_polars.core.inputs import (
    CSV_SUFFIXES,
    PARQUET_SUFFIXES,
    TableLike,
    input_paths,
    reads_input,
    sniff_separator,
    to_lazyframe,
)
from ldiv_polars.core.output import atomic_output
from ldiv_polars.core.validate import NullPolicy, require_real
from ldiv_polars.errors import InvalidParameterError, LdivError
from ldiv_polars.hierarchy.generalize import generalize_expr
from ldiv_polars.hierarchy.hierarchy import Hierarchy, as_hierarchy
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import CheckResult, check_frequency_set, check_models
from ldiv_polars.search.metrics import MetricSuite, check_metric
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled, Snapshot, places
from ldiv_polars.search.anytime import Budget
from ldiv_polars.search.strategies import STRATEGIES, Progress, SearchOutcome, search_lattice
from ldiv_polars.search.suppression import NodeChecker, suppression_limit_rows
from ldiv_polars.search.tuning import TUNING

if TYPE_CHECKING:  # DuckDB is imported only when a large Parquet file is grouped by it
    from ldiv_polars.search.duckfs import DuckFrequencySet

SuppressionMode = Literal["mask", "drop"]
_FLAG = "__ldiv_suppressed"


class VerificationError(LdivError, RuntimeError):
    """The anonymized output failed re-verification by the checker (a bug; please report)."""


@dataclass
class AnonymizationResult:
    """Outcome of :func:`anonymize`.

    ``levels`` is the chosen node (``None`` when no node satisfies the models within the
    suppression limit; then ``output`` is ``None`` too). ``output`` is a lazy plan over the
    input (generalize + suppression); sink or collect it. ``verification`` is the checker's
    verdict on the retained (not suppressed) output rows.
    """

    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    rows: int
    levels: dict[str, int] | None
    metric: str
    value: float | None
    metrics: dict[str, float]
    classes: int | None
    suppressed_rows: int
    suppressed_classes: int
    suppression_limit_rows: int
    suppression_mode: str
    minimal: list[dict[str, int]] | None
    minimal_complete: bool
    lattice_size: int
    checked: int
    evaluations: int
    rollups: int
    strategy: str
    monotone: bool
    monotone_reason: str
    notes: list[str]
    elapsed_s: float
    output: pl.LazyFrame | None = field(repr=False)
    verification: Any = field(repr=False, default=None)
    _plan: _VerificationPlan | None = field(repr=False, default=None)
    bound: float | None = None
    """A lower bound of the optimum's value: ``value`` itself for the exact strategies, the
    anytime search's bound otherwise (None when no node was found, or ``kl`` under anytime)."""
    gap: float | None = None
    """``(value - bound) / value``: 0 when the optimum is proven, None without a bound."""
    sources: tuple[str, ...] = field(repr=False, default=())
    """The input file(s) ``output`` reads (a path given, or the scans of a LazyFrame; empty for
    a DataFrame): :meth:`sink` refuses to write over them."""

    @property
    def found(self) -> bool:
        return self.levels is not None

    def sink(self, path: str | Path, *, verify: bool = True) -> None:
        """Write ``output`` to ``path`` (Parquet, or CSV when ``path`` ends in ``.csv``, ``.tsv``
        with tabs) in one
        streaming pass. With ``verify``, the checker re-verifies the retained rows (the check
        ``anonymize(verify=True)`` makes): on inputs of up to ``FUSED_VERIFY_MAX_ROWS`` rows
        their frequency set is built by the same pass as the write, on larger ones by a second
        pass (two consumers of one streamed input buffer rows in Polars: 13 GB on 100M rows).
        ``verification`` is set; if it fails the file is removed and
        :class:`VerificationError` raised.

        >>> import polars as pl, tempfile, pathlib
        >>> from ldiv_polars.hierarchy import Hierarchy
        >>> from ldiv_polars.models import KAnonymity
        >>> df = pl.DataFrame({"zip": ["a", "b", "a", "b"], "s": ["x", "y", "x", "y"]})
        >>> h = {"zip": Hierarchy([["a", "*"], ["b", "*"]], name="zip")}
        >>> res = anonymize(df, "zip", "s", h, KAnonymity(2), verify=False)
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "out.parquet"
        >>> res.sink(out)
        >>> res.verification.passed, pl.read_parquet(out).height
        (True, 4)
        """
        if self.output is None:
            raise InvalidParameterError("no node satisfies the requirements: nothing to write")
        expected = self.rows - (self.suppressed_rows if self.suppression_mode == "drop" else 0)
        with atomic_output(path, inputs=self.sources) as out:
            write = out.sink(self.output)
            if not verify or self._plan is None:
                write.collect(engine=STREAMING)
            else:
                if self.rows <= FUSED_VERIFY_MAX_ROWS:
                    _, fs = pl.collect_all([write, self._plan.fs.frame], engine=STREAMING)
                else:
                    write.collect(engine=STREAMING)
                    fs = self._plan.fs.materialize()
                self.verification = self._plan.verify(fs)
            out.check_rows(expected)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (the keys of ``ldiv anonymize --json``)."""
        return {
            "lattice_size": self.lattice_size,
            "checked": self.checked,
            "rollups": self.rollups,
            "evaluations": self.evaluations,
            "strategy": self.strategy,
            "monotone": self.monotone,
            "rows": self.rows,
            "suppression_limit_rows": self.suppression_limit_rows,
            "optimum": None if self.levels is None else {
                "levels": self.levels,
                "metric": self.metric,
                "value": self.value,
                "classes": self.classes,
                "suppressed": self.suppressed_rows,
                "metrics": self.metrics,
            },
            "minimal": self.minimal,
            "minimal_complete": self.minimal_complete,
            "bound": self.bound,
            "gap": self.gap,
            "verified": None if self.verification is None else bool(self.verification.passed),
            "notes": self.notes,
            "elapsed_s": round(self.elapsed_s, 4),
        }


FUSED_VERIFY_MAX_ROWS = 4_000_000
"""Inputs of up to this many rows are written and re-verified in one pass
(:meth:`AnonymizationResult.sink`): measured peak RSS +0 at 1M rows, +350 MB at 10M, +11.8 GB
at 100M."""


@dataclass
class _VerificationPlan:
    """The re-verification of an output: the (lazy) frequency set of its retained rows with the
    QI labels, and the models checked on it."""

    fs: FrequencySet
    models: list[Model]
    node: dict[str, int]
    restore: dict[str, pl.DataType] = field(default_factory=dict)
    """Sensitive columns grouped as Enums of their values (:func:`_sensitive_enums`), cast
    back to their own dtype before the models read them."""

    def verify(self, collected: FrequencySet | pl.DataFrame) -> CheckResult:
        """Check the models on the collected frequency set; raise if one fails."""
        if isinstance(collected, FrequencySet):
            collected = collected.frame.collect() if isinstance(collected.frame, pl.LazyFrame) \
                else collected.frame
        if self.restore:
            collected = collected.with_columns(pl.col(c).cast(dt) for c, dt in
                                               self.restore.items())
        result = check_frequency_set(
            FrequencySet(collected.lazy(), self.fs.qi, self.fs.sensitive), self.models)
        if not result.passed:
            failing = [m.key for m in result.models if not m.passed]
            raise VerificationError(
                f"re-verification of the anonymized output failed for {', '.join(failing)} "
                f"at node {self.node}")
        return result


def prepare_hierarchies(
    qi: Sequence[str], hierarchies: Mapping[str, Hierarchy | pl.DataFrame | str | Any],
    *, separator: str = ";",
) -> dict[str, Hierarchy]:
    missing = [q for q in qi if q not in hierarchies]
    if missing:
        raise InvalidParameterError(
            f"no hierarchy given for quasi-identifier(s) {', '.join(map(repr, missing))}"
        )
    return {q: as_hierarchy(hierarchies[q], name=q, separator=separator) for q in qi}


@reads_input
def anonymize(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    hierarchies: Mapping[str, Hierarchy | pl.DataFrame | str | Any],
    models: Sequence[Model] | Model,
    *,
    suppression: float = 0.0,
    metric: str = "aecs",
    suppression_mode: SuppressionMode = "mask",
    strategy: str = "auto",
    verify: bool = True,
    nulls: NullPolicy = "error",
    separator: str | None = None,
    progress: Progress | None = None,
    budget: Budget | float | None = None,
) -> AnonymizationResult:
    """Find the optimal full-domain generalization of ``qi`` satisfying all ``models``.

    One streaming pass over ``data`` builds the frequency set; the lattice search rolls it up
    (never rescanning rows). ``suppression`` is the largest fraction of rows that may be
    suppressed (rows of classes failing a model); ``suppression_mode`` ``"mask"`` keeps them
    with every QI set to ``*``, ``"drop"`` removes them; their number is always reported.
    ``metric`` is the optimization target (``aecs``, ``discernibility``, ``entropy``,
    ``height``, ``kl``, ``loss``, ``precision``; lower is better). ``strategy``: ``auto``
    (Flash when the predicate is monotone, otherwise exhaustive), ``flash``, ``exhaustive``,
    ``bounded`` (optimum only, by lower-bound pruning), ``anytime`` (the best node within
    ``budget`` — seconds or a :class:`~ldiv_polars.search.anytime.Budget` — with ``bound``
    and ``gap``; ``auto`` picks it on lattices of more than ``TUNING.anytime_min_nodes``
    nodes). QI columns of the output are Enums
    of the chosen level's labels in hierarchy order (:func:`output_dtype`; they sort in that
    order, and Parquet stores them dictionary-encoded). The output is re-verified with
    :func:`ldiv_polars.check` on the retained rows (``verify=False`` skips that extra pass;
    :meth:`AnonymizationResult.sink` then writes the output and re-verifies it, in the same
    pass on inputs of up to 4M rows).
    """
    t0 = time.perf_counter()
    metric = check_metric(metric)
    if suppression_mode not in ("mask", "drop"):
        raise InvalidParameterError(
            f"suppression_mode must be 'mask' or 'drop', got {suppression_mode!r}"
        )
    if strategy not in STRATEGIES:
        raise InvalidParameterError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    require_real("suppression", suppression, low=0.0, high=1.0)
    budget = Budget.of(budget) if budget is not None else None
    sources = input_paths(data)
    lf = to_lazyframe(data, separator=separator)
    fs = FrequencySet.build(lf, qi, sensitive, nulls=nulls)
    models = check_models(models, fs.sensitive, required_by="anonymize()")
    hs = prepare_hierarchies(fs.qi, hierarchies)
    if _small_csv(data):
        # read once (the arguments checked first): the search's pass and the output's write
        # both read this frame instead of parsing the CSV twice
        data = _read_coded(data, separator, lf, fs.qi, hs)
        lf = data.lazy()
        fs = FrequencySet.build(lf, fs.qi, fs.sensitive, nulls=nulls)
    # models and metric reading only class sizes/codes: search on the QI-only frequency set
    qi_only = metric != "kl" and not any(m.needs_sensitive for m in models)
    duck = _duck_frequency_set(data, fs, hs)
    try:
        result = _anonymize(lf, fs, hs, duck, models, qi_only, t0, suppression=suppression,
                          metric=metric, suppression_mode=suppression_mode, strategy=strategy,
                          verify=verify, nulls=nulls, progress=progress, budget=budget,
                          # an in-memory table is grouped by the in-memory engine (a lower
                          # fixed cost); files and lazy plans stream
                          engine="in-memory" if isinstance(data, pl.DataFrame) else STREAMING)
    finally:
        if duck is not None:
            duck.close()
    result.sources = sources
    return result


def _anonymize(
    lf: pl.LazyFrame, fs: FrequencySet, hs: dict[str, Hierarchy],
    duck: DuckFrequencySet | None, models: list[Model], qi_only: bool, t0: float, *,
    suppression: float, metric: str, suppression_mode: str, strategy: str, verify: bool,
    nulls: NullPolicy, progress: Progress | None, engine: str,
    budget: Budget | float | None = None,
) -> AnonymizationResult:
    qi_t, sens_t = fs.qi, fs.sensitive
    if duck is not None and qi_only:
        # the QI-only frequency set summed out of DuckDB's (key, sensitive, n) table: the
        # search's frequency set, built without holding the sensitive column in memory
        efs = _duck_encoded(duck, fs, hs, models)
        search_efs = efs
    elif duck is not None:
        # models reading the sensitive column: DuckDB's whole table, read into arrays (the
        # engine's group-by of the rows held several times more on 100M rows), then DuckDB
        # is closed for the search
        efs = _duck_cells(duck, fs, hs, models)
        duck.close()
        duck = None
        search_efs = efs
    else:
        efs = _encoded_frequency_set(lf, fs, hs, models, nulls, engine)
        if efs is None:
            # a value missing from a hierarchy (or a null QI): the string-keyed path raises the
            # typed errors naming the values
            fs = fs.materialize()
            for m in models:
                m.validate(fs)
            efs = EncodedFrequencySet.from_frame(fs, hs)
        search_efs = efs.without_sensitive() if qi_only else efs
    # the string-keyed frequency set is no longer needed: drop it before the search
    del fs
    _lean_search(search_efs)
    limit = suppression_limit_rows(suppression, efs.total)
    outcome: SearchOutcome = search_lattice(search_efs, models, limit, metric,
                                            strategy=strategy, progress=progress,
                                            budget=budget)

    search_rollups = search_efs.rollups if search_efs is not efs else 0
    search_is_efs = search_efs is efs
    # the optimum rolled up while the search's snapshots can still be its source
    best = efs.rollup(outcome.lattice.levels(outcome.optimum), cache=False) \
        if outcome.optimum is not None and search_efs is efs else None
    # release the search's snapshot cache and hubs (the QI-only copy entirely)
    del search_efs
    efs.release()
    large = efs.base_rows >= TRIM_MIN_ROWS
    if large:
        _trim_heap()

    lat = outcome.lattice

    def as_levels(node: int) -> dict[str, int]:
        return dict(zip(qi_t, lat.levels(node)))

    minimal = None if outcome.minimal is None else [as_levels(n) for n in outcome.minimal]
    common: dict[str, Any] = dict(
        qi=qi_t, sensitive=sens_t, rows=efs.total, metric=metric,
        suppression_limit_rows=limit, suppression_mode=suppression_mode, minimal=minimal,
        minimal_complete=outcome.minimal is not None, lattice_size=lat.size,
        strategy=outcome.strategy, monotone=outcome.monotone, monotone_reason=outcome.reason,
        notes=outcome.notes,
    )
    if outcome.optimum is None:
        return AnonymizationResult(
            levels=None, value=None, metrics={}, classes=None, suppressed_rows=0,
            suppressed_classes=0, checked=outcome.checked, evaluations=outcome.evaluations,
            rollups=efs.rollups + search_rollups, elapsed_s=time.perf_counter() - t0,
            output=None, **common,
        )
    levels = lat.levels(outcome.optimum)
    rolled = best if best is not None else efs.rollup(levels, cache=False)
    del best
    checker = NodeChecker(efs, models, limit)
    verdict = checker.check(rolled)
    if not verdict.passed:  # pragma: no cover - the search only returns passing nodes
        raise VerificationError(f"the chosen node {levels} does not pass on re-evaluation")
    # the search's metric tables when it searched this very frequency set
    suite = outcome.metrics if search_is_efs and outcome.metrics is not None \
        else MetricSuite(efs)
    values = suite.values(rolled, verdict.suppressed)
    output, retained = _output_plan(lf, efs, rolled, verdict.suppressed, hs, suppression_mode)
    n_rollups = efs.rollups + search_rollups
    level_cards = [max(efs.cards[i][lv], 1) for i, lv in enumerate(levels)]
    level_maps = [efs.level_maps[i][lv] for i, lv in enumerate(levels)]
    sensitive_values = efs.sensitive_table  # (the distinct sensitive tuples: small)
    # the encoded frequency set is not needed past the output plan: free it before the
    # re-verification pass (which builds its own frequency set)
    del checker, efs
    suite.efs = None  # type: ignore[assignment]
    if large:
        _trim_heap()
    if duck is not None and duck.sensitive:
        # kl reads the (class, sensitive) counts: rolled up from DuckDB's table
        values["kl"] = _duck_kl(duck, level_maps, level_cards, suite, rolled,
                                verdict.suppressed)
    del rolled, suite
    # the output's QI columns are Enums (its classes are grouped on small integer keys), and
    # so are string sensitive columns; models reading only class sizes are checked on the QI
    # columns alone
    restore: dict[str, pl.DataType] = {}
    if not qi_only and sens_t:
        retained, restore = _sensitive_enums(retained, sensitive_values)
    vfs = FrequencySet.build(retained, qi_t, None if qi_only else (sens_t or None), nulls=nulls)
    plan = _VerificationPlan(vfs, check_models(models, vfs.sensitive), dict(zip(qi_t, levels)),
                             restore)
    verification = plan.verify(vfs.materialize()) if verify else None
    return AnonymizationResult(
        levels=dict(zip(qi_t, levels)), value=values[metric], metrics=values,
        classes=int((~verdict.suppressed).sum()), suppressed_rows=verdict.suppressed_rows,
        suppressed_classes=int(verdict.suppressed.sum()), checked=outcome.checked,
        evaluations=outcome.evaluations + verdict.evaluations, rollups=n_rollups,
        elapsed_s=time.perf_counter() - t0, output=output, verification=verification,
        _plan=plan, bound=outcome.bound if outcome.strategy == "anytime" else values[metric],
        gap=outcome.gap, **common,
    )


TRIM_MIN_ROWS = 1 << 20
"""Frequency sets of at least this many rows hand freed memory back to the OS between phases
(``malloc_trim`` costs a few ms: not worth it on small ones)."""

LEAN_SEARCH_ROWS = 4_000_000
"""Frequency sets of at least this many rows are searched with a smaller snapshot cache and no
hub snapshots (see :func:`_lean_search`)."""


def _lean_search(efs: EncodedFrequencySet) -> None:
    """Bound the search's memory on a large frequency set: the snapshot cache holds at most half
    the base's rows, and no hub snapshots are made (neither the pinned ones of
    :meth:`~EncodedFrequencySet.prime` nor the on-demand ones): on 13M QI-only rows the seven
    pinned hubs alone held 3.5x the base's rows (1.7 GB). Roll-ups are exact from any source,
    so only the number of roll-ups and the time change, never a result."""
    if efs.base_rows < LEAN_SEARCH_ROWS:
        return
    efs.row_budget = max(efs.base_rows // 2, 1)
    efs.lazy_hubs = False  # neither prime()'s pinned hubs nor on-demand ones


def _trim_heap() -> None:
    """Hand the C heap's freed pages back to the OS (glibc ``malloc_trim``; a no-op
    elsewhere). The search's numpy arrays are freed by then, but glibc keeps most of them
    mapped (its mmap threshold grows with the first large frees), which would add to the
    peak RSS of the output passes that follow."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (looked up once: ``find_library`` runs ``ldconfig``)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


IN_MEMORY_CSV_MAX_BYTES = 256 << 20
"""CSV files of at most this size are parsed once into memory by :func:`anonymize` (the
frequency-set pass and the output both read the frame: on a 1M-row, 82 MB CSV the CLI process
saves the second parse, ~0.2 s, for ~0.1 GB held); larger ones are scanned, twice."""


def _raw_enum(h: Hierarchy) -> pl.Enum | None:
    """The Enum of a hierarchy's raw values (level 0, as strings; a QI value's index among
    them is its code), None when they hold a null or a repeat (never, once validated)."""
    raw = h.column(0)
    if raw.null_count() or raw.n_unique() != raw.len():
        return None
    return pl.Enum(raw.cast(pl.String))


def _raw_index(q: str, h: Hierarchy, schema: pl.Schema, *, strict: bool) -> pl.Expr | None:
    """Each row's index among the raw values of QI ``q`` (UInt; null where the value is null
    or, without ``strict``, not a raw value): the physical value of a column already read as
    :func:`_raw_enum` (:func:`_read_coded`), else an Enum cast of its strings. None when the
    hierarchy has no such Enum."""
    enum = _raw_enum(h)
    if enum is None:
        return None
    if schema.get(q) == enum:
        return pl.col(q).to_physical()
    return pl.col(q).cast(pl.String).cast(enum, strict=strict).to_physical()


def _read_coded(path: str | Path, separator: str | None, lf: pl.LazyFrame, qi: Sequence[str],
                hs: Mapping[str, Hierarchy]) -> pl.DataFrame:
    """The CSV at ``path`` read into memory with each QI column parsed straight into the Enum
    of its raw values (:func:`_raw_enum`) instead of strings: the frequency-set pass and the
    output read the codes (1M-row CSV: read 0.10-0.13 s + two casts of the 8 QIs, ~65 ms
    each, before; read as Enums 0.14-0.16 s; the frame holds no QI strings). Only when every
    QI value is a raw value of its hierarchy and none is null; otherwise ``lf`` (the same
    file, scanned as usual) collected, and the string path names the values or applies the
    null policy."""
    enums = {q: _raw_enum(hs[q]) for q in qi}
    if any(e is None for e in enums.values()):
        return lf.collect()
    p = Path(path)
    sep = separator or sniff_separator(p, p.suffix.lower())
    try:
        coded = pl.scan_csv(p, separator=sep, schema_overrides=enums).collect()
    except pl.exceptions.ComputeError:  # a value that is not a raw value of its hierarchy
        return lf.collect()
    if coded.select(pl.sum_horizontal(pl.col(q).null_count() for q in qi)).item():
        return lf.collect()
    return coded


def _small_csv(data: TableLike) -> bool:
    """Whether ``data`` is the path of one CSV file of at most ``IN_MEMORY_CSV_MAX_BYTES``."""
    if not isinstance(data, (str, Path)):
        return False
    path = Path(data)
    return path.suffix.lower() in CSV_SUFFIXES and path.is_file() \
        and path.stat().st_size <= IN_MEMORY_CSV_MAX_BYTES


DUCKDB_MIN_ROWS = 1_000_000
"""Parquet files of at least this many rows are grouped by DuckDB under a memory limit (see
:mod:`ldiv_polars.search.duckfs`) when the search reads only class sizes and codes."""


def _duck_frequency_set(data: TableLike, fs: FrequencySet, hs: Mapping[str, Hierarchy]
                        ) -> DuckFrequencySet | None:
    """DuckDB's frequency set of a large Parquet file (``None``: use the engine path; DuckDB,
    ~40 ms to import, is imported only when it is used)."""
    if not isinstance(data, (str, Path)) or len(fs.sensitive) > 1:
        return None
    path = Path(data)
    if path.suffix.lower() not in PARQUET_SUFFIXES or not path.is_file():
        return None
    if pl.scan_parquet(path).select(pl.len()).collect().item() < DUCKDB_MIN_ROWS:
        return None
    from ldiv_polars.search import duckfs

    return duckfs.build(path, fs.qi, fs.sensitive, hs)


def _duck_encoded(duck: DuckFrequencySet, fs: FrequencySet, hs: Mapping[str, Hierarchy],
                  models: Sequence[Model]) -> EncodedFrequencySet:
    """The QI-only encoded frequency set from DuckDB's table (counts one roll-up, the
    grouping that sums the sensitive column out, as :meth:`EncodedFrequencySet.without_sensitive`
    does)."""
    keys, n = duck.qi_frequency_set()
    duck.disconnect()  # DuckDB's buffers are not needed during the search
    efs = EncodedFrequencySet.from_keys(_qi_only_columns(fs, models), hs, keys, n)
    efs.known_raw_counts = duck.raw_counts  # counted by DuckDB's pass over the values
    efs.rollups = 1 if duck.sensitive else 0
    return efs


def _qi_only_columns(fs: FrequencySet, models: Sequence[Model]) -> FrequencySet:
    """An empty QI-only frequency set naming ``fs``'s QI columns (the ``fs`` argument of an
    :class:`EncodedFrequencySet` built from arrays), the models validated on it (QI-only
    models: there are no values to check)."""
    enc = FrequencySet(pl.DataFrame(schema={q: pl.Int32 for q in fs.qi} | {COUNT: pl.Int64})
                       .lazy(), fs.qi, ())
    for m in models:
        m.validate(enc)
    return enc


def _duck_cells(duck: DuckFrequencySet, fs: FrequencySet, hs: Mapping[str, Hierarchy],
                models: Sequence[Model]) -> EncodedFrequencySet:
    """The ``(QI, sensitive)`` encoded frequency set from DuckDB's table (QI codes decoded
    from its keys, sensitive ids as DuckDB numbered the values); the models are validated on
    the distinct sensitive values (all they check: e.g. hierarchical t-closeness, that each
    is a leaf of its hierarchy)."""
    codes, sid, n = duck.cells()
    s = fs.sensitive[0]
    values = duck.sensitive_values
    assert values is not None
    table = pl.DataFrame([values.rename(s)])
    check = FrequencySet(
        table.select([pl.lit(0, pl.Int32).alias(q) for q in fs.qi] + [pl.col(s),
                      pl.lit(1, pl.Int64).alias(COUNT)]).lazy(), fs.qi, fs.sensitive)
    for m in models:
        m.validate(check)
    enc = FrequencySet(pl.DataFrame(schema={q: pl.Int32 for q in fs.qi} | {s: values.dtype}
                                    | {COUNT: pl.Int64}).lazy(), fs.qi, fs.sensitive)
    efs = EncodedFrequencySet.from_codes(enc, hs, codes, n, sensitive_ids=(sid, table))
    efs.known_raw_counts = duck.raw_counts
    return efs


def _duck_kl(duck: DuckFrequencySet, level_maps: Sequence[np.ndarray], cards: Sequence[int],
             suite: MetricSuite, rolled: Rolled, suppressed: np.ndarray) -> float:
    """The ``kl`` metric at ``rolled`` (a roll-up of the QI-only frequency set; ``level_maps``
    and ``cards``: each QI's raw index -> level code and level cardinality at its node) from
    the node's ``(class, sensitive)`` counts, rolled up by DuckDB, and the ``sum p log p`` of
    its ``(QI, sensitive)`` table: the formula of :class:`MetricSuite` on the same cells."""
    levels = rolled.snapshot.levels
    ck, s, n = duck.rolled_counts(levels, level_maps, cards)
    # the roll-up's class keys in the same radix (first QI most significant): ascending
    ckeys = np.zeros(rolled.classes, dtype=np.int64)
    for i, c in enumerate(cards):
        ckeys = ckeys * c + rolled.class_codes[:, i]
    row_class = np.minimum(np.searchsorted(ckeys, ck), max(rolled.classes - 1, 0))
    if (rolled.classes and (np.any(np.diff(ckeys) <= 0) or np.any(ckeys[row_class] != ck)
                            or np.any(np.bincount(row_class, weights=n, minlength=rolled.classes)
                                      != rolled.class_size))):  # pragma: no cover - a bug
        raise VerificationError("DuckDB's roll-up does not match the search's classes")
    full = Rolled(Snapshot(levels, None, s, n), row_class.astype(np.int64),
                  rolled.class_codes, rolled.class_size)
    kl_suite = copy.copy(suite)
    kl_suite.kl_const = duck.kl_const()
    duck.disconnect()
    kl_suite.efs = SimpleNamespace(n_sensitive=duck.n_sensitive)  # type: ignore[assignment]
    return kl_suite.value("kl", full, suppressed)


def _keyed_frequency_set(
    lf: pl.LazyFrame, fs: FrequencySet, codes: Sequence[pl.Expr], cards: Sequence[int],
    hs: Mapping[str, Hierarchy], models: Sequence[Model], engine: str,
) -> EncodedFrequencySet | None:
    """A QI-only frequency set grouped by the engine on one Int64 key per row, the
    mixed-radix number of the QIs' raw-value indices (``codes``; first QI most significant,
    each QI's radix the number of its raw values): one key column is grouped faster than
    one column per QI, and the keys become the search's base as they are (see
    :meth:`EncodedFrequencySet.from_keys`). ``None`` when a QI value is null or not a
    raw value of its hierarchy (its key is null)."""
    key: pl.Expr | None = None
    for c, m in zip(codes, places(cards)):
        digit = c.cast(pl.Int64) * m
        key = digit if key is None else key + digit
    assert key is not None
    df = (lf.select(key.alias(_KEY)).group_by(_KEY).agg(pl.len().cast(pl.Int64).alias(COUNT))
          .collect(engine=engine))
    if df.height >= TUNING.ordered_sort_min_rows:
        # in key order: the roll-ups that sort their keys merge runs (1M-row sample: the
        # first level's pins 5.5-16.5 -> 2-3.5 ms each); below, no roll-up would (and the
        # sort costs 1.4 ms on Adult's 30K rows)
        df = df.sort(_KEY)
    keys = df.get_column(_KEY)
    if keys.null_count():
        return None
    return EncodedFrequencySet.from_keys(
        _qi_only_columns(fs, models), hs, keys.to_numpy().astype(np.int64, copy=False),
        df.get_column(COUNT).to_numpy().astype(np.int64, copy=False))


_KEY = "__ldiv_key"


def _encoded_frequency_set(
    lf: pl.LazyFrame, fs: FrequencySet, hs: Mapping[str, Hierarchy], models: Sequence[Model],
    nulls: NullPolicy, engine: str = STREAMING,
) -> EncodedFrequencySet | None:
    """The frequency set grouped on each QI's raw-value index (an Enum cast in the engine,
    Int32 keys) instead of its strings: the same classes, a cheaper group-by, and no
    string-keyed frame kept alive. ``None`` when a QI value is not a raw value of its
    hierarchy (or is null): the caller then takes the string path for the typed error.
    Without a sensitive column the engine groups on one Int64 key per row, the mixed-radix
    number of the indices (see :func:`_keyed_frequency_set`)."""
    codes = []
    schema = lf.collect_schema()
    for q in fs.qi:
        c = _raw_index(q, hs[q], schema, strict=False)
        if c is None:
            return None
        codes.append(c)
    cards = [len(hs[q].column(0)) for q in fs.qi]
    if not fs.sensitive and math.prod(max(c, 1) for c in cards) < 2**62:
        return _keyed_frequency_set(lf, fs, codes, cards, hs, models, engine)
    exprs = [c.cast(pl.Int32).fill_null(-1).alias(q) for c, q in zip(codes, fs.qi)]
    # the encoded QI columns are never null (a null or unknown value is -1, and the string
    # path then raises the typed error): the null guard is needed for sensitive columns only
    enc = FrequencySet.build(lf.with_columns(exprs), fs.qi, fs.sensitive,
                             nulls=nulls if fs.sensitive else "value")
    enc = enc.materialize()
    df = enc.frame.collect()
    if df.height and bool(df.select(pl.min_horizontal(pl.col(q).min() for q in fs.qi) < 0)
                          .item()):
        return None
    for m in models:
        m.validate(enc)
    return EncodedFrequencySet.from_encoded_frame(enc, hs)


MASK = "*"
"""The value of every QI of a masked (suppressed) row."""


def output_dtype(h: Hierarchy, level: int) -> pl.Enum:
    """The dtype of a QI column of :func:`anonymize`'s output: an Enum of the level's labels in
    hierarchy order, plus :data:`MASK` when it is not one of them.

    >>> h = Hierarchy([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]], name="z")
    >>> output_dtype(h, 1).categories.to_list(), output_dtype(h, 2).categories.to_list()
    (['x', 'y', '*'], ['*'])
    """
    labels = h.level_codes()[h.check_level(level)][1]  # (in hierarchy order, cached)
    return pl.Enum(labels if MASK in labels else [*labels, MASK])


def _generalize(q: str, h: Hierarchy, level: int, dtype: pl.Enum, schema: pl.Schema
                ) -> pl.Expr:
    """The values of :func:`~ldiv_polars.hierarchy.generalize_expr` (the values were
    validated against the hierarchy) as ``dtype`` (:func:`output_dtype`), computed as a gather
    of the level's labels by the raw value's index (:func:`_raw_index`): in the streaming
    engine this holds about 0.9 GB less than ``replace_strict`` on a 10M-row table, and the
    Enum output is written to Parquet and re-verified without hashing a string per row (1M
    rows: 0.25 -> 0.12 s for both)."""
    idx = _raw_index(q, h, schema, strict=True)
    if idx is None:  # pragma: no cover - validated hierarchies
        return generalize_expr(q, h, level).cast(dtype)
    return pl.lit(h.column(level).cast(pl.String).cast(dtype)).gather(idx)


def _sensitive_enums(retained: pl.LazyFrame, values: pl.DataFrame
                     ) -> tuple[pl.LazyFrame, dict[str, pl.DataType]]:
    """The retained rows with each String sensitive column cast to an Enum of its distinct
    values (all of the table's are in ``values``, the frequency set's sensitive tuples), and
    the dtypes to cast the verification's frequency set back to. The re-verification's
    streaming group-by then keys on small integers: on 100M rows with a 20-value string
    column its pass peaked at 2.54 GB, 1.87 GB with the Enum. Other dtypes are kept."""
    schema = retained.collect_schema()
    casts: list[pl.Expr] = []
    restore: dict[str, pl.DataType] = {}
    for c in values.columns:
        if schema.get(c) != pl.String:
            continue
        cats = values.get_column(c).drop_nulls().unique().sort()
        casts.append(pl.col(c).cast(pl.Enum(cats)))
        restore[c] = pl.String()
    return (retained.with_columns(casts) if casts else retained), restore


def _output_plan(
    lf: pl.LazyFrame, efs: EncodedFrequencySet, rolled: Any, suppressed: np.ndarray,
    hs: Mapping[str, Hierarchy], mode: str,
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(output, retained rows) as lazy plans: generalize, then mask or drop suppressed classes."""
    levels = rolled.snapshot.levels
    qi = list(efs.qi)
    dtypes = {q: output_dtype(hs[q], lv) for q, lv in zip(qi, levels)}
    schema = lf.collect_schema()
    gen = lf.with_columns([_generalize(q, hs[q], lv, dtypes[q], schema).alias(q)
                           for q, lv in zip(qi, levels)])
    if not suppressed.any():
        return gen, gen
    # suppressed classes as one struct set tested row by row: an elementwise expression, so
    # the output plan streams (a left join with maintain_order buffered the table)
    supp = efs.class_labels(rolled, np.flatnonzero(suppressed)).select(
        pl.struct([pl.col(q).cast(dtypes[q]) for q in qi]).alias(_FLAG)).get_column(_FLAG)
    flag = pl.struct(qi).is_in(supp.implode())
    retained = gen.filter(~flag)
    if mode == "drop":
        return retained, retained
    masked = gen.with_columns(flag.alias(_FLAG)).with_columns(
        [pl.when(pl.col(_FLAG)).then(pl.lit(MASK, dtype=dtypes[q])).otherwise(pl.col(q)).alias(q)
         for q in qi]
    ).drop(_FLAG)
    return masked, retained
