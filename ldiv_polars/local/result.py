"""The result of a local method: plan, lazy output, verification, utility; and its writer."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core import batches
from ldiv_polars.core.batches import parquet_batches, single_parquet_file
from ldiv_polars.core.frequency import STREAMING
from ldiv_polars.core.inputs import input_paths
from ldiv_polars.core.output import OutputFile, atomic_output
from ldiv_polars.errors import LdivError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.classes import Semantics, class_verdicts
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.local.plan import ReleasePlan, build_plan
from ldiv_polars.local.utility import CellCosts, release_utility
from ldiv_polars.local.verify import (
    ReleaseVerification,
    ReleaseVerificationError,
    verify_release,
)
from ldiv_polars.models.base import Model


class InfeasibleError(LdivError, ValueError):
    """No release satisfies the models: the whole table, as one class, fails them."""


def require_feasible(table: KeyTable, models: Sequence[Model]) -> None:
    """Raise :class:`InfeasibleError` when the whole table fails a model (then even suppressing
    every cell cannot help: under both semantics every record's class is then the table)."""
    whole = table.histogram().sum(axis=0)[None, :]
    if table.keys and not class_verdicts(whole, models, table.s_values, table.reference())[0]:
        raise InfeasibleError(
            f"the whole table fails {', '.join(m.describe() for m in models)}: no "
            "suppression or recoding can satisfy it")


@dataclass
class LocalResult:
    """What :func:`~ldiv_polars.suppress_cells`, :func:`~ldiv_polars.generalize_and_suppress`
    and :func:`~ldiv_polars.local_recode` return. ``output`` is the lazy release (every input
    row; sink or collect it); ``verification`` the independent verifier's reading of it
    (``None`` with ``verify=False``: :meth:`sink` verifies what it writes); ``utility`` the
    figures of :func:`~ldiv_polars.local.utility.release_utility`; ``details`` what the method
    adds (rounds, node, the MILP's bound and gap, ...)."""

    method: str
    semantics: str
    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    plan: ReleasePlan = field(repr=False)
    output: pl.LazyFrame = field(repr=False)
    utility: dict[str, Any] = field(repr=False)
    details: dict[str, Any]
    elapsed_s: float
    verification: ReleaseVerification | None = field(repr=False, default=None)
    sources: tuple[str, ...] = field(repr=False, default=())
    """The files the input was read from (:meth:`sink` refuses to overwrite them)."""
    _models: list[Model] = field(repr=False, default_factory=list)
    _input: Any = field(repr=False, default=None)
    """What the release reads (a path, a frame): :meth:`sink` reads a Parquet file in batches."""
    _levels: bool = field(repr=False, default=False)
    """Whether ``output`` carries the per-record level columns."""

    @property
    def cells_suppressed(self) -> int:
        """The number of cells suppressed over every QI column."""
        return int(self.utility["cells_suppressed_total"])

    @property
    def records_touched(self) -> int:
        """The number of records with at least one cell changed."""
        return int(self.utility["records_touched"])

    def verify(self) -> ReleaseVerification:
        """Re-verify ``output`` (one pass); raise :class:`ReleaseVerificationError` when a
        model fails or the counts differ from the plan's."""
        v = verify_release(self.output, self.qi, self.sensitive or None, self._models,
                           self.semantics)
        _compare(v, self.plan)
        self.verification = v
        return v

    def sink(self, path: str | Path, *, verify: bool = True) -> None:
        """Write ``output`` to ``path`` (Parquet, or CSV/TSV by suffix) atomically
        (:func:`~ldiv_polars.core.output.atomic_output`: checked first -- never an input --,
        written beside it, renamed into place) and, with ``verify``, re-verify the written
        file before the rename: on a failure nothing replaces the target."""
        with atomic_output(path, inputs=self.sources) as out:
            self._write(out)
            if verify:
                written = pl.scan_parquet(out.path) if out.format == "parquet" else \
                    pl.scan_csv(out.path, separator=out.separator)
                v = verify_release(written, self.qi, self.sensitive or None, self._models,
                                   self.semantics, parquet_file=out.path
                                   if out.format == "parquet" else None)
                _compare(v, self.plan)
                self.verification = v
            out.check_rows(self.plan.rows)

    def _write(self, out: OutputFile) -> None:
        """Write the release to ``out``: when the input is one Parquet file, the plan applied
        to it in batches of :data:`~ldiv_polars.core.batches.BATCH_ROWS` rows, one at a time
        (bounded memory whatever the rows; the same rows and dtypes as ``output``); else
        ``output`` through Polars' streaming sink."""
        src = single_parquet_file(self._input)
        if src is None:
            out.sink(self.output).collect(engine=STREAMING)
            return
        schema = pl.scan_parquet(src).collect_schema()
        frames = (self.plan.apply(df, levels=self._levels).collect()
                  for df in parquet_batches(src, schema, rows=batches.BATCH_ROWS))
        out.write_frames(frames, self.output.collect_schema())

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (distributions left out)."""
        u = {k: v for k, v in self.utility.items() if k != "distributions"}
        return {"method": self.method, "semantics": self.semantics, **u,
                "details": self.details, "elapsed_s": round(self.elapsed_s, 4),
                "verified": None if self.verification is None else self.verification.passed}


def _compare(v: ReleaseVerification, plan: ReleasePlan) -> None:
    if not v.passed:
        failing = [m.key for m in v.check.models if not m.passed]
        raise ReleaseVerificationError(
            f"re-verification of the release failed for {', '.join(failing)}")
    if v.rows != plan.rows or v.suppressed_cells != plan.suppressed_cells:
        raise ReleaseVerificationError(
            f"the release has {v.rows} rows and null cells {v.suppressed_cells}; the plan "
            f"promised {plan.rows} and {plan.suppressed_cells}")


def finish(method: str, data: Any, table: KeyTable, levels: np.ndarray, models: list[Model],
           semantics: Semantics, hierarchies: Mapping[str, Hierarchy] | None,
           costs: CellCosts, details: dict[str, Any], t0: float, *, verify: bool,
           separator: str | None, level_columns: bool = False,
           source: object = None) -> LocalResult:
    """Plan, lazy output, utility and (with ``verify``) the re-verification of a release;
    ``data`` is the input as read (a LazyFrame), ``source`` what the caller passed (a path to
    one Parquet file is written in batches by :meth:`LocalResult.sink`)."""
    plan = build_plan(table, levels, hierarchies)
    output = plan.apply(data, levels=level_columns, separator=separator)
    res = LocalResult(method, semantics, table.qi, table.sensitive, plan, output,
                      release_utility(table, plan, costs, semantics), details, 0.0,
                      sources=input_paths(data), _models=models, _input=source,
                      _levels=level_columns)
    if verify:
        res.verify()
    res.elapsed_s = time.perf_counter() - t0
    return res
