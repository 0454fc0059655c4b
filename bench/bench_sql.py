"""Engines compared on UCI Adult (ARX extract, 30,162 rows) and on Adult replicated
``--times`` times: the Polars engine (``ldiv_polars.summary`` / ``check``) against the DuckDB
engine (``ldiv_polars.duckdb.summary`` / ``check`` from a Parquet file, and the bare
``ldiv_summary`` macro on a table already loaded in DuckDB). Both engines' results are
compared (floats to 1e-9 relative) before any time is printed. Best of ``--repeat`` runs.

Usage (from the repository root)::

    .venv/bin/python bench/bench_sql.py            # Adult and Adult x40
    .venv/bin/python bench/bench_sql.py --times 1 --repeat 5
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402
import polars as pl  # noqa: E402

import ldiv_polars as lp  # noqa: E402
import ldiv_polars.duckdb as ld  # noqa: E402
from ldiv_polars.models import (  # noqa: E402
    AlphaKAnonymity,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
)

ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
S = "occupation"
MODELS = [KAnonymity(5), DistinctLDiversity(2), EntropyLDiversity(2), RecursiveCLDiversity(3, 2),
          AlphaKAnonymity(0.8, 2), TCloseness(0.3), DeltaDisclosure(2.0)]


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def same(a: dict, b: dict) -> bool:
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, float) and y is not None:
            if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif x != y:
            return False
    return True


def run(df: pl.DataFrame, label: str, repeat: int, tmp: Path) -> None:
    path = tmp / f"{label}.parquet"
    df.write_parquet(path)
    con = ld.install(duckdb.connect())
    con.execute("CREATE TABLE adult AS SELECT * FROM read_parquet(?)", [str(path)])

    t_pol, s_pol = best(lambda: lp.summary(path, QI, S, l=2), repeat)
    t_duck, s_duck = best(lambda: ld.summary(path, QI, S, l=2, con=con), repeat)
    t_mac, _ = best(lambda: con.execute("FROM ldiv_summary('adult', ?, ?, 2)", [QI, S])
                    .fetchall(), repeat)
    t_gb, _ = best(lambda: con.execute(
        "SELECT count(*) FROM (SELECT COLUMNS(lambda c: list_contains(?, c)), count(*) "
        "FROM adult GROUP BY ALL)", [[*QI, S]]).fetchall(), repeat)
    assert same(s_pol, s_duck), (s_pol, s_duck)

    t_cpol, c_pol = best(lambda: lp.check(path, QI, S, MODELS), repeat)
    t_cduck, c_duck = best(lambda: ld.check(path, QI, S, MODELS, con=con), repeat)
    for a, b in zip(c_duck, c_pol.models):
        assert a["passed"] == b.passed and a["failing_classes"] == b.failing_classes, b.key
    con.close()

    print(f"\n{label}: {df.height:,} rows, QI = {len(QI)} columns, sensitive {S!r}, "
          f"{s_pol['classes']:,} classes")
    print(f"  {'measurement':<46}{'time (ms)':>10}{'vs Polars':>11}")
    rows = [
        ("Polars  summary (Parquet path)", t_pol, t_pol),
        ("DuckDB  summary() (Parquet path)", t_duck, t_pol),
        ("DuckDB  ldiv_summary macro (loaded table)", t_mac, t_pol),
        ("DuckDB  bare GROUP BY count(*) (loaded table)", t_gb, t_pol),
        (f"Polars  check, {len(MODELS)} models", t_cpol, t_cpol),
        (f"DuckDB  check, {len(MODELS)} models", t_cduck, t_cpol),
    ]
    for name, t, base in rows:
        print(f"  {name:<46}{t * 1000:>10.1f}{t / base:>10.2f}x")
    print(f"  ldiv_summary macro / bare GROUP BY: {t_mac / t_gb:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", type=int, default=40, help="also run Adult replicated N times")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not ADULT.exists():
        raise SystemExit(f"Adult not found at {ADULT}")
    adult = pl.read_csv(ADULT, separator=";")
    with tempfile.TemporaryDirectory() as d:
        run(adult, "adult", args.repeat, Path(d))
        if args.times > 1:
            run(pl.concat([adult] * args.times), f"adult_x{args.times}", args.repeat, Path(d))


if __name__ == "__main__":
    main()
