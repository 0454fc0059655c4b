"""Every release method on the same input, measured with one loss: :func:`compare_methods`.

Methods (:data:`METHODS`):

- ``global``: full-domain generalization with record suppression
  (:func:`~ldiv_polars.search.anonymize`: one lattice node for every row, suppressed rows
  masked);
- ``cells``: cell suppression (:func:`~ldiv_polars.suppress_cells`, greedy or exact);
- ``gencells``: a lattice node, then cell suppression
  (:func:`~ldiv_polars.generalize_and_suppress`);
- ``local``: local recoding (:func:`~ldiv_polars.local_recode`);
- ``mondrian``: Mondrian partitioning (strict), QIs released as ranges / category sets.

**The common measure is ``loss``** (Iyengar's LM, :func:`~ldiv_polars.search.metrics.leaf_loss`)
**per QI cell**: a released cell that stands for ``v`` of the ``|D|`` values of its QI's domain
(the hierarchy's leaves; the table's values without hierarchies) costs ``(v - 1) / (|D| - 1)``,
in [0, 1]: a raw value 0, a suppressed cell 1, a hierarchy label the share of leaves below it, a
Mondrian range or set the share of domain values inside it. The release's loss is the mean over
its ``N x q`` cells. Every method is measured by :class:`~ldiv_polars.local.utility.CellCosts`,
so the figures are comparable; ``auto`` picks the least loss among the methods whose release
meets every model (ties: the order of :data:`METHODS`).

Classes are judged with a suppressed cell as a value of its own (the semantics under which the
classes of every method partition the table): the wildcard semantics of cell suppression is not
compared (a release under it is not comparable, see ``docs/local.md``).

>>> import polars as pl
>>> from ldiv_polars.models import KAnonymity
>>> df = pl.DataFrame({"zip": ["a", "a", "a", "b"], "age": [1, 1, 2, 2], "s": list("xyzx")})
>>> cmp = compare_methods(df, ["zip", "age"], "s", KAnonymity(2))
>>> cmp.table().filter(pl.col("status") == "ok").select("method", "cells_suppressed",
...                                                      "records_touched", "loss").rows()
[('cells', 2, 2, 0.25), ('mondrian', 0, 2, 0.25)]
>>> cmp.chosen, cmp.outcomes["local"].reason  # a tie goes to the first of METHODS
('cells', 'local needs hierarchies (one per QI)')
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, STREAMING
from ldiv_polars.core.inputs import TableLike, input_paths, to_lazyframe
from ldiv_polars.core.output import atomic_output
from ldiv_polars.errors import InvalidParameterError
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.cells import suppress_cells
from ldiv_polars.local.classes import Semantics, check_semantics
from ldiv_polars.local.combined import generalize_and_suppress
from ldiv_polars.local.keys import Importance, KeyTable
from ldiv_polars.local.plan import SUPPRESSED, build_plan
from ldiv_polars.local.recode import local_recode, passing_at
from ldiv_polars.local.result import InfeasibleError, LocalResult
from ldiv_polars.local.utility import CellCosts, flat_hierarchies, release_utility
from ldiv_polars.local.verify import ReleaseVerificationError
from ldiv_polars.models.base import Model
from ldiv_polars.models.verdict import check, check_models

METHODS = ("global", "cells", "gencells", "local", "mondrian")
"""The release methods compared, in the order that breaks ties of ``loss``."""
NEEDS_HIERARCHIES = ("global", "gencells", "local")
MEASURE = "loss"
"""The loss every method is measured (and ``auto`` chooses) by."""


@dataclass
class MethodInputs:
    """One input and the settings of every method, validated once (typed errors before any
    method runs): the key table (one pass) and the per-cell costs of its hierarchies."""

    data: TableLike
    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    models: list[Model]
    hierarchies: dict[str, Hierarchy] | None
    table: KeyTable
    costs: CellCosts
    importance: Importance = None
    semantics: Semantics = "value"
    exact: bool = False
    time_limit: float = 60.0
    suppression: float = 0.0
    metric: str = MEASURE
    separator: str | None = None

    @classmethod
    def build(cls, data: TableLike, qi: str | Iterable[str],
              sensitive: str | Iterable[str] | None, models: Sequence[Model] | Model, *,
              hierarchies: Mapping[str, Any] | None = None, importance: Importance = None,
              semantics: str = "value", exact: bool = False, time_limit: float = 60.0,
              suppression: float = 0.0, metric: str = MEASURE,
              separator: str | None = None) -> MethodInputs:
        """Read ``data`` once into its distinct-key table and check every argument (models,
        importance, semantics, hierarchies) before any method runs.

        Raises the library's typed errors (:class:`~ldiv_polars.errors.LdivError`) on bad input.
        """
        from ldiv_polars.search import prepare_hierarchies

        semantics_ = check_semantics(semantics)
        table = KeyTable.build(to_lazyframe(data, separator=separator), qi, sensitive)
        checked = check_models(models, table.sensitive, required_by="compare_methods()")
        table.weights(importance)  # an unknown QI or a bad weight fails here, not per method
        hs = None if hierarchies is None else prepare_hierarchies(table.qi, hierarchies)
        costs = CellCosts(table, hs if hs is not None else flat_hierarchies(table))
        return cls(data, table.qi, table.sensitive, checked, hs, table, costs, importance,
                   semantics_, exact, time_limit, suppression, metric, separator)


@dataclass
class MethodOutcome:
    """One method's release and figures. ``status``: ``ok`` (the release meets every model and
    was re-verified), ``fails`` (no release of this method meets them: ``reason``) or ``n/a``
    (the method does not take these inputs: ``reason``)."""

    method: str
    status: str
    reason: str = ""
    release: Any = field(repr=False, default=None)
    cells_suppressed: dict[str, int] = field(default_factory=dict)
    records_touched: int | None = None
    records_suppressed: int | None = None
    loss: float | None = None
    elapsed_s: float = 0.0
    detail: str = ""

    @property
    def meets(self) -> bool:
        """Whether this method produced a release meeting every model (status ``ok``)."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, object]:
        """This method's figures as plain JSON values (``None`` where they do not apply)."""
        return {"method": self.method, "status": self.status, "reason": self.reason,
                "cells_suppressed": self.cells_suppressed or None,
                "cells_suppressed_total": sum(self.cells_suppressed.values())
                if self.meets else None,
                "records_touched": self.records_touched,
                "records_suppressed": self.records_suppressed, MEASURE: self.loss,
                "elapsed_s": round(self.elapsed_s, 4), "detail": self.detail}

    def sink(self, path: str | Path) -> None:
        """Write the release atomically and re-verify the written file before the rename
        (:class:`~ldiv_polars.local.verify.ReleaseVerificationError` on a failure; nothing
        then replaces ``path``)."""
        if not self.meets:
            raise InvalidParameterError(f"{self.method}: no release to write ({self.reason})")
        if self.method == "mondrian":
            _sink_mondrian(self.release, path)
        else:
            self.release.sink(path)


@dataclass
class MethodComparison:
    """The outcome of every method compared, and the one ``auto`` chooses."""

    outcomes: dict[str, MethodOutcome]
    measure: str = MEASURE

    @property
    def chosen(self) -> str | None:
        """The method of least ``loss`` among those that meet the models (None: none)."""
        ok = [o for o in self.outcomes.values() if o.meets and o.loss is not None]
        return min(ok, key=lambda o: (o.loss, METHODS.index(o.method))).method if ok else None

    def table(self) -> pl.DataFrame:
        """One row per method: status, cells suppressed (total), records touched and fully
        suppressed, ``loss``, seconds, detail."""
        rows = [o.to_dict() for o in self.outcomes.values()]
        return pl.DataFrame(
            {"method": [r["method"] for r in rows], "status": [r["status"] for r in rows],
             "cells_suppressed": [r["cells_suppressed_total"] for r in rows],
             "records_touched": [r["records_touched"] for r in rows],
             "records_suppressed": [r["records_suppressed"] for r in rows],
             MEASURE: [r[MEASURE] for r in rows], "seconds": [r["elapsed_s"] for r in rows],
             "detail": [r["detail"] or r["reason"] for r in rows]},
            schema_overrides={"cells_suppressed": pl.Int64, "records_touched": pl.Int64,
                              "records_suppressed": pl.Int64, MEASURE: pl.Float64})

    def to_dict(self) -> dict[str, object]:
        """The comparison as plain JSON values: the loss measure, the chosen method, each
        method's figures (what ``ldiv anonymize --compare --json`` prints)."""
        return {"measure": self.measure, "chosen": self.chosen,
                "methods": [o.to_dict() for o in self.outcomes.values()]}


def compare_methods(
    data: TableLike,
    qi: str | Iterable[str],
    sensitive: str | Iterable[str] | None,
    models: Sequence[Model] | Model,
    *,
    hierarchies: Mapping[str, Any] | None = None,
    methods: Sequence[str] | None = None,
    importance: Importance = None,
    exact: bool = False,
    time_limit: float = 60.0,
    suppression: float = 0.0,
    metric: str = MEASURE,
    separator: str | None = None,
) -> MethodComparison:
    """Run ``methods`` (default: all of :data:`METHODS`) on ``data`` and measure each release
    with the same per-cell ``loss`` (module docstring). ``hierarchies`` (one per QI) are needed
    by ``global``, ``gencells`` and ``local`` (without them those are ``n/a``); ``importance``,
    ``exact`` and ``time_limit`` go to the cell suppression of ``cells`` and ``gencells``;
    ``suppression`` (largest fraction of rows) to ``global`` and ``local``; ``metric`` is what
    the lattice-based methods optimize. Bad input raises a typed error before any method runs;
    a method that refuses these models is ``n/a`` with its reason."""
    inputs = MethodInputs.build(data, qi, sensitive, models, hierarchies=hierarchies,
                                importance=importance, exact=exact, time_limit=time_limit,
                                suppression=suppression, metric=metric, separator=separator)
    return compare_inputs(inputs, methods)


def compare_inputs(inputs: MethodInputs, methods: Sequence[str] | None = None
                   ) -> MethodComparison:
    """:func:`compare_methods` on inputs already validated (own-value semantics only).
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` under wildcard semantics or for
    a method not in :data:`METHODS`."""
    if inputs.semantics != "value":
        raise InvalidParameterError(
            "methods are compared under own-value semantics (a wildcard release is not "
            "comparable: docs/local.md)")
    names = list(METHODS if methods is None else methods)
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise InvalidParameterError(
            f"methods must be among {', '.join(METHODS)}, got {', '.join(map(repr, unknown))}")
    outcomes = {}
    for name in names:
        try:
            outcomes[name] = run_method(inputs, name)
        except InvalidParameterError as exc:
            outcomes[name] = MethodOutcome(name, "n/a", str(exc))
    return MethodComparison(outcomes)


def run_method(inputs: MethodInputs, name: str) -> MethodOutcome:
    """One method's release on ``inputs``; ``fails`` when no release of it meets the models.
    Raises :class:`~ldiv_polars.errors.InvalidParameterError` when the method does not take
    these inputs (no hierarchies, a model it refuses, wildcard semantics outside cell
    suppression)."""
    if name not in METHODS:
        raise InvalidParameterError(f"method must be one of {', '.join(METHODS)}, got {name!r}")
    if name in NEEDS_HIERARCHIES and inputs.hierarchies is None:
        raise InvalidParameterError(f"{name} needs hierarchies (one per QI)")
    if inputs.semantics != "value" and name not in ("cells", "gencells"):
        raise InvalidParameterError(
            f"{name} releases classes that partition the table: wildcard semantics is for "
            "cells and gencells only")
    t0 = time.perf_counter()
    try:
        out = _RUNNERS[name](inputs)
    except InfeasibleError as exc:
        out = MethodOutcome(name, "fails", str(exc))
    out.elapsed_s = time.perf_counter() - t0
    return out


def _local_outcome(name: str, res: LocalResult, detail: str) -> MethodOutcome:
    u = res.utility
    return MethodOutcome(name, "ok", release=res, cells_suppressed=dict(u["cells_suppressed"]),
                         records_touched=int(u["records_touched"]),
                         records_suppressed=int(u["records_suppressed"]),
                         loss=float(u["metrics"][MEASURE]), detail=detail)


def _cells(x: MethodInputs) -> MethodOutcome:
    res = suppress_cells(x.data, x.qi, x.sensitive or None, x.models, importance=x.importance,
                         semantics=x.semantics, method="exact" if x.exact else "greedy",
                         time_limit=x.time_limit, separator=x.separator)
    d = res.details
    detail = f"exact: {d['status']}" + (f", gap {d['gap']:.2%}" if d.get("gap") else "") \
        if x.exact else "greedy"
    return _local_outcome("cells", res, detail)


def _gencells(x: MethodInputs) -> MethodOutcome:
    res = generalize_and_suppress(
        x.data, x.qi, x.sensitive or None, x.hierarchies or {}, x.models, metric=x.metric,
        importance=x.importance, semantics=x.semantics,
        method="exact" if x.exact else "greedy", time_limit=x.time_limit,
        separator=x.separator)
    return _local_outcome("gencells", res, "node " + _node(res.details["node"]))


def _local(x: MethodInputs) -> MethodOutcome:
    res = local_recode(x.data, x.qi, x.sensitive or None, x.hierarchies or {}, x.models,
                       suppression=x.suppression, metric=x.metric, separator=x.separator)
    rounds = res.details["rounds"]
    return _local_outcome("local", res, f"{len(rounds)} round(s): "
                          + "; ".join(_node(r["node"]) for r in rounds))


def _global(x: MethodInputs) -> MethodOutcome:
    from ldiv_polars.search import anonymize

    hs = x.hierarchies or {}
    res = anonymize(x.data, x.qi, x.sensitive or None, hs, x.models,
                    suppression=x.suppression, metric=x.metric, separator=x.separator)
    if not res.found:
        return MethodOutcome("global", "fails", "no lattice node satisfies the models within "
                             f"the suppression limit ({res.suppression_limit_rows} rows)")
    t, node = x.table, [res.levels[q] for q in x.qi]
    levels = np.full((t.keys, len(x.qi)), SUPPRESSED, dtype=np.int64)
    levels[passing_at(t, x.costs, hs, np.arange(t.keys), node, x.models)] = node
    plan = build_plan(t, levels, hs)
    if plan.records_suppressed != res.suppressed_rows:
        raise ReleaseVerificationError(
            f"global: {res.suppressed_rows} rows suppressed by the search, "
            f"{plan.records_suppressed} failing at its node")
    u = release_utility(t, plan, x.costs, "value")
    return MethodOutcome("global", "ok", release=res, cells_suppressed=u["cells_suppressed"],
                         records_touched=u["records_touched"],
                         records_suppressed=u["records_suppressed"],
                         loss=u["metrics"][MEASURE],
                         detail=f"node {_node(res.levels)}, {res.suppressed_rows} rows "
                                "suppressed")


def _mondrian(x: MethodInputs) -> MethodOutcome:
    from ldiv_polars.partition.mondrian import PartitionInfeasibleError, mondrian

    try:
        res = mondrian(to_lazyframe(x.data, separator=x.separator), x.qi,
                       x.sensitive or None, x.models)
    except PartitionInfeasibleError as exc:
        return MethodOutcome("mondrian", "fails", str(exc))
    fs = res.frame.group_by(res.group, *x.qi).agg(pl.len().alias(COUNT)).collect(
        engine=STREAMING).join(res.ranges, on=res.group)
    covered = np.column_stack([_covered(fs, q, x.costs.hierarchies[q], q in res.numeric)
                               for q in x.qi]) if fs.height else np.zeros((0, len(x.qi)))
    n = fs.get_column(COUNT).to_numpy()
    return MethodOutcome("mondrian", "ok", release=(res, x, input_paths(x.data)),
                         cells_suppressed={q: 0 for q in x.qi},
                         records_touched=int(n[(covered > 1).any(axis=1)].sum()),
                         records_suppressed=0,
                         loss=x.costs.mean(x.costs.covered_loss(covered), n),
                         detail=f"{res.groups} groups (strict)")


def _covered(fs: pl.DataFrame, q: str, h: Hierarchy, numeric: bool) -> np.ndarray:
    """How many domain values (``h``'s leaves) each released Mondrian cell stands for."""
    if not numeric:
        return fs.get_column(f"{q}_set").list.len().to_numpy()
    leaves = np.sort(pl.Series(h.column(0)).cast(pl.Float64, strict=False).drop_nulls()
                     .to_numpy())
    lo = fs.get_column(f"{q}_min").cast(pl.Float64).to_numpy()
    hi = fs.get_column(f"{q}_max").cast(pl.Float64).to_numpy()
    return np.searchsorted(leaves, hi, side="right") - np.searchsorted(leaves, lo, side="left")


def _sink_mondrian(release: Any, path: str | Path) -> None:
    """Write Mondrian's generalized release atomically; re-verify the written file (classes:
    its group ids) before the rename."""
    res, x, sources = release
    with atomic_output(path, inputs=sources) as out:
        out.sink(res.generalized()).collect(engine=STREAMING)
        written = pl.scan_parquet(out.path) if out.format == "parquet" else \
            pl.scan_csv(out.path, separator=out.separator)
        v = check(written, [res.group], x.sensitive or None, list(res.verified_models))
        if not v.passed:
            raise ReleaseVerificationError("re-verification of the mondrian release failed")
        out.check_rows(res.rows)


def _node(levels: Mapping[str, int]) -> str:
    return ",".join(f"{q}={v}" for q, v in levels.items())


_RUNNERS = {"global": _global, "cells": _cells, "gencells": _gencells, "local": _local,
            "mondrian": _mondrian}
