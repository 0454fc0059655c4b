"""Benchmark of the linkage / (l,delta) module. Run from the repository root::

    .venv/bin/python bench/bench_linkage.py            # everything (~1-2 min on 2 busy cores)
    .venv/bin/python bench/bench_linkage.py --quick    # smaller sizes

Measures, each next to a baseline timed in the same run:

1. **Planning** (Greedy-Generalize, exact integers) over a domain of 10^6 QI vectors x 100
   sensitive values: a product joint (non-uniform P_Q, geometric P_S) and a general sparse joint
   (~3 values per QI vector, 3*10^6 cells). Baseline: the literal Algorithm 2 sweep (one Python
   step per QI vector, numpy row add per step, exact ints) on a 2*10^4-vector prefix,
   extrapolated per QI vector.
2. **post_linkage** of two releases of 10^6 rows each (Parquet, scanned lazily) over their
   raw table as universe. Baseline: the same computation in pure Python (Counter over the
   collected rows).
3. **Monte Carlo**: 10^4 trials of the paper's setting (|Q| = 3000, |S| = 50, l = 10,
   beta = 0.01, N = 65606, t = 2). Baseline: ``numpy.random.Generator.multinomial`` per dataset
   on 100 trials, extrapolated.

Prints one markdown table.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ldiv_polars.core.frequency import FrequencySet  # noqa: E402
from ldiv_polars.linkage import (  # noqa: E402
    JointDistribution,
    Release,
    greedy_generalize,
    plan_mechanism,
    post_linkage,
)
from ldiv_polars.linkage.simulate import simulate_mechanism  # noqa: E402


def timed(fn, reps: int = 1):
    best = float("inf")
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def timed_median(fn, reps: int = 3):
    times = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], out


def literal_greedy_per_qi(dense: np.ndarray, l: int, threshold: int) -> float:
    """Seconds per QI vector of the literal sweep (exact ints, one numpy add per vector)."""
    t0 = time.perf_counter()
    acc = np.zeros(dense.shape[1], dtype=np.int64)
    for row in dense:
        acc += row
        if int((acc >= threshold).sum()) >= l:
            acc[:] = 0
    return (time.perf_counter() - t0) / dense.shape[0]


def bench_plan(nq: int, ns: int, rows: list[list[str]]) -> None:
    rng = np.random.default_rng(0)
    wq = rng.integers(1, 10, nq).astype(np.int64)
    ws = [19**i * 20 ** (ns - 1 - i) for i in range(ns)]
    prod = JointDistribution.product(wq, ws)
    l = 10
    for beta in ("0.01", "0.0001"):
        p = prod.p_l(l) * Fraction(beta)
        sec, part = timed_median(lambda p=p: greedy_generalize(prod, l, p), reps=3)
        rows.append([f"plan, product joint {nq:.0e} x {ns}, beta={beta}",
                     f"{sec:.3f} s", f"{part.classes} classes", ""])
    # general sparse joint: ~3 sensitive values per QI vector
    k = 3
    q_idx = np.repeat(np.arange(nq, dtype=np.int64), k)
    s_idx = rng.integers(0, ns, nq * k).astype(np.int64)
    w = rng.integers(1, 20, nq * k).astype(np.int64)
    cells = (pl.DataFrame({"q": q_idx, "s": s_idx, "n": w}).group_by("q", "s")
             .agg(pl.col("n").sum()))
    fs = FrequencySet(cells.lazy(), ("q",), ("s",))
    builds = []
    for _ in range(3):
        t0 = time.perf_counter()
        sparse = JointDistribution.from_frequency_set(fs)
        builds.append(time.perf_counter() - t0)
    build = sorted(builds)[1]  # median of 3
    dense_prefix = np.zeros((20_000, ns), dtype=np.int64)
    sub = cells.filter(pl.col("q") < 20_000)
    dense_prefix[sub["q"].to_numpy(), sub["s"].to_numpy()] = sub["n"].to_numpy()
    for beta in ("0.01", "0.001", "0.0001", "0.00001"):
        p = sparse.p_l(l) * Fraction(beta)
        # cold: first plan on a fresh distribution (pays for its cached sparse index, if any);
        # then the median of 3 further plans on it
        fresh = JointDistribution.from_frequency_set(fs)
        cold, _ = timed(lambda p=p, fresh=fresh: greedy_generalize(fresh, l, p))
        sec, part = timed_median(lambda p=p: greedy_generalize(sparse, l, p), reps=3)
        thr = -(-p.numerator * sparse.total // p.denominator)
        per_qi = literal_greedy_per_qi(dense_prefix, l, thr)
        base = per_qi * nq
        rows.append([f"plan, sparse joint {nq:.0e} x {ns} ({sparse.weight.size:.1e} cells), "
                     f"beta={beta}", f"{sec:.3f} s (first plan {cold:.3f} s; "
                     f"+{build:.2f} s from_frequency_set)",
                     f"{part.classes} classes",
                     f"literal sweep {base:.1f} s (extrapolated), x{base / sec:.0f}"])


def bench_post_linkage(n_rows: int, rows: list[list[str]]) -> None:
    rng = np.random.default_rng(1)
    age = rng.integers(0, 100, n_rows)
    zip_ = rng.integers(10000, 11000, n_rows)
    s = rng.integers(0, 20, n_rows)
    raw = pl.DataFrame({"age": age, "zip": zip_, "s": s})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        raw_path = tmp / "raw.parquet"
        raw.write_parquet(raw_path)
        # release 1: age decade x zip/10 ; release 2: 5-year age x zip/20, each on its own rows
        raw2 = raw.with_columns(pl.Series("s", rng.integers(0, 20, n_rows)))
        t1 = raw.select((pl.col("age") // 10).alias("a1"), (pl.col("zip") // 10).alias("z1"), "s")
        t2 = raw2.select((pl.col("age") // 5).alias("a2"), (pl.col("zip") // 20).alias("z2"), "s")
        t1.write_parquet(tmp / "r1.parquet")
        t2.write_parquet(tmp / "r2.parquet")
        dom = raw.select("age", "zip").unique()
        m1 = dom.with_columns((pl.col("age") // 10).alias("a1"), (pl.col("zip") // 10).alias("z1"))
        m2 = dom.with_columns((pl.col("age") // 5).alias("a2"), (pl.col("zip") // 20).alias("z2"))
        r1 = Release.from_mapping(pl.scan_parquet(tmp / "r1.parquet"), ["age", "zip"], "s", m1,
                                  class_columns=["a1", "z1"], name="R1")
        r2 = Release.from_mapping(pl.scan_parquet(tmp / "r2.parquet"), ["age", "zip"], "s", m2,
                                  class_columns=["a2", "z2"], name="R2")
        sec, post = timed(lambda: post_linkage([r1, r2], pl.scan_parquet(raw_path)))

        def python_baseline() -> int:
            c1 = collections.Counter(zip(t1["a1"].to_list(), t1["z1"].to_list(), t1["s"].to_list()))
            c2 = collections.Counter(zip(t2["a2"].to_list(), t2["z2"].to_list(), t2["s"].to_list()))
            vals1: dict = collections.defaultdict(dict)
            vals2: dict = collections.defaultdict(dict)
            for (a, z, v), n in c1.items():
                vals1[(a, z)][v] = n
            for (a, z, v), n in c2.items():
                vals2[(a, z)][v] = n
            best = 10**9
            for a, z in dom.rows():
                d1 = vals1.get((a // 10, z // 10), {})
                d2 = vals2.get((a // 5, z // 20), {})
                m = sum(1 for v in d1 if v in d2)
                if m:
                    best = min(best, m)
            return best

        base, ref = timed(python_baseline)
        assert ref == post.l_t, (ref, post.l_t)
        rows.append([f"post_linkage, 2 releases x {n_rows:.0e} rows (Parquet), "
                     f"{post.targets.height} targets", f"{sec:.2f} s", f"l_t = {post.l_t}",
                     f"pure Python {base:.2f} s, x{base / sec:.1f}"])


def bench_simulation(trials: int, rows: list[list[str]]) -> None:
    d = JointDistribution.paper_setting("uniform")
    plan = plan_mechanism(d, 10, 0.01, beta=0.01)
    sec, res = timed(lambda: simulate_mechanism(plan, t=2, trials=trials, seed=0))
    cw = np.full(plan.classes * d.n_sensitive, 1 / (plan.classes * d.n_sensitive))
    rng = np.random.default_rng(0)
    k = 100
    t0 = time.perf_counter()
    rng.multinomial(plan.N, cw, size=(k, 2))
    base = (time.perf_counter() - t0) * trials / k
    rows.append([f"Monte Carlo, {trials} trials x 2 datasets x N={plan.N} (|Q|=3000, |S|=50)",
                 f"{sec:.1f} s", f"failure rate {res.any_dataset_failure_rate:.4f} "
                 f"(bound {res.bound:.4f})",
                 f"numpy multinomial {base:.1f} s (extrapolated), x{base / sec:.1f}"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plan-only", action="store_true", help="only the planning rows")
    args = ap.parse_args()
    rows: list[list[str]] = []
    nq = 100_000 if args.quick else 1_000_000
    bench_plan(nq, 100, rows)
    if not args.plan_only:
        bench_post_linkage(100_000 if args.quick else 1_000_000, rows)
        bench_simulation(1000 if args.quick else 10_000, rows)
    print("| workload | time | result | baseline (same run) |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
