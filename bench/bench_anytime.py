"""Anytime search benchmark (issue 22): wide synthetic tables (15/25/40 QIs), k-anonymity with
suppression, metric ``loss``; per time budget (1 s, 10 s, 60 s): the loss found, the lower bound,
the gap, the nodes checked, and the improvement over a greedy bottom-up baseline measured in the
same run; per budget the cut loop without the decomposition bound (``groups=False``, session 12's
search) beside it; with ``--best-first``, at the largest budget the best-first search as well.

The baseline is Datafly's walk, as anjana/pycanon-style tools do it: from the bottom, generalize
the QI with the most distinct groups at its level one level up, until the node passes (each node
checked with the same roll-up and checker as the search). Every node returned (baseline and
anytime) is re-checked on a fresh roll-up.

Usage: python bench/bench_anytime.py [--rows 1000000] [--qis 15,25,40] [--budgets 1,10,60]
       [--k 5] [--suppression 0.02] [--seed 0] [--best-first]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

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
from ldiv_polars.search.suppression import NodeChecker, suppression_limit_rows  # noqa: E402


def datafly(efs: EncodedFrequencySet, checker: NodeChecker, suite: MetricSuite,
            metric: str) -> tuple[tuple[int, ...] | None, float, int]:
    """Greedy bottom-up baseline: (node, value, nodes checked)."""
    heights = [h.height for h in efs.hierarchies]
    x = [0] * len(heights)
    checked = 0
    while True:
        rolled = efs.rollup(tuple(x))
        verdict = checker.check(rolled)
        checked += 1
        if verdict.passed:
            return tuple(x), suite.value(metric, rolled, verdict.suppressed), checked
        up = [i for i in range(len(x)) if x[i] + 1 < heights[i]]
        if not up:
            return None, float("inf"), checked
        x[max(up, key=lambda i: (efs.cards[i][x[i]], -i))] += 1


def reverify(efs: EncodedFrequencySet, models: list, limit: int, node: tuple[int, ...],
             suite: MetricSuite, metric: str) -> float:
    rolled = efs.rollup(node, cache=False)
    verdict = NodeChecker(efs, models, limit).check(rolled)
    assert verdict.passed, f"node {node} does not pass on re-check"
    return suite.value(metric, rolled, verdict.suppressed)


def run(qis: int, rows: int, budgets: list[float], k: int, suppression: float, seed: int,
        metric: str = "loss", best_first: bool = False) -> list[dict[str, object]]:
    t = time.perf_counter()
    df = synthesize_wide(rows, qis=qis, seed=seed)
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    fs = FrequencySet.build(df.lazy(), wide_columns(qis), None).materialize()
    del df
    efs = EncodedFrequencySet.from_frame(fs, wide_hierarchies(qis))
    del fs
    build_s = time.perf_counter() - t
    models = [KAnonymity(k)]
    limit = suppression_limit_rows(suppression, efs.total)
    suite = MetricSuite(efs)
    print(f"\n{qis} QIs, {rows:,} rows (frequency set {efs.base_rows:,} rows; generated in "
          f"{gen_s:.1f} s, encoded in {build_s:.1f} s)", flush=True)
    t = time.perf_counter()
    g_node, g_val, g_checked = datafly(efs, NodeChecker(efs, models, limit), suite, metric)
    g_s = time.perf_counter() - t
    if g_node is not None:
        assert abs(reverify(efs, models, limit, g_node, suite, metric) - g_val) < 1e-12
    print(f"  greedy bottom-up: {metric} {g_val:.4f}, {g_checked} checks, {g_s:.1f} s",
          flush=True)
    out = []
    for b in budgets:
        efs.release()  # each budget starts with an empty snapshot cache
        t = time.perf_counter()
        res = anytime_search(efs, models, limit, metric, b, metrics=suite)
        wall = time.perf_counter() - t
        if res.best is not None:
            assert abs(reverify(efs, models, limit, res.best, suite, metric) - res.value) < 1e-9
        gain = (g_val - res.value) / g_val if res.best is not None and g_val > 0 else None
        row = dict(qis=qis, rows=rows, budget=b, value=res.value, bound=res.bound, gap=res.gap,
                   checked=res.checked, wall=wall, greedy=g_val, gain=gain,
                   stopped=res.stopped, bf=None, old=None)
        out.append(row)
        print(f"  budget {b:>4g} s: {metric} {res.value:.4f}, bound {res.bound:.4f}, gap "
              f"{res.gap:.1%}, {res.checked} checks, {wall:.1f} s, vs greedy "
              f"{gain:+.1%} ({res.stopped}) {res.notes[1:]}", flush=True)
        efs.release()  # the cut loop without the decomposition bound, same budget
        old = anytime_search(efs, models, limit, metric, b, metrics=suite, groups=False)
        row["old"] = (old.value, old.bound, old.gap, old.checked)
        print(f"  cut loop alone {b:g} s: {metric} {old.value:.4f}, bound {old.bound:.4f}, gap "
              f"{old.gap:.1%}, {old.checked} checks", flush=True)
        if best_first and b == max(budgets):  # best-first at the largest budget
            efs.release()
            bf = anytime_search(efs, models, limit, metric, b, metrics=suite, cuts=False)
            row["bf"] = (bf.value, bf.bound, bf.gap, bf.checked)
            print(f"  best-first {b:g} s: {metric} {bf.value:.4f}, bound {bf.bound:.4f}, gap "
                  f"{bf.gap:.1%}, {bf.checked} checks", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--qis", default="15,25,40")
    ap.add_argument("--budgets", default="1,10,60")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--suppression", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--best-first", action="store_true")
    a = ap.parse_args()
    budgets = [float(b) for b in a.budgets.split(",")]
    rows = []
    for q in (int(x) for x in a.qis.split(",")):
        rows += run(q, a.rows, budgets, a.k, a.suppression, a.seed, best_first=a.best_first)
    print("\n| QIs | rows | budget (wall) | loss found | bound | gap | checked | greedy loss "
          "| improvement | cut loop alone: loss, bound, gap, checked "
          "| best-first: loss, bound, gap, checked |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        old, bf = (_cells(r[c]) for c in ("old", "bf"))
        print(f"| {r['qis']} | {r['rows']:,} | {r['budget']:g} s ({r['wall']:.1f} s) | "
              f"{r['value']:.4f} | {r['bound']:.4f} | {r['gap']:.1%} | {r['checked']} | "
              f"{r['greedy']:.4f} | {r['gain']:+.1%} | {old} | {bf} |")


def _cells(res: object) -> str:
    """``loss, bound, gap, checked`` of a ``(value, bound, gap, checked)`` tuple, or empty."""
    if not res:
        return ""
    v, b, g, c = res  # type: ignore[misc]
    return f"{v:.4f}, {b:.4f}, {g:.1%}, {c}"


if __name__ == "__main__":
    main()
