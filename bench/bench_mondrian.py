"""Benchmark Mondrian (strict and relaxed) on synthetic census-like data.

Usage: python bench/bench_mondrian.py [ROWS] [K]   (default 1,000,000 rows, k = 10)

Prints wall times and, as a baseline measured in the same run, the time of one plain
``group_by(qi + [s]).len()`` over the same rows (the frequency set every checker needs), so the
ratio says how many "frequency-set passes" Mondrian costs.
"""

from __future__ import annotations

import sys
import time

from ldiv_polars.attacks import minimality_attack
from ldiv_polars.datasets.synth import synthesize
from ldiv_polars.models import DistinctLDiversity, KAnonymity
from ldiv_polars.partition import anatomy, greedy_grouping, mondrian, symmetric_grouping

QI = ["age", "sex", "race", "zip", "education", "marital_status"]
S = "disease"


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    df = synthesize(rows, seed=1)
    t = time.perf_counter()
    base = df.lazy().group_by([*QI, S]).len().collect()
    t_base = time.perf_counter() - t
    print(f"rows={rows:,} qi={len(QI)} baseline frequency set: {t_base:.2f} s "
          f"({base.height:,} cells)")
    runs = [
        ("strict k", [KAnonymity(k)], False),
        ("relaxed k", [KAnonymity(k)], True),
        ("strict k + distinct l=3", [KAnonymity(k), DistinctLDiversity(3)], False),
    ]
    for name, models, relaxed in runs:
        t = time.perf_counter()
        m = mondrian(df, QI, S, models, relaxed=relaxed)
        dt = time.perf_counter() - t
        print(f"mondrian {name:<24} k={k}: {dt:6.2f} s  ({dt / t_base:5.1f}x baseline)  "
              f"groups={m.groups:,} rounds={m.rounds} aecs={m.metrics['aecs']:.2f} "
              f"gcp={m.metrics['gcp']:.4f} verified={m.verification.passed}")
    # groupers over the ordered table (binary 6-diversity, positive = the rarest disease)
    counts = df[S].value_counts().sort("count")
    pos = counts[S][0]
    l_ana = min(6, rows // int(counts["count"].max()))     # largest eligible l, at most 6
    for name, fn in [
        ("GG l=6", lambda: greedy_grouping(df, QI, S, 6, positive=[pos])),
        ("SG l=6 k=6", lambda: symmetric_grouping(df, QI, S, 6, positive=[pos], k=6)),
        (f"Anatomy l={l_ana}", lambda: anatomy(df, QI, S, l_ana).grouping),
    ]:
        t = time.perf_counter()
        g = fn()
        dt = time.perf_counter() - t
        print(f"{name:<12}: {dt:6.2f} s  ({dt / t_base:5.1f}x baseline)  groups={g.groups:,} "
              f"suppressed={g.suppressed} verified={g.verification.passed}")
        if name.startswith("GG"):
            rel = g.frame.collect()
            t = time.perf_counter()
            rep = minimality_attack(rel, group="group", sensitive=S, l=6, positive=[pos])
            dt = time.perf_counter() - t
            print(f"attack on GG release: {dt:6.2f} s  vulnerable={rep.vulnerable_fraction:.4f} "
                  f"max_risk_times_l={rep.max_risk_times_l:.3f}")


if __name__ == "__main__":
    main()
