"""Cost of deciding ``WeightedKAnonymity`` exactly near k (``models/weight_exact.py``): ``check``
with the exact step against the same ``check`` on the same frequency set without it (the float
verdict), in the same run, on a seeded table of ``--rows`` rows in classes of 10 records:

- *none flagged*: weights 1.5 (every ``F_k = 15``, k=10): the exact step only tests the bound;
- *all flagged*: every class's ten weights are 0.1 (``F_k`` within rounding of k=1): every
  class's weights are re-read from the input and summed as Fractions (the worst case).

Run from the repository root::

    nice .venv/bin/python bench/bench_weights_exact.py --rows 200000 --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import polars as pl

from ldiv_polars.core.frequency import FrequencySet
from ldiv_polars.models import WeightedKAnonymity
from ldiv_polars.models.verdict import WeightRows, check_frequency_set


def _median(fn: Callable[[], object], reps: int) -> float:
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    """Print one markdown row per case: exact-step seconds, float-verdict seconds, ratio."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    print(f"load average: {os.getloadavg()}")
    print("| case | exact step s | float verdict s | ratio |\n|---|---:|---:|---:|")
    for case, w, k in (("none flagged", 1.5, 10), ("all flagged", 0.1, 1)):
        df = pl.DataFrame({"q": pl.int_range(a.rows, eager=True) // 10}).with_columns(
            w=pl.lit(w))
        m = [WeightedKAnonymity(k)]
        fs = FrequencySet.build(df, "q", None, weight="w").materialize()
        rows = WeightRows(lambda df=df: df.lazy(), "w")
        exact = _median(lambda: check_frequency_set(fs, m, weight_rows=rows), a.reps)
        base = _median(lambda: check_frequency_set(fs, m), a.reps)
        print(f"| {case} ({a.rows:,} rows) | {exact:.4g} | {base:.4g} | {exact / base:.2g} |")


if __name__ == "__main__":
    main()
