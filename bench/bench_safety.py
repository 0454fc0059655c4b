"""What publisher-grade safety (issue 16) costs, measured A/B in one process, alternated:

1. the every-column guard of ``to_lazyframe`` on CSV input (a row longer than the header is an
   error instead of being cut silently by a projected scan): ``ldiv_polars.summary`` and
   ``ldiv_polars.check`` (3 models) with the guard and with it replaced by ``lit(True)``;
2. the atomic write's re-read of the row count (``OutputFile.check_rows``): 1M synthetic rows
   written through ``atomic_output`` to CSV and to Parquet, with and without it.

    .venv/bin/python bench/bench_safety.py                       # 1M synthetic rows + Adult
    .venv/bin/python bench/bench_safety.py --rows 200000 --reps 5

Prints medians and ratios (guard / none, check_rows / write only).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import polars as pl  # noqa: E402

import ldiv_polars as lp  # noqa: E402
import ldiv_polars.core.inputs as inputs  # noqa: E402
from ldiv_polars.core.output import atomic_output  # noqa: E402

ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
ADULT_QI = "sex,age,race,marital-status,education,native-country,workclass,salary-class"


def guard_ab(path: Path, qi: list[str], s: str, sep: str, reps: int) -> str:
    guard = inputs._every_column_read
    models = [lp.KAnonymity(5), lp.DistinctLDiversity(2), lp.EntropyLDiversity(2)]
    res: dict[str, list[float]] = {}
    try:
        for _ in range(reps):
            for name, fn in (("guard", guard), ("none", lambda: pl.lit(True))):
                inputs._every_column_read = fn
                for task, call in (
                        ("summary", lambda: lp.summary(path, qi, s, separator=sep)),
                        ("check", lambda: lp.check(path, qi, s, models, separator=sep))):
                    t = time.perf_counter()
                    call()
                    res.setdefault(f"{task} {name}", []).append(time.perf_counter() - t)
    finally:
        inputs._every_column_read = guard
    med = {k: statistics.median(v) for k, v in res.items()}
    sg, sn, cg, cn = (med[k] for k in ("summary guard", "summary none", "check guard",
                                       "check none"))
    return (f"{path.name}: summary {sg * 1e3:.1f} ms with the guard, {sn * 1e3:.1f} ms "
            f"without ({sg / sn:.2f}x); check {cg * 1e3:.1f} vs {cn * 1e3:.1f} ms "
            f"({cg / cn:.2f}x)")


def write_ab(rows: int, reps: int) -> str:
    df = lp.synthesize(rows, seed=0)
    d = Path(tempfile.mkdtemp())
    res: dict[tuple[str, bool], list[float]] = {}
    for _ in range(reps):
        for suffix in (".csv", ".parquet"):
            for check in (False, True):
                t = time.perf_counter()
                with atomic_output(d / f"o{suffix}") as out:
                    out.write(df.lazy())
                    if check:
                        out.check_rows(df.height)
                res.setdefault((suffix, check), []).append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in res.items()}
    return "; ".join(
        f"{suffix} {med[(suffix, False)] * 1e3:.0f} ms written, "
        f"{med[(suffix, True)] * 1e3:.0f} ms with check_rows "
        f"({med[(suffix, True)] / med[(suffix, False)]:.2f}x)" for suffix in (".csv", ".parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        synth = Path(tmp) / "synth.csv"
        lp.synthesize(args.rows, seed=0).write_csv(synth)
        print(guard_ab(synth, ["age", "sex", "race", "education", "marital_status"], "disease",
                       ",", args.reps))
    if ADULT.exists():
        print(guard_ab(ADULT, ADULT_QI.split(","), "occupation", ";", args.reps))
    writes = write_ab(args.rows, max(3, args.reps // 2))
    print(f"{args.rows:,} rows through atomic_output: {writes}")


if __name__ == "__main__":
    main()
