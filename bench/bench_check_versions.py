"""Two checkouts of the library on ``check`` (Polars and DuckDB), alternated in one run: the
in-process CPU time (``time.process_time``) of ``lp.check`` on the Adult frame in memory and of
``ldiv_polars.duckdb.check`` on Adult loaded as a DuckDB table, with ``bench_sql.py``'s QIs and
sensitive column and 7 models (k=5, distinct l=2, entropy l=2, recursive (3,2), (0.8,2),
t=0.3, delta=2), all together and one model at a time. One worker process per checkout
(``LDIV_REPO`` selects the library it imports) loads the data once and answers one
measurement at a time; old and new run one after the other per repetition so that the
machine's load drifts over both alike.

Prints one table row per measurement: old and new CPU medians, new / old, and whether both
gave the same verdicts and achieved values.

Usage: python bench/bench_check_versions.py --old /path/to/old-checkout [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent.parent / "shared" / "data" / "adult" / "adult.csv"
QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
S = "occupation"
MODEL_NAMES = ["k=5", "distinct l=2", "entropy l=2", "recursive (3,2)", "(0.8,2)", "t=0.3",
               "delta=2"]


def models() -> list:
    """The 7 models, built by the library the worker imported."""
    from ldiv_polars.models import (
        AlphaKAnonymity,
        DeltaDisclosure,
        DistinctLDiversity,
        EntropyLDiversity,
        KAnonymity,
        RecursiveCLDiversity,
        TCloseness,
    )

    return [KAnonymity(5), DistinctLDiversity(2), EntropyLDiversity(2),
            RecursiveCLDiversity(3, 2), AlphaKAnonymity(0.8, 2), TCloseness(0.3),
            DeltaDisclosure(2.0)]


def worker() -> None:
    """Answer ``engine[:model index]`` lines on stdin with one JSON line each (CPU ms and the
    verdicts)."""
    sys.path.insert(0, os.environ["LDIV_REPO"])
    import duckdb
    import polars as pl

    import ldiv_polars as lp
    import ldiv_polars.duckdb as ld

    df = pl.read_csv(ADULT, separator=";")
    con = ld.install(duckdb.connect())
    con.register("adult_frame", df.to_arrow())
    con.execute("CREATE TABLE adult AS FROM adult_frame")
    all_models = models()
    for line in sys.stdin:
        engine, _, index = line.strip().partition(":")
        ms = all_models if not index else [all_models[int(index)]]
        t = time.process_time()
        if engine == "polars":
            res = lp.check(df, QI, S, ms)
            out = [[m.passed, m.achieved] for m in res.models]
        else:
            out = [[r["passed"], r["achieved"]] for r in ld.check("adult", QI, S, ms, con=con)]
        cpu = (time.process_time() - t) * 1e3
        print(json.dumps({"ms": cpu, "out": out}), flush=True)


class Worker:
    """A worker process importing the library of ``repo``."""

    def __init__(self, repo: Path) -> None:
        env = dict(os.environ, LDIV_REPO=str(repo))
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)

    def run(self, name: str) -> dict:
        """One measurement: its CPU ms and verdicts."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        """End the worker."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    """Print the old / new table (see the module docstring)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, help="the checkout to compare with (required)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    if args.old is None:
        ap.error("--old is required")
    old, new = Worker(args.old), Worker(HERE.parent)
    print(f"old: {args.old}; new: {HERE.parent}; CPU median of {args.repeat} warm runs each, "
          f"old and new alternated; load {os.getloadavg()}\n")
    print("| measurement | old | new | new / old | same verdicts |")
    print("|" + "---|" * 5)
    names = [(f"{e}", f"{e} check, 7 models") for e in ("polars", "duckdb")]
    names += [(f"{e}:{i}", f"{e} {m}") for e in ("polars", "duckdb")
              for i, m in enumerate(MODEL_NAMES)]
    for req, label in names:
        first_old, first_new = old.run(req), new.run(req)  # warm-up
        t_old, t_new = [], []
        for _ in range(args.repeat):
            t_old.append(old.run(req)["ms"])
            t_new.append(new.run(req)["ms"])
        a, b = statistics.median(t_old), statistics.median(t_new)
        print(f"| {label} | {a:,.1f} ms | {b:,.1f} ms | {b / a:.2f} | "
              f"{first_old['out'] == first_new['out']} |", flush=True)
    old.close()
    new.close()
    print(f"\nload at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
