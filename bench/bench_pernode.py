"""Where a small search's per-node time goes: the CPU of the calling thread in the roll-ups, the
models' verdicts, the node records and the store's choice of source, per warm
``anonymize(verify=False)`` call of ``bench_arx_live.py``'s configurations (issue 23).

Each function is wrapped with ``time.thread_time_ns`` (CPU of this thread: steadier than wall
time on a shared machine, and without cProfile's per-call overhead, which doubles the share of
small functions). The wrapped calls nest (``efs.rollup`` holds ``Roller.roll`` and
``store.source``, which may roll up a hub). Then every roll-up of one call is replayed in
the same order on the same sources with a fresh key builder and fresh encoding lookups, split
into the keys' digits (grouped codes, QI-group lookups), the count, and the rest; and the
roll-ups are tallied by path and source rows.

Usage: python bench/bench_pernode.py [--calls 10] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_arx_live as live  # noqa: E402
import polars as pl  # noqa: E402

from ldiv_polars.hierarchy import Hierarchy  # noqa: E402
from ldiv_polars.search import counting, rolling, rollup, state, suppression  # noqa: E402
from ldiv_polars.search.keys import KeyBuilder  # noqa: E402
from ldiv_polars.search.store import SnapshotStore  # noqa: E402

Acc = dict[str, list[int]]


def wrap(acc: Acc, owner: Any, name: str, label: str) -> Callable[[], None]:
    """Wrap ``owner.name`` to add its calls and thread CPU (ns) to ``acc[label]``; returns the
    function that restores it."""
    f = getattr(owner, name)

    def timed(*a: Any, **k: Any) -> Any:
        t = time.thread_time_ns()
        try:
            return f(*a, **k)
        finally:
            x = acc[label]
            x[0] += 1
            x[1] += time.thread_time_ns() - t

    setattr(owner, name, timed)
    return lambda: setattr(owner, name, f)


SPLIT = [(rolling.Roller, "roll", "Roller.roll (all roll-ups)"),
         (SnapshotStore, "source_for", "store.source_for"),
         (suppression.NodeChecker, "check", "NodeChecker.check (verdicts)"),
         (state.SearchState, "_record", "SearchState._record (metric)"),
         (rollup.EncodedFrequencySet, "rollup", "efs.rollup (source + roll-up)")]
REPLAY = [(rolling.Roller, "roll", "roll-ups, replayed"),
          (KeyBuilder, "digits", "  keys' digits"),
          (KeyBuilder, "_local_lut", "    QI-group lookups built"),
          (counting, "lookup_count", "  count"),
          (counting, "lookup_count_split", "  count (split read-out)")]


def split(run: Callable[[], Any], calls: int) -> None:
    """Print the per-function split of ``calls`` warm calls of ``run``."""
    acc: Acc = collections.defaultdict(lambda: [0, 0])
    undo = [wrap(acc, *w) for w in SPLIT]
    t = time.thread_time_ns()
    try:
        for _ in range(calls):
            run()
    finally:
        for u in undo:
            u()
    total = (time.thread_time_ns() - t) / 1e6 / calls
    print(f"  whole call: {total:.2f} ms of thread CPU")
    for label, (n, ns) in acc.items():
        print(f"  {label:34s} {n / calls:6.1f} calls  {ns / 1e6 / calls:6.2f} ms  "
              f"{ns / 1e3 / max(n, 1):6.1f} us/call")


def capture(run: Callable[[], Any]) -> list[tuple[Any, Any, tuple[int, ...], dict]]:
    """Every ``Roller.roll`` of one call of ``run``: (roller, source, levels, keywords)."""
    cap: list[tuple[Any, Any, tuple[int, ...], dict]] = []
    orig = rolling.Roller.roll

    def roll(self: Any, src: Any, levels: tuple[int, ...], **kw: Any) -> Any:
        cap.append((self, src, levels, kw))
        return orig(self, src, levels, **kw)

    rolling.Roller.roll = roll  # type: ignore[method-assign]
    try:
        run()
    finally:
        rolling.Roller.roll = orig  # type: ignore[method-assign]
    return cap


def tally(cap: list[tuple[Any, Any, tuple[int, ...], dict]]) -> None:
    """Print the roll-ups by path and by source rows (from the base or a snapshot)."""
    rows = collections.Counter()
    for r, src, levels, _ in cap:
        cards = r.encoding.level_cards(levels)
        path = r.path(src, cards, r.encoding.n_sensitive * math.prod(cards))
        rows[(path, src.rows)] += 1
    big = max(src.rows for _, src, _, _ in cap)
    print(f"  roll-ups: {len(cap)}; by path: "
          f"{dict(collections.Counter(p for p, _ in rows.elements()))}; from the largest "
          f"source ({big:,} rows): {sum(c for (_, n), c in rows.items() if n == big)}; others "
          f"from {min(n for _, n in rows):,}-{max((n for _, n in rows if n != big), default=0):,} rows")


def replay(cap: list[tuple[Any, Any, tuple[int, ...], dict]], calls: int) -> None:
    """Replay the roll-ups ``calls`` times (fresh key builder and lookups) and print their
    split."""
    acc: Acc = collections.defaultdict(lambda: [0, 0])
    undo = [wrap(acc, *w) for w in REPLAY]
    enc = cap[0][0].encoding
    try:
        for _ in range(calls):
            enc._scaled.clear()
            enc._up.clear()
            enc._rep.clear()
            roller = rolling.Roller(enc, KeyBuilder(enc), cap[0][0].total)
            for _, src, levels, kw in cap:
                roller.roll(src, levels, **kw)
    finally:
        for u in undo:
            u()
    for label, (n, ns) in acc.items():
        print(f"  {label:34s} {n / calls:6.1f} calls  {ns / 1e6 / calls:6.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--only", nargs="*", default=["k=5, 0%", "JUnit t 4", "JUnit ord 2",
                                                  "JUnit ord 3"])
    args = ap.parse_args()
    df = pl.read_csv(live.DATA / "adult.csv", separator=";")
    hs = {q: Hierarchy.from_csv(live.DATA / f"adult_hierarchy_{q}.csv")
          for q in [*live.Q8, "salary-class"]}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.calls} warm calls each\n")
    for case in [c for c in live.CASES if any(s in c.name for s in args.only)]:
        def run(case: live.Case = case) -> Any:
            return live._ours(df, hs, case)

        for _ in range(3):
            run()
        print(f"{case.name}")
        split(run, args.calls)
        cap = capture(run)
        tally(cap)
        replay(cap, args.calls)
        print()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
