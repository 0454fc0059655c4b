"""The Spark engine in local mode against bare Spark on the same session and file (issue 18):

- ``check``: ``ldiv_polars.check(path, engine="spark")`` (the frequency set grouped by Spark,
  collected through Arrow, the models judged in Polars) vs a bare
  ``spark.read.parquet(path).groupBy(qi + [s]).count().toArrow()`` (goal <= 1.3x);
- ``anonymize``: ``ldiv_polars.anonymize(path, engine="spark", verify=False)`` (one groupBy on
  the raw values, encoded on the driver, the search, the output plan) vs the bare pass + the
  search on the collected frequency set (``federated.anonymize_counts``) (goal <= 1.5x); the
  release's write (``sink(verify=False)``) and its re-verification are timed apart: the
  written files recounted (what ``sink`` does) and, for comparison, the retained rows
  recounted from the input (what it did before);
- Polars and DuckDB ``check`` on the same file, for reference;
- peak RSS of this (driver) process and of the Spark JVM (driver and executors in local mode).

Runs are interleaved (bare, ours, bare, ours) so both see the same load; the figure is the
median. Usage::

    .venv/bin/python -m ldiv_polars synth --rows 10000000 --seed 1 --out bench/data/synth10m.parquet
    nice .venv/bin/python bench/bench_spark.py --parquet bench/data/synth10m.parquet --reps 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_check import SYNTH_QI, SYNTH_SA, fmt_s, machine  # noqa: E402


def _timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _jvm_peak_mb(spark) -> float | None:  # type: ignore[no-untyped-def]
    """VmHWM of the Spark JVM (the py4j gateway's child process), in MB."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except Exception:  # noqa: BLE001 - not on Linux, or no gateway process
        return None
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parquet", required=True)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    import polars as pl
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import ldiv_polars as lp
    from ldiv_polars.cli.anonymize import demo_hierarchies
    from ldiv_polars.core.engines import spark as spark_engine
    from ldiv_polars.models import DistinctLDiversity, KAnonymity
    from ldiv_polars.search.federated import anonymize_counts

    path = str(Path(args.parquet).resolve())
    rows = pl.scan_parquet(path).select(pl.len()).collect().item()
    spark = (SparkSession.builder.master(args.master).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_engine.use_session(spark)
    qi, s = SYNTH_QI, SYNTH_SA
    models = [KAnonymity(5), DistinctLDiversity(2)]
    hs = demo_hierarchies(path, qi)
    cols = [F.col(c) for c in [*qi, s]]

    def bare():  # type: ignore[no-untyped-def]
        return pl.from_arrow(spark.read.parquet(path).groupBy(*cols).count().toArrow())

    def bare_search():  # type: ignore[no-untyped-def]
        fs = spark_engine.ENGINE.frequency_set(spark.read.parquet(path), qi, s)
        return anonymize_counts([fs], hs, models, metric="loss", suppression=0.01)

    times: dict[str, list[float]] = {k: [] for k in
                                     ("bare", "check", "bare_search", "anonymize")}
    _timed(bare)  # warm-up: JIT, file cache
    res = None
    for _ in range(args.reps):
        times["bare"].append(_timed(bare)[0])
        times["check"].append(_timed(lambda: lp.check(path, qi, s, models,
                                                      engine="spark"))[0])
        times["bare_search"].append(_timed(bare_search)[0])
        t, res = _timed(lambda: lp.anonymize(path, qi, s, hs, models, metric="loss",
                                             suppression=0.01, engine="spark", verify=False))
        times["anonymize"].append(t)
    with tempfile.TemporaryDirectory(dir=Path(path).parent) as tmp:
        out = Path(tmp) / "out.parquet"
        write_s, _ = _timed(lambda: res.sink(out, verify=False))
        kept = res.rows - res.suppressed_rows
        written_s, _ = _timed(lambda: res._plan.verify_written(out, res.output_plan, kept))
        input_s, _ = _timed(lambda: res._plan.verify(res._plan.fs.materialize()))
    polars_s, _ = _timed(lambda: lp.check(path, qi, s, models))
    duck_s, _ = _timed(lambda: lp.check(path, qi, s, models, engine="duckdb"))
    med = {k: statistics.median(v) for k, v in times.items()}
    driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    jvm_mb = _jvm_peak_mb(spark)
    print(f"machine: {machine()}; load average {os.getloadavg()}; Spark {spark.version} "
          f"{args.master}; {rows:,} rows; QI {', '.join(qi)}; sensitive {s}; "
          f"models k=5, distinct l=2; median of {args.reps}")
    print("| run | time | ratio |")
    print("|---|---|---|")
    print(f"| bare Spark groupBy().count().toArrow() | {fmt_s(med['bare'])} | 1.00 |")
    print(f"| check(engine='spark') | {fmt_s(med['check'])} | "
          f"{med['check'] / med['bare']:.2f}x bare |")
    print(f"| bare pass + search on the collected set | {fmt_s(med['bare_search'])} | 1.00 |")
    print(f"| anonymize(engine='spark', verify=False) | {fmt_s(med['anonymize'])} | "
          f"{med['anonymize'] / med['bare_search']:.2f}x bare+search |")
    print(f"| sink(verify=False): the release written by Spark | {fmt_s(write_s)} | "
          f"{write_s / med['bare']:.2f}x bare |")
    print(f"| re-verification: the written files recounted (sink's) | {fmt_s(written_s)} | "
          f"{written_s / med['bare']:.2f}x bare |")
    print(f"| re-verification: the retained rows recounted from the input (before) | "
          f"{fmt_s(input_s)} | {input_s / med['bare']:.2f}x bare |")
    print(f"| check, Polars engine (reference) | {fmt_s(polars_s)} | "
          f"{polars_s / med['bare']:.2f}x bare Spark |")
    print(f"| check, DuckDB engine (reference) | {fmt_s(duck_s)} | "
          f"{duck_s / med['bare']:.2f}x bare Spark |")
    print(f"\npeak RSS: driver (Python) {driver_mb:.0f} MB; Spark JVM "
          f"{'—' if jvm_mb is None else f'{jvm_mb:.0f} MB'}; optimum {res.levels}, "
          f"{res.classes} classes, {res.suppressed_rows} rows suppressed")
    print(f"per-row cost of the bare pass: {med['bare'] / rows * 1e9:.1f} ns/row; "
          f"check: {med['check'] / rows * 1e9:.1f} ns/row")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
