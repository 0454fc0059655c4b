"""Two checkouts of the library on ``bench_search.py``'s configurations, alternated in one run:
warm in-process ``anonymize()`` medians of an *old* checkout (``--old DIR``, e.g. a worktree of
main) and of this one, run one after the other per repetition so that the machine's load
drifts over both alike. One worker process per checkout (``LDIV_REPO`` selects the library it
imports) loads Adult once and answers one configuration at a time.

Prints one table row per configuration: old and new medians of the wall time and of the
process CPU time (all threads; steadier than the wall on a shared machine), new / old of each,
whether both found the same optimum (levels, value, suppressed rows), and the nodes checked.

``--live``: the configurations of ``bench_arx_live.py`` instead (ARX's table and JUnit cases,
as that script runs ours: ``anonymize(verify=False)``), e.g. the small searches whose time is
the pipeline's fixed cost.

``--strategy`` / ``--old-strategy``: the strategy each side's ``anonymize`` is given (default
``auto``; e.g. ``bounded`` on both sides compares the optimum-only searches).

Usage: python bench/bench_versions.py --old /path/to/main-checkout [--repeat 5] [--only TEXT ...]
       [--live] [--strategy S] [--old-strategy S]
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


def worker(metric: str, strategy: str = "auto") -> None:
    """Answer configuration names on stdin with one JSON line each (ms, optimum, checked)."""
    sys.path.insert(0, str(HERE))
    import polars as pl
    from bench_search import ARRAY_CONFIGS, CONFIGS, DATA, QI8

    from ldiv_polars.hierarchy import Hierarchy
    from ldiv_polars.search import anonymize

    df = pl.read_csv(DATA / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(DATA / f"adult_hierarchy_{q}.csv")
          for q in [*QI8, "salary-class"]}
    table = {c[0]: c[1:5] for c in [*CONFIGS, *ARRAY_CONFIGS]}
    live = {c.name: c for c in _live_cases()}
    for line in sys.stdin:
        name = line.strip()
        t, cpu = time.perf_counter(), time.process_time()
        if name in live:
            c = live[name]
            res = anonymize(df, c.qi, c.sensitive, {q: hs[q] for q in c.qi}, c.models(hs),
                            suppression=c.suppression, metric=c.metric, verify=False,
                            strategy=strategy)
        else:
            qi, s, mk, sup = table[name]
            res = anonymize(df, qi, s, hs, mk(), suppression=sup, metric=metric, verify=False,
                            strategy=strategy)
        ms, cpu_ms = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
        print(json.dumps({"ms": ms, "cpu_ms": cpu_ms, "checked": res.checked,
                          "optimum": [res.levels, res.value, res.suppressed_rows]}), flush=True)


def _live_cases() -> list:
    """``bench_arx_live.py``'s configurations (importing it imports the library of
    ``LDIV_REPO``, as ``bench_search`` does)."""
    sys.path.insert(0, str(HERE))
    from bench_arx_live import CASES

    return CASES


class Worker:
    """A worker process importing the library of ``repo``."""

    def __init__(self, repo: Path, metric: str, strategy: str = "auto") -> None:
        env = dict(os.environ, LDIV_REPO=str(repo))
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--metric", metric,
                                      "--strategy", strategy],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)

    def run(self, name: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, help="the checkout to compare with (its library)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--metric", default="loss")
    ap.add_argument("--only", nargs="*", default=None,
                    help="configurations whose name contains one of these")
    ap.add_argument("--live", action="store_true",
                    help="bench_arx_live.py's configurations instead of bench_search.py's")
    ap.add_argument("--strategy", default="auto", help="the new side's (and the worker's)")
    ap.add_argument("--old-strategy", default=None, help="the old side's (default: --strategy)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.metric, args.strategy)
        return
    sys.path.insert(0, str(HERE))
    from bench_search import ARRAY_CONFIGS, CONFIGS

    all_names = [c.name for c in _live_cases()] if args.live else \
        [c[0] for c in [*CONFIGS, *ARRAY_CONFIGS]]
    names = [n for n in all_names if args.only is None or any(s in n for s in args.only)]
    old_strategy = args.old_strategy or args.strategy
    old = Worker(args.old, args.metric, old_strategy)
    new = Worker(HERE.parent, args.metric, args.strategy)
    print(f"old: {args.old} ({old_strategy}); new: {HERE.parent} ({args.strategy}); "
          f"metric {args.metric}; median of "
          f"{args.repeat} warm runs each, old and new alternated; load {os.getloadavg()}\n")
    print("| configuration | wall old / new | new / old | CPU old / new | new / old | same "
          "optimum | checked old / new |")
    print("|" + "---|" * 7)
    for name in names:
        first_old, first_new = old.run(name), new.run(name)  # warm-up
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for _ in range(args.repeat):
            runs["old"].append(old.run(name))
            runs["new"].append(new.run(name))
        med = {(v, k): statistics.median(r[k] for r in runs[v])
               for v in runs for k in ("ms", "cpu_ms")}
        cells = [f"{med['old', k]:,.1f} / {med['new', k]:,.1f} ms | "
                 f"{med['new', k] / med['old', k]:.2f}" for k in ("ms", "cpu_ms")]
        print(f"| {name} | {cells[0]} | {cells[1]} | "
              f"{first_old['optimum'] == first_new['optimum']} | "
              f"{first_old['checked']:,} / {first_new['checked']:,} |", flush=True)
    old.close()
    new.close()
    print(f"\nload at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
