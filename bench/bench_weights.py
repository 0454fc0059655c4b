"""Cost of k-anonymity on sampling weights (``WeightedKAnonymity``, issue 19 item 2) as a
ratio to k-anonymity on counts, measured in the same run.

On Adult (``/work/shared/data/adult``, ARX's hierarchies; skipped with a message when absent),
``--copies`` copies of it with a seeded weight column (multiples of 1/4 in [1, 50]); in one
process, medians over ``--reps`` alternating repetitions (after one warm-up):

- ``check`` with ``WeightedKAnonymity(100)`` (``weight="w"``: the frequency set also sums the
  weights) against ``check`` with ``KAnonymity(5)``, with the Polars engine and with DuckDB's
  (a Parquet file);
- ``anonymize`` (Flash, suppression 2%, metric loss) with ``WeightedKAnonymity(100)`` (one more
  pass summing the weights per raw key; ``F_k`` rolled up with each node) against the same
  search with ``KAnonymity(5)``;
- ``mondrian`` (strict) with ``WeightedKAnonymity(100)`` (the weights summed in every candidate
  child's frequency set) against ``mondrian`` with ``KAnonymity(5)``, on one copy of Adult.

Run from the repository root::

    nice .venv/bin/python bench/bench_weights.py --reps 3 --copies 10
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

import ldiv_polars as lp  # noqa: E402
from bench.bench_population import DATA, QI  # noqa: E402 (the same Adult workload)
from ldiv_polars.hierarchy import Hierarchy  # noqa: E402

SECTION = "## k-anonymity on sampling weights (issue 19 item 2, `bench/bench_weights.py`)"


def workloads(copies: int, tmp: Path) -> list[tuple[str, str, Callable[[], object],
                                                     Callable[[], object]]]:
    """(figure, baseline name, figure call, baseline call) pairs."""
    adult = pl.concat([pl.read_csv(DATA / "adult.csv", separator=";")] * copies)
    rng = np.random.default_rng(7)
    table = adult.with_columns(w=pl.Series(rng.integers(4, 201, adult.height) / 4))
    path = tmp / "adult_w.parquet"
    table.write_parquet(path)
    h = {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv") for q in QI}
    wk, k = lp.WeightedKAnonymity(100), lp.KAnonymity(5)

    def check(data: object, model: object, engine: str) -> Callable[[], object]:
        weight = "w" if model is wk else None
        return lambda: lp.check(data, QI, None, model, engine=engine, weight=weight)

    def part(model: object) -> Callable[[], object]:
        weight = "w" if model is wk else None
        return lambda: lp.mondrian(table.head(30162), QI, None, [model], weight=weight)

    def search(model: object) -> Callable[[], object]:
        weight = "w" if model is wk else None
        return lambda: lp.anonymize(table, QI, None, h, model, suppression=0.02,
                                    metric="loss", weight=weight)

    return [
        ("check weighted k 100 (Polars)", "check k-anonymity 5 (Polars)",
         check(table, wk, "polars"), check(table, k, "polars")),
        ("check weighted k 100 (DuckDB, Parquet)", "check k-anonymity 5 (DuckDB, Parquet)",
         check(str(path), wk, "duckdb"), check(str(path), k, "duckdb")),
        ("anonymize weighted k 100", "anonymize k-anonymity 5", search(wk), search(k)),
        ("mondrian weighted k 100 (30,162 rows)", "mondrian k-anonymity 5 (30,162 rows)",
         part(wk), part(k)),
    ]


def timed(fig: Callable[[], object], base: Callable[[], object], reps: int
          ) -> tuple[float, float]:
    """Medians (seconds) of ``reps`` alternating runs of ``fig`` and ``base`` after a warm-up."""
    fig(), base()
    runs: tuple[list[float], list[float]] = ([], [])
    for _ in range(reps):
        for call, out in zip((fig, base), runs):
            t0 = time.perf_counter()
            call()
            out.append(time.perf_counter() - t0)
    return statistics.median(runs[0]), statistics.median(runs[1])


def markdown(rows: list[tuple[str, str, float, float]], reps: int, copies: int,
             load: str) -> str:
    lines = [SECTION, "",
             f"`bench/bench_weights.py --reps {reps} --copies {copies}` on "
             f"{platform.machine()}, {os.cpu_count()} cores (shared: other jobs ran; medians of "
             f"{reps} alternating repetitions), Polars {pl.__version__}. Adult x {copies} "
             f"({30162 * copies:,} rows) with a seeded weight column; QIs {', '.join(QI)} with "
             "ARX's hierarchies; suppression 2%, metric loss. Ratio = figure / baseline, "
             f"measured in the same run. Load average at the start: {load}.",
             "", "| figure | seconds | baseline | baseline s | ratio |", "|---|---:|---|---:|---:|"]
    lines += [f"| {f} | {s:.3g} | {b} | {bs:.3g} | {s / bs:.2g} |" for f, b, s, bs in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--copies", type=int, default=10)
    args = ap.parse_args()
    if not (DATA / "adult.csv").exists():
        sys.exit(f"no Adult data at {DATA}: nothing measured")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        rows = [(f, b, *timed(fc, bc, args.reps))
                for f, b, fc, bc in workloads(args.copies, Path(tmp))]
    print(markdown(rows, args.reps, args.copies, load))  # (BENCHMARKS.md's section, by hand)


if __name__ == "__main__":
    main()
