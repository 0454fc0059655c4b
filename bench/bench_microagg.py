"""Microaggregation benchmarks: Algorithm A and MDAV (pruned exact vs brute-force reference).

Run: ``.venv/bin/python bench/bench_microagg.py [--big]``. Prints wall and CPU seconds (CPU time
is the steadier figure on a shared machine) and ratios against a baseline measured in the same
run. ``--big`` adds the 100,000 x 10, k = 5 MDAV run of the issue (~15-20 s CPU).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ldiv_polars.datasets.synth import synthesize
from ldiv_polars.microagg import (
    effective_anonymity,
    mdav,
    mdav_reference,
    microaggregate_details,
    p_probabilistic_mdav,
)


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def bench_algorithm_a() -> None:
    grid = [(k, pi, p) for k in (10, 50, 200) for pi in (0.5, 0.75) for p in (1e-4, 1e-6, 1e-12)]
    for method in ("recursion", "binom"):
        _, wall, cpu = timed(
            lambda m=method: [effective_anonymity(k, pi, p, method=m) for k, pi, p in grid]
        )
        print(
            f"Algorithm A, {len(grid)} cases, method={method:<9}  "
            f"wall {wall:7.3f} s  cpu {cpu:7.3f} s"
        )
    pis = np.random.default_rng(0).uniform(0.3, 0.9, 5000)
    r, wall, cpu = timed(effective_anonymity, 20, pis, 1e-6)
    print(
        f"Algorithm A, Poisson-binomial k=20 (n_min={r.n_min}), with r_bar' and t_bar over 5,000: "
        f"wall {wall:.3f} s  cpu {cpu:.3f} s"
    )


def bench_mdav(big: bool) -> None:
    rng = np.random.default_rng(1)
    for n in (5_000, 20_000):
        x = rng.normal(size=(n, 10))
        a, wf, cf = timed(mdav, x, 5)
        b, wr, cr = timed(mdav_reference, x, 5)
        assert np.array_equal(a.labels, b.labels)
        print(
            f"MDAV {n:>7,} x 10, k=5: pruned wall {wf:6.2f} s cpu {cf:6.2f} s | brute force wall "
            f"{wr:6.2f} s cpu {cr:6.2f} s | speed-up (cpu) {cr / cf:4.1f}x, identical cells"
        )
    x = rng.normal(size=(20_000, 10))
    pis = rng.uniform(0.3, 1.0, 20_000)
    c, wc, cc = timed(mdav, x, effective_anonymity(5, 0.65, 1e-5).n_min)
    v, wv, cv = timed(p_probabilistic_mdav, x, 5, pis, 1e-5)
    print(
        f"p-probabilistic MDAV 20,000 x 10, k=5, p_bar=1e-5: per-record pi ~ U(.3, 1) wall "
        f"{wv:6.2f} s cpu {cv:6.2f} s ({v.mdav.n_cells} variable cells) | constant pi = .65 "
        f"(n_min cells) wall {wc:6.2f} s cpu {cc:6.2f} s"
    )
    if big:
        x = rng.normal(size=(100_000, 10))
        a, wf, cf = timed(mdav, x, 5)
        print(
            f"MDAV 100,000 x 10, k=5: pruned wall {wf:6.2f} s cpu {cf:6.2f} s "
            f"({a.n_cells} cells, D = {a.distortion:.4f})"
        )


def bench_polars() -> None:
    df = synthesize(100_000, 7)
    res, wall, cpu = timed(
        microaggregate_details, df.lazy(), ["age", "income"], k=5, pi=0.75, p_bar=1e-5
    )
    out, w2, c2 = timed(res.frame.collect)
    print(
        f"microaggregate 100,000 rows (age, income), k=5 pi=.75 p_bar=1e-5 -> n_min={res.n_min}: "
        f"MDAV + re-verification wall {wall:.2f} s cpu {cpu:.2f} s; collect {w2:.2f} s "
        f"(D = {res.mdav.distortion:.5f})"
    )


if __name__ == "__main__":
    bench_algorithm_a()
    bench_mdav("--big" in sys.argv)
    bench_polars()
