"""Utility of a release, from its plan and the key table: what was lost, where.

The information-loss metrics are those of :mod:`ldiv_polars.search.metrics`, taken per cell so
that they apply when keys are released at different levels (local recoding) or with some cells
suppressed: with ``N`` rows, ``q`` QIs and each cell released at level ``h`` of its QI's
hierarchy (a suppressed cell costs what the hierarchy's top costs, as a suppressed row does
there):

- ``precision``: mean of ``h / max_level`` over cells (a suppressed cell: 1);
- ``loss``: mean over cells of ``(leaves(g) - 1) / (|domain| - 1)`` (suppressed: 1);
- ``entropy``: non-uniform entropy, ``sum over cells of log2(N_g / N_v)`` (suppressed:
  ``log2(N / N_v)``);
- ``discernibility``: ``sum over records of |class|`` (the class per the semantics: under the
  wildcard semantics a record's compatible records), and ``aecs``: ``N / classes``.

``kl`` is not reported: the search's formula assumes classes that partition the QI domain,
which released patterns that overlap (local recoding, wildcards) do not.
Without hierarchies (plain cell suppression) each QI has the two-level hierarchy raw -> ``*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ldiv_polars.core.frequency import COUNT, FrequencySet
from ldiv_polars.hierarchy.hierarchy import Hierarchy
from ldiv_polars.local.classes import Semantics, class_histograms, group_sum, unique_rows
from ldiv_polars.local.keys import KeyTable
from ldiv_polars.local.plan import SUPPRESSED, ReleasePlan, released_codes
from ldiv_polars.search import EncodedFrequencySet, MetricSuite
from ldiv_polars.search.metrics import leaf_loss

UTILITY_METRICS = ("precision", "loss", "entropy", "discernibility", "aecs")


def flat_hierarchies(table: KeyTable) -> dict[str, Hierarchy]:
    """The two-level hierarchy (raw value -> ``*``) of every QI; a QI of an empty table (no
    value) gets the mask alone (``* -> *``), which no row holds."""
    return {q: Hierarchy([[v, "*"] for v in table.values[i].cast(pl.String).to_list()]
                         or [["*", "*"]], name=q) for i, q in enumerate(table.qi)}


class CellCosts:
    """Per-QI, per-level cell costs of one key table against its hierarchies."""

    def __init__(self, table: KeyTable, hierarchies: Mapping[str, Hierarchy]) -> None:
        self.table = table
        hs = {q: hierarchies[q] for q in table.qi}
        self.hierarchies = hs
        frame = table.key_frame().with_columns(pl.col(q).cast(pl.String) for q in table.qi)
        efs = EncodedFrequencySet(FrequencySet(frame.lazy(), table.qi, ()), hs)
        self.suite = MetricSuite(efs)
        self.level_maps = efs.level_maps
        # each key's raw index in its QI's hierarchy
        self.raw = np.column_stack([
            table.values[i].cast(pl.String).gather(table.codes[:, i]).replace_strict(
                hs[q].column(0), pl.arange(0, len(hs[q]), eager=True), return_dtype=pl.Int64
            ).to_numpy() for i, q in enumerate(table.qi)]) if table.keys else \
            np.zeros((0, len(table.qi)), dtype=np.int64)

    def costs(self, name: str, levels: np.ndarray) -> np.ndarray:
        """``(keys, q)`` cost of one cell of each key under ``levels``."""
        s = self.suite
        out = np.zeros(levels.shape, dtype=np.float64)
        for i in range(levels.shape[1]):
            raw = self.raw[:, i]
            top = s.max_level[i]
            for lv in np.unique(levels[:, i]):
                at = levels[:, i] == lv
                h = top if lv == SUPPRESSED else int(lv)
                code = self.level_maps[i][h][raw[at]]
                if name == "precision":
                    out[at, i] = 1.0 if lv == SUPPRESSED else (h / top if top else 0.0)
                elif name == "loss":
                    out[at, i] = 1.0 if lv == SUPPRESSED else s.loss_cost[i][h][code]
                else:  # entropy
                    num = float(s.N) if lv == SUPPRESSED else s.marg[i][h][code]
                    out[at, i] = np.log2(num / s.marg[i][0][raw[at]])
        return out

    def covered_loss(self, covered: np.ndarray) -> np.ndarray:
        """``loss`` of cells that each stand for ``covered[r, i]`` values of QI ``i``'s domain
        (releases not made of hierarchy levels: Mondrian's ranges and sets)."""
        return np.column_stack([leaf_loss(covered[:, i], self.suite.dom[i])
                                for i in range(covered.shape[1])]) if covered.size else \
            np.zeros(covered.shape)

    def mean(self, cells: np.ndarray, n: np.ndarray | None = None) -> float:
        """Row-weighted mean of per-cell values ``cells`` (one row per key, or per row of
        ``n``, each standing for that many records; one column per QI)."""
        n = (self.table.n if n is None else n).astype(np.float64)
        total = float(n.sum()) * cells.shape[1]
        return float((cells * n[:, None]).sum()) / total if total else 0.0

    def metrics(self, levels: np.ndarray, class_sizes: np.ndarray, classes: int
                ) -> dict[str, float]:
        """The metrics of the module docstring; ``class_sizes``: each key's class size."""
        n = self.table.n.astype(np.float64)
        N = float(self.table.total)
        out: dict[str, float] = {}
        for name in ("precision", "loss", "entropy"):
            cells = self.costs(name, levels)
            out[name] = float((cells * n[:, None]).sum()) if name == "entropy" else \
                self.mean(cells)
        out["discernibility"] = float((n * class_sizes).sum())
        out["aecs"] = N / classes if classes else 0.0
        return out


def class_sizes(table: KeyTable, plan: ReleasePlan, semantics: Semantics
                ) -> tuple[np.ndarray, int]:
    """(class size of each key's records, number of classes) of the release: classes are the
    released tuples (labels and nulls)."""
    pcodes, kp = unique_rows(released_codes(plan))  # null -> -1, the STAR code
    sizes = group_sum(kp, table.n[:, None], pcodes.shape[0])
    hist = class_histograms(pcodes, sizes, semantics)
    return hist[kp, 0].astype(np.float64), int(pcodes.shape[0])


def distributions(data_fs: pl.DataFrame, output_fs: pl.DataFrame, qi: tuple[str, ...]
                  ) -> dict[str, pl.DataFrame]:
    """Per QI: ``(value, before, after)`` row counts, values as strings (null: suppressed)."""
    out = {}
    for q in qi:
        before = data_fs.group_by(pl.col(q).cast(pl.String).alias("value")).agg(
            pl.col(COUNT).sum().alias("before"))
        after = output_fs.group_by(pl.col(q).cast(pl.String).alias("value")).agg(
            pl.col(COUNT).sum().alias("after"))
        out[q] = before.join(after, on="value", how="full", coalesce=True,
                             nulls_equal=True).with_columns(
            pl.col("before", "after").fill_null(0)).sort("value", nulls_last=True)
    return out


def release_utility(table: KeyTable, plan: ReleasePlan, costs: CellCosts,
                    semantics: Semantics) -> dict[str, Any]:
    """Cells suppressed per QI, records touched and suppressed, the metrics, and the
    before/after distribution of every QI."""
    levels = plan.level_array()
    sizes, classes = class_sizes(table, plan, semantics)
    before = table.key_frame()
    after = plan.table.select(
        *(pl.col(f"__ldiv_out_{i}").alias(q) for i, q in enumerate(table.qi)), COUNT)
    return {
        "rows": table.total,
        "cells_suppressed": plan.suppressed_cells,
        "cells_suppressed_total": int(sum(plan.suppressed_cells.values())),
        "records_touched": plan.records_touched,
        "records_suppressed": plan.records_suppressed,
        "metrics": costs.metrics(levels, sizes, classes),
        "distributions": distributions(before, after, table.qi),
    }
