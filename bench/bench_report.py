"""``ldiv report`` against ``ldiv check`` on the same big Parquet file (issue 21: the report must
cost less than 1.2x the check).

Both run as fresh processes (interpreter start and imports included), interleaved so that they
see the same machine load, each measured by ``bench_check.py``'s wrapper (wall time and peak
RSS of the one child); the figure is the median over ``--reps``. Same QIs, sensitive column and
models for both (k-anonymity and distinct l-diversity)::

    python -m ldiv_polars synth --rows 10000000 --seed 1 --out bench/data/synth10m.parquet
    .venv/bin/python bench/bench_report.py --parquet bench/data/synth10m.parquet --reps 3

Prints a markdown table (BENCHMARKS.md, section "HTML report").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_check import SYNTH_QI, SYNTH_SA, fmt_s, machine, measure_process  # noqa: E402


def _cmd(command: str, path: str, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "ldiv_polars", command, path, "--qi", ",".join(SYNTH_QI),
            "--sensitive", SYNTH_SA, "--k", "5", "--l", "2", *extra]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parquet", required=True)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    import polars as pl

    path = str(Path(args.parquet).resolve())
    rows = pl.scan_parquet(path).select(pl.len()).collect().item()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "report.html")
        check, rep = [], []
        for _ in range(args.reps):
            check.append(measure_process(_cmd("check", path, ["--json"])))
            rep.append(measure_process(_cmd("report", path, ["--out", out, "--json"])))
        size_kb = Path(out).stat().st_size / 1024
    for m in check + rep:
        if m["returncode"] not in (0, 1):
            raise RuntimeError(m["stderr"])
    tc = statistics.median(m["seconds"] for m in check)
    tr = statistics.median(m["seconds"] for m in rep)
    print(f"{machine()}\n")
    print(f"**Synthetic Parquet, {rows:,} rows** ({Path(path).stat().st_size / 1e6:,.0f} MB); "
          f"QI = {', '.join(SYNTH_QI)}; sensitive = {SYNTH_SA}; --k 5 --l 2; median of "
          f"{args.reps} fresh processes, interleaved; report page {size_kb:,.0f} kB.\n")
    print("| command | time | peak RSS | vs check |\n|---|---:|---:|---:|")
    print(f"| `ldiv check --json` | {fmt_s(tc)} | "
          f"{max(m['peak_rss_mb'] for m in check):,.0f} MB | 1.00x |")
    print(f"| `ldiv report --out report.html` | {fmt_s(tr)} | "
          f"{max(m['peak_rss_mb'] for m in rep):,.0f} MB | **{tr / tc:.2f}x** |")
    print("\nruns (s): check " + ", ".join(f"{m['seconds']:.2f}" for m in check)
          + "; report " + ", ".join(f"{m['seconds']:.2f}" for m in rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
