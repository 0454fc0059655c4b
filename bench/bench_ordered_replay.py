"""The ordered t-closeness verdict and suppression floor per node, replayed (issue 23): the
encoded rows of every ``TCloseness.array_verdict`` and ``suppression_floor`` call of one warm
search of ``bench_arx_live.py``'s configuration are captured, then the first 400 of each are
decided again on fresh copies (the caches the search would have filled emptied), in three
forms alternated round by round: ``main`` (the kernel's EMD or floor terms, the verdict and the
floor in numpy: the form before session 15's branch verdict8), ``one call`` (the verdict and
the floor in the same compiled call as the EMD) and ``new`` (that, plus the dense pass for
small domains). Prints the median thread CPU per call of each and whether all three give
identical arrays.

Usage: python bench/bench_ordered_replay.py [--only TEXT ...] [--rounds 9]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_arx_live as live  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.models import emd_arrays  # noqa: E402
from ldiv_polars.models.encoded import class_verdict  # noqa: E402
from ldiv_polars.models.t_closeness import TCloseness  # noqa: E402

FORMS = ("main", "one call", "new")


def capture(case: live.Case, df: pl.DataFrame, hs: dict[str, Hierarchy]) -> list[tuple]:
    """``(kind, model, rows[, slack])`` of every verdict ("v") and floor ("f") call of one warm
    search (rows copied with an empty cache)."""
    cap: list[tuple] = []
    verdict, floor = TCloseness.array_verdict, TCloseness.suppression_floor

    def v(self: Any, rows: Any) -> Any:
        cap.append(("v", self, dataclasses.replace(rows, _cache={})))
        return verdict(self, rows)

    def f(self: Any, rows: Any, slack: float) -> Any:
        cap.append(("f", self, dataclasses.replace(rows, _cache={}), slack))
        return floor(self, rows, slack)

    live._ours(df, hs, case)
    setattr(TCloseness, "array_verdict", v)
    setattr(TCloseness, "suppression_floor", f)
    try:
        live._ours(df, hs, case)
    finally:
        setattr(TCloseness, "array_verdict", verdict)
        setattr(TCloseness, "suppression_floor", floor)
    return cap


def use(form: str, saved: tuple) -> None:
    """Select ``form`` (one of :data:`FORMS`); ``saved``: the one-call functions."""
    one = form != "main"
    setattr(TCloseness, "_compiled_verdict", saved[0] if one else (lambda self, rows: None))
    emd_arrays.ordered_floor = saved[1] if one else (lambda *a: None)
    emd_arrays._kernel.set_dense_ratio(8.0 if form == "new" else 0.0)


def replay(cap: list[tuple], kind: str, rounds: int) -> None:
    """Time the first 400 calls of ``kind`` in every form, alternated; print medians."""
    items = [c for c in cap if c[0] == kind][:400]
    if not items:
        return
    saved = (TCloseness._compiled_verdict, emd_arrays.ordered_floor)
    res: dict[str, list[float]] = {f: [] for f in FORMS}
    outs: dict[str, list] = {}
    try:
        for _ in range(rounds):
            for form in FORMS:
                use(form, saved)
                fresh = [(c[1], dataclasses.replace(c[2], _cache={}), *c[3:]) for c in items]
                t = time.thread_time_ns()
                outs[form] = [class_verdict(m, r) if kind == "v" else m.suppression_floor(r, *s)
                              for m, r, *s in fresh]
                res[form].append((time.thread_time_ns() - t) / len(items) / 1e3)
    finally:
        use("new", saved)
    same = all((a is None and b is None) or np.array_equal(a, b)
               for f in FORMS for a, b in zip(outs["main"], outs[f]))
    medians = ", ".join(f"{f} {np.median(res[f]):.1f}" for f in FORMS)
    print(f"  {'verdict' if kind == 'v' else 'floor'} ({len(items)} calls): {medians} us a "
          f"call; identical: {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=["t=0.2 ordered", "JUnit ord 0"])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    if emd_arrays._kernel is None:
        sys.exit("the compiled ordered EMD was not built")
    df = pl.read_csv(live.DATA / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(live.DATA / f"adult_hierarchy_{q}.csv")
          for q in [*live.Q8, "salary-class"]}
    print(f"load average {os.getloadavg()[0]:.2f}; thread CPU, median of {args.rounds}")
    for case in [c for c in live.CASES if any(s in c.name for s in args.only)]:
        cap = capture(case, df, hs)
        print(case.name)
        replay(cap, "v", args.rounds)
        replay(cap, "f", args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
