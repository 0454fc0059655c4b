"""The row-neighbour bound (issue 22): how far a bound built from single rows can reach.

Under k-anonymity with at most ``L`` suppressed rows and a separable metric (``loss``), a row
``i`` is retained at node ``x`` only when at least ``k - 1`` other rows share its class there,
i.e. ``x >= m(i, j)`` for ``k - 1`` rows ``j``, where ``m(i, j)`` is the per-QI level at which the
two rows' values first agree. The metric's suppression-free part ``b`` is monotone, so a node
retaining row ``i`` has ``b(x) >= D_i``, the ``(k-1)``-th smallest ``b(m(i, j))`` over the other
rows (each bottom class's other rows at 0). At most ``L`` rows are suppressed, so among the
``L + 1`` rows of largest ``D_i`` one is retained: **the optimum is at least the (L+1)-th largest
D_i**, the ``1 - L/N`` quantile of the rows' ``D``.

Proving that figure needs ``D_i`` exactly for ``L + 1`` rows, each a scan of every row (at 1M
rows and 2% suppression, 20,001 scans of 10^6 rows); this script *estimates* the quantile from
a random sample of rows (each ``D_i`` exact), to see whether the bound could close the gap at
all, and runs the anytime search on the same table for the same budget beside it.

Usage: python bench/bench_anytime_rows.py [--rows 100000] [--qis 25] [--sample 400]
       [--budget 10] [--k 5] [--suppression 0.02] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ldiv_polars.core.frequency import FrequencySet  # noqa: E402
from ldiv_polars.datasets.wide import (  # noqa: E402
    synthesize_wide,
    wide_columns,
    wide_hierarchies,
)
from ldiv_polars.models import KAnonymity  # noqa: E402
from ldiv_polars.search.anytime import anytime_search  # noqa: E402
from ldiv_polars.search.metrics import MetricSuite  # noqa: E402
from ldiv_polars.search.rollup import EncodedFrequencySet  # noqa: E402
from ldiv_polars.search.suppression import suppression_limit_rows  # noqa: E402


def level_costs(suite: MetricSuite, heights: list[int], metric: str) -> list[np.ndarray]:
    """Per QI, the separable cost of each level (the others at 0), less the bottom's."""
    zero = [0] * len(heights)
    at0 = suite.bound_from_levels(metric, zero)
    out = []
    for j, h in enumerate(heights):
        out.append(np.array([suite.bound_from_levels(metric, zero[:j] + [lv] + zero[j + 1:])
                             - at0 for lv in range(h)]))
    return out


def neighbour_bound(efs: EncodedFrequencySet, costs: list[np.ndarray], i: int, k: int
                    ) -> float:
    """``D_i``: the (k-1)-th smallest separable cost of a node putting row ``i`` (a row of the
    bottom frequency set) with another row, counting rows with multiplicity."""
    codes = efs.base.codes
    dist = np.zeros(codes.shape[1])
    for j, maps in enumerate(efs.encoding.level_maps):
        merge = np.full(codes.shape[1], len(maps) - 1, dtype=np.int64)
        for lv in range(len(maps) - 2, -1, -1):
            at = np.asarray(maps[lv])[codes[j]]
            merge[at == at[i]] = lv
        dist += costs[j][merge]
    count = efs.base.n.copy()
    count[i] -= 1
    order = np.argsort(dist, kind="stable")
    return float(dist[order[np.searchsorted(np.cumsum(count[order]), k - 1)]])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--qis", type=int, default=25)
    ap.add_argument("--sample", type=int, default=400)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--suppression", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    df = synthesize_wide(a.rows, qis=a.qis, seed=a.seed)
    fs = FrequencySet.build(df.lazy(), wide_columns(a.qis), None).materialize()
    efs = EncodedFrequencySet.from_frame(fs, wide_hierarchies(a.qis))
    suite = MetricSuite(efs)
    limit = suppression_limit_rows(a.suppression, efs.total)
    costs = level_costs(suite, [h.height for h in efs.hierarchies], "loss")
    rows = np.random.default_rng(a.seed + 1).choice(efs.base_rows, a.sample, replace=False)
    t = time.perf_counter()
    d = np.array([neighbour_bound(efs, costs, int(i), a.k) for i in rows])
    per_row = (time.perf_counter() - t) / a.sample
    q = 1 - limit / efs.total
    print(f"{a.qis} QIs, {a.rows:,} rows ({efs.base_rows:,} distinct), k={a.k}, "
          f"{limit:,} rows may be suppressed; {a.sample} sampled rows, {per_row:.3f} s each")
    print("D quantiles 50/90/98/100%: " + ", ".join(
        f"{v:.4f}" for v in np.quantile(d, [0.5, 0.9, 0.98, 1.0])))
    print(f"estimated row-neighbour bound (the {q:.0%} quantile): {np.quantile(d, q):.4f}; "
          f"proving it: {limit + 1:,} scans, ~{(limit + 1) * per_row / 60:.0f} min at this rate")
    res = anytime_search(efs, [KAnonymity(a.k)], limit, "loss", a.budget, metrics=suite)
    print(f"anytime search, {a.budget:g} s: loss {res.value:.4f}, bound {res.bound:.4f}, "
          f"gap {res.gap:.1%}")


if __name__ == "__main__":
    main()
