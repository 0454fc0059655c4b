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
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import polars as pl

from ldiv_polars.core.engines import polars as polars_engine
from ldiv_polars.core.engines.base import (
    EncodedCounts,
    Engine,
    OutputPlan,
    engine_for,
    held_enum,
)
from ldiv_polars.core.engines.polars import read_coded, sensitive_enums, small_csv
from ldiv_polars.core.frequency import STREAMING, FrequencySet, count_name
from ldiv_polars.core.inputs import (
    PARQUET_SUFFIXES,
    TableLike,
    input_paths,
    reads_input,
    to_lazyframe,
)
from ldiv_polars.core.output import OutputFile, atomic_output
from ldiv_polars.core.validate import NullPolicy, require_real, validate_weight
from ldiv_polars.errors import InvalidParameterError, LdivError
from ldiv_polars.hierarchy.generalize import generalize
from ldiv_polars.hierarchy.hierarchy import Hierarchy, as_hierarchy
from ldiv_polars.models.base import Model, model_sources
from ldiv_polars.models.verdict import (
    CheckResult,
    WeightRows,
    bind_models,
    check_frequency_set,
    check_models,
    require_weights,
)
from ldiv_polars.search.metrics import MetricSuite, check_metric
from ldiv_polars.search.population import weight_sums
from ldiv_polars.search.rollup import EncodedFrequencySet
from ldiv_polars.search.snapshot import Rolled, Snapshot
from ldiv_polars.search.anytime import Budget
from ldiv_polars.search.strategies import STRATEGIES, Progress, SearchOutcome, search_lattice
from ldiv_polars.search.suppression import NodeChecker, suppression_limit_rows
from ldiv_polars.search.tuning import TUNING

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
    verification: Any = field(repr=False, default=None)
    _plan_made: _VerificationPlan | None = field(repr=False, default=None)
    _plan_of: Any = field(repr=False, default=None)
    """Makes the re-verification's plan when first needed (:attr:`_plan`, read by
    :meth:`sink`): ``anonymize(verify=False)`` plans no re-verification it was not asked
    for."""
    bound: float | None = None
    """A lower bound of the optimum's value: ``value`` itself for the exact strategies, the
    anytime search's bound otherwise (None when no node was found, or ``kl`` under anytime)."""
    gap: float | None = None
    """``(value - bound) / value``: 0 when the optimum is proven, None without a bound."""
    _release_of: Callable[[], _Release] | None = field(repr=False, default=None)
    """The optimum's release (:attr:`output`, :attr:`output_plan`), made on first use
    (cached): ``anonymize(verify=False)`` builds no release nobody reads."""
    sources: tuple[str, ...] = field(repr=False, default=())
    """The input file(s) ``output`` reads (a path given, or the scans of a LazyFrame; empty for
    a DataFrame): :meth:`sink` refuses to write over them."""

    @property
    def output(self) -> pl.LazyFrame | None:
        """The release: a lazy plan over the input (generalize + suppression), None when no
        node was found or the input was a frequency set (counts). It reads the input when
        collected: a file as it is then; an in-memory frame as it was at the call, except
        memory it shares with numpy arrays the caller writes to afterwards (Polars builds a
        frame from an array without copying). :meth:`sink` re-verifies what it writes."""
        return None if self._release_of is None else self._release_of().output

    @property
    def output_plan(self) -> OutputPlan | None:
        """The chosen node's release as the engines take it (labels per raw value, suppressed
        classes): what :mod:`~ldiv_polars.search.federated` sends to the sites."""
        return None if self._release_of is None else self._release_of().plan

    @property
    def found(self) -> bool:
        """Whether the search found a node satisfying the models."""
        return self.levels is not None

    def sink(self, path: str | Path, *, verify: bool = True) -> None:
        """Write ``output`` to ``path`` (Parquet, or CSV when ``path`` ends in ``.csv``, ``.tsv``
        with tabs) in one
        streaming pass. With ``verify``, the checker re-verifies the retained rows (the check
        ``anonymize(verify=True)`` makes): on inputs of up to ``FUSED_VERIFY_MAX_ROWS`` rows
        their frequency set is built by the same pass as the write, on larger ones by a second
        pass (two consumers of one streamed input make Polars buffer rows: BENCHMARKS.md).
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
        plan = self._plan
        if plan is not None and plan.engine is not None:
            plan.engine.write(self.output, path, inputs=self.sources, expected_rows=expected)
            if verify:
                assert self.output_plan is not None
                self.verification = plan.verify_written(
                    path, self.output_plan, self.rows - self.suppressed_rows)
            return
        with atomic_output(path, inputs=self.sources) as out:
            if verify and plan is not None and plan.count_output is not None \
                    and self.rows <= FUSED_VERIFY_MAX_ROWS:
                self.verification = self._write_counted(out, plan)
                out.check_rows(expected)
                return
            write = out.sink(self.output)
            if not verify or plan is None:
                write.collect(engine=STREAMING)
            else:
                if self.rows <= FUSED_VERIFY_MAX_ROWS:
                    _, fs = pl.collect_all([write, plan.fs.frame], engine=STREAMING)
                else:
                    write.collect(engine=STREAMING)
                    fs = plan.fs.materialize()
                self.verification = plan.verify(fs)
            out.check_rows(expected)

    def _write_counted(self, out: OutputFile, plan: _VerificationPlan) -> CheckResult:
        """Write the release and re-verify the rows written (an in-memory input's QI-only
        plan, :attr:`_VerificationPlan.count_output`): the release collected once, then one
        pass writes that frame and counts its classes, the masked class is taken out and the
        models are checked on the rest (:meth:`_VerificationPlan.verify_output`). The counts
        are of the very rows in the file, not of a second evaluation of the release; a
        count of retained rows other than ``rows - suppressed_rows`` raises
        :class:`VerificationError`."""
        assert plan.count_output is not None and self.output_plan is not None
        rows = self.output.collect()
        written = plan.count_output(rows.lazy())
        _, counted = pl.collect_all([out.sink(rows.lazy()), written.frame], engine=STREAMING)
        del rows
        return plan.verify_output(
            FrequencySet(counted.lazy(), written.qi, written.sensitive, written.count,
                         unique=written.unique), self.output_plan,
            self.rows - self.suppressed_rows)

    @property
    def _plan(self) -> _VerificationPlan | None:
        """The re-verification's plan (None without an output), made now if ``anonymize``
        deferred it."""
        if self._plan_made is None and self._plan_of is not None:
            self._plan_made, self._plan_of = self._plan_of(), None
        return self._plan_made

    def _repr_html_(self) -> str:
        """The search's figures (:meth:`to_dict`) as a plain HTML table: how a notebook shows
        the result (``ldiv_polars.report`` draws the full page)."""
        from html import escape

        label = {"checked": "nodes checked", "rollups": "roll-ups"}
        rows = "".join(
            f"<tr><th>{escape(label.get(k, k.replace('_', ' ')))}</th>"
            f"<td>{escape(str(v))}</td></tr>"
            for k, v in self.to_dict().items() if not isinstance(v, (dict, list)))
        return f"<table>{rows}</table>"

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
(:meth:`AnonymizationResult.sink`); larger ones in two, since one pass's extra peak memory
grows with the rows (BENCHMARKS.md)."""


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
    engine: Any = None
    """The distributed engine whose release this verifies (writes with :meth:`Engine.write`);
    None for Polars plans."""
    nulls: NullPolicy = "error"
    weight: str | None = None
    """The column of sampling weights the models read (its sums are :attr:`fs`'s weight)."""
    rows: pl.LazyFrame | None = None
    """The retained rows themselves (Polars plans): read again, on the few classes whose
    weight sum is within rounding of a threshold, to decide them exactly."""
    count_output: Callable[[pl.LazyFrame], FrequencySet] | None = None
    """The (lazy) frequency set of a frame of the release's rows as written (masked rows
    included), on :attr:`fs`'s columns: set for the QI-only plans of an input in memory,
    whose output :meth:`AnonymizationResult.sink` collects, writes and counts in one pass;
    None otherwise."""

    def verify_written(self, path: str | Path, plan: OutputPlan, retained_rows: int
                       ) -> CheckResult:
        """Re-verify the release the engine wrote at ``path``: its frequency set recounted
        by the engine from the written files (one pass over the output, not the input), the
        masked class taken out (:meth:`OutputPlan.retained_classes`; it must hold every
        suppressed row: ``retained_rows`` remain), the models checked on the rest. Where
        the masked class could merge with a retained one, the retained rows are recounted
        from the input instead."""
        qi, sens = self.fs.qi, self.fs.sensitive
        written = self.engine.frequency_set(str(path), qi, sens or None, nulls=self.nulls,
                                            weight=self.weight)
        return self.verify_output(written, plan, retained_rows)

    def verify_output(self, written: FrequencySet, plan: OutputPlan, retained_rows: int
                      ) -> CheckResult:
        """Re-verify a release from ``written``, the frequency set of its rows as written
        (masked rows included; lazy or collected): the masked class taken out
        (:meth:`OutputPlan.retained_classes`; it must hold every suppressed row:
        ``retained_rows`` remain, else :class:`VerificationError`), the models checked on
        the rest. Where the masked class could merge with a retained one, the retained rows
        are recounted from the input (:attr:`fs`) instead."""
        kept = plan.retained_classes(written.frame.collect())
        if kept is None:
            return self.verify(self.fs.materialize())
        got = int(kept.get_column(written.count).sum() or 0)
        if got != retained_rows:
            raise VerificationError(
                f"the written release holds {got} rows outside the suppressed classes, "
                f"{retained_rows} were expected, at node {self.node}")
        names = {written.count: self.fs.count}
        if written.weight and self.fs.weight:
            names[written.weight] = self.fs.weight
        return self.verify(FrequencySet(kept.rename(names).lazy(), self.fs.qi,
                                        self.fs.sensitive, self.fs.count,
                                        weight=self.fs.weight))

    def verify(self, collected: FrequencySet | pl.DataFrame) -> CheckResult:
        """Check the models on the collected frequency set; raise if one fails."""
        if isinstance(collected, FrequencySet):
            collected = collected.frame.collect() if isinstance(collected.frame, pl.LazyFrame) \
                else collected.frame
        if self.restore:
            collected = collected.with_columns(pl.col(c).cast(dt) for c, dt in
                                               self.restore.items())
        rows = self.rows
        exact = None if rows is None or self.weight is None else WeightRows(
            lambda: rows, self.weight)
        result = check_frequency_set(
            FrequencySet(collected.lazy(), self.fs.qi, self.fs.sensitive, self.fs.count,
                         weight=self.fs.weight), self.models, weight_rows=exact)
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
    """One :class:`~ldiv_polars.hierarchy.Hierarchy` per quasi-identifier, in ``qi`` order
    (frames and CSV paths read with ``separator``); raises
    :class:`~ldiv_polars.errors.InvalidParameterError` naming the QIs without one."""
    missing = [q for q in qi if q not in hierarchies]
    if missing:
        raise InvalidParameterError(
            f"no hierarchy given for quasi-identifier(s) {', '.join(map(repr, missing))}"
        )
    return {q: as_hierarchy(hierarchies[q], name=q, separator=separator) for q in qi}


@reads_input
def anonymize(
    data: TableLike, qi: str | Iterable[str], sensitive: str | Iterable[str] | None,
    hierarchies: Mapping[str, Hierarchy | pl.DataFrame | str | Any],
    models: Sequence[Model] | Model, *, suppression: float = 0.0, metric: str = "aecs",
    suppression_mode: SuppressionMode = "mask", strategy: str = "auto", verify: bool = True,
    nulls: NullPolicy = "error", separator: str | None = None, engine: str | None = None,
    progress: Progress | None = None, budget: Budget | float | None = None,
    weight: str | None = None,
) -> AnonymizationResult:
    """Find the optimal full-domain generalization of ``qi`` satisfying all ``models``.

    One streaming pass over ``data`` builds the frequency set; the lattice search rolls it up
    (never rescanning rows). ``suppression`` is the largest fraction of rows that may be
    suppressed (rows of classes failing a model); ``suppression_mode`` ``"mask"`` keeps them
    with every QI set to ``*``, ``"drop"`` removes them; their number is always reported.
    ``metric`` is the optimization target (``aecs``, ``discernibility``, ``entropy``,
    ``height``, ``kl``, ``loss``, ``precision``; lower is better). ``strategy``: ``auto``
    (Flash for a monotone predicate, bounded on large sets with suppression: no minimal set;
    else exhaustive), ``flash``, ``exhaustive``, ``bounded`` (optimum only), ``anytime`` (the
    best node in ``budget`` seconds or :class:`~ldiv_polars.search.anytime.Budget`, with
    ``bound`` and ``gap``; ``auto`` picks it past ``TUNING.anytime_min_nodes`` nodes). QI
    columns of the output are Enums of the chosen level's labels the release holds, in
    hierarchy order (:func:`output_dtype`; Parquet stores them dictionary-encoded). The output is
    re-verified with :func:`ldiv_polars.check` on the retained rows (``verify=False`` skips
    that pass; :meth:`AnonymizationResult.sink` then writes and re-verifies the output).
    ``engine="spark"`` (or a Spark DataFrame): counts, release (``output`` a Spark DataFrame,
    :meth:`~AnonymizationResult.sink` writes a Parquet directory) and verification in Spark;
    ``weight``: sampling weights for the models reading them (:func:`_check_weight`).

    The pipeline: :func:`_read_input` (arguments checked, hierarchies and models prepared),
    :func:`_count` (the encoded frequency set, by the engine that counts this input best),
    :func:`search_lattice`, :func:`_choose` (the optimum re-evaluated, its metrics and output
    plan), the engine's release, :func:`_verification`; :class:`_Counts` frees memory between.
    """
    t0 = time.perf_counter()
    metric = _check_arguments(metric, suppression, suppression_mode, strategy)
    budget = Budget.of(budget) if budget is not None else None
    inp = _check_weight(_read_input(data, qi, sensitive, hierarchies, models, metric, nulls,
                                    separator, engine), weight)
    counts = _count(inp)
    try:
        limit = suppression_limit_rows(suppression, counts.total)
        outcome = search_lattice(counts.search_efs, inp.models, limit, metric,
                                 strategy=strategy, progress=progress, budget=budget)
        result = _result(inp, counts, outcome, limit, metric, suppression_mode, verify, t0)
    finally:
        counts.close()
    result.sources = (*inp.sources, *model_sources(inp.models))  # (a population table)
    return result


def _check_arguments(metric: str, suppression: float, suppression_mode: str,
                     strategy: str) -> str:
    """The metric's canonical name, after checking every scalar argument."""
    metric = check_metric(metric)
    if suppression_mode not in ("mask", "drop"):
        raise InvalidParameterError(
            f"suppression_mode must be 'mask' or 'drop', got {suppression_mode!r}"
        )
    if strategy not in STRATEGIES:
        raise InvalidParameterError(
            f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    require_real("suppression", suppression, low=0.0, high=1.0)
    return metric


@dataclass
class _Input:
    """The checked input: ``table`` is what the engines read (a DataFrame when the rows are
    in memory, else the lazy scan ``lf``), ``fs`` its (lazy) string-keyed frequency set."""

    path: str | Path | None
    table: pl.DataFrame | pl.LazyFrame
    lf: pl.LazyFrame
    fs: FrequencySet
    hs: dict[str, Hierarchy]
    models: list[Model]
    qi_only: bool
    nulls: NullPolicy
    sources: tuple[str, ...]
    engine: Engine = polars_engine.ENGINE
    weight: str | None = None
    """The column of sampling weights (``anonymize(weight=)``), checked; None without."""

    @property
    def leaves(self) -> dict[str, pl.Series]:
        """Each QI's raw values, in hierarchy order (a value's code is its index)."""
        return {q: self.hs[q].column(0) for q in self.fs.qi}


def _read_input(data: TableLike, qi: Any, sensitive: Any, hierarchies: Any, models: Any,
                metric: str, nulls: NullPolicy, separator: str | None,
                engine: str | None = None) -> _Input:
    """Columns, models and hierarchies checked (before any pass over the rows); a small CSV
    read into memory once, its QIs parsed as codes (the search's pass and the output's write
    both read that frame). A distributed engine (Spark) gets ``data`` as it is."""
    if isinstance(data, FrequencySet):  # counts only (federated.anonymize_counts)
        return _counts_input(data, hierarchies, models, metric)
    sources = input_paths(data)
    reader = engine_for(data, engine)
    if reader.distributed:
        return _engine_input(reader, data, qi, sensitive, hierarchies, models, metric, nulls,
                             separator, sources)
    lf = to_lazyframe(data, separator=separator)
    fs = FrequencySet.build(lf, qi, sensitive, nulls=nulls)
    checked = check_models(models, fs.sensitive, required_by="anonymize()")
    hs = prepare_hierarchies(fs.qi, hierarchies)
    path = data if isinstance(data, (str, Path)) else None
    # a DataFrame is pinned as it is now (a shallow clone: its columns are shared, never
    # copied): a release made after the call (verify=False) reads the rows the search
    # checked even if the caller's frame is changed through Polars meanwhile (a column
    # replaced, rows appended). Not pinned: a buffer Polars shares zero-copy with a numpy
    # array the caller still writes (pl.DataFrame({"a": arr}) then arr[:] = ...); sink()'s
    # re-verification then judges the rows it writes
    table: pl.DataFrame | pl.LazyFrame = data.clone() if isinstance(data, pl.DataFrame) \
        else lf
    if small_csv(data, IN_MEMORY_CSV_MAX_BYTES):
        assert path is not None
        table = read_coded(path, separator, lf, fs.qi, {q: hs[q].column(0) for q in fs.qi})
        lf = table.lazy()
        fs = FrequencySet.build(lf, fs.qi, fs.sensitive, nulls=nulls)
        path = None  # (read: the engines read the frame)
    # models and metric reading only class sizes/codes: search on the QI-only frequency set
    qi_only = metric != "kl" and not any(m.needs_sensitive for m in checked)
    return _Input(path, table, lf, fs, hs, checked, qi_only, nulls, sources,
                  polars_engine.ENGINE if engine is None else reader)


def _check_weight(inp: _Input, weight: str | None) -> _Input:
    """``inp`` with ``weight`` (a column of sampling weights, finite and > 0) checked against
    the input and the models before any pass over the rows (a model reading weights needs
    it, a frequency set given instead of rows has none: else
    :class:`~ldiv_polars.errors.InvalidParameterError`). With weights, :func:`_count` has
    the engine sum them per raw QI key (one more pass) and the search rolls the sums up with
    each node for the models reading them (:class:`~ldiv_polars.models.WeightedKAnonymity`);
    every other model, the suppression limit and the suppressed-row counts read records."""
    require_weights(inp.models, weight)
    if weight is None:
        return inp
    if inp.table is None:
        raise InvalidParameterError("a frequency set holds no sampling weights: anonymize the "
                                    "rows to read weight=")
    schema = inp.engine.schema(inp.table) if inp.engine.distributed else \
        inp.lf.collect_schema()
    inp.weight = validate_weight(schema, weight, inp.fs.keys)
    return inp


def _counts_input(fs: FrequencySet, hierarchies: Any, models: Any, metric: str) -> _Input:
    """The checked input of a frequency set given instead of rows (collected; its nulls are
    values): searched as it is, its optimum verified on it, nothing released."""
    fs = fs.materialize() if isinstance(fs.frame, pl.LazyFrame) else fs
    checked = check_models(models, fs.sensitive, required_by="anonymize()")
    hs = prepare_hierarchies(fs.qi, hierarchies)
    qi_only = metric != "kl" and not any(m.needs_sensitive for m in checked)
    return _Input(None, None, fs.frame, fs, hs, checked, qi_only, "value", ())  # type: ignore[arg-type]


def _engine_input(reader: Engine, data: Any, qi: Any, sensitive: Any, hierarchies: Any,
                  models: Any, metric: str, nulls: NullPolicy, separator: str | None,
                  sources: tuple[str, ...]) -> _Input:
    """The checked input of a distributed engine: its frequency set is the engine's lazy
    plan (:meth:`Engine.plan_frequency_set`: columns checked now, rows read by the engine)."""
    fs = reader.plan_frequency_set(data, qi, sensitive, nulls=nulls, separator=separator)
    sources = sources or reader.input_paths(data)
    checked = check_models(models, fs.sensitive, required_by="anonymize()")
    hs = prepare_hierarchies(fs.qi, hierarchies)
    qi_only = metric != "kl" and not any(m.needs_sensitive for m in checked)
    return _Input(None, data, fs.frame, fs, hs, checked, qi_only, nulls, sources, reader)


DUCKDB_MIN_ROWS = 1_000_000
"""Parquet files of at least this many rows (one sensitive column at most) are counted by
the DuckDB engine under a memory limit (:mod:`ldiv_polars.core.engines.duckdb`)."""


def _counting_engine(inp: _Input) -> Engine:
    """The distributed engine the input was given to; DuckDB for a Parquet file when asked
    for, or by default for a large one (imported only then); else Polars."""
    if inp.engine.distributed:
        return inp.engine
    path = inp.path
    if path is None or len(inp.fs.sensitive) > 1:
        return polars_engine.ENGINE
    p = Path(path)
    if p.suffix.lower() not in PARQUET_SUFFIXES or not p.is_file():
        return polars_engine.ENGINE
    if inp.engine.name != "duckdb" \
            and pl.scan_parquet(p).select(pl.len()).collect().item() < DUCKDB_MIN_ROWS:
        return polars_engine.ENGINE
    return engine_for(path, "duckdb")


@dataclass
class _Counts:
    """The encoded frequency set through the pipeline's phases, and the one place that frees
    memory between them: the search's copy and snapshots after the search
    (:meth:`after_search`), the whole set once the output is planned (:meth:`after_plan`),
    handing freed pages back to the OS on large sets (:func:`_trim_heap`). ``source`` is the
    engine's open handle (DuckDB's table) for the counts read after the search."""

    efs: EncodedFrequencySet | None
    search_efs: EncodedFrequencySet | None
    source: Any = None
    search_rollups: int = 0

    @property
    def total(self) -> int:
        assert self.efs is not None
        return int(self.efs.total)

    @property
    def large(self) -> bool:
        return self.efs is not None and self.efs.base_rows >= TRIM_MIN_ROWS

    def after_search(self) -> EncodedFrequencySet:
        """Release the search's snapshot cache and hubs (the QI-only copy entirely); the
        encoded set stays for the optimum's roll-up."""
        assert self.efs is not None
        self.search_rollups = self.search_efs.rollups \
            if self.search_efs is not self.efs and self.search_efs is not None else 0
        self.search_efs = None
        self.efs.release()
        if self.large:
            _trim_heap()
        return self.efs

    def after_plan(self) -> None:
        """Drop the encoded set (the output plan holds what it needs) before the output's
        passes, which build their own frequency sets."""
        large = self.large
        self.efs = None
        if large:
            _trim_heap()

    def close(self) -> None:
        """Close the engine's handle."""
        if self.source is not None:
            self.source.close()
            self.source = None


def _count(inp: _Input) -> _Counts:
    """The encoded frequency set of the input (see :class:`EncodedCounts` for the forms), from
    the counting engine (``inp.models`` bound to its records, ``Model.for_rows``); a value
    missing from a hierarchy (or a null QI) is reported by the
    string-keyed path, which raises the typed errors naming the values."""
    engine = _counting_engine(inp)
    fs = inp.fs
    table = inp.path if engine.name == "duckdb" else inp.table
    counts = None if inp.table is None else engine.encoded_counts(
        table, fs.qi, fs.sensitive, inp.leaves, nulls=inp.nulls, qi_only=inp.qi_only,
        order_from=TUNING.ordered_sort_min_rows)
    if counts is None and engine.name != "polars" and not engine.distributed:
        counts = polars_engine.ENGINE.encoded_counts(
            inp.table, fs.qi, fs.sensitive, inp.leaves, nulls=inp.nulls,
            qi_only=inp.qi_only, order_from=TUNING.ordered_sort_min_rows)
    if counts is None:
        mat = fs.materialize()
        for m in inp.models:
            m.validate(mat)
        efs = EncodedFrequencySet.from_frame(mat, inp.hs)
        del mat
    else:
        try:
            efs = _encoded_set(counts, inp)
        except BaseException:
            counts.close()  # (the engine's handle: a model refusing the values, say)
            raise
    if inp.weight is not None:  # F_k per raw key, rolled up with each node
        weight_sums(inp.engine, inp.table, inp.weight, efs.encoding)
    search_efs = efs.without_sensitive() if inp.qi_only and efs.sensitive else efs
    _lean_search(search_efs)
    # models sized by the table (k-map's k') judge it by its records before suppression
    inp.models = bind_models(inp.models, int(efs.total))
    return _Counts(efs, search_efs, source=None if counts is None else counts.source)


def _encoded_set(counts: EncodedCounts, inp: _Input) -> EncodedFrequencySet:
    """The search's :class:`EncodedFrequencySet` of an engine's counts, the models validated
    on what the counts hold (no values for QI-only keys; the distinct sensitive values of
    cells)."""
    fs, hs = inp.fs, inp.hs
    if counts.form == "keys":
        assert counts.keys is not None and counts.n is not None
        efs = EncodedFrequencySet.from_keys(_qi_only_columns(fs, inp.models), hs,
                                            counts.keys, counts.n)
        efs.rollups = counts.rollups
    elif counts.form == "frame":
        assert counts.frame is not None
        for m in inp.models:
            m.validate(counts.frame)
        efs = EncodedFrequencySet.from_encoded_frame(counts.frame, hs)
    else:
        efs = _cells_set(counts, fs, hs, inp.models)
    if counts.raw_counts is not None:
        efs.known_raw_counts = counts.raw_counts  # counted by the engine's pass
    return efs


def _qi_only_columns(fs: FrequencySet, models: Sequence[Model]) -> FrequencySet:
    """An empty QI-only frequency set naming ``fs``'s QI columns (the ``fs`` argument of an
    :class:`EncodedFrequencySet` built from arrays), the models validated on it (QI-only
    models: there are no values to check)."""
    count = count_name(fs.qi)
    enc = FrequencySet(_empty_frame(tuple((q, pl.Int32) for q in fs.qi) + ((count, pl.Int64),))
                       .lazy(), fs.qi, (), count)
    for m in models:
        m.validate(enc)
    return enc


def _cells_set(counts: EncodedCounts, fs: FrequencySet, hs: Mapping[str, Hierarchy],
               models: Sequence[Model]) -> EncodedFrequencySet:
    """The ``(QI, sensitive)`` encoded frequency set of an engine's cells (sensitive ids as
    the engine numbered the values); the models are validated on the distinct sensitive
    values (all they check: e.g. hierarchical t-closeness, that each is a leaf of its
    hierarchy)."""
    s = fs.sensitive[0]
    values = counts.sensitive_values
    assert values is not None and counts.n is not None
    table = values.rename(s).to_frame()
    count = count_name(fs.keys)
    check = FrequencySet(  # lazy: collected only by the models that read the values
        table.lazy().select(_value_cells(fs.qi, s, count)), fs.qi, fs.sensitive, count)
    for m in models:
        m.validate(check)
    enc = FrequencySet(_empty_frame(tuple((q, pl.Int32) for q in fs.qi) + (
        (s, values.dtype), (count, pl.Int64))).lazy(), fs.qi, fs.sensitive, count)
    sid = (counts.sensitive_ids, table)
    if counts.codes is None and counts.class_keys is not None:  # already in class order
        return EncodedFrequencySet.from_class_keys(enc, hs, counts.class_keys, counts.n, sid)
    assert counts.codes is not None
    return EncodedFrequencySet.from_codes(enc, hs, counts.codes, counts.n, sensitive_ids=sid)


def _empty_frame(schema: tuple[tuple[str, Any], ...]) -> pl.DataFrame:
    """A new empty frame of ``schema`` (``(name, dtype)`` pairs): when every dtype is Int32,
    Int64 or String, a cleared copy of one made once per schema (Polars builds a frame from a
    schema in ~50 us, clears one in ~1 us); other dtypes (whose equality may be looser than
    identity) are built each time."""
    if all(dt in _PLAIN for _, dt in schema):
        return _frame_of_schema(tuple((c, _PLAIN[dt]) for c, dt in schema)).clear()
    return pl.DataFrame(schema=dict(schema))


_PLAIN = {pl.Int32: "Int32", pl.Int64: "Int64", pl.String: "String"}


@functools.lru_cache(maxsize=32)
def _frame_of_schema(schema: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    return pl.DataFrame(schema={c: getattr(pl, dt) for c, dt in schema})


@functools.lru_cache(maxsize=32)
def _value_cells(qi: tuple[str, ...], s: str, count: str) -> list[pl.Expr]:
    """The select making a frequency set of the distinct values of ``s`` (one cell each: every
    QI 0, count 1), the rows :func:`_cells_set` validates the models on."""
    zero = pl.lit(0, pl.Int32)
    return [zero.alias(q) for q in qi] + [pl.col(s), pl.lit(1, pl.Int64).alias(count)]


@dataclass
class _Choice:
    """The chosen node re-evaluated: its roll-up, verdict, metric values and output plan."""

    levels: list[int]
    rolled: Any
    verdict: Any
    values: dict[str, float]
    suite: MetricSuite
    plan: Callable[[], OutputPlan]
    level_maps: list[np.ndarray]
    level_cards: list[int]
    sensitive_values: pl.DataFrame | None


def _choose(counts: _Counts, inp: _Input, outcome: SearchOutcome, limit: int,
            mode: str) -> _Choice:
    """Roll the optimum up (while the search's snapshots can still be its source), release
    the search's memory, re-evaluate the node and plan its output."""
    assert counts.efs is not None and outcome.optimum is not None
    search_is_efs = counts.search_efs is counts.efs
    levels = outcome.lattice.levels(outcome.optimum)
    best = counts.efs.rollup(levels, cache=False) if search_is_efs else None
    efs = counts.after_search()
    rolled = best if best is not None else efs.rollup(levels, cache=False)
    del best
    checker = NodeChecker(efs, inp.models, limit)
    efs.codes_only = checker.codes_suffice
    verdict = checker.check(rolled)
    if not verdict.passed:  # pragma: no cover - the search only returns passing nodes
        raise VerificationError(f"the chosen node {levels} does not pass on re-evaluation")
    # the search's metric tables when it searched this very frequency set
    suite = outcome.metrics if search_is_efs and outcome.metrics is not None \
        else MetricSuite(efs)
    values = suite.values(rolled, verdict.suppressed)
    # the suppressed classes' labels now (they need the encoded set, freed after this), the
    # plan itself when the release is asked for
    plan = functools.cache(functools.partial(
        _output_plan, efs.qi, levels, _suppressed_labels(efs, rolled, verdict.suppressed),
        _held_labels(efs, rolled, verdict.suppressed), inp.hs, mode,
        _sensitive_dtypes(efs, rolled, verdict.suppressed, mode)))
    choice = _Choice(list(levels), rolled, verdict, values, suite, plan,
                     [efs.level_maps[i][lv] for i, lv in enumerate(levels)],
                     [max(efs.cards[i][lv], 1) for i, lv in enumerate(levels)],
                     efs.sensitive_table)  # (the distinct sensitive tuples: small)
    suite.efs = None  # type: ignore[assignment]
    return choice


def _result(inp: _Input, counts: _Counts, outcome: SearchOutcome, limit: int, metric: str,
            mode: str, verify: bool, t0: float) -> AnonymizationResult:
    """The optimum's release planned and verified, and the search's figures."""
    qi_t = inp.fs.qi
    lat = outcome.lattice
    minimal = None if outcome.minimal is None else [
        dict(zip(qi_t, lat.levels(n))) for n in outcome.minimal]
    common: dict[str, Any] = dict(
        qi=qi_t, sensitive=inp.fs.sensitive, rows=counts.total, metric=metric,
        suppression_limit_rows=limit, suppression_mode=mode, minimal=minimal,
        minimal_complete=outcome.minimal is not None, lattice_size=lat.size,
        strategy=outcome.strategy, monotone=outcome.monotone, monotone_reason=outcome.reason,
        notes=outcome.notes, checked=outcome.checked,
    )
    if outcome.optimum is None:
        counts.after_search()
        return AnonymizationResult(
            levels=None, value=None, metrics={}, classes=None, suppressed_rows=0,
            suppressed_classes=0, evaluations=outcome.evaluations,
            rollups=counts.efs.rollups + counts.search_rollups,  # type: ignore[union-attr]
            elapsed_s=time.perf_counter() - t0, **common,
        )
    choice = _choose(counts, inp, outcome, limit, mode)
    rollups = counts.efs.rollups + counts.search_rollups  # type: ignore[union-attr]
    counts.after_plan()
    if counts.source is not None and counts.source.sensitive:
        # kl reads the (class, sensitive) counts: rolled up from the engine's table
        choice.values["kl"] = _kl_from_source(counts.source, choice)
    verdict, values, levels = choice.verdict, choice.values, choice.levels
    release = functools.cache(functools.partial(_release, inp, choice.plan))
    if verify or inp.engine.distributed:  # (a distributed engine's input errors: now)
        release()
    sensitive_values = choice.sensitive_values
    del choice

    def make() -> _VerificationPlan:
        return _verification(release().retained, inp, levels, sensitive_values)

    plan = make() if verify else None  # (verify=False: made by sink(), if ever called)
    verification = plan.verify(plan.fs.materialize()) if plan is not None else None
    return AnonymizationResult(
        levels=dict(zip(qi_t, levels)), value=values[metric], metrics=values,
        classes=verdict.retained_classes, suppressed_rows=verdict.suppressed_rows,
        suppressed_classes=int(verdict.suppressed.sum()),
        evaluations=outcome.evaluations + verdict.evaluations, rollups=rollups,
        elapsed_s=time.perf_counter() - t0, verification=verification, _release_of=release,
        _plan_made=plan, _plan_of=None if verify else make,
        bound=outcome.bound if outcome.strategy == "anytime" else values[metric],
        gap=outcome.gap, **common,
    )


@dataclass(frozen=True)
class _Release:
    """The optimum's release: ``output`` (None for a counts input), its ``plan``, and the
    ``retained`` rows the re-verification counts."""

    output: Any
    plan: OutputPlan
    retained: Any


def _release(inp: _Input, plan_of: Callable[[], OutputPlan]) -> _Release:
    """The engine's release of the output plan over the input (over the frequency set's
    frame for a counts input, whose ``output`` is None)."""
    plan = plan_of()
    rel = inp.engine.release(inp.fs.frame if inp.table is None else inp.table, plan)
    return _Release(None if inp.table is None else rel.output, plan, rel.retained)


def _verification(retained: pl.LazyFrame, inp: _Input, levels: Sequence[int],
                  sensitive_values: pl.DataFrame | None) -> _VerificationPlan:
    """The re-verification of the retained rows: their frequency set (lazy) and the models.
    The output's QI columns are Enums (its classes are grouped on small integer keys), and so
    are string sensitive columns; models reading only class sizes are checked on the QI
    columns alone."""
    qi_t, sens_t = inp.fs.qi, inp.fs.sensitive
    node = dict(zip(qi_t, levels))
    models = [m.at_node(lambda t: generalize(t, inp.hs, node, check=False))
              for m in inp.models]
    restore: dict[str, pl.DataType] = {}
    if inp.table is None:  # counts: the released classes' counts summed
        keys = [*qi_t, *sens_t]
        vfs = FrequencySet(retained.group_by(keys).agg(pl.col(inp.fs.count).sum()), qi_t,
                           sens_t, inp.fs.count)
        return _VerificationPlan(vfs, check_models(inp.models, vfs.sensitive),
                                 dict(zip(qi_t, levels)))
    if inp.engine.distributed:  # the release is the engine's own plan: counted by it
        vfs = inp.engine.plan_frequency_set(retained, qi_t,
                                            None if inp.qi_only else (sens_t or None),
                                            nulls=inp.nulls, weight=inp.weight)
        return _VerificationPlan(vfs, check_models(models, vfs.sensitive), node,
                                 engine=inp.engine, nulls=inp.nulls, weight=inp.weight)
    if not inp.qi_only and sens_t and sensitive_values is not None:
        retained, restore = sensitive_enums(retained, sensitive_values)
    # QI-only: the output's Enum labels grouped on one key per row (the same classes)
    keyed = polars_engine.keyed_frequency_set(retained, qi_t) \
        if inp.qi_only and inp.weight is None and inp.nulls == "error" else None
    vfs = keyed or FrequencySet.build(retained, qi_t, None if inp.qi_only else (sens_t or None),
                                      nulls=inp.nulls, weight=inp.weight)
    # rows in memory: the output is collected once, and the rows written are counted
    counter = _count_output(qi_t) if keyed is not None and isinstance(inp.table, pl.DataFrame) \
        else None
    return _VerificationPlan(vfs, check_models(models, vfs.sensitive), node, restore,
                             weight=inp.weight, rows=retained, count_output=counter)


def _count_output(qi: tuple[str, ...]) -> Callable[[pl.LazyFrame], FrequencySet]:
    """The counter of :attr:`_VerificationPlan.count_output` for QI-only plans: the frame's
    classes on its Enum QI labels (:func:`~ldiv_polars.core.engines.polars.keyed_frequency_set`;
    a release's QI columns are Enums, so the key always fits the QIs of a plan that was
    keyed)."""
    def count(frame: pl.LazyFrame) -> FrequencySet:
        fs = polars_engine.keyed_frequency_set(frame, qi)
        assert fs is not None  # (the same Enum dtypes the plan was keyed on)
        return fs

    return count


TRIM_MIN_ROWS = 1 << 20
"""Frequency sets of at least this many rows hand freed memory back to the OS between phases
(``malloc_trim`` costs a few ms: not worth it on small ones)."""

LEAN_SEARCH_ROWS = 4_000_000
"""Frequency sets of at least this many rows are searched with a smaller snapshot cache and no
hub snapshots (see :func:`_lean_search`)."""


def _lean_search(efs: EncodedFrequencySet) -> None:
    """Bound the search's memory on a large frequency set: the snapshot cache holds at most half
    the base's rows, and no hub snapshots are made (neither the pinned ones of
    :meth:`~EncodedFrequencySet.prime` nor the on-demand ones). Roll-ups are exact from any
    source, so only the number of roll-ups and the time change, never a result."""
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
frequency-set pass and the output both read the frame); larger ones are scanned, twice."""


def _kl_from_source(source: Any, choice: _Choice) -> float:
    """The ``kl`` metric of the chosen node from the engine's ``(class, sensitive)`` counts
    (rolled up by the engine at the node's level maps) and the ``sum p log p`` of its
    ``(QI, sensitive)`` table: the formula of :class:`MetricSuite` on the same cells."""
    rolled, cards = choice.rolled, choice.level_cards
    levels = rolled.snapshot.levels
    ck, s, n = source.rolled_counts(levels, choice.level_maps, cards)
    # the roll-up's class keys in the same radix (first QI most significant): ascending
    ckeys = np.zeros(rolled.classes, dtype=np.int64)
    for i, c in enumerate(cards):
        ckeys = ckeys * c + rolled.class_codes[:, i]
    row_class = np.minimum(np.searchsorted(ckeys, ck), max(rolled.classes - 1, 0))
    if (rolled.classes and (np.any(np.diff(ckeys) <= 0) or np.any(ckeys[row_class] != ck)
                            or np.any(np.bincount(row_class, weights=n, minlength=rolled.classes)
                                      != rolled.class_size))):  # pragma: no cover - a bug
        raise VerificationError("the engine's roll-up does not match the search's classes")
    full = Rolled(Snapshot(levels, None, s, n), row_class.astype(np.int64),
                  rolled.class_codes, rolled.class_size)
    kl_suite = copy.copy(choice.suite)
    kl_suite.kl_const = source.kl_const()
    source.disconnect()
    kl_suite.efs = SimpleNamespace(n_sensitive=source.n_sensitive)  # type: ignore[assignment]
    return kl_suite.value("kl", full, choice.verdict.suppressed)


MASK = "*"
"""The value of every QI of a masked (suppressed) row."""


def output_dtype(h: Hierarchy, level: int, held: Collection[str] | None = None) -> pl.Enum:
    """The dtype of a QI column of :func:`anonymize`'s output: an Enum of the level's labels in
    hierarchy order (only those in ``held``, the labels the released rows hold, when given:
    the release names no value that only suppressed rows held), plus :data:`MASK` when it is
    not one of them.

    >>> h = Hierarchy([["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]], name="z")
    >>> output_dtype(h, 1).categories.to_list(), output_dtype(h, 2).categories.to_list()
    (['x', 'y', '*'], ['*'])
    >>> output_dtype(h, 0, held={"c", "a"}).categories.to_list()
    ['a', 'c', '*']
    """
    labels = h.level_codes()[h.check_level(level)][1]  # (in hierarchy order, cached)
    if held is not None:
        labels = [lab for lab in labels if lab in held]
    return pl.Enum(labels if MASK in labels else [*labels, MASK])


def _held_labels(efs: EncodedFrequencySet, rolled: Any, suppressed: np.ndarray
                 ) -> list[set[str]]:
    """Per QI, the generalized labels some retained (not ``suppressed``) class of node
    ``rolled`` holds: from the classes' codes, no pass over the rows."""
    codes = np.asarray(rolled.class_codes[~suppressed]).reshape(-1, len(efs.qi))
    lv = rolled.snapshot.levels
    return [{efs.level_labels[i][lv[i]][c] for c in np.unique(codes[:, i]).tolist()}
            for i in range(len(efs.qi))]


def _suppressed_labels(efs: EncodedFrequencySet, rolled: Any, suppressed: np.ndarray
                       ) -> pl.DataFrame | None:
    """The generalized labels (String columns) of node ``rolled``'s suppressed classes, None
    when none is."""
    return efs.class_labels(rolled, np.flatnonzero(suppressed)) if suppressed.any() else None


def _sensitive_dtypes(efs: EncodedFrequencySet, rolled: Any, suppressed: np.ndarray,
                      mode: str) -> dict[str, pl.DataType]:
    """The Enum sensitive columns' dtypes narrowed to the values the released rows hold
    (every row's when masked, the retained rows' when ``drop``ped), from node ``rolled``'s
    (class, sensitive) rows: the written dictionary names no value only dropped rows held."""
    table = efs.sensitive_table
    enums = [c for c in efs.sensitive if isinstance(table.schema.get(c), pl.Enum)]
    if not enums:
        return {}
    snap = rolled.snapshot
    keep = snap.n > 0
    if mode == "drop":
        keep &= ~suppressed[rolled.row_class]
    rows = table.select(enums)[np.unique(snap.s[keep]).tolist()]
    return {c: held_enum(table.schema[c], rows.get_column(c).cast(pl.String).to_list())
            for c in enums}


def _output_plan(qi: Sequence[str], levels: Sequence[int], suppressed: pl.DataFrame | None,
                 held: Sequence[Collection[str]], hs: Mapping[str, Hierarchy], mode: str,
                 sensitive_dtypes: Mapping[str, pl.DataType] | None = None) -> OutputPlan:
    """The release of the node at ``levels``: each QI's label per raw value at its level (of
    :func:`output_dtype`), the suppressed classes' output labels (``suppressed``, of
    :func:`_suppressed_labels`), and the written QIs' dtypes: Enums of only the labels the
    retained classes hold (``held``, of :func:`_held_labels`), and the Enum sensitive
    columns' (``sensitive_dtypes``, of :func:`_sensitive_dtypes`)."""
    qi = list(qi)
    dtypes = {q: output_dtype(hs[q], lv) for q, lv in zip(qi, levels)}
    labels = {q: hs[q].column(lv).cast(pl.String).cast(dtypes[q]) for q, lv in zip(qi, levels)}
    supp = None if suppressed is None else suppressed.select(
        pl.struct([pl.col(q).cast(dtypes[q]) for q in qi]).alias(_FLAG)).get_column(_FLAG)
    written = {**(sensitive_dtypes or {}),
               **{q: output_dtype(hs[q], lv, h) for q, lv, h in zip(qi, levels, held)}}
    return OutputPlan(tuple(qi), {q: hs[q].column(0) for q in qi}, labels, supp,
                      mode="drop" if mode == "drop" else "mask", mask=MASK, dtypes=written)
